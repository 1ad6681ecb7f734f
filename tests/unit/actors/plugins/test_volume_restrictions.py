"""NoDiskConflict on Kubernetes' tables plus Podium's read-only and overlap rows.

Rows named "<kind>: nothing / one state / same state / different state" come from
pkg/scheduler/algorithm/predicates/predicates_test.go@v1.14, TestGCEDiskConflicts,
TestAWSDiskConflicts, TestRBDDiskConflicts and TestISCSIDiskConflicts (4 of 4 rows each, 16 in
all). The others are Podium's.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pytest
from builders import make_node, make_pod

from podium.actors.framework.interface import SKIP, Code, PluginArgs, run_filter
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import volume_restrictions
from podium.actors.plugins.volume_restrictions import ERR_DISK_CONFLICT, NoDiskConflict


def pod_with(*volumes: dict[str, Any], name: str = "pod") -> Any:
    builder = make_pod(name)
    for volume in volumes:
        builder = builder.volume(volume)
    return builder.info()


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": f"gce-{pd}", "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def ebs(volume_id: str, read_only: bool = False) -> dict[str, Any]:
    return {
        "name": f"ebs-{volume_id}",
        "awsElasticBlockStore": {"volumeID": volume_id, "readOnly": read_only},
    }


def rbd(
    monitors: list[str], pool: str = "foo", image: str = "bar", read_only: bool = False
) -> dict[str, Any]:
    return {
        "name": "rbd",
        "rbd": {
            "monitors": monitors,
            "pool": pool,
            "image": image,
            "fsType": "ext4",
            "readOnly": read_only,
        },
    }


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {
        "name": "iscsi",
        "iscsi": {
            "targetPortal": "127.0.0.1:3260",
            "iqn": iqn,
            "fsType": "ext4",
            "lun": 0,
            "readOnly": read_only,
        },
    }


@dataclass(frozen=True)
class Case:
    name: str
    pod: Any
    existing: tuple[Any, ...]
    want: tuple[str, ...]


def kubernetes_rows(kind: str, state: dict[str, Any], state2: dict[str, Any]) -> list[Case]:
    # predicates_test.go@v1.14 Test<Kind>DiskConflicts: the same four rows for every kind.
    return [
        Case(f"{kind}: nothing", pod_with(), (), ()),
        Case(f"{kind}: one state", pod_with(), (pod_with(state, name="e"),), ()),
        Case(
            f"{kind}: same state",
            pod_with(state),
            (pod_with(state, name="e"),),
            (ERR_DISK_CONFLICT,),
        ),
        Case(f"{kind}: different state", pod_with(state2), (pod_with(state, name="e"),), ()),
    ]


CASES = [
    *kubernetes_rows("GCE", gce("foo"), gce("bar")),
    *kubernetes_rows("AWS", ebs("foo"), ebs("bar")),
    *kubernetes_rows("RBD", rbd(["a", "b"]), rbd(["c", "d"])),
    *kubernetes_rows(
        "ISCSI",
        iscsi("iqn.2016-12.server:storage.target01"),
        iscsi("iqn.2017-12.server:storage.target01"),
    ),
    # Podium rows: the read-only exceptions and the RBD identity.
    Case(
        "GCE both read-only share the disk",
        pod_with(gce("foo", True)),
        (pod_with(gce("foo", True), name="e"),),
        (),
    ),
    Case(
        "GCE one read-write mount conflicts",
        pod_with(gce("foo", True)),
        (pod_with(gce("foo"), name="e"),),
        (ERR_DISK_CONFLICT,),
    ),
    Case(
        "AWS read-only mounts still conflict",
        pod_with(ebs("foo", True)),
        (pod_with(ebs("foo", True), name="e"),),
        (ERR_DISK_CONFLICT,),
    ),
    Case(
        "ISCSI both read-only share the target",
        pod_with(iscsi("iqn.x", True)),
        (pod_with(iscsi("iqn.x", True), name="e"),),
        (),
    ),
    Case(
        "ISCSI one read-write mount conflicts",
        pod_with(iscsi("iqn.x")),
        (pod_with(iscsi("iqn.x", True), name="e"),),
        (ERR_DISK_CONFLICT,),
    ),
    Case(
        "RBD one shared monitor is the same image",
        pod_with(rbd(["b", "z"])),
        (pod_with(rbd(["a", "b"]), name="e"),),
        (ERR_DISK_CONFLICT,),
    ),
    Case(
        "RBD other pool is another image",
        pod_with(rbd(["a"], pool="p2")),
        (pod_with(rbd(["a"]), name="e"),),
        (),
    ),
    Case(
        "RBD other image", pod_with(rbd(["a"], image="i2")), (pod_with(rbd(["a"]), name="e"),), ()
    ),
    Case(
        "RBD both read-only",
        pod_with(rbd(["a"], read_only=True)),
        (pod_with(rbd(["a"], read_only=True), name="e"),),
        (),
    ),
    Case(
        "kinds do not mix: GCE pdName equal to an EBS volumeID",
        pod_with(gce("foo")),
        (pod_with(ebs("foo"), name="e"),),
        (),
    ),
    Case(
        "second volume of the pod conflicts with the second pod",
        pod_with(gce("a"), ebs("x")),
        (pod_with(gce("b"), name="e1"), pod_with(ebs("x"), name="e2")),
        (ERR_DISK_CONFLICT,),
    ),
    Case(
        "other volume kinds never conflict",
        pod_with({"name": "claim", "persistentVolumeClaim": {"claimName": "c"}}),
        (pod_with({"name": "claim", "persistentVolumeClaim": {"claimName": "c"}}, name="e"),),
        (),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_no_disk_conflict(case: Case) -> None:
    plugin = NoDiskConflict(PluginArgs(name="NoDiskConflict"))
    node = make_node("n").info(*case.existing)
    meta = plugin.pre_filter(case.pod, Snapshot([node]))
    status = run_filter(plugin, case.pod, meta, node)
    assert status.reasons == case.want
    assert status.code is (Code.UNSCHEDULABLE if case.want else Code.SUCCESS)
    if meta is SKIP:
        assert not case.want


def test_pod_without_checked_volumes_is_skipped() -> None:
    plugin = NoDiskConflict(PluginArgs(name="NoDiskConflict"))
    pod = pod_with({"name": "claim", "persistentVolumeClaim": {"claimName": "c"}})
    assert plugin.pre_filter(pod, Snapshot([])) is SKIP


def test_factory_reports_under_the_entry_name() -> None:
    plugin = volume_restrictions.FACTORIES[volume_restrictions.NAME](
        PluginArgs(name="StorageCompatibility")
    )
    assert plugin.name == "StorageCompatibility"
