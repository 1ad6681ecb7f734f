"""SelectorSpreadPriority and ServiceSpreadingPriority, scalar and vector map forms.

Rows are ported from pkg/scheduler/algorithm/priorities/selector_spreading_test.go@v1.14
(TestSelectorSpreadPriority: 22 rows, TestZoneSelectorSpreadPriority: 9 rows), keeping their
names; Go repeats one name, which gets a " #2" suffix here. Six TestSelectorSpreadPriority rows
carry the expectations and names of kubernetes PR #72801 (in v1.14: the counted pods must match
*every* selector), as the tests that came with that change have them. The Go rows use both "" and
"default" as *distinct* namespaces; Podium, like the API server, reads "" as "default", so the
rows' "" is spelled ``NS_EMPTY`` here (a namespace of its own), which keeps every row's meaning.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeVar

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
from podium.actors.framework.zones import LABEL_REGION_GA, LABEL_ZONE_BETA, LABEL_ZONE_GA
from podium.actors.plugins import names
from podium.actors.plugins.selector_spread import (
    FACTORIES,
    ZONE_WEIGHTING,
    SelectorSpread,
    ServiceSpreading,
    pod_selectors,
    spread_reduce,
)
from podium.protocol import objects as o

NS_EMPTY = "ns-empty"
"""The Go rows' empty namespace (see the module docstring)."""

MAX = MAX_PRIORITY
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


T = TypeVar("T")


def _decode(kind: type[T], data: dict[str, Any]) -> T:
    obj: T = decode(kind, data)
    return obj


def _meta(kind: str, ns: str) -> dict[str, Any]:
    return {"name": f"{kind}{next(_names)}", "namespace": ns}


def svc(selector: Mapping[str, str], ns: str = NS_EMPTY) -> o.Service:
    return _decode(o.Service, {"metadata": _meta("svc", ns), "spec": {"selector": dict(selector)}})


def rc(selector: Mapping[str, str], ns: str = NS_EMPTY) -> o.ReplicationController:
    return _decode(
        o.ReplicationController, {"metadata": _meta("rc", ns), "spec": {"selector": dict(selector)}}
    )


def _label_selector(
    match_labels: Mapping[str, str] | None, exprs: list[dict[str, Any]] | None
) -> dict[str, Any]:
    sel: dict[str, Any] = {}
    if match_labels is not None:
        sel["matchLabels"] = dict(match_labels)
    if exprs is not None:
        sel["matchExpressions"] = exprs
    return sel


def rs(
    match_labels: Mapping[str, str] | None = None,
    ns: str = NS_EMPTY,
    *,
    exprs: list[dict[str, Any]] | None = None,
) -> o.ReplicaSet:
    return _decode(
        o.ReplicaSet,
        {"metadata": _meta("rs", ns), "spec": {"selector": _label_selector(match_labels, exprs)}},
    )


def ss(
    match_labels: Mapping[str, str] | None = None,
    ns: str = NS_EMPTY,
    *,
    exprs: list[dict[str, Any]] | None = None,
) -> o.StatefulSet:
    return _decode(
        o.StatefulSet,
        {"metadata": _meta("ss", ns), "spec": {"selector": _label_selector(match_labels, exprs)}},
    )


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    nodes: Sequence[tuple[str, Mapping[str, str]]]
    want: Mapping[str, int]
    pods: Sequence[o.Pod] = ()
    services: Sequence[o.Service] = ()
    rcs: Sequence[o.ReplicationController] = ()
    rss: Sequence[o.ReplicaSet] = ()
    sss: Sequence[o.StatefulSet] = ()
    # Score only these nodes (the feasible ones); all nodes when empty.
    feasible: Sequence[str] = field(default=())

    @property
    def has_controllers(self) -> bool:
        return bool(self.rcs or self.rss or self.sss)


def _key(obj: Any) -> str:
    return f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"


def run(plugin: VectorScorePlugin[Any], case: Case) -> dict[str, int]:
    """pre_score, map (scalar and vector, which must agree), reduce; name -> score."""
    objects = ClusterObjects(
        services={_key(x): x for x in case.services},
        replication_controllers={_key(x): x for x in case.rcs},
        replica_sets={_key(x): x for x in case.rss},
        stateful_sets={_key(x): x for x in case.sss},
    )
    infos = [
        make_node(name)
        .labels(dict(labels))
        .info(*(p for p in case.pods if p.spec.node_name == name))
        for name, labels in case.nodes
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


# --------------------------------------------------------------------------- TestSelectorSpreadPriority

L1 = {"foo": "bar", "baz": "blah"}
L2 = {"bar": "foo", "baz": "blah"}
FOO_BAR_BAR_FOO = {"foo": "bar", "bar": "foo"}
M1, M2 = "machine1", "machine2"
TWO_NODES: tuple[tuple[str, Mapping[str, str]], ...] = ((M1, {}), (M2, {}))


def both(m1: int, m2: int) -> dict[str, int]:
    return {M1: m1, M2: m2}


# selector_spreading_test.go@v1.14 TestSelectorSpreadPriority (22 rows).
SPREAD_CASES = [
    Case("nothing scheduled", pod(), TWO_NODES, both(MAX, MAX)),
    Case("no services", pod(labels=L1), TWO_NODES, both(MAX, MAX), pods=[pod(M1)]),
    Case(
        "different services",
        pod(labels=L1),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1, L2)],
        services=[svc({"key": "value"})],
    ),
    Case(
        "two pods, one service pod",
        pod(labels=L1),
        TWO_NODES,
        both(MAX, 0),
        pods=[pod(M1, L2), pod(M2, L1)],
        services=[svc(L1)],
    ),
    Case(
        "five pods, one service pod in no namespace",
        pod(labels=L1),
        TWO_NODES,
        both(MAX, 0),
        pods=[pod(M1, L2), pod(M1, L1, "default"), pod(M1, L1, "ns1"), pod(M2, L1), pod(M2, L2)],
        services=[svc(L1)],
    ),
    Case(
        "four pods, one service pod in default namespace",
        pod(labels=L1, ns="default"),
        TWO_NODES,
        both(MAX, 0),
        pods=[pod(M1, L1), pod(M1, L1, "ns1"), pod(M2, L1, "default"), pod(M2, L2)],
        services=[svc(L1, "default")],
    ),
    Case(
        "five pods, one service pod in specific namespace",
        pod(labels=L1, ns="ns1"),
        TWO_NODES,
        both(MAX, 0),
        pods=[
            pod(M1, L1),
            pod(M1, L1, "default"),
            pod(M1, L1, "ns2"),
            pod(M2, L1, "ns1"),
            pod(M2, L2),
        ],
        services=[svc(L1, "ns1")],
    ),
    Case(
        "three pods, two service pods on different machines",
        pod(labels=L1),
        TWO_NODES,
        both(0, 0),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        services=[svc(L1)],
    ),
    Case(
        "four pods, three service pods",
        pod(labels=L1),
        TWO_NODES,
        both(5, 0),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1), pod(M2, L1)],
        services=[svc(L1)],
    ),
    Case(
        "service with partial pod label matches",
        pod(labels=L1),
        TWO_NODES,
        both(0, 5),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        services=[svc({"baz": "blah"})],
    ),
    # "baz=blah" matches both labels1 and labels2, and "foo=bar" matches only labels1: the pods
    # counted must match every selector, so pod2 and pod3 are spread and pod1 is not.
    Case(
        "service with partial pod label matches with service and replication controller",
        pod(labels=L1),
        TWO_NODES,
        both(0, 0),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        rcs=[rc({"foo": "bar"})],
        services=[svc({"baz": "blah"})],
    ),
    Case(
        "service with partial pod label matches with service and replica set",
        pod(labels=L1),
        TWO_NODES,
        both(0, 0),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        services=[svc({"baz": "blah"})],
        rss=[rs({"foo": "bar"})],
    ),
    Case(
        "service with partial pod label matches with service and stateful set",
        pod(labels=L1),
        TWO_NODES,
        both(0, 0),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        services=[svc({"baz": "blah"})],
        sss=[ss({"foo": "bar"})],
    ),
    # Taken together the Service and the controller match no pod.
    Case(
        "disjoined service and replication controller matches no pods",
        pod(labels=FOO_BAR_BAR_FOO),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        rcs=[rc({"foo": "bar"})],
        services=[svc({"bar": "foo"})],
    ),
    Case(
        "disjoined service and replica set matches no pods",
        pod(labels=FOO_BAR_BAR_FOO),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        services=[svc({"bar": "foo"})],
        rss=[rs({"foo": "bar"})],
    ),
    Case(
        "disjoined service and stateful set matches no pods",
        pod(labels=FOO_BAR_BAR_FOO),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        services=[svc({"bar": "foo"})],
        sss=[ss({"foo": "bar"})],
    ),
    Case(
        "Replication controller with partial pod label matches",
        pod(labels=L1),
        TWO_NODES,
        both(0, 0),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        rcs=[rc({"foo": "bar"})],
    ),
    Case(
        "Replica set with partial pod label matches",
        pod(labels=L1),
        TWO_NODES,
        both(0, 0),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        rss=[rs({"foo": "bar"})],
    ),
    Case(
        "StatefulSet with partial pod label matches",
        pod(labels=L1),
        TWO_NODES,
        both(0, 0),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        sss=[ss({"foo": "bar"})],
    ),
    Case(
        "Another replication controller with partial pod label matches",
        pod(labels=L1),
        TWO_NODES,
        both(0, 5),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        rcs=[rc({"baz": "blah"})],
    ),
    Case(
        "Another replication set with partial pod label matches",
        pod(labels=L1),
        TWO_NODES,
        both(0, 5),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        rss=[rs({"baz": "blah"})],
    ),
    Case(
        "Another stateful set with partial pod label matches",
        pod(labels=L1),
        TWO_NODES,
        both(0, 5),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        sss=[ss({"baz": "blah"})],
    ),
]

# --------------------------------------------------------------------------- TestZoneSelectorSpreadPriority

ZL1 = {"label1": "l1", "baz": "blah"}
ZL2 = {"label2": "l2", "baz": "blah"}
M1Z1, M1Z2, M2Z2 = "machine1.zone1", "machine1.zone2", "machine2.zone2"
M1Z3, M2Z3, M3Z3 = "machine1.zone3", "machine2.zone3", "machine3.zone3"
ZONED_NODES: tuple[tuple[str, Mapping[str, str]], ...] = (
    (M1Z1, {LABEL_ZONE_BETA: "zone1"}),
    (M1Z2, {LABEL_ZONE_BETA: "zone2"}),
    (M2Z2, {LABEL_ZONE_BETA: "zone2"}),
    (M1Z3, {LABEL_ZONE_BETA: "zone3"}),
    (M2Z3, {LABEL_ZONE_BETA: "zone3"}),
    (M3Z3, {LABEL_ZONE_BETA: "zone3"}),
)


def zoned(m1z1: int, m1z2: int, m2z2: int, m1z3: int, m2z3: int, m3z3: int) -> dict[str, int]:
    return {M1Z1: m1z1, M1Z2: m1z2, M2Z2: m2z2, M1Z3: m1z3, M2Z3: m2z3, M3Z3: m3z3}


ALL_MAX = zoned(MAX, MAX, MAX, MAX, MAX, MAX)

# selector_spreading_test.go@v1.14 TestZoneSelectorSpreadPriority (9 rows).
ZONE_SPREAD_CASES = [
    Case("nothing scheduled", pod(), ZONED_NODES, ALL_MAX),
    Case("no services", pod(labels=ZL1), ZONED_NODES, ALL_MAX, pods=[pod(M1Z1)]),
    Case(
        "different services",
        pod(labels=ZL1),
        ZONED_NODES,
        ALL_MAX,
        pods=[pod(M1Z1, ZL2)],
        services=[svc({"key": "value"})],
    ),
    Case(
        "two pods, 0 matching",
        pod(labels=ZL1),
        ZONED_NODES,
        ALL_MAX,
        pods=[pod(M1Z1, ZL2), pod(M1Z2, ZL2)],
        services=[svc(ZL1)],
    ),
    Case(
        "two pods, 1 matching (in z2)",
        pod(labels=ZL1),
        ZONED_NODES,
        # pod on machine1.zone2; machine2.zone2 already has one in its zone
        zoned(MAX, 0, 3, MAX, MAX, MAX),
        pods=[pod(M1Z1, ZL2), pod(M1Z2, ZL1)],
        services=[svc(ZL1)],
    ),
    Case(
        "five pods, 3 matching (z2=2, z3=1)",
        pod(labels=ZL1),
        ZONED_NODES,
        zoned(MAX, 0, 0, 6, 3, 6),
        pods=[pod(M1Z1, ZL2), pod(M1Z2, ZL1), pod(M2Z2, ZL1), pod(M1Z3, ZL2), pod(M2Z3, ZL1)],
        services=[svc(ZL1)],
    ),
    Case(
        "four pods, 3 matching (z1=1, z2=1, z3=1)",
        pod(labels=ZL1),
        ZONED_NODES,
        zoned(0, 0, 3, 0, 3, 3),
        pods=[pod(M1Z1, ZL1), pod(M1Z2, ZL1), pod(M2Z2, ZL2), pod(M1Z3, ZL1)],
        services=[svc(ZL1)],
    ),
    Case(
        "four pods, 3 matching (z1=1, z2=1, z3=1) #2",
        pod(labels=ZL1),
        ZONED_NODES,
        zoned(0, 0, 3, 0, 3, 3),
        pods=[pod(M1Z1, ZL1), pod(M1Z2, ZL1), pod(M1Z3, ZL1), pod(M2Z2, ZL2)],
        services=[svc(ZL1)],
    ),
    # Two pods on machine1.zone3: zone1 is still most favoured, zone3 least, m1.z3 lowest.
    Case(
        "Replication controller spreading (z1=0, z2=1, z3=2)",
        pod(labels=ZL1),
        ZONED_NODES,
        zoned(MAX, 5, 6, 0, 3, 3),
        pods=[pod(M1Z3, ZL1), pod(M1Z2, ZL1), pod(M1Z3, ZL1)],
        rcs=[rc(ZL1)],
    ),
]

# --------------------------------------------------------------------------- Podium rows

A, B, C = "node-a", "node-b", "node-c"
PODIUM_CASES = [
    Case(
        "pods being deleted do not count",
        pod(labels=L1),
        TWO_NODES,
        both(MAX, 0),
        pods=[pod(M1, L1, deleting=True), pod(M2, L1)],
        services=[svc(L1)],
    ),
    Case(
        "an empty namespace is the default namespace",
        pod(labels=L1, ns=""),
        TWO_NODES,
        both(0, MAX),
        pods=[pod(M1, L1, "default"), pod(M2, L1, "other")],
        services=[svc(L1, "")],
    ),
    Case(
        "a service in another namespace does not select the pod",
        pod(labels=L1, ns="default"),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1, L1, "default")],
        services=[svc(L1, "other")],
    ),
    Case(
        "a service with an empty selector selects nothing",
        pod(labels=L1),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1, L1)],
        services=[svc({})],
    ),
    Case(
        "a replica set with an empty selector selects nothing",
        pod(labels=L1),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1, L1)],
        rss=[rs({})],
    ),
    Case(
        "a replica set with an invalid selector selects nothing",
        pod(labels=L1),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1, L1)],
        rss=[rs(exprs=[{"key": "foo", "operator": "In"}])],
    ),
    Case(
        "controllers do not select a pod without labels",
        pod(),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1)],
        sss=[ss(exprs=[{"key": "foo", "operator": "DoesNotExist"}])],
    ),
    Case(
        "replica set match expressions count",
        pod(labels=L1),
        TWO_NODES,
        both(0, MAX),
        pods=[pod(M1, L1), pod(M2, L2)],
        rss=[rs(exprs=[{"key": "foo", "operator": "In", "values": ["bar", "x"]}])],
    ),
    Case(
        "siblings match every selector, expressions included",
        pod(labels=L1),
        TWO_NODES,
        both(MAX, 0),
        pods=[pod(M1, L2), pod(M2, L1)],
        services=[svc({"baz": "blah"})],
        rss=[rs(exprs=[{"key": "foo", "operator": "Exists"}])],
    ),
    Case(
        "GA topology labels give the zone when the beta ones are absent",
        pod(labels=L1),
        ((A, {LABEL_ZONE_GA: "z1"}), (B, {LABEL_ZONE_GA: "z1"}), (C, {LABEL_ZONE_GA: "z2"})),
        {A: 0, B: 3, C: MAX},
        pods=[pod(A, L1)],
        services=[svc(L1)],
    ),
    Case(
        "the beta zone label wins over the GA one",
        pod(labels=L1),
        (
            (A, {LABEL_ZONE_BETA: "z1", LABEL_ZONE_GA: "z9"}),
            (B, {LABEL_ZONE_BETA: "z1"}),
            (C, {LABEL_ZONE_GA: "z1"}),
        ),
        # Were the GA label read first, node-a would sit alone in z9 and B, C would score 10.
        {A: 0, B: 3, C: 3},
        pods=[pod(A, L1)],
        services=[svc(L1)],
    ),
    Case(
        "a region alone is a zone",
        pod(labels=L1),
        ((A, {LABEL_REGION_GA: "r1"}), (B, {LABEL_REGION_GA: "r1"}), (C, {LABEL_REGION_GA: "r2"})),
        {A: 0, B: 3, C: MAX},
        pods=[pod(A, L1)],
        services=[svc(L1)],
    ),
    Case(
        "zoned and unzoned nodes: only zoned ones blend in the zone score",
        pod(labels=L1),
        ((A, {LABEL_ZONE_BETA: "z1"}), (B, {LABEL_ZONE_BETA: "z2"}), (C, {})),
        # A: 0/3 + 0*2/3; B: 10/3 + 10*2/3; C (no zone): node score 10 only.
        {A: 0, B: MAX, C: MAX},
        pods=[pod(A, L1), pod(A, L1)],
        services=[svc(L1)],
    ),
    # v1.14 sums zone counts over the feasible nodes only (the map results), not the cluster.
    Case(
        "zone counts come from the feasible nodes only",
        pod(labels=L1),
        ((A, {LABEL_ZONE_BETA: "z1"}), (B, {LABEL_ZONE_BETA: "z1"}), (C, {LABEL_ZONE_BETA: "z2"})),
        # Counting node-a's three pods too would give z1=3, z2=1: B 3, C 4.
        {B: MAX, C: 0},
        pods=[pod(A, L1), pod(A, L1), pod(A, L1), pod(C, L1)],
        services=[svc(L1)],
        feasible=(B, C),
    ),
]


def _spread() -> SelectorSpread:
    return SelectorSpread(PluginArgs(name=names.SELECTOR_SPREAD))


@pytest.mark.parametrize("case", SPREAD_CASES, ids=attrgetter("name"))
def test_selector_spread_priority(case: Case) -> None:
    assert run(_spread(), case) == case.want


@pytest.mark.parametrize("case", ZONE_SPREAD_CASES, ids=attrgetter("name"))
def test_zone_selector_spread_priority(case: Case) -> None:
    assert run(_spread(), case) == case.want


@pytest.mark.parametrize("case", PODIUM_CASES, ids=attrgetter("name"))
def test_selector_spread_podium_rows(case: Case) -> None:
    assert run(_spread(), case) == case.want


# --------------------------------------------------------------------------- ServiceSpreadingPriority

# Where a row names Services only, ServiceSpreadingPriority gives SelectorSpread's answer.
SERVICE_ONLY_ROWS = [
    pytest.param(c, id=f"{group}: {c.name}")
    for group, cases in (
        ("TestSelectorSpreadPriority", SPREAD_CASES),
        ("TestZoneSelectorSpreadPriority", ZONE_SPREAD_CASES),
        ("podium", PODIUM_CASES),
    )
    for c in cases
    if not c.has_controllers
]

SERVICE_SPREADING_CASES = [
    Case(
        "replication controllers are not counted",
        pod(labels=L1),
        TWO_NODES,
        both(MAX, MAX),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        rcs=[rc({"foo": "bar"})],
    ),
    # SelectorSpread gives (10, 10) here: with the RC no pod matches both selectors.
    Case(
        "disjoined service and replication controller: the service alone counts",
        pod(labels=FOO_BAR_BAR_FOO),
        TWO_NODES,
        both(0, MAX),
        pods=[pod(M1, L2), pod(M1, L1), pod(M2, L1)],
        rcs=[rc({"foo": "bar"})],
        services=[svc({"bar": "foo"})],
    ),
    Case(
        "replica sets and stateful sets are not counted",
        pod(labels=ZL1),
        ZONED_NODES,
        ALL_MAX,
        pods=[pod(M1Z3, ZL1), pod(M1Z2, ZL1)],
        rss=[rs(ZL1)],
        sss=[ss(ZL1)],
    ),
]


def _service_spreading() -> SelectorSpread:
    return FACTORIES[names.SERVICE_SPREADING](PluginArgs(name=names.SERVICE_SPREADING))


@pytest.mark.parametrize("case", SERVICE_ONLY_ROWS)
def test_service_spreading_priority_on_service_rows(case: Case) -> None:
    assert run(_service_spreading(), case) == case.want


@pytest.mark.parametrize("case", SERVICE_SPREADING_CASES, ids=attrgetter("name"))
def test_service_spreading_priority(case: Case) -> None:
    assert run(_service_spreading(), case) == case.want


# --------------------------------------------------------------------------- pieces


def test_factories_and_names() -> None:
    assert set(FACTORIES) == {names.SELECTOR_SPREAD, names.SERVICE_SPREADING}
    plugin = FACTORIES[names.SELECTOR_SPREAD](PluginArgs(name="spread"))
    assert isinstance(plugin, SelectorSpread)
    assert not isinstance(plugin, ServiceSpreading)
    assert plugin.name == "spread"
    assert isinstance(plugin, VectorScorePlugin)
    assert isinstance(_service_spreading(), ServiceSpreading)


def test_zone_weighting_is_two_thirds() -> None:
    assert ZONE_WEIGHTING == 2.0 / 3.0


@pytest.mark.parametrize(
    "zones",
    [["", ""], ["a", "b", ""], ["a", "a", "a"], ["", "a"]],
    ids=["no zones", "mixed", "one zone", "some zoned"],
)
def test_all_zero_counts_give_max_everywhere(zones: list[str]) -> None:
    # The SKIP shortcut in normalize must equal the formula on all-zero counts.
    assert spread_reduce([0] * len(zones), zones) == [MAX] * len(zones)


def test_reduce_truncates_like_go() -> None:
    # counts 1, 3, 0; zones z1=1, z2=3. Node 0: 10*(2/3)/3 + 10*(2/3)*(2/3) = 6.67 -> 6;
    # node 2: 10/3 + 6.67*(2/3) = 7.78 -> 7.
    assert spread_reduce([1, 3, 0], ["z1", "z2", "z1"]) == [6, 0, 7]


def test_skip_when_nothing_selects_the_pod() -> None:
    infos = [make_node(M1).info(pod(M1, L1))]
    snap = Snapshot(infos, ClusterObjects())
    p = PodInfo(pod(labels=L1))
    plugin = _spread()
    meta = plugin.pre_score(p, snap, infos)
    assert meta is SKIP
    assert plugin.normalize(p, meta, infos, [0]) == [MAX]


def test_selectors_in_kubernetes_order() -> None:
    objects = ClusterObjects(
        services={"ns-empty/s": svc({"baz": "blah"})},
        replication_controllers={"ns-empty/r": rc({"foo": "bar"})},
        replica_sets={"ns-empty/rs": rs({"foo": "bar"})},
        stateful_sets={"ns-empty/ss": ss(exprs=[{"key": "baz", "operator": "Exists"}])},
    )
    p = PodInfo(pod(labels=L1))
    got = pod_selectors(p, objects)
    assert [dict(s.match_labels) for s in got] == [
        {"baz": "blah"},
        {"foo": "bar"},
        {"foo": "bar"},
        {},
    ]
    assert [len(s.match_expressions) for s in got] == [0, 0, 0, 1]
    assert len(pod_selectors(p, objects, services_only=True)) == 1


def test_vector_form_visits_a_row_subset() -> None:
    infos = [make_node(f"n{i}").info(*[pod(f"n{i}", L1) for _ in range(i % 3)]) for i in range(7)]
    snap = Snapshot(infos, ClusterObjects(services={"ns-empty/s": svc(L1)}))
    p = PodInfo(pod(labels=L1))
    plugin = _spread()
    meta = plugin.pre_score(p, snap, infos)
    rows = np.array([6, 1, 3, 2], dtype=np.intp)
    assert meta is not SKIP
    assert plugin.score_columns(p, meta, snap.columns, rows).tolist() == [0, 1, 0, 2]
    assert plugin.score_columns(p, meta, snap.columns, np.array([], dtype=np.intp)).tolist() == []


def _reduce_reference(scores: list[int], zones: list[str]) -> list[int]:
    """The v1.14 reduce as a scalar float loop, to hold the numpy form to it."""
    max_node = max(scores, default=0)
    by_zone: dict[str, int] = {}
    for zone, count in zip(zones, scores, strict=True):
        if zone:
            by_zone[zone] = by_zone.get(zone, 0) + count
    max_zone = max(by_zone.values(), default=0)
    out = []
    for zone, count in zip(zones, scores, strict=True):
        f = 10.0 if max_node == 0 else 10.0 * (float(max_node - count) / float(max_node))
        if by_zone and zone:
            zs = (
                10.0
                if max_zone == 0
                else 10.0 * (float(max_zone - by_zone[zone]) / float(max_zone))
            )
            f = (f * (1.0 - 2.0 / 3.0)) + (2.0 / 3.0 * zs)
        out.append(int(f))
    return out


def test_reduce_matches_the_scalar_reference() -> None:
    rng = random.Random(1414)
    for _ in range(300):
        n = rng.randint(1, 40)
        scores = [rng.choice([0, 0, 1, 2, 3, 7, 11]) for _ in range(n)]
        zones = [rng.choice(["", "a", "b", "c", "d"]) for _ in range(n)]
        assert spread_reduce(scores, zones) == _reduce_reference(scores, zones), (scores, zones)


def test_siblings_compare_by_what_their_selector_selects() -> None:
    """The metadata of two pods of one class compare equal (their selectors compiled apart),
    so the ring's class scores are kept from pod to pod."""
    from podium.actors.plugins.selector_spread import Siblings
    from podium.protocol.objects import LabelSelector

    selector = LabelSelector(match_labels={"app": "a"})
    one, two = Siblings.of("default", [selector]), Siblings.of("default", [selector])
    assert one is not None and two is not None and one.selector is not two.selector
    assert one == two and hash(one) == hash(two)
    assert one != Siblings.of("other", [selector])
    assert one != Siblings.of("default", [LabelSelector(match_labels={"app": "b"})])
