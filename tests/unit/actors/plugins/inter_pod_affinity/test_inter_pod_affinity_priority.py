"""InterPodAffinityPriority, scalar and vector map forms with the reduce step.

Rows are ported from pkg/scheduler/algorithm/priorities/interpod_affinity_test.go@v1.14
(TestInterPodAffinityPriority, 14 rows; TestHardPodAffinitySymmetricWeight, 2 rows), keeping
their names. Go's ``v1.DefaultHardPodAffinitySymmetricWeight`` (1 at v1.14) is passed
explicitly, and Go's empty namespace is Podium's "default" (no row tells them apart).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pytest
from builders import make_node, make_pod
from priority_harness import run_priority

from podium.actors.framework.interface import MAX_PRIORITY, SKIP, PluginArgs, PredicateError
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.inter_pod_affinity import (
    FACTORIES,
    InterPodAffinityPriority,
    normalize_counts,
)
from podium.protocol import objects as o

MAX = MAX_PRIORITY
DEFAULT_HARD_POD_AFFINITY_SYMMETRIC_WEIGHT = 1
"""k8s.io/api/core/v1 ``DefaultHardPodAffinitySymmetricWeight`` at v1.14."""

_names = itertools.count()


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def term(key: str, *exprs: dict[str, Any]) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": list(exprs)}, "topologyKey": key}


def weighted(weight: int, key: str, *exprs: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": term(key, *exprs)}


def pod(
    node: str = "", labels: Mapping[str, str] | None = None, aff: dict[str, Any] | None = None
) -> o.Pod:
    b = make_pod(f"p{next(_names)}")
    if labels:
        b.labels(dict(labels))
    if aff:
        b.affinity(aff)
    if node:
        b.node(node)
    return b.obj()


def node(name: str, labels: Mapping[str, str]) -> o.Node:
    return make_node(name).labels(dict(labels)).obj()


CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}

# interpod_affinity_test.go's affinities.
STAY_WITH_S1_IN_REGION = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted(5, "region", expr("security", "In", "S1"))
        ]
    }
}
STAY_WITH_S2_IN_REGION = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted(6, "region", expr("security", "In", "S2"))
        ]
    }
}
AFFINITY3 = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted(8, "region", expr("security", "NotIn", "S1"), expr("security", "In", "S2")),
            weighted(2, "region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
        ]
    }
}
HARD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            term("region", expr("security", "In", "S1", "value2")),
            term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
        ]
    }
}
AWAY_FROM_S1_IN_AZ = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted(5, "az", expr("security", "In", "S1"))
        ]
    }
}
AWAY_FROM_S2_IN_AZ = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted(5, "az", expr("security", "In", "S2"))
        ]
    }
}
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted(8, "region", expr("security", "In", "S1"))
        ]
    },
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            weighted(5, "az", expr("security", "In", "S2"))
        ]
    },
}


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    want: tuple[int, ...]
    pods: tuple[o.Pod, ...] = ()
    hard_weight: int = DEFAULT_HARD_POD_AFFINITY_SYMMETRIC_WEIGHT


# interpod_affinity_test.go@v1.14 TestInterPodAffinityPriority: every row.
CASES = [
    Case(
        "all machines are same priority as Affinity is nil",
        pod(labels=S1),
        (node("machine1", CHINA), node("machine2", INDIA), node("machine3", AZ1)),
        (0, 0, 0),
    ),
    Case(
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others"
        "which doesn't match either pods in nodes or in topology key",
        pod(labels=S1, aff=STAY_WITH_S1_IN_REGION),
        (node("machine1", CHINA), node("machine2", INDIA), node("machine3", AZ1)),
        (MAX, 0, 0),
        (pod("machine1", S1), pod("machine2", S2), pod("machine3", S1)),
    ),
    Case(
        "All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
        pod(aff=STAY_WITH_S1_IN_REGION),
        (node("machine1", CHINA), node("machine2", CHINA_AZ1), node("machine3", INDIA)),
        (MAX, MAX, 0),
        (pod("machine1", S1),),
    ),
    Case(
        "Affinity: nodes in one region has more matching pods comparing to other reqion, so the region which has more macthes will get high score",
        pod(labels=S1, aff=STAY_WITH_S2_IN_REGION),
        (
            node("machine1", CHINA),
            node("machine2", INDIA),
            node("machine3", CHINA),
            node("machine4", CHINA),
            node("machine5", INDIA),
        ),
        (MAX, 5, MAX, MAX, 5),
        (
            pod("machine1", S2),
            pod("machine1", S2),
            pod("machine2", S2),
            pod("machine3", S2),
            pod("machine4", S2),
            pod("machine5", S2),
        ),
    ),
    Case(
        "Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",
        pod(labels=S1, aff=AFFINITY3),
        (node("machine1", CHINA), node("machine2", INDIA), node("machine3", AZ1)),
        (2, MAX, 0),
        (pod("machine1", S1), pod("machine2", S2), pod("machine3", S1)),
    ),
    Case(
        "Affinity symmetry: considred only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        pod(labels=S2),
        (node("machine1", CHINA), node("machine2", INDIA), node("machine3", AZ1)),
        (0, MAX, 0),
        (pod("machine1", S1, STAY_WITH_S1_IN_REGION), pod("machine2", S2, STAY_WITH_S2_IN_REGION)),
    ),
    Case(
        "Affinity symmetry: considred RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
        pod(labels=S1),
        (node("machine1", CHINA), node("machine2", INDIA), node("machine3", AZ1)),
        (MAX, MAX, 0),
        (pod("machine1", S1, HARD_AFFINITY), pod("machine2", S2, HARD_AFFINITY)),
    ),
    Case(
        "Anti Affinity: pod that doesnot match existing pods in node will get high score ",
        pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        (node("machine1", AZ1), node("machine2", CHINA)),
        (0, MAX),
        (pod("machine1", S1), pod("machine2", S2)),
    ),
    Case(
        "Anti Affinity: pod that does not matches topology key & matches the pods in nodes will get higher score comparing to others ",
        pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        (node("machine1", AZ1), node("machine2", CHINA)),
        (0, MAX),
        (pod("machine1", S1), pod("machine2", S1)),
    ),
    Case(
        "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmacthes will get high score",
        pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        (node("machine1", AZ1), node("machine2", INDIA)),
        (0, MAX),
        (pod("machine1", S1), pod("machine1", S1), pod("machine2", S2)),
    ),
    Case(
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
        pod(labels=S2),
        (node("machine1", AZ1), node("machine2", AZ2)),
        (0, MAX),
        (pod("machine1", S1, AWAY_FROM_S2_IN_AZ), pod("machine2", S2, AWAY_FROM_S1_IN_AZ)),
    ),
    Case(
        "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
        pod(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        (node("machine1", CHINA), node("machine2", AZ1)),
        (MAX, 0),
        (pod("machine1", S1), pod("machine2", S1)),
    ),
    Case(
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
        pod(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        (
            node("machine1", CHINA_AZ1),
            node("machine2", INDIA),
            node("machine3", CHINA),
            node("machine4", CHINA),
            node("machine5", INDIA),
        ),
        (MAX, 4, MAX, MAX, 4),
        (
            pod("machine1", S1),
            pod("machine1", S1),
            pod("machine2", S1),
            pod("machine3", S1),
            pod("machine3", S1),
            pod("machine4", S1),
            pod("machine5", S1),
        ),
    ),
    Case(
        "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
        pod(labels=S1, aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        (
            node("machine1", CHINA),
            node("machine2", AZ1),
            node("machine3", INDIA),
            node("machine4", AZ2),
        ),
        (MAX, 0, MAX, 0),
        (
            pod("machine1", S1),
            pod("machine2", S2),
            pod("machine3", aff=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            pod("machine4", aff=AWAY_FROM_S1_IN_AZ),
        ),
    ),
]

SERVICE_S1 = {"service": "S1"}
HARD_POD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            term("region", expr("service", "In", "S1"))
        ]
    }
}

# interpod_affinity_test.go@v1.14 TestHardPodAffinitySymmetricWeight: every row.
HARD_CASES = [
    Case(
        "Hard Pod Affinity symmetry: hard pod affinity symmetry weights 1 by default, then nodes that match the hard pod affinity symmetry rules, get a high score",
        pod(labels=SERVICE_S1),
        (node("machine1", CHINA), node("machine2", INDIA), node("machine3", AZ1)),
        (MAX, MAX, 0),
        (pod("machine1", aff=HARD_POD_AFFINITY), pod("machine2", aff=HARD_POD_AFFINITY)),
    ),
    Case(
        "Hard Pod Affinity symmetry: hard pod affinity symmetry is closed(weights 0), then nodes that match the hard pod affinity symmetry rules, get same score with those not match",
        pod(labels=SERVICE_S1),
        (node("machine1", CHINA), node("machine2", INDIA), node("machine3", AZ1)),
        (0, 0, 0),
        (pod("machine1", aff=HARD_POD_AFFINITY), pod("machine2", aff=HARD_POD_AFFINITY)),
        hard_weight=0,
    ),
]


def run(case: Case) -> list[int]:
    plugin = InterPodAffinityPriority(
        PluginArgs(names.INTER_POD_AFFINITY, hard_pod_affinity_symmetric_weight=case.hard_weight)
    )
    result = run_priority(plugin, case.pod, case.nodes, case.pods)
    assert result.vector_raw == result.raw
    assert result.vector_final == result.final
    return result.final


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_inter_pod_affinity_priority(case: Case) -> None:
    assert run(case) == list(case.want)


@pytest.mark.parametrize("case", HARD_CASES, ids=attrgetter("name"))
def test_hard_pod_affinity_symmetric_weight(case: Case) -> None:
    assert run(case) == list(case.want)


def test_row_counts() -> None:
    assert (len(CASES), len(HARD_CASES)) == (14, 2)


# --------------------------------------------------------------------------- Podium's own


@pytest.mark.parametrize(
    ("counts", "want"),
    [
        pytest.param([], [], id="no nodes"),
        pytest.param([0, 0], [0, 0], id="all zero"),
        pytest.param([3, 3], [MAX, MAX], id="all equal positive: min is 0"),
        pytest.param([-4, -4], [0, 0], id="all equal negative: max is 0"),
        pytest.param([8, -5, 8, -5], [MAX, 0, MAX, 0], id="mixed"),
        pytest.param([1, 2, 3], [3, 6, MAX], id="float truncation"),
        pytest.param([7, 10], [7, MAX], id="exact tenths"),
        pytest.param([-3, 0, 6], [0, 3, MAX], id="negative min shifts the range"),
    ],
)
def test_normalize_counts(counts: list[int], want: list[int]) -> None:
    assert normalize_counts(counts) == want


def test_factory_and_skip() -> None:
    plugin = FACTORIES[names.INTER_POD_AFFINITY](
        PluginArgs("ipa", hard_pod_affinity_symmetric_weight=5)
    )
    assert plugin.name == "ipa"
    assert plugin.hard_pod_affinity_weight == 5
    snapshot = Snapshot([])
    assert plugin.pre_score(PodInfo(pod(labels=S1)), snapshot, []) is SKIP


def test_opposite_weights_cancel_to_skip() -> None:
    aff = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                weighted(5, "az", expr("security", "Exists"))
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                weighted(5, "az", expr("security", "Exists"))
            ]
        },
    }
    plugin = InterPodAffinityPriority(PluginArgs(names.INTER_POD_AFFINITY))
    result = run_priority(plugin, pod(aff=aff), (node("m1", AZ1),), (pod("m1", S1),))
    assert result.final == [0]


def test_hard_weight_scales_the_symmetry() -> None:
    nodes = (node("machine1", CHINA), node("machine2", INDIA), node("machine3", CHINA))
    pods = (
        pod("machine1", aff=HARD_POD_AFFINITY),
        pod(
            "machine2",
            S1,
            aff={
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        weighted(3, "region", expr("service", "Exists"))
                    ]
                }
            },
        ),
    )
    plugin = InterPodAffinityPriority(
        PluginArgs(names.INTER_POD_AFFINITY, hard_pod_affinity_symmetric_weight=10)
    )
    result = run_priority(plugin, pod(labels=SERVICE_S1), nodes, pods)
    assert result.raw == [10, 3, 10]
    assert result.final == [MAX, 3, MAX]


def test_invalid_selector_is_an_error() -> None:
    bad = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                weighted(1, "az", expr("security", "In"))
            ]
        }
    }
    plugin = InterPodAffinityPriority(PluginArgs(names.INTER_POD_AFFINITY))
    with pytest.raises(PredicateError, match="invalid label selector"):
        run_priority(plugin, pod(labels=S1), (node("m1", AZ1),), (pod("m1", S1, bad),))


def test_pods_on_rows_without_node_are_skipped() -> None:
    from podium.actors.framework.nodeinfo import NodeInfo

    plugin = InterPodAffinityPriority(PluginArgs(names.INTER_POD_AFFINITY))
    ghost = NodeInfo(name="ghost", pods=[PodInfo(pod("ghost", S1))])
    real = NodeInfo(node("m1", AZ1))
    infos: Sequence[NodeInfo] = [real, ghost]
    meta = plugin.pre_score(PodInfo(pod(aff=AWAY_FROM_S1_IN_AZ)), Snapshot(infos), infos)
    assert meta is SKIP
