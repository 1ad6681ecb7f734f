"""The cache actor under trio's autojump clock: replies, deltas and exact expiry times."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from builders import make_node, make_pod

from podium.actors.cache.actor import COMMIT_STEP_CHANGES, CacheActor
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.mail.messages import (
    Assume,
    AssumeReply,
    AssumeStatus,
    Assumption,
    CacheMsg,
    CacheStats,
    CacheStatsReply,
    FinishBinding,
    Forget,
    SnapshotDelta,
    SnapshotRequest,
)
from podium.actors.runtime.mailbox import ask
from podium.protocol import objects as o
from podium.store.mail import Change, Committed, Recovered

TIME_LIMIT = 10_000.0  # virtual seconds: a hung test fails instead of jumping forever


class TimedLog(logging.Handler):
    """Records (trio time, message) of every podium.cache record."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[tuple[float, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((trio.current_time(), record.levelno, record.getMessage()))

    def at(self, level: int) -> list[tuple[float, str]]:
        return [(t, m) for t, lvl, m in self.records if lvl == level]


@pytest.fixture
def cache_log() -> Iterator[TimedLog]:
    handler = TimedLog()
    logger = logging.getLogger("podium.cache")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def node(name: str, cpu: str = "2") -> o.Node:
    result: o.Node = make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()
    return result


def pod(name: str, on: str = "") -> o.Pod:
    b = make_pod(name).req(cpu="500m")
    if on:
        b.node(on)
    result: o.Pod = b.obj()
    return result


class Client:
    """The requester's side of the cache's mailbox."""

    def __init__(self, mailbox: trio.MemorySendChannel[CacheMsg]) -> None:
        self.mailbox = mailbox

    async def stats(self) -> CacheStatsReply:
        send, recv = trio.open_memory_channel[CacheStatsReply](1)
        self.mailbox.send_nowait(CacheStats(reply=send))
        return await recv.receive()

    async def delta(self, generation: int) -> SnapshotDelta:
        send, recv = trio.open_memory_channel[SnapshotDelta](1)
        self.mailbox.send_nowait(SnapshotRequest(generation=generation, reply=send))
        return await recv.receive()

    async def assume(self, p: o.Pod, node_name: str, generation: int | None = None) -> AssumeStatus:
        (status,) = await self.assume_batch([(p, node_name)], generation)
        return status

    async def assume_batch(
        self, pods: list[tuple[o.Pod, str]], generation: int | None = None
    ) -> list[AssumeStatus]:
        if generation is None:
            generation = (await self.stats()).generation
        send, recv = trio.open_memory_channel[AssumeReply](1)
        self.mailbox.send_nowait(
            Assume(
                pods=[Assumption(pod=PodInfo(p), node=n) for p, n in pods],
                generation=generation,
                reply=send,
            )
        )
        return (await recv.receive()).statuses

    def commit(self, *changes: Change) -> None:
        self.mailbox.send_nowait(Committed(revision=changes[-1].revision, changes=list(changes)))


@asynccontextmanager
async def running(ttl: float = 30.0, *objects: o.KubeObject) -> AsyncIterator[Client]:
    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            send, recv = trio.open_memory_channel[CacheMsg](1024)
            await nursery.start(CacheActor(recv, assumed_pod_ttl_seconds=ttl).run)
            send.send_nowait(Recovered(revision=1, objects=list(objects)))
            async with send:
                yield Client(send)


def bound(p: o.Pod, revision: int = 2) -> Change:
    return Change(
        revision=revision,
        type="Bound",
        kind="Pod",
        namespace="default",
        name=p.metadata.name,
        object=p,
        node=p.spec.node_name,
    )


async def test_a_large_commit_is_applied_in_steps_and_a_snapshot_sees_it_whole(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A commit of many bound pods is applied a few changes a trio step (other tasks run
    between); a snapshot asked for while it is half applied is answered after its last change,
    with every pod on the node in the commit's order."""
    pods = [pod(f"p{i:03}", on="n1") for i in range(10 * COMMIT_STEP_CHANGES + 3)]
    send, recv = trio.open_memory_channel[CacheMsg](1024)
    actor = CacheActor(recv)
    seen: list[int] = []
    answer: list[SnapshotDelta] = []

    async def snapshot_while_applying() -> None:
        while (applied := actor.core.pod_count) < len(pods):
            seen.append(applied)
            if applied and not answer:
                answer.append(await Client(send).delta(0))
                return
            await trio.lowlevel.checkpoint()

    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(actor.run)
            send.send_nowait(Recovered(revision=1, objects=[node("n1", cpu="100")]))
            Client(send).commit(*[bound(p, revision=2 + i) for i, p in enumerate(pods)])
            async with trio.open_nursery() as watching:
                watching.start_soon(snapshot_while_applying)
            send.close()
    # The request went while the commit was partly applied (a multiple of the step's changes) ...
    assert seen[-1] % COMMIT_STEP_CHANGES == 0 and 0 < seen[-1] < len(pods)
    # ... and its answer holds the whole commit, in order.
    (delta,) = answer
    (n1,) = delta.nodes
    assert [p.pod.metadata.name for p in n1.pods] == [p.metadata.name for p in pods]
    assert trio.current_time() == 0.0


EXPIRED = (
    "pod default/{} expired: assumed, its binding handed to the store, but not confirmed "
    "within {}s; its node no longer counts it"
)


async def test_assumed_pod_expires_exactly_ttl_after_finish_binding(
    autojump_clock: trio.testing.MockClock, cache_log: TimedLog
) -> None:
    async with running(30.0, node("n1")) as cache:
        await trio.sleep(7)
        assert (await cache.assume(pod("p"), "n1")).status == "assumed"
        await trio.sleep(3)
        finished_at = trio.current_time()
        cache.mailbox.send_nowait(FinishBinding(keys=["default/p"]))
        await trio.sleep(29.5)
        assert (await cache.stats()).assumed == 1
        await trio.sleep(100)
        stats = await cache.stats()
        assert (stats.pods, stats.assumed) == (0, 0)
    assert cache_log.at(logging.WARNING) == [(finished_at + 30.0, EXPIRED.format("p", 30.0))]


async def test_each_pod_expires_at_its_own_deadline(
    autojump_clock: trio.testing.MockClock, cache_log: TimedLog
) -> None:
    async with running(30.0, node("n1")) as cache:
        await cache.assume(pod("a"), "n1")
        await cache.assume(pod("b"), "n1")
        cache.mailbox.send_nowait(FinishBinding(keys=["default/b"]))
        t_b = trio.current_time()
        await trio.sleep(12.25)
        cache.mailbox.send_nowait(FinishBinding(keys=["default/a"]))
        t_a = trio.current_time()
        await trio.sleep(60)
    assert cache_log.at(logging.WARNING) == [
        (t_b + 30.0, EXPIRED.format("b", 30.0)),
        (t_a + 30.0, EXPIRED.format("a", 30.0)),
    ]


async def test_confirmed_pod_never_expires(
    autojump_clock: trio.testing.MockClock, cache_log: TimedLog
) -> None:
    async with running(30.0, node("n1")) as cache:
        await cache.assume(pod("p"), "n1")
        cache.mailbox.send_nowait(FinishBinding(keys=["default/p"]))
        await trio.sleep(10)
        cache.commit(bound(pod("p", on="n1")))
        await trio.sleep(1000)
        stats = await cache.stats()
        assert (stats.pods, stats.assumed) == (1, 0)
    assert cache_log.at(logging.WARNING) == []


async def test_ttl_zero_never_expires(
    autojump_clock: trio.testing.MockClock, cache_log: TimedLog
) -> None:
    async with running(0.0, node("n1")) as cache:
        await cache.assume(pod("p"), "n1")
        cache.mailbox.send_nowait(FinishBinding(keys=["default/p"]))
        await trio.sleep(5000)
        assert (await cache.stats()).assumed == 1
    assert cache_log.at(logging.WARNING) == []


async def test_unfinished_binding_never_expires(autojump_clock: trio.testing.MockClock) -> None:
    async with running(30.0, node("n1")) as cache:
        await cache.assume(pod("p"), "n1")
        await trio.sleep(5000)
        assert (await cache.stats()).assumed == 1


async def test_a_batch_is_assumed_in_order_with_one_status_per_pod(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(30.0, node("n1", cpu="1"), node("n2", cpu="1")) as cache:
        small = make_pod("s").req(cpu="300m").obj()
        big = make_pod("b").req(cpu="800m").obj()
        statuses = await cache.assume_batch([(small, "n1"), (pod("x"), "n2"), (big, "n1")])
        stats = await cache.stats()
    # The third pod was decided before the first was assumed on its node: re-checked there,
    # it no longer fits (a batch whose decisions were folded in would not have chosen n1).
    assert [s.status for s in statuses] == ["assumed", "assumed", "conflict"]
    assert "no longer fits node n1 (Insufficient cpu)" in statuses[2].message
    assert (stats.pods, stats.assumed) == (2, 2)


async def test_assume_replies_assumed_conflict_and_error(
    autojump_clock: trio.testing.MockClock, cache_log: TimedLog
) -> None:
    async with running(30.0, node("n1", cpu="1")) as cache:
        decided_at = (await cache.stats()).generation
        assert await cache.assume(pod("a"), "n1", decided_at) == AssumeStatus(status="assumed")
        assert await cache.assume(pod("x"), "n9") == AssumeStatus(
            status="conflict",
            message="node n9 is not in the cache; cannot assume pod default/x on it",
        )
        # n1 changed after decided_at (a was assumed there): b is re-checked and no longer fits.
        big = make_pod("b").req(cpu="600m").obj()
        assert await cache.assume(big, "n1", decided_at) == AssumeStatus(
            status="conflict",
            message=(
                "pod default/b no longer fits node n1 (Insufficient cpu); the node changed "
                f"after generation {decided_at}"
            ),
        )
        twice = "pod default/a is already assumed on n1; cannot assume twice"
        assert await cache.assume(pod("a"), "n1") == AssumeStatus(status="error", message=twice)
        # Wrong transitions are logged and the actor keeps serving.
        cache.mailbox.send_nowait(Forget(key="default/ghost"))
        cache.mailbox.send_nowait(FinishBinding(keys=["default/ghost"]))
        stats = await cache.stats()
        assert (stats.nodes, stats.pods, stats.assumed) == (1, 1, 1)
    assert [m for _, m in cache_log.at(logging.ERROR)] == [
        f"Assume: {twice}",
        "Forget: pod default/ghost is not assumed; cannot forget it",
        "FinishBinding: pod default/ghost is not assumed; cannot finish binding it",
    ]


async def test_forget_frees_the_node(autojump_clock: trio.testing.MockClock) -> None:
    async with running(30.0, node("n1")) as cache:
        await cache.assume(pod("p"), "n1")
        g = (await cache.delta(0)).generation
        cache.mailbox.send_nowait(Forget(key="default/p"))
        delta = await cache.delta(g)
        assert [ni.name for ni in delta.nodes] == ["n1"]
        assert delta.nodes[0].pods == []


async def test_delta_after_committed_changes(autojump_clock: trio.testing.MockClock) -> None:
    async with running(30.0, node("n1"), node("n2")) as cache:
        full = await cache.delta(0)
        assert full.order == ["n1", "n2"] and full.objects is not None
        cache.commit(
            Change(
                revision=2,
                type="Added",
                kind="Pod",
                namespace="default",
                name="a",
                object=pod("a", on="n2"),
            ),
            Change(
                revision=3, type="Added", kind="Node", namespace="", name="n3", object=node("n3")
            ),
            Change(
                revision=4, type="Deleted", kind="Node", namespace="", name="n1", object=node("n1")
            ),
        )
        delta = await cache.delta(full.generation)
        assert [ni.name for ni in delta.nodes] == ["n2", "n3"]
        assert [p.key for p in delta.nodes[0].pods] == ["default/a"]
        assert (delta.removed, delta.order, delta.objects) == (["n1"], ["n2", "n3"], None)
        assert (await cache.delta(delta.generation)).nodes == []


async def test_a_change_the_cache_cannot_apply_is_logged(
    autojump_clock: trio.testing.MockClock, cache_log: TimedLog
) -> None:
    async with running(30.0, node("n1")) as cache:
        cache.commit(
            Change(
                revision=5, type="Deleted", kind="Node", namespace="", name="n9", object=node("n9")
            ),
            Change(
                revision=6, type="Added", kind="Node", namespace="", name="n2", object=node("n2")
            ),
        )
        assert (await cache.stats()).nodes == 2
    assert [m for _, m in cache_log.at(logging.ERROR)] == [
        "store change 5 (Deleted Node n9) does not apply to the cache: node n9 is not in the "
        "cache; cannot remove it"
    ]


async def test_a_requester_gone_before_the_reply_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(30.0, node("n1")) as cache:
        send, recv = trio.open_memory_channel[SnapshotDelta](1)
        recv.close()
        cache.mailbox.send_nowait(SnapshotRequest(generation=0, reply=send))
        assert (await cache.stats()).nodes == 1


async def test_the_actor_stops_when_its_mailbox_is_closed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    send, recv = trio.open_memory_channel[CacheMsg](10)
    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(CacheActor(recv).run)
            await send.aclose()
    assert trio.current_time() == 0.0


def cache_with_n0(cpu: str) -> tuple[trio.MemorySendChannel[CacheMsg], CacheActor]:
    """A cache actor (not started) holding one node n0 of ``cpu``, and its mailbox."""
    tx, rx = trio.open_memory_channel[CacheMsg](16)
    cache = CacheActor(rx)
    cache.core.add_node(make_node("n0").capacity(cpu=cpu, memory="8Gi", pods=110).obj())
    return tx, cache


async def test_an_atomic_assume_refused_for_one_pod_assumes_none(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tx, cache = cache_with_n0(cpu="4")
    pods = [
        PodInfo(make_pod(f"w{i}").ns("ml").uid(f"uid-w{i}").req(cpu="1").obj()) for i in range(3)
    ]
    assumptions = [
        Assumption(pod=pods[0], node="n0"),
        Assumption(pod=pods[1], node="n0"),
        Assumption(pod=pods[2], node="gone"),  # a node the cache does not have: a conflict
    ]
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        answer: AssumeReply = await ask(
            tx, lambda r: Assume(pods=assumptions, generation=1, reply=r, atomic=True)
        )
        assert cache.core.assumed_count == 0
        assert cache.core.dump().pods == {}
        assert [s.status for s in answer.statuses] == ["conflict"] * 3
        assert answer.statuses[0].message == (
            "not assumed: the cache refused ml/w2 of its pod group (node gone is not in the "
            "cache; cannot assume pod ml/w2 on it)"
        )
        # Without atomic, the same assumptions take the two that fit.
        answer = await ask(tx, lambda r: Assume(pods=assumptions, generation=1, reply=r))
        assert [s.status for s in answer.statuses] == ["assumed", "assumed", "conflict"]
        await tx.aclose()


async def test_an_assume_of_units_refuses_one_unit_and_the_ones_after_it_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The gangs of one batch share an Assume (issue 24): each unit all or nothing, the units
    # before a refused one stay assumed, the ones after it (decided with it folded in) are not.
    tx, cache = cache_with_n0(cpu="8")

    def pod(name: str) -> PodInfo:
        return PodInfo(make_pod(name).ns("ml").uid(f"uid-{name}").req(cpu="1").obj())

    a = [Assumption(pod=pod(f"a{i}"), node="n0") for i in range(2)]
    b = [Assumption(pod=pod("b0"), node="n0"), Assumption(pod=pod("b1"), node="gone")]
    c = [Assumption(pod=pod(f"c{i}"), node="n0") for i in range(2)]
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        answer: AssumeReply = await ask(
            tx,
            lambda r: Assume(pods=a + b + c, generation=1, reply=r, atomic=True, units=[2, 2, 2]),
        )
        assert [s.status for s in answer.statuses] == ["assumed"] * 2 + ["conflict"] * 4
        assert sorted(cache.core.dump().pods) == ["ml/a0", "ml/a1"]
        assert answer.statuses[2].message == (
            "not assumed: the cache refused ml/b1 of its pod group (node gone is not in the "
            "cache; cannot assume pod ml/b1 on it)"
        )
        assert answer.statuses[4].message.startswith(
            "not assumed: decided with a pod group the cache refused (not assumed: the cache "
            "refused ml/b1"
        )
        # Units that do not add up to the pods: nothing assumed, the field named.
        answer = await ask(
            tx,
            lambda r: Assume(pods=c, generation=1, reply=r, atomic=True, units=[1]),
        )
        assert [s.status for s in answer.statuses] == ["error"] * 2
        assert answer.statuses[0].message.startswith("Assume.units [1]:")
        assert sorted(cache.core.dump().pods) == ["ml/a0", "ml/a1"]
        await tx.aclose()
