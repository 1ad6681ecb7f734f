"""MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxAzureDiskVolumeCount, MaxCinderVolumeCount.

Kubernetes source: ``MaxPDVolumeCountChecker`` (``NewMaxPDVolumeCountPredicate``, the four
``VolumeFilter``s, ``getMaxVolumeFunc``, ``getMaxVolLimitFromEnv``) in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0; the limits from
pkg/volume/util/attach_limit.go there; the reason from error.go.

Each predicate counts the unique volumes of its kind that the node's pods use, directly
(``awsElasticBlockStore.volumeID``, ``gcePersistentDisk.pdName``, ``azureDisk.diskName``,
``cinder.volumeID``) or through a PersistentVolumeClaim whose PersistentVolume is of that kind,
adds the new pod's volumes that are not mounted there yet, and rejects the node when the total
exceeds the limit. As v1.14 does, a claim that cannot be resolved (the claim is missing, it is
not bound, or its volume is missing) is assumed to be of the predicate's kind and counted once
per ``namespace/claim`` (v1.14 keys it with a random prefix; Podium keys it apart from real
volume ids by construction, to the same effect).

The limit, in order of precedence:

1. the node's allocatable ``attachable-volumes-aws-ebs`` / ``-gce-pd`` / ``-azure-disk`` /
   ``-cinder`` (the AttachVolumeLimit feature, on by default in v1.14);
2. ``KUBE_MAX_PD_VOLS`` from the scheduler's environment when it is a positive integer (read
   once, when the plugin is built);
3. the default: EBS 39 (25 on Nitro instance types, ``^[cmr]5.*|t3|z1d`` in the node's
   ``beta.kubernetes.io/instance-type`` label), GCE PD 16, Azure Disk 16, Cinder 256.

The reason "node(s) exceed max volume count" is resolvable (removing pods frees volumes).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
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
from podium.protocol.objects import PersistentVolume, Volume

if TYPE_CHECKING:
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import ClusterObjects, Snapshot

__all__ = [
    "AZURE_DISK_FILTER",
    "CINDER_FILTER",
    "DEFAULT_MAX_AZURE_DISK_VOLUMES",
    "DEFAULT_MAX_CINDER_VOLUMES",
    "DEFAULT_MAX_EBS_NITRO_VOLUMES",
    "DEFAULT_MAX_EBS_VOLUMES",
    "DEFAULT_MAX_GCE_PD_VOLUMES",
    "EBS_FILTER",
    "ERR_MAX_VOLUME_COUNT_EXCEEDED",
    "FACTORIES",
    "GCE_PD_FILTER",
    "KUBE_MAX_PD_VOLS",
    "MaxPDVolumeCount",
    "VolumeFilter",
    "max_volumes_from_env",
]

ERR_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

KUBE_MAX_PD_VOLS = "KUBE_MAX_PD_VOLS"
DEFAULT_MAX_EBS_VOLUMES = 39
DEFAULT_MAX_EBS_NITRO_VOLUMES = 25
DEFAULT_MAX_GCE_PD_VOLUMES = 16
DEFAULT_MAX_AZURE_DISK_VOLUMES = 16
DEFAULT_MAX_CINDER_VOLUMES = 256

_EBS_NITRO = re.compile(r"^[cmr]5.*|t3|z1d")
"""``volumeutil.EBSNitroLimitRegex`` (Go ``regexp.MatchString`` finds a match anywhere)."""
LABEL_INSTANCE_TYPE = "beta.kubernetes.io/instance-type"
LABEL_INSTANCE_TYPE_GA = "node.kubernetes.io/instance-type"

# A volume's identity: ("id", volume id) for a real volume, ("claim", "namespace/name") for a
# claim that could not be resolved to its volume. The tags keep the two spaces apart.
VolumeKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class VolumeFilter:
    """Which volumes one predicate counts (v1.14 ``VolumeFilter``).

    Attributes:
        volume_id: the id of a pod volume of this kind, or ``None``.
        pv_volume_id: the id of a PersistentVolume of this kind, or ``None``.
        limit_key: the node allocatable resource that overrides the default limit.
        default_limit: the limit for a node, from its labels, without an override.
    """

    volume_id: Callable[[Volume], str | None]
    pv_volume_id: Callable[[PersistentVolume], str | None]
    limit_key: str
    default_limit: Callable[[Mapping[str, str]], int]


def _ebs_limit(labels: Mapping[str, str]) -> int:
    instance_type = labels.get(LABEL_INSTANCE_TYPE)
    if instance_type is None:
        instance_type = labels.get(LABEL_INSTANCE_TYPE_GA, "")
    if _EBS_NITRO.search(instance_type):
        return DEFAULT_MAX_EBS_NITRO_VOLUMES
    return DEFAULT_MAX_EBS_VOLUMES


EBS_FILTER = VolumeFilter(
    volume_id=lambda v: v.aws_elastic_block_store.volume_id if v.aws_elastic_block_store else None,
    pv_volume_id=lambda pv: (
        pv.spec.aws_elastic_block_store.volume_id if pv.spec.aws_elastic_block_store else None
    ),
    limit_key="attachable-volumes-aws-ebs",
    default_limit=_ebs_limit,
)
GCE_PD_FILTER = VolumeFilter(
    volume_id=lambda v: v.gce_persistent_disk.pd_name if v.gce_persistent_disk else None,
    pv_volume_id=lambda pv: (
        pv.spec.gce_persistent_disk.pd_name if pv.spec.gce_persistent_disk else None
    ),
    limit_key="attachable-volumes-gce-pd",
    default_limit=lambda _labels: DEFAULT_MAX_GCE_PD_VOLUMES,
)
AZURE_DISK_FILTER = VolumeFilter(
    volume_id=lambda v: v.azure_disk.disk_name if v.azure_disk else None,
    pv_volume_id=lambda pv: pv.spec.azure_disk.disk_name if pv.spec.azure_disk else None,
    limit_key="attachable-volumes-azure-disk",
    default_limit=lambda _labels: DEFAULT_MAX_AZURE_DISK_VOLUMES,
)
CINDER_FILTER = VolumeFilter(
    volume_id=lambda v: v.cinder.volume_id if v.cinder else None,
    pv_volume_id=lambda pv: pv.spec.cinder.volume_id if pv.spec.cinder else None,
    limit_key="attachable-volumes-cinder",
    default_limit=lambda _labels: DEFAULT_MAX_CINDER_VOLUMES,
)


def max_volumes_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """``KUBE_MAX_PD_VOLS`` when it is a positive integer, else ``None`` (``getMaxVolLimitFromEnv``)."""
    raw = (os.environ if environ is None else environ).get(KUBE_MAX_PD_VOLS, "")
    if not raw:
        return None
    try:
        value = int(raw, 10)
    except ValueError:
        return None
    return value if value > 0 else None


def _filter_volumes(
    vfilter: VolumeFilter,
    volumes: Iterable[Volume],
    namespace: str,
    objects: ClusterObjects,
    into: set[VolumeKey],
) -> None:
    """Add the keys of ``volumes`` that this filter counts to ``into`` (v1.14 ``filterVolumes``).

    Raises:
        PredicateError: a claim volume without a claim name.
    """
    for volume in volumes:
        volume_id = vfilter.volume_id(volume)
        if volume_id is not None:
            into.add(("id", volume_id))
            continue
        source = volume.persistent_volume_claim
        if source is None:
            continue
        claim_key, _, pv = resolve_claim(source, namespace, objects)
        # A missing claim, an unbound claim and a missing volume are all counted, once per
        # claim: the pod may still hold the volume the claim was bound to.
        if pv is None:
            into.add(("claim", claim_key))
            continue
        pv_id = vfilter.pv_volume_id(pv)
        if pv_id is not None:
            into.add(("id", pv_id))


@dataclass(frozen=True, slots=True)
class _Meta:
    new_volumes: frozenset[VolumeKey]
    objects: ClusterObjects
    error: str | None = None


class MaxPDVolumeCount(FilterPlugin[_Meta]):
    """v1.14 ``MaxPDVolumeCountChecker`` for one volume kind (see the module docstring).

    ``pre_filter`` resolves the new pod's volumes of this kind once and answers SKIP when it has
    none (the predicate then passes on every node); ``filter`` counts the node's pods.

    Args:
        args: the policy entry.
        volume_filter: which volumes to count (``EBS_FILTER`` ...).
        env_max_volumes: ``KUBE_MAX_PD_VOLS``; ``None`` when unset or invalid.
    """

    def __init__(
        self, args: PluginArgs, volume_filter: VolumeFilter, env_max_volumes: int | None = None
    ) -> None:
        self.name = args.name
        self.volume_filter = volume_filter
        self.env_max_volumes = env_max_volumes

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> _Meta | Skip:
        new_volumes: set[VolumeKey] = set()
        try:
            _filter_volumes(
                self.volume_filter,
                pod.pod.spec.volumes,
                pod.namespace,
                snapshot.objects,
                new_volumes,
            )
        except PredicateError as exc:
            # v1.14 raises it from every node it evaluates; so does ``filter``.
            return _Meta(frozenset(), snapshot.objects, str(exc))
        if not new_volumes:
            return SKIP
        return _Meta(frozenset(new_volumes), snapshot.objects)

    def max_volumes(self, node: NodeInfo) -> int:
        """The node's limit for this volume kind (allocatable, then environment, then default)."""
        override = node.allocatable.scalar.get(self.volume_filter.limit_key)
        if override is not None:
            return override
        if self.env_max_volumes is not None:
            return self.env_max_volumes
        return self.volume_filter.default_limit(node.labels)

    def filter(self, pod: PodInfo, meta: _Meta, node: NodeInfo) -> Status:
        if meta.error is not None:
            raise PredicateError(meta.error)
        if not meta.new_volumes:
            return SUCCESS
        existing: set[VolumeKey] = set()
        for other in node.pods:
            _filter_volumes(
                self.volume_filter, other.pod.spec.volumes, other.namespace, meta.objects, existing
            )
        new_count = len(meta.new_volumes - existing)
        if len(existing) + new_count > self.max_volumes(node):
            return unschedulable(ERR_MAX_VOLUME_COUNT_EXCEEDED)
        return SUCCESS


def _factory(volume_filter: VolumeFilter) -> Callable[[PluginArgs], MaxPDVolumeCount]:
    def build(args: PluginArgs) -> MaxPDVolumeCount:
        return MaxPDVolumeCount(args, volume_filter, max_volumes_from_env())

    return build


FACTORIES: dict[str, Callable[[PluginArgs], MaxPDVolumeCount]] = {
    names.MAX_EBS_VOLUME_COUNT: _factory(EBS_FILTER),
    names.MAX_GCE_PD_VOLUME_COUNT: _factory(GCE_PD_FILTER),
    names.MAX_AZURE_DISK_VOLUME_COUNT: _factory(AZURE_DISK_FILTER),
    names.MAX_CINDER_VOLUME_COUNT: _factory(CINDER_FILTER),
}
