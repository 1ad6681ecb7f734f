"""CheckServiceAffinity, scalar and vector forms.

Rows are ported from pkg/scheduler/algorithm/predicates/predicates_test.go@v1.14
TestServiceAffinity (11 rows), keeping their names. Go runs each row twice, with and without
precomputed metadata; Podium has one path (``pre_filter`` always runs), so each row runs once.
The Go rows' nodes machine1..machine5 all exist, with the pods placed by nodeName; Go's empty
namespace is Podium's "default" (no row tells them apart).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import decode, make_node, make_pod
from scalar_plugins import reasons_of

from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    PluginArgs,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.service_affinity import (
    ERR_REASON_SERVICE_AFFINITY_VIOLATED,
    FACTORIES,
    ServiceAffinity,
)
from podium.protocol import objects as o

_names = itertools.count()

SELECTOR = {"foo": "bar"}
NODES = (
    make_node("machine1").labels({"region": "r1", "zone": "z11"}).obj(),
    make_node("machine2").labels({"region": "r1", "zone": "z12"}).obj(),
    make_node("machine3").labels({"region": "r2", "zone": "z21"}).obj(),
    make_node("machine4").labels({"region": "r2", "zone": "z22"}).obj(),
    make_node("machine5").labels({"region": "r2", "zone": "z22"}).obj(),
)


def pod(
    node: str = "",
    labels: Mapping[str, str] | None = None,
    ns: str = "",
    node_selector: Mapping[str, str] | None = None,
) -> o.Pod:
    b = make_pod(f"p{next(_names)}")
    if ns:
        b.ns(ns)
    if labels:
        b.labels(dict(labels))
    if node_selector:
        b.node_selector(dict(node_selector))
    if node:
        b.node(node)
    return b.obj()


def svc(selector: Mapping[str, str], ns: str = "default") -> o.Service:
    meta = {"name": f"svc{next(_names)}", "namespace": ns}
    obj: o.Service = decode(o.Service, {"metadata": meta, "spec": {"selector": dict(selector)}})
    return obj


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    node: str
    labels: tuple[str, ...]
    fits: bool
    pods: tuple[o.Pod, ...] = ()
    services: tuple[o.Service, ...] = ()


# predicates_test.go@v1.14 TestServiceAffinity: every row.
CASES = [
    Case("nothing scheduled", pod(), "machine1", ("region",), True),
    Case(
        "pod with region label match",
        pod(node_selector={"region": "r1"}),
        "machine1",
        ("region",),
        True,
    ),
    Case(
        "pod with region label mismatch",
        pod(node_selector={"region": "r2"}),
        "machine1",
        ("region",),
        False,
    ),
    Case(
        "service pod on same node",
        pod(labels=SELECTOR),
        "machine1",
        ("region",),
        True,
        (pod("machine1", SELECTOR),),
        (svc(SELECTOR),),
    ),
    Case(
        "service pod on different node, region match",
        pod(labels=SELECTOR),
        "machine1",
        ("region",),
        True,
        (pod("machine2", SELECTOR),),
        (svc(SELECTOR),),
    ),
    Case(
        "service pod on different node, region mismatch",
        pod(labels=SELECTOR),
        "machine1",
        ("region",),
        False,
        (pod("machine3", SELECTOR),),
        (svc(SELECTOR),),
    ),
    Case(
        "service in different namespace, region mismatch",
        pod(labels=SELECTOR, ns="ns1"),
        "machine1",
        ("region",),
        True,
        (pod("machine3", SELECTOR, ns="ns1"),),
        (svc(SELECTOR, ns="ns2"),),
    ),
    Case(
        "pod in different namespace, region mismatch",
        pod(labels=SELECTOR, ns="ns1"),
        "machine1",
        ("region",),
        True,
        (pod("machine3", SELECTOR, ns="ns2"),),
        (svc(SELECTOR, ns="ns1"),),
    ),
    Case(
        "service and pod in same namespace, region mismatch",
        pod(labels=SELECTOR, ns="ns1"),
        "machine1",
        ("region",),
        False,
        (pod("machine3", SELECTOR, ns="ns1"),),
        (svc(SELECTOR, ns="ns1"),),
    ),
    Case(
        "service pod on different node, multiple labels, not all match",
        pod(labels=SELECTOR),
        "machine1",
        ("region", "zone"),
        False,
        (pod("machine2", SELECTOR),),
        (svc(SELECTOR),),
    ),
    Case(
        "service pod on different node, multiple labels, all match",
        pod(labels=SELECTOR),
        "machine4",
        ("region", "zone"),
        True,
        (pod("machine5", SELECTOR),),
        (svc(SELECTOR),),
    ),
]


def cluster(
    pods: Sequence[o.Pod], services: Sequence[o.Service] = (), nodes: Sequence[o.Node] = NODES
) -> Snapshot:
    infos = [
        NodeInfo(n, [PodInfo(p) for p in pods if p.spec.node_name == n.metadata.name])
        for n in nodes
    ]
    objects = ClusterObjects(
        services={f"{s.metadata.namespace}/{s.metadata.name}": s for s in services}
    )
    return Snapshot(infos, objects)


def evaluate(plugin: ServiceAffinity, p: o.Pod, snapshot: Snapshot) -> dict[str, tuple[str, ...]]:
    """Every node's reasons from the scalar form, checked against the vector form."""
    info = PodInfo(p)
    meta = plugin.pre_filter(info, snapshot)
    scalar = {n.name: run_filter(plugin, info, meta, n).reasons for n in snapshot.node_infos}
    masks = run_filter_columns(plugin, info, meta, snapshot.columns)
    assert {name: reasons_of(masks, i) for i, name in enumerate(snapshot.columns.names)} == scalar
    return scalar


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_service_affinity(case: Case) -> None:
    plugin = ServiceAffinity(PluginArgs(names.CHECK_SERVICE_AFFINITY, labels=case.labels))
    got = evaluate(plugin, case.pod, cluster(case.pods, case.services))
    assert got[case.node] == (() if case.fits else (ERR_REASON_SERVICE_AFFINITY_VIOLATED,))


def test_row_count() -> None:
    assert len(CASES) == 11


# --------------------------------------------------------------------------- Podium's own


def test_factory_reports_under_the_policy_entry_name() -> None:
    plugin = FACTORIES[names.CHECK_SERVICE_AFFINITY](PluginArgs("zone-affinity", labels=("zone",)))
    assert (plugin.name, plugin.labels) == ("zone-affinity", ("zone",))


def test_skip_when_no_label_is_wanted() -> None:
    plugin = ServiceAffinity(PluginArgs(names.CHECK_SERVICE_AFFINITY, labels=("region",)))
    snapshot = cluster([pod("machine3", SELECTOR)])  # no service selects the pod
    p = PodInfo(pod(labels=SELECTOR))
    meta = plugin.pre_filter(p, snapshot)
    assert meta is SKIP
    assert run_filter(plugin, p, meta, snapshot.node_infos[0]) == SUCCESS
    assert run_filter_columns(plugin, p, meta, snapshot.columns) == []


def test_no_labels_configured_skips() -> None:
    plugin = ServiceAffinity(PluginArgs(names.CHECK_SERVICE_AFFINITY))
    assert plugin.pre_filter(PodInfo(pod(node_selector={"region": "r9"})), cluster([])) is SKIP


def test_whole_cluster_follows_the_first_pod() -> None:
    plugin = ServiceAffinity(PluginArgs(names.CHECK_SERVICE_AFFINITY, labels=("region", "zone")))
    snapshot = cluster([pod("machine4", SELECTOR)], [svc(SELECTOR)])
    got = evaluate(plugin, pod(labels=SELECTOR), snapshot)
    fail = (ERR_REASON_SERVICE_AFFINITY_VIOLATED,)
    assert got == {
        "machine1": fail,
        "machine2": fail,
        "machine3": fail,
        "machine4": (),
        "machine5": (),
    }


def test_node_selector_wins_over_the_first_pod_and_an_unknown_value_fails_everywhere() -> None:
    plugin = ServiceAffinity(PluginArgs(names.CHECK_SERVICE_AFFINITY, labels=("region", "zone")))
    snapshot = cluster([pod("machine4", SELECTOR)], [svc(SELECTOR)])
    got = evaluate(plugin, pod(labels=SELECTOR, node_selector={"zone": "nowhere"}), snapshot)
    assert all(reasons == (ERR_REASON_SERVICE_AFFINITY_VIOLATED,) for reasons in got.values())


def test_first_pod_node_without_the_label_leaves_it_free() -> None:
    plugin = ServiceAffinity(PluginArgs(names.CHECK_SERVICE_AFFINITY, labels=("rack",)))
    snapshot = cluster([pod("machine3", SELECTOR)], [svc(SELECTOR)])
    assert plugin.pre_filter(PodInfo(pod(labels=SELECTOR)), snapshot) is SKIP


def test_service_with_empty_selector_selects_nothing() -> None:
    plugin = ServiceAffinity(PluginArgs(names.CHECK_SERVICE_AFFINITY, labels=("region",)))
    snapshot = cluster([pod("machine3", SELECTOR)], [svc({})])
    assert plugin.pre_filter(PodInfo(pod(labels=SELECTOR)), snapshot) is SKIP
