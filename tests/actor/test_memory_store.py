"""The in-memory store actor: Recovered first, group commit, publish before reply."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import trio
import trio.testing
from builders import make_node, make_pod

from podium.protocol.objects import Pod
from podium.protocol.wire import ObjectRef
from podium.store.actor import StoreActor
from podium.store.core import StoreCore
from podium.store.mail import (
    Binding,
    BindPods,
    BindResult,
    Committed,
    EventsResult,
    Evict,
    EvictResult,
    ReadEvents,
    ReadObjects,
    ReadResult,
    ReadStats,
    RecordUnschedulable,
    Recovered,
    StoreFailure,
    StoreMsg,
    StoreStats,
    Victim,
    WriteObjects,
    WriteResult,
)
from podium.store.memory import memory_store


def _core() -> StoreCore:
    uids = (f"uid-{i}" for i in itertools.count(1))
    return StoreCore(wall_clock=lambda: 1795341600.0, new_uid=lambda: next(uids))


@dataclass
class Harness:
    inbox: trio.MemorySendChannel[StoreMsg]
    events: trio.MemoryReceiveChannel[Recovered | Committed]
    store: StoreActor


@asynccontextmanager
async def running(core: StoreCore | None = None, capacity: int = 16) -> AsyncIterator[Harness]:
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](1024)
    sub_tx, sub_rx = trio.open_memory_channel[Recovered | Committed](capacity)
    store = memory_store(inbox_rx, [sub_tx], core if core is not None else _core())
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            yield Harness(inbox_tx, sub_rx, store)
            inbox_tx.close()


def _reply() -> tuple[trio.MemorySendChannel[Any], trio.MemoryReceiveChannel[Any]]:
    return trio.open_memory_channel[Any](1)


async def test_recovered_is_published_before_started(
    autojump_clock: trio.testing.MockClock,
) -> None:
    core = _core()
    core.write([make_pod("p").obj(), make_node("n").obj()])
    start = trio.current_time()
    async with running(core) as h:
        recovered = h.events.receive_nowait()
        assert isinstance(recovered, Recovered)
        assert recovered.revision == 2
        assert [type(x).__name__ for x in recovered.objects] == ["Node", "Pod"]
        with pytest.raises(trio.WouldBlock):
            h.events.receive_nowait()
    assert trio.current_time() == start


async def test_a_batch_is_published_as_one_committed_before_any_reply(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Capacity 1, Recovered left in it: the store blocks publishing the Committed until we
    # make room, so we can look in between.
    async with running(capacity=1) as h:
        replies = [_reply() for _ in range(3)]
        for i, (tx, _) in enumerate(replies):
            h.inbox.send_nowait(WriteObjects(puts=[make_node(f"n{i}").obj()], reply=tx))
        await trio.testing.wait_all_tasks_blocked()
        for _, rx in replies:
            with pytest.raises(trio.WouldBlock):
                rx.receive_nowait()  # the Committed is not out yet: no reply either
        assert isinstance(h.events.receive_nowait(), Recovered)
        committed = await h.events.receive()
        assert isinstance(committed, Committed)
        assert committed.revision == 3
        assert [(c.revision, c.type, c.name) for c in committed.changes] == [
            (1, "Added", "n0"),
            (2, "Added", "n1"),
            (3, "Added", "n2"),
        ]
        await trio.testing.wait_all_tasks_blocked()
        results = [rx.receive_nowait() for _, rx in replies]
        assert [(r.revision, r.objects[0].name) for r in results] == [
            (1, "n0"),
            (2, "n1"),
            (3, "n2"),
        ]
        assert all(isinstance(r, WriteResult) for r in results)


async def test_reads_reflect_the_writes_before_them(autojump_clock: trio.testing.MockClock) -> None:
    async with running() as h:
        await h.events.receive()
        w_tx, w_rx = _reply()
        r_tx, r_rx = _reply()
        h.inbox.send_nowait(WriteObjects(puts=[make_pod("a").obj()], reply=w_tx))
        h.inbox.send_nowait(ReadObjects(kind="Pod", reply=r_tx))
        read = await r_rx.receive()
        assert isinstance(read, ReadResult)
        assert (read.revision, [p.metadata.name for p in read.items]) == (1, ["a"])
        assert isinstance(w_rx.receive_nowait(), WriteResult)
        # A later batch sees it too.
        r2_tx, r2_rx = _reply()
        await h.inbox.send(ReadObjects(kind="Pod", name="a", namespace="default", reply=r2_tx))
        again = await r2_rx.receive()
        assert isinstance(again, ReadResult)
        assert [p.metadata.uid for p in again.items] == ["uid-1"]


async def test_a_rejected_write_affects_only_itself_and_publishes_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        await h.events.receive()
        bad_tx, bad_rx = _reply()
        good_tx, good_rx = _reply()
        h.inbox.send_nowait(
            WriteObjects(deletes=[ObjectRef(kind="Node", name="ghost")], reply=bad_tx)
        )
        h.inbox.send_nowait(WriteObjects(puts=[make_node("n1").obj()], reply=good_tx))
        failure = await bad_rx.receive()
        assert isinstance(failure, StoreFailure)
        assert failure.code == "not_found"
        assert [e.name for e in failure.errors] == ["ghost"]
        assert isinstance(good_rx.receive_nowait(), WriteResult)
        committed = h.events.receive_nowait()
        assert isinstance(committed, Committed)
        assert [c.name for c in committed.changes] == ["n1"]
        # A batch of failures alone publishes nothing.
        only_tx, only_rx = _reply()
        await h.inbox.send(WriteObjects(deletes=[ObjectRef(kind="Pod", name="x")], reply=only_tx))
        assert isinstance(await only_rx.receive(), StoreFailure)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.WouldBlock):
            h.events.receive_nowait()


async def test_bind_and_unschedulable_records_are_committed_and_published(
    autojump_clock: trio.testing.MockClock,
) -> None:
    core = _core()
    core.write([make_node("n1").obj(), make_pod("a").obj(), make_pod("b").obj()])
    async with running(core) as h:
        await h.events.receive()
        bind_tx, bind_rx = _reply()
        h.inbox.send_nowait(
            RecordUnschedulable(namespace="default", name="b", uid="uid-3", message="0/1 nodes")
        )
        h.inbox.send_nowait(
            BindPods(
                bindings=[
                    Binding(namespace="default", name="a", uid="uid-2", node="n1"),
                    Binding(namespace="default", name="b", uid="uid-9", node="n1"),
                ],
                reply=bind_tx,
            )
        )
        result = await bind_rx.receive()
        assert isinstance(result, BindResult)
        assert result.revision == 5
        assert [(f.binding.name, f.code) for f in result.failed] == [("b", "conflict")]
        committed = h.events.receive_nowait()
        assert isinstance(committed, Committed)
        assert [(c.revision, c.type, c.name, c.node, c.message) for c in committed.changes] == [
            (4, "Unschedulable", "b", "", "0/1 nodes"),
            (5, "Bound", "a", "n1", ""),
        ]


async def test_events_and_stats(autojump_clock: trio.testing.MockClock) -> None:
    core = StoreCore(retention=2)
    core.write([make_node(f"n{i}").obj() for i in range(3)])
    async with running(core) as h:
        await h.events.receive()
        ok_tx, ok_rx = _reply()
        gone_tx, gone_rx = _reply()
        future_tx, future_rx = _reply()
        stats_tx, stats_rx = _reply()
        h.inbox.send_nowait(ReadEvents(after=1, reply=ok_tx))
        h.inbox.send_nowait(ReadEvents(after=0, reply=gone_tx))
        h.inbox.send_nowait(ReadEvents(after=4, reply=future_tx))
        h.inbox.send_nowait(ReadStats(reply=stats_tx))
        events = await ok_rx.receive()
        assert isinstance(events, EventsResult)
        assert [c.revision for c in events.changes] == [2, 3]
        gone = gone_rx.receive_nowait()
        assert isinstance(gone, StoreFailure)
        assert (gone.code, gone.revision) == ("gone", 2)
        assert future_rx.receive_nowait().code == "invalid"
        stats = stats_rx.receive_nowait()
        assert isinstance(stats, StoreStats)
        assert (stats.revision, stats.oldest_revision, stats.objects["Node"]) == (3, 2, 3)


async def test_a_requester_that_went_away_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        await h.events.receive()
        gone_tx, gone_rx = _reply()
        gone_rx.close()
        h.inbox.send_nowait(WriteObjects(puts=[make_node("n1").obj()], reply=gone_tx))
        tx, rx = _reply()
        h.inbox.send_nowait(ReadObjects(kind="Node", reply=tx))
        read = await rx.receive()
        assert isinstance(read, ReadResult)
        assert len(read.items) == 1


async def test_closing_the_inbox_stops_the_store_and_closes_subscribers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    start = trio.current_time()
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](8)
    sub_tx, sub_rx = trio.open_memory_channel[Recovered | Committed](8)
    store = memory_store(inbox_rx, [sub_tx])
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        reply_tx, reply_rx = _reply()
        inbox_tx.send_nowait(WriteObjects(puts=[make_node("n").obj()], reply=reply_tx))
        inbox_tx.close()  # the last batch is still served
    assert isinstance(reply_rx.receive_nowait(), WriteResult)
    assert [type(m).__name__ for m in (sub_rx.receive_nowait(), sub_rx.receive_nowait())] == [
        "Recovered",
        "Committed",
    ]
    with pytest.raises(trio.EndOfChannel):
        sub_rx.receive_nowait()
    assert trio.current_time() == start


async def test_an_eviction_is_one_committed_before_its_reply(
    autojump_clock: trio.testing.MockClock,
) -> None:
    core = _core()
    core.write(
        [
            make_node("n1").obj(),
            make_pod("v1").node("n1").obj(),
            make_pod("v2").node("n1").obj(),
            make_pod("p").obj(),
        ]
    )
    start = trio.current_time()
    # Capacity 1, Recovered left in it: the store blocks publishing until we make room.
    async with running(core, capacity=1) as h:
        ok_tx, ok_rx = _reply()
        refused_tx, refused_rx = _reply()
        victims = [
            Victim(namespace="default", name="v1", uid="uid-2"),
            Victim(namespace="default", name="gone", uid="uid-9"),
            Victim(namespace="default", name="v2", uid="uid-3"),
        ]
        h.inbox.send_nowait(
            Evict(
                namespace="default", name="p", uid="uid-4", node="n1", victims=victims, reply=ok_tx
            )
        )
        h.inbox.send_nowait(
            Evict(namespace="default", name="v1", uid="uid-2", node="n1", reply=refused_tx)
        )
        await trio.testing.wait_all_tasks_blocked()
        for rx in (ok_rx, refused_rx):
            with pytest.raises(trio.WouldBlock):
                rx.receive_nowait()  # nothing is answered before the Committed is out
        assert isinstance(h.events.receive_nowait(), Recovered)
        committed = await h.events.receive()
        assert isinstance(committed, Committed)
        by_p = "preempted by default/p (priority 0)"
        assert committed.revision == 7
        assert [(c.revision, c.type, c.name, c.node, c.message) for c in committed.changes] == [
            (5, "Preempted", "v1", "n1", by_p),
            (6, "Preempted", "v2", "n1", by_p),
            (7, "Modified", "p", "", ""),
        ]
        await trio.testing.wait_all_tasks_blocked()
        assert ok_rx.receive_nowait() == EvictResult(
            revision=7, evicted=["default/v1", "default/v2"], nominated=True
        )
        # v1 was evicted by the request before it in the batch: not found, nothing written.
        refused = refused_rx.receive_nowait()
        assert isinstance(refused, StoreFailure)
        assert (refused.code, refused.message) == (
            "conflict",
            "pod default/v1 not found; cannot nominate it to node n1 nor evict for it",
        )
        # Nominated already: nothing to write, nothing published, answered all the same.
        again_tx, again_rx = _reply()
        await h.inbox.send(
            Evict(namespace="default", name="p", uid="uid-4", node="n1", reply=again_tx)
        )
        assert await again_rx.receive() == EvictResult(revision=7, evicted=[], nominated=False)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.WouldBlock):
            h.events.receive_nowait()
        pod = h.store.core.get("Pod", "default", "p")
        assert isinstance(pod, Pod) and pod.status.nominated_node_name == "n1"
    assert trio.current_time() == start
