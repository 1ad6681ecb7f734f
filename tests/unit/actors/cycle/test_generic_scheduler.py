"""The generic scheduler core: numFeasibleNodesToFind, the walk, FitError, host selection."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import pytest
from builders import make_node, make_pod
from stages import decide

from podium.actors.cycle.generic_scheduler import (
    FilterStage,
    ScoreStage,
    num_feasible_nodes_to_find,
)
from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    SKIP,
    Code,
    FilterPlugin,
    PluginArgs,
    ReasonMasks,
    ScorePlugin,
    Skip,
    Status,
    VectorFilterPlugin,
    fit_error_message,
    unschedulable,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.node_resources_fit import PodFitsResources


@dataclass(frozen=True)
class FeasibleCase:
    name: str
    nodes: int
    percentage: int
    want: int


# generic_scheduler_test.go@v1.14 TestNumFeasibleNodesToFind rows, plus the adaptive formula.
FEASIBLE_CASES = [
    FeasibleCase("not set percentageOfNodesToScore and nodes number not more than 50", 10, 0, 10),
    FeasibleCase("set percentageOfNodesToScore and nodes number not more than 50", 10, 40, 10),
    FeasibleCase("not set percentageOfNodesToScore and nodes number more than 50", 1000, 0, 420),
    FeasibleCase("set percentageOfNodesToScore and nodes number more than 50", 1000, 40, 400),
    FeasibleCase(
        "not set percentageOfNodesToScore and nodes number more than 50*125", 6000, 0, 300
    ),
    FeasibleCase("set percentageOfNodesToScore and nodes number more than 50*125", 6000, 40, 2400),
    FeasibleCase("below 100 nodes every node", 99, 10, 99),
    FeasibleCase("never fewer than 100", 150, 10, 100),
    FeasibleCase("100 percent means all", 5000, 100, 5000),
    FeasibleCase("5000 nodes adaptive is 10 percent", 5000, 0, 500),
    FeasibleCase("15000 nodes adaptive floor 5 percent", 15000, 0, 750),
]


@pytest.mark.parametrize("case", FEASIBLE_CASES, ids=attrgetter("name"))
def test_num_feasible_nodes_to_find(case: FeasibleCase) -> None:
    assert num_feasible_nodes_to_find(case.nodes, case.percentage) == case.want


def test_fit_error_message_counts_and_sorts_as_strings() -> None:
    reasons = Counter({"node(s) had taints that the pod didn't tolerate": 3, "Insufficient cpu": 2})
    assert fit_error_message(5, reasons) == (
        "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had taints that the pod didn't tolerate."
    )
    # Sorted as strings, so "10 ..." sorts before "2 ...", as Kubernetes prints it.
    assert (
        fit_error_message(12, Counter({"b": 2, "a": 10})) == "0/12 nodes are available: 10 a, 2 b."
    )


def test_no_nodes_message() -> None:
    result = decide(FilterStage([]), ScoreStage([]), make_pod().info(), Snapshot([]))
    assert result.node is None
    assert result.message == "no nodes available to schedule pods"


class _ScalarParity(FilterPlugin[None]):
    """A predicate failing odd-numbered nodes (by the number in their name), scalar only."""

    name = "Parity"
    REASON = "node(s) are odd"

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        return unschedulable(self.REASON) if int(node.name[1:]) % 2 else Status()


class _Parity(_ScalarParity, VectorFilterPlugin[None]):
    """The same predicate with a vector form."""

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        return [
            (
                self.REASON,
                np.array([int(n[1:]) % 2 == 1 for n in cols.names]),
                Code.UNSCHEDULABLE,
            )
        ]


class _Skipper(FilterPlugin[None]):
    name = "Skipper"

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> Skip:
        return SKIP

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        raise AssertionError("a skipped predicate must not run")


def _snapshot(n: int) -> Snapshot:
    return Snapshot(
        [make_node(f"n{i}").capacity(cpu="4", memory="32Gi", pods=110).info() for i in range(n)]
    )


@pytest.mark.parametrize("plugin", [_Parity(), _ScalarParity()], ids=["vector", "loop"])
def test_walk_stops_at_num_feasible_and_carries_start_index(plugin: _ScalarParity) -> None:
    snap = _snapshot(400)  # 400 nodes, adaptive: 400 * (50 - 3) / 100 = 188 feasible wanted
    stage = FilterStage([plugin, _Skipper()])
    first, _ = stage.run(make_pod().info(), snap, explain=True)
    assert first.feasible == 188
    # n0 fits, n1 does not, ...: the 188th feasible node is n374, so 375 nodes were examined.
    assert first.evaluated == 375
    assert first.reasons == Counter({_Parity.REASON: 187})
    assert len(first.failed) == 187
    assert stage.next_start_index == 375
    second, _ = stage.run(make_pod().info(), snap, explain=True)
    # From n375 on, wrapping round: n376, n378, ..., n398, n0, n2, ... until 188 fit.
    assert second.feasible_nodes[:2] == ("n376", "n378")
    # 12 fit in n375..n399, then n0..n350 give the other 176: 25 + 351 nodes examined.
    assert second.evaluated == 376
    assert stage.next_start_index == (375 + 376) % 400


def test_vector_and_loop_walks_agree() -> None:
    snap = _snapshot(250)
    for start in (0, 1, 7, 249):
        a, b = FilterStage([_Parity()]), FilterStage([_ScalarParity()])
        a.next_start_index = b.next_start_index = start
        ra, _ = a.run(make_pod().info(), snap, explain=True)
        rb, _ = b.run(make_pod().info(), snap, explain=True)
        assert (
            ra.evaluated,
            ra.feasible,
            ra.reasons,
            ra.failed,
            ra.feasible_nodes,
            ra.examined,
        ) == (
            rb.evaluated,
            rb.feasible,
            rb.reasons,
            rb.failed,
            rb.feasible_nodes,
            rb.examined,
        )
        assert a.next_start_index == b.next_start_index


def test_nothing_fits_gives_fit_error_over_all_nodes() -> None:
    snap = Snapshot([make_node("n1").info(), make_node("n3").info()])
    result = decide(FilterStage([_Parity()]), ScoreStage([]), make_pod().info(), snap)
    assert result.node is None
    assert result.message == "0/2 nodes are available: 2 node(s) are odd."


class _ByName(ScorePlugin[None]):
    """Scores a node by its number; no reduce."""

    name = "ByName"

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> None:
        return None

    def score(self, pod: PodInfo, meta: None, node: NodeInfo) -> int:
        return int(node.name[1:]) // 2

    def normalize(
        self, pod: PodInfo, meta: Skip | None, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return scores


def test_highest_total_wins_and_ties_break_at_random_repeatably() -> None:
    snap = _snapshot(6)  # scores: n0 0, n1 0, n2 1, n3 1, n4 2, n5 2
    picks = set()
    for seed in range(20):
        scores = ScoreStage([(_ByName(), 3)], rng=random.Random(seed))
        result = decide(FilterStage([]), scores, make_pod().info(), snap, explain=True)
        assert result.totals["n5"] == 6
        picks.add(result.node)
    assert picks == {"n4", "n5"}
    again = [
        decide(
            FilterStage([]),
            ScoreStage([(_ByName(), 1)], rng=random.Random(7)),
            make_pod().info(),
            snap,
        ).node
        for _ in range(3)
    ]
    assert len(set(again)) == 1


def test_nominated_pods_use_the_loop_walk_and_dry_keeps_the_start_index() -> None:
    # v1.14 podFitsOnNode: a pod nominated to n2 (equal priority, 3 of 4 cpu) takes the room
    # an incoming 2-cpu pod needs there; the walk examines n2, n3, n0, n1 from start index 2.
    snap = _snapshot(4)
    nominated = NominatedPods()
    nominated.add(make_pod("preemptor").priority(10).req(cpu="3").info(), "n2")
    stage = FilterStage([PodFitsResources(PluginArgs(name=names.POD_FITS_RESOURCES))])
    stage.next_start_index = 2
    incoming = make_pod("p").priority(10).req(cpu="2").info()
    result, feasible = stage.run(incoming, snap, explain=True, dry=True, nominated=nominated)
    assert result.examined == ("n2", "n3", "n0", "n1")
    assert result.failed == {"n2": ("Insufficient cpu",)}
    assert feasible == [3, 0, 1] and stage.next_start_index == 2


def _service_cluster(n: int) -> Snapshot:
    from podium.actors.framework.snapshot import ClusterObjects
    from podium.protocol import objects as o

    service = o.Service(
        metadata=o.ObjectMeta(name="s", namespace="default"),
        spec=o.ServiceSpec(selector={"app": "a"}),
    )
    nodes = [
        make_node(f"n{i}")
        .label("kubernetes.io/hostname", f"n{i}")
        .capacity(cpu="64", memory="64Gi", pods=110)
        .info()
        for i in range(n)
    ]
    return Snapshot(nodes, ClusterObjects(services={"default/s": service}))


def test_a_service_selected_class_keeps_its_class_state_from_pod_to_pod(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pods a Service selects (SelectorSpread's metadata compiles its selector afresh every
    pod) keep their class's scores: the class is scored over every row once, not once a pod
    (it was, and each pod then prioritized its window again besides), and the picks are the
    list path's."""
    import msgspec

    from podium.actors.plugins.policy import build_plugins, default_policy

    calls = Counter[str]()
    score_class = ScoreStage._score_class

    def counted(self: ScoreStage, *args: object) -> object:
        calls["class"] += 1
        return score_class(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ScoreStage, "_score_class", counted)
    placed: dict[bool, list[str | None]] = {}
    for ring in (True, False):
        monkeypatch.setattr(FilterStage, "use_ring", ring)
        snapshot = _service_cluster(300)
        filters, scorers = build_plugins(default_policy())
        fs, ss = FilterStage(filters), ScoreStage(scorers, rng=random.Random(1))
        placed[ring] = []
        for i in range(20):
            pod = make_pod(f"p{i}").uid(f"u{i}").label("app", "a").req(cpu="100m").obj()
            node = decide(fs, ss, PodInfo(pod), snapshot).node
            placed[ring].append(node)
            assert node is not None
            info = snapshot.by_name[node].clone()
            spec = msgspec.structs.replace(pod.spec, node_name=node)
            info.add_pod(PodInfo(msgspec.structs.replace(pod, spec=spec)))
            snapshot.replace_node_info(info)
    assert placed[True] == placed[False]
    assert calls["class"] == 1
