"""How actors hand each other mail: non-blocking first, and replies that never block.

It lives in store/ because the store actor is the bottom of the actor stack and answers on the
same one-shot channels as every actor above it; protocol/ below it imports no trio.

STYLE.md's measured rule: an awaited ``send`` passes trio's scheduler (~15 us a hop) while
``send_nowait`` into a mailbox with room costs ~1 us, so hot-path sends try ``send_nowait`` and
await only when the mailbox is full (back-pressure, not loss), and an actor that woke for one
message takes everything else already waiting with :func:`drain` before it awaits again
(:func:`receive_batch` does both).
Replies go on one-shot channels of capacity 1 that the requester opened (:func:`ask` opens
them); a requester that went away (its channel closed) is not an error of the replier.

Draining makes some messages long: a commit of 500 pods handled in one step holds trio's
thread for milliseconds, and a pod's decision, which waits for three hops (scheduler ->
filter actor -> score actor -> scheduler, each letting every runnable task take one step),
waits for it whole. An actor that handles such a message counts the work with
:class:`StepBudget` and lets the others run between its parts (ops/profile-serve.py
``--tail`` shows what ran inside the slow attempts: docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

import trio

__all__ = ["StepBudget", "ask", "drain", "receive_batch", "reply", "send"]

T = TypeVar("T")
A = TypeVar("A")
M = TypeVar("M")


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


async def ask(
    mailbox: trio.MemorySendChannel[M], make: Callable[[trio.MemorySendChannel[A]], M]
) -> A:
    """Send the request ``make(reply)`` to ``mailbox`` and wait for its one answer.

    ``make`` builds the request around a fresh one-shot reply channel (capacity 1, so the
    answer never blocks its sender). The answer type ``A`` comes from where the result goes,
    e.g. ``read: ReadResult | StoreFailure = await ask(store, lambda r: ReadObjects(...,
    reply=r))``; mypy then checks that the request's ``reply`` field carries exactly it.

    Args:
        mailbox: the answering actor's mailbox (the hop is :func:`send`: no scheduler pass
            unless it is full).
        make: the request, given the channel to answer on.

    Returns:
        The answer.

    Cancellation: safe; a request already handed over is still answered, into a channel
    nobody reads any more.
    """
    answer_to, answer = trio.open_memory_channel[A](1)
    await send(mailbox, make(answer_to))
    return await answer.receive()


def drain(mailbox: trio.MemoryReceiveChannel[T], limit: int | None = None) -> list[T]:
    """Everything already waiting in ``mailbox``, in order, without a scheduler pass.

    Stops at an empty mailbox, or at a closed one (the next ``receive`` reports its end), or
    after ``limit`` messages.
    """
    waiting: list[T] = []
    while limit is None or len(waiting) < limit:
        try:
            waiting.append(mailbox.receive_nowait())
        except (trio.WouldBlock, trio.EndOfChannel):
            break
    return waiting


async def receive_batch(
    mailbox: trio.MemoryReceiveChannel[T],
    *,
    deadline: float | None = None,
    limit: int | None = None,
) -> list[T] | None:
    """Wait for one message, then take everything else already waiting (:func:`drain`).

    Args:
        mailbox: the actor's own mailbox.
        deadline: wait for the first message until then (trio clock); None: for ever.
        limit: take at most this many messages.

    Returns:
        The messages in order; an empty list when ``deadline`` came first (a deadline already
        passed comes first even when mail is waiting, so the caller's timers run); None once
        every sender has closed ``mailbox`` and nothing is left in it.

    Cancellation: safe; a cancelled wait has taken no message.
    """
    try:
        if deadline is None:
            first = await mailbox.receive()
        else:
            with trio.move_on_at(deadline) as waiting:
                first = await mailbox.receive()
            if waiting.cancelled_caught:
                return []
    except trio.EndOfChannel:
        return None
    return [first, *drain(mailbox, None if limit is None else limit - 1)]


class StepBudget:
    """Long work taken as several short trio steps: every ``size`` units of it (a commit's
    changes), the other runnable tasks take a step before the rest is done.

    The pause is a schedule point, not a cancel point
    (:func:`trio.lowlevel.cancel_shielded_checkpoint`): the message being handled is still
    handled whole, its last part in the order given, before a cancellation or any other
    message reaches the actor (it reads its mailbox only between messages). What another task
    can see in between is only what the actor has sent; its state is its own.

    Args:
        size: the units of work one step takes at most (at least 1).

    Raises:
        ValueError: ``size`` is below 1.
    """

    __slots__ = ("_done", "size")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"StepBudget size must be at least 1, got {size}")
        self.size = size
        self._done = 0

    async def spend(self, units: int = 1) -> None:
        """Count ``units`` of work done; once ``size`` are done since the last pause, pause.

        Cancellation: none here (a schedule point only); the caller's next await delivers it.
        """
        self._done += units
        if self._done >= self.size:
            self._done = 0
            await trio.lowlevel.cancel_shielded_checkpoint()
