"""EvenPodsSpread and EvenPodsSpreadPriority (Kubernetes' PodTopologySpread), both forms.

Rows are ported from Kubernetes' pkg/scheduler/framework/plugins/podtopologyspread (the stored
release-1.20 copies, whose semantics are 1.19's: ``TpPairToMatchNum``/``TpKeyToCriticalPaths``,
scores truncated with ``int64(score)``), keeping their names:

- filtering_test.go: TestSingleConstraint (11/11 rows), TestMultipleConstraints (7/7),
  TestPreFilterState (10/13: the 3 rows about cluster default constraints do not apply, Podium
  has none), TestPreFilterStateAddPod (9/9) and TestPreFilterStateRemovePod (5/5), the last two
  as ``pre_filter`` recomputed over a snapshot with the pod added or removed (Podium's
  preemption protocol) instead of Kubernetes' ``AddPod``/``RemovePod`` updates;
- scoring_test.go: TestPodTopologySpreadScore (15/15) and TestPreScoreStateEmptyNodes (3/6; the
  other 3 use default constraints).

Go's status codes become reasons: Success -> none, Unschedulable -> "node(s) didn't match pod
topology spread constraints", UnschedulableAndUnresolvable -> the "(missing required label)"
reason, with the codes checked too. Every filter row runs ``pre_filter`` both ways (walking the
nodes, and over built node columns), each meta through the scalar and the vector filter.

Scores: each row keeps Kubernetes' expected scores (``want100``), which Podium's reduce
reproduces exactly with ``max_score=100`` (so the raw map scores are Kubernetes' own), and adds
the 0-10 scores Podium reports (``want10``), derived by hand from the same raw scores with
``10 * (max + min - score) // max`` (the derivation of each row is in its comment). Go's
namespace "" is Podium's "default".
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod
from scalar_plugins import reasons_of
from stages import decide

from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework import interface
from podium.actors.framework.interface import (
    SKIP,
    Code,
    PluginArgs,
    PredicateError,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.preemption import PredicateFitCheck, preempt
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names, registry
from podium.actors.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    FACTORIES,
    LABEL_HOSTNAME,
    NO_DOMAIN_MINIMUM,
    EvenPodsSpread,
    EvenPodsSpreadPriority,
    PreFilterMeta,
    PreScoreMeta,
    normalize_spread_scores,
)
from podium.actors.plugins.policy import build_plugins, resolve_policy
from podium.actors.queue.core import SchedulingQueue
from podium.protocol import objects as o
from podium.protocol.policy import decode_policy

FITS: tuple[str, ...] = ()
SKEW = (ERR_REASON_CONSTRAINTS_NOT_MATCH,)
LABEL = (ERR_REASON_NODE_LABEL_NOT_MATCH,)
HOST = LABEL_HOSTNAME

_names = itertools.count()


# --------------------------------------------------------------------------- builders


def exists(key: str) -> dict[str, Any]:
    """``st.MakeLabelSelector().Exists(key)``."""
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def equals(key: str, value: str) -> dict[str, Any]:
    """``st.MakeLabelSelector().Label(key, value)``."""
    return {"matchLabels": {key: value}}


def hard(max_skew: int, key: str, selector: dict[str, Any] | None) -> dict[str, Any]:
    c: dict[str, Any] = {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
    }
    if selector is not None:
        c["labelSelector"] = selector
    return c


def soft(max_skew: int, key: str, selector: dict[str, Any] | None) -> dict[str, Any]:
    return {**hard(max_skew, key, selector), "whenUnsatisfiable": "ScheduleAnyway"}


def node_affinity(key: str, op: str, values: Sequence[str]) -> dict[str, Any]:
    """``NodeAffinityIn`` / ``NodeAffinityNotIn``: one required term with one expression."""
    expression = {"key": key, "operator": op, "values": list(values)}
    term = {"matchExpressions": [expression]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def incoming(
    labels: Sequence[str],
    *constraints: dict[str, Any],
    affinity: dict[str, Any] | None = None,
    ns: str = "default",
) -> o.Pod:
    """The pod to schedule: labels given by key (value ""), then its spread constraints."""
    b = make_pod("p").ns(ns).labels(dict.fromkeys(labels, ""))
    b.spec(topologySpreadConstraints=list(constraints))
    if affinity is not None:
        b.affinity(affinity)
    return b.obj()


def ep(name: str, node: str, *labels: str, ns: str = "default", terminating: bool = False) -> o.Pod:
    """An existing pod on ``node`` (``st.MakePod().Name().Node().Label(k, "")``)."""
    b = make_pod(name).ns(ns).node(node).labels(dict.fromkeys(labels, ""))
    if terminating:
        b.terminating()
    return b.obj()


def zn(name: str, zone: str | None = None, key: str = "node") -> o.Node:
    """A node labelled ``zone`` (when given) and ``key: name``."""
    b = make_node(name).label(key, name)
    if zone is not None:
        b.label("zone", zone)
    return b.obj()


def labelled(name: str, labels: Mapping[str, str]) -> o.Node:
    return make_node(name).labels(dict(labels)).obj()


FOUR = (zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2"))
"""The four nodes most filter rows use: node-a, node-b in zone1; node-x, node-y in zone2."""


def node_infos(nodes: Sequence[o.Node], pods: Sequence[o.Pod]) -> list[NodeInfo]:
    """kube's ``cache.NewSnapshot(pods, nodes)``: each pod on the node it names."""
    return [
        NodeInfo(n, [PodInfo(p) for p in pods if p.spec.node_name == n.metadata.name])
        for n in nodes
    ]


def with_columns(infos: Sequence[NodeInfo]) -> Snapshot:
    snapshot = Snapshot(infos)
    assert snapshot.columns.n == len(infos)
    assert snapshot.has_columns
    return snapshot


def filter_metas(pod: PodInfo, infos: Sequence[NodeInfo]) -> tuple[object, object, Snapshot]:
    """``pre_filter`` walking the nodes and over the columns (fresh plugins), checked equal."""
    walk = EvenPodsSpread(PluginArgs(NAME)).pre_filter(pod, Snapshot(infos))
    snapshot = with_columns(infos)
    vector = EvenPodsSpread(PluginArgs(NAME)).pre_filter(pod, snapshot)
    if walk is SKIP:
        assert vector is SKIP
    else:
        assert isinstance(walk, PreFilterMeta)
        assert isinstance(vector, PreFilterMeta)
        assert domain_view(walk) == domain_view(vector)
    return walk, vector, snapshot


NAME = names.EVEN_PODS_SPREAD


def domain_view(meta: PreFilterMeta) -> list[tuple[dict[str, int], int]]:
    """Per constraint: its domains' counts and their minimum."""
    return [(d.as_dict(), d.minimum) for d in meta.domains]


def evaluate(
    pod: o.Pod, nodes: Sequence[o.Node], pods: Sequence[o.Pod]
) -> dict[str, tuple[tuple[str, ...], Code]]:
    """Every node's (reasons, code), both metas through both forms, all checked equal."""
    info = PodInfo(pod)
    infos = node_infos(nodes, pods)
    walk, vector, snapshot = filter_metas(info, infos)
    plugin = EvenPodsSpread(PluginArgs(NAME))
    got: dict[str, tuple[tuple[str, ...], Code]] | None = None
    for meta in (walk, vector):
        scalar = {}
        for n in infos:
            status = run_filter(plugin, info, meta, n)
            assert status.is_success == (not status.reasons)
            scalar[n.name] = (status.reasons, status.code)
        masks = run_filter_columns(plugin, info, meta, snapshot.columns)
        for i, name in enumerate(snapshot.columns.names):
            assert reasons_of(masks, i) == scalar[name][0], name
        assert got is None or got == scalar
        got = scalar
    assert got is not None
    return got


def codes_of(got: Mapping[str, tuple[tuple[str, ...], Code]]) -> dict[str, str]:
    """Go's status codes: Success, Unschedulable, UnschedulableAndUnresolvable."""
    spelled = {
        Code.SUCCESS: "Success",
        Code.UNSCHEDULABLE: "Unschedulable",
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    }
    return {name: spelled[code] for name, (_, code) in got.items()}


def reasons_for(codes: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    by_code = {"Success": FITS, "Unschedulable": SKEW, "UnschedulableAndUnresolvable": LABEL}
    return {name: by_code[code] for name, code in codes.items()}


S, U, UU = "Success", "Unschedulable", "UnschedulableAndUnresolvable"


@dataclass(frozen=True)
class FilterCase:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    pods: tuple[o.Pod, ...]
    want: dict[str, str]
    """node -> Go's expected status code."""


# --------------------------------------------------------------------------- TestSingleConstraint

# filtering_test.go: TestSingleConstraint.
SINGLE_CASES = [
    FilterCase(
        "no existing pods",
        incoming(["foo"], hard(1, "zone", exists("foo"))),
        FOUR,
        (),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    FilterCase(
        "no existing pods, incoming pod doesn't match itself",
        incoming(["foo"], hard(1, "zone", exists("bar"))),
        FOUR,
        (),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    FilterCase(
        "existing pods in a different namespace do not count",
        incoming(["foo"], hard(1, "zone", exists("foo"))),
        FOUR,
        (
            ep("p-a1", "node-a", "foo", ns="ns1"),
            ep("p-b1", "node-a", "foo", ns="ns2"),
            ep("p-x1", "node-x", "foo"),
            ep("p-y1", "node-y", "foo"),
        ),
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    FilterCase(
        "pods spread across zones as 3/3, all nodes fit",
        incoming(["foo"], hard(1, "zone", exists("foo"))),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo"),
            ep("p-y3", "node-y", "foo"),
        ),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
    ),
    FilterCase(
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        incoming(["foo"], hard(1, "zone", exists("foo"))),
        (
            zn("node-a", "zone1"),
            labelled("node-b", {"zon": "zone1", "node": "node-b"}),
            zn("node-x", "zone2"),
            zn("node-y", "zone2"),
        ),
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-x1", "node-x", "foo"),
            ep("p-y1", "node-y", "foo"),
        ),
        {"node-a": S, "node-b": UU, "node-x": U, "node-y": U},
    ),
    FilterCase(
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        incoming(["foo"], hard(1, "rack", exists("foo"))),
        (zn("node-a", "zone1"), zn("node-x", "zone2")),
        (),
        {"node-a": UU, "node-x": UU},
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        incoming(["foo"], hard(1, "node", exists("foo"))),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo"),
            ep("p-y3", "node-y", "foo"),
        ),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        incoming(["foo"], hard(2, "node", exists("foo"))),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo"),
            ep("p-y3", "node-y", "foo"),
        ),
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    FilterCase(
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        incoming(["bar"], hard(1, "node", exists("foo"))),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo"),
            ep("p-y3", "node-y", "foo"),
        ),
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
    ),
    FilterCase(
        # Only node-a and node-y count (2/~1~/~0~/3); MatchNodeSelector is not run, so node-b
        # and node-x pass this predicate (their values are no domain: count 0).
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        incoming(
            ["foo"],
            hard(1, "node", exists("foo")),
            affinity=node_affinity("node", "In", ["node-a", "node-y"]),
        ),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo"),
            ep("p-y3", "node-y", "foo"),
        ),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": U},
    ),
    FilterCase(
        "terminating Pods should be excluded",
        incoming(["foo"], hard(1, "node", exists("foo"))),
        (labelled("node-a", {"node": "node-a"}), labelled("node-b", {"node": "node-b"})),
        (ep("p-a", "node-a", "foo", terminating=True), ep("p-b", "node-b", "foo")),
        {"node-a": S, "node-b": U},
    ),
]


@pytest.mark.parametrize("case", SINGLE_CASES, ids=attrgetter("name"))
def test_single_constraint(case: FilterCase) -> None:
    got = evaluate(case.pod, case.nodes, case.pods)
    assert codes_of(got) == case.want
    assert {name: reasons for name, (reasons, _) in got.items()} == reasons_for(case.want)


def test_single_constraint_row_count() -> None:
    assert len(SINGLE_CASES) == 11


# --------------------------------------------------------------------------- TestMultipleConstraints

ZONE_NODE_FOO = (hard(1, "zone", exists("foo")), hard(1, "node", exists("foo")))
ZONE_FOO_NODE_BAR = (hard(1, "zone", exists("foo")), hard(1, "node", exists("bar")))

# filtering_test.go: TestMultipleConstraints.
MULTIPLE_CASES = [
    FilterCase(
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        incoming(["foo"], *ZONE_NODE_FOO),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo"),
            ep("p-y3", "node-y", "foo"),
        ),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    FilterCase(
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        incoming(["foo"], *ZONE_NODE_FOO),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo"),
            ep("p-y3", "node-y", "foo"),
            ep("p-y4", "node-y", "foo"),
        ),
        {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        incoming(["foo", "bar"], *ZONE_FOO_NODE_BAR),
        FOUR,
        (ep("p-a1", "node-a", "foo"), ep("p-y1", "node-y", "bar")),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": U},
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        incoming(["foo", "bar"], *ZONE_FOO_NODE_BAR),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-x1", "node-x", "bar"),
            ep("p-y1", "node-y", "bar"),
        ),
        {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
    ),
    FilterCase(
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        incoming(["foo", "bar"], *ZONE_FOO_NODE_BAR),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo", "bar"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo", "bar"),
            ep("p-y3", "node-y", "foo"),
        ),
        {"node-a": U, "node-b": S, "node-x": U, "node-y": U},
    ),
    FilterCase(
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        incoming(["bar"], *ZONE_FOO_NODE_BAR),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-x1", "node-x", "bar"),
            ep("p-y1", "node-y", "bar"),
        ),
        {"node-a": S, "node-b": S, "node-x": U, "node-y": U},
    ),
    FilterCase(
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        incoming(["foo"], *ZONE_NODE_FOO),
        (
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            labelled("node-x", {"zone": "zone2"}),
            zn("node-y", "zone2"),
        ),
        (ep("p-a1", "node-a", "foo"), ep("p-y3", "node-y", "foo")),
        {"node-a": U, "node-b": S, "node-x": UU, "node-y": U},
    ),
]


@pytest.mark.parametrize("case", MULTIPLE_CASES, ids=attrgetter("name"))
def test_multiple_constraints(case: FilterCase) -> None:
    got = evaluate(case.pod, case.nodes, case.pods)
    assert codes_of(got) == case.want
    assert {name: reasons for name, (reasons, _) in got.items()} == reasons_for(case.want)


def test_multiple_constraints_row_count() -> None:
    assert len(MULTIPLE_CASES) == 7


# --------------------------------------------------------------------------- TestPreFilterState

Domains = list[tuple[dict[str, int], int]]
"""Per constraint: domain -> matching pods (Go's TpPairToMatchNum), and the minimum (Go's
``TpKeyToCriticalPaths[key][0].MatchNum``)."""


def domains(*per_constraint: dict[str, int]) -> Domains:
    return [(d, min(d.values(), default=NO_DOMAIN_MINIMUM)) for d in per_constraint]


@dataclass(frozen=True)
class StateCase:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    pods: tuple[o.Pod, ...]
    want: Domains


THREE = (zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2"))
FOO_7 = (
    ep("p-a1", "node-a", "foo"),
    ep("p-a2", "node-a", "foo"),
    ep("p-b1", "node-b", "foo"),
    ep("p-y1", "node-y", "foo"),
    ep("p-y2", "node-y", "foo"),
    ep("p-y3", "node-y", "foo"),
    ep("p-y4", "node-y", "foo"),
)
FOO_5 = (
    ep("p-a1", "node-a", "foo"),
    ep("p-a2", "node-a", "foo"),
    ep("p-b1", "node-b", "foo"),
    ep("p-y1", "node-y", "foo"),
    ep("p-y2", "node-y", "foo"),
)

# filtering_test.go: TestPreFilterState (the rows with cluster default constraints left out).
STATE_CASES = [
    StateCase(
        "clean cluster with one spreadConstraint",
        incoming(["foo"], hard(5, "zone", equals("foo", "bar"))),
        FOUR,
        (),
        domains({"zone1": 0, "zone2": 0}),
    ),
    StateCase(
        "normal case with one spreadConstraint",
        incoming(["foo"], hard(1, "zone", exists("foo"))),
        FOUR,
        FOO_5,
        domains({"zone1": 3, "zone2": 2}),
    ),
    StateCase(
        "normal case with one spreadConstraint, on a 3-zone cluster",
        incoming(["foo"], hard(1, "zone", exists("foo"))),
        (*FOUR, zn("node-o", "zone3"), zn("node-p", "zone3")),
        FOO_5,
        domains({"zone1": 3, "zone2": 2, "zone3": 0}),
    ),
    StateCase(
        "namespace mismatch doesn't count",
        incoming(["foo"], hard(1, "zone", exists("foo"))),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo", ns="ns1"),
            ep("p-b1", "node-b", "foo"),
            ep("p-y1", "node-y", "foo", ns="ns2"),
            ep("p-y2", "node-y", "foo"),
        ),
        domains({"zone1": 2, "zone2": 1}),
    ),
    StateCase(
        "normal case with two spreadConstraints",
        incoming(["foo"], *ZONE_NODE_FOO),
        FOUR,
        FOO_7,
        domains({"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}),
    ),
    StateCase(
        "soft spreadConstraints should be bypassed",
        incoming(
            ["foo"],
            soft(1, "zone", exists("foo")),
            hard(1, "zone", exists("foo")),
            soft(1, "node", exists("foo")),
            hard(1, "node", exists("foo")),
        ),
        THREE,
        FOO_7,
        domains({"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}),
    ),
    StateCase(
        "different labelSelectors - simple version",
        incoming(["foo", "bar"], *ZONE_FOO_NODE_BAR),
        THREE,
        (ep("p-a", "node-a", "foo"), ep("p-b", "node-b", "bar")),
        domains({"zone1": 1, "zone2": 0}, {"node-a": 0, "node-b": 1, "node-y": 0}),
    ),
    StateCase(
        "different labelSelectors - complex pods",
        incoming(["foo", "bar"], *ZONE_FOO_NODE_BAR),
        THREE,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo", "bar"),
            ep("p-b1", "node-b", "foo"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo", "bar"),
            ep("p-y3", "node-y", "foo"),
            ep("p-y4", "node-y", "foo", "bar"),
        ),
        domains({"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 0, "node-y": 2}),
    ),
    StateCase(
        "two spreadConstraints, and with podAffinity",
        incoming(["foo"], *ZONE_NODE_FOO, affinity=node_affinity("node", "NotIn", ["node-x"])),
        FOUR,
        FOO_7,
        domains({"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}),
    ),
    StateCase(
        # The pod's own constraints win over the defaults (Podium has none); no nodes.
        "default constraints and a service, but pod has constraints",
        incoming(
            ["foo", "baz"],
            hard(1, "zone", equals("baz", "tar")),
            soft(2, "planet", equals("fot", "rok")),
        ),
        (),
        (),
        domains({}),
    ),
]


@pytest.mark.parametrize("case", STATE_CASES, ids=attrgetter("name"))
def test_pre_filter_state(case: StateCase) -> None:
    walk, vector, _ = filter_metas(PodInfo(case.pod), node_infos(case.nodes, case.pods))
    assert isinstance(walk, PreFilterMeta)
    assert isinstance(vector, PreFilterMeta)
    assert domain_view(walk) == domain_view(vector) == case.want


def test_pre_filter_state_row_count() -> None:
    assert len(STATE_CASES) == 10


# ----------------------------------------------------- TestPreFilterStateAddPod / RemovePod

NODE_FOO = hard(1, "node", exists("foo"))
ZONE_FOO = hard(1, "zone", exists("foo"))
NODE_BAR = hard(1, "node", exists("bar"))
A_B = (zn("node-a", "zone1"), zn("node-b", "zone1"))
A_X = (zn("node-a", "zone1"), zn("node-x", "zone2"))
A_B_X = (zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"))


@dataclass(frozen=True)
class ChangeCase:
    name: str
    preemptor: o.Pod
    nodes: tuple[o.Node, ...]
    pods: tuple[o.Pod, ...]
    node_idx: int
    pod: o.Pod | None
    """The pod added to (or removed from) ``nodes[node_idx]``; None: nothing to remove."""
    want: Domains


# filtering_test.go: TestPreFilterStateAddPod.
ADD_CASES = [
    ChangeCase(
        "node a and b both impact current min match",
        incoming(["foo"], NODE_FOO),
        A_B,
        (),
        0,
        ep("p-a1", "node-a", "foo"),
        domains({"node-a": 1, "node-b": 0}),
    ),
    ChangeCase(
        "only node a impacts current min match",
        incoming(["foo"], NODE_FOO),
        A_B,
        (ep("p-b1", "node-b", "foo"),),
        0,
        ep("p-a1", "node-a", "foo"),
        domains({"node-a": 1, "node-b": 1}),
    ),
    ChangeCase(
        "add a pod in a different namespace doesn't change topologyKeyToMinPodsMap",
        incoming(["foo"], NODE_FOO),
        A_B,
        (ep("p-b1", "node-b", "foo"),),
        0,
        ep("p-a1", "node-a", "foo", ns="ns1"),
        domains({"node-a": 0, "node-b": 1}),
    ),
    ChangeCase(
        "add pod on non-critical node won't trigger re-calculation",
        incoming(["foo"], NODE_FOO),
        A_B,
        (ep("p-b1", "node-b", "foo"),),
        1,
        ep("p-b2", "node-b", "foo"),
        domains({"node-a": 0, "node-b": 2}),
    ),
    ChangeCase(
        "node a and x both impact topologyKeyToMinPodsMap on zone and node",
        incoming(["foo"], ZONE_FOO, NODE_FOO),
        A_X,
        (),
        0,
        ep("p-a1", "node-a", "foo"),
        domains({"zone1": 1, "zone2": 0}, {"node-a": 1, "node-x": 0}),
    ),
    ChangeCase(
        "only node a impacts topologyKeyToMinPodsMap on zone and node",
        incoming(["foo"], ZONE_FOO, NODE_FOO),
        A_X,
        (ep("p-x1", "node-x", "foo"),),
        0,
        ep("p-a1", "node-a", "foo"),
        domains({"zone1": 1, "zone2": 1}, {"node-a": 1, "node-x": 1}),
    ),
    ChangeCase(
        "node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap on zone",
        incoming(["foo"], ZONE_FOO, NODE_FOO),
        A_B_X,
        (
            ep("p-b1", "node-b", "foo"),
            ep("p-b2", "node-b", "foo"),
            ep("p-x1", "node-x", "foo"),
        ),
        0,
        ep("p-a1", "node-a", "foo"),
        domains({"zone1": 3, "zone2": 1}, {"node-a": 1, "node-b": 2, "node-x": 1}),
    ),
    ChangeCase(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone",
        incoming(["foo", "bar"], ZONE_FOO, NODE_BAR),
        A_B_X,
        (
            ep("p-b1", "node-b", "foo", "bar"),
            ep("p-x1", "node-x", "foo", "bar"),
            ep("p-x2", "node-x", "bar"),
        ),
        0,
        ep("p-a1", "node-a", "foo"),
        domains({"zone1": 2, "zone2": 1}, {"node-a": 0, "node-b": 1, "node-x": 2}),
    ),
    ChangeCase(
        "Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on both zone and node",
        incoming(["foo", "bar"], ZONE_FOO, NODE_BAR),
        A_B_X,
        (
            ep("p-b1", "node-b", "bar"),
            ep("p-x1", "node-x", "foo", "bar"),
            ep("p-x2", "node-x", "bar"),
        ),
        0,
        ep("p-a1", "node-a", "foo", "bar"),
        domains({"zone1": 1, "zone2": 1}, {"node-a": 1, "node-b": 1, "node-x": 2}),
    ),
]


# filtering_test.go: TestPreFilterStateRemovePod.
REMOVE_CASES = [
    ChangeCase(
        "one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged",
        incoming(["foo"], ZONE_FOO),
        A_B_X,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-x1", "node-x", "foo"),
        ),
        0,
        ep("p-a1", "node-a", "foo"),
        domains({"zone1": 1, "zone2": 1}),
    ),
    ChangeCase(
        "one spreadConstraint on node, topologyKeyToMinPodsMap changed",
        incoming(["foo"], ZONE_FOO),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-x1", "node-x", "foo"),
            ep("p-y1", "node-y", "foo"),
        ),
        0,
        ep("p-a1", "node-a", "foo"),
        domains({"zone1": 1, "zone2": 2}),
    ),
    ChangeCase(
        "delete an irrelevant pod won't help",
        incoming(["foo"], ZONE_FOO),
        FOUR,
        (
            ep("p-a0", "node-a", "bar"),
            ep("p-a1", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-x1", "node-x", "foo"),
            ep("p-y1", "node-y", "foo"),
        ),
        0,
        ep("p-a0", "node-a", "bar"),
        domains({"zone1": 2, "zone2": 2}),
    ),
    ChangeCase(
        # The pod is on no node: Podium's preemption never removes it; nothing changes.
        "delete a non-existing pod won't help",
        incoming(["foo"], ZONE_FOO),
        FOUR,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-x1", "node-x", "foo"),
            ep("p-y1", "node-y", "foo"),
        ),
        0,
        None,
        domains({"zone1": 2, "zone2": 2}),
    ),
    ChangeCase(
        "two spreadConstraints",
        incoming(["foo"], ZONE_FOO, NODE_FOO),
        A_B_X,
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-x1", "node-x", "foo"),
            ep("p-x2", "node-x", "foo"),
        ),
        2,
        ep("p-x1", "node-x", "foo"),
        domains({"zone1": 3, "zone2": 1}, {"node-a": 2, "node-b": 1, "node-x": 1}),
    ),
]


def changed_domains(case: ChangeCase, *, add: bool) -> tuple[Domains, Domains]:
    """``pre_filter`` before and after the change, swapped into the snapshot as preemption
    does (``replace_node_info`` with a changed clone): walking, and over kept columns."""
    infos = node_infos(case.nodes, case.pods)
    preemptor = PodInfo(case.preemptor)
    plugin = EvenPodsSpread(PluginArgs(NAME))
    snapshot = with_columns(infos)
    before = plugin.pre_filter(preemptor, snapshot)  # warms the plugin's counts
    assert isinstance(before, PreFilterMeta)
    changed = infos[case.node_idx].clone()
    if case.pod is not None:
        if add:
            changed.add_pod(PodInfo(case.pod))
        else:
            changed.remove_pod(PodInfo(case.pod))
    snapshot.replace_node_info(changed)
    vector = plugin.pre_filter(preemptor, snapshot)
    walk_snapshot = Snapshot(infos).copy()
    walk_snapshot.replace_node_info(changed)
    assert not walk_snapshot.has_columns
    walk = plugin.pre_filter(preemptor, walk_snapshot)
    assert isinstance(vector, PreFilterMeta)
    assert isinstance(walk, PreFilterMeta)
    return domain_view(walk), domain_view(vector)


@pytest.mark.parametrize("case", ADD_CASES, ids=attrgetter("name"))
def test_pre_filter_state_add_pod(case: ChangeCase) -> None:
    walk, vector = changed_domains(case, add=True)
    assert walk == vector == case.want


@pytest.mark.parametrize("case", REMOVE_CASES, ids=attrgetter("name"))
def test_pre_filter_state_remove_pod(case: ChangeCase) -> None:
    walk, vector = changed_domains(case, add=False)
    assert walk == vector == case.want


def test_add_remove_row_counts() -> None:
    assert (len(ADD_CASES), len(REMOVE_CASES)) == (9, 5)


# --------------------------------------------------------------------------- score


def host(name: str, zone: str | None = None) -> o.Node:
    """A node labelled ``kubernetes.io/hostname: name`` (and ``zone`` when given)."""
    return zn(name, zone, key=HOST)


@dataclass(frozen=True)
class ScoreCase:
    name: str
    pod: o.Pod
    pods: tuple[o.Pod, ...]
    nodes: tuple[o.Node, ...]
    """The feasible nodes, scored in this order."""
    failed: tuple[o.Node, ...]
    """Nodes in the cluster that did not pass the filters."""
    want100: tuple[int, ...]
    """Kubernetes' expected scores (MaxNodeScore 100)."""
    want10: tuple[int, ...]
    """Podium's 0-10 scores."""


ONE_HOST = soft(1, HOST, exists("foo"))
ZONE_HOST = (soft(1, "zone", exists("foo")), soft(1, HOST, exists("foo")))
ZONE_FOO_HOST_BAR = (soft(1, "zone", exists("foo")), soft(1, HOST, exists("bar")))
PODS_4_2_1_3 = (
    ep("p-a1", "node-a", "foo"),
    ep("p-a2", "node-a", "foo"),
    ep("p-a3", "node-a", "foo"),
    ep("p-a4", "node-a", "foo"),
    ep("p-b1", "node-b", "foo"),
    ep("p-b2", "node-b", "foo"),
    ep("p-x1", "node-x", "foo"),
    ep("p-y1", "node-y", "foo"),
    ep("p-y2", "node-y", "foo"),
    ep("p-y3", "node-y", "foo"),
)
PODS_2_1_0_3 = (
    ep("p-a1", "node-a", "foo"),
    ep("p-a2", "node-a", "foo"),
    ep("p-b1", "node-b", "foo"),
    ep("p-d1", "node-d", "foo"),
    ep("p-d2", "node-d", "foo"),
    ep("p-d3", "node-d", "foo"),
)
ABCD = (host("node-a"), host("node-b"), host("node-c"), host("node-d"))

# scoring_test.go: TestPodTopologySpreadScore. Raw map scores are
# int(sum(count * ln(size + 2) + maxSkew - 1)); each comment gives them as raw -> 10-scale.
SCORE_CASES = [
    ScoreCase(
        # raw 0/0: max 0 -> every node the maximum.
        "one constraint on node, no existing pods",
        incoming(["foo"], ONE_HOST),
        (),
        (host("node-a"), host("node-b")),
        (),
        (100, 100),
        (10, 10),
    ),
    ScoreCase(
        # raw 2 (2 * ln 3): min = max = 2 -> 10 * 2 // 2.
        "one constraint on node, only one node is candidate",
        incoming(["foo"], ONE_HOST),
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
        ),
        (host("node-a"),),
        (host("node-b"),),
        (100,),
        (10,),
    ),
    ScoreCase(
        # raw 1/1 (ln 4): 10 * (1 + 1 - 1) // 1.
        "one constraint on node, all nodes have the same number of matching pods",
        incoming(["foo"], ONE_HOST),
        (ep("p-a1", "node-a", "foo"), ep("p-b1", "node-b", "foo")),
        (host("node-a"), host("node-b")),
        (),
        (100, 100),
        (10, 10),
    ),
    ScoreCase(
        # weight ln 6 = 1.79: raw 3/1/0/5 -> 10 * (5 - s) // 5 = 4/8/10/0.
        "one constraint on node, all 4 nodes are candidates",
        incoming(["foo"], ONE_HOST),
        PODS_2_1_0_3,
        ABCD,
        (),
        (40, 80, 100, 0),
        (4, 8, 10, 0),
    ),
    ScoreCase(
        # raw 4/2/1/6 (+1 each for maxSkew 2) -> 10 * (7 - s) // 6 = 5/8/10/1.
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        incoming(["foo"], soft(2, HOST, exists("foo"))),
        PODS_2_1_0_3,
        ABCD,
        (),
        (50, 83, 100, 16),
        (5, 8, 10, 1),
    ),
    ScoreCase(
        # pods 4/3/2/1, raw 9/7/5/3 -> 10 * (12 - s) // 9 = 3/5/7/10.
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        incoming(["foo"], soft(3, HOST, exists("foo"))),
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-a3", "node-a", "foo"),
            ep("p-a4", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-b2", "node-b", "foo"),
            ep("p-b3", "node-b", "foo"),
            ep("p-c1", "node-c", "foo"),
            ep("p-c2", "node-c", "foo"),
            ep("p-d1", "node-d", "foo"),
        ),
        ABCD,
        (),
        (33, 55, 77, 100),
        (3, 5, 7, 10),
    ),
    ScoreCase(
        # pods 4/2/1/~3~, weight ln 5: raw 6/3/1 -> 10 * (7 - s) // 6 = 1/6/10.
        "one constraint on node, 3 out of 4 nodes are candidates",
        incoming(["foo"], ONE_HOST),
        PODS_4_2_1_3,
        (host("node-a"), host("node-b"), host("node-x")),
        (host("node-y"),),
        (16, 66, 100),
        (1, 6, 10),
    ),
    ScoreCase(
        # node-b lacks the key (ignored, 0); weight ln 4: raw 5/-/1 -> 10 * (6 - s) // 5.
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
        incoming(["foo"], ONE_HOST),
        PODS_4_2_1_3,
        (host("node-a"), labelled("node-b", {"n": "node-b"}), host("node-x")),
        (host("node-y"),),
        (20, 0, 100),
        (2, 0, 10),
    ),
    ScoreCase(
        # zone1 = 6 pods, zone2 = 4 (node-y counts though not a candidate), weight ln 4:
        # raw 8/8/5 -> 10 * (13 - s) // 8 = 6/6/10.
        "one constraint on zone, 3 out of 4 nodes are candidates",
        incoming(["foo"], soft(1, "zone", exists("foo"))),
        PODS_4_2_1_3,
        (host("node-a", "zone1"), host("node-b", "zone1"), host("node-x", "zone2")),
        (host("node-y", "zone2"),),
        (62, 62, 100),
        (6, 6, 10),
    ),
    ScoreCase(
        # zone 3/6, host 2/2, both weights ln 4: raw 6/11 -> 10 * (17 - s) // 11 = 10/5.
        "two Constraints on zone and node, 2 out of 4 nodes are candidates",
        incoming(["foo"], *ZONE_HOST),
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-x1", "node-x", "foo"),
            ep("p-x2", "node-x", "foo"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "foo"),
            ep("p-y3", "node-y", "foo"),
            ep("p-y4", "node-y", "foo"),
        ),
        (host("node-a", "zone1"), host("node-x", "zone2")),
        (host("node-b", "zone1"), host("node-y", "zone2")),
        (100, 54),
        (10, 5),
    ),
    ScoreCase(
        # zone (foo) 2/2/1/1 at ln 4, host (bar) 0/1/0/1 at ln 6: raw 2/4/1/3
        # -> 10 * (5 - s) // 4 = 7/2/10/5.
        "two Constraints on zone and node, with different labelSelectors",
        incoming(["foo", "bar"], *ZONE_FOO_HOST_BAR),
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-b1", "node-b", "foo", "bar"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "bar"),
        ),
        (
            host("node-a", "zone1"),
            host("node-b", "zone1"),
            host("node-x", "zone2"),
            host("node-y", "zone2"),
        ),
        (),
        (75, 25, 100, 50),
        (7, 2, 10, 5),
    ),
    ScoreCase(
        # zone 0/0/2/2, host 0/1/0/1: raw 0/1/2/4 -> 10 * (4 - s) // 4 = 10/7/5/0.
        "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
        incoming(["foo", "bar"], *ZONE_FOO_HOST_BAR),
        (
            ep("p-b1", "node-b", "bar"),
            ep("p-x1", "node-x", "foo"),
            ep("p-y1", "node-y", "foo", "bar"),
        ),
        (
            host("node-a", "zone1"),
            host("node-b", "zone1"),
            host("node-x", "zone2"),
            host("node-y", "zone2"),
        ),
        (),
        (100, 75, 50, 0),
        (10, 7, 5, 0),
    ),
    ScoreCase(
        # zone 2/2/1 at ln 4, host 0/1/0 at ln 5: raw 2/4/1 -> 10 * (5 - s) // 4 = 7/2/10.
        "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
        incoming(["foo", "bar"], *ZONE_FOO_HOST_BAR),
        (
            ep("p-a1", "node-a", "foo"),
            ep("p-b1", "node-b", "foo", "bar"),
            ep("p-y1", "node-y", "foo"),
            ep("p-y2", "node-y", "bar"),
        ),
        (host("node-a", "zone1"), host("node-b", "zone1"), host("node-x", "zone2")),
        (host("node-y", "zone2"),),
        (75, 25, 100),
        (7, 2, 10),
    ),
    ScoreCase(
        # 1/2 pods in the pod's namespace, ln 4: raw 1/2 -> 10 * (3 - s) // 2 = 10/5.
        "existing pods in a different namespace do not count",
        incoming(["foo"], ONE_HOST),
        (
            ep("p-a1", "node-a", "foo", ns="ns1"),
            ep("p-a2", "node-a", "foo"),
            ep("p-b1", "node-b", "foo"),
            ep("p-b2", "node-b", "foo"),
        ),
        (host("node-a"), host("node-b")),
        (),
        (100, 50),
        (10, 5),
    ),
    ScoreCase(
        # raw 0/1 -> 10 * (1 - s) // 1 = 10/0.
        "terminating Pods should be excluded",
        incoming(["foo"], ONE_HOST),
        (ep("p-a", "node-a", "foo", terminating=True), ep("p-b", "node-b", "foo")),
        (host("node-a"), host("node-b")),
        (),
        (100, 0),
        (10, 0),
    ),
]


@dataclass
class ScoreRun:
    raw: list[int]
    final: list[int]
    ignored: list[bool] = field(default_factory=list)


def run_score(
    case_pod: o.Pod, feasible: Sequence[o.Node], failed: Sequence[o.Node], pods: Sequence[o.Pod]
) -> ScoreRun:
    """Score the feasible nodes (the failed ones are in the cluster) through every form:
    ``pre_score`` walking and over columns, ``score`` and ``score_columns`` (rows forward and
    reversed); all must agree."""
    infos = node_infos([*feasible, *failed], pods)
    nodes = infos[: len(feasible)]
    pod = PodInfo(case_pod)
    plugin = EvenPodsSpreadPriority(PluginArgs(names.EVEN_PODS_SPREAD_PRIORITY))
    snapshot = with_columns(infos)
    metas = [
        plugin.pre_score(pod, Snapshot(infos), nodes),
        plugin.pre_score(pod, snapshot, nodes),
        EvenPodsSpreadPriority(PluginArgs("fresh")).pre_score(pod, snapshot, nodes),
    ]
    rows = np.arange(len(nodes), dtype=np.intp)
    runs: list[ScoreRun] = []
    for meta in metas:
        raw = interface.run_score(plugin, pod, meta, nodes)
        vector = interface.run_score_columns(plugin, pod, meta, snapshot.columns, rows)
        assert vector.dtype == np.int64
        assert vector.tolist() == raw
        reverse = interface.run_score_columns(
            plugin, pod, meta, snapshot.columns, rows[::-1].copy()
        )
        assert reverse.tolist() == raw[::-1]
        final = plugin.normalize(pod, meta, nodes, list(raw))
        ignored = [False] * len(nodes) if meta is SKIP else [n.name in meta.ignored for n in nodes]
        runs.append(ScoreRun(raw, final, ignored))
    assert runs[0] == runs[1] == runs[2]
    return runs[0]


@pytest.mark.parametrize("case", SCORE_CASES, ids=attrgetter("name"))
def test_pod_topology_spread_score(case: ScoreCase) -> None:
    got = run_score(case.pod, case.nodes, case.failed, case.pods)
    assert normalize_spread_scores(got.raw, got.ignored, max_score=100) == list(case.want100)
    assert got.final == list(case.want10)


def test_pod_topology_spread_score_row_count() -> None:
    assert len(SCORE_CASES) == 15


@dataclass(frozen=True)
class PreScoreCase:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    ignored: frozenset[str]
    domains: tuple[dict[str, int] | None, ...]
    sizes: tuple[int, ...]
    """Per constraint, the size ``topologyNormalizingWeight`` was given."""


# scoring_test.go: TestPreScoreStateEmptyNodes (the rows about default constraints left out).
PRE_SCORE_CASES = [
    PreScoreCase(
        "normal case",
        incoming(["foo"], *ZONE_HOST),
        (host("node-a", "zone1"), host("node-b", "zone1"), host("node-x", "zone2")),
        frozenset(),
        ({"zone1": 0, "zone2": 0}, None),
        (2, 3),
    ),
    PreScoreCase(
        "node-x doesn't have label zone",
        incoming(["foo"], soft(1, "zone", exists("foo")), soft(1, HOST, exists("bar"))),
        (host("node-a", "zone1"), host("node-b", "zone1"), host("node-x")),
        frozenset({"node-x"}),
        ({"zone1": 0}, None),
        (1, 2),
    ),
    PreScoreCase(
        "defaults constraints and a replica set, but pod has constraints",
        incoming(
            ["foo", "baz"],
            hard(1, "zone", equals("foo", "bar")),
            soft(2, "planet", equals("baz", "sup")),
        ),
        (labelled("node-a", {"planet": "mars", "galaxy": "andromeda"}),),
        frozenset(),
        ({"mars": 0},),
        (1,),
    ),
]


@pytest.mark.parametrize("case", PRE_SCORE_CASES, ids=attrgetter("name"))
def test_pre_score_state_empty_nodes(case: PreScoreCase) -> None:
    infos = node_infos(case.nodes, ())
    pod = PodInfo(case.pod)
    plugin = EvenPodsSpreadPriority(PluginArgs(names.EVEN_PODS_SPREAD_PRIORITY))
    for snapshot in (Snapshot(infos), with_columns(infos)):
        meta = plugin.pre_score(pod, snapshot, infos)
        assert isinstance(meta, PreScoreMeta)
        assert meta.ignored == case.ignored
        assert meta.weights == tuple(math.log(size + 2) for size in case.sizes)
        got = tuple(None if d is None else d.as_dict() for d in meta.domains)
        assert got == case.domains


# --------------------------------------------------------------------------- Podium rows


def test_factories_report_under_the_given_name() -> None:
    assert set(FACTORIES) == {names.EVEN_PODS_SPREAD, names.EVEN_PODS_SPREAD_PRIORITY}
    assert FACTORIES[names.EVEN_PODS_SPREAD](PluginArgs("spread")).name == "spread"
    assert registry.predicate_factory(names.EVEN_PODS_SPREAD) is EvenPodsSpread
    assert registry.priority_factory(names.EVEN_PODS_SPREAD_PRIORITY) is EvenPodsSpreadPriority


def test_names_aliases_order_and_defaults() -> None:
    order = names.PREDICATES_ORDERING
    assert order.index(names.EVEN_PODS_SPREAD) == order.index(names.MATCH_INTER_POD_AFFINITY) - 1
    assert names.canonical_predicate("PodTopologySpread") == names.EVEN_PODS_SPREAD
    assert names.canonical_priority("PodTopologySpread") == names.EVEN_PODS_SPREAD_PRIORITY
    assert names.EVEN_PODS_SPREAD not in names.DEFAULT_PREDICATES
    assert names.EVEN_PODS_SPREAD_PRIORITY not in dict(names.DEFAULT_PRIORITIES)


def test_pod_without_constraints_skips_both() -> None:
    pod = PodInfo(make_pod("p").label("foo", "").obj())
    infos = node_infos(FOUR, ())
    f = EvenPodsSpread(PluginArgs(NAME))
    assert f.pre_filter(pod, Snapshot(infos)) is SKIP
    assert all(run_filter(f, pod, SKIP, n).is_success for n in infos)
    p = EvenPodsSpreadPriority(PluginArgs(names.EVEN_PODS_SPREAD_PRIORITY))
    meta = p.pre_score(pod, Snapshot(infos), infos)
    assert meta is SKIP
    assert p.normalize(pod, meta, infos, [0] * 4) == [0, 0, 0, 0]


def test_hard_constraints_skip_the_priority_and_soft_ones_the_filter() -> None:
    hard_pod = PodInfo(incoming(["foo"], ZONE_FOO))
    soft_pod = PodInfo(incoming(["foo"], soft(1, "zone", exists("foo"))))
    infos = node_infos(FOUR, ())
    snapshot = Snapshot(infos)
    assert EvenPodsSpreadPriority(PluginArgs("s")).pre_score(hard_pod, snapshot, infos) is SKIP
    assert EvenPodsSpread(PluginArgs(NAME)).pre_filter(soft_pod, snapshot) is SKIP


def test_nil_selector_counts_nothing_and_empty_selector_everything() -> None:
    pods = (ep("p-a1", "node-a", "foo"), ep("p-a2", "node-a"), ep("p-x1", "node-x", "bar"))
    nil = evaluate(incoming(["foo"], hard(1, "zone", None)), FOUR, pods)
    assert all(reasons == FITS for reasons, _ in nil.values())
    # {} selects every pod, the incoming one included: zone1 = 2, zone2 = 1.
    everything = evaluate(incoming(["foo"], hard(1, "zone", {})), FOUR, pods)
    assert {n: r for n, (r, _) in everything.items()} == {
        "node-a": SKEW,
        "node-b": SKEW,
        "node-x": FITS,
        "node-y": FITS,
    }


def test_no_counting_node_leaves_every_node_passing_the_skew() -> None:
    # The pod's node affinity selects no node: no domain, minimum MaxInt32, nothing too skewed.
    pod = incoming(["foo"], ZONE_FOO, affinity=node_affinity("node", "In", ["nowhere"]))
    got = evaluate(pod, FOUR, (ep("p-a1", "node-a", "foo"),))
    assert all(reasons == FITS for reasons, _ in got.values())


def test_first_failing_constraint_decides_the_reason() -> None:
    # zone1 = 0 (node-a), zone2 = 2 (node-z); node-x and node-y lack 'node', so they do not
    # count. node-x: the zone constraint fails on skew before its missing 'node' label is
    # seen; node-y: zone fine, then 'node' missing.
    nodes = (
        zn("node-a", "zone1"),
        zn("node-z", "zone2"),
        labelled("node-x", {"zone": "zone2"}),
        labelled("node-y", {"zone": "zone1"}),
    )
    pods = (ep("p-z1", "node-z", "foo"), ep("p-z2", "node-z", "foo"))
    got = evaluate(incoming(["foo"], *ZONE_NODE_FOO), nodes, pods)
    assert {n: r for n, (r, _) in got.items()} == {
        "node-a": FITS,
        "node-z": SKEW,
        "node-x": SKEW,
        "node-y": LABEL,
    }


def test_row_without_node_object_lacks_every_label() -> None:
    pod = PodInfo(incoming(["foo"], ZONE_FOO))
    infos = [*node_infos(FOUR, ()), NodeInfo(name="ghost")]
    plugin = EvenPodsSpread(PluginArgs(NAME))
    snapshot = with_columns(infos)
    meta = plugin.pre_filter(pod, snapshot)
    assert run_filter(plugin, pod, meta, infos[-1]).reasons == LABEL
    masks = run_filter_columns(plugin, pod, meta, snapshot.columns)
    assert reasons_of(masks, len(infos) - 1) == LABEL
    walk = plugin.pre_filter(pod, Snapshot(infos))
    assert isinstance(meta, PreFilterMeta)
    assert isinstance(walk, PreFilterMeta)
    assert domain_view(meta) == domain_view(walk) == domains({"zone1": 0, "zone2": 0})


def test_invalid_selector_is_a_predicate_error() -> None:
    bad = {"matchExpressions": [{"key": "foo", "operator": "In"}]}
    infos = node_infos(FOUR, ())
    with pytest.raises(PredicateError, match="invalid label selector in a topology spread"):
        EvenPodsSpread(PluginArgs(NAME)).pre_filter(
            PodInfo(incoming(["foo"], hard(1, "zone", bad))), Snapshot(infos)
        )
    with pytest.raises(PredicateError, match="invalid label selector in a topology spread"):
        EvenPodsSpreadPriority(PluginArgs("s")).pre_score(
            PodInfo(incoming(["foo"], soft(1, "zone", bad))), Snapshot(infos), infos
        )


def test_counts_follow_changed_node_infos() -> None:
    """The per-NodeInfo count cache: a changed node (a new object) is counted afresh."""
    plugin = EvenPodsSpread(PluginArgs(NAME))
    pod = PodInfo(incoming(["foo"], NODE_FOO))
    infos = node_infos(A_B, ())
    for snapshot in (with_columns(infos), Snapshot(infos)):
        seen = []
        for _ in range(3):
            meta = plugin.pre_filter(pod, snapshot)
            assert isinstance(meta, PreFilterMeta)
            seen.append(meta.domains[0].as_dict())
            changed = snapshot.get("node-a")
            assert changed is not None
            changed = changed.clone()
            changed.add_pod(PodInfo(ep(f"p{next(_names)}", "node-a", "foo")))
            snapshot.replace_node_info(changed)
        assert seen == [
            {"node-a": 0, "node-b": 0},
            {"node-a": 1, "node-b": 0},
            {"node-a": 2, "node-b": 0},
        ]


def test_random_clusters_agree_across_forms() -> None:
    """Walk and columns, scalar and vector, on small random clusters with node affinity."""
    rng = random.Random(7)
    for _ in range(25):
        nodes = []
        for i in range(rng.randrange(1, 9)):
            labels = {"node": f"n{i}", HOST: f"n{i}"}
            if rng.random() < 0.8:
                labels["zone"] = f"z{rng.randrange(3)}"
            if rng.random() < 0.5:
                labels["tier"] = rng.choice(["a", "b"])
            nodes.append(labelled(f"n{i}", labels))
        pods = [
            ep(
                f"e{j}",
                f"n{rng.randrange(len(nodes))}",
                *rng.sample(["foo", "bar"], rng.randrange(3)),
                ns=rng.choice(["default", "other"]),
                terminating=rng.random() < 0.1,
            )
            for j in range(rng.randrange(12))
        ]
        constraints = [
            rng.choice([hard, soft])(
                rng.randrange(1, 3),
                rng.choice(["zone", "node", HOST]),
                exists(rng.choice(["foo", "bar"])),
            )
            for _ in range(rng.randrange(1, 3))
        ]
        affinity = node_affinity("tier", "In", ["a"]) if rng.random() < 0.3 else None
        pod = incoming(["foo"], *constraints, affinity=affinity)
        evaluate(pod, nodes, pods)
        cut = rng.randrange(len(nodes) + 1)
        if cut:
            run_score(pod, nodes[:cut], nodes[cut:], pods)


# --------------------------------------------------------------------------- end to end


def policy_plugins(policy: dict[str, Any]) -> Callable[..., ScheduleResult]:
    filters, scorers = build_plugins(resolve_policy(decode_policy(policy).policy))
    return functools.partial(
        decide, FilterStage(filters), ScoreStage(scorers, rng=random.Random(1))
    )


def test_policy_alias_resolves_both_and_orders_the_predicate() -> None:
    resolved = resolve_policy(
        decode_policy(
            {
                "predicates": [
                    {"name": "MatchInterPodAffinity"},
                    {"name": "PodTopologySpread"},
                    {"name": "NoVolumeZoneConflict"},
                ],
                "priorities": [{"name": "PodTopologySpread", "weight": 2}],
            }
        ).policy
    )
    assert resolved.predicate_names == (
        "NoVolumeZoneConflict",
        "EvenPodsSpread",
        "MatchInterPodAffinity",
    )
    assert resolved.priority_weights == (("EvenPodsSpreadPriority", 2),)


def test_scheduling_one_by_one_spreads_evenly_over_zones() -> None:
    """Nine pods with a hard zone constraint and a soft hostname one, placed one at a time
    (each assumed into the snapshot): 3 per zone, never two on a node."""
    algo = policy_plugins(
        {
            "predicates": [{"name": "EvenPodsSpread"}],
            "priorities": [{"name": "EvenPodsSpreadPriority", "weight": 1}],
        }
    )
    nodes = [host(f"n{i}", f"z{i % 3}") for i in range(9)]
    snapshot = Snapshot(node_infos(nodes, ()))
    placed: list[str] = []
    for k in range(9):
        pod = PodInfo(
            make_pod(f"w{k}")
            .label("app", "web")
            .spec(
                topologySpreadConstraints=[
                    hard(1, "zone", equals("app", "web")),
                    soft(1, HOST, equals("app", "web")),
                ]
            )
            .obj()
        )
        result = algo(pod, snapshot)
        assert result.node is not None, result.message
        placed.append(result.node)
        info = snapshot.get(result.node)
        assert info is not None
        changed = info.clone()
        changed.add_pod(PodInfo(make_pod(f"w{k}").label("app", "web").node(result.node).obj()))
        snapshot.replace_node_info(changed)
    assert sorted(placed) == sorted(n.metadata.name for n in nodes)


def test_fit_error_counts_both_reasons() -> None:
    algo = policy_plugins({"predicates": [{"name": "PodTopologySpread"}], "priorities": []})
    nodes = (
        zn("node-a", "zone1"),
        zn("node-b", "zone1"),
        labelled("node-c", {"node": "node-c"}),
        zn("node-x", "zone2"),
    )
    pods = (
        ep("p-b1", "node-b", "foo"),
        ep("p-b2", "node-b", "foo"),
        ep("p-b3", "node-b", "foo"),
        ep("p-x1", "node-x", "foo"),
    )
    snapshot = Snapshot(node_infos(nodes, pods))
    pod = PodInfo(incoming(["foo"], *ZONE_NODE_FOO))
    # zone1 = 3, zone2 = 1: node-a and node-b too skewed by zone; node-x by node (1 + 1 - 0,
    # node-a holding none); node-c lacks 'zone'.
    result = algo(pod, snapshot, explain=True)
    assert result.node is None
    assert result.message == (
        "0/4 nodes are available: 1 node(s) didn't match pod topology spread constraints "
        "(missing required label), 3 node(s) didn't match pod topology spread constraints."
    )
    assert result.failed == {"node-a": SKEW, "node-b": SKEW, "node-c": LABEL, "node-x": SKEW}
    # The missing label is unresolvable (preemption skips node-c), the skew is not.
    assert result.unresolvable == {"node-c"}
    assert result.failed_plugins == {names.EVEN_PODS_SPREAD}
    # Once node-b's pods are gone (zone1 = 0), zone1's nodes fit again.
    snapshot.replace_node_info(node_infos(nodes[1:2], ())[0])
    result = algo(pod, snapshot, explain=True)
    assert sorted(result.feasible_nodes) == ["node-a", "node-b"]
    assert result.failed == {"node-c": LABEL, "node-x": SKEW}


def test_priority_scores_reported_on_the_0_to_10_scale() -> None:
    algo = policy_plugins(
        {"predicates": [], "priorities": [{"name": "PodTopologySpread", "weight": 1}]}
    )
    case = SCORE_CASES[3]  # "one constraint on node, all 4 nodes are candidates"
    snapshot = Snapshot(node_infos(case.nodes, case.pods))
    result = algo(PodInfo(case.pod), snapshot, explain=True)
    assert result.node == "node-c"
    assert {n: s[names.EVEN_PODS_SPREAD_PRIORITY] for n, s in result.scores.items()} == dict(
        zip(["node-a", "node-b", "node-c", "node-d"], case.want10, strict=True)
    )


def test_queue_moves_a_spread_pod_when_a_pod_it_counts_is_bound() -> None:
    q = SchedulingQueue()
    waiting = PodInfo(
        make_pod("w")
        .uid("uid-w")
        .label("app", "web")
        .spec(topologySpreadConstraints=[hard(1, "zone", equals("app", "web"))])
        .obj()
    )
    soft_only = PodInfo(
        make_pod("s")
        .uid("uid-s")
        .label("app", "web")
        .spec(topologySpreadConstraints=[soft(1, "zone", equals("app", "web"))])
        .obj()
    )
    for p in (waiting, soft_only):
        q.add(p, 0.0)
        got = q.pop(0.0)
        assert got is not None
        assert q.add_unschedulable_if_not_present(p, got.cycle, 0.0) == "unschedulable"
    other_ns = PodInfo(make_pod("o").ns("other").label("app", "web").node("n").obj())
    unrelated = PodInfo(make_pod("u").label("app", "db").node("n").obj())
    assert q.assigned_pod_added(other_ns, 2.0) == 0
    assert q.assigned_pod_added(unrelated, 2.0) == 0
    counted = PodInfo(make_pod("c").label("app", "web").node("n").obj())
    assert q.assigned_pod_added(counted, 2.0) == 1
    assert q.lookup(waiting.key)[0] == "active"
    assert q.lookup(soft_only.key)[0] == "unschedulable"


def test_preemption_evicts_where_the_spread_allows() -> None:
    """node-a (zone1) holds two low-priority 'foo' pods, node-x (zone2) is full with a
    low-priority 'bar' pod, node-c lacks 'zone'. The preemptor fits nowhere; preemption skips
    node-c (unresolvable), could free zone1 only by evicting both 'foo' pods, and frees node-x
    by evicting the one 'bar' pod: node-x wins."""
    filters, _ = build_plugins(
        resolve_policy(
            decode_policy(
                {"predicates": [{"name": "PodFitsResources"}, {"name": "EvenPodsSpread"}]}
            ).policy
        )
    )
    algo = functools.partial(decide, FilterStage(filters), ScoreStage([], rng=random.Random(1)))
    nodes = [
        make_node("node-a").label("zone", "zone1").capacity(cpu="4", pods=10).obj(),
        make_node("node-x").label("zone", "zone2").capacity(cpu="1", pods=10).obj(),
        make_node("node-c").capacity(cpu="4", pods=10).obj(),
    ]
    low = [
        make_pod("a1").label("foo", "").node("node-a").req(cpu="100m").obj(),
        make_pod("a2").label("foo", "").node("node-a").req(cpu="100m").obj(),
        make_pod("x1").label("bar", "").node("node-x").req(cpu="1").obj(),
    ]
    snapshot = Snapshot(node_infos(nodes, low))
    preemptor = PodInfo(
        make_pod("high")
        .label("foo", "")
        .priority(100)
        .req(cpu="500m")
        .spec(topologySpreadConstraints=[hard(1, "zone", exists("foo"))])
        .obj()
    )
    result = algo(preemptor, snapshot, explain=True)
    assert result.node is None
    assert result.failed == {
        "node-a": SKEW,
        "node-x": ("Insufficient cpu",),
        "node-c": LABEL,
    }
    assert result.unresolvable == {"node-c"}
    outcome = preempt(preemptor, snapshot, result.unresolvable, PredicateFitCheck(filters))
    assert outcome.node == "node-x"
    assert [p.name for p in outcome.victims] == ["x1"]
