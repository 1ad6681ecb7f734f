"""The queue actor run under a test (tests/actor/test_queue.py, test_gang_queue.py): store
changes made as the store commits them, and a harness that sends mail and asks for pops and
lookups."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import trio
import trio.testing

from podium.actors.mail.messages import Lookup, LookupReply, Pop, PoppedBatch, QueueIdle, QueueMsg
from podium.actors.queue.actor import QueueActor
from podium.protocol import objects as o
from podium.protocol.wire import EventType
from podium.store.mail import Change, Committed

_revisions = itertools.count(1)


def change(
    type_: EventType, obj: o.KubeObject, old: o.KubeObject | None = None, node: str = ""
) -> Change:
    """One store change of ``obj``, at the next revision."""
    return Change(
        revision=next(_revisions),
        type=type_,
        kind=type(obj).__name__,
        namespace=obj.metadata.namespace,
        name=obj.metadata.name,
        object=obj,
        old=old,
        node=node,
    )


def committed(*changes: Change) -> Committed:
    return Committed(revision=changes[-1].revision, changes=list(changes))


@dataclass
class QueueHarness:
    """The queue actor's mailbox, and the actor."""

    inbox: trio.MemorySendChannel[QueueMsg]
    actor: QueueActor

    def send(self, msg: QueueMsg) -> None:
        self.inbox.send_nowait(msg)

    def commit(self, *changes: Change) -> None:
        self.send(committed(*changes))

    async def pop_answer(self, max_pods: int, *, idle_ok: bool = False) -> PoppedBatch | QueueIdle:
        """A Pop's answer."""
        reply_to, answer = trio.open_memory_channel[PoppedBatch | QueueIdle](1)
        self.send(Pop(reply=reply_to, idle_ok=idle_ok, max_pods=max_pods))
        return await answer.receive()

    async def lookup(self, key: str) -> LookupReply:
        reply_to, answer = trio.open_memory_channel[LookupReply](1)
        self.send(Lookup(key=key, reply=reply_to))
        return await answer.receive()

    async def settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()


H = TypeVar("H", bound=QueueHarness)


@asynccontextmanager
async def run_queue(harness: type[H], **kwargs: Any) -> AsyncIterator[H]:
    """The queue actor (``kwargs`` to :class:`QueueActor`) with ``harness`` on its mailbox."""
    tx, rx = trio.open_memory_channel[QueueMsg](1024)
    actor = QueueActor(rx, **kwargs)
    with trio.fail_after(1000):
        async with trio.open_nursery() as nursery:
            await nursery.start(actor.run)
            yield harness(tx, actor)
            tx.close()
