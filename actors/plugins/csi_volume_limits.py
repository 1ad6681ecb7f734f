"""MaxCSIVolumeCountPred: a node takes at most its limit of volumes per CSI driver.

Kubernetes source: ``CSIMaxVolumeLimitChecker`` in
pkg/scheduler/algorithm/predicates/csi_volume_predicate.go@v1.14.0, ``GetCSIAttachLimitKey``
in pkg/volume/util/attach_limit.go there, the reason from predicates/error.go.

Only volumes reached through a PersistentVolumeClaim count. A bound claim whose
PersistentVolume has ``spec.csi`` counts as that driver's volume ``volumeHandle``. A claim
without a volume name, or whose volume is missing, counts as one volume of the driver named by
its StorageClass's ``provisioner`` (keyed by ``namespace/claim``, so two pods sharing the claim
count it once); a claim without ``storageClassName``, or whose class is missing, does not count,
and neither does a missing claim. The limit for driver ``D`` is the node's allocatable
``attachable-volumes-csi-D`` (a name too long for a resource name is shortened with a SHA-1, as
``GetCSIAttachLimitKey`` does); a node without any ``attachable-volumes-*`` allocatable, or
without the driver's key, has no limit for it.

The reason "node(s) exceed max volume count" is resolvable (removing pods frees volumes).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    FilterPlugin,
    PluginArgs,
    PredicateError,
    Skip,
    Status,
    unschedulable,
)
from podium.actors.plugins import names
from podium.actors.plugins.claims import resolve_claim
from podium.protocol.objects import PersistentVolume, PersistentVolumeClaim, Volume

if TYPE_CHECKING:
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import ClusterObjects, Snapshot

__all__ = [
    "ATTACHABLE_VOLUMES_PREFIX",
    "CSI_ATTACH_LIMIT_PREFIX",
    "ERR_MAX_VOLUME_COUNT_EXCEEDED",
    "FACTORIES",
    "NAME",
    "CSIMaxVolumeLimit",
    "csi_attach_limit_key",
]

NAME = names.MAX_CSI_VOLUME_COUNT

ERR_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
_RESOURCE_NAME_LENGTH_LIMIT = 63

# A volume's identity: ("handle", volumeHandle) for a resolved CSI volume, ("claim",
# "namespace/name") for a claim counted through its StorageClass.
VolumeKey = tuple[str, str]


def csi_attach_limit_key(driver: str) -> str:
    """The allocatable resource holding ``driver``'s limit (v1.14 ``GetCSIAttachLimitKey``)."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= _RESOURCE_NAME_LENGTH_LIMIT:
        digest = hashlib.sha1(driver.encode(), usedforsecurity=False).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + digest
    return CSI_ATTACH_LIMIT_PREFIX + driver


def _driver_of_claim(
    claim: PersistentVolumeClaim, pv: PersistentVolume | None, objects: ClusterObjects
) -> str:
    """The driver of a claim's volume ``pv``, or ``""`` when it is not a CSI volume."""
    if pv is not None:
        return pv.spec.csi.driver if pv.spec.csi is not None else ""
    # Unbound, or bound to a volume that is gone: the class's provisioner decides.
    class_name = claim.spec.storage_class_name
    if class_name is None:
        return ""
    storage_class = objects.storage_classes.get(class_name)
    return storage_class.provisioner if storage_class is not None else ""


def _filter_attachable(
    volumes: Iterable[Volume], namespace: str, objects: ClusterObjects, into: dict[VolumeKey, str]
) -> None:
    """Map the CSI volumes among ``volumes`` to their limit key (``filterAttachableVolumes``).

    Raises:
        PredicateError: a claim volume without a claim name.
    """
    for volume in volumes:
        source = volume.persistent_volume_claim
        if source is None:
            continue
        claim_key, claim, pv = resolve_claim(source, namespace, objects)
        if claim is None:
            continue
        driver = _driver_of_claim(claim, pv, objects)
        if pv is not None:
            handle = pv.spec.csi.volume_handle if pv.spec.csi is not None else ""
            key: VolumeKey = ("handle", handle)
        else:
            handle = claim_key
            key = ("claim", claim_key)
        if not driver or not handle:
            continue
        into[key] = csi_attach_limit_key(driver)


@dataclass(frozen=True, slots=True)
class _Meta:
    new_volumes: dict[VolumeKey, str]
    objects: ClusterObjects
    error: str | None = None


def _volume_limits(node: NodeInfo) -> dict[str, int]:
    """``NodeInfo.VolumeLimits``: the node's allocatable ``attachable-volumes-*`` resources."""
    return {
        k: v for k, v in node.allocatable.scalar.items() if k.startswith(ATTACHABLE_VOLUMES_PREFIX)
    }


class CSIMaxVolumeLimit(FilterPlugin[_Meta]):
    """v1.14 ``CSIMaxVolumeLimitChecker`` (see the module docstring).

    ``pre_filter`` resolves the new pod's CSI volumes once and answers SKIP when there are none.
    """

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> _Meta | Skip:
        new_volumes: dict[VolumeKey, str] = {}
        try:
            _filter_attachable(pod.pod.spec.volumes, pod.namespace, snapshot.objects, new_volumes)
        except PredicateError as exc:
            return _Meta({}, snapshot.objects, str(exc))
        if not new_volumes:
            return SKIP
        return _Meta(new_volumes, snapshot.objects)

    def filter(self, pod: PodInfo, meta: _Meta, node: NodeInfo) -> Status:
        limits = _volume_limits(node)
        # v1.14 looks at the node's limits before it resolves the pod's volumes.
        if not limits:
            return SUCCESS
        if meta.error is not None:
            raise PredicateError(meta.error)
        attached: dict[VolumeKey, str] = {}
        for other in node.pods:
            _filter_attachable(other.pod.spec.volumes, other.namespace, meta.objects, attached)
        attached_count = Counter(attached.values())
        new_count = Counter(key for vol, key in meta.new_volumes.items() if vol not in attached)
        for limit_key, count in new_count.items():
            limit = limits.get(limit_key)
            if limit is not None and attached_count[limit_key] + count > limit:
                return unschedulable(ERR_MAX_VOLUME_COUNT_EXCEEDED)
        return SUCCESS


FACTORIES: dict[str, Callable[[PluginArgs], CSIMaxVolumeLimit]] = {NAME: CSIMaxVolumeLimit}
