"""The gang workloads' measurement (issue 24 point 8): a group's time from its last pod's
creation to its last bind, groups fully, partly and not bound, the failure of a partly bound
one, and where a run ends.

(scheduler_perf's windows, quantiles and plan: tests/unit/cli/bench/test_bench.py.)"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest

from podium.cli.bench.scheduler_perf import (
    BenchError,
    GangReport,
    GangTracker,
    PartlyBoundError,
    check_gangs,
    nearest_rank,
)
from podium.cli.bench.workload import ONE_CPU_POD, Gangs, make_pod_group, make_pods
from podium.protocol import objects as o

NS = "gang"


def _members(group: str, count: int) -> list[o.Pod]:
    """``count`` 1-CPU pods ``group-0``... joining ``group`` by spec.schedulingGroup."""
    spec = msgspec.structs.replace(
        ONE_CPU_POD.spec, scheduling_group=o.PodSchedulingGroup(pod_group_name=group)
    )
    return make_pods(msgspec.structs.replace(ONE_CPU_POD, spec=spec), group, NS, count)


def _key(pod: o.Pod) -> tuple[str, str]:
    return (pod.metadata.namespace, pod.metadata.name)


# --------------------------------------------------------------------------- statistics


def test_groups_end_fully_partly_or_not_bound_timed_from_their_last_put() -> None:
    a, b, c = _members("a", 4), _members("b", 4), _members("c", 4)
    tracker = GangTracker([*a, *b, *c], free=100)
    # Two Puts: the first carries a and half of b, the second the rest of b and c.
    tracker.created([make_pod_group("a", NS, 4), *a, *b[:2]], 1.0)
    tracker.created([*b[2:], *c], 2.0)
    tracker.all_created(2.0)
    for t, pod in zip((1.5, 1.6, 1.7, 1.8), a, strict=True):
        tracker.bound(_key(pod), t)
    tracker.bound(_key(b[0]), 2.5)
    tracker.bound(_key(b[3]), 2.6)
    tracker.bound(("default", "not-measured"), 2.7)  # not a measured pod: ignored
    report = tracker.report(Gangs(4, 80))
    assert (report.groups, report.fully_bound, report.partly_bound, report.not_bound) == (
        3, 1, 1, 1,
    )  # fmt: skip
    assert report.pods_bound == 6
    assert report.partly == ["gang/b (2 of 4)"]
    # a: its last pod came in the Put answered at 1.0, its last member bound at 1.8.
    assert report.last_pod_to_bound_ms == pytest.approx({"p50": 800.0, "p99": 800.0})
    assert report.counts() == ("1 of 3 pod groups fully bound, 1 partly bound, 1 not bound")
    assert report.as_json() == {
        "gang_size": 4,
        "ask_percent": 80,
        "free_cpu": 100,
        "groups": 3,
        "fully_bound": 1,
        "partly_bound": 1,
        "not_bound": 1,
        "pods_bound": 6,
        "last_pod_to_bound_ms": report.last_pod_to_bound_ms,
    }


def test_a_group_spanning_two_puts_counts_from_the_second() -> None:
    pods = _members("a", 4)
    tracker = GangTracker(pods, free=100)
    tracker.created(pods[:3], 1.0)
    tracker.created(pods[3:], 1.25)
    for pod in pods:
        tracker.bound(_key(pod), 1.5)
    assert tracker.report(Gangs(4, 80)).last_pod_to_bound_ms["p50"] == pytest.approx(250.0)


def test_the_percentiles_are_nearest_rank_over_the_fully_bound_groups() -> None:
    groups = [_members(f"g{i}", 1) for i in range(100)]
    tracker = GangTracker([p for g in groups for p in g], free=1000)
    for i, (pod,) in enumerate(groups):
        tracker.created([pod], 10.0)
        tracker.bound(_key(pod), 10.0 + (i + 1) / 1000)  # 1 ms ... 100 ms
    wait = tracker.report(Gangs(1, 80)).last_pod_to_bound_ms
    assert wait == pytest.approx({"p50": 50.0, "p99": 99.0})


def test_a_bind_seen_before_its_put_reply_counts_as_no_wait() -> None:
    (pod,) = _members("a", 1)
    tracker = GangTracker([pod], free=10)
    tracker.bound(_key(pod), 1.0)  # the watch's connection was faster than the putter's
    tracker.created([pod], 1.01)
    assert tracker.report(Gangs(1, 80)).last_pod_to_bound_ms == {"p50": 0.0, "p99": 0.0}


def test_no_group_fully_bound_has_no_percentile() -> None:
    tracker = GangTracker(_members("a", 2), free=10)
    wait = tracker.report(Gangs(2, 150)).last_pod_to_bound_ms
    assert math.isnan(wait["p50"]) and math.isnan(wait["p99"])
    assert math.isnan(nearest_rank([], 50))
    assert nearest_rank([3.0, 1.0, 2.0], 50) == 2.0
    assert nearest_rank([3.0, 1.0, 2.0], 99) == 3.0
    assert nearest_rank([3.0, 1.0, 2.0], 0) == 1.0


# --------------------------------------------------------------------------- failing a run


def _report(**over: Any) -> GangReport:
    fields: dict[str, Any] = {
        "gang_size": 8, "ask_percent": 80, "free_cpu": 40, "groups": 4, "fully_bound": 4,
        "partly_bound": 0, "not_bound": 0, "pods_bound": 32,
        "last_pod_to_bound_ms": {"p50": 1.0, "p99": 2.0},
    }  # fmt: skip
    fields.update(over)
    return GangReport(**fields)


def test_a_partly_bound_group_fails_the_run_naming_it() -> None:
    report = _report(
        ask_percent=150,
        fully_bound=2,
        partly_bound=1,
        not_bound=0,
        partly=["gang/gang-2 (16 of 32)"],
    )
    with pytest.raises(PartlyBoundError) as caught:
        check_gangs("Gang32Overfull", 20, report, Gangs(32, 150))
    assert str(caught.value) == (
        "Gang32Overfull at 20 nodes: 1 pod group ended PARTLY BOUND, which all-or-nothing "
        "forbids: gang/gang-2 (16 of 32) (2 of 4 pod groups fully bound, 1 partly bound, "
        "0 not bound)"
    )
    assert isinstance(caught.value, BenchError)


def test_only_ten_partly_bound_groups_are_named() -> None:
    partly = [f"gang/gang-{i} (1 of 8)" for i in range(12)]
    report = _report(groups=12, fully_bound=0, partly_bound=12, partly=partly)
    with pytest.raises(PartlyBoundError, match=r"12 pod groups ended PARTLY BOUND") as caught:
        check_gangs("Gang8", 500, report, Gangs(8, 80))
    assert "gang/gang-9 (1 of 8) ..." in str(caught.value)
    assert "gang-10" not in str(caught.value)


def test_gangs_that_fit_must_all_bind() -> None:
    with pytest.raises(BenchError, match="its gangs fit the cluster, yet 3 of 4 pod groups"):
        check_gangs("Gang8", 500, _report(fully_bound=3, not_bound=1), Gangs(8, 80))
    check_gangs("Gang8", 500, _report(), Gangs(8, 80))
    # Overfull: groups left unbound are what the workload is about.
    check_gangs("Gang8Overfull", 500, _report(fully_bound=3, not_bound=1), Gangs(8, 150))


# --------------------------------------------------------------------------- the end of a run


def _overfull() -> tuple[GangTracker, list[list[o.Pod]]]:
    """Three gangs of 4 on 10 free CPUs: two fit, the third cannot."""
    gangs = [_members(g, 4) for g in ("a", "b", "c")]
    tracker = GangTracker([p for g in gangs for p in g], free=10, settle=3.0)
    return tracker, gangs


def test_a_run_does_not_end_before_its_last_put() -> None:
    tracker, gangs = _overfull()
    for pod in gangs[0] + gangs[1]:
        tracker.bound(_key(pod), 1.0)
    assert not tracker.ended(100.0)
    tracker.all_created(100.0)
    assert not tracker.ended(102.9)
    assert tracker.ended(103.0)  # the settle time counts from the last Put's reply


def test_every_group_bound_ends_the_run_at_once() -> None:
    gangs = [_members(g, 4) for g in ("a", "b")]
    tracker = GangTracker([p for g in gangs for p in g], free=10, settle=3.0)
    tracker.all_created(0.5)
    for pod in gangs[0] + gangs[1]:
        assert not tracker.ended(1.0)
        tracker.bound(_key(pod), 1.0)
    assert tracker.smallest_need() is None
    assert tracker.ended(1.0)


def test_no_room_for_the_smallest_remaining_gang_ends_the_run_after_the_settle_time() -> None:
    tracker, gangs = _overfull()
    tracker.all_created(0.5)
    for pod in gangs[0] + gangs[1]:
        tracker.bound(_key(pod), 1.0)
    assert (tracker.room(), tracker.smallest_need()) == (2, 4)
    assert not tracker.ended(3.9)
    assert tracker.ended(4.0)
    assert tracker.ended(60.0)


def test_room_for_a_remaining_gang_never_ends_the_run() -> None:
    tracker, gangs = _overfull()
    tracker.all_created(0.5)
    for pod in gangs[0]:
        tracker.bound(_key(pod), 1.0)
    assert (tracker.room(), tracker.smallest_need()) == (6, 4)
    assert not tracker.ended(1000.0)  # the stall guard ends it: the scheduler left it out


def test_the_need_of_a_partly_bound_group_is_what_it_still_lacks() -> None:
    # Pod by pod (no gang scheduling): the third gang got the last 2 places of 10.
    tracker, gangs = _overfull()
    tracker.all_created(0.5)
    for pod in gangs[0] + gangs[1] + gangs[2][:2]:
        tracker.bound(_key(pod), 1.0)
    assert (tracker.room(), tracker.smallest_need()) == (0, 2)
    assert tracker.ended(4.0)
    assert tracker.report(Gangs(4, 150)).partly == ["gang/c (2 of 4)"]
