"""The daemon's own actors on an in-memory store, for gang tests that read a cluster's outcome:
which pods are bound, in which BindPods, where each pending pod waits and what its condition
says. Run under the autojump clock::

    async with gang_cluster(node, pod_group("train", 3), *workers) as c:
        assert sorted(await c.bound()) == [...]

With ``refuse``, the first BindPods holding a group's bindings is answered with every one of
them failed (as the store refuses a group all together) and nothing is committed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import trio
import trio.testing

from podium.actors.mail.messages import Attempted, BeginScheduling, Handles, Lookup, LookupReply
from podium.actors.runtime.mailbox import ask, send
from podium.actors.supervisor.supervisor import Runtime, load_plugin_set
from podium.protocol import objects as o
from podium.protocol.config import SchedulerConfig
from podium.store.core import StoreCore
from podium.store.mail import (
    BindFailure,
    BindPods,
    BindResult,
    Evict,
    Published,
    ReadObjects,
    ReadResult,
    StoreFailure,
    StoreMsg,
    WriteObjects,
    WriteResult,
)
from podium.store.memory import memory_store

__all__ = ["GangCluster", "RecordingStore", "condition_message", "gang_cluster"]


class RecordingStore:
    """The in-memory store behind a relay that records every BindPods and Evict; with
    ``refuse``, the first BindPods holding a group's bindings is answered with every one of
    them failed (as the store refuses a group all together), and nothing is committed."""

    def __init__(
        self,
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[trio.MemorySendChannel[Published]],
        *,
        refuse: bool,
        binds: list[BindPods],
        evicts: list[Evict] | None = None,
    ) -> None:
        self._inbox = inbox
        self._to_store, from_relay = trio.open_memory_channel[StoreMsg](math.inf)
        self._store = memory_store(from_relay, subscribers, StoreCore())
        self._refuse = refuse
        self.binds = binds
        self.evicts = evicts if evicts is not None else []

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self._store.run)
            task_status.started()
            async with self._inbox, self._to_store:
                async for msg in self._inbox:
                    if isinstance(msg, Evict):
                        self.evicts.append(msg)
                    if isinstance(msg, BindPods):
                        self.binds.append(msg)
                        if self._refuse and any(b.group for b in msg.bindings):
                            self._refuse = False
                            failed = [
                                BindFailure(binding=b, code="conflict", message="refused")
                                for b in msg.bindings
                            ]
                            msg.reply.send_nowait(BindResult(revision=0, failed=failed))
                            continue
                    await self._to_store.send(msg)


@dataclass
class GangCluster:
    """The running daemon's handles, every BindPods the store received, and the attempts the
    scheduler reported."""

    handles: Handles
    reports: trio.MemoryReceiveChannel[Attempted]
    binds: list[BindPods]
    attempts: list[Attempted] = dataclasses.field(default_factory=list)

    async def put(self, *objects: o.KubeObject) -> None:
        """Write ``objects`` and let the daemon act on them."""
        written: WriteResult | StoreFailure = await ask(
            self.handles.store, lambda r: WriteObjects(puts=list(objects), reply=r)
        )
        assert isinstance(written, WriteResult), written
        await self.settle()

    async def settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()
        while True:
            try:
                self.attempts.append(self.reports.receive_nowait())
            except trio.WouldBlock:
                return

    async def pods(self, namespace: str) -> dict[str, o.Pod]:
        read: ReadResult | StoreFailure = await ask(
            self.handles.store, lambda r: ReadObjects(kind="Pod", namespace=namespace, reply=r)
        )
        assert isinstance(read, ReadResult)
        return {p.metadata.name: p for p in read.items if isinstance(p, o.Pod)}

    async def bound(self, namespace: str) -> dict[str, str]:
        """Pod name -> node, for the bound pods of ``namespace``."""
        pods = await self.pods(namespace)
        return {name: p.spec.node_name for name, p in pods.items() if p.spec.node_name}

    async def lookup(self, key: str) -> LookupReply:
        """Where the queue holds the pod ``key`` (``waiting`` with why, for a held member)."""
        return await ask(self.handles.queue, lambda r: Lookup(key=key, reply=r))

    def bound_together(self) -> list[list[str]]:
        """The pods of each BindPods that carried a group, sorted."""
        return [
            sorted(b.name for b in bind.bindings)
            for bind in self.binds
            if any(b.group for b in bind.bindings)
        ]


def condition_message(pod: o.Pod) -> str:
    """The message of the pod's PodScheduled condition ("" without one)."""
    for c in pod.status.conditions:
        if c.type == "PodScheduled":
            return c.message
    return ""


@asynccontextmanager
async def gang_cluster(
    *objects: o.KubeObject, refuse: bool = False, **config: Any
) -> AsyncIterator[GangCluster]:
    """The runtime of ``podium serve`` on a recording in-memory store, ``objects`` written,
    scheduling begun and settled."""
    cfg = dataclasses.replace(SchedulerConfig(), **config)
    binds: list[BindPods] = []

    def store(
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[trio.MemorySendChannel[Published]],
    ) -> RecordingStore:
        return RecordingStore(inbox, subscribers, refuse=refuse, binds=binds)

    reports_tx, reports_rx = trio.open_memory_channel[Attempted](math.inf)
    runtime = Runtime(cfg, load_plugin_set(cfg), store, reports=reports_tx, seed=1)
    with trio.fail_after(10_000):
        async with trio.open_nursery() as nursery:
            handles = await nursery.start(runtime.run)
            cluster = GangCluster(handles, reports_rx, binds)
            if objects:
                written: WriteResult | StoreFailure = await ask(
                    handles.store, lambda r: WriteObjects(puts=list(objects), reply=r)
                )
                assert isinstance(written, WriteResult), written
            await send(handles.scheduler, BeginScheduling())
            await cluster.settle()
            yield cluster
            runtime.stop()
            await handles.aclose()
