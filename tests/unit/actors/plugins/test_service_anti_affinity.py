"""ServiceAntiAffinityPriority, scalar and vector map forms.

Rows are ported from pkg/scheduler/algorithm/priorities/selector_spreading_test.go@v1.14
TestZoneSpreadPriority (9 rows, label "zone"), keeping their names. As in
test_selector_spread.py, the Go rows' empty namespace is spelled ``NS_EMPTY`` (Podium reads ""
as "default", which the rows use as a different namespace). TestGetNodeClassificationByLabels
tests a helper v1.14 never calls from the priority; it has no Podium counterpart.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np
import pytest
from builders import decode, make_node, make_pod

from podium.actors.framework.interface import (
    MAX_PRIORITY,
    SKIP,
    PluginArgs,
    VectorScorePlugin,
    run_score,
    run_score_columns,
)
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.service_anti_affinity import (
    FACTORIES,
    ServiceAntiAffinity,
    anti_affinity_reduce,
)
from podium.protocol import objects as o

MAX = MAX_PRIORITY
NS_EMPTY = "ns-empty"
"""The Go rows' empty namespace (see the module docstring)."""

_names = itertools.count()


def pod(
    node: str = "",
    labels: Mapping[str, str] | None = None,
    ns: str = NS_EMPTY,
    *,
    deleting: bool = False,
) -> o.Pod:
    b = make_pod(f"p{next(_names)}").ns(ns)
    if labels:
        b.labels(dict(labels))
    if node:
        b.node(node)
    if deleting:
        b.d["metadata"]["deletionTimestamp"] = "2019-03-25T00:00:00Z"
    return b.obj()


def svc(selector: Mapping[str, str], ns: str = NS_EMPTY) -> o.Service:
    meta = {"name": f"svc{next(_names)}", "namespace": ns}
    obj: o.Service = decode(o.Service, {"metadata": meta, "spec": {"selector": dict(selector)}})
    return obj


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    want: Mapping[str, int]
    pods: Sequence[o.Pod] = ()
    services: Sequence[o.Service] = ()
    nodes: Sequence[tuple[str, Mapping[str, str]]] = ()
    label: str = "zone"
    feasible: Sequence[str] = field(default=())


def run(case: Case) -> dict[str, int]:
    """pre_score, map (scalar and vector, which must agree), reduce; name -> score."""
    plugin = ServiceAntiAffinity(PluginArgs(name="ZoneSpread", label=case.label))
    objects = ClusterObjects(
        services={
            f"{s.metadata.namespace or 'default'}/{s.metadata.name}": s for s in case.services
        }
    )
    infos = [
        make_node(name)
        .labels(dict(labels))
        .info(*(p for p in case.pods if p.spec.node_name == name))
        for name, labels in case.nodes or LABELED_NODES
    ]
    snap = Snapshot(infos, objects)
    feasible = [n for n in infos if not case.feasible or n.name in case.feasible]
    rows = np.array([snap.columns.index[n.name] for n in feasible], dtype=np.intp)
    p = PodInfo(case.pod)
    meta = plugin.pre_score(p, snap, feasible)
    scalar = run_score(plugin, p, meta, feasible)
    vector = run_score_columns(plugin, p, meta, snap.columns, rows)
    assert vector.dtype == np.int64
    assert vector.tolist() == scalar
    got = plugin.normalize(p, meta, feasible, scalar)
    return {n.name: s for n, s in zip(feasible, got, strict=True)}


# --------------------------------------------------------------------------- TestZoneSpreadPriority

L1 = {"foo": "bar", "baz": "blah"}
L2 = {"bar": "foo", "baz": "blah"}
Z0, Z1, Z2 = "machine01", "machine11", "machine21"  # the nodes the rows' pods run on
LABELED_NODES: tuple[tuple[str, Mapping[str, str]], ...] = (
    ("machine01", {"name": "value"}),
    ("machine02", {"name": "value"}),
    ("machine11", {"zone": "zone1"}),
    ("machine12", {"zone": "zone1"}),
    ("machine21", {"zone": "zone2"}),
    ("machine22", {"zone": "zone2"}),
)


def scores(zone1: int, zone2: int) -> dict[str, int]:
    """zone1's nodes, zone2's nodes, and 0 for the two nodes without the label."""
    return {
        "machine11": zone1,
        "machine12": zone1,
        "machine21": zone2,
        "machine22": zone2,
        "machine01": 0,
        "machine02": 0,
    }


# selector_spreading_test.go@v1.14 TestZoneSpreadPriority (9 rows).
ZONE_SPREAD_CASES = [
    Case("nothing scheduled", pod(), scores(MAX, MAX)),
    Case("no services", pod(labels=L1), scores(MAX, MAX), pods=[pod(Z1)]),
    Case(
        "different services",
        pod(labels=L1),
        scores(MAX, MAX),
        pods=[pod(Z1, L2)],
        services=[svc({"key": "value"})],
    ),
    Case(
        "three pods, one service pod",
        pod(labels=L1),
        scores(MAX, 0),
        pods=[pod(Z0, L2), pod(Z1, L2), pod(Z2, L1)],
        services=[svc(L1)],
    ),
    Case(
        "three pods, two service pods on different machines",
        pod(labels=L1),
        scores(5, 5),
        pods=[pod(Z1, L2), pod(Z1, L1), pod(Z2, L1)],
        services=[svc(L1)],
    ),
    Case(
        "three service label match pods in different namespaces",
        pod(labels=L1, ns="default"),
        scores(0, MAX),
        pods=[pod(Z1, L1), pod(Z1, L1, "default"), pod(Z2, L1), pod(Z2, L1, "ns1")],
        services=[svc(L1, "default")],
    ),
    Case(
        "four pods, three service pods",
        pod(labels=L1),
        scores(6, 3),
        pods=[pod(Z1, L2), pod(Z1, L1), pod(Z2, L1), pod(Z2, L1)],
        services=[svc(L1)],
    ),
    Case(
        "service with partial pod label matches",
        pod(labels=L1),
        scores(3, 6),
        pods=[pod(Z1, L2), pod(Z1, L1), pod(Z2, L1)],
        services=[svc({"baz": "blah"})],
    ),
    # The pod on the unlabeled machine01 counts in the total, not in any zone.
    Case(
        "service pod on non-zoned node",
        pod(labels=L1),
        scores(7, 5),
        pods=[pod(Z0, L1), pod(Z1, L1), pod(Z2, L1), pod(Z2, L1)],
        services=[svc(L1)],
    ),
]

# --------------------------------------------------------------------------- Podium rows

PODIUM_CASES = [
    Case(
        "pods being deleted do not count",
        pod(labels=L1),
        scores(MAX, 0),
        pods=[pod(Z1, L1, deleting=True), pod(Z2, L1)],
        services=[svc(L1)],
    ),
    # Only the first Service (by name) counts: "a" selects baz=blah (both label sets), "b" only
    # labels1 pods. With "a": zone1 2 of 3, zone2 1 of 3.
    Case(
        "only the first service by name counts",
        pod(labels=L1),
        scores(3, 6),
        pods=[pod(Z1, L2), pod(Z1, L1), pod(Z2, L1)],
        services=[
            o.Service(
                metadata=o.ObjectMeta(name="b", namespace=NS_EMPTY), spec=o.ServiceSpec(selector=L1)
            ),
            o.Service(
                metadata=o.ObjectMeta(name="a", namespace=NS_EMPTY),
                spec=o.ServiceSpec(selector={"baz": "blah"}),
            ),
        ],
    ),
    Case(
        "a service with an empty selector selects nothing",
        pod(labels=L1),
        scores(MAX, MAX),
        pods=[pod(Z1, L1)],
        services=[svc({})],
    ),
    Case(
        "the label is the policy argument's",
        pod(labels=L1),
        {"n1": 0, "n2": MAX, "n3": 0},
        pods=[pod("n1", L1)],
        services=[svc(L1)],
        nodes=(("n1", {"rack": "r1"}), ("n2", {"rack": "r2"}), ("n3", {"zone": "zone1"})),
        label="rack",
    ),
    # The total and the per-value counts come from the feasible nodes only.
    Case(
        "counts come from the feasible nodes only",
        pod(labels=L1),
        {"machine12": 5, "machine22": 5},
        pods=[
            pod("machine11", L1),
            pod("machine11", L1),
            pod("machine12", L1),
            pod("machine22", L1),
        ],
        services=[svc(L1)],
        feasible=("machine12", "machine22"),
    ),
]


@pytest.mark.parametrize("case", ZONE_SPREAD_CASES, ids=attrgetter("name"))
def test_zone_spread_priority(case: Case) -> None:
    assert run(case) == case.want


@pytest.mark.parametrize("case", PODIUM_CASES, ids=attrgetter("name"))
def test_service_anti_affinity_podium_rows(case: Case) -> None:
    assert run(case) == case.want


def test_factory_reports_under_the_entry_name() -> None:
    assert set(FACTORIES) == {names.SERVICE_ANTI_AFFINITY}
    plugin = FACTORIES[names.SERVICE_ANTI_AFFINITY](PluginArgs(name="ZoneSpread", label="zone"))
    assert isinstance(plugin, ServiceAntiAffinity)
    assert isinstance(plugin, VectorScorePlugin)
    assert (plugin.name, plugin.label) == ("ZoneSpread", "zone")


def test_reduce() -> None:
    assert anti_affinity_reduce([], []) == []
    assert anti_affinity_reduce([0, 0, 0], ["a", None, "b"]) == [MAX, 0, MAX]
    # total 4 (the unlabeled node's pod included): a 1 -> 7.5 -> 7, b 2 -> 5
    assert anti_affinity_reduce([1, 1, 2], [None, "a", "b"]) == [0, 7, 5]


def test_skip_without_a_service() -> None:
    infos = [make_node("n1").label("zone", "z").info(pod("n1", L1)), make_node("n2").info()]
    snap = Snapshot(infos, ClusterObjects())
    plugin = ServiceAntiAffinity(PluginArgs(name="ZoneSpread", label="zone"))
    p = PodInfo(pod(labels=L1))
    meta = plugin.pre_score(p, snap, infos)
    assert meta is SKIP
    assert plugin.normalize(p, meta, infos, [0, 0]) == [MAX, 0]
