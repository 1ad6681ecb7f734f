"""The scheduling-queue actor under the autojump clock: exact wake-up times, Pop parking,
idle_ok, and the mapping of store changes to queue operations (factory.go@v1.14 handlers)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
import pytest
import trio
import trio.testing
from builders import decode, make_node, make_pod
from queue_harness import QueueHarness, change, run_queue

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.mail.messages import (
    GiveBack,
    LookupReply,
    Pop,
    Popped,
    PoppedBatch,
    QueueIdle,
    QueueStats,
    QueueStatsReply,
    Requeue,
)
from podium.actors.queue.actor import (
    COMMIT_STEP_CHANGES,
    is_pending,
    node_scheduling_properties_changed,
)
from podium.protocol import objects as o
from podium.store.mail import Change, Recovered


def pending(name: str, priority: int = 0) -> o.Pod:
    return make_pod(name).uid(f"uid-{name}").priority(priority).obj()


@dataclass
class Harness(QueueHarness):
    async def pop(self, *, idle_ok: bool = False) -> Popped | QueueIdle:
        """One pod (a batch of one), or QueueIdle."""
        got = await self.pop_batch(1, idle_ok=idle_ok)
        if isinstance(got, QueueIdle):
            return got
        (one,) = got
        return one

    async def pop_batch(self, max_pods: int, *, idle_ok: bool = False) -> list[Popped] | QueueIdle:
        got = await self.pop_answer(max_pods, idle_ok=idle_ok)
        return got if isinstance(got, QueueIdle) else got.pods

    async def popped(self) -> Popped:
        got = await self.pop()
        assert isinstance(got, Popped)
        return got

    async def requeue(
        self, got: Popped, why: Literal["unschedulable", "error", "conflict"]
    ) -> None:
        self.send(Requeue(pod=got.pod, cycle=got.cycle, why=why))
        await trio.testing.wait_all_tasks_blocked()

    async def stats(self) -> QueueStatsReply:
        reply_to, answer = trio.open_memory_channel[QueueStatsReply](1)
        self.send(QueueStats(reply=reply_to))
        return await answer.receive()


def running(**kwargs: Any) -> AbstractAsyncContextManager[Harness]:
    return run_queue(Harness, **kwargs)


# --------------------------------------------------------------------------- wake-up times


async def test_error_after_move_request_backs_off_exactly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pending("p")))
        first = await h.popped()
        assert (trio.current_time(), first.cycle, first.attempts) == (0.0, 1, 1)
        h.commit(change("Added", make_node("n1").obj()))  # a move request during the attempt
        await h.requeue(first, "error")
        assert (await h.lookup("default/p")).queue == "backoff"
        second = await h.popped()
        assert (trio.current_time(), second.cycle, second.attempts) == (1.0, 2, 2)
        h.commit(change("Added", make_node("n2").obj()))
        await h.requeue(second, "error")
        third = await h.popped()
        assert (trio.current_time(), third.attempts, third.arrived_at) == (3.0, 3, 0.0)


async def test_unschedulable_pod_is_retried_at_the_first_flush_tick_after_5_minutes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pending("p")))
        await h.requeue(await h.popped(), "unschedulable")
        assert (await h.lookup("default/p")).queue == "unschedulable"
        again = await h.popped()
        assert trio.current_time() == 330.0
        assert again.attempts == 2


async def test_unschedulable_pod_moved_by_an_event_waits_for_its_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pending("p")))
        await h.requeue(await h.popped(), "unschedulable")
        await trio.sleep(0.25)
        h.commit(change("Added", make_node("n").obj()))
        await h.popped()
        assert trio.current_time() == 1.0


async def test_conflict_is_requeued_without_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pending("p")))
        await trio.sleep(2)
        await h.requeue(await h.popped(), "conflict")
        again = await h.popped()
        assert (trio.current_time(), again.attempts, again.arrived_at) == (2.0, 2, 0.0)


async def test_configured_durations(autojump_clock: trio.testing.MockClock) -> None:
    async with running(
        pod_initial_backoff_seconds=2,
        unschedulable_flush_interval_seconds=10,
        unschedulable_max_wait_seconds=15,
    ) as h:
        h.commit(change("Added", pending("p")))
        await h.requeue(await h.popped(), "unschedulable")
        await h.popped()
        assert trio.current_time() == 20.0


# --------------------------------------------------------------------------- Pop


async def test_pop_parks_until_a_pod_is_added(autojump_clock: trio.testing.MockClock) -> None:
    async with running() as h, trio.open_nursery() as nursery:
        got: list[Popped | QueueIdle] = []

        async def wait_for_pop() -> None:
            got.append(await h.pop())

        nursery.start_soon(wait_for_pop)
        await trio.sleep(5)
        assert got == []
        h.commit(change("Added", pending("p")))
        await h.settle()
        assert len(got) == 1 and isinstance(got[0], Popped)
        assert got[0].pod.key == "default/p" and trio.current_time() == 5.0


async def test_pop_answers_the_highest_priority_then_arrival(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pending("low", 0)), change("Added", pending("low2", 0)))
        await trio.sleep(1)
        h.commit(change("Added", pending("high", 10)))
        names = [(await h.popped()).pod.name for _ in range(3)]
        assert names == ["high", "low", "low2"]


async def test_pop_whose_requester_left_does_not_lose_the_pod(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        reply_to, answer = trio.open_memory_channel[PoppedBatch | QueueIdle](1)
        h.send(Pop(reply=reply_to))
        await h.settle()
        answer.close()
        h.commit(change("Added", pending("p")))
        await h.settle()
        assert await h.lookup("default/p") == LookupReply(queue="active", attempts=0)
        assert (await h.popped()).attempts == 1


async def test_idle_ok_answers_queue_idle_when_nothing_is_active_or_backing_off(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        assert await h.pop(idle_ok=True) == QueueIdle(unschedulable=0)
        h.commit(change("Added", pending("p")))
        await h.requeue(await h.popped(), "unschedulable")
        assert await h.pop(idle_ok=True) == QueueIdle(unschedulable=1)
        assert trio.current_time() == 0.0


async def test_idle_ok_waits_for_a_backing_off_pod(autojump_clock: trio.testing.MockClock) -> None:
    async with running() as h:
        h.commit(change("Added", pending("p")))
        first = await h.popped()
        h.commit(change("Added", make_node("n").obj()))
        await h.requeue(first, "error")
        got = await h.pop(idle_ok=True)
        assert isinstance(got, Popped) and trio.current_time() == 1.0


async def test_idle_ok_parked_then_the_backing_off_pod_is_deleted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h, trio.open_nursery() as nursery:
        h.commit(change("Added", pending("p")))
        first = await h.popped()
        h.commit(change("Added", make_node("n").obj()))
        await h.requeue(first, "error")
        got: list[Popped | QueueIdle] = []

        async def wait_for_pop() -> None:
            got.append(await h.pop(idle_ok=True))

        nursery.start_soon(wait_for_pop)
        await trio.sleep(0.5)
        h.commit(change("Deleted", pending("p")))
        await h.settle()
        assert got == [QueueIdle(unschedulable=0)] and trio.current_time() == 0.5


async def test_lookup_and_stats(autojump_clock: trio.testing.MockClock) -> None:
    async with running() as h:
        h.commit(*(change("Added", pending(n)) for n in ("b", "a", "c", "d")))
        b = await h.popped()
        h.commit(change("Added", make_node("n").obj()))  # a move request in b's cycle
        a = await h.popped()
        c = await h.popped()
        await h.requeue(a, "unschedulable")
        await h.requeue(b, "error")
        assert await h.lookup("default/a") == LookupReply(queue="unschedulable", attempts=1)
        assert await h.lookup("default/b") == LookupReply(queue="backoff", attempts=1)
        assert await h.lookup("default/c") == LookupReply(queue="in_flight", attempts=1)
        assert await h.lookup("default/d") == LookupReply(queue="active", attempts=0)
        assert await h.lookup("default/zz") == LookupReply(queue=None, attempts=0)
        assert await h.stats() == QueueStatsReply(active=1, backoff=1, unschedulable=1, in_flight=1)
        assert c.cycle == 3


# --------------------------------------------------------------------------- store changes


async def test_recovered_adds_every_pending_pod_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    objects: list[o.KubeObject] = [
        make_node("n1").obj(),
        pending("z-first"),
        make_pod("bound").node("n1").obj(),
        make_pod("theirs").spec(schedulerName="other").obj(),
        make_pod("done").phase("Succeeded").obj(),
        pending("a-second"),
    ]
    async with running() as h:
        h.send(Recovered(revision=7, objects=objects))
        assert [(await h.popped()).pod.name for _ in range(2)] == ["z-first", "a-second"]
        assert await h.stats() == QueueStatsReply(active=0, backoff=0, unschedulable=0, in_flight=2)


async def test_bound_pod_leaves_the_queue_and_its_requeue_is_dropped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        p = pending("p")
        h.commit(change("Added", p))
        got = await h.popped()
        bound = make_pod("p").uid("uid-p").node("n1").obj()
        h.commit(change("Bound", bound, old=p, node="n1"))
        await h.requeue(got, "error")
        assert await h.lookup("default/p") == LookupReply(queue=None, attempts=0)


async def test_pod_updated_in_flight_is_requeued_in_its_latest_version(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        p = pending("p")
        h.commit(change("Added", p))
        got = await h.popped()
        newer = make_pod("p").uid("uid-p").label("fixed", "1").obj()
        h.commit(change("Modified", newer, old=p))
        await h.requeue(got, "unschedulable")
        again = await h.popped()
        assert again.pod.pod == newer and trio.current_time() == 0.0


async def test_a_large_commit_is_added_in_steps_and_popped_only_whole(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A commit of many pods is taken a few changes a trio step (other tasks run between),
    each at the commit's time, in order; a Pop sent while it is half added is answered after
    the last change, with every pod in the order one-by-one handling gives."""
    pods = [pending(f"p{i:03}") for i in range(10 * COMMIT_STEP_CHANGES + 3)]
    async with running() as h:
        seen: list[int] = []
        answer: list[PoppedBatch | QueueIdle] = []

        async def pop_while_adding() -> None:
            while (active := h.actor.core.active_count) < len(pods):
                seen.append(active)
                if active and not answer:
                    answer.append(await h.pop_answer(len(pods)))
                    return
                await trio.lowlevel.checkpoint()

        h.commit(*[change("Added", p) for p in pods])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pop_while_adding)
    # The Pop went while the commit was partly added (a multiple of the step's changes) ...
    assert seen[-1] % COMMIT_STEP_CHANGES == 0 and 0 < seen[-1] < len(pods)
    # ... and got the whole commit, in arrival order.
    (got,) = answer
    assert isinstance(got, PoppedBatch)
    assert [p.pod.pod.metadata.name for p in got.pods] == [p.metadata.name for p in pods]
    assert trio.current_time() == 0.0


def unbound(name: str) -> o.Pod:
    return make_pod(name).uid(f"uid-{name}").obj()


def bound(name: str, **labels: str) -> o.Pod:
    return make_pod(name).uid(f"uid-{name}").labels(labels).node("n1").obj()


NODE = make_node("n1").capacity(cpu="4").obj()


def node_with(**changes: Any) -> o.Node:
    b = make_node("n1").capacity(cpu="4")
    for method, args in changes.items():
        getattr(b, method)(*(args if isinstance(args, tuple) else (args,)))
    return b.obj()


def storage_class(mode: str) -> o.StorageClass:
    sc: o.StorageClass = decode(
        o.StorageClass,
        {"kind": "StorageClass", "metadata": {"name": "sc"}, "volumeBindingMode": mode},
    )
    return sc


def named(kind: type[Any], name: str, namespace: str = "") -> Any:
    meta = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return decode(kind, {"kind": kind.__name__, "metadata": meta})


AFFINE = (
    make_pod("u")
    .uid("uid-u")
    .affinity(
        {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
                ]
            }
        }
    )
    .obj()
)


@dataclass(frozen=True)
class MoveCase:
    """``u`` is unschedulable (failed at t=0, backoff over at t=1); at t=2 ``changes`` arrive.
    ``want`` is where ``u`` then is; ``move_request`` whether a move request was recorded."""

    name: str
    changes: Callable[[], list[Change]]
    want: Literal["active", "unschedulable"]
    move_request: bool
    pod: o.Pod = field(default_factory=lambda: unbound("u"))


MOVE_CASES = [
    MoveCase("node added", lambda: [change("Added", NODE)], "active", True),
    MoveCase("node deleted", lambda: [change("Deleted", NODE)], "unschedulable", False),
    MoveCase(
        "node modified: labels",
        lambda: [change("Modified", node_with(label=("zone", "a")), old=NODE)],
        "active",
        True,
    ),
    MoveCase(
        "node modified: taints",
        lambda: [change("Modified", node_with(taint="gpu"), old=NODE)],
        "active",
        True,
    ),
    MoveCase(
        "node modified: allocatable",
        lambda: [change("Modified", make_node("n1").capacity(cpu="8").obj(), old=NODE)],
        "active",
        True,
    ),
    MoveCase(
        "node modified: condition status",
        lambda: [change("Modified", node_with(condition=("Ready", "True")), old=NODE)],
        "active",
        True,
    ),
    MoveCase(
        "node modified: became schedulable",
        lambda: [change("Modified", NODE, old=node_with(unschedulable=True))],
        "active",
        True,
    ),
    MoveCase(
        "node modified: became unschedulable",
        lambda: [change("Modified", node_with(unschedulable=True), old=NODE)],
        "unschedulable",
        False,
    ),
    MoveCase(
        "node modified: images only",
        lambda: [change("Modified", node_with(image=(["nginx"], 10)), old=NODE)],
        "unschedulable",
        False,
    ),
    MoveCase(
        "pv added", lambda: [change("Added", named(o.PersistentVolume, "pv"))], "active", True
    ),
    MoveCase(
        "pv modified",
        lambda: [change("Modified", named(o.PersistentVolume, "pv"))],
        "active",
        True,
    ),
    MoveCase(
        "pv deleted",
        lambda: [change("Deleted", named(o.PersistentVolume, "pv"))],
        "unschedulable",
        False,
    ),
    MoveCase(
        "pvc added",
        lambda: [change("Added", named(o.PersistentVolumeClaim, "c", "default"))],
        "active",
        True,
    ),
    MoveCase(
        "pvc deleted",
        lambda: [change("Deleted", named(o.PersistentVolumeClaim, "c", "default"))],
        "unschedulable",
        False,
    ),
    MoveCase(
        "service added", lambda: [change("Added", named(o.Service, "s", "default"))], "active", True
    ),
    MoveCase(
        "service deleted",
        lambda: [change("Deleted", named(o.Service, "s", "default"))],
        "active",
        True,
    ),
    MoveCase(
        "storage class added, WaitForFirstConsumer",
        lambda: [change("Added", storage_class("WaitForFirstConsumer"))],
        "active",
        True,
    ),
    MoveCase(
        "storage class added, Immediate",
        lambda: [change("Added", storage_class("Immediate"))],
        "unschedulable",
        False,
    ),
    MoveCase(
        "replica set added",
        lambda: [change("Added", named(o.ReplicaSet, "rs", "default"))],
        "unschedulable",
        False,
    ),
    MoveCase("assigned pod deleted", lambda: [change("Deleted", bound("b"))], "active", True),
    MoveCase("assigned pod preempted", lambda: [change("Preempted", bound("b"))], "active", True),
    MoveCase(
        "assigned pod finished",
        lambda: [
            change(
                "Modified",
                make_pod("b").uid("uid-b").node("n1").phase("Succeeded").obj(),
                old=bound("b"),
            )
        ],
        "active",
        True,
    ),
    MoveCase(
        "unbound pod deleted", lambda: [change("Deleted", unbound("x"))], "unschedulable", False
    ),
    MoveCase(
        "assigned pod added, no affinity term: not moved",
        lambda: [change("Added", bound("b", app="db"))],
        "unschedulable",
        True,
    ),
    MoveCase(
        "assigned pod added, matching affinity term",
        lambda: [change("Added", bound("b", app="db"))],
        "active",
        True,
        pod=AFFINE,
    ),
    MoveCase(
        "assigned pod added, not matching",
        lambda: [change("Added", bound("b", app="web"))],
        "unschedulable",
        True,
        pod=AFFINE,
    ),
    MoveCase(
        "assigned pod relabelled to match",
        lambda: [change("Modified", bound("b", app="db"), old=bound("b", app="web"))],
        "active",
        True,
        pod=AFFINE,
    ),
    MoveCase(
        "pod bound by podium, matching",
        lambda: [change("Bound", bound("b", app="db"), old=unbound("b"), node="n1")],
        "active",
        True,
        pod=AFFINE,
    ),
    MoveCase(
        "unschedulable record of another pod",
        lambda: [change("Unschedulable", unbound("x"))],
        "unschedulable",
        False,
    ),
]


@pytest.mark.parametrize("case", MOVE_CASES, ids=lambda c: c.name)
async def test_cluster_events_move_unschedulable_pods(
    case: MoveCase, autojump_clock: trio.testing.MockClock
) -> None:
    async with running() as h:
        h.commit(change("Added", case.pod))
        await h.requeue(await h.popped(), "unschedulable")
        await trio.sleep(2)
        before = h.actor.core.move_request_cycle
        h.commit(*case.changes())
        await h.settle()
        assert (await h.lookup("default/u")).queue == case.want
        assert (h.actor.core.move_request_cycle != before) == case.move_request


async def test_node_modified_with_no_unschedulable_pod_still_records_a_move_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """v1.14 updateNodeInCache moves when NumUnschedulablePods() == 0, so the pod in flight
    goes to backoff on failure."""
    async with running() as h:
        h.commit(change("Added", pending("p")))
        got = await h.popped()
        h.commit(change("Modified", node_with(image=(["nginx"], 10)), old=NODE))
        await h.requeue(got, "unschedulable")
        assert (await h.lookup("default/p")).queue == "backoff"


@dataclass(frozen=True)
class PodCase:
    name: str
    changes: Callable[[], list[Change]]
    want: Literal["active", "unschedulable"] | None


P = "default/p"
POD_CASES = [
    PodCase("pending pod added", lambda: [change("Added", unbound("p"))], "active"),
    PodCase(
        "another scheduler's pod",
        lambda: [change("Added", make_pod("p").spec(schedulerName="other").obj())],
        None,
    ),
    PodCase("bound pod added", lambda: [change("Added", bound("p"))], None),
    PodCase("finished pod", lambda: [change("Added", make_pod("p").phase("Failed").obj())], None),
    PodCase(
        "terminating pod",
        lambda: [
            change(
                "Added",
                decode(
                    o.Pod,
                    {
                        "kind": "Pod",
                        "metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                    },
                ),
            )
        ],
        None,
    ),
    PodCase(
        "pending pod deleted",
        lambda: [change("Added", unbound("p")), change("Deleted", unbound("p"))],
        None,
    ),
    PodCase(
        "pending pod preempted (deleted)",
        lambda: [change("Added", unbound("p")), change("Preempted", unbound("p"))],
        None,
    ),
    PodCase(
        "pending pod bound by its client",
        lambda: [change("Added", unbound("p")), change("Modified", bound("p"), old=unbound("p"))],
        None,
    ),
    PodCase(
        "pending pod became terminating",
        lambda: [
            change("Added", unbound("p")),
            change(
                "Modified", make_pod("p").uid("uid-p").phase("Succeeded").obj(), old=unbound("p")
            ),
        ],
        None,
    ),
    PodCase(
        "pod handed over to this scheduler",
        lambda: [
            change(
                "Modified",
                unbound("p"),
                old=make_pod("p").uid("uid-p").spec(schedulerName="other").obj(),
            )
        ],
        "active",
    ),
    PodCase(
        "pending pod modified",
        lambda: [
            change("Added", unbound("p")),
            change("Modified", make_pod("p").uid("uid-p").label("a", "b").obj(), old=unbound("p")),
        ],
        "active",
    ),
    PodCase(
        "unschedulable record is ignored",
        lambda: [change("Added", unbound("p")), change("Unschedulable", unbound("p"))],
        "active",
    ),
]


@pytest.mark.parametrize("case", POD_CASES, ids=lambda c: c.name)
async def test_pod_changes(case: PodCase, autojump_clock: trio.testing.MockClock) -> None:
    async with running() as h:
        h.commit(*case.changes())
        assert (await h.lookup(P)).queue == case.want


def test_is_pending() -> None:
    assert is_pending(unbound("p"), "default-scheduler")
    assert not is_pending(unbound("p"), "podium")
    assert not is_pending(bound("p"), "default-scheduler")
    assert not is_pending(make_pod("p").phase("Succeeded").obj(), "default-scheduler")


def test_node_scheduling_properties_changed_reads_allocatable_or_capacity() -> None:
    with_allocatable = make_node("n1").capacity(cpu="4").allocatable({"cpu": "4"}).obj()
    assert not node_scheduling_properties_changed(with_allocatable, NODE)
    assert node_scheduling_properties_changed(
        make_node("n1").capacity(cpu="4").allocatable({"cpu": "3500m"}).obj(), NODE
    )
    assert not node_scheduling_properties_changed(make_node("n1").capacity(cpu="4000m").obj(), NODE)


def test_popped_pod_info_is_the_pods() -> None:
    # PodInfo is what the actor hands out; its priority is spec.priority or 0.
    assert PodInfo(pending("p", 7)).priority == 7
    assert PodInfo(make_pod("q").obj()).priority == 0


# --------------------------------------------------------------------------- nominated pods


def nominated_pod(name: str, node: str, priority: int = 0) -> o.Pod:
    b = make_pod(name).uid(f"uid-{name}").priority(priority)
    return (b.nominated(node) if node else b).obj()


def nominations(got: Popped) -> dict[str, list[str]]:
    if got.nominated is None:
        return {}
    out: dict[str, list[str]] = {}
    for node, pod in got.nominated:
        out.setdefault(node, []).append(pod.name)
    return out


async def test_nominated_pods_for_node_and_pods_in_flight_left_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # scheduling_queue_test.go@v1.14 TestPriorityQueue_NominatedPodsForNode: mpp and up are
    # nominated to node1, hpp is not; popping hpp leaves node1's list as it was.
    async with running() as h:
        h.commit(
            change("Added", nominated_pod("mpp", "node1", 500)),
            change("Added", nominated_pod("up", "node1", 0)),
            change("Added", nominated_pod("hpp", "", 1000)),
        )
        got = await h.popped()
        assert got.pod.name == "hpp"
        assert got.nominated is not None
        assert [p.name for p in got.nominated.pods_for_node("node1")] == ["mpp", "up"]
        assert got.nominated.pods_for_node("node2") == []
        # A pod in flight (being scheduled, or assumed and awaiting its bind) is left out of
        # the view: v1.14 drops a nomination when its pod is assumed.
        again = await h.popped()
        assert again.pod.name == "mpp" and nominations(again) == {"node1": ["up"]}


async def test_the_same_view_is_handed_out_until_nominations_change(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The nominated pods have the lowest priority, so they stay queued (a pod in flight is
    # left out of the view) while the others are popped.
    async with running() as h:
        h.commit(
            change("Added", nominated_pod("a", "n1", -10)),
            change("Added", pending("b")),
            change("Added", pending("c")),
            change("Added", pending("d", -5)),
        )
        first = await h.popped()
        second = await h.popped()
        assert first.nominated is second.nominated is not None
        # A change elsewhere (a node, an un-nominated pod) keeps the view.
        h.commit(change("Added", make_node("n1").obj()), change("Added", pending("e")))
        third = await h.popped()
        assert third.nominated is first.nominated
        # A nomination is a change: a new object; the one handed out is left as it was.
        h.commit(
            change("Modified", nominated_pod("d", "n2", -5), old=pending("d", -5)),
            change("Added", pending("f")),
        )
        fourth = await h.popped()
        assert fourth.nominated is not first.nominated
        assert nominations(first) == {"n1": ["a"]}
        assert nominations(fourth) == {"n1": ["a"], "n2": ["d"]}


@dataclass(frozen=True)
class NominationCase:
    name: str
    changes: Callable[[], list[Change]]
    want: dict[str, list[str]]


def _nominated_a() -> o.Pod:
    return nominated_pod("a", "n1")


NOMINATION_CASES = [
    NominationCase(
        "added nominated",
        lambda: [change("Added", _nominated_a())],
        {"n1": ["a"]},
    ),
    NominationCase(
        "modified to nominated",
        lambda: [change("Added", pending("a")), change("Modified", _nominated_a(), pending("a"))],
        {"n1": ["a"]},
    ),
    NominationCase(
        "nominated to another node moves and goes last",
        lambda: [
            change("Added", _nominated_a()),
            change("Added", nominated_pod("b", "n2")),
            change("Modified", nominated_pod("a", "n2"), _nominated_a()),
        ],
        {"n2": ["b", "a"]},
    ),
    NominationCase(
        "nomination cleared",
        lambda: [change("Added", _nominated_a()), change("Modified", pending("a"), _nominated_a())],
        {},
    ),
    NominationCase(
        "bound",
        lambda: [
            change("Added", _nominated_a()),
            change("Bound", make_pod("a").uid("uid-a").nominated("n1").node("n1").obj(), node="n1"),
        ],
        {},
    ),
    NominationCase(
        "modified to assigned",
        lambda: [
            change("Added", _nominated_a()),
            change("Modified", make_pod("a").uid("uid-a").node("n1").obj(), _nominated_a()),
        ],
        {},
    ),
    NominationCase(
        "modified to terminating",
        lambda: [
            change("Added", _nominated_a()),
            change(
                "Modified", make_pod("a").uid("uid-a").nominated("n1").terminating().obj(), None
            ),
        ],
        {},
    ),
    NominationCase(
        "deleted",
        lambda: [change("Added", _nominated_a()), change("Deleted", _nominated_a())],
        {},
    ),
    NominationCase(
        "preempted",
        lambda: [change("Added", _nominated_a()), change("Preempted", _nominated_a())],
        {},
    ),
    NominationCase(
        "another scheduler's pod is not ours",
        lambda: [change("Added", make_pod("a").nominated("n1").spec(schedulerName="x").obj())],
        {},
    ),
]


@pytest.mark.parametrize("case", NOMINATION_CASES, ids=lambda c: c.name)
async def test_nominations_follow_pod_changes(
    case: NominationCase, autojump_clock: trio.testing.MockClock
) -> None:
    async with running() as h:
        h.commit(*case.changes())
        h.commit(change("Added", pending("probe", priority=10**6)))
        got = await h.popped()
        assert got.pod.name == "probe"
        assert nominations(got) == case.want
        assert (got.nominated is None) == (not case.want)


async def test_recovered_nominations(autojump_clock: trio.testing.MockClock) -> None:
    objects: list[o.KubeObject] = [
        make_node("n1").obj(),
        nominated_pod("a", "n1", 5),
        make_pod("bound").node("n1").nominated("n1").obj(),
        nominated_pod("b", "n1"),
    ]
    async with running() as h:
        h.send(Recovered(revision=3, objects=objects))
        got = await h.popped()
        # "a" is in flight now: left out; "b" waits, nominated.
        assert got.pod.name == "a" and nominations(got) == {"n1": ["b"]}
        h.commit(change("Modified", pending("b"), old=nominated_pod("b", "n1")))
        got = await h.popped()
        assert got.pod.name == "b" and nominations(got) == {}


# --------------------------------------------------------------------------- batches


SPREAD = {
    "maxSkew": 1,
    "topologyKey": "zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "db"}},
}

ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


async def test_a_batch_is_the_pods_successive_pops_would_give_in_their_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(*(change("Added", pending(f"low{i}", 0)) for i in range(3)))
        h.commit(change("Added", pending("high", 10)), change("Added", pending("mid", 5)))
        got = await h.pop_batch(4)
        rest = await h.pop_batch(4)
    assert not isinstance(got, QueueIdle) and not isinstance(rest, QueueIdle)
    assert [p.pod.name for p in got] == ["high", "mid", "low0", "low1"]
    assert [(p.cycle, p.attempts) for p in got] == [(1, 1), (2, 1), (3, 1), (4, 1)]
    assert [p.pod.name for p in rest] == ["low2"]


@pytest.mark.parametrize(
    "middle",
    [
        make_pod("b").uid("uid-b").affinity(ANTI_AFFINITY).obj(),
        make_pod("b").uid("uid-b").pvc("data").obj(),
        make_pod("b").uid("uid-b").spec(topologySpreadConstraints=[SPREAD]).obj(),
        pending("b"),
    ],
    ids=["pod-anti-affinity", "claim", "spreading", "plain"],
)
async def test_pods_with_affinity_spreading_or_claims_share_a_batch(
    autojump_clock: trio.testing.MockClock, middle: o.Pod
) -> None:
    """The scheduler folds each decision's affinity, spreading and volume state into its
    snapshot (issue 27): no pod is decided in a batch of its own for what its spec holds."""
    async with running() as h:
        h.commit(change("Added", pending("a")))
        h.commit(change("Added", middle))
        h.commit(change("Added", pending("c")))
        popped = await h.pop_batch(8)
    assert not isinstance(popped, QueueIdle)
    assert [p.pod.name for p in popped] == ["a", "b", "c"]


def on_node(pod: o.Pod, node: str = "n1") -> o.Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))


@pytest.mark.parametrize("volumes", [False, True], ids=["bind", "bind-with-volumes"])
async def test_a_bind_moves_only_the_pods_of_its_batch_that_failed_before_it(
    autojump_clock: trio.testing.MockClock, volumes: bool
) -> None:
    """Batch a, w1, c, w2: w1 and w2 fail (their required affinity matches a and c), then a
    and c are bound. One pod at a time, a's bind (and the claim it bound) would have come
    before w1's pop, and c's before w2's: a's moves neither, c's moves w1 only."""
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
            ]
        }
    }
    a = make_pod("a").uid("uid-a").label("app", "db").obj()
    c = make_pod("c").uid("uid-c").label("app", "db").obj()
    w1 = make_pod("w1").uid("uid-w1").affinity(affinity).obj()
    w2 = make_pod("w2").uid("uid-w2").affinity(affinity).obj()
    claim = decode(
        o.PersistentVolumeClaim,
        {"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"}},
    )

    def bind(pod: o.Pod) -> list[Change]:
        # The store's order for one binding: its claims (Modified), then the pod (Bound).
        done = [change("Modified", claim, claim)] if volumes else []
        return [*done, change("Bound", on_node(pod), pod)]

    async with running() as h:
        h.commit(*(change("Added", p) for p in (a, w1, c, w2)))
        popped = await h.pop_batch(8)
        assert not isinstance(popped, QueueIdle)
        assert [p.pod.name for p in popped] == ["a", "w1", "c", "w2"]
        for p in (popped[1], popped[3]):
            await h.requeue(p, "unschedulable")
        h.commit(*bind(a))
        await h.settle()
        assert (await h.lookup("default/w1")).queue == "unschedulable"
        assert (await h.lookup("default/w2")).queue == "unschedulable"
        h.commit(*bind(c))
        await h.settle()
        assert (await h.lookup("default/w1")).queue == "backoff"
        assert (await h.lookup("default/w2")).queue == "unschedulable"


async def test_nominations_make_every_batch_a_batch_of_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", nominated_pod("n", "node-1")), change("Added", pending("a")))
        first = await h.pop_batch(8)
    assert not isinstance(first, QueueIdle)
    assert [p.pod.name for p in first] == ["n"]


async def test_given_back_pods_return_where_they_were_behind_a_higher_priority_arrival(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(*(change("Added", pending(name, 0)) for name in ("a", "b", "c")))
        got = await h.pop_batch(3)
        assert not isinstance(got, QueueIdle)
        # While the batch is being decided a higher-priority pod arrives; the scheduler's time
        # bound passes after the first pod, and it gives the other two back.
        h.commit(change("Added", pending("urgent", 100)))
        h.send(GiveBack(keys=["default/b", "default/c"]))
        await h.settle()
        assert await h.lookup("default/b") == LookupReply(queue="active", attempts=0)
        after = await h.pop_batch(3)
    assert not isinstance(after, QueueIdle)
    assert [p.pod.name for p in after] == ["urgent", "b", "c"]
    # Not counted as attempts: b and c are on their first.
    assert [p.attempts for p in after] == [1, 1, 1]
