"""NoVolumeZoneConflict on Kubernetes' tables plus Podium's rows.

Rows come from pkg/scheduler/algorithm/predicates/predicates_test.go@v1.14:
TestVolumeZonePredicate (6 of 6), TestVolumeZonePredicateMultiZone (3 of 3) and
TestVolumeZonePredicateWithVolumeBinding (5 of 5; v1.14 only asserts that the error rows fail,
Podium asserts the exact text). The other rows are Podium's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pytest
from builders import decode, make_node, make_pod

from podium.actors.framework.interface import SKIP, Code, PluginArgs, PredicateError, run_filter
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.plugins import volume_zone
from podium.actors.plugins.volume_zone import (
    ERR_VOLUME_ZONE_CONFLICT,
    VolumeZone,
    label_zones_to_set,
)
from podium.protocol import objects as o

ZONE = "failure-domain.beta.kubernetes.io/zone"
REGION = "failure-domain.beta.kubernetes.io/region"
ZONE_GA = "topology.kubernetes.io/zone"
REGION_GA = "topology.kubernetes.io/region"


def pv(name: str, labels: dict[str, str]) -> o.PersistentVolume:
    obj: o.PersistentVolume = decode(
        o.PersistentVolume, {"metadata": {"name": name, "labels": labels}}
    )
    return obj


def pvc(name: str, volume: str = "", storage_class: str | None = None) -> o.PersistentVolumeClaim:
    spec: dict[str, Any] = {"volumeName": volume} if volume else {}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    obj: o.PersistentVolumeClaim = decode(
        o.PersistentVolumeClaim, {"metadata": {"name": name, "namespace": "default"}, "spec": spec}
    )
    return obj


def sc(name: str, mode: str | None = None) -> o.StorageClass:
    data: dict[str, Any] = {"metadata": {"name": name}}
    if mode is not None:
        data["volumeBindingMode"] = mode
    obj: o.StorageClass = decode(o.StorageClass, data)
    return obj


def objects(
    pvs: Sequence[o.PersistentVolume],
    pvcs: Sequence[o.PersistentVolumeClaim],
    scs: Sequence[o.StorageClass] = (),
) -> ClusterObjects:
    return ClusterObjects(
        persistent_volumes={v.metadata.name: v for v in pvs},
        persistent_volume_claims={f"default/{c.metadata.name}": c for c in pvcs},
        storage_classes={s.metadata.name: s for s in scs},
    )


SINGLE = objects(
    [
        pv("Vol_1", {ZONE: "us-west1-a"}),
        pv("Vol_2", {REGION: "us-west1-b", "uselessLabel": "none"}),
        pv("Vol_3", {REGION: "us-west1-c"}),
    ],
    [
        pvc("PVC_1", "Vol_1"),
        pvc("PVC_2", "Vol_2"),
        pvc("PVC_3", "Vol_3"),
        pvc("PVC_4", "Vol_not_exist"),
    ],
)
MULTI = objects(
    [
        pv("Vol_1", {ZONE: "us-west1-a"}),
        pv("Vol_2", {ZONE: "us-west1-b", "uselessLabel": "none"}),
        pv("Vol_3", {ZONE: "us-west1-c__us-west1-a"}),
    ],
    [
        pvc("PVC_1", "Vol_1"),
        pvc("PVC_2", "Vol_2"),
        pvc("PVC_3", "Vol_3"),
        pvc("PVC_4", "Vol_not_exist"),
    ],
)
BINDING = objects(
    [pv("Vol_1", {ZONE: "us-west1-a"})],
    [
        pvc("PVC_1", "Vol_1"),
        pvc("PVC_NoSC", storage_class="Class_0"),
        pvc("PVC_EmptySC"),
        pvc("PVC_WaitSC", storage_class="Class_Wait"),
        pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
    ],
    # Kubernetes' Class_Immediate has no mode (an error of its own in v1.14); Podium's classes
    # always have one, defaulted to Immediate as the API server defaults it.
    [sc("Class_Immediate"), sc("Class_Wait", "WaitForFirstConsumer")],
)
PODIUM = objects(
    [
        pv("Vol_GA", {ZONE_GA: "z1"}),
        pv("Vol_beta", {ZONE: "z1"}),
        pv("Vol_bad", {ZONE: "z1__", REGION: "r1"}),
        pv("Vol_both", {ZONE: "z1", REGION: "r1"}),
    ],
    [
        pvc("PVC_GA", "Vol_GA"),
        pvc("PVC_beta", "Vol_beta"),
        pvc("PVC_bad", "Vol_bad"),
        pvc("PVC_both", "Vol_both"),
        pvc("PVC_gone", "Vol_gone"),
    ],
)


def pod_with_volume(claim: str) -> PodInfo:
    """``createPodWithVolume``: one claim volume in namespace default."""
    return make_pod("pod_1").pvc(claim).info()


def host(labels: dict[str, str] | None = None) -> NodeInfo:
    return make_node("host1").labels(labels or {}).info()


@dataclass(frozen=True)
class Case:
    name: str
    pod: PodInfo
    node: NodeInfo
    objects: ClusterObjects
    fits: bool
    error: str | None = None


WEST_A = {ZONE: "us-west1-a", "uselessLabel": "none"}
CASES = [
    # predicates_test.go@v1.14 TestVolumeZonePredicate
    Case("pod without volume", make_pod("pod_1").info(), host({ZONE: "us-west1-a"}), SINGLE, True),
    Case("node without labels", pod_with_volume("PVC_1"), host(), SINGLE, True),
    Case("label zone failure domain matched", pod_with_volume("PVC_1"), host(WEST_A), SINGLE, True),
    Case(
        "label zone region matched",
        pod_with_volume("PVC_2"),
        host({REGION: "us-west1-b", "uselessLabel": "none"}),
        SINGLE,
        True,
    ),
    Case(
        "label zone region failed match",
        pod_with_volume("PVC_2"),
        host({REGION: "no_us-west1-b", "uselessLabel": "none"}),
        SINGLE,
        False,
    ),
    Case(
        "label zone failure domain failed match",
        pod_with_volume("PVC_1"),
        host({ZONE: "no_us-west1-a", "uselessLabel": "none"}),
        SINGLE,
        False,
    ),
    # predicates_test.go@v1.14 TestVolumeZonePredicateMultiZone
    Case("multi: node without labels", pod_with_volume("PVC_3"), host(), MULTI, True),
    Case(
        "multi: label zone failure domain matched",
        pod_with_volume("PVC_3"),
        host(WEST_A),
        MULTI,
        True,
    ),
    Case(
        "multi: label zone failure domain failed match",
        pod_with_volume("PVC_1"),
        host({ZONE: "us-west1-b", "uselessLabel": "none"}),
        MULTI,
        False,
    ),
    # predicates_test.go@v1.14 TestVolumeZonePredicateWithVolumeBinding
    Case(
        "binding: label zone failure domain matched",
        pod_with_volume("PVC_1"),
        host(WEST_A),
        BINDING,
        True,
    ),
    Case(
        "binding: unbound volume empty storage class",
        pod_with_volume("PVC_EmptySC"),
        host(WEST_A),
        BINDING,
        False,
        'PersistentVolumeClaim is not bound: "PVC_EmptySC"',
    ),
    Case(
        "binding: unbound volume no storage class",
        pod_with_volume("PVC_NoSC"),
        host(WEST_A),
        BINDING,
        False,
        'PersistentVolumeClaim is not bound: "PVC_NoSC"',
    ),
    Case(
        "binding: unbound volume immediate binding mode",
        pod_with_volume("PVC_ImmediateSC"),
        host(WEST_A),
        BINDING,
        False,
        'PersistentVolumeClaim is not bound: "PVC_ImmediateSC"',
    ),
    Case(
        "binding: unbound volume wait binding mode",
        pod_with_volume("PVC_WaitSC"),
        host(WEST_A),
        BINDING,
        True,
    ),
    # Podium rows
    Case(
        "missing volume is an error",
        pod_with_volume("PVC_4"),
        host(WEST_A),
        SINGLE,
        False,
        'persistentvolume "Vol_not_exist" not found',
    ),
    Case(
        "missing claim is an error",
        pod_with_volume("nope"),
        host(WEST_A),
        SINGLE,
        False,
        'persistentvolumeclaim "nope" not found',
    ),
    Case(
        "missing claim on a node without zone labels passes",
        pod_with_volume("nope"),
        host(),
        SINGLE,
        True,
    ),
    Case(
        "GA label on volume and node",
        pod_with_volume("PVC_GA"),
        host({ZONE_GA: "z1"}),
        PODIUM,
        True,
    ),
    Case(
        "GA label on volume, beta on node",
        pod_with_volume("PVC_GA"),
        host({ZONE: "z1"}),
        PODIUM,
        True,
    ),
    Case(
        "beta label on volume, GA on node",
        pod_with_volume("PVC_beta"),
        host({ZONE_GA: "z1"}),
        PODIUM,
        True,
    ),
    Case(
        "beta label on volume, GA mismatch on node",
        pod_with_volume("PVC_beta"),
        host({ZONE_GA: "z2"}),
        PODIUM,
        False,
    ),
    Case(
        "node without the volume's zone label but with a region conflicts",
        pod_with_volume("PVC_beta"),
        host({REGION: "r1"}),
        PODIUM,
        False,
    ),
    Case(
        "an unparsable zone value is ignored",
        pod_with_volume("PVC_bad"),
        host({REGION: "r1", ZONE: "elsewhere"}),
        PODIUM,
        True,
    ),
    Case(
        "zone and region both must match",
        pod_with_volume("PVC_both"),
        host({REGION: "r1", ZONE: "z2"}),
        PODIUM,
        False,
    ),
    Case(
        "an earlier conflicting volume wins over a later error",
        make_pod("pod_1").pvc("PVC_both").pvc("PVC_gone").info(),
        host({REGION: "r1", ZONE: "z2"}),
        PODIUM,
        False,
    ),
    Case(
        "an earlier error wins over a later conflict",
        make_pod("pod_1").pvc("PVC_gone").pvc("PVC_both").info(),
        host({REGION: "r1", ZONE: "z2"}),
        PODIUM,
        False,
        'persistentvolume "Vol_gone" not found',
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_volume_zone(case: Case) -> None:
    plugin = VolumeZone(PluginArgs(name="NoVolumeZoneConflict"))
    meta = plugin.pre_filter(case.pod, Snapshot([case.node], case.objects))
    if case.error is not None:
        with pytest.raises(PredicateError) as raised:
            run_filter(plugin, case.pod, meta, case.node)
        assert str(raised.value) == case.error
        return
    status = run_filter(plugin, case.pod, meta, case.node)
    assert status.is_success is case.fits
    assert status.reasons == (() if case.fits else (ERR_VOLUME_ZONE_CONFLICT,))
    assert status.code is (Code.SUCCESS if case.fits else Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def test_pod_without_claims_is_skipped() -> None:
    plugin = VolumeZone(PluginArgs(name="x"))
    pod = make_pod("p").volume({"name": "e", "emptyDir": {}}).info()
    meta = plugin.pre_filter(pod, Snapshot([], SINGLE))
    assert meta is SKIP
    assert run_filter(plugin, pod, meta, host(WEST_A)).is_success


def test_unknown_node_is_an_error() -> None:
    plugin = VolumeZone(PluginArgs(name="x"))
    pod = pod_with_volume("PVC_1")
    meta = plugin.pre_filter(pod, Snapshot([], SINGLE))
    status = run_filter(plugin, pod, meta, NodeInfo(None, name="ghost"))
    assert status.code is Code.ERROR
    assert status.reasons == ("node not found",)


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("a", frozenset({"a"})),
        ("a__b", frozenset({"a", "b"})),
        (" a __ b ", frozenset({"a", "b"})),
        ("a__", None),
        ("", None),
    ],
)
def test_label_zones_to_set(value: str, want: frozenset[str] | None) -> None:
    assert label_zones_to_set(value) == want


def test_factory() -> None:
    plugin = volume_zone.FACTORIES[volume_zone.NAME](PluginArgs(name="VolumeZoneConflict"))
    assert plugin.name == "VolumeZoneConflict"
