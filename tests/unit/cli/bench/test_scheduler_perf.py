"""The gang workloads' measurement (issue 24 point 8): a group's time from its last pod's
creation to its last bind, groups fully, partly and not bound, the failure of a partly bound
one, where a run ends, and the plan of gang runs.

(scheduler_perf's windows, quantiles and plan: tests/unit/cli/bench/test_bench.py.)"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import msgspec
import pytest
import trio
import trio.testing

from podium.cli.bench import scheduler_perf as perf
from podium.cli.bench.scheduler_perf import (
    SETTLE_SECONDS,
    STALL_SECONDS,
    BenchError,
    GangReport,
    GangTracker,
    PartlyBoundError,
    RunResult,
    check_gangs,
    nearest_rank,
    plan,
    summarize,
)
from podium.cli.bench.workload import ONE_CPU_POD, Gangs, make_pod_group, make_pods
from podium.protocol import objects as o
from podium.protocol.wire import Event

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


# --------------------------------------------------------------------------- the watch


class _FakeWatcher:
    """A client whose one watch delivers ``binds`` at their times, then nothing."""

    def __init__(self, binds: Sequence[tuple[float, o.Pod]]) -> None:
        self.binds = binds

    @contextlib.asynccontextmanager
    async def watch(self, from_revision: int, kinds: Sequence[str]) -> AsyncIterator[Any]:
        async with contextlib.aclosing(self._events(from_revision)) as events:
            yield events

    async def _events(self, revision: int) -> AsyncIterator[Event]:
        for at, pod in self.binds:
            await trio.sleep_until(at)
            revision += 1
            yield Event(id=1, revision=revision, type="Bound", kind="Pod",
                        namespace=pod.metadata.namespace, name=pod.metadata.name)  # fmt: skip
        await trio.sleep_forever()


def _count(
    tracker: GangTracker, pods: list[o.Pod], binds: Sequence[tuple[float, o.Pod]]
) -> tuple[Any, float]:
    """Run the measurement's binding counter on a mock clock: (the counter, when it returned)."""
    counter = perf._BindingCounter({_key(p) for p in pods}, lambda _: None, tracker)

    async def main() -> float:
        tracker.all_created(trio.current_time())
        await counter.run(cast(Any, _FakeWatcher(binds)), 0)
        return trio.current_time()

    clock = trio.testing.MockClock(autojump_threshold=0)
    return counter, trio.run(main, clock=clock)


def test_the_counter_ends_an_overfull_run_by_the_rule() -> None:
    tracker, gangs = _overfull()
    pods = [p for g in gangs for p in g]
    counter, ended_at = _count(tracker, pods, [(1.0, p) for p in gangs[0] + gangs[1]])
    assert counter.ended and counter.bound == 8
    assert 1.0 + SETTLE_SECONDS <= ended_at < 1.0 + SETTLE_SECONDS + 0.1


def test_the_counter_ends_a_run_whose_groups_all_bound_at_the_last_bind() -> None:
    gangs = [_members(g, 4) for g in ("a", "b")]
    pods = [p for g in gangs for p in g]
    tracker = GangTracker(pods, free=10)
    counter, ended_at = _count(tracker, pods, [(2.0, p) for p in pods])
    assert counter.ended and ended_at == pytest.approx(2.0)
    assert tracker.report(Gangs(4, 80)).fully_bound == 2


def test_the_counter_stalls_when_a_gang_has_room_and_no_bind_comes() -> None:
    tracker, gangs = _overfull()
    pods = [p for g in gangs for p in g]
    counter, ended_at = _count(tracker, pods, [(1.0, p) for p in gangs[0]])
    assert not counter.ended
    assert ended_at == pytest.approx(1.0 + STALL_SECONDS)


# --------------------------------------------------------------------------- plan


def test_an_overfull_gang_run_is_not_held_to_the_clusters_capacity() -> None:
    ((workload, nodes, pods),) = plan(["Gang32Overfull"], 500, None)
    assert (workload.name, nodes, pods) == ("Gang32Overfull", 500, 2976)
    assert pods > workload.capacity(500)


def test_the_gang_workloads_default_to_their_two_sizes() -> None:
    assert [(w.name, n, p) for w, n, p in plan(["Gang128", "OneCPUPods"], None, None)] == [
        ("Gang128", 500, 1536),
        ("Gang128", 5000, 16000),
        ("OneCPUPods", 500, 1600),
        ("OneCPUPods", 5000, 16000),
    ]


@dataclass(frozen=True)
class PlanCase:
    name: str
    workload: str
    nodes: int
    pods: int | None
    want: str


PLAN_CASES = [
    PlanCase(
        "pods not whole gangs", "Gang8", 30, 60,
        "Gang8 creates whole gangs of 8 pods: use --pods 56 (a multiple of 8), not 60",
    ),
    PlanCase(
        "fewer pods than one gang", "Gang32", 30, 8,
        "Gang32 creates whole gangs of 32 pods: use --pods 32 (a multiple of 32), not 8",
    ),
    PlanCase(
        "too few nodes for one gang", "Gang128", 30, None,
        "Gang128 at 30 nodes asks for no gang: 80 % of its 120 free CPUs is less than one "
        "gang of 128 pods of 1 CPU; use --nodes 40 or more",
    ),
    PlanCase(
        "more gangs than fit, at 0.8x", "Gang32", 30, 128,
        "Gang32 at 30 nodes can place at most 96 measured pods; use --pods 96 or fewer",
    ),
]  # fmt: skip


@pytest.mark.parametrize("case", PLAN_CASES, ids=lambda c: c.name)
def test_a_gang_run_of_no_whole_gang_is_refused_before_running(case: PlanCase) -> None:
    with pytest.raises(BenchError) as caught:
        list(plan([case.workload], case.nodes, case.pods))
    assert case.want in str(caught.value)


# --------------------------------------------------------------------------- results


def _run(gangs: GangReport | None, pods: int = 56, seconds: float = 0.5) -> RunResult:
    return RunResult(
        "Gang8Overfull" if gangs else "OneCPUPods", 10, pods,
        dict.fromkeys(("average", "p50", "p90", "p99"), 80.0), {"p50": 1.0, "p90": 2.0, "p99": 3.0},
        0, 0.0, seconds, [], gangs=gangs,
    )  # fmt: skip


def test_a_gang_runs_json_has_its_groups_and_others_have_none() -> None:
    report = _report(ask_percent=150, groups=7, fully_bound=5, not_bound=2, pods_bound=40)
    gang = _run(report)
    assert gang.as_json()["gangs"] == report.as_json()
    assert "partly" not in gang.as_json()["gangs"]
    # Its overall rate is of the pods that bound, not of those created.
    assert (gang.pods_bound, gang.overall) == (40, 80.0)
    plain = _run(None, pods=32)
    assert "gangs" not in plain.as_json()
    assert (plain.pods_bound, plain.overall) == (32, 64.0)
    assert "gangs" not in summarize([plain])


def test_a_gang_summary_takes_the_median_of_its_runs() -> None:
    runs = [
        _run(_report(fully_bound=f, not_bound=7 - f, groups=7, pods_bound=8 * f,
                     last_pod_to_bound_ms={"p50": p50, "p99": 2 * p50}))
        for f, p50 in ((5, 10.0), (4, 30.0), (5, 20.0))
    ]  # fmt: skip
    gangs = summarize(runs)["gangs"]
    assert gangs == {
        "gang_size": 8,
        "ask_percent": 80,
        "free_cpu": 40,
        "groups": 7,
        "fully_bound": 5,
        "partly_bound": 0,
        "not_bound": 2,
        "pods_bound": 40,
        "last_pod_to_bound_ms": {"p50": 20.0, "p99": 40.0},
    }
    assert isinstance(gangs["fully_bound"], int)
    halves = summarize(runs[:2])["gangs"]
    assert (halves["fully_bound"], halves["pods_bound"]) == (4.5, 36)
