"""The filter stage with nominated pods: v1.14 ``podFitsOnNode``'s two passes in the walk.

Kubernetes sources: pkg/scheduler/core/generic_scheduler.go@v1.14 (``podFitsOnNode``,
``addNominatedPods``). v1.14 has no unit test of the two passes; the call-count cases are those
of the later generic_scheduler_test.go ``TestFindFitPredicateCallCounts`` (v1.16+), the others
are Podium's (the space a preemptor waits for, test/integration/scheduler/preemption_test.go's
starvation idea, and the nominated pod's anti-affinity of ``meta.AddPod``).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from builders import make_node, make_pod

from podium.actors.cycle.generic_scheduler import FilterStage
from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    SUCCESS,
    Code,
    FilterPlugin,
    PluginArgs,
    ReasonMasks,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.framework.preemption import PredicateFitCheck
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import inter_pod_affinity, names, node_resources_fit
from podium.actors.plugins.inter_pod_affinity import InterPodAffinity
from podium.actors.plugins.node_resources_fit import PodFitsResources

LOW, MID, HIGH = 0, 100, 1000
INSUFFICIENT_CPU = node_resources_fit.ERR_REASON_INSUFFICIENT_CPU
EXISTING_ANTI = (
    inter_pod_affinity.ERR_REASON_AFFINITY_NOT_MATCH,
    inter_pod_affinity.ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
AFFINITY_RULES = (
    inter_pod_affinity.ERR_REASON_AFFINITY_NOT_MATCH,
    inter_pod_affinity.ERR_REASON_AFFINITY_RULES_NOT_MATCH,
)


def resources() -> FilterPlugin:
    return PodFitsResources(PluginArgs(name=names.POD_FITS_RESOURCES))


def affinity() -> FilterPlugin:
    return InterPodAffinity(PluginArgs(name=names.MATCH_INTER_POD_AFFINITY))


def nodes(*names_: str, cpu: str = "1") -> Snapshot:
    return Snapshot(
        [
            make_node(n).capacity(cpu=cpu, memory="8Gi", pods=110).label("hostname", n).info()
            for n in names_
        ]
    )


def nominate(*entries: tuple[str, PodInfo]) -> NominatedPods:
    out = NominatedPods()
    for node, pod in entries:
        out.add(pod, node)
    return out


def pod(name: str, priority: int, cpu: str = "", **labels: str) -> PodInfo:
    b = make_pod(name).uid(f"uid-{name}").priority(priority).labels(labels)
    if cpu:
        b.req(cpu=cpu)
    return b.info()


def run(
    filters: Sequence[FilterPlugin],
    incoming: PodInfo,
    snapshot: Snapshot,
    nominated: NominatedPods | None,
    *,
    always_check_all_predicates: bool = False,
) -> ScheduleResult:
    stage = FilterStage(filters, always_check_all_predicates=always_check_all_predicates)
    result, _ = stage.run(incoming, snapshot, explain=True, nominated=nominated)
    return result


# --------------------------------------------------------------------------- call counts


class _Counting(FilterPlugin[None]):
    """generic_scheduler_test.go's FakeFilterPlugin: passes, counting its calls."""

    name = "FakeFilter"

    def __init__(self) -> None:
        self.calls = 0

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        self.calls += 1
        return SUCCESS


@dataclass(frozen=True)
class CallCase:
    name: str
    priority: int
    want_calls: int


# TestFindFitPredicateCallCounts: a pod of midPriority is nominated to the only node "1".
CALL_CASES = [
    CallCase("nominated pods have lower priority, predicate is called once", HIGH, 1),
    CallCase("nominated pods have higher priority, predicate is called twice", LOW, 2),
    CallCase("nominated pods of equal priority count too, predicate is called twice", MID, 2),
]


@pytest.mark.parametrize("case", CALL_CASES, ids=lambda c: c.name)
def test_find_fit_predicate_call_counts(case: CallCase) -> None:
    counting = _Counting()
    nominated = nominate(("1", pod("nominated", MID)))
    result = run([counting], pod("1", case.priority), nodes("1"), nominated)
    assert result.feasible == 1
    assert counting.calls == case.want_calls


def test_the_pod_itself_is_never_added() -> None:
    counting = _Counting()
    me = pod("1", LOW)
    assert run([counting], me, nodes("1"), nominate(("1", me))).feasible == 1
    assert counting.calls == 1


# --------------------------------------------------------------------------- resources


@dataclass(frozen=True)
class SpaceCase:
    name: str
    incoming: PodInfo
    feasible: list[str]
    failed: dict[str, tuple[str, ...]]


# n1 and n2 have 1 cpu each; "preemptor" (HIGH, 800m) is nominated to n1 and waits there.
SPACE_CASES = [
    SpaceCase(
        "an equal-priority pod does not take the nominated pod's space",
        pod("p", HIGH, "500m"),
        ["n2"],
        {"n1": (INSUFFICIENT_CPU,)},
    ),
    SpaceCase(
        "a lower-priority pod does not take the nominated pod's space",
        pod("p", MID, "500m"),
        ["n2"],
        {"n1": (INSUFFICIENT_CPU,)},
    ),
    SpaceCase(
        "a higher-priority pod ignores the nomination",
        pod("p", HIGH + 1, "500m"),
        ["n1", "n2"],
        {},
    ),
    SpaceCase(
        "a pod fitting beside the nominated pod fits",
        pod("p", LOW, "200m"),
        ["n1", "n2"],
        {},
    ),
    SpaceCase(
        "the nominated pod itself fits where it is nominated",
        pod("preemptor", HIGH, "800m"),
        ["n1", "n2"],
        {},
    ),
]


@pytest.mark.parametrize("case", SPACE_CASES, ids=lambda c: c.name)
def test_nominated_pod_keeps_its_space(case: SpaceCase) -> None:
    nominated = nominate(("n1", pod("preemptor", HIGH, "800m")))
    result = run([resources()], case.incoming, nodes("n1", "n2"), nominated)
    assert result.feasible_nodes == tuple(case.feasible)
    assert result.failed == case.failed
    assert result.reasons == Counter(r for rs in case.failed.values() for r in rs)
    if case.failed:
        assert result.failed_plugins == {names.POD_FITS_RESOURCES}
    # Without nominations every node fits: the vector walk, unchanged.
    plain = run([resources()], case.incoming, nodes("n1", "n2"), None)
    assert plain.feasible_nodes == ("n1", "n2")


def test_fit_error_counts_the_first_pass_reasons() -> None:
    nominated = nominate(("n1", pod("a", HIGH, "800m")), ("n2", pod("b", HIGH, "900m")))
    stage = FilterStage([resources()])
    result, feasible = stage.run(pod("p", LOW, "500m"), nodes("n1", "n2"), nominated=nominated)
    assert feasible == []
    assert result.message == "0/2 nodes are available: 2 Insufficient cpu."


# --------------------------------------------------------------------------- inter-pod affinity


def anti_affinity_to(**labels: str) -> dict[str, object]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "hostname"}
            ]
        }
    }


def affinity_to(**labels: str) -> dict[str, object]:
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "hostname"}
            ]
        }
    }


def test_nominated_pods_anti_affinity_rejects_the_node() -> None:
    # No running pod has affinity, so the predicate skips on the plain snapshot; the first
    # pass on n1 must see the nominated pod's anti-affinity (v1.14 meta.AddPod).
    guard = PodInfo(
        make_pod("guard")
        .uid("uid-guard")
        .priority(HIGH)
        .affinity(anti_affinity_to(app="web"))
        .obj()
    )
    nominated = nominate(("n1", guard))
    web = pod("web", MID, app="web")
    result = run([resources(), affinity()], web, nodes("n1", "n2"), nominated)
    assert result.feasible_nodes == ("n2",)
    assert result.failed == {"n1": EXISTING_ANTI}
    assert result.failed_plugins == {names.MATCH_INTER_POD_AFFINITY}
    # A pod the anti-affinity does not match, or a higher-priority one, fits on n1.
    assert run([affinity()], pod("db", MID, app="db"), nodes("n1"), nominated).feasible == 1
    assert run([affinity()], pod("web", HIGH + 1, app="web"), nodes("n1"), nominated).feasible == 1


def test_second_pass_without_the_nominated_pods_decides() -> None:
    # Pod affinity to a pod that is only nominated: the first pass (with it on n1) passes, the
    # second (without it) fails, so n1 fails with the second pass's reasons, like n2.
    db = pod("db", HIGH, app="db")
    nominated = nominate(("n1", db))
    incoming = PodInfo(
        make_pod("api").uid("uid-api").priority(LOW).affinity(affinity_to(app="db")).obj()
    )
    result = run([resources(), affinity()], incoming, nodes("n1", "n2"), nominated)
    assert result.feasible == 0
    assert result.failed == {"n1": AFFINITY_RULES, "n2": AFFINITY_RULES}
    assert result.reasons == Counter(dict.fromkeys(AFFINITY_RULES, 2))


def test_always_check_all_predicates_keeps_every_reason_of_the_failing_pass() -> None:
    guard = PodInfo(
        make_pod("guard")
        .uid("uid-guard")
        .priority(HIGH)
        .req(cpu="800m")
        .affinity(anti_affinity_to(app="web"))
        .obj()
    )
    nominated = nominate(("n1", guard))
    web = pod("web", MID, "500m", app="web")
    filters = [resources(), affinity()]
    first_only = run(filters, web, nodes("n1"), nominated)
    assert first_only.failed == {"n1": (INSUFFICIENT_CPU,)}
    every = run(filters, web, nodes("n1"), nominated, always_check_all_predicates=True)
    assert every.failed == {"n1": (INSUFFICIENT_CPU, *EXISTING_ANTI)}


# --------------------------------------------------------------------------- the walk


class _Parity(VectorFilterPlugin[None]):
    """Fails odd-numbered nodes, with a vector form."""

    name = "Parity"
    REASON = "node(s) are odd"

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        return unschedulable(self.REASON) if int(node.name[1:]) % 2 else SUCCESS

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        return [
            (
                self.REASON,
                np.array([int(n[1:]) % 2 == 1 for n in cols.names]),
                Code.UNSCHEDULABLE,
            )
        ]


class _VectorOnly(_Parity):
    """The same, refusing scalar calls: proves the vector walk ran."""

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        raise AssertionError("the vector walk must serve a pod without relevant nominations")


def _reference(
    filters: Sequence[FilterPlugin],
    incoming: PodInfo,
    snapshot: Snapshot,
    nominated: NominatedPods,
    start: int,
    want: int,
) -> tuple[int, list[str], dict[str, tuple[str, ...]]]:
    """The walk done node by node with preemption's PredicateFitCheck (podFitsOnNode)."""
    fits = PredicateFitCheck(filters, nominated)
    work = snapshot.copy()
    n = len(snapshot)
    feasible: list[str] = []
    failed: dict[str, tuple[str, ...]] = {}
    evaluated = 0
    for step in range(n):
        info = snapshot.node_infos[(start + step) % n]
        evaluated += 1
        reasons = fits(incoming, info, work)
        if reasons:
            failed[info.name] = reasons
            continue
        feasible.append(info.name)
        if len(feasible) >= want:
            break
    return evaluated, feasible, failed


def test_walk_with_nominated_pods_matches_podfitsonnode_node_by_node() -> None:
    rng = random.Random(14)
    snap = Snapshot(
        [make_node(f"n{i}").capacity(cpu="1", memory="8Gi", pods=110).info() for i in range(400)]
    )
    entries = [
        (f"n{i}", pod(f"w{i}", rng.choice([LOW, MID, HIGH]), rng.choice(["300m", "800m"])))
        for i in rng.sample(range(400), 120)
    ]
    nominated = nominate(*entries)
    filters: list[FilterPlugin] = [_Parity(), resources()]
    incoming = pod("p", MID, "500m")
    stage = FilterStage(filters)  # adaptive: 188 feasible nodes wanted of 400
    for start in (0, 1, 213, 399):
        stage.next_start_index = start
        result, rows = stage.run(incoming, snap, explain=True, nominated=nominated)
        evaluated, feasible, failed = _reference(filters, incoming, snap, nominated, start, 188)
        assert (result.evaluated, result.feasible_nodes, result.failed) == (
            evaluated,
            tuple(feasible),
            failed,
        )
        assert [snap.node_infos[i].name for i in rows] == feasible
        assert result.reasons == Counter(r for rs in failed.values() for r in rs)
        assert stage.next_start_index == (start + evaluated) % 400
    # Some nodes were lost to nominations, so the walk went further than without them.
    plain = FilterStage(filters)
    result, _ = plain.run(incoming, snap, explain=True)
    assert result.evaluated == 375
    stage.next_start_index = 0
    with_nominations, _ = stage.run(incoming, snap, nominated=nominated)
    assert with_nominations.evaluated > 375


def test_without_relevant_nominations_the_vector_walk_runs() -> None:
    snap = Snapshot([make_node(f"n{i}").capacity(cpu="1").info() for i in range(6)])
    lower = nominate(("n0", pod("low", LOW)), ("n2", pod("low2", LOW)))
    me = pod("p", MID)
    for nominated in (None, NominatedPods(), lower, nominate(("n0", me))):
        result, rows = FilterStage([_VectorOnly()]).run(me, snap, nominated=nominated)
        assert rows == [0, 2, 4] and result.evaluated == 6


def test_vector_and_loop_walks_agree_with_nominated_pods() -> None:
    snap = Snapshot(
        [make_node(f"n{i}").capacity(cpu="1", memory="8Gi", pods=110).info() for i in range(250)]
    )
    nominated = nominate(*((f"n{i}", pod(f"w{i}", HIGH, "800m")) for i in range(0, 250, 3)))
    incoming = pod("p", LOW, "500m")
    for start in (0, 7, 249):
        a = FilterStage([_Parity(), resources()])
        b = FilterStage([_ScalarOnly(), resources()])
        a.next_start_index = b.next_start_index = start
        ra, _ = a.run(incoming, snap, explain=True, nominated=nominated)
        rb, _ = b.run(incoming, snap, explain=True, nominated=nominated)
        assert (ra.evaluated, ra.reasons, ra.failed, ra.feasible_nodes, ra.examined) == (
            rb.evaluated,
            rb.reasons,
            rb.failed,
            rb.feasible_nodes,
            rb.examined,
        )
        assert a.next_start_index == b.next_start_index


class _ScalarOnly(FilterPlugin[None]):
    """_Parity without the vector form."""

    name = "Parity"

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        return unschedulable(_Parity.REASON) if int(node.name[1:]) % 2 else SUCCESS
