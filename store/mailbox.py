"""How actors hand each other mail: non-blocking first, and replies that never block.

It lives in store/ because the store actor is the bottom of the actor stack and answers on the
same one-shot channels as every actor above it; protocol/ below it imports no trio.

STYLE.md's measured rule: an awaited ``send`` passes trio's scheduler (~15 us a hop) while
``send_nowait`` into a mailbox with room costs ~1 us, so hot-path sends try ``send_nowait`` and
await only when the mailbox is full (back-pressure, not loss). Replies go on one-shot channels
of capacity 1 that the requester opened; a requester that went away (its channel closed) is not
an error of the replier.
"""

from __future__ import annotations

import contextlib
from typing import TypeVar

import trio

__all__ = ["reply", "send"]

T = TypeVar("T")


async def send(channel: trio.MemorySendChannel[T], msg: T) -> None:
    """Send ``msg`` without a scheduler pass unless the mailbox is full."""
    try:
        channel.send_nowait(msg)
    except trio.WouldBlock:
        await channel.send(msg)


def reply(channel: trio.MemorySendChannel[T], msg: T) -> None:
    """Answer on a one-shot reply channel; a requester that is gone is ignored."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, trio.WouldBlock):
        channel.send_nowait(msg)
