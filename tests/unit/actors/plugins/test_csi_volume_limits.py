"""MaxCSIVolumeCountPred on Kubernetes' table plus Podium's rows.

Rows 1-8 come from pkg/scheduler/algorithm/predicates/csi_volume_predicate_test.go,
TestCSIVolumeCountPredicate (8 of 8 rows), in the version that counts unbound claims through
their StorageClass (the v1.14 behaviour; see docs/parity.md, csi_volume_limits). The other
rows are Podium's.
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
from podium.actors.plugins import csi_volume_limits
from podium.actors.plugins.csi_volume_limits import (
    ERR_MAX_VOLUME_COUNT_EXCEEDED,
    CSIMaxVolumeLimit,
    csi_attach_limit_key,
)
from podium.protocol import objects as o


def pod(*claims: str) -> dict[str, Any]:
    builder = make_pod("p")
    for name in claims:
        builder = builder.pvc(name)
    return builder.dict()


# The pods of TestCSIVolumeCountPredicate.
ONE_VOL = pod("csi-ebs-0")
TWO_VOL = pod("cs-ebs-1", "csi-ebs-2")  # (sic: "cs-ebs-1" names no claim)
RUNNING = pod("csi-ebs-3")
PENDING_VOLUME = pod("csi-4")
UNBOUND_PVC2 = pod("csi-4")
MISSING_PV = pod("csi-6")
NO_SC_PVC = pod("csi-5")
GCE_TWO_VOL = pod("cs-gce-1", "csi-gce-2")


def fake_objects(volume_name: str, sc_name: str, drivers: tuple[str, ...]) -> ClusterObjects:
    """``getFakeCSIPVInfo``, ``getFakeCSIPVCInfo`` and ``getFakeCSIStorageClassInfo``."""
    pvs: dict[str, o.PersistentVolume] = {}
    claims: dict[str, dict[str, Any]] = {}
    for driver in drivers:
        for j in range(4):
            handle = f"{volume_name}-{driver}-{j}"
            pvs[handle] = decode(
                o.PersistentVolume,
                {
                    "metadata": {"name": handle},
                    "spec": {"csi": {"driver": driver, "volumeHandle": handle}},
                },
            )
            claims[handle] = {"volumeName": handle}
    claims[f"{volume_name}-4"] = {"storageClassName": sc_name}
    claims[f"{volume_name}-5"] = {}
    claims[f"{volume_name}-6"] = {"storageClassName": sc_name, "volumeName": "missing-in-action"}
    return ClusterObjects(
        persistent_volumes=pvs,
        persistent_volume_claims={
            f"default/{name}": decode(
                o.PersistentVolumeClaim,
                {"metadata": {"name": name, "namespace": "default"}, "spec": spec},
            )
            for name, spec in claims.items()
        },
        storage_classes={
            sc_name: decode(
                o.StorageClass, {"metadata": {"name": sc_name}, "provisioner": drivers[0]}
            )
        },
    )


@dataclass(frozen=True)
class Case:
    name: str
    new_pod: dict[str, Any]
    existing: tuple[dict[str, Any], ...]
    max_vols: int
    drivers: tuple[str, ...]
    fits: bool


CASES = [
    # csi_volume_predicate_test.go TestCSIVolumeCountPredicate (filterName "csi")
    Case(
        "fits when node capacity >= new pods CSI volume",
        ONE_VOL,
        (RUNNING, TWO_VOL),
        4,
        ("ebs",),
        True,
    ),
    Case(
        "doesn't when node capacity <= pods CSI volume",
        ONE_VOL,
        (RUNNING, TWO_VOL),
        2,
        ("ebs",),
        False,
    ),
    Case(
        "count pending PVCs towards capacity <= pods CSI volume",
        ONE_VOL,
        (PENDING_VOLUME, TWO_VOL),
        2,
        ("ebs",),
        False,
    ),
    Case(
        "count multiple pending pvcs towards capacity >= pods CSI volume",
        ONE_VOL,
        (PENDING_VOLUME, UNBOUND_PVC2, TWO_VOL),
        3,
        ("ebs",),
        True,
    ),
    Case(
        "should count PVCs with invalid PV name but valid SC",
        ONE_VOL,
        (MISSING_PV, TWO_VOL),
        2,
        ("ebs",),
        False,
    ),
    Case(
        "don't count pvcs with missing SC towards capacity",
        ONE_VOL,
        (RUNNING, NO_SC_PVC),
        2,
        ("ebs",),
        True,
    ),
    Case(
        "don't count pvcs with different type towards capacity",
        ONE_VOL,
        (GCE_TWO_VOL, TWO_VOL),
        2,
        ("ebs", "gce"),
        True,
    ),
    Case(
        "don't count pvcs with different type towards capacity",
        GCE_TWO_VOL,
        (TWO_VOL, RUNNING),
        2,
        ("ebs", "gce"),
        True,
    ),
    # Podium rows
    Case(
        "the new pod's volume already attached is not counted again",
        pod("csi-ebs-2"),
        (TWO_VOL,),
        1,
        ("ebs",),
        True,
    ),
    Case("exactly at the limit fits", ONE_VOL, (RUNNING,), 2, ("ebs",), True),
    Case("a missing claim does not count", pod("nope", "csi-ebs-0"), (RUNNING,), 2, ("ebs",), True),
]


def node_with_limits(
    existing: tuple[dict[str, Any], ...], limit: int, drivers: tuple[str, ...]
) -> Any:
    """``getNodeWithPodAndVolumeLimits``: a limit per driver in the node's allocatable."""
    builder = make_node("node-for-max-pd-test-1").allocatable(
        {csi_attach_limit_key(d): limit for d in drivers}
    )
    pods = [
        decode(o.Pod, {**p, "metadata": {"name": f"e{i}", "namespace": "default"}})
        for i, p in enumerate(existing)
    ]
    return builder.info(*pods)


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_csi_volume_count(case: Case) -> None:
    plugin = CSIMaxVolumeLimit(PluginArgs(name="MaxCSIVolumeCountPred"))
    node = node_with_limits(case.existing, case.max_vols, case.drivers)
    new_pod = PodInfo(decode(o.Pod, case.new_pod))
    meta = plugin.pre_filter(new_pod, Snapshot([node], fake_objects("csi", "csi-sc", case.drivers)))
    status = run_filter(plugin, new_pod, meta, node)
    assert status.is_success is case.fits
    assert status.reasons == (() if case.fits else (ERR_MAX_VOLUME_COUNT_EXCEEDED,))
    assert status.code is (Code.SUCCESS if case.fits else Code.UNSCHEDULABLE)


def test_node_without_limits_passes() -> None:
    plugin = CSIMaxVolumeLimit(PluginArgs(name="x"))
    node = make_node("n").info(
        decode(o.Pod, {**RUNNING, "metadata": {"name": "e", "namespace": "default"}})
    )
    new_pod = PodInfo(decode(o.Pod, ONE_VOL))
    meta = plugin.pre_filter(new_pod, Snapshot([node], fake_objects("csi", "csi-sc", ("ebs",))))
    assert run_filter(plugin, new_pod, meta, node).is_success


def test_limit_for_another_driver_only_does_not_limit() -> None:
    plugin = CSIMaxVolumeLimit(PluginArgs(name="x"))
    node = node_with_limits((RUNNING, TWO_VOL), 0, ("gce",))
    new_pod = PodInfo(decode(o.Pod, ONE_VOL))
    meta = plugin.pre_filter(new_pod, Snapshot([node], fake_objects("csi", "csi-sc", ("ebs",))))
    assert run_filter(plugin, new_pod, meta, node).is_success


def test_pod_without_csi_volumes_is_skipped() -> None:
    plugin = CSIMaxVolumeLimit(PluginArgs(name="x"))
    new_pod = PodInfo(decode(o.Pod, NO_SC_PVC))
    meta = plugin.pre_filter(new_pod, Snapshot([], fake_objects("csi", "csi-sc", ("ebs",))))
    assert meta is SKIP
    assert run_filter(plugin, new_pod, meta, make_node("n").info()).is_success


def test_claim_without_name_is_an_error_only_where_limits_exist() -> None:
    plugin = CSIMaxVolumeLimit(PluginArgs(name="x"))
    new_pod = PodInfo(decode(o.Pod, pod("")))
    meta = plugin.pre_filter(new_pod, Snapshot([]))
    assert run_filter(plugin, new_pod, meta, make_node("plain").info()).is_success
    with pytest.raises(PredicateError, match=r"^PersistentVolumeClaim had no name$"):
        run_filter(plugin, new_pod, meta, node_with_limits((), 3, ("ebs",)))


@pytest.mark.parametrize(
    ("driver", "want"),
    [
        ("ebs", "attachable-volumes-csi-ebs"),
        # 23 + 39 = 62 < 63: kept whole
        ("d" * 39, "attachable-volumes-csi-" + "d" * 39),
        # 23 + 40 = 63: 23 characters of the name and 16 hex digits of its SHA-1
        ("d" * 40, "attachable-volumes-csi-" + "d" * 23 + "4e99f0e6374ba7bf"),
    ],
    ids=["short", "longest kept", "hashed"],
)
def test_csi_attach_limit_key(driver: str, want: str) -> None:
    assert csi_attach_limit_key(driver) == want


def test_factory() -> None:
    plugin = csi_volume_limits.FACTORIES[csi_volume_limits.NAME](
        PluginArgs(name="MaxCSIVolumeCount")
    )
    assert plugin.name == "MaxCSIVolumeCount"
