"""The scheduler actor through its mailbox, under the autojump clock: one cycle after another
(scheduler.go@v1.14 ``scheduleOne``: pop, snapshot, filter and score, assume, bind), an
unschedulable pod requeued and recorded with its FitError, preemption, an assume conflict,
explain and policy reload on the control mailbox.

The queue, the cache, the binder and the store are played by the test (they record what they
get, in order, with the virtual time); the filter actor and the score actor are the real
actors over real plugins, since the decide trip runs through them.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
import trio
import trio.testing
from builders import make_claim, make_node, make_pod, make_storage_class, make_volume
from policies import plugins, volume_binder
from priority_harness import node_infos

from podium.actors.cycle.filtering import FilterActor
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.cycle.scheduler import NO_POLICY_FILE, PluginSet, Scheduler
from podium.actors.cycle.scoring import ScoreActor
from podium.actors.framework.interface import FilterPlugin
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import ClusterObjects
from podium.actors.mail.messages import (
    Assume,
    AssumeReply,
    AssumeStatus,
    Attempted,
    BeginScheduling,
    BindDone,
    BinderMsg,
    BindRequest,
    CacheMsg,
    Explained,
    ExplainPod,
    FilterMsg,
    GangBatch,
    GiveBack,
    GroupPlaced,
    Pop,
    Popped,
    PoppedBatch,
    QueueIdle,
    QueueMsg,
    Reloaded,
    ReloadPlugins,
    Requeue,
    RequeueGroup,
    SchedulerMsg,
    SchedulerStats,
    ScoreMsg,
    SetFilters,
    SetScorers,
    SnapshotDelta,
    SnapshotRequest,
)
from podium.protocol import objects as o
from podium.protocol.config import DEFAULT_BATCH_MAX_PODS
from podium.protocol.errors import PolicyError
from podium.store.mail import (
    Evict,
    EvictResult,
    Preemptor,
    RecordUnschedulable,
    StoreMsg,
    Victim,
)

TIME_LIMIT = 1000.0  # virtual seconds: a hung test fails instead of jumping forever
BIND_SECONDS = 2.0  # how long the played binder takes to answer a bind that asks for done

FILTERS, SCORERS = plugins(["PodFitsResources"], [("LeastRequestedPriority", 1)])


def node(name: str, cpu: str) -> o.Node:
    result: o.Node = make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()
    return result


def pod(name: str, cpu: str, priority: int = 0, on: str = "") -> o.Pod:
    b = make_pod(name).uid(f"uid-{name}").req(cpu=cpu).priority(priority)
    if on:
        b.node(on)
    result: o.Pod = b.obj()
    return result


def two_nodes() -> list[NodeInfo]:
    """n0 with 1 CPU, n1 with 4."""
    return node_infos([node("n0", "1"), node("n1", "4")])


@dataclass
class Peers:
    """The queue, cache, binder and store as the test plays them.

    ``log`` has (virtual time, peer, message) for everything the scheduler sent them, in the
    order the played peers received it.
    """

    nodes: list[NodeInfo]
    assume: Literal["assumed", "conflict", "error"] = "assumed"
    refuse: frozenset[str] = frozenset()
    """Pods the played cache answers ``conflict`` for, with an atomic Assume's unit rule:
    the unit holding one and the units after it are all ``conflict``."""
    objects: ClusterObjects | None = None  # the first snapshot's
    snapshot_seconds: float = 0.0
    log: list[tuple[float, str, Any]] = field(default_factory=list)

    def got(self, peer: str) -> list[Any]:
        return [msg for _, to, msg in self.log if to == peer]

    def trail(self) -> list[tuple[float, str]]:
        return [(t, f"{to} {type(msg).__name__}") for t, to, msg in self.log]


@dataclass
class Harness:
    control: trio.MemorySendChannel[SchedulerMsg]
    to_pop: trio.MemorySendChannel[PoppedBatch]
    reports: trio.MemoryReceiveChannel[Attempted]
    peers: Peers

    async def attempt(
        self, p: o.Pod, *, cycle: int = 1, attempts: int = 1, arrived_at: float = 0.0
    ) -> Attempted:
        """Have the queue hand ``p`` out; the scheduler's report of the attempt."""
        popped = Popped(pod=PodInfo(p), cycle=cycle, attempts=attempts, arrived_at=arrived_at)
        self.to_pop.send_nowait(PoppedBatch(pods=[popped]))
        return await self.reports.receive()

    async def ask(self, make: Callable[[trio.MemorySendChannel[Any]], SchedulerMsg]) -> Any:
        """Send a control request made with its reply channel; the reply."""
        reply_to, answer = trio.open_memory_channel[Any](1)
        await self.control.send(make(reply_to))
        return await answer.receive()


async def _play_queue(
    inbox: trio.MemoryReceiveChannel[QueueMsg],
    to_pop: trio.MemoryReceiveChannel[PoppedBatch],
    peers: Peers,
) -> None:
    async for msg in inbox:
        peers.log.append((trio.current_time(), "queue", msg))
        if isinstance(msg, Pop):
            if msg.idle_ok and to_pop.statistics().current_buffer_used == 0:
                msg.reply.send_nowait(QueueIdle(unschedulable=0))
            else:
                try:
                    msg.reply.send_nowait(await to_pop.receive())
                except trio.EndOfChannel:
                    return  # the test is over


async def _play_cache(inbox: trio.MemoryReceiveChannel[CacheMsg], peers: Peers) -> None:
    async for msg in inbox:
        peers.log.append((trio.current_time(), "cache", msg))
        match msg:
            case SnapshotRequest(generation=0):
                await trio.sleep(peers.snapshot_seconds)
                order = [n.name for n in peers.nodes]
                delta = SnapshotDelta(
                    generation=1, nodes=peers.nodes, removed=[], order=order, objects=peers.objects
                )
                msg.reply.send_nowait(delta)
            case SnapshotRequest():
                delta = SnapshotDelta(generation=1, nodes=[], removed=[], order=None, objects=None)
                msg.reply.send_nowait(delta)
            case Assume(atomic=True) if peers.refuse:
                units = msg.units or [len(msg.pods)]
                statuses: list[AssumeStatus] = []
                for n in units:
                    unit = msg.pods[len(statuses) : len(statuses) + n]
                    if any(a.pod.name in peers.refuse for a in unit):
                        rest = len(msg.pods) - len(statuses)
                        statuses += [AssumeStatus(status="conflict", message="refused")] * rest
                        break
                    statuses += [AssumeStatus(status=peers.assume)] * n
                msg.reply.send_nowait(AssumeReply(statuses=statuses))
            case Assume():
                status = AssumeStatus(status=peers.assume)
                msg.reply.send_nowait(AssumeReply(statuses=[status] * len(msg.pods)))


async def _play_binder(inbox: trio.MemoryReceiveChannel[BinderMsg], peers: Peers) -> None:
    async for msg in inbox:
        peers.log.append((trio.current_time(), "binder", msg))
        if any(r.done is not None for r in msg.requests):
            await trio.sleep(BIND_SECONDS)
        for r in msg.requests:
            if r.done is not None:
                r.done.send_nowait(BindDone(key=r.pod.key, ok=True))


async def _play_store(inbox: trio.MemoryReceiveChannel[StoreMsg], peers: Peers) -> None:
    async for msg in inbox:
        peers.log.append((trio.current_time(), "store", msg))
        if isinstance(msg, Evict):
            victims = [*msg.victims, *(v for p in msg.group for v in p.victims)]
            evicted = [f"{v.namespace}/{v.name}" for v in victims]
            msg.reply.send_nowait(EvictResult(revision=9, evicted=evicted, nominated=True))


@asynccontextmanager
async def running(
    nodes: list[NodeInfo],
    *,
    begin: bool = True,
    objects: ClusterObjects | None = None,
    filters: list[FilterPlugin[Any]] = FILTERS,
    **options: Any,
) -> AsyncIterator[Harness]:
    """The scheduler with its peers; ``options`` go to :class:`Scheduler`."""
    peers = Peers(nodes, objects=objects)
    control_tx, control_rx = trio.open_memory_channel[SchedulerMsg](0)
    to_pop_tx, to_pop_rx = trio.open_memory_channel[PoppedBatch](1024)
    reports_tx, reports_rx = trio.open_memory_channel[Attempted](1024)
    queue_tx, queue_rx = trio.open_memory_channel[QueueMsg](1024)
    cache_tx, cache_rx = trio.open_memory_channel[CacheMsg](1024)
    binder_tx, binder_rx = trio.open_memory_channel[BinderMsg](1024)
    store_tx, store_rx = trio.open_memory_channel[StoreMsg](1024)
    filter_tx, filter_rx = trio.open_memory_channel[FilterMsg](1024)
    scorers_tx, scorers_rx = trio.open_memory_channel[ScoreMsg](1024)
    scheduler = Scheduler(
        control_rx,
        queue=queue_tx,
        cache=cache_tx,
        filter_actor=filter_tx,
        score_actor=scorers_tx,
        binder=binder_tx,
        store=store_tx,
        reports=reports_tx,
        filters=filters,
        **options,
    )
    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_play_queue, queue_rx, to_pop_rx, peers)
            nursery.start_soon(_play_cache, cache_rx, peers)
            nursery.start_soon(_play_binder, binder_rx, peers)
            nursery.start_soon(_play_store, store_rx, peers)
            stage = ScoreStage(SCORERS, rng=random.Random(1))
            await nursery.start(ScoreActor(scorers_rx, stage, volume_binder()).run)
            pool = FilterActor(filter_rx, scorers_tx.clone(), FilterStage(filters))
            await nursery.start(pool.run)
            await nursery.start(scheduler.run)
            if begin:
                await control_tx.send(BeginScheduling())
            yield Harness(control_tx, to_pop_tx, reports_rx, peers)
            # Shutdown as the supervisor does it; every peer's mailbox is closed on the way out.
            scheduler.stop()
            await control_tx.aclose()
            await to_pop_tx.aclose()


async def test_a_cycle_pops_snapshots_decides_assumes_and_hands_the_bind_over(
    autojump_clock: trio.testing.MockClock,
) -> None:
    web = pod("web", cpu="2")
    async with running(two_nodes()) as h:
        await trio.sleep(5)
        report = await h.attempt(web, cycle=7, attempts=3, arrived_at=2.5)
        stats = await h.ask(lambda reply: SchedulerStats(reply=reply))
    assert (report.pod.pod, report.status, report.node, report.preempted) == (
        web,
        "scheduled",
        "n1",
        [],
    )
    # Each step waits for the one before it to be answered; the bind is handed over unawaited,
    # so the next pop may reach the queue before the binder sees it.
    assert h.peers.trail()[:3] == [
        (0.0, "queue Pop"),
        (5.0, "cache SnapshotRequest"),
        (5.0, "cache Assume"),
    ]
    assert sorted(h.peers.trail()[3:]) == [(5.0, "binder BindBatch"), (5.0, "queue Pop")]
    _, assume = h.peers.got("cache")
    ((assumed,), generation) = assume.pods, assume.generation
    assert (assumed.pod.pod, assumed.node, generation) == (web, "n1", 1)
    ((bind,),) = [b.requests for b in h.peers.got("binder")]
    assert bind == BindRequest(pod=bind.pod, node="n1", cycle=7, attempts=3, arrived_at=2.5)
    assert bind.pod.pod == web
    assert (stats.scheduled, stats.unschedulable, stats.errors) == (1, 0, 0)


def batch(*pods: o.Pod) -> PoppedBatch:
    return PoppedBatch(
        pods=[
            Popped(pod=PodInfo(p), cycle=i, attempts=1, arrived_at=0.0)
            for i, p in enumerate(pods, 1)
        ]
    )


async def test_a_batch_decides_each_pod_on_a_snapshot_carrying_the_decisions_before_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b, c = (pod(name, cpu="2") for name in "abc")
    async with running(two_nodes(), preemption=False) as h:
        h.to_pop.send_nowait(batch(a, b, c))
        reports = {r.pod.key: r for r in [await h.reports.receive() for _ in range(3)]}
    assert {k: (r.status, r.node) for k, r in reports.items()} == {
        "default/a": ("scheduled", "n1"),
        "default/b": ("scheduled", "n1"),
        "default/c": ("unschedulable", None),
    }
    # n1 (4 CPU) took a and b: c saw them there, as it would have one pod at a time.
    assert reports["default/c"].result.message == "0/2 nodes are available: 2 Insufficient cpu."
    # One snapshot, one assume and one bind for the batch.
    snapshot, assume = h.peers.got("cache")
    assert isinstance(snapshot, SnapshotRequest)
    assert [(x.pod.key, x.node) for x in assume.pods] == [("default/a", "n1"), ("default/b", "n1")]
    (bound,) = h.peers.got("binder")
    assert [(r.pod.key, r.cycle) for r in bound.requests] == [("default/a", 1), ("default/b", 2)]
    requeued = [m for m in h.peers.got("queue") if isinstance(m, Requeue)]
    assert [(m.pod.key, m.cycle, m.why) for m in requeued] == [("default/c", 3, "unschedulable")]


def one_local_volume() -> ClusterObjects:
    """One local volume (WaitForFirstConsumer) and two claims for it, c-a and c-b."""
    objects = ClusterObjects()
    objects.storage_classes["local"] = make_storage_class("local")
    objects.persistent_volumes["pv0"] = make_volume("pv0", "local")
    for name in ("c-a", "c-b"):
        objects.persistent_volume_claims[f"default/{name}"] = make_claim(name, "local")
    return objects


def claiming(name: str) -> o.Pod:
    result: o.Pod = make_pod(name).uid(f"uid-{name}").req(cpu="1").pvc(f"c-{name}").obj()
    return result


VOLUME_FILTERS, _ = plugins(["PodFitsResources", "CheckVolumeBinding"])


async def test_a_pods_claims_see_the_volumes_earlier_pods_of_its_batch_took(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """a's volume decision (pv0) is folded into the batch's snapshot, so b finds no volume,
    as it would have after a's bind one pod at a time, instead of both choosing pv0 and the
    cache refusing b."""
    a, b = claiming("a"), claiming("b")
    async with running(two_nodes(), objects=one_local_volume(), filters=VOLUME_FILTERS) as h:
        h.to_pop.send_nowait(batch(a, b))
        reports = {r.pod.key: r for r in [await h.reports.receive() for _ in range(2)]}
    assert reports["default/a"].status == "scheduled"
    assert reports["default/b"].status == "unschedulable"
    message = reports["default/b"].result.message or ""
    assert "didn't find available persistent volumes to bind" in message
    ((bind,),) = [m.requests for m in h.peers.got("binder")]
    assert (bind.pod.key, bind.volumes) == ("default/a", {"default/c-a": "pv0"})


async def test_a_refused_pods_volume_decision_is_taken_back_out_of_the_snapshot(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The cache refuses a: the volume a's decision took is free again for the next batch
    (the cache's objects did not change, so no refresh would bring them)."""
    a, b = claiming("a"), claiming("b")
    async with running(two_nodes(), objects=one_local_volume(), filters=VOLUME_FILTERS) as h:
        h.peers.assume = "conflict"
        first = await h.attempt(a)
        h.peers.assume = "assumed"
        second = await h.attempt(b, cycle=2)
    assert (first.status, second.status) == ("conflict", "scheduled")
    ((bind,),) = [m.requests for m in h.peers.got("binder")]
    assert (bind.pod.key, bind.volumes) == ("default/b", {"default/c-b": "pv0"})


async def test_pods_a_batch_has_not_decided_when_its_time_bound_passes_go_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b, c = (pod(name, cpu="100m") for name in "abc")
    async with running(two_nodes(), batch_max_seconds=0.5) as h:
        h.peers.snapshot_seconds = 1.0
        h.to_pop.send_nowait(batch(a, b, c))
        report = await h.reports.receive()
        await trio.testing.wait_all_tasks_blocked()
    # The first pod is always decided; the rest return to the queue, not as attempts.
    assert (report.pod.key, report.status) == ("default/a", "scheduled")
    assert [m for m in h.peers.got("queue") if not isinstance(m, Pop)] == [
        GiveBack(keys=["default/b", "default/c"])
    ]
    (bound,) = h.peers.got("binder")
    assert [r.pod.key for r in bound.requests] == ["default/a"]


async def test_a_batch_whose_refresh_took_its_time_bound_makes_the_next_pop_ask_for_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The next Pop asks for what the last batch showed fits in the bound: none of b and c
    could be decided, so rather than popping 32 to give 31 back, it asks for one."""
    a, b, c = (pod(name, cpu="100m") for name in "abc")
    async with running(two_nodes(), batch_max_seconds=0.5) as h:
        h.peers.snapshot_seconds = 1.0
        h.to_pop.send_nowait(batch(a, b, c))
        await h.reports.receive()
        await trio.testing.wait_all_tasks_blocked()
        h.to_pop.send_nowait(batch(b))
        again = await h.reports.receive()
        await trio.testing.wait_all_tasks_blocked()
    assert (again.pod.key, again.status) == ("default/b", "scheduled")
    pops = [m.max_pods for m in h.peers.got("queue") if isinstance(m, Pop)]
    assert pops[:3] == [DEFAULT_BATCH_MAX_PODS, 1, 1]


async def test_a_preemptor_after_the_first_pod_goes_back_and_ends_the_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    victims = [pod(name, cpu="1", priority=10, on="n0") for name in ("low-a", "low-b")]
    first = pod("first", cpu="1", priority=2000)
    urgent = pod("urgent", cpu="1500m", priority=1000)
    last = pod("last", cpu="100m", priority=1000)
    nodes = node_infos([node("n0", "2"), node("n1", "1")], victims)
    async with running(nodes) as h:
        h.to_pop.send_nowait(batch(first, urgent, last))
        report = await h.reports.receive()
        await trio.testing.wait_all_tasks_blocked()
        # The next batch starts with the preemptor: now it is carried out.
        h.to_pop.send_nowait(batch(urgent, last))
        again = await h.reports.receive()
        await trio.testing.wait_all_tasks_blocked()
    assert (report.pod.key, report.status, report.node) == ("default/first", "scheduled", "n1")
    assert (again.pod.key, again.status, again.preempted) == (
        "default/urgent",
        "unschedulable",
        ["default/low-a", "default/low-b"],
    )
    steps = [f"{to} {type(m).__name__}" for _, to, m in h.peers.log]
    # first is bound before the store evicts anything; the preemptor's first decision is not
    # an attempt: it went back, with the pod after it, each time.
    assert steps.index("binder BindBatch") < steps.index("store Evict")
    gave_back = [m.keys for m in h.peers.got("queue") if isinstance(m, GiveBack)]
    assert gave_back == [["default/urgent", "default/last"], ["default/last"]]
    requeued = [m.pod.key for m in h.peers.got("queue") if isinstance(m, Requeue)]
    assert requeued == ["default/urgent"]


async def test_an_unschedulable_pod_is_requeued_and_its_fit_error_recorded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    big = pod("big", cpu="8")
    async with running(two_nodes(), preemption=False) as h:
        report = await h.attempt(big, cycle=4)
    message = "0/2 nodes are available: 2 Insufficient cpu."
    assert (report.status, report.node, report.result.message) == ("unschedulable", None, message)
    assert [type(m) for m in h.peers.got("cache")] == [SnapshotRequest]
    assert [type(m) for m in h.peers.got("queue")] == [Pop, Requeue, Pop]
    assert h.peers.got("binder") == []
    requeue = h.peers.got("queue")[1]
    assert requeue == Requeue(
        pod=requeue.pod, cycle=4, why="unschedulable", plugins=frozenset({"PodFitsResources"})
    )
    assert requeue.pod.pod == big
    assert h.peers.got("store") == [
        RecordUnschedulable(namespace="default", name="big", uid="uid-big", message=message)
    ]


async def test_preemption_that_finds_no_victim_says_so_in_the_fit_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(two_nodes()) as h:
        report = await h.attempt(pod("big", cpu="8"))
    assert report.result.message == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod."
    )
    assert [type(m) for m in h.peers.got("store")] == [RecordUnschedulable]


async def test_preemption_evicts_lower_priority_pods_and_nominates_the_preemptor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    victims = [pod(name, cpu="1", priority=10, on="n0") for name in ("low-a", "low-b")]
    urgent = pod("urgent", cpu="1500m", priority=1000)
    async with running(node_infos([node("n0", "2")], victims)) as h:
        report = await h.attempt(urgent)
    assert (report.status, report.preempted) == (
        "unschedulable",
        ["default/low-a", "default/low-b"],
    )
    evict, record = h.peers.got("store")
    assert evict == Evict(
        namespace="default",
        name="urgent",
        uid="uid-urgent",
        node="n0",
        victims=[
            Victim(namespace="default", name="low-a", uid="uid-low-a"),
            Victim(namespace="default", name="low-b", uid="uid-low-b"),
        ],
        reply=evict.reply,
    )
    # The pod waits in the queue for its victims to go; the FitError stands as it was.
    message = "0/1 nodes are available: 1 Insufficient cpu."
    assert record == RecordUnschedulable(
        namespace="default", name="urgent", uid="uid-urgent", message=message
    )
    assert [m.why for m in h.peers.got("queue") if isinstance(m, Requeue)] == ["unschedulable"]


@pytest.mark.parametrize("status", ["conflict", "error"])
async def test_an_assume_the_cache_refuses_is_requeued_without_a_bind(
    autojump_clock: trio.testing.MockClock, status: Literal["conflict", "error"]
) -> None:
    web = pod("web", cpu="2")
    async with running(two_nodes()) as h:
        h.peers.assume = status
        report = await h.attempt(web, cycle=2)
    assert (report.status, report.node) == (status, None)
    assert h.peers.got("binder") == []
    requeue = h.peers.got("queue")[1]
    assert requeue == Requeue(pod=requeue.pod, cycle=2, why=status)


async def test_sync_binds_wait_for_each_bind_before_the_next_pop(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(two_nodes(), sync_binds=True) as h:
        for name in ("a", "b", "c"):
            await h.attempt(pod(name, cpu="1"))
    pops = [t for t, step in h.peers.trail() if step == "queue Pop"]
    assert pops == [0.0, BIND_SECONDS, 2 * BIND_SECONDS]
    assert all(r.done is not None for m in h.peers.got("binder") for r in m.requests)


async def test_explain_decides_without_popping_assuming_or_binding(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(two_nodes(), begin=False) as h:
        fits: Explained = await h.ask(
            lambda reply: ExplainPod(pod=PodInfo(pod("web", cpu="2")), reply=reply)
        )
        big: Explained = await h.ask(
            lambda reply: ExplainPod(pod=PodInfo(pod("big", cpu="8")), reply=reply)
        )
    assert (fits.decision.node, fits.decision.generation, fits.preempted) == ("n1", 1, [])
    assert fits.decision.result.failed == {"n0": ("Insufficient cpu",)}
    assert big.decision.node is None
    assert [(hint.resource, hint.missing, hint.nodes) for hint in big.hints] == [("cpu", "4", 1)]
    assert [step for _, step in h.peers.trail()] == [
        "cache SnapshotRequest",
        "cache SnapshotRequest",
    ]


async def test_reload_sends_the_new_plugins_on_and_reports_them(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # No predicates: the 8-CPU pod "fits" every node (v1.14 with an empty predicate list).
    permissive = PluginSet(
        filters=SetFilters(
            filters=[], percentage_of_nodes_to_score=0, always_check_all_predicates=False
        ),
        scorers=SetScorers(scorers=SCORERS),
        predicates=[],
        priorities=[("LeastRequestedPriority", 1)],
        warnings=["a warning"],
        volumes=volume_binder(),
    )
    async with running(two_nodes(), load_plugins=lambda: permissive) as h:
        before = await h.attempt(pod("big", cpu="8"))
        reloaded = await h.ask(lambda reply: ReloadPlugins(reply=reply))
        after = await h.attempt(pod("big", cpu="8"))
    assert reloaded == Reloaded(
        predicates=[], priorities=[("LeastRequestedPriority", 1)], warnings=["a warning"]
    )
    assert (before.status, after.status) == ("unschedulable", "scheduled")


async def test_a_reload_that_fails_keeps_the_plugins_and_says_why(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def broken() -> PluginSet:
        raise PolicyError(
            [("predicates[0].name", 'unknown predicate "Frobnicate"')], source="p.json"
        )

    async with running(two_nodes(), load_plugins=broken) as h:
        failed = await h.ask(lambda reply: ReloadPlugins(reply=reply))
        report = await h.attempt(pod("big", cpu="8"), cycle=1)
    assert failed.error == 'p.json: predicates[0].name: unknown predicate "Frobnicate"'
    assert report.status == "unschedulable"
    async with running(two_nodes()) as h:
        unconfigured = await h.ask(lambda reply: ReloadPlugins(reply=reply))
    assert unconfigured == Reloaded(
        predicates=[], priorities=[], error=NO_POLICY_FILE, code="not_found"
    )


async def test_an_idle_queue_stops_a_scheduler_that_exits_when_idle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(two_nodes(), exit_when_idle=True) as h:
        await h.attempt(pod("web", cpu="2"))
        # The next Pop finds the queue idle: the scheduler ends and closes its reports.
        assert [report async for report in h.reports] == []
    assert [m.idle_ok for m in h.peers.got("queue")] == [True, True]


async def test_a_control_mailbox_closed_before_scheduling_began_stops_the_scheduler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(two_nodes(), begin=False) as h:
        await h.control.aclose()
        assert [report async for report in h.reports] == []
    assert h.peers.log == []


# --------------------------------------------------------------------------- gangs


def gang(*pods: o.Pod, min_count: int, bound: int = 0) -> PoppedBatch:
    popped = [Popped(pod=PodInfo(p), cycle=9, attempts=1, arrived_at=0.0) for p in pods]
    group = GangBatch(key="default/g", min_count=min_count, bound=bound, members=len(pods))
    return PoppedBatch(pods=popped, groups=[group])


async def test_a_gang_is_assumed_atomically_and_bound_with_its_group(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Enough fit (2 of 3, minCount 3 with 1 bound): one atomic Assume, GroupPlaced before the
    requeue of the one that did not fit, one BindBatch whose requests carry the group."""
    a, b, c = (pod(name, cpu="2") for name in "abc")
    async with running(two_nodes(), preemption=False, batch_max_seconds=0.0) as h:
        h.to_pop.send_nowait(gang(a, b, c, min_count=3, bound=1))
        reports = [await h.reports.receive() for _ in range(3)]
        await trio.testing.wait_all_tasks_blocked()
    assert [(r.pod.name, r.status) for r in reports] == [
        ("a", "scheduled"),
        ("b", "scheduled"),
        ("c", "unschedulable"),
    ]
    _, assume = h.peers.got("cache")
    assert assume.atomic and [x.pod.name for x in assume.pods] == ["a", "b"]
    placed, requeued = [m for m in h.peers.got("queue") if not isinstance(m, Pop)]
    assert isinstance(placed, GroupPlaced)
    assert (placed.key, [p.name for p in placed.pods]) == ("default/g", ["a", "b"])
    assert isinstance(requeued, Requeue) and requeued.pod.name == "c"
    (bound,) = h.peers.got("binder")
    assert [(r.pod.name, r.group) for r in bound.requests] == [
        ("a", "default/g"),
        ("b", "default/g"),
    ]


async def test_a_gang_the_cache_refuses_is_undone_and_requeued_as_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b = (pod(name, cpu="2") for name in "ab")
    async with running(two_nodes(), preemption=False) as h:
        h.peers.assume = "conflict"
        h.to_pop.send_nowait(gang(a, b, min_count=2))
        reports = [await h.reports.receive() for _ in range(2)]
        # The snapshot is as before the gang: the next pod sees n1 free.
        h.peers.assume = "assumed"
        report = await h.attempt(pod("big", cpu="4"))
    assert [(r.pod.name, r.status) for r in reports] == [("a", "conflict"), ("b", "conflict")]
    (requeued,) = [m for m in h.peers.got("queue") if isinstance(m, RequeueGroup)]
    assert (requeued.key, [p.name for p in requeued.pods], requeued.why) == (
        "default/g",
        ["a", "b"],
        "conflict",
    )
    assert h.peers.got("store") == []
    assert [r.pod.name for b in h.peers.got("binder") for r in b.requests] == ["big"]
    assert (report.status, report.node) == ("scheduled", "n1")


async def test_a_gang_evicts_for_every_member_in_one_evict_that_nominates_each(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Four members of priority 1000, two nodes full of pods of priority 10: member by member
    as pod preemption picks (the first node of those with the fewest, least important
    victims), one victim each; every member nominated and every victim evicted in one Evict;
    the group goes back as one unit, its members told the FitError as a pod is after its
    preemption."""
    lows = [
        pod(name, cpu="1", priority=10, on=where)
        for name, where in (("la", "n0"), ("lb", "n0"), ("lc", "n1"), ("ld", "n1"))
    ]
    members = [pod(f"w{i}", cpu="1", priority=1000) for i in range(4)]
    async with running(node_infos([node("n0", "2"), node("n1", "2")], lows)) as h:
        h.to_pop.send_nowait(gang(*members, min_count=4))
        reports = [await h.reports.receive() for _ in range(4)]
    (evict,) = [m for m in h.peers.got("store") if isinstance(m, Evict)]

    def victim(name: str) -> Victim:
        return Victim(namespace="default", name=name, uid=f"uid-{name}")

    assert (evict.name, evict.uid, evict.node, evict.victims) == (
        "w0",
        "uid-w0",
        "n0",
        [victim("lb")],
    )
    assert evict.group == [
        Preemptor(namespace="default", name="w1", uid="uid-w1", node="n0", victims=[victim("la")]),
        Preemptor(namespace="default", name="w2", uid="uid-w2", node="n1", victims=[victim("ld")]),
        Preemptor(namespace="default", name="w3", uid="uid-w3", node="n1", victims=[victim("lc")]),
    ]
    message = (
        "pod group default/g: 0 of 4 members fit, minCount 4; "
        "default/w0: 0/2 nodes are available: 2 Insufficient cpu.; "
        "default/w1: 0/2 nodes are available: 2 Insufficient cpu.; "
        "default/w2: 0/2 nodes are available: 2 Insufficient cpu.; and 1 more"
    )
    assert [(r.pod.name, r.status, r.result.message, r.preempted) for r in reports] == [
        ("w0", "unschedulable", message, ["default/lb"]),
        ("w1", "unschedulable", message, ["default/la"]),
        ("w2", "unschedulable", message, ["default/ld"]),
        ("w3", "unschedulable", message, ["default/lc"]),
    ]
    (requeued,) = [m for m in h.peers.got("queue") if isinstance(m, RequeueGroup)]
    assert (requeued.key, requeued.why) == ("default/g", "unschedulable")
    # Nothing was assumed or bound: the group is decided again once the victims are gone.
    assert [m for m in h.peers.got("cache") if isinstance(m, Assume)] == []
    assert h.peers.got("binder") == []


async def test_a_gang_member_sees_the_nominations_of_the_members_after_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The retry after a gang's preemption: w1 (2 CPU) was nominated to n0 (2 CPU free). w0
    (1 CPU) is decided first and would take n0, the less requested node, leaving w1 no room;
    seeing w1's nomination it goes to n1, and the group is placed whole."""
    w0 = pod("w0", cpu="1")
    w1 = make_pod("w1").uid("uid-w1").req(cpu="2").priority(0).nominated("n0").obj()
    async with running(node_infos([node("n0", "2"), node("n1", "1")]), preemption=False) as h:
        h.to_pop.send_nowait(gang(w0, w1, min_count=2))
        reports = [await h.reports.receive() for _ in range(2)]
    assert [(r.pod.name, r.status, r.node) for r in reports] == [
        ("w0", "scheduled", "n1"),
        ("w1", "scheduled", "n0"),
    ]


async def test_a_gang_that_preemption_helps_only_in_part_evicts_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """One member fits (n3); evicting the two pods of priority 10 makes room for two more (n2
    is held by a pod of the members' own priority): three of four, so nothing is evicted, the member preemption found no
    node for is named first with Kubernetes' preemption part, and the group says what
    evicting would have done."""
    held = [
        pod("la", cpu="2", priority=10, on="n0"),
        pod("lb", cpu="2", priority=10, on="n1"),
        pod("peer", cpu="2", priority=1000, on="n2"),
    ]
    members = [pod(f"w{i}", cpu="2", priority=1000) for i in range(4)]
    nodes = [node("n0", "2"), node("n1", "2"), node("n2", "2"), node("n3", "2")]
    async with running(node_infos(nodes, held)) as h:
        h.to_pop.send_nowait(gang(*members, min_count=4, bound=0))
        reports = [await h.reports.receive() for _ in range(4)]
    assert [m for m in h.peers.got("store") if isinstance(m, Evict)] == []
    (first,) = {r.result.message for r in reports}
    assert first is not None
    assert first.startswith(
        "pod group default/g: 1 of 4 members fit, minCount 4; default/w3: 0/4 nodes are "
        "available: 4 Insufficient cpu. preemption: 0/4 nodes are available: 4 No preemption "
        "victims found for incoming pod.; "
    )
    assert first.endswith(
        "preemption: evicting 2 pods would let 3 of the 4 members needed fit; nothing was evicted"
    )
    assert all(r.preempted == [] for r in reports)


async def test_a_gang_that_does_not_fit_is_undone_and_each_member_told_why(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b, c = (pod(name, cpu="2") for name in "abc")
    async with running(two_nodes()) as h:
        h.to_pop.send_nowait(gang(a, b, c, min_count=3))
        reports = [await h.reports.receive() for _ in range(3)]
        report = await h.attempt(pod("big", cpu="4"))
    message = (
        "pod group default/g: 2 of 3 members fit, minCount 3; "
        "default/c: 0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
        "available: 2 No preemption victims found for incoming pod."
    )
    assert [(r.pod.name, r.status, r.node, r.result.message) for r in reports] == [
        (name, "unschedulable", None, message) for name in "abc"
    ]
    assumes = [m for m in h.peers.got("cache") if isinstance(m, Assume)]
    assert [[x.pod.name for x in m.pods] for m in assumes] == [["big"]]
    records = [m for m in h.peers.got("store") if isinstance(m, RecordUnschedulable)]
    assert [(r.name, r.message) for r in records] == [(n, message) for n in "abc"]
    (requeued,) = [m for m in h.peers.got("queue") if isinstance(m, RequeueGroup)]
    assert (requeued.why, requeued.plugins) == ("unschedulable", frozenset({"PodFitsResources"}))
    # Every fold was undone: n1 is free for the next pod.
    assert (report.status, report.node) == ("scheduled", "n1")


def gangs(*groups: tuple[str, list[o.Pod], int]) -> PoppedBatch:
    """One batch of gangs ``(name, members, minCount)``, each popped in a cycle of its own."""
    pods: list[Popped] = []
    batch: list[GangBatch] = []
    for cycle, (name, members, min_count) in enumerate(groups, start=9):
        pods += [Popped(pod=PodInfo(p), cycle=cycle, attempts=1, arrived_at=0.0) for p in members]
        key = f"default/{name}"
        batch.append(GangBatch(key=key, min_count=min_count, bound=0, members=len(members)))
    return PoppedBatch(pods=pods, groups=batch)


async def test_gangs_of_one_batch_are_each_all_or_nothing_as_in_batches_of_their_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """n0 with 1 CPU, n1 with 4: a (two of 1 CPU) fits; b (three of 2 CPU) does not, and
    preemption finds nothing to evict; c (three of 1 CPU) fits only because b's one placed
    member was taken back out before c was decided. One snapshot refresh for the batch; b
    requeued as one unit in its own cycle as soon as it is decided; then the gangs placed
    settled together: one atomic Assume with a unit for each (a, c), their GroupPlaced, and
    one BindBatch whose requests carry each member's group."""
    a = [pod(f"a{i}", cpu="1") for i in range(2)]
    b = [pod(f"b{i}", cpu="2") for i in range(3)]
    c = [pod(f"c{i}", cpu="1") for i in range(3)]
    async with running(node_infos([node("n0", "2"), node("n1", "4")])) as h:
        h.to_pop.send_nowait(gangs(("a", a, 2), ("b", b, 3), ("c", c, 3)))
        reports = [await h.reports.receive() for _ in range(8)]
        await trio.testing.wait_all_tasks_blocked()
    assert [(r.pod.name, r.status) for r in reports] == [
        *((p.metadata.name, "unschedulable") for p in b),
        *((p.metadata.name, "scheduled") for p in a),
        *((p.metadata.name, "scheduled") for p in c),
    ]
    refreshes = [m for m in h.peers.got("cache") if isinstance(m, SnapshotRequest)]
    assumes = [m for m in h.peers.got("cache") if isinstance(m, Assume)]
    assert len(refreshes) == 1
    assert [(m.atomic, m.units, [x.pod.name for x in m.pods]) for m in assumes] == [
        (True, [2, 3], ["a0", "a1", "c0", "c1", "c2"]),
    ]
    (bind,) = h.peers.got("binder")
    assert [(r.pod.name, r.group) for r in bind.requests] == [
        ("a0", "default/a"),
        ("a1", "default/a"),
        ("c0", "default/c"),
        ("c1", "default/c"),
        ("c2", "default/c"),
    ]
    to_queue = [m for m in h.peers.got("queue") if not isinstance(m, Pop)]
    assert [(type(m).__name__, m.key) for m in to_queue] == [
        ("RequeueGroup", "default/b"),
        ("GroupPlaced", "default/a"),
        ("GroupPlaced", "default/c"),
    ]
    assert to_queue[0].cycle == 10
    # b was decided with a's members folded in (its FitError counts a's pods).
    assert reports[0].result.message is not None
    assert reports[0].result.message.startswith("pod group default/b: 1 of 3 members fit")


async def test_a_gang_the_cache_refuses_is_requeued_with_the_gangs_after_it_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Three gangs that fit share one Assume; the cache refuses b (a conflict): a stays
    assumed and is bound, b and c (decided with b's members folded in) are requeued, each
    as one unit, every fold of theirs undone (their CPU is free again for the next pod)."""
    a = [pod(f"a{i}", cpu="1") for i in range(2)]
    b = [pod(f"b{i}", cpu="1") for i in range(2)]
    c = [pod(f"c{i}", cpu="1") for i in range(2)]
    nodes = node_infos([node("n0", "2"), node("n1", "4")])
    async with running(nodes) as h:
        h.peers.refuse = frozenset({"b1"})
        h.to_pop.send_nowait(gangs(("a", a, 2), ("b", b, 2), ("c", c, 2)))
        reports = [await h.reports.receive() for _ in range(6)]
        h.peers.refuse = frozenset()
        report = await h.attempt(pod("big", cpu="3"))
    assert [(r.pod.name, r.status) for r in reports] == [
        ("b0", "conflict"),
        ("b1", "conflict"),
        ("c0", "conflict"),
        ("c1", "conflict"),
        ("a0", "scheduled"),
        ("a1", "scheduled"),
    ]
    requeued = [m for m in h.peers.got("queue") if isinstance(m, RequeueGroup)]
    assert [(m.key, m.why, [p.name for p in m.pods]) for m in requeued] == [
        ("default/b", "conflict", ["b0", "b1"]),
        ("default/c", "conflict", ["c0", "c1"]),
    ]
    placed = [m for m in h.peers.got("queue") if isinstance(m, GroupPlaced)]
    assert [m.key for m in placed] == ["default/a"]
    # a's BindBatch, then the 3-CPU pod's.
    binds = h.peers.got("binder")
    assert [[(r.pod.name, r.group) for r in m.requests] for m in binds] == [
        [("a0", "default/a"), ("a1", "default/a")],
        [("big", "")],
    ]
    # a's two members took one CPU of each node; b and c the four left, which are free
    # again: the 3-CPU pod fits on n1 only if the refused gangs' folds were undone.
    assert sorted(r.node for r in reports if r.status == "scheduled") == ["n0", "n1"]
    assert (report.status, report.node) == ("scheduled", "n1")


async def test_a_gang_whose_preemption_would_evict_after_the_first_goes_back_with_the_rest(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """a fits on n1; b (priority 1000) fits only by evicting the pod of priority 10 on n0:
    b is not the batch's first gang, so nothing is evicted and b and c go back to the queue
    (GiveBack: not counted as attempts) to come first in the next batch, as a pod's
    preemption after the first pod of a batch does."""
    low = pod("low", cpu="1", priority=10, on="n0")
    a, b, c = pod("a0", cpu="1"), pod("b0", cpu="1", priority=1000), pod("c0", cpu="1")
    async with running(node_infos([node("n0", "1"), node("n1", "1")], [low])) as h:
        h.to_pop.send_nowait(gangs(("a", [a], 1), ("b", [b], 1), ("c", [c], 1)))
        reports = [await h.reports.receive()]
        await trio.testing.wait_all_tasks_blocked()
    assert [(r.pod.name, r.status, r.node) for r in reports] == [("a0", "scheduled", "n1")]
    assert [m for m in h.peers.got("store") if isinstance(m, Evict)] == []
    (back,) = [m for m in h.peers.got("queue") if isinstance(m, GiveBack)]
    assert back.keys == ["default/b0", "default/c0"]
    assert not [m for m in h.peers.got("queue") if isinstance(m, RequeueGroup)]


async def test_a_first_gang_that_evicts_ends_the_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The batch's first gang evicts (one Evict, its members nominated) and goes back as one
    unit; the gang after it goes back undecided, to be decided on a refreshed snapshot."""
    low = pod("low", cpu="1", priority=10, on="n0")
    b, c = pod("b0", cpu="1", priority=1000), pod("c0", cpu="1")
    async with running(node_infos([node("n0", "1")], [low])) as h:
        h.to_pop.send_nowait(gangs(("b", [b], 1), ("c", [c], 1)))
        reports = [await h.reports.receive()]
        await trio.testing.wait_all_tasks_blocked()
    assert [(r.pod.name, r.status, r.preempted) for r in reports] == [
        ("b0", "unschedulable", ["default/low"])
    ]
    (evict,) = [m for m in h.peers.got("store") if isinstance(m, Evict)]
    assert (evict.name, evict.node) == ("b0", "n0")
    to_queue = [m for m in h.peers.got("queue") if not isinstance(m, Pop)]
    assert [type(m).__name__ for m in to_queue] == ["RequeueGroup", "GiveBack"]
    assert to_queue[1].keys == ["default/c0"]


async def test_the_gangs_a_batch_has_not_decided_when_its_time_bound_passes_go_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """With a time bound of 0, only the first gang is decided (whole): the others go back."""
    a, b = [pod("a0", cpu="1"), pod("a1", cpu="1")], [pod("b0", cpu="1")]
    async with running(two_nodes(), batch_max_seconds=0.0) as h:
        h.to_pop.send_nowait(gangs(("a", a, 2), ("b", b, 1)))
        reports = [await h.reports.receive() for _ in range(2)]
        await trio.testing.wait_all_tasks_blocked()
    assert [(r.pod.name, r.status) for r in reports] == [("a0", "scheduled"), ("a1", "scheduled")]
    (back,) = [m for m in h.peers.got("queue") if isinstance(m, GiveBack)]
    assert back.keys == ["default/b0"]
