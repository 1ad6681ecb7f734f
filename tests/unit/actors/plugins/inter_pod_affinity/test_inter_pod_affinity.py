"""MatchInterPodAffinity, scalar and vector forms, on the v1.14 tables.

Rows are ported from pkg/scheduler/algorithm/predicates/predicates_test.go (TestInterPodAffinity,
19 rows; TestInterPodAffinityWithMultipleNodes, 19 rows) and metadata_test.go
(TestGetTPMapMatchingIncomingAffinityAntiAffinity, 8 rows), keeping their names. The stored
copy read was the release-1.15/1.16-era file; its rows are those of v1.14.

As in Kubernetes' tests, the single-node table puts only the pods naming the tested node into
the cluster, and the multi-node table's node-affinity row also checks MatchNodeSelector. Go's
empty namespace is Podium's "default" (no row tells them apart). A row's expected reasons are
checked where the Go row expects a misfit; the vector form must give every row the scalar
form's reasons.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import pytest
from builders import make_node, make_pod
from scalar_plugins import reasons_of

from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    PluginArgs,
    PredicateError,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_NOT_MATCH,
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    FACTORIES,
    InterPodAffinity,
    InterPodAffinityMeta,
)
from podium.protocol import objects as o
from podium.protocol.labels import node_fields, node_selector_terms_match

FITS: tuple[str, ...] = ()
AFFINITY = (ERR_REASON_AFFINITY_NOT_MATCH, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = (ERR_REASON_AFFINITY_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING = (ERR_REASON_AFFINITY_NOT_MATCH, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)

_names = itertools.count()


# --------------------------------------------------------------------------- builders


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def term(*exprs: dict[str, Any], key: str = "", namespaces: Sequence[str] = ()) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": {"matchExpressions": list(exprs)}}
    if key:
        t["topologyKey"] = key
    if namespaces:
        t["namespaces"] = list(namespaces)
    return t


def affinity(
    required: Sequence[dict[str, Any]] = (),
    anti: Sequence[dict[str, Any]] = (),
    node_affinity: dict[str, Any] | None = None,
) -> dict[str, Any]:
    a: dict[str, Any] = {}
    if required:
        a["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(required)}
    if anti:
        a["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti)}
    if node_affinity is not None:
        a["nodeAffinity"] = node_affinity
    return a


def pod(
    node: str = "",
    labels: Mapping[str, str] | None = None,
    aff: dict[str, Any] | None = None,
    ns: str = "",
    name: str = "",
) -> o.Pod:
    b = make_pod(name or f"p{next(_names)}")
    if ns:
        b.ns(ns)
    if labels:
        b.labels(dict(labels))
    if aff:
        b.affinity(aff)
    if node:
        b.node(node)
    return b.obj()


def node(name: str, labels: Mapping[str, str]) -> o.Node:
    return make_node(name).labels(dict(labels)).obj()


def cluster(nodes: Sequence[o.Node], pods: Sequence[o.Pod]) -> Snapshot:
    """kube's ``CreateNodeNameToInfoMap``: pods land on the node they name (others are dropped)."""
    return Snapshot(
        [
            NodeInfo(n, [PodInfo(p) for p in pods if p.spec.node_name == n.metadata.name])
            for n in nodes
        ]
    )


def evaluate(plugin: InterPodAffinity, p: o.Pod, snapshot: Snapshot) -> dict[str, tuple[str, ...]]:
    """Every node's reasons from the scalar form, checked against the vector form."""
    info = PodInfo(p)
    meta = plugin.pre_filter(info, snapshot)
    scalar = {}
    for n in snapshot.node_infos:
        status = run_filter(plugin, info, meta, n)
        assert status.is_success == (not status.reasons)
        scalar[n.name] = status.reasons
    masks = run_filter_columns(plugin, info, meta, snapshot.columns)
    vector = {name: reasons_of(masks, i) for i, name in enumerate(snapshot.columns.names)}
    assert vector == scalar
    return scalar


# --------------------------------------------------------------------------- TestInterPodAffinity

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = node("machine1", {"region": "r1", "zone": "z11"})


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    pods: tuple[o.Pod, ...] = ()
    want: tuple[str, ...] = FITS


# predicates_test.go@v1.14 TestInterPodAffinity: every row.
CASES = [
    Case(
        "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
        pod(),
    ),
    Case(
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity([term(expr("service", "In", "securityscan", "value2"), key="region")]),
        ),
        (pod("machine1", POD_LABEL),),
    ),
    Case(
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity([term(expr("service", "NotIn", "securityscan3", "value3"), key="region")]),
        ),
        (pod("machine1", POD_LABEL),),
    ),
    Case(
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                [
                    term(
                        expr("service", "In", "securityscan", "value2"),
                        namespaces=["DiffNameSpace"],
                    )
                ]
            ),
        ),
        (pod("machine1", POD_LABEL, ns="ns"),),
        AFFINITY,
    ),
    Case(
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        pod(
            labels=POD_LABEL, aff=affinity([term(expr("service", "In", "antivirusscan", "value2"))])
        ),
        (pod("machine1", POD_LABEL),),
        AFFINITY,
    ),
    Case(
        "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                [
                    term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"), key="region"),
                    term(
                        expr("service", "In", "securityscan"),
                        expr("service", "NotIn", "WrongValue"),
                        key="region",
                    ),
                ]
            ),
        ),
        (pod("machine1", POD_LABEL),),
    ),
    Case(
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                [
                    term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist"), key="region"),
                    term(
                        expr("service", "In", "securityscan2"),
                        expr("service", "NotIn", "WrongValue"),
                        key="region",
                    ),
                ]
            ),
        ),
        (pod("machine1", POD_LABEL),),
        AFFINITY,
    ),
    Case(
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                [term(expr("service", "In", "securityscan", "value2"), key="region")],
                [term(expr("service", "In", "antivirusscan", "value2"), key="node")],
            ),
        ),
        (pod("machine1", POD_LABEL),),
    ),
    Case(
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                [term(expr("service", "In", "securityscan", "value2"), key="region")],
                [term(expr("service", "In", "antivirusscan", "value2"), key="node")],
            ),
        ),
        (
            pod(
                "machine1",
                POD_LABEL,
                affinity(anti=[term(expr("service", "In", "antivirusscan", "value2"), key="node")]),
            ),
        ),
    ),
    Case(
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        pod(
            labels=POD_LABEL2,
            aff=affinity(
                [term(expr("service", "In", "securityscan", "value2"), key="region")],
                [term(expr("service", "In", "securityscan", "value2"), key="zone")],
            ),
        ),
        (pod("machine1", POD_LABEL),),
        ANTI,
    ),
    Case(
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                [term(expr("service", "In", "securityscan", "value2"), key="region")],
                [term(expr("service", "In", "antivirusscan", "value2"), key="node")],
            ),
        ),
        (
            pod(
                "machine1",
                POD_LABEL,
                affinity(anti=[term(expr("service", "In", "securityscan", "value2"), key="zone")]),
            ),
        ),
        EXISTING,
    ),
    Case(
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        pod(
            labels=POD_LABEL,
            aff=affinity([term(expr("service", "NotIn", "securityscan", "value2"), key="region")]),
        ),
        (pod("machine2", POD_LABEL),),
        AFFINITY,
    ),
    Case(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        pod(labels=POD_LABEL),
        (
            pod(
                "machine1",
                POD_LABEL,
                affinity(anti=[term(expr("service", "In", "securityscan", "value2"), key="zone")]),
            ),
        ),
        EXISTING,
    ),
    Case(
        "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
        pod(labels=POD_LABEL),
        (
            pod(
                "machine1",
                POD_LABEL,
                affinity(
                    anti=[term(expr("service", "NotIn", "securityscan", "value2"), key="zone")]
                ),
            ),
        ),
    ),
    Case(
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                anti=[
                    term(expr("service", "Exists"), key="region"),
                    term(expr("security", "Exists"), key="region"),
                ]
            ),
        ),
        (
            pod(
                "machine1",
                POD_LABEL2,
                affinity(anti=[term(expr("security", "Exists"), key="zone")]),
            ),
        ),
        ANTI,
    ),
    Case(
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
        pod(
            labels=POD_LABEL,
            aff=affinity(
                anti=[
                    term(expr("service", "Exists"), key="zone"),
                    term(expr("security", "Exists"), key="zone"),
                ]
            ),
        ),
        (
            pod(
                "machine1",
                POD_LABEL2,
                affinity(anti=[term(expr("security", "Exists"), key="zone")]),
            ),
        ),
        ANTI,
    ),
    Case(
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
        pod(labels=POD_LABEL2, aff=affinity(anti=[term(expr("security", "Exists"), key="zone")])),
        (
            pod(
                "machine1",
                POD_LABEL,
                affinity(
                    anti=[
                        term(expr("service", "Exists"), key="zone"),
                        term(expr("security", "Exists"), key="zone"),
                    ]
                ),
            ),
        ),
        EXISTING,
    ),
    Case(
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
        pod(
            labels={"abc": "", "xyz": ""},
            aff=affinity(
                anti=[
                    term(expr("abc", "Exists"), key="zone"),
                    term(expr("def", "Exists"), key="zone"),
                ]
            ),
        ),
        (
            pod(
                "machine1",
                {"def": "", "xyz": ""},
                affinity(
                    anti=[
                        term(expr("abc", "Exists"), key="zone"),
                        term(expr("def", "Exists"), key="zone"),
                    ]
                ),
            ),
        ),
        EXISTING,
    ),
    Case(
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
        pod(
            labels={"def": "", "xyz": ""},
            aff=affinity(
                anti=[
                    term(expr("abc", "Exists"), key="zone"),
                    term(expr("def", "Exists"), key="zone"),
                ]
            ),
        ),
        (
            pod(
                "machine1",
                {"abc": "", "xyz": ""},
                affinity(
                    anti=[
                        term(expr("abc", "Exists"), key="zone"),
                        term(expr("def", "Exists"), key="zone"),
                    ]
                ),
            ),
        ),
        EXISTING,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_inter_pod_affinity(case: Case) -> None:
    plugin = InterPodAffinity(PluginArgs(names.MATCH_INTER_POD_AFFINITY))
    got = evaluate(plugin, case.pod, cluster([NODE1], case.pods))
    assert got == {"machine1": case.want}


def test_inter_pod_affinity_row_count() -> None:
    assert len(CASES) == 19


# --------------------------------------------------------------------------- multiple nodes

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
US = {"region": "US"}


def r1(zone: str, host: str) -> dict[str, str]:
    return {"region": "r1", "zone": zone, "hostname": host}


@dataclass(frozen=True)
class MultiCase:
    name: str
    pod: o.Pod
    pods: tuple[o.Pod, ...]
    nodes: tuple[o.Node, ...]
    want: Mapping[str, tuple[str, ...]]
    """The predicate's reasons per node (FITS where it passes)."""
    fits: Mapping[str, bool] = field(default_factory=dict)
    """Go's ``fits`` where it also includes MatchNodeSelector (the node-affinity row)."""


# predicates_test.go@v1.14 TestInterPodAffinityWithMultipleNodes: every row.
MULTI_CASES = [
    MultiCase(
        "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
        pod(aff=affinity([term(expr("foo", "In", "bar"), key="region")])),
        (pod("machine1", {"foo": "bar"}, name="p1"),),
        (node("machine1", CHINA), node("machine2", CHINA_AZ1), node("machine3", INDIA)),
        {"machine1": FITS, "machine2": FITS, "machine3": AFFINITY},
    ),
    MultiCase(
        "NodeA and nodeB have same topologyKey and label value. NodeA does not satisfy node affinity rule, but has an existing pod that matches the inter pod affinity rule. The pod can be scheduled onto nodeB.",
        pod(
            aff=affinity(
                [term(expr("foo", "In", "abc"), key="region")],
                node_affinity={
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [expr("hostname", "NotIn", "h1")]}
                        ]
                    }
                },
            )
        ),
        (pod("nodeA", {"foo": "abc"}), pod("nodeB", {"foo": "def"})),
        (
            node("nodeA", {"region": "r1", "hostname": "h1"}),
            node("nodeB", {"region": "r1", "hostname": "h2"}),
        ),
        {"nodeA": FITS, "nodeB": FITS},
        {"nodeA": False, "nodeB": True},
    ),
    MultiCase(
        "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection "
        "should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
        pod(
            labels={"foo": "bar", "service": "securityscan"},
            aff=affinity(
                [
                    term(expr("foo", "In", "bar"), key="zone"),
                    term(expr("service", "In", "securityscan"), key="zone"),
                ]
            ),
        ),
        (pod("nodeA", {"foo": "bar"}, name="p1"),),
        (
            node("nodeA", {"zone": "az1", "hostname": "h1"}),
            node("nodeB", {"zone": "az2", "hostname": "h2"}),
        ),
        {"nodeA": FITS, "nodeB": FITS},
    ),
    MultiCase(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        pod(aff=affinity(anti=[term(expr("foo", "In", "abc"), key="region")])),
        (pod("nodeA", {"foo": "abc"}),),
        (
            node("nodeA", {"region": "r1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ),
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    MultiCase(
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
        pod(
            aff=affinity(
                anti=[
                    term(expr("foo", "In", "abc"), key="region"),
                    term(expr("service", "In", "securityscan"), key="zone"),
                ]
            )
        ),
        (pod("nodeA", {"foo": "abc", "service": "securityscan"}),),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z2", "nodeB"))),
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    MultiCase(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
        pod(aff=affinity(anti=[term(expr("foo", "In", "abc"), key="region")])),
        (pod("nodeA", {"foo": "abc"}),),
        (node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)),
        {"nodeA": ANTI, "nodeB": ANTI, "nodeC": FITS},
    ),
    # Go runs this row without predicate metadata; Podium always has it, with the same answer.
    MultiCase(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. NodeC has an existing pod that match the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB and nodeC but can be schedulerd onto nodeD",
        pod(
            labels={"foo": "123"}, aff=affinity(anti=[term(expr("foo", "In", "bar"), key="region")])
        ),
        (
            pod("nodeA", {"foo": "bar"}),
            pod("nodeC", aff=affinity(anti=[term(expr("foo", "In", "123"), key="region")])),
        ),
        (node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA), node("nodeD", US)),
        {"nodeA": ANTI, "nodeB": ANTI, "nodeC": EXISTING, "nodeD": FITS},
    ),
    MultiCase(
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
        pod(
            labels={"foo": "123"},
            ns="NS1",
            aff=affinity(anti=[term(expr("foo", "In", "bar"), key="region")]),
        ),
        (
            pod("nodeA", {"foo": "bar"}, ns="NS1"),
            pod(
                "nodeC", ns="NS2", aff=affinity(anti=[term(expr("foo", "In", "123"), key="region")])
            ),
        ),
        (node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)),
        {"nodeA": ANTI, "nodeB": ANTI, "nodeC": FITS},
    ),
    MultiCase(
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
        pod(labels={"foo": ""}),
        (pod("nodeA", aff=affinity(anti=[term(expr("foo", "Exists"), key="invalid-node-label")])),),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z1", "nodeB"))),
        {"nodeA": FITS, "nodeB": FITS},
    ),
    MultiCase(
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
        pod(aff=affinity(anti=[term(expr("foo", "Exists"), key="invalid-node-label")])),
        (pod("nodeA", {"foo": ""}),),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z1", "nodeB"))),
        {"nodeA": FITS, "nodeB": FITS},
    ),
    MultiCase(
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
        pod(labels={"foo": "", "bar": ""}),
        (
            pod("nodeA", name="pod1", aff=affinity(anti=[term(expr("foo", "Exists"), key="zone")])),
            pod(
                "nodeA", name="pod2", aff=affinity(anti=[term(expr("bar", "Exists"), key="region")])
            ),
        ),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z2", "nodeB"))),
        {"nodeA": EXISTING, "nodeB": EXISTING},
    ),
    MultiCase(
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
        pod(
            aff=affinity(
                anti=[
                    term(expr("foo", "Exists"), key="zone"),
                    term(expr("bar", "Exists"), key="region"),
                ]
            )
        ),
        (pod("nodeA", {"foo": ""}), pod("nodeB", {"bar": ""})),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z2", "nodeB"))),
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    MultiCase(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
        pod(labels={"foo": "", "bar": ""}),
        (
            pod(
                "nodeA",
                aff=affinity(
                    anti=[
                        term(expr("foo", "Exists"), key="invalid-node-label"),
                        term(expr("bar", "Exists"), key="zone"),
                    ]
                ),
            ),
        ),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z2", "nodeB"))),
        {"nodeA": EXISTING, "nodeB": FITS},
    ),
    MultiCase(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
        pod(
            aff=affinity(
                anti=[
                    term(expr("foo", "Exists"), key="invalid-node-label"),
                    term(expr("bar", "Exists"), key="zone"),
                ]
            )
        ),
        (pod("nodeA", {"foo": "", "bar": ""}, name="podA"),),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z2", "nodeB"))),
        {"nodeA": ANTI, "nodeB": FITS},
    ),
    MultiCase(
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
        pod(labels={"foo": "", "bar": ""}),
        (
            pod(
                "nodeA",
                aff=affinity(
                    anti=[
                        term(expr("foo", "Exists"), key="region"),
                        term(expr("bar", "Exists"), key="zone"),
                    ]
                ),
            ),
        ),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z2", "nodeB"))),
        {"nodeA": EXISTING, "nodeB": EXISTING},
    ),
    MultiCase(
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
        pod(
            aff=affinity(
                anti=[
                    term(expr("foo", "Exists"), key="region"),
                    term(expr("bar", "Exists"), key="zone"),
                ]
            )
        ),
        (pod("nodeA", {"foo": "", "bar": ""}),),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z2", "nodeB"))),
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    MultiCase(
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
        pod(labels={"foo": "", "bar": ""}),
        (
            pod(
                "nodeA",
                aff=affinity(
                    anti=[
                        term(expr("foo", "Exists"), key="zone"),
                        term(expr("labelA", "Exists"), key="zone"),
                    ]
                ),
            ),
            pod(
                "nodeB",
                aff=affinity(
                    anti=[
                        term(expr("bar", "Exists"), key="zone"),
                        term(expr("labelB", "Exists"), key="zone"),
                    ]
                ),
            ),
        ),
        (
            node("nodeA", r1("z1", "nodeA")),
            node("nodeB", r1("z2", "nodeB")),
            node("nodeC", r1("z3", "nodeC")),
        ),
        {"nodeA": EXISTING, "nodeB": EXISTING, "nodeC": FITS},
    ),
    MultiCase(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
        pod(
            aff=affinity(
                [term(expr("foo", "Exists"), key="region"), term(expr("bar", "Exists"), key="zone")]
            )
        ),
        (pod("nodeA", {"foo": "", "bar": ""}, name="pod1"),),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z1", "nodeB"))),
        {"nodeA": FITS, "nodeB": FITS},
    ),
    MultiCase(
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match, and the match logic should be satified on the same pod",
        pod(
            aff=affinity(
                [term(expr("foo", "Exists"), key="region"), term(expr("bar", "Exists"), key="zone")]
            )
        ),
        (pod("nodeA", {"foo": ""}, name="pod1"), pod("nodeB", {"bar": ""}, name="pod2")),
        (node("nodeA", r1("z1", "nodeA")), node("nodeB", r1("z2", "nodeB"))),
        {"nodeA": AFFINITY, "nodeB": AFFINITY},
    ),
]


@pytest.mark.parametrize("case", MULTI_CASES, ids=attrgetter("name"))
def test_inter_pod_affinity_with_multiple_nodes(case: MultiCase) -> None:
    plugin = InterPodAffinity(PluginArgs(names.MATCH_INTER_POD_AFFINITY))
    got = evaluate(plugin, case.pod, cluster(case.nodes, case.pods))
    assert got == case.want
    # Go's row also runs MatchNodeSelector when the pod has node affinity.
    a = case.pod.spec.affinity
    if a is not None and a.node_affinity is not None:
        required = a.node_affinity.required_during_scheduling_ignored_during_execution
        assert required is not None
        fits = {
            n.metadata.name: not got[n.metadata.name]
            and node_selector_terms_match(
                required.node_selector_terms, n.metadata.labels, node_fields(n.metadata.name)
            )
            for n in case.nodes
        }
        assert fits == case.fits


def test_inter_pod_affinity_with_multiple_nodes_row_count() -> None:
    assert len(MULTI_CASES) == 19


# --------------------------------------------------------------------------- metadata


def tp_terms(*keys: str) -> list[dict[str, Any]]:
    """metadata_test.go ``newPodAffinityTerms``: one Exists term per key, topology "hostname"."""
    return [term(expr(k, "Exists"), key="hostname") for k in keys]


def normal_pod(*labels: str) -> o.Pod:
    return pod("nodeA", dict.fromkeys(labels, ""), name="normal")


NODE_A = node("nodeA", {"hostname": "nodeA"})
PAIR_A = frozenset({("hostname", "nodeA")})
NONE: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class MetaCase:
    name: str
    pod: o.Pod
    existing: tuple[o.Pod, ...]
    want_affinity: frozenset[tuple[str, str]]
    want_anti: frozenset[tuple[str, str]]


# metadata_test.go@v1.14 TestGetTPMapMatchingIncomingAffinityAntiAffinity: every row (the
# topology pairs; Go's maps also record which pods, which Podium only counts).
META_CASES = [
    MetaCase("nil test", pod(name="aaa-normal"), (), NONE, NONE),
    MetaCase(
        "incoming pod without affinity/anti-affinity causes a no-op",
        pod(name="aaa-normal"),
        (normal_pod("aaa"),),
        NONE,
        NONE,
    ),
    MetaCase(
        "no pod has label that violates incoming pod's affinity and anti-affinity",
        pod(name="aaa-anti", aff=affinity(tp_terms("aaa"), tp_terms("aaa"))),
        (normal_pod("bbb"),),
        NONE,
        NONE,
    ),
    MetaCase(
        "existing pod matches incoming pod's affinity and anti-affinity - single term case",
        pod(name="affi-antiaffi", aff=affinity(tp_terms("aaa"), tp_terms("aaa"))),
        (normal_pod("aaa"),),
        PAIR_A,
        PAIR_A,
    ),
    MetaCase(
        "existing pod matches incoming pod's affinity and anti-affinity - mutiple terms case",
        pod(name="affi-antiaffi", aff=affinity(tp_terms("aaa", "bbb"), tp_terms("aaa"))),
        (normal_pod("aaa", "bbb"),),
        PAIR_A,
        PAIR_A,
    ),
    MetaCase(
        "existing pod not match incoming pod's affinity but matches anti-affinity",
        pod(name="affi-antiaffi", aff=affinity(tp_terms("aaa", "bbb"), tp_terms("aaa", "bbb"))),
        (normal_pod("aaa"),),
        NONE,
        PAIR_A,
    ),
    MetaCase(
        "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1",
        pod(name="anaffi-antiaffiti", aff=affinity(tp_terms("aaa", "ccc"), tp_terms("aaa", "ccc"))),
        (normal_pod("aaa", "bbb"),),
        NONE,
        PAIR_A,
    ),
    MetaCase(
        "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2",
        pod(name="affi-antiaffi", aff=affinity(tp_terms("aaa", "bbb"), tp_terms("aaa", "bbb"))),
        (normal_pod("bbb"),),
        NONE,
        PAIR_A,
    ),
]


@pytest.mark.parametrize("case", META_CASES, ids=attrgetter("name"))
def test_get_tp_map_matching_incoming_affinity_anti_affinity(case: MetaCase) -> None:
    plugin = InterPodAffinity(PluginArgs(names.MATCH_INTER_POD_AFFINITY))
    meta = plugin.pre_filter(PodInfo(case.pod), cluster([NODE_A], case.existing))
    if meta is SKIP:  # no terms anywhere: v1.14's maps are empty
        assert not case.want_affinity
        assert not case.want_anti
        return
    assert isinstance(meta, InterPodAffinityMeta)
    assert frozenset(meta.affinity_pairs) == case.want_affinity
    assert frozenset(meta.anti_affinity_pairs) == case.want_anti


def test_meta_row_count() -> None:
    assert len(META_CASES) == 8


# --------------------------------------------------------------------------- Podium's own


def plugin() -> InterPodAffinity:
    return FACTORIES[names.MATCH_INTER_POD_AFFINITY](PluginArgs("InterPodAffinity"))


def test_factory_reports_under_the_given_name() -> None:
    assert plugin().name == "InterPodAffinity"


def test_skip_when_nothing_constrains_the_pod() -> None:
    snapshot = cluster([NODE1], [pod("machine1", POD_LABEL)])
    p = PodInfo(pod(labels=POD_LABEL))
    meta = plugin().pre_filter(p, snapshot)
    assert meta is SKIP
    assert run_filter(plugin(), p, meta, snapshot.node_infos[0]) == SUCCESS
    assert run_filter_columns(plugin(), p, meta, snapshot.columns) == []


def test_existing_anti_affinity_in_another_namespace_is_ignored() -> None:
    existing = pod(
        "machine1", aff=affinity(anti=[term(expr("service", "Exists"), key="zone")]), ns="other"
    )
    assert evaluate(plugin(), pod(labels=POD_LABEL), cluster([NODE1], [existing])) == {
        "machine1": FITS
    }


def test_term_namespaces_list_the_namespaces_searched() -> None:
    incoming = pod(
        labels=POD_LABEL,
        aff=affinity(anti=[term(expr("service", "Exists"), key="zone", namespaces=["other"])]),
    )
    existing = pod("machine1", POD_LABEL, ns="other")
    assert evaluate(plugin(), incoming, cluster([NODE1], [existing])) == {"machine1": ANTI}


def test_first_pod_of_a_group_needs_every_term_to_match_itself() -> None:
    incoming = pod(
        labels={"app": "a"},
        aff=affinity(
            [term(expr("app", "In", "a"), key="zone"), term(expr("tier", "Exists"), key="zone")]
        ),
    )
    assert evaluate(plugin(), incoming, cluster([NODE1], [])) == {"machine1": AFFINITY}


def test_affinity_pairs_come_from_other_nodes_in_the_same_topology() -> None:
    # Step 2 is per node; the existing anti-affinity (step 1) decides first where it fails.
    nodes = [
        node("n1", {"zone": "a"}),
        node("n2", {"zone": "a"}),
        node("n3", {"zone": "b"}),
        node("n4", {}),
    ]
    pods = [
        pod("n1", {"app": "db"}, affinity(anti=[term(expr("app", "In", "web"), key="zone")])),
        pod("n3", {"app": "cache"}),
    ]
    incoming = pod(
        labels={"app": "web"}, aff=affinity([term(expr("app", "In", "cache"), key="zone")])
    )
    got = evaluate(plugin(), incoming, cluster(nodes, pods))
    assert got == {"n1": EXISTING, "n2": EXISTING, "n3": FITS, "n4": AFFINITY}


def test_row_without_node_object_is_judged_without_labels() -> None:
    incoming = pod(labels=POD_LABEL, aff=affinity([term(expr("service", "Exists"), key="region")]))
    snapshot = Snapshot(
        [NodeInfo(NODE1, [PodInfo(pod("machine1", POD_LABEL))]), NodeInfo(name="ghost")]
    )
    assert evaluate(plugin(), incoming, snapshot) == {"machine1": FITS, "ghost": AFFINITY}


@pytest.mark.parametrize(
    ("incoming", "existing"),
    [
        pytest.param(
            pod(aff=affinity([term(expr("service", "In"), key="zone")])), (), id="own affinity"
        ),
        pytest.param(
            pod(),
            (
                pod(
                    "machine1",
                    aff=affinity(anti=[term(expr("service", "Exists", "x"), key="zone")]),
                ),
            ),
            id="existing anti-affinity",
        ),
    ],
)
def test_invalid_selector_is_a_predicate_error(
    incoming: o.Pod, existing: tuple[o.Pod, ...]
) -> None:
    with pytest.raises(PredicateError, match="invalid label selector"):
        plugin().pre_filter(PodInfo(incoming), cluster([NODE1], existing))


def test_term_cache_follows_changed_pods() -> None:
    p = plugin()
    incoming = PodInfo(pod(labels=POD_LABEL))
    old = NodeInfo(
        NODE1,
        [
            PodInfo(
                pod("machine1", aff=affinity(anti=[term(expr("service", "Exists"), key="zone")]))
            )
        ],
    )
    assert evaluate(p, pod(labels=POD_LABEL), Snapshot([old])) == {"machine1": EXISTING}
    new = NodeInfo(
        NODE1,
        [PodInfo(pod("machine1", aff=affinity(anti=[term(expr("other", "Exists"), key="zone")])))],
    )
    assert p.pre_filter(incoming, Snapshot([new])) is SKIP


def test_snapshot_changes_reach_the_existing_anti_affinity() -> None:
    # Snapshot.node_infos_with_affinity is kept in step by replace_node_info.
    p = plugin()
    incoming = pod(labels=POD_LABEL)
    snapshot = cluster([NODE1, node("machine2", {"zone": "z2"})], [])
    assert evaluate(p, incoming, snapshot) == {"machine1": FITS, "machine2": FITS}
    repelling = pod("machine2", aff=affinity(anti=[term(expr("service", "Exists"), key="zone")]))
    updated = snapshot.node_infos[1].clone()
    updated.add_pod(PodInfo(repelling))
    snapshot.replace_node_info(updated)
    assert evaluate(p, incoming, snapshot) == {"machine1": FITS, "machine2": EXISTING}
    snapshot.replace_node_info(NodeInfo(snapshot.node_infos[1].node))
    assert p.pre_filter(PodInfo(incoming), snapshot) is SKIP


def test_kept_meta_follows_pairs_appearing_leaving_and_relabelled_nodes() -> None:
    # The meta of a pod's class is kept and brought up to date from the snapshot's changes,
    # with its tables over label codes; each step must judge as a plugin seeing it afresh.
    p = plugin()
    incoming = pod(
        labels=POD_LABEL,
        aff=affinity(
            required=[term(expr("security", "In", "S1"), key="zone")],
            anti=[term(expr("service", "In", "securityscan"), key="hostname")],
        ),
    )
    friend = PodInfo(pod("m1", labels=POD_LABEL2))
    web1 = PodInfo(pod("m1", labels=POD_LABEL))
    snapshot = cluster(
        [
            node("m1", {"hostname": "m1", "zone": "z1"}),
            node("m2", {"hostname": "m2", "zone": "z1"}),
            node("m3", {"hostname": "m3", "zone": "z2"}),
        ],
        [],
    )

    def change(name: str, add: PodInfo | None = None, remove: PodInfo | None = None) -> None:
        updated = snapshot.by_name[name].clone()
        if add is not None:
            updated.add_pod(add)
        if remove is not None:
            updated.remove_pod(remove)
        snapshot.replace_node_info(updated)

    def judged() -> dict[str, tuple[str, ...]]:
        kept = evaluate(p, incoming, snapshot)
        assert kept == evaluate(plugin(), incoming, snapshot)
        return kept

    change("m1", add=friend)
    change("m1", add=web1)
    assert judged() == {"m1": ANTI, "m2": FITS, "m3": AFFINITY}
    change("m2", add=PodInfo(pod("m2", labels=POD_LABEL)))
    assert judged() == {"m1": ANTI, "m2": ANTI, "m3": AFFINITY}
    guard = pod("m2", aff=affinity(anti=[term(expr("service", "Exists"), key="hostname")]))
    change("m2", add=PodInfo(guard))
    assert judged() == {"m1": ANTI, "m2": EXISTING, "m3": AFFINITY}
    change("m1", remove=web1)
    assert judged() == {"m1": FITS, "m2": EXISTING, "m3": AFFINITY}
    # New Node objects with other labels: the columns hand out new code tables (here m1's
    # hostname takes code 0, the code m1 had).
    relabelled = snapshot.by_name["m1"].clone()
    relabelled.set_node(node("m1", {"hostname": "m2", "zone": "z1"}))
    snapshot.replace_node_info(relabelled)
    assert judged() == {"m1": EXISTING, "m2": EXISTING, "m3": AFFINITY}
    snapshot.replace_node_info(NodeInfo(node("m3", {"hostname": "m3", "zone": "z1"})))
    assert judged() == {"m1": EXISTING, "m2": EXISTING, "m3": FITS}
    change("m1", remove=friend)
    assert judged() == {"m1": EXISTING, "m2": EXISTING, "m3": AFFINITY}
