"""CheckVolumeBinding on the volume binder's tables plus Podium's rows.

Rows come from pkg/controller/volume/persistentvolume/scheduler_binder_test.go (v1.13/v1.14
era, the version whose binder still treats a claim with a selected node as immediate):
TestFindPodVolumesWithoutProvisioning (19 of 19 rows) and TestFindPodVolumesWithProvisioning
(7 of 7 rows), with their expected bindings and provisionings. v1.14's predicates_test.go has no
CheckVolumeBinding rows. Each row is also run through ``filter`` to check the reasons. The other
rows are Podium's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import pytest
from builders import decode, make_node, make_pod

from podium.actors.framework.interface import (
    ERR_NODE_NOT_FOUND,
    SKIP,
    Code,
    PluginArgs,
    PredicateError,
    run_filter,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.plugins import volume_binding
from podium.actors.plugins.volume_binding import (
    ERR_UNBOUND_IMMEDIATE,
    ERR_VOLUME_BIND_CONFLICT,
    ERR_VOLUME_NODE_CONFLICT,
    VolumeBinding,
    pod_passes_basic_checks,
)
from podium.protocol import objects as o

NS = "testns"
NODE_KEY = "nodeKey"
WAIT, IMMEDIATE, WAIT_PROV, TOPO_MISMATCH = (
    "waitClass",
    "immediateClass",
    "waitClassWithProvisioner",
    "topoMismatchClass",
)
UNBOUND, PREBOUND, BOUND, SELECTED_NODE = "unbound", "prebound", "bound", "selected-node"


def make_pvc(
    name: str,
    size: str,
    state: str = UNBOUND,
    pv_name: str = "",
    class_name: str | None = WAIT,
    *,
    extra_spec: Mapping[str, Any] | None = None,
    extra_meta: Mapping[str, Any] | None = None,
    phase: str = "",
) -> o.PersistentVolumeClaim:
    """``makeTestPVC``: namespace testns, uid pvc-uid, a storage request and a class."""
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": "pvc-uid", "annotations": {}}
    spec: dict[str, Any] = {"resources": {"requests": {"storage": size}}}
    if class_name is not None:
        spec["storageClassName"] = class_name
    if state == SELECTED_NODE:
        meta["annotations"]["volume.kubernetes.io/selected-node"] = "node1"
    if state == BOUND:
        meta["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
    if state in (BOUND, PREBOUND):
        spec["volumeName"] = pv_name
    meta.update(extra_meta or {})
    spec.update(extra_spec or {})
    obj: o.PersistentVolumeClaim = decode(
        o.PersistentVolumeClaim, {"metadata": meta, "spec": spec, "status": {"phase": phase}}
    )
    return obj


def node_affinity(node: str) -> dict[str, Any]:
    """``getVolumeNodeAffinity(nodeKey, node)``."""
    term = {"matchExpressions": [{"key": NODE_KEY, "operator": "In", "values": [node]}]}
    return {"required": {"nodeSelectorTerms": [term]}}


def make_pv(
    name: str,
    node: str,
    capacity: str,
    bound_to: o.PersistentVolumeClaim | None = None,
    class_name: str = WAIT,
    *,
    extra_spec: Mapping[str, Any] | None = None,
    extra_meta: Mapping[str, Any] | None = None,
) -> o.PersistentVolume:
    """``makeTestPV``: a capacity, a class, node affinity to ``node`` and an optional claimRef."""
    spec: dict[str, Any] = {"capacity": {"storage": capacity}, "storageClassName": class_name}
    if node:
        spec["nodeAffinity"] = node_affinity(node)
    if bound_to is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "name": bound_to.metadata.name,
            "namespace": bound_to.metadata.namespace,
            "uid": bound_to.metadata.uid,
        }
    spec.update(extra_spec or {})
    meta: dict[str, Any] = {"name": name, **(extra_meta or {})}
    obj: o.PersistentVolume = decode(
        o.PersistentVolume, {"metadata": meta, "spec": spec, "status": {"phase": "Available"}}
    )
    return obj


def make_class(
    name: str, mode: str, provisioner: str = "", topology_values: Sequence[str] = ()
) -> o.StorageClass:
    data: dict[str, Any] = {
        "metadata": {"name": name},
        "volumeBindingMode": mode,
        "provisioner": provisioner,
    }
    if topology_values:
        data["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": NODE_KEY, "values": list(topology_values)}]}
        ]
    obj: o.StorageClass = decode(o.StorageClass, data)
    return obj


# newTestBinder's storage classes.
CLASSES = [
    make_class(WAIT_PROV, "WaitForFirstConsumer", "test-provisioner", ("node1", "reference-value")),
    make_class(IMMEDIATE, "Immediate"),
    make_class(WAIT, "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
    make_class(TOPO_MISMATCH, "WaitForFirstConsumer", "test-provisioner", ("reference-value",)),
]

# The claims and volumes of scheduler_binder_test.go.
unboundPVC = make_pvc("unbound-pvc", "1G")
unboundPVC2 = make_pvc("unbound-pvc2", "5G")
preboundPVC = make_pvc("prebound-pvc", "1G", PREBOUND, "pv-node1a")
boundPVC = make_pvc("bound-pvc", "1G", BOUND, "pv-bound")
immediateUnboundPVC = make_pvc("immediate-unbound-pvc", "1G", class_name=IMMEDIATE)
immediateBoundPVC = make_pvc("immediate-bound-pvc", "1G", BOUND, "pv-bound-immediate", IMMEDIATE)
provisionedPVC = make_pvc("provisioned-pvc", "1Gi", class_name=WAIT_PROV)
noProvisionerPVC = make_pvc("no-provisioner-pvc", "1Gi", class_name=WAIT)
topoMismatchPVC = make_pvc("topo-mismatch-pvc", "1Gi", class_name=TOPO_MISMATCH)
selectedNodePVC = make_pvc("provisioned-pvc", "1Gi", SELECTED_NODE, class_name=WAIT_PROV)

pvNode1a = make_pv("pv-node1a", "node1", "5G")
pvNode1b = make_pv("pv-node1b", "node1", "10G")
pvNode2 = make_pv("pv-node2", "node2", "1G")
pvBound = make_pv("pv-bound", "node1", "1G", boundPVC)
pvNode1aBound = make_pv("pv-node1a", "node1", "5G", unboundPVC)
pvBoundImmediate = make_pv("pv-bound-immediate", "node1", "1G", immediateBoundPVC, IMMEDIATE)
pvBoundImmediateNode2 = make_pv("pv-bound-immediate", "node2", "1G", immediateBoundPVC, IMMEDIATE)

NODE1 = make_node("node1").label(NODE_KEY, "node1").info()


@dataclass(frozen=True)
class Case:
    name: str
    pod_pvcs: tuple[o.PersistentVolumeClaim, ...] = ()
    pvs: tuple[o.PersistentVolume, ...] = ()
    cache_pvcs: tuple[o.PersistentVolumeClaim, ...] | None = None
    pod: PodInfo | None = None
    bindings: Mapping[str, str] = field(default_factory=dict)
    provisions: tuple[str, ...] = ()
    unbound: bool = False
    bound: bool = False
    error: str | None = None


def b(pvc: o.PersistentVolumeClaim, pv: o.PersistentVolume) -> tuple[str, str]:
    """``makeBinding``: claim key -> volume name."""
    return (f"{NS}/{pvc.metadata.name}", pv.metadata.name)


def key(pvc: o.PersistentVolumeClaim) -> str:
    return f"{NS}/{pvc.metadata.name}"


def make_test_pod(pvcs: Sequence[o.PersistentVolumeClaim]) -> PodInfo:
    """``makePod``: test-pod in testns with one claim volume per claim."""
    builder = make_pod("test-pod").ns(NS)
    for pvc in pvcs:
        builder = builder.pvc(pvc.metadata.name)
    return builder.info()


WITHOUT_PROVISIONING = [
    # scheduler_binder_test.go TestFindPodVolumesWithoutProvisioning
    Case("no-volumes", pod=make_test_pod([]), unbound=True, bound=True),
    Case(
        "no-pvcs",
        pod=make_pod("test-pod").ns(NS).volume({"name": "e", "emptyDir": {}}).info(),
        unbound=True,
        bound=True,
    ),
    Case(
        "pvc-not-found",
        (boundPVC,),
        cache_pvcs=(),
        error='persistentvolumeclaim "bound-pvc" not found',
    ),
    Case("bound-pvc", (boundPVC,), (pvBound,), unbound=True, bound=True),
    Case(
        "bound-pvc,pv-not-exists",
        (boundPVC,),
        error='could not find v1.PersistentVolume "pv-bound"',
    ),
    Case("prebound-pvc", (preboundPVC,), (pvNode1aBound,), error=ERR_UNBOUND_IMMEDIATE),
    Case(
        "unbound-pvc,pv-same-node",
        (unboundPVC,),
        (pvNode2, pvNode1a, pvNode1b),
        bindings=dict([b(unboundPVC, pvNode1a)]),
        unbound=True,
        bound=True,
    ),
    Case("unbound-pvc,pv-different-node", (unboundPVC,), (pvNode2,), unbound=False, bound=True),
    Case(
        "two-unbound-pvcs",
        (unboundPVC, unboundPVC2),
        (pvNode1a, pvNode1b),
        bindings=dict([b(unboundPVC, pvNode1a), b(unboundPVC2, pvNode1b)]),
        unbound=True,
        bound=True,
    ),
    Case(
        "two-unbound-pvcs,order-by-size",
        (unboundPVC2, unboundPVC),
        (pvNode1a, pvNode1b),
        bindings=dict([b(unboundPVC, pvNode1a), b(unboundPVC2, pvNode1b)]),
        unbound=True,
        bound=True,
    ),
    Case(
        "two-unbound-pvcs,partial-match",
        (unboundPVC, unboundPVC2),
        (pvNode1a,),
        bindings=dict([b(unboundPVC, pvNode1a)]),
        unbound=False,
        bound=True,
    ),
    Case(
        "one-bound,one-unbound",
        (unboundPVC, boundPVC),
        (pvBound, pvNode1a),
        bindings=dict([b(unboundPVC, pvNode1a)]),
        unbound=True,
        bound=True,
    ),
    Case(
        "one-bound,one-unbound,no-match",
        (unboundPVC, boundPVC),
        (pvBound, pvNode2),
        unbound=False,
        bound=True,
    ),
    Case(
        "one-prebound,one-unbound",
        (unboundPVC, preboundPVC),
        (pvNode1a, pvNode1b),
        error=ERR_UNBOUND_IMMEDIATE,
    ),
    Case(
        "immediate-bound-pvc", (immediateBoundPVC,), (pvBoundImmediate,), unbound=True, bound=True
    ),
    Case(
        "immediate-bound-pvc-wrong-node",
        (immediateBoundPVC,),
        (pvBoundImmediateNode2,),
        unbound=True,
        bound=False,
    ),
    Case("immediate-unbound-pvc", (immediateUnboundPVC,), error=ERR_UNBOUND_IMMEDIATE),
    Case(
        "immediate-unbound-pvc,delayed-mode-bound",
        (immediateUnboundPVC, boundPVC),
        (pvBound,),
        error=ERR_UNBOUND_IMMEDIATE,
    ),
    Case(
        "immediate-unbound-pvc,delayed-mode-unbound",
        (immediateUnboundPVC, unboundPVC),
        error=ERR_UNBOUND_IMMEDIATE,
    ),
]

WITH_PROVISIONING = [
    # scheduler_binder_test.go TestFindPodVolumesWithProvisioning
    Case(
        "one-provisioned",
        (provisionedPVC,),
        provisions=(key(provisionedPVC),),
        unbound=True,
        bound=True,
    ),
    Case(
        "two-unbound-pvcs,one-matched,one-provisioned",
        (unboundPVC, provisionedPVC),
        (pvNode1a,),
        bindings=dict([b(unboundPVC, pvNode1a)]),
        provisions=(key(provisionedPVC),),
        unbound=True,
        bound=True,
    ),
    Case(
        "one-bound,one-provisioned",
        (boundPVC, provisionedPVC),
        (pvBound,),
        provisions=(key(provisionedPVC),),
        unbound=True,
        bound=True,
    ),
    Case(
        "immediate-unbound-pvc (provisioning)", (immediateUnboundPVC,), error=ERR_UNBOUND_IMMEDIATE
    ),
    Case(
        "one-immediate-bound,one-provisioned",
        (immediateBoundPVC, provisionedPVC),
        (pvBoundImmediate,),
        provisions=(key(provisionedPVC),),
        unbound=True,
        bound=True,
    ),
    Case("invalid-provisioner", (noProvisionerPVC,), unbound=False, bound=True),
    Case("volume-topology-unsatisfied", (topoMismatchPVC,), unbound=False, bound=True),
]

# Podium rows.
pvNode2Bound = make_pv("pv-bound", "node2", "1G", boundPVC)
gold = make_pvc("gold-pvc", "1G", extra_spec={"selector": {"matchLabels": {"tier": "gold"}}})
rwx = make_pvc("rwx-pvc", "1G", extra_spec={"accessModes": ["ReadWriteMany"]})
block = make_pvc("block-pvc", "1G", extra_spec={"volumeMode": "Block"})
deleting = make_pvc("unbound-pvc", "1G", extra_meta={"deletionTimestamp": "2019-03-25T00:00:00Z"})
phase_bound = make_pvc("bound-pvc", "1G", PREBOUND, "pv-bound", phase="Bound")
open_class = make_class("open", "WaitForFirstConsumer", "test-provisioner")
open_pvc = make_pvc("open-pvc", "1Gi", class_name="open")

PODIUM = [
    Case(
        "bound and unbound conflicts are both reported, node conflict first",
        (boundPVC, unboundPVC),
        (pvNode2Bound, pvNode2),
        unbound=False,
        bound=False,
    ),
    Case(
        "a claim being deleted fails the attempt",
        (deleting,),
        error='persistentvolumeclaim "unbound-pvc" is being deleted',
    ),
    Case(
        "status phase Bound counts as fully bound",
        (phase_bound,),
        (pvBound,),
        unbound=True,
        bound=True,
    ),
    Case(
        "the claim's selector filters volumes",
        (gold,),
        (
            make_pv("pv-a", "node1", "5G", extra_meta={"labels": {"tier": "silver"}}),
            make_pv("pv-b", "node1", "10G", extra_meta={"labels": {"tier": "gold"}}),
        ),
        bindings={key(gold): "pv-b"},
        unbound=True,
        bound=True,
    ),
    Case(
        "the volume must offer every access mode the claim asks",
        (rwx,),
        (
            make_pv("pv-a", "node1", "5G", extra_spec={"accessModes": ["ReadWriteOnce"]}),
            make_pv(
                "pv-b",
                "node1",
                "10G",
                extra_spec={"accessModes": ["ReadWriteOnce", "ReadWriteMany"]},
            ),
        ),
        bindings={key(rwx): "pv-b"},
        unbound=True,
        bound=True,
    ),
    Case(
        "volume modes must agree (Filesystem by default)",
        (block,),
        (pvNode1a,),
        unbound=False,
        bound=True,
    ),
    Case(
        "a volume bound to another claim is not available",
        (unboundPVC,),
        (make_pv("pv-taken", "node1", "5G", unboundPVC2),),
        unbound=False,
        bound=True,
    ),
    Case(
        "a volume pre-bound to the claim wins over a smaller one",
        (unboundPVC,),
        (make_pv("pv-a-small", "", "1G"), make_pv("pv-z-prebound", "node1", "10G", unboundPVC)),
        bindings={key(unboundPVC): "pv-z-prebound"},
        unbound=True,
        bound=True,
    ),
    Case(
        "a volume pre-bound to the claim on another node means no volume",
        (unboundPVC,),
        (make_pv("pv-a", "node1", "5G"), make_pv("pv-z-prebound", "node2", "10G", unboundPVC)),
        unbound=False,
        bound=True,
    ),
    Case(
        "equally small volumes: the first by name",
        (unboundPVC,),
        (make_pv("pv-b", "node1", "5G"), make_pv("pv-a", "node1", "5G")),
        bindings={key(unboundPVC): "pv-a"},
        unbound=True,
        bound=True,
    ),
    Case(
        "a volume being deleted is not available",
        (unboundPVC,),
        (make_pv("pv-a", "node1", "5G", extra_meta={"deletionTimestamp": "2019-03-25T00:00:00Z"}),),
        unbound=False,
        bound=True,
    ),
    Case(
        "a class without allowed topologies provisions anywhere",
        (open_pvc,),
        provisions=(key(open_pvc),),
        unbound=True,
        bound=True,
    ),
    Case(
        "a claim with a selected node is immediate in v1.14 (v1.15 row one-binding,one-selected-node)",
        (boundPVC, selectedNodePVC),
        (pvBound,),
        error=ERR_UNBOUND_IMMEDIATE,
    ),
]

CASES = WITHOUT_PROVISIONING + WITH_PROVISIONING + PODIUM


def snapshot_for(case: Case) -> Snapshot:
    pvcs = case.pod_pvcs if case.cache_pvcs is None else case.cache_pvcs
    objects = ClusterObjects(
        persistent_volumes={pv.metadata.name: pv for pv in case.pvs},
        persistent_volume_claims={key(pvc): pvc for pvc in pvcs},
        storage_classes={c.metadata.name: c for c in [*CLASSES, open_class]},
    )
    return Snapshot([NODE1], objects)


def evaluate(plugin: VolumeBinding, pod: PodInfo, case: Case) -> object:
    return run_filter(plugin, pod, plugin.pre_filter(pod, snapshot_for(case)), NODE1)


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_find_pod_volumes(case: Case) -> None:
    plugin = VolumeBinding(PluginArgs(name="CheckVolumeBinding"))
    pod = case.pod if case.pod is not None else make_test_pod(case.pod_pvcs)
    if case.error is not None:
        with pytest.raises(PredicateError) as raised:
            evaluate(plugin, pod, case)
        assert str(raised.value) == case.error
        return
    meta = plugin.pre_filter(pod, snapshot_for(case))
    if meta is SKIP:
        # A pod without claims: the predicate passes and the binder has nothing to decide.
        assert (case.unbound, case.bound, dict(case.bindings), case.provisions) == (
            True,
            True,
            {},
            (),
        )
        assert run_filter(plugin, pod, meta, NODE1).is_success
        return
    found = plugin.find_pod_volumes(pod, meta, NODE1)
    assert (found.unbound_satisfied, found.bound_satisfied) == (case.unbound, case.bound)
    assert dict(found.bindings) == dict(case.bindings)
    assert found.provisions == case.provisions
    want = tuple(
        reason
        for reason, failed in (
            (ERR_VOLUME_NODE_CONFLICT, not case.bound),
            (ERR_VOLUME_BIND_CONFLICT, not case.unbound),
        )
        if failed
    )
    status = run_filter(plugin, pod, meta, NODE1)
    assert status.reasons == want
    assert status.code is (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if want else Code.SUCCESS)


def test_kubernetes_row_count() -> None:
    assert (len(WITHOUT_PROVISIONING), len(WITH_PROVISIONING)) == (19, 7)


def test_pod_without_claims_is_skipped() -> None:
    plugin = VolumeBinding(PluginArgs(name="x"))
    pod = make_pod("p").volume({"name": "e", "emptyDir": {}}).info()
    meta = plugin.pre_filter(pod, Snapshot([NODE1]))
    assert meta is SKIP
    assert run_filter(plugin, pod, meta, NODE1).is_success


def test_unknown_node_is_an_error() -> None:
    plugin = VolumeBinding(PluginArgs(name="x"))
    pod = make_test_pod([boundPVC])
    meta = plugin.pre_filter(pod, snapshot_for(Case("", (boundPVC,), (pvBound,))))
    status = run_filter(plugin, pod, meta, NodeInfo(None, name="ghost"))
    assert status.code is Code.ERROR
    assert status.reasons == (ERR_NODE_NOT_FOUND,)


def test_immediate_error_is_raised_from_every_node() -> None:
    # v1.14 returns the error from each node it evaluates (the scheduler counts the repeats).
    plugin = VolumeBinding(PluginArgs(name="x"))
    pod = make_test_pod([immediateUnboundPVC])
    meta = plugin.pre_filter(pod, snapshot_for(Case("", (immediateUnboundPVC,))))
    for node in (NODE1, make_node("node2").label(NODE_KEY, "node2").info()):
        with pytest.raises(PredicateError, match=f"^{ERR_UNBOUND_IMMEDIATE}$"):
            run_filter(plugin, pod, meta, node)


def test_basic_checks() -> None:
    objects = ClusterObjects(persistent_volume_claims={key(unboundPVC): unboundPVC})
    assert pod_passes_basic_checks(make_test_pod([unboundPVC]).pod, objects) is None
    assert (
        pod_passes_basic_checks(make_test_pod([boundPVC]).pod, objects)
        == 'persistentvolumeclaim "bound-pvc" not found'
    )


def test_factory() -> None:
    plugin = volume_binding.FACTORIES[volume_binding.NAME](PluginArgs(name="VolumeBindingCheck"))
    assert plugin.name == "VolumeBindingCheck"
