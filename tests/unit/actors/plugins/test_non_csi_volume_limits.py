"""MaxEBS/GCEPD/AzureDisk/CinderVolumeCount on Kubernetes' tables.

Rows come from pkg/scheduler/algorithm/predicates/max_attachable_volume_predicate_test.go@v1.14:
TestVolumeCountConflicts (62 of 62 rows: 20 EBS, 20 GCE, 20 AzureDisk, 2 Cinder), each run as
v1.14 runs it twice, once with the limit from ``KUBE_MAX_PD_VOLS`` and once from the node's
allocatable ``attachable-volumes-*``; TestMaxVolumeFuncM5/T3/R5/M4 (4 of 4); and
predicates_test.go@v1.14 TestGetMaxVols (3 of 3). Rows keep v1.14's names, which repeat; the
row number keeps the test ids apart. The other rows are Podium's.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pytest
from builders import decode, make_node, make_pod

from podium.actors.framework.interface import SKIP, Code, PluginArgs, PredicateError, run_filter
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.plugins import names, non_csi_volume_limits
from podium.actors.plugins.non_csi_volume_limits import (
    AZURE_DISK_FILTER,
    CINDER_FILTER,
    EBS_FILTER,
    ERR_MAX_VOLUME_COUNT_EXCEEDED,
    GCE_PD_FILTER,
    MaxPDVolumeCount,
    VolumeFilter,
    max_volumes_from_env,
)
from podium.protocol import objects as o

EBS, GCE, AZURE, CINDER = "EBS", "GCE", "AzureDisk", "Cinder"
FILTERS: dict[str, VolumeFilter] = {
    EBS: EBS_FILTER,
    GCE: GCE_PD_FILTER,
    AZURE: AZURE_DISK_FILTER,
    CINDER: CINDER_FILTER,
}


def pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    builder = make_pod("p")
    for volume in volumes:
        builder = builder.volume(volume)
    return builder.dict()


def aws(volume_id: str) -> dict[str, Any]:
    return {"name": volume_id, "awsElasticBlockStore": {"volumeID": volume_id}}


def cinder(volume_id: str) -> dict[str, Any]:
    return {"name": volume_id, "cinder": {"volumeID": volume_id}}


def claim(name: str) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": name}}


HOST_PATH = {"name": "hp", "hostPath": {"path": "/tmp"}}  # a kind no predicate counts

# The pods of TestVolumeCountConflicts (max_attachable_volume_predicate_test.go@v1.14).
ONE_VOL = pod(aws("ovp"))
TWO_VOL = pod(aws("tvp1"), aws("tvp2"))
SPLIT_VOLS = pod(HOST_PATH, aws("svp"))
NON_APPLICABLE = pod(HOST_PATH)
EMPTY = pod()
DELETED_PVC = pod(claim("deletedPVC"))
TWO_DELETED_PVC = pod(claim("deletedPVC"), claim("anotherDeletedPVC"))
DELETED_PV = pod(claim("pvcWithDeletedPV"))
DELETED_PV2 = pod(claim("pvcWithDeletedPV"))
ANOTHER_DELETED_PV = pod(claim("anotherPVCWithDeletedPV"))
UNBOUND_PVC = pod(claim("unboundPVC"))
UNBOUND_PVC2 = pod(claim("unboundPVC"))
ANOTHER_UNBOUND_PVC = pod(claim("anotherUnboundPVC"))
TWO_VOL_CINDER = pod(cinder("tvp1"), cinder("tvp2"))
ONE_VOL_CINDER = pod(cinder("ovp"))


def one_pvc(kind: str) -> dict[str, Any]:
    return pod(claim(f"some{kind}Vol"))


def split_pvc(kind: str) -> dict[str, Any]:
    return pod(claim(f"someNon{kind}Vol"), claim(f"some{kind}Vol"))


def objects_for(kind: str) -> ClusterObjects:
    """v1.14 ``getFakePVInfo`` / ``getFakePVCInfo``: every kind's PV is an EBS volume."""
    pvs: list[dict[str, Any]] = [
        {
            "metadata": {"name": f"some{kind}Vol"},
            "spec": {"awsElasticBlockStore": {"volumeID": f"{kind.lower()}Vol"}},
        },
        {"metadata": {"name": f"someNon{kind}Vol"}, "spec": {}},
    ]
    claims = {
        f"some{kind}Vol": f"some{kind}Vol",
        f"someNon{kind}Vol": f"someNon{kind}Vol",
        "pvcWithDeletedPV": "pvcWithDeletedPV",
        "anotherPVCWithDeletedPV": "anotherPVCWithDeletedPV",
        "unboundPVC": "",
        "anotherUnboundPVC": "",
    }
    return ClusterObjects(
        persistent_volumes={d["metadata"]["name"]: decode(o.PersistentVolume, d) for d in pvs},
        persistent_volume_claims={
            f"default/{name}": decode(
                o.PersistentVolumeClaim,
                {
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"volumeName": volume},
                },
            )
            for name, volume in claims.items()
        },
    )


@dataclass(frozen=True)
class Case:
    name: str
    new_pod: dict[str, Any]
    existing: tuple[dict[str, Any], ...]
    kind: str
    max_vols: int
    fits: bool


def rows(kind: str, fits: list[bool]) -> list[Case]:
    """The 20 rows v1.14 repeats for EBS, GCE and AzureDisk, with each kind's expectations.

    The GCE and AzureDisk runs use the same EBS pods, so most of their volumes do not count.
    """
    k = kind
    disk = EBS if kind in (EBS, GCE) else kind  # (sic: v1.14's GCE row 8 says EBS)
    table = [
        (f"fits when node capacity >= new pod's {kind} volumes", ONE_VOL, (TWO_VOL, ONE_VOL), 4),
        (
            "doesn't fit when node capacity < new pod's EBS volumes"
            if kind == EBS
            else f"fit when node capacity < new pod's {kind} volumes",
            TWO_VOL,
            (ONE_VOL,),
            2,
        ),
        (f"new pod's count ignores non-{kind} volumes", SPLIT_VOLS, (TWO_VOL,), 3),
        (
            f"existing pods' counts ignore non-{kind} volumes",
            TWO_VOL,
            (SPLIT_VOLS, NON_APPLICABLE, EMPTY),
            3,
        ),
        (
            f"new pod's count considers PVCs backed by {kind} volumes",
            one_pvc(k),
            (SPLIT_VOLS, NON_APPLICABLE, EMPTY),
            3,
        ),
        (
            f"new pod's count ignores PVCs not backed by {kind} volumes",
            split_pvc(k),
            (SPLIT_VOLS, ONE_VOL),
            3,
        ),
        (
            f"existing pods' counts considers PVCs backed by {kind} volumes",
            TWO_VOL,
            (ONE_VOL, one_pvc(k)),
            3,
        ),
        (
            f"already-mounted {disk} volumes are always ok to allow",
            TWO_VOL,
            (ONE_VOL, TWO_VOL, one_pvc(k)),
            4,
        ),
        (
            f"the same {kind} volumes are not counted multiple times",
            SPLIT_VOLS,
            (ONE_VOL, ONE_VOL, one_pvc(k)),
            3,
        ),
        (
            "pod with missing PVC is counted towards the PV limit",
            one_pvc(k),
            (ONE_VOL, DELETED_PVC),
            2,
        ),
        (
            "pod with missing PVC is counted towards the PV limit",
            one_pvc(k),
            (ONE_VOL, DELETED_PVC),
            3,
        ),
        (
            "pod with missing two PVCs is counted towards the PV limit twice",
            one_pvc(k),
            (ONE_VOL, TWO_DELETED_PVC),
            3,
        ),
        (
            "pod with missing PV is counted towards the PV limit",
            one_pvc(k),
            (ONE_VOL, DELETED_PV),
            2,
        ),
        (
            "pod with missing PV is counted towards the PV limit",
            one_pvc(k),
            (ONE_VOL, DELETED_PV),
            3,
        ),
        (
            "two pods missing the same PV are counted towards the PV limit only once",
            DELETED_PV2,
            (ONE_VOL, DELETED_PV),
            2,
        ),
        (
            "two pods missing different PVs are counted towards the PV limit twice",
            ANOTHER_DELETED_PV,
            (ONE_VOL, DELETED_PV),
            2,
        ),
        (
            "pod with unbound PVC is counted towards the PV limit",
            one_pvc(k),
            (ONE_VOL, UNBOUND_PVC),
            2,
        ),
        (
            "pod with unbound PVC is counted towards the PV limit",
            one_pvc(k),
            (ONE_VOL, UNBOUND_PVC),
            3,
        ),
        (
            "the same unbound PVC in multiple pods is counted towards the PV limit only once",
            UNBOUND_PVC2,
            (ONE_VOL, UNBOUND_PVC),
            2,
        ),
        (
            "two different unbound PVCs are counted towards the PV limit as two volumes",
            ANOTHER_UNBOUND_PVC,
            (ONE_VOL, UNBOUND_PVC),
            2,
        ),
    ]
    assert len(table) == len(fits) == 20
    return [
        Case(f"{kind}#{i:02d} {name}", new, existing, kind, max_vols, fit)
        for i, ((name, new, existing, max_vols), fit) in enumerate(zip(table, fits, strict=True), 1)
    ]


T, F = True, False
CASES = [
    # max_attachable_volume_predicate_test.go@v1.14 TestVolumeCountConflicts; the "fits" column.
    *rows(EBS, [T, F, T, T, T, T, F, T, T, F, T, F, F, T, T, F, F, T, T, F]),
    *rows(GCE, [T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T]),
    *rows(AZURE, [T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T]),
    Case(
        "Cinder#01 fits when node capacity >= new pod's Cinder volumes",
        ONE_VOL_CINDER,
        (TWO_VOL_CINDER,),
        CINDER,
        4,
        T,
    ),
    Case(
        "Cinder#02 not fit when node capacity < new pod's Cinder volumes",
        ONE_VOL_CINDER,
        (TWO_VOL_CINDER,),
        CINDER,
        2,
        F,
    ),
]


def run(case: Case, *, from_allocatable: bool) -> Any:
    vfilter = FILTERS[case.kind]
    node_builder = make_node("node-for-max-pd-test-1")
    if from_allocatable:
        node_builder = node_builder.allocatable({vfilter.limit_key: case.max_vols})
    existing = [
        decode(o.Pod, {**p, "metadata": {"name": f"e{i}", "namespace": "default"}})
        for i, p in enumerate(case.existing)
    ]
    node = node_builder.info(*existing)
    plugin = MaxPDVolumeCount(
        PluginArgs(name="MaxPD"),
        vfilter,
        env_max_volumes=None if from_allocatable else case.max_vols,
    )
    new_pod = PodInfo(decode(o.Pod, case.new_pod))
    meta = plugin.pre_filter(new_pod, Snapshot([node], objects_for(case.kind)))
    return run_filter(plugin, new_pod, meta, node)


@pytest.mark.parametrize("from_allocatable", [False, True], ids=["env", "allocatable"])
@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_volume_count_conflicts(case: Case, from_allocatable: bool) -> None:
    status = run(case, from_allocatable=from_allocatable)
    assert status.is_success is case.fits
    assert status.reasons == (() if case.fits else (ERR_MAX_VOLUME_COUNT_EXCEEDED,))
    assert status.code is (Code.SUCCESS if case.fits else Code.UNSCHEDULABLE)


def test_kubernetes_row_count() -> None:
    assert len(CASES) == 62


@pytest.mark.parametrize(
    ("name", "instance_type", "want"),
    [
        # max_attachable_volume_predicate_test.go@v1.14 TestMaxVolumeFunc{M5,T3,R5,M4}
        ("TestMaxVolumeFuncM5", "m5.large", 25),
        ("TestMaxVolumeFuncT3", "t3.medium", 25),
        ("TestMaxVolumeFuncR5", "r5d.xlarge", 25),
        ("TestMaxVolumeFuncM4", "m4.2xlarge", 39),
        # Podium rows
        ("z1d anywhere in the name is Nitro", "x.z1d", 25),
        ("no instance type label", None, 39),
    ],
)
def test_max_ebs_volumes_by_instance_type(name: str, instance_type: str | None, want: int) -> None:
    builder = make_node("node-for-instance")
    if instance_type is not None:
        builder = builder.label("beta.kubernetes.io/instance-type", instance_type)
    plugin = MaxPDVolumeCount(PluginArgs(name="MaxEBSVolumeCount"), EBS_FILTER)
    assert plugin.max_volumes(builder.info()) == want


@pytest.mark.parametrize(
    ("kind", "want"),
    [(GCE, 16), (AZURE, 16), (CINDER, 256), (EBS, 39)],
    ids=[GCE, AZURE, CINDER, EBS],
)
def test_default_limits(kind: str, want: int) -> None:
    plugin = MaxPDVolumeCount(PluginArgs(name="x"), FILTERS[kind])
    assert plugin.max_volumes(make_node("n").info()) == want


@pytest.mark.parametrize(
    ("name", "raw", "want"),
    [
        # predicates_test.go@v1.14 TestGetMaxVols (v1.14 answers -1 where Podium answers None)
        ("Unable to parse maximum PD volumes value, using default value", "invalid", None),
        ("Maximum PD volumes must be a positive value, using default value", "-2", None),
        ("Parse maximum PD volumes value from env", "40", 40),
        # Podium row
        ("unset", None, None),
    ],
)
def test_get_max_vols(name: str, raw: str | None, want: int | None) -> None:
    environ = {} if raw is None else {"KUBE_MAX_PD_VOLS": raw}
    assert max_volumes_from_env(environ) == want


def test_allocatable_beats_environment() -> None:
    plugin = MaxPDVolumeCount(PluginArgs(name="x"), EBS_FILTER, env_max_volumes=5)
    node = make_node("n").allocatable({"attachable-volumes-aws-ebs": 7}).info()
    assert plugin.max_volumes(node) == 7
    assert plugin.max_volumes(make_node("m").info()) == 5


def test_pod_without_counted_volumes_is_skipped() -> None:
    plugin = MaxPDVolumeCount(PluginArgs(name="x"), GCE_PD_FILTER)
    new_pod = PodInfo(decode(o.Pod, pod(aws("a"), HOST_PATH)))
    meta = plugin.pre_filter(new_pod, Snapshot([]))
    assert meta is SKIP
    assert run_filter(plugin, new_pod, meta, make_node("n").info()).is_success


def test_pvc_and_direct_volume_with_the_same_id_count_once() -> None:
    # A PVC bound to EBS volume "ebsVol" and a pod mounting "ebsVol" directly: one volume.
    plugin = MaxPDVolumeCount(PluginArgs(name="x"), EBS_FILTER, env_max_volumes=1)
    node = make_node("n").info(
        decode(o.Pod, {**pod(aws("ebsVol")), "metadata": {"name": "e", "namespace": "default"}})
    )
    new_pod = PodInfo(decode(o.Pod, one_pvc(EBS)))
    meta = plugin.pre_filter(new_pod, Snapshot([node], objects_for(EBS)))
    assert run_filter(plugin, new_pod, meta, node).is_success


def test_claim_without_name_is_an_error_on_every_node() -> None:
    plugin = MaxPDVolumeCount(PluginArgs(name="x"), EBS_FILTER)
    new_pod = PodInfo(decode(o.Pod, pod(claim(""))))
    meta = plugin.pre_filter(new_pod, Snapshot([]))
    with pytest.raises(PredicateError, match=r"^PersistentVolumeClaim had no name$"):
        run_filter(plugin, new_pod, meta, make_node("n").info())


def test_factories_cover_the_four_predicates() -> None:
    assert set(non_csi_volume_limits.FACTORIES) == set(names.MAX_PD_VOLUME_COUNT_MEMBERS)
    plugin = non_csi_volume_limits.FACTORIES[names.MAX_CINDER_VOLUME_COUNT](
        PluginArgs(name="MaxCinderVolumeCount")
    )
    assert plugin.name == "MaxCinderVolumeCount"
    assert plugin.volume_filter is CINDER_FILTER
