"""The actors move their metrics: the queue's pending and incoming counts and unschedulable pods
by plugin, and a whole in-process runtime (memory_store, no sockets) scheduling one pod that fits
and one that fits nowhere. The registry is process-wide, so counters are compared as deltas."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio
import trio.testing
from builders import make_node, make_pod
from queue_harness import change, committed

from podium.actors.cycle.filtering import FilterActor
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.cycle.scoring import ScoreActor
from podium.actors.framework.snapshot import Snapshot
from podium.actors.gateway.watch import AddWatch, Batch, Hub, WatchCursor
from podium.actors.mail.messages import (
    Attempted,
    BeginScheduling,
    Decision,
    FilterMsg,
    FilterRequest,
    Pop,
    Popped,
    PoppedBatch,
    QueueIdle,
    QueueMsg,
    Requeue,
    ScoreMsg,
)
from podium.actors.queue.actor import QueueActor
from podium.actors.runtime.mailbox import send
from podium.actors.supervisor.supervisor import Runtime, load_plugin_set
from podium.protocol import objects as o
from podium.protocol.config import SchedulerConfig
from podium.protocol.metrics import PROFILE, REGISTRY
from podium.store.actor import StoreActor
from podium.store.core import StoreCore
from podium.store.mail import (
    Published,
    StoreFailure,
    StoreMsg,
    WriteObjects,
    WriteResult,
)
from podium.store.memory import memory_store


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@dataclass
class Queue:
    inbox: trio.MemorySendChannel[QueueMsg]
    actor: QueueActor

    async def pop(self) -> Popped:
        reply_to, answer = trio.open_memory_channel[PoppedBatch | QueueIdle](1)
        self.inbox.send_nowait(Pop(reply=reply_to))
        got = await answer.receive()
        assert isinstance(got, PoppedBatch)
        (one,) = got.pods
        return one


@asynccontextmanager
async def running_queue() -> AsyncIterator[Queue]:
    inbox, rx = trio.open_memory_channel[QueueMsg](math.inf)
    actor = QueueActor(rx)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        async with inbox:
            yield Queue(inbox, actor)


def pending(name: str) -> o.Pod:
    return make_pod(name).uid(f"uid-{name}").obj()


async def test_queue_reports_pending_incoming_and_unschedulable_by_plugin(
    mock_clock: trio.testing.MockClock,
) -> None:
    incoming = "scheduler_queue_incoming_pods_total"
    by_plugin = "scheduler_unschedulable_pods"
    plugin = {"plugin": "PodFitsResources", "profile": PROFILE}
    pod_add = value(incoming, queue="active", event="PodAdd")
    failures = value(incoming, queue="unschedulable", event="ScheduleAttemptFailure")
    node_adds = value(incoming, queue="backoff", event="NodeAdd")
    unschedulable = value(by_plugin, **plugin)
    async with running_queue() as q:
        q.inbox.send_nowait(committed(change("Added", pending("a")), change("Added", pending("b"))))
        await trio.testing.wait_all_tasks_blocked()
        assert value("scheduler_pending_pods", queue="active") == 2
        assert value(incoming, queue="active", event="PodAdd") == pod_add + 2

        popped = await q.pop()
        q.inbox.send_nowait(
            Requeue(
                pod=popped.pod,
                cycle=popped.cycle,
                why="unschedulable",
                plugins=frozenset({"PodFitsResources"}),
            )
        )
        await trio.testing.wait_all_tasks_blocked()
        assert value("scheduler_pending_pods", queue="active") == 1
        assert value("scheduler_pending_pods", queue="unschedulable") == 1
        assert value(incoming, queue="unschedulable", event="ScheduleAttemptFailure") == (
            failures + 1
        )
        assert value(by_plugin, **plugin) == unschedulable + 1

        # A node arrives: the pod leaves the unschedulable set for backoffQ (still backing off).
        q.inbox.send_nowait(committed(change("Added", make_node("n1").obj())))
        await trio.testing.wait_all_tasks_blocked()
        assert value("scheduler_pending_pods", queue="unschedulable") == 0
        assert value("scheduler_pending_pods", queue="backoff") == 1
        assert value(incoming, queue="backoff", event="NodeAdd") == node_adds + 1
        assert value(by_plugin, **plugin) == unschedulable

        # The backoff (1 s) expires exactly on time.
        complete = value(incoming, queue="active", event="BackoffComplete")
        mock_clock.jump(1.0)
        await trio.testing.wait_all_tasks_blocked()
        assert value(incoming, queue="active", event="BackoffComplete") == complete + 1
        assert value("scheduler_pending_pods", queue="active") == 2


async def test_a_deleted_unschedulable_pod_no_longer_counts(
    mock_clock: trio.testing.MockClock,
) -> None:
    plugin = {"plugin": "PodToleratesNodeTaints", "profile": PROFILE}
    before = value("scheduler_unschedulable_pods", **plugin)
    async with running_queue() as q:
        q.inbox.send_nowait(committed(change("Added", pending("c"))))
        popped = await q.pop()
        q.inbox.send_nowait(
            Requeue(
                pod=popped.pod,
                cycle=popped.cycle,
                why="unschedulable",
                plugins=frozenset({"PodToleratesNodeTaints"}),
            )
        )
        await trio.testing.wait_all_tasks_blocked()
        assert value("scheduler_unschedulable_pods", **plugin) == before + 1
        q.inbox.send_nowait(committed(change("Deleted", pending("c"))))
        await trio.testing.wait_all_tasks_blocked()
        assert value("scheduler_unschedulable_pods", **plugin) == before


async def test_a_stopped_queue_takes_its_pods_out_of_the_gauge(
    mock_clock: trio.testing.MockClock,
) -> None:
    plugin = {"plugin": "MatchNodeSelector", "profile": PROFILE}
    before = value("scheduler_unschedulable_pods", **plugin)
    async with running_queue() as q:
        q.inbox.send_nowait(committed(change("Added", pending("d"))))
        popped = await q.pop()
        q.inbox.send_nowait(
            Requeue(
                pod=popped.pod,
                cycle=popped.cycle,
                why="unschedulable",
                plugins=frozenset({"MatchNodeSelector"}),
            )
        )
        await trio.testing.wait_all_tasks_blocked()
        assert value("scheduler_unschedulable_pods", **plugin) == before + 1
    assert value("scheduler_unschedulable_pods", **plugin) == before


# --------------------------------------------------------------------------- the runtime


def _store(
    inbox: trio.MemoryReceiveChannel[StoreMsg],
    subscribers: Sequence[trio.MemorySendChannel[Published]],
) -> StoreActor:
    return memory_store(inbox, subscribers, StoreCore())


async def test_runtime_counts_attempts_binds_and_unschedulable_plugins(
    mock_clock: trio.testing.MockClock,
) -> None:
    config = SchedulerConfig()
    attempts = "scheduler_schedule_attempts_total"
    scheduled = value(attempts, result="scheduled", profile=PROFILE)
    unschedulable = value(attempts, result="unschedulable", profile=PROFILE)
    bound = value("scheduler_pod_scheduling_attempts_count")
    sli = value("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1")
    filters = value(
        "scheduler_framework_extension_point_duration_seconds_count",
        extension_point="Filter",
        status="Unschedulable",
        profile=PROFILE,
    )
    reserves = value(
        "scheduler_framework_extension_point_duration_seconds_count",
        extension_point="Reserve",
        status="Success",
        profile=PROFILE,
    )
    binds = value(
        "scheduler_framework_extension_point_duration_seconds_count",
        extension_point="Bind",
        status="Success",
        profile=PROFILE,
    )
    commits = value("podium_store_commit_batch_size_count")
    general = {"plugin": "GeneralPredicates", "profile": PROFILE}
    rejected = value("scheduler_unschedulable_pods", **general)

    reports_tx, reports_rx = trio.open_memory_channel[Attempted](math.inf)
    runtime = Runtime(config, load_plugin_set(config), _store, reports=reports_tx, seed=1)
    node = make_node("n1").capacity(cpu="2", memory="4Gi", pods=110).obj()
    # The big pod arrives first, so it fails before the small one's bind is a move request.
    big = make_pod("big").uid("uid-big").req(cpu="8").obj()
    small = make_pod("small").uid("uid-small").req(cpu="1").obj()
    async with trio.open_nursery() as nursery:
        handles = await nursery.start(runtime.run)
        answer_to, answer = trio.open_memory_channel[WriteResult | StoreFailure](1)
        await send(handles.store, WriteObjects(puts=[node, big, small], reply=answer_to))
        assert isinstance(await answer.receive(), WriteResult)
        await send(handles.scheduler, BeginScheduling())
        statuses = [(await reports_rx.receive()).status for _ in range(2)]
        assert statuses == ["unschedulable", "scheduled"]
        await trio.testing.wait_all_tasks_blocked()

        assert value(attempts, result="scheduled", profile=PROFILE) == scheduled + 1
        assert value(attempts, result="unschedulable", profile=PROFILE) == unschedulable + 1
        assert value("scheduler_unschedulable_pods", **general) == rejected + 1
        assert value("scheduler_pending_pods", queue="unschedulable") == 1
        for cache_size in ("scheduler_cache_size", "scheduler_scheduler_cache_size"):
            assert value(cache_size, type="nodes") == 1
            assert value(cache_size, type="pods") == 1
        assert value("scheduler_pod_scheduling_attempts_count") == bound + 1
        assert value("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == sli + 1
        point = "scheduler_framework_extension_point_duration_seconds_count"
        assert (
            value(point, extension_point="Filter", status="Unschedulable", profile=PROFILE)
            == filters + 1
        )
        assert (
            value(point, extension_point="Reserve", status="Success", profile=PROFILE)
            == reserves + 1
        )
        assert value(point, extension_point="Bind", status="Success", profile=PROFILE) == binds + 1
        # The put, the Unschedulable record and the binding: at least two commits.
        assert value("podium_store_commit_batch_size_count") >= commits + 2
        assert value("podium_store_revision") >= 4
        assert value("podium_recovery_duration_seconds") == 0.0

        runtime.stop()
        await handles.aclose()
    assert runtime.not_running() == [
        "cache",
        "queue",
        "scoring workers",
        "filter pool",
        "binder",
        "scheduler",
        "store",
    ]
    assert value("scheduler_unschedulable_pods", **general) == rejected


async def test_runtime_reports_every_actor_running_while_it_runs(
    mock_clock: trio.testing.MockClock,
) -> None:
    config = SchedulerConfig()
    runtime = Runtime(config, load_plugin_set(config), _store)
    async with trio.open_nursery() as nursery:
        handles = await nursery.start(runtime.run)
        assert runtime.not_running() == []
        runtime.stop()
        await handles.aclose()
    assert "store" in runtime.not_running()


# --------------------------------------------------------------------------- watcher lag


async def test_watcher_lag_is_how_far_a_forwarder_is_behind() -> None:
    pods = [change("Added", pending(f"lag-{i}")) for i in range(3)]
    hub = Hub()
    hub.revision = start = pods[0].revision - 1
    slow_cursor, quiet_cursor = WatchCursor(start), WatchCursor(start)
    slow_tx, _slow_rx = trio.open_memory_channel[Batch](16)
    quiet_tx, _quiet_rx = trio.open_memory_channel[Batch](16)
    answer_to, _answer = trio.open_memory_channel[int | None](2)
    for key, kinds, channel, cursor in (
        ((1, 1), frozenset({"Pod"}), slow_tx, slow_cursor),
        ((1, 2), frozenset({"Service"}), quiet_tx, quiet_cursor),
    ):
        hub.add(
            AddWatch(
                key=key,
                position=None,
                kinds=kinds,
                channel=channel,
                cursor=cursor,
                reply=answer_to,
            )
        )
    hub.committed(committed(*pods))
    # Nothing taken by the Pod watch's forwarder yet; the Service watch has nothing to take.
    assert hub.lag() == 3
    slow_cursor.delivered = pods[1].revision
    assert hub.lag() == 1
    slow_cursor.delivered = pods[2].revision
    assert hub.lag() == 0


# --------------------------------------------------------------------------- plugin sampling


class _Draw(random.Random):
    """A sampling draw that always (0.0) or never (0.99) samples."""

    def __init__(self, draw: float) -> None:
        super().__init__(0)
        self.draw = draw

    def random(self) -> float:
        return self.draw


async def _decide(draw: float, *, dry: bool = False) -> Decision:
    config = SchedulerConfig()
    plugins = load_plugin_set(config)
    score_tx, score_rx = trio.open_memory_channel[ScoreMsg](math.inf)
    filter_tx, filter_rx = trio.open_memory_channel[FilterMsg](math.inf)
    pool = FilterActor(
        filter_rx,
        score_tx,
        FilterStage(plugins.filters.filters),
        rng=_Draw(draw),
    )
    workers = ScoreActor(
        score_rx, ScoreStage(plugins.scorers.scorers, rng=random.Random(1)), plugins.volumes
    )
    snapshot = Snapshot(
        [make_node(f"s{i}").capacity(cpu="4", memory="8Gi", pods=110).info() for i in range(2)]
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(workers.run)
        await nursery.start(pool.run)
        async with filter_tx:
            answer_to, answer = trio.open_memory_channel[Decision](1)
            filter_tx.send_nowait(
                FilterRequest(
                    pod=make_pod("sampled").req(cpu="1").info(),
                    snapshot=snapshot,
                    dry=dry,
                    reply=answer_to,
                )
            )
            return await answer.receive()


def _plugin_samples(point: str) -> float:
    total = 0.0
    for family in REGISTRY.collect():
        if family.name == "scheduler_plugin_execution_duration_seconds":
            total += sum(
                s.value
                for s in family.samples
                if s.name.endswith("_count") and s.labels["extension_point"] == point
            )
    return total


async def test_sampled_attempts_time_every_plugin() -> None:
    filters, scores = _plugin_samples("Filter"), _plugin_samples("Score")
    decision = await _decide(0.0)
    assert decision.node is not None
    assert decision.score_seconds is not None
    assert decision.filter_seconds >= 0
    assert _plugin_samples("Filter") > filters
    assert _plugin_samples("Score") > scores


async def test_unsampled_and_dry_attempts_time_no_plugin() -> None:
    filters, scores = _plugin_samples("Filter"), _plugin_samples("Score")
    assert (await _decide(0.99)).node is not None
    assert (await _decide(0.0, dry=True)).node is not None
    assert (_plugin_samples("Filter"), _plugin_samples("Score")) == (filters, scores)
