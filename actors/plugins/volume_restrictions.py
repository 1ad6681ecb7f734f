"""NoDiskConflict: a pod may not mount a disk that a pod on the node already mounts.

Kubernetes source: ``NoDiskConflict`` and ``isVolumeConflict`` in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0, the reason from error.go there.

Two volumes conflict when they name the same disk of one of four kinds:

- GCE persistent disk: the same ``pdName``, unless both mounts are read-only;
- AWS EBS: the same ``volumeID`` (any two mounts, read-only or not);
- iSCSI: the same ``iqn``, unless both mounts are read-only;
- Ceph RBD: at least one monitor in common, the same pool and the same image, unless both
  mounts are read-only.

Other volume kinds never conflict. The reason is resolvable: evicting the pod that holds the
disk frees it (v1.14 preemption treats it so).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    FilterPlugin,
    PluginArgs,
    Skip,
    Status,
    unschedulable,
)
from podium.actors.plugins import names
from podium.protocol.objects import Volume

if TYPE_CHECKING:
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = ["ERR_DISK_CONFLICT", "FACTORIES", "NAME", "NoDiskConflict", "is_volume_conflict"]

NAME = names.NO_DISK_CONFLICT

ERR_DISK_CONFLICT = "node(s) had no available disk"


def _checked(volume: Volume) -> bool:
    """Whether the volume is of a kind this predicate checks at all."""
    return (
        volume.gce_persistent_disk is not None
        or volume.aws_elastic_block_store is not None
        or volume.rbd is not None
        or volume.iscsi is not None
    )


def _pair_conflicts(volume: Volume, existing: Volume) -> bool:
    gce, other_gce = volume.gce_persistent_disk, existing.gce_persistent_disk
    if (
        gce is not None
        and other_gce is not None
        and gce.pd_name == other_gce.pd_name
        and not (gce.read_only and other_gce.read_only)
    ):
        return True
    ebs, other_ebs = volume.aws_elastic_block_store, existing.aws_elastic_block_store
    if ebs is not None and other_ebs is not None and ebs.volume_id == other_ebs.volume_id:
        return True
    iscsi, other_iscsi = volume.iscsi, existing.iscsi
    if (
        iscsi is not None
        and other_iscsi is not None
        and iscsi.iqn == other_iscsi.iqn
        and not (iscsi.read_only and other_iscsi.read_only)
    ):
        return True
    rbd, other_rbd = volume.rbd, existing.rbd
    return (
        rbd is not None
        and other_rbd is not None
        and not set(rbd.monitors).isdisjoint(other_rbd.monitors)
        and rbd.pool == other_rbd.pool
        and rbd.image == other_rbd.image
        and not (rbd.read_only and other_rbd.read_only)
    )


def is_volume_conflict(volume: Volume, existing_volumes: Sequence[Volume]) -> bool:
    """Whether ``volume`` conflicts with any of a pod's ``existing_volumes`` (``isVolumeConflict``)."""
    if not _checked(volume):
        return False
    return any(_pair_conflicts(volume, existing) for existing in existing_volumes)


class NoDiskConflict(FilterPlugin[tuple[Volume, ...]]):
    """v1.14 NoDiskConflict (see the module docstring).

    ``pre_filter`` keeps the pod's volumes of the checked kinds, and answers SKIP for a pod that
    has none: such a pod passes on every node.
    """

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> tuple[Volume, ...] | Skip:
        checked = tuple(v for v in pod.pod.spec.volumes if _checked(v))
        return checked if checked else SKIP

    def filter(self, pod: PodInfo, meta: tuple[Volume, ...], node: NodeInfo) -> Status:
        for volume in meta:
            for existing in node.pods:
                if is_volume_conflict(volume, existing.pod.spec.volumes):
                    return unschedulable(ERR_DISK_CONFLICT)
        return SUCCESS


FACTORIES: dict[str, Callable[[PluginArgs], NoDiskConflict]] = {NAME: NoDiskConflict}
