"""The scheduling queue core (scheduling_queue.go@v1.14, backoff_utils.go@v1.14).

Rows ported from pkg/scheduler/internal/queue/scheduling_queue_test.go keep the Kubernetes test
name in their own name or docstring; the pods are rebuilt with tests/support/builders.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from builders import make_pod

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.queue.core import (
    QueueName,
    SchedulingQueue,
    is_pod_updated,
    required_pod_affinity_terms,
)

HIGH, MID, LOW = 1000, 500, 0


def pod(name: str, priority: int = 0, *, uid: str = "", ns: str = "default") -> PodInfo:
    return make_pod(name).ns(ns).uid(uid or f"uid-{name}").priority(priority).info()


def affinity_pod(
    name: str, selector: dict[str, Any], *, namespaces: list[str] | None = None
) -> PodInfo:
    term: dict[str, Any] = {"labelSelector": selector, "topologyKey": "region"}
    if namespaces is not None:
        term["namespaces"] = namespaces
    return (
        make_pod(name)
        .uid(f"uid-{name}")
        .priority(MID)
        .affinity({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
        .info()
    )


def popped_names(q: SchedulingQueue, now: float = 0.0) -> list[str]:
    names = []
    while (p := q.pop(now)) is not None:
        names.append(p.pod.name)
    return names


def make_unschedulable(q: SchedulingQueue, p: PodInfo, now: float = 0.0) -> None:
    """add -> pop -> fail with no move request: the pod lands among the unschedulable pods."""
    q.add(p, now)
    got = q.pop(now)
    assert got is not None and got.pod.key == p.key
    assert q.add_unschedulable_if_not_present(p, got.cycle, now) == "unschedulable"


def make_backoff(q: SchedulingQueue, p: PodInfo, now: float = 0.0) -> None:
    """add -> pop -> move request during the attempt -> fail: the pod lands in backoffQ."""
    q.add(p, now)
    got = q.pop(now)
    assert got is not None and got.pod.key == p.key
    q.move_all_to_active_queue(now)
    assert q.add_unschedulable_if_not_present(p, got.cycle, now) == "backoff"


def make_in_flight(q: SchedulingQueue, p: PodInfo, now: float = 0.0) -> int:
    q.add(p, now)
    got = q.pop(now)
    assert got is not None and got.pod.key == p.key
    return got.cycle


def where(q: SchedulingQueue, p: PodInfo) -> QueueName | None:
    return q.lookup(p.key)[0]


# --------------------------------------------------------------------------- ordering


def test_priority_queue_add_pops_by_priority() -> None:
    """TestPriorityQueue_Add: the highest priority first."""
    q = SchedulingQueue()
    q.add(pod("mpp", MID), 0.0)
    q.add(pod("up", LOW), 0.0)
    q.add(pod("hpp", HIGH), 0.0)
    assert popped_names(q) == ["hpp", "mpp", "up"]


def test_equal_priority_pops_by_arrival_then_insertion() -> None:
    q = SchedulingQueue()
    q.add(pod("late"), 2.0)
    q.add(pod("early"), 1.0)
    q.add(pod("same-time-first"), 3.0)
    q.add(pod("same-time-second"), 3.0)
    assert popped_names(q, 3.0) == ["early", "late", "same-time-first", "same-time-second"]


def test_arrival_is_kept_across_retries() -> None:
    """TestRecentlyTriedPodsGoBack and TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod
    assert the opposite: v1.14 re-stamps a retried pod, so it goes behind newer pods of its
    priority. Podium keeps the first enqueue time (docs/differences.md, "The queue and the cache").
    """
    q = SchedulingQueue()
    first = pod("first")
    make_unschedulable(q, first, 0.0)
    q.add(pod("newer"), 1.0)
    q.move_all_to_active_queue(5.0)  # the backoff (1 s from t=0) is over
    got = q.pop(5.0)
    assert got is not None
    assert (got.pod.name, got.arrived_at, got.attempts) == ("first", 0.0, 2)


def test_update_that_changes_priority_reorders_active_q() -> None:
    q = SchedulingQueue()
    q.add(pod("a", LOW), 0.0)
    q.add(pod("b", MID), 0.0)
    q.update(pod("a", LOW), pod("a", HIGH), 1.0)
    assert popped_names(q) == ["a", "b"]


def test_high_priority_backoff_does_not_block_others() -> None:
    """TestHighProirotyBackoff: an unschedulable high-priority pod backs off; the mid one goes."""
    q = SchedulingQueue()
    q.add(pod("test-midpod", MID), 0.0)
    q.add(pod("test-highpod", HIGH), 0.0)
    got = q.pop(0.0)
    assert got is not None and got.pod.name == "test-highpod"
    assert q.add_unschedulable_if_not_present(got.pod, got.cycle, 0.0) == "unschedulable"
    assert q.move_all_to_active_queue(0.0) == 1
    assert where(q, got.pod) == "backoff"
    assert popped_names(q, 0.0) == ["test-midpod"]


def test_pop_counts_scheduling_cycles_and_attempts() -> None:
    q = SchedulingQueue()
    assert q.pop(0.0) is None
    assert q.scheduling_cycle == 0
    p = pod("p")
    q.add(p, 0.0)
    first = q.pop(0.0)
    assert first is not None and (first.cycle, first.attempts) == (1, 1)
    assert q.requeue_conflict(p, 0.0) == "active"
    second = q.pop(0.0)
    assert second is not None and (second.cycle, second.attempts) == (2, 2)
    assert q.lookup(p.key) == ("in_flight", 2)


def test_cancel_pop_puts_the_pod_back_as_it_was() -> None:
    q = SchedulingQueue()
    q.add(pod("a"), 0.0)
    q.add(pod("b"), 1.0)
    got = q.pop(1.0)
    assert got is not None and got.pod.name == "a"
    assert q.cancel_pop("default/a")
    assert q.lookup("default/a") == ("active", 0)
    assert popped_names(q, 1.0) == ["a", "b"]
    assert not q.cancel_pop("default/nobody")


# --------------------------------------------------------------------------- backoff


def test_backoff_flow_doubles_to_the_cap() -> None:
    """TestBackOffFlow (scheduling_queue_test.go, added after v1.14; the same PodBackoff rule):
    1, 2, 4, 8, 10, 10 s for a pod that fails each time its backoff ends."""
    q = SchedulingQueue()
    p = pod("test-pod")
    q.add(p, 0.0)
    now = 0.0
    waits = []
    for _ in range(6):
        got = q.pop(now)
        assert got is not None
        q.move_all_to_active_queue(now)  # a move request during the attempt: to backoffQ
        assert q.add_unschedulable_if_not_present(p, got.cycle, now) == "backoff"
        expiry = q.backoff_expiry(p.key)
        assert expiry is not None
        waits.append(expiry - now)
        assert q.flush_backoff_completed(expiry - 0.5) == 0
        assert q.flush_backoff_completed(expiry) == 1
        now = expiry
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_backoff_starts_again_after_max_backoff_without_failures() -> None:
    """PodBackoff.Gc@v1.14: an entry untouched for longer than the max backoff is dropped."""
    q = SchedulingQueue()
    p = pod("p")
    make_unschedulable(q, p, 0.0)  # backoff 1 s, bumped at t=0
    q.move_all_to_active_queue(5.0)
    got = q.pop(5.0)
    assert got is not None
    q.add_unschedulable_if_not_present(p, got.cycle, 5.0)  # 5 s after the bump: 2 s
    assert q.backoff_expiry(p.key) == 7.0
    q.move_all_to_active_queue(20.0)
    got = q.pop(20.0)
    assert got is not None
    q.add_unschedulable_if_not_present(p, got.cycle, 20.0)  # 15 s > 10 s after: 1 s again
    assert q.backoff_expiry(p.key) == 21.0


def test_failure_while_still_backing_off_does_not_bump() -> None:
    """backoffPod@v1.14 bumps only a pod that is not backing off: a backoffQ pod that an update
    moved to activeQ and that fails again early keeps its expiry."""
    q = SchedulingQueue()
    p = pod("p")
    make_backoff(q, p, 0.0)
    assert q.backoff_expiry(p.key) == 1.0
    labelled = make_pod("p").uid("uid-p").label("x", "y").info()
    q.update(p, labelled, 0.2)
    assert where(q, p) == "active"
    got = q.pop(0.3)
    assert got is not None
    q.move_all_to_active_queue(0.3)
    assert q.add_unschedulable_if_not_present(labelled, got.cycle, 0.4) == "backoff"
    assert q.backoff_expiry(p.key) == 1.0


def test_conflict_requeue_goes_straight_to_active_without_backoff() -> None:
    q = SchedulingQueue()
    p = pod("p")
    q.add(p, 3.0)
    got = q.pop(4.0)
    assert got is not None
    assert q.requeue_conflict(p, 4.0) == "active"
    assert q.backoff_expiry(p.key) is None
    again = q.pop(4.0)
    assert again is not None and (again.arrived_at, again.attempts) == (3.0, 2)


# --------------------------------------------------------------------------- moveRequestCycle


def test_add_unschedulable_if_not_present_backoff() -> None:
    """TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff: pods failing in a cycle during
    which a move request arrived go to backoffQ."""
    q = SchedulingQueue()
    pods = [pod(f"pod{i}", i, ns=f"ns{i}") for i in range(10)]
    for p in pods:
        q.add(p, 0.0)
    popped = [q.pop(0.0) for _ in range(9)]
    assert [p.pod.name if p else None for p in popped] == [f"pod{i}" for i in range(9, 0, -1)]
    q.move_all_to_active_queue(0.0)
    old_cycle = q.scheduling_cycle
    first = q.pop(0.0)
    assert first is not None and first.pod.name == "pod0"
    for i in range(1, 10):
        assert q.add_unschedulable_if_not_present(pods[i], old_cycle, 0.0) == "backoff"
    assert q.backoff_count == 9


@dataclass(frozen=True)
class MoveCase:
    name: str
    move_before_pop: bool
    move_during_attempt: bool
    want: QueueName


MOVE_CASES = [
    MoveCase("no move request: unschedulable", False, False, "unschedulable"),
    MoveCase("move request before the pop: unschedulable", True, False, "unschedulable"),
    MoveCase("move request during the attempt: backoff", False, True, "backoff"),
    MoveCase("both: backoff", True, True, "backoff"),
]


@pytest.mark.parametrize("case", MOVE_CASES, ids=lambda c: c.name)
def test_move_request_cycle_rule(case: MoveCase) -> None:
    q = SchedulingQueue()
    q.add(pod("other"), 0.0)
    q.pop(0.0)  # cycle 1
    p = pod("p")
    q.add(p, 0.0)
    if case.move_before_pop:
        q.move_all_to_active_queue(0.0)  # moveRequestCycle = 1
    got = q.pop(0.0)  # cycle 2
    assert got is not None and got.cycle == 2
    if case.move_during_attempt:
        q.move_all_to_active_queue(0.0)  # moveRequestCycle = 2
    assert q.add_unschedulable_if_not_present(p, got.cycle, 0.0) == case.want


def test_add_unschedulable_if_not_present_ignores_pods_not_in_flight() -> None:
    """TestPriorityQueue_AddUnschedulableIfNotPresent: a pod already queued is not added again
    (and Podium also drops one it never popped)."""
    q = SchedulingQueue()
    p = pod("hpp", HIGH)
    q.add(p, 0.0)
    assert q.add_unschedulable_if_not_present(p, 0, 0.0) is None
    assert q.add_unschedulable_if_not_present(pod("stranger"), 0, 0.0) is None
    assert q.requeue_conflict(pod("stranger"), 0.0) is None
    assert (q.active_count, q.unschedulable_count, len(q)) == (1, 0, 1)


# --------------------------------------------------------------------------- move requests


def test_move_all_to_active_queue() -> None:
    """TestPriorityQueue_MoveAllToActiveQueue, with backoff: pods still backing off go to
    backoffQ, the others to activeQ; moveRequestCycle = schedulingCycle."""
    q = SchedulingQueue()
    make_unschedulable(q, pod("up", LOW), 0.0)  # backoff until 1.0
    make_unschedulable(q, pod("hpp", HIGH), 0.5)  # backoff until 1.5
    q.add(pod("mpp", MID), 0.5)
    assert q.move_all_to_active_queue(1.2) == 2
    assert q.move_request_cycle == q.scheduling_cycle == 2
    assert (q.active_count, q.backoff_count, q.unschedulable_count) == (2, 1, 0)
    assert where(q, pod("hpp")) == "backoff"
    assert popped_names(q, 1.2) == ["mpp", "up"]
    assert popped_names(q, 1.5) == ["hpp"]


def test_assigned_pod_added_moves_only_matching_affinity_pods() -> None:
    """TestPriorityQueue_AssignedPodAdded."""
    q = SchedulingQueue()
    up = pod("up")
    afp = affinity_pod(
        "afp",
        {
            "matchExpressions": [
                {"key": "service", "operator": "In", "values": ["securityscan", "value2"]}
            ]
        },
    )
    make_unschedulable(q, up, 0.0)
    make_unschedulable(q, afp, 0.0)
    q.add(pod("mpp", MID), 0.0)
    lbp = make_pod("lbp").label("service", "securityscan").node("machine1").info()
    assert q.assigned_pod_added(lbp, 2.0) == 1
    assert where(q, afp) == "active"
    assert where(q, up) == "unschedulable"


@dataclass(frozen=True)
class AffinityCase:
    name: str
    unschedulable: PodInfo
    assigned: PodInfo
    moved: bool


SERVICE_WEB = {"matchLabels": {"service": "web"}}
AFFINITY_CASES = [
    AffinityCase(
        "label match in the pod's namespace",
        affinity_pod("u", SERVICE_WEB),
        make_pod("a").label("service", "web").node("n").info(),
        True,
    ),
    AffinityCase(
        "label mismatch",
        affinity_pod("u", SERVICE_WEB),
        make_pod("a").label("service", "db").node("n").info(),
        False,
    ),
    AffinityCase(
        "other namespace, term lists none",
        affinity_pod("u", SERVICE_WEB),
        make_pod("a").ns("prod").label("service", "web").node("n").info(),
        False,
    ),
    AffinityCase(
        "other namespace listed by the term",
        affinity_pod("u", SERVICE_WEB, namespaces=["prod"]),
        make_pod("a").ns("prod").label("service", "web").node("n").info(),
        True,
    ),
    AffinityCase(
        "empty selector matches every pod",
        affinity_pod("u", {}),
        make_pod("a").node("n").info(),
        True,
    ),
    AffinityCase(
        "only anti-affinity: never moved",
        make_pod("u")
        .affinity(
            {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": SERVICE_WEB, "topologyKey": "region"}
                    ]
                }
            }
        )
        .info(),
        make_pod("a").label("service", "web").node("n").info(),
        False,
    ),
    AffinityCase(
        "only preferred affinity: never moved",
        make_pod("u")
        .affinity(
            {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "podAffinityTerm": {"labelSelector": SERVICE_WEB, "topologyKey": "r"},
                        }
                    ]
                }
            }
        )
        .info(),
        make_pod("a").label("service", "web").node("n").info(),
        False,
    ),
]


@pytest.mark.parametrize("case", AFFINITY_CASES, ids=lambda c: c.name)
def test_assigned_pod_added_affinity_matching(case: AffinityCase) -> None:
    q = SchedulingQueue()
    make_unschedulable(q, case.unschedulable, 0.0)
    before = q.scheduling_cycle
    assert q.assigned_pod_added(case.assigned, 2.0) == int(case.moved)
    assert where(q, case.unschedulable) == ("active" if case.moved else "unschedulable")
    # v1.14 movePodsToActiveQueue records the move request even when nothing moved.
    assert q.move_request_cycle == before


def test_a_bind_in_a_batch_moves_only_the_pods_of_the_batch_that_failed_before_it() -> None:
    """Batch a, w1, b, w2 (cycles 1-4): w1 and w2 fail. A move made by the bind of a (cycle
    1) or b (cycle 3), its Bound or its volumes' change, leaves the pods of the batch that
    failed after it (one pod at a time they were popped after that bind); a change no bind of
    ours made (cycle 0) moves every one, as v1.14 does."""
    q = SchedulingQueue()
    w1 = affinity_pod("w1", {"matchLabels": {"app": "db"}})
    w2 = affinity_pod("w2", {"matchLabels": {"app": "db"}})
    a, b = pod("a", MID), pod("b", MID)
    for p in (a, w1, b, w2):
        q.add(p, 0.0)
    popped, _ = q.pop_batch(0.0, 8)
    assert [(x.pod.name, x.cycle) for x in popped] == [("a", 1), ("w1", 2), ("b", 3), ("w2", 4)]
    for x in (popped[1], popped[3]):
        assert q.add_unschedulable_if_not_present(x.pod, x.cycle, 0.0) == "unschedulable"
    assert (q.placed_cycle(a), q.placed_cycle(b), q.placed_cycle(w1)) == (1, 3, 0)

    def bound(name: str) -> PodInfo:
        return make_pod(name).uid(f"uid-{name}").label("app", "db").node("n").info()

    assert q.assigned_pod_added(bound("a"), 0.0, 1) == 0
    assert q.move_all_to_active_queue(0.0, 1) == 0
    assert (where(q, w1), where(q, w2)) == ("unschedulable", "unschedulable")
    assert q.assigned_pod_added(bound("b"), 0.0, 3) == 1
    assert (where(q, w1), where(q, w2)) == ("backoff", "unschedulable")
    assert q.move_all_to_active_queue(0.0, 3) == 0
    assert q.move_all_to_active_queue(0.0) == 1
    assert where(q, w2) == "backoff"


def test_assigned_pod_added_sends_a_backing_off_pod_to_backoff_q() -> None:
    q = SchedulingQueue()
    u = affinity_pod("u", SERVICE_WEB)
    make_unschedulable(q, u, 0.0)
    q.assigned_pod_added(make_pod("a").label("service", "web").node("n").info(), 0.5)
    assert where(q, u) == "backoff"


def test_required_pod_affinity_terms() -> None:
    assert required_pod_affinity_terms(pod("plain").pod) == []
    assert len(required_pod_affinity_terms(affinity_pod("u", SERVICE_WEB).pod)) == 1


# --------------------------------------------------------------------------- update / delete


def setup_in(q: SchedulingQueue, p: PodInfo, place: QueueName) -> None:
    match place:
        case "active":
            q.add(p, 0.0)
        case "backoff":
            make_backoff(q, p, 0.0)
        case "unschedulable":
            make_unschedulable(q, p, 0.0)
        case "in_flight":
            make_in_flight(q, p, 0.0)


@dataclass(frozen=True)
class UpdateCase:
    name: str
    place: QueueName
    spec_change: bool
    want: QueueName
    backoff_cleared: bool = False


UPDATE_CASES = [
    UpdateCase("active, spec change: stays active", "active", True, "active"),
    UpdateCase("active, status only: stays active", "active", False, "active"),
    UpdateCase("backoff, spec change: to active", "backoff", True, "active"),
    UpdateCase("backoff, status only: to active (v1.14 Update)", "backoff", False, "active"),
    UpdateCase(
        "unschedulable, spec change: to active, backoff cleared",
        "unschedulable",
        True,
        "active",
        backoff_cleared=True,
    ),
    UpdateCase("unschedulable, status only: stays", "unschedulable", False, "unschedulable"),
    UpdateCase("in flight, spec change: stays in flight", "in_flight", True, "in_flight"),
    UpdateCase("in flight, status only: stays in flight", "in_flight", False, "in_flight"),
]


@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda c: c.name)
def test_update_in_each_sub_queue(case: UpdateCase) -> None:
    """TestPriorityQueue_Update, per sub-queue (scheduling_queue.go@v1.14 Update)."""
    q = SchedulingQueue()
    old = make_pod("p").uid("uid-p").info()
    setup_in(q, old, case.place)
    builder = make_pod("p").uid("uid-p")
    new = (builder.label("tier", "web") if case.spec_change else builder.phase("Pending")).info()
    q.update(old, new, 0.5)
    assert q.lookup(old.key) == (case.want, 0 if case.place == "active" else 1)
    assert (q.backoff_expiry(old.key) is None) == (
        case.backoff_cleared or case.place in ("active", "in_flight")
    )
    assert len(q) == 1
    assert next(iter(q.pending_pods()), new) is new


def test_update_of_unknown_pod_adds_it() -> None:
    """TestPriorityQueue_Update: Update(nil, pod) of a pod in no queue adds it to activeQ."""
    q = SchedulingQueue()
    q.update(None, pod("hpp", HIGH), 0.0)
    q.update(pod("hpp", HIGH), pod("hpp", HIGH), 0.0)
    assert q.active_count == 1
    assert popped_names(q) == ["hpp"]


def test_unschedulable_status_update_keeps_its_wait() -> None:
    q = SchedulingQueue()
    old = make_pod("p").uid("uid-p").info()
    make_unschedulable(q, old, 0.0)
    q.update(old, make_pod("p").uid("uid-p").phase("Pending").info(), 200.0)
    assert q.flush_unschedulable_leftover(300.0) == 0
    assert q.flush_unschedulable_leftover(330.0) == 1  # waited since t=0, not since 200


@pytest.mark.parametrize("place", ["active", "backoff", "unschedulable", "in_flight"])
def test_delete_from_each_sub_queue(place: QueueName) -> None:
    """TestPriorityQueue_Delete, per sub-queue."""
    q = SchedulingQueue()
    p = pod("p")
    setup_in(q, p, place)
    q.add(pod("other"), 0.0)
    assert q.delete(p)
    assert q.lookup(p.key) == (None, 0)
    assert not q.delete(p)
    assert (q.active_count, q.backoff_count, q.unschedulable_count, q.in_flight_count) == (
        1,
        0,
        0,
        0,
    )
    assert q.next_deadline() is None
    assert popped_names(q, 20.0) == ["other"]


def test_delete_of_an_older_uid_keeps_the_new_pod() -> None:
    q = SchedulingQueue()
    q.add(pod("p", uid="new"), 0.0)
    assert not q.delete(pod("p", uid="old"))
    assert where(q, pod("p")) == "active"


def test_add_with_a_new_uid_replaces_the_old_pod() -> None:
    q = SchedulingQueue()
    make_unschedulable(q, pod("p", uid="old"), 0.0)
    q.add(pod("p", uid="new"), 5.0)
    assert q.lookup("default/p") == ("active", 0)
    assert q.unschedulable_count == 0
    got = q.pop(5.0)
    assert got is not None and (got.pod.pod.metadata.uid, got.arrived_at) == ("new", 5.0)


# --------------------------------------------------------------------------- in flight


def test_requeue_of_a_pod_deleted_in_flight_is_dropped() -> None:
    q = SchedulingQueue()
    p = pod("p")
    cycle = make_in_flight(q, p)
    q.delete(p)
    assert q.add_unschedulable_if_not_present(p, cycle, 0.0) is None
    assert q.requeue_conflict(p, 0.0) is None
    assert len(q) == 0


def test_requeue_of_a_pod_recreated_in_flight_is_dropped() -> None:
    q = SchedulingQueue()
    old = pod("p", uid="old")
    cycle = make_in_flight(q, old)
    q.delete(old)
    q.add(pod("p", uid="new"), 1.0)
    assert q.add_unschedulable_if_not_present(old, cycle, 1.0) is None
    assert q.lookup("default/p") == ("active", 0)


def test_requeue_of_a_pod_updated_in_flight_requeues_the_latest_version() -> None:
    """A scheduling-relevant update in flight: v1.14's Update put the pod in activeQ and the
    failed attempt's AddUnschedulableIfNotPresent then found it there (no backoff bump)."""
    q = SchedulingQueue()
    old = make_pod("p").uid("uid-p").info()
    cycle = make_in_flight(q, old)
    new = make_pod("p").uid("uid-p").label("fixed", "yes").info()
    q.update(old, new, 0.5)
    assert q.add_unschedulable_if_not_present(old, cycle, 1.0) == "active"
    assert q.backoff_expiry(old.key) is None
    got = q.pop(1.0)
    assert got is not None and got.pod is new


def test_requeue_of_a_pod_with_a_status_update_in_flight_keeps_the_rules() -> None:
    q = SchedulingQueue()
    old = make_pod("p").uid("uid-p").info()
    cycle = make_in_flight(q, old)
    new = make_pod("p").uid("uid-p").phase("Pending").info()
    q.update(old, new, 0.5)
    assert q.add_unschedulable_if_not_present(old, cycle, 1.0) == "unschedulable"
    q.move_all_to_active_queue(5.0)
    got = q.pop(5.0)
    assert got is not None and got.pod is new


def test_is_pod_updated_ignores_status_and_resource_version() -> None:
    base = make_pod("p").uid("u")
    assert not is_pod_updated(base.obj(), make_pod("p").uid("u").phase("Running").obj())
    rv = make_pod("p").uid("u")
    rv.d["metadata"]["resourceVersion"] = "42"
    assert not is_pod_updated(base.obj(), rv.obj())
    assert is_pod_updated(base.obj(), make_pod("p").uid("u").annotation("a", "b").obj())
    assert is_pod_updated(base.obj(), make_pod("p").uid("u").req(cpu="1").obj())


# --------------------------------------------------------------------------- timers


def test_flush_leftover_only_after_max_wait_on_its_ticks() -> None:
    """TestHighProirotyFlushUnschedulableQLeftover, with Podium's 30 s / 5 min (a later
    Kubernetes rule adopted on purpose; v1.14: 60 s)."""
    q = SchedulingQueue()
    make_unschedulable(q, pod("test-midpod", MID), 0.0)
    make_unschedulable(q, pod("test-highpod", HIGH), 0.0)
    assert q.next_deadline() == 30.0
    assert q.flush_unschedulable_leftover(29.0) == 0
    for tick in range(30, 301, 30):
        assert q.flush_unschedulable_leftover(float(tick)) == 0, tick
    assert q.next_deadline() == 330.0
    assert q.flush_unschedulable_leftover(310.0) == 0  # between ticks: nothing runs
    cycle = q.scheduling_cycle
    assert q.flush_unschedulable_leftover(330.0) == 2
    assert q.move_request_cycle == cycle
    assert popped_names(q, 330.0) == ["test-highpod", "test-midpod"]


def test_flush_ticks_stay_on_the_grid_after_idle_time() -> None:
    q = SchedulingQueue(now=100.0)
    assert q.next_deadline() is None
    make_unschedulable(q, pod("p"), 1000.0)
    assert q.next_deadline() == 130.0  # overdue: the actor wakes at once
    assert q.flush_unschedulable_leftover(1000.0) == 0
    assert q.next_deadline() == 1030.0
    q.flush_unschedulable_leftover(1299.0)  # ticks passed unseen
    assert q.next_deadline() == 1300.0
    assert q.flush_unschedulable_leftover(1300.0) == 0  # 300 s is not over 300 s
    assert q.flush_unschedulable_leftover(1330.0) == 1


@pytest.mark.parametrize("origin", [0.0, 0.1, 1234.567, 1e9 + 0.3])
def test_flush_deadline_is_always_after_now(origin: float) -> None:
    q = SchedulingQueue(unschedulable_flush_interval_seconds=0.1, now=origin)
    make_unschedulable(q, pod("p"), origin)
    now = origin
    for _ in range(50):
        deadline = q.next_deadline()
        assert deadline is not None
        now = max(now, deadline)
        q.flush_unschedulable_leftover(now)
        after = q.next_deadline()
        assert after is not None and after > now


def test_flush_moves_a_backing_off_leftover_to_backoff_q() -> None:
    q = SchedulingQueue(pod_initial_backoff_seconds=1.0, unschedulable_max_wait_seconds=0.5)
    p = pod("p")
    make_unschedulable(q, p, 29.25)
    assert q.flush_unschedulable_leftover(30.0) == 1
    assert where(q, p) == "backoff"
    assert q.next_deadline() == 30.25


def test_next_deadline_is_the_earliest_backoff_expiry() -> None:
    q = SchedulingQueue()
    assert q.next_deadline() is None
    make_backoff(q, pod("a"), 2.0)
    make_backoff(q, pod("b"), 1.0)
    assert q.next_deadline() == 2.0
    q.delete(pod("b"))
    assert q.next_deadline() == 3.0
    assert q.flush_backoff_completed(3.0) == 1
    assert q.next_deadline() is None


def test_pop_flushes_completed_backoffs_first() -> None:
    q = SchedulingQueue()
    make_backoff(q, pod("p"), 0.0)
    assert q.pop(0.5) is None
    got = q.pop(1.0)
    assert got is not None and got.pod.name == "p"


def test_backoff_q_orders_by_expiry() -> None:
    q = SchedulingQueue()
    a, b = pod("a", HIGH), pod("b", LOW)
    make_backoff(q, a, 0.5)
    make_backoff(q, b, 0.0)
    assert q.flush_backoff_completed(1.0) == 1
    assert popped_names(q, 1.0) == ["b"]
    assert popped_names(q, 1.5) == ["a"]


def test_constructor_rejects_impossible_durations() -> None:
    with pytest.raises(ValueError, match="initial <= max"):
        SchedulingQueue(pod_initial_backoff_seconds=5.0, pod_max_backoff_seconds=1.0)
    with pytest.raises(ValueError, match="flush interval"):
        SchedulingQueue(unschedulable_flush_interval_seconds=0.0)


def test_stale_heap_items_are_compacted() -> None:
    q = SchedulingQueue()
    q.add(pod("p", LOW), 0.0)
    for i in range(3000):
        q.update(None, pod("p", i % 2), 0.0)
    assert len(q._active_q) < 1100
    assert popped_names(q) == ["p"]


# --------------------------------------------------------------------------- scheduling gates
# Kubernetes 1.27+ (not v1.14): pkg/scheduler/framework/plugins/schedulinggates (PreEnqueue)
# and scheduling_queue_test.go TestPriorityQueue_Add/Update with gated pods.


def gated(name: str, *gates: str, priority: int = 0) -> PodInfo:
    return (
        make_pod(name)
        .uid(f"uid-{name}")
        .priority(priority)
        .spec(schedulingGates=[{"name": g} for g in gates])
        .info()
    )


def test_gated_pod_is_not_queued_for_scheduling() -> None:
    q = SchedulingQueue()
    q.add(gated("g", "example.com/quota", priority=HIGH), 0.0)
    q.add(pod("p"), 0.0)
    assert (where(q, gated("g")), q.gated_count, q.active_count) == ("gated", 1, 1)
    assert popped_names(q) == ["p"]
    assert q.pop(0.0) is None
    assert [p.name for p in q.pending_pods()] == ["g"]


def test_moves_leave_gated_pods_where_they_are() -> None:
    q = SchedulingQueue()
    q.add(gated("g", "x"), 0.0)
    assert q.move_all_to_active_queue(1.0) == 0
    assert q.assigned_pod_added(pod("other"), 1.0) == 0
    assert q.flush_unschedulable_leftover(1_000.0) == 0
    assert where(q, gated("g")) == "gated"


@pytest.mark.parametrize(
    ("gates_after", "queue_after"),
    [
        pytest.param(("x",), "gated", id="one gate of two removed: still gated"),
        pytest.param((), "active", id="last gate removed: queued"),
    ],
)
def test_update_removing_gates(gates_after: tuple[str, ...], queue_after: str) -> None:
    q = SchedulingQueue()
    q.add(gated("g", "x", "y"), 0.0)
    q.update(gated("g", "x", "y"), gated("g", *gates_after), 5.0)
    assert where(q, gated("g")) == queue_after
    if queue_after == "active":
        got = q.pop(6.0)
        assert got is not None and got.arrived_at == 0.0  # the first arrival is kept


def test_gated_pod_deleted_is_forgotten() -> None:
    q = SchedulingQueue()
    q.add(gated("g", "x"), 0.0)
    assert q.delete(gated("g", "x"))
    assert (where(q, gated("g")), q.gated_count, len(q)) == (None, 0, 0)


def test_update_adding_gates_to_a_queued_pod_gates_it() -> None:
    # The store refuses a put that adds a gate; the queue still keeps such a pod out.
    q = SchedulingQueue()
    make_unschedulable(q, pod("p"))
    q.update(pod("p"), gated("p", "x"), 1.0)
    assert (where(q, pod("p")), q.unschedulable_count) == ("gated", 0)


def _bound(p: PodInfo, **labels: str) -> PodInfo:
    """``p`` as its bind commits it: on a node, with a new revision (and ``labels`` if any)."""
    b = make_pod(p.name).ns(p.namespace).uid(p.pod.metadata.uid).node("n1")
    for key, value in {**p.labels, **labels}.items():
        b.label(key, value)
    return b.info()


def test_a_bound_pod_in_flight_is_read_through_its_entrys_pod_info() -> None:
    """The Bound of a pod in flight needs no new PodInfo: the entry's has its key, uid,
    namespace, labels and group, which a bind does not change."""
    q = SchedulingQueue()
    a = pod("a")
    q.add(a, 0.0)
    assert q.pop(0.0) is not None
    assert q.bound_info(_bound(a).pod) is a


def test_a_bound_pod_not_in_flight_or_changed_gets_a_pod_info_of_its_own() -> None:
    q = SchedulingQueue()
    a, b, c = pod("a"), pod("b"), pod("c")
    for p in (a, b, c):
        q.add(p, 0.0)
    # a stays active (not in flight), b is popped, c is popped then re-created (new uid).
    assert popped_names(q) == ["a", "b", "c"]
    q.cancel_pop(a.key)
    recreated = make_pod("c").uid("uid-c2").node("n1").info()
    relabelled = _bound(b, tier="web")
    for bound, original in ((_bound(a), a), (relabelled, b), (recreated, c)):
        got = q.bound_info(bound.pod)
        assert got is not original
        assert (got.key, got.pod, got.labels) == (bound.key, bound.pod, bound.pod.metadata.labels)
