"""NoVolumeZoneConflict: a pod's bound volumes must live in the node's zone and region.

Kubernetes source: ``VolumeZoneChecker`` (``NewVolumeZonePredicate``) in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0, ``LabelZonesToSet`` in
pkg/volume/util/util.go there, the reason from predicates/error.go.

For a node that carries a zone or region label, every PersistentVolumeClaim volume of the pod
is looked up. For each zone/region label on the claim's PersistentVolume, the node's value for
that label must be one of the volume's values (a multi-zone volume separates them with
``__``; a value that does not parse, e.g. with an empty part, is ignored, as v1.14 does). A node
without any zone or region label passes at once, before any claim is read.

v1.14 reads only the ``failure-domain.beta.kubernetes.io/{zone,region}`` labels; Podium also
reads ``topology.kubernetes.io/{zone,region}`` (docs/differences.md, "zone labels"): on the
volume, both spellings are constraints; on the node, the same spelling is read first and the
other spelling second, so beta-only data behaves exactly as v1.14.

An unbound claim is skipped when its StorageClass has ``volumeBindingMode:
WaitForFirstConsumer`` (CheckVolumeBinding places it); any other unbound claim, a missing claim
and a missing volume are errors, raised as :class:`PredicateError` with v1.14's text from every
node that has zone labels (v1.14 returns the error from each node it evaluates). The reason
"node(s) had no available volume zone" is unresolvable (v1.14 preemption skips such nodes). A row
without a Node object is v1.14's "node not found" error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from podium.actors.framework.interface import (
    NODE_NOT_FOUND,
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
from podium.actors.plugins.claims import ERR_CLAIM_WITHOUT_NAME, claim_class

if TYPE_CHECKING:
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import ClusterObjects, Snapshot

__all__ = [
    "ERR_VOLUME_ZONE_CONFLICT",
    "FACTORIES",
    "LABEL_MULTI_ZONE_DELIMITER",
    "NAME",
    "TOPOLOGY_LABELS",
    "VolumeZone",
    "label_zones_to_set",
]

NAME = names.NO_VOLUME_ZONE_CONFLICT

ERR_VOLUME_ZONE_CONFLICT = "node(s) had no available volume zone"

LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE_GA = "topology.kubernetes.io/zone"
LABEL_REGION_GA = "topology.kubernetes.io/region"
LABEL_MULTI_ZONE_DELIMITER = "__"

_OTHER_SPELLING = {
    LABEL_ZONE_BETA: LABEL_ZONE_GA,
    LABEL_REGION_BETA: LABEL_REGION_GA,
    LABEL_ZONE_GA: LABEL_ZONE_BETA,
    LABEL_REGION_GA: LABEL_REGION_BETA,
}
TOPOLOGY_LABELS = frozenset(_OTHER_SPELLING)


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """The zones of a volume label value, or ``None`` when it does not parse (``LabelZonesToSet``)."""
    zones = [part.strip() for part in value.split(LABEL_MULTI_ZONE_DELIMITER)]
    if any(not zone for zone in zones):
        return None
    return frozenset(zones)


@dataclass(frozen=True, slots=True)
class _Step:
    """One claim volume, resolved: an error to raise, or the volume's zone constraints."""

    error: str | None = None
    constraints: tuple[tuple[str, frozenset[str]], ...] = ()


def _resolve(claim_name: str, namespace: str, objects: ClusterObjects) -> _Step | None:
    """What one claim volume requires of a node; ``None`` when it requires nothing."""
    if not claim_name:
        return _Step(error=ERR_CLAIM_WITHOUT_NAME)
    claim = objects.persistent_volume_claims.get(f"{namespace}/{claim_name}")
    if claim is None:
        return _Step(error=f'persistentvolumeclaim "{claim_name}" not found')
    pv_name = claim.spec.volume_name
    if not pv_name:
        class_name = claim_class(claim)
        storage_class = objects.storage_classes.get(class_name) if class_name else None
        if (
            storage_class is not None
            and storage_class.volume_binding_mode == "WaitForFirstConsumer"
        ):
            return None
        return _Step(error=f'PersistentVolumeClaim is not bound: "{claim_name}"')
    pv = objects.persistent_volumes.get(pv_name)
    if pv is None:
        return _Step(error=f'persistentvolume "{pv_name}" not found')
    constraints = []
    for key, value in pv.metadata.labels.items():
        if key not in TOPOLOGY_LABELS:
            continue
        zones = label_zones_to_set(value)
        if zones is None:
            continue  # v1.14 logs a warning and ignores the label
        constraints.append((key, zones))
    return _Step(constraints=tuple(constraints)) if constraints else None


def _node_value(labels: Mapping[str, str], key: str) -> str:
    value = labels.get(key)
    if value is None:
        value = labels.get(_OTHER_SPELLING[key], "")
    return value


class VolumeZone(FilterPlugin[tuple[_Step, ...]]):
    """v1.14 ``VolumeZoneChecker`` (see the module docstring).

    ``pre_filter`` resolves the pod's claims once into a list of steps (an error, or the zone
    constraints of one volume, in volume order) and answers SKIP for a pod without claims.
    """

    missing_node = NODE_NOT_FOUND

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> tuple[_Step, ...] | Skip:
        steps: list[_Step] = []
        has_claims = False
        for volume in pod.pod.spec.volumes:
            source = volume.persistent_volume_claim
            if source is None:
                continue
            has_claims = True
            step = _resolve(source.claim_name, pod.namespace, snapshot.objects)
            if step is not None:
                steps.append(step)
        if not has_claims:
            return SKIP
        return tuple(steps)

    def filter(self, pod: PodInfo, meta: tuple[_Step, ...], node: NodeInfo) -> Status:
        labels = node.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            # The node has no zone constraints: every volume fits it.
            return SUCCESS
        for step in meta:
            if step.error is not None:
                raise PredicateError(step.error)
            for key, zones in step.constraints:
                if _node_value(labels, key) not in zones:
                    return unschedulable(ERR_VOLUME_ZONE_CONFLICT, resolvable=False)
        return SUCCESS


FACTORIES: dict[str, Callable[[PluginArgs], VolumeZone]] = {NAME: VolumeZone}
