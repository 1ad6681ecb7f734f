"""CheckVolumeBinding: the pod's claims must be bound to volumes the node can reach, or bindable.

Kubernetes sources (v1.14.0): ``VolumeBindingChecker`` in
pkg/scheduler/algorithm/predicates/predicates.go; the volume binder's ``FindPodVolumes``,
``getPodVolumes``, ``checkBoundClaims``, ``findMatchingVolumes`` and ``checkVolumeProvisions``
in pkg/controller/volume/persistentvolume/scheduler_binder.go; ``findMatchingVolume`` and
``checkAccessModes`` in pkg/controller/volume/persistentvolume/index.go; ``shouldDelayBinding``
in pv_controller.go; ``CheckNodeAffinity`` in pkg/volume/util/util.go;
``podPassesBasicChecks`` in pkg/scheduler/core/generic_scheduler.go. Reasons from
predicates/error.go. Podium evaluates them directly over the snapshot's objects.

The pod's claims fall in three groups:

- **bound** (``spec.volumeName`` set and the ``pv.kubernetes.io/bind-completed`` annotation
  present): the PersistentVolume's ``nodeAffinity.required`` must match the node's labels, else
  "node(s) had volume node affinity conflict";
- **unbound, delayed** (no volume name, StorageClass with ``WaitForFirstConsumer``, no
  ``volume.kubernetes.io/selected-node`` annotation): each needs an available PersistentVolume
  on the node (same class, access modes, volume mode, capacity >= request, the claim's selector,
  no other claim, node affinity satisfied; the smallest fits; claims are matched smallest
  request first and no volume serves two claims of one pod), or else a class that can
  provision (a provisioner other than ``kubernetes.io/no-provisioner`` whose
  ``allowedTopologies`` admit the node), else "node(s) didn't find available persistent volumes
  to bind";
- **unbound, immediate** (everything else, including a claim pre-bound by name only): v1.14
  fails the attempt with the error "pod has unbound immediate PersistentVolumeClaims" from every
  node it evaluates; ``filter`` raises it as :class:`PredicateError` likewise.

A missing claim, or one being deleted, fails the attempt once before any node is looked at
(v1.14 ``podPassesBasicChecks``): ``pre_filter`` raises ``persistentvolumeclaim "NAME" not
found`` / ``... is being deleted``. A bound claim whose volume is missing fails with
``could not find v1.PersistentVolume "NAME"`` (the binder's assume cache).

Both reasons are unresolvable (v1.14 preemption skips such nodes). A row without a Node object
is v1.14's "node not found" error.

Deliberate differences (docs/parity.md, volume_binding): a claim whose ``status.phase`` is
``Bound`` counts as fully bound even without the bind-completed annotation (Podium has no
PersistentVolume controller to add it; real clusters set both); candidate volumes are visited
in name order, so ties between equally small volumes are broken by name (v1.14 by informer
order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import msgspec

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
from podium.actors.plugins.claims import claim_class, pv_class
from podium.protocol.labels import label_selector_matches, node_selector_term_matches
from podium.protocol.objects import (
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    TopologySelectorTerm,
    namespaced_key,
)
from podium.protocol.quantity import Quantity

if TYPE_CHECKING:
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import ClusterObjects, Snapshot

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_SELECTED_NODE",
    "BIND_COMPLETED_VALUE",
    "ERR_UNBOUND_IMMEDIATE",
    "ERR_VOLUME_BIND_CONFLICT",
    "ERR_VOLUME_NODE_CONFLICT",
    "FACTORIES",
    "NAME",
    "NOT_SUPPORTED_PROVISIONER",
    "PodClaims",
    "PodVolumes",
    "VolumeBinding",
    "bound_claim",
    "claimed_volume",
    "fold_volume_decision",
    "pod_passes_basic_checks",
    "pv_node_affinity_matches",
    "selected_claim",
]

NAME = names.CHECK_VOLUME_BINDING

ERR_VOLUME_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_VOLUME_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED_VALUE = "yes"  # pv_controller.go@v1.14 annBindCompleted's value
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
_FILESYSTEM = "Filesystem"
_STORAGE = "storage"


# --------------------------------------------------------------------------- helpers


def pv_node_affinity_matches(pv: PersistentVolume, node_labels: Mapping[str, str]) -> bool:
    """``volumeutil.CheckNodeAffinity``: the volume's required node affinity admits the labels.

    v1.14 passes no node fields, so a ``matchFields`` requirement sees an empty field set.
    """
    affinity = pv.spec.node_affinity
    if affinity is None or affinity.required is None:
        return True
    return any(
        node_selector_term_matches(term, node_labels, {})
        for term in affinity.required.node_selector_terms
    )


def _topology_allows(terms: Sequence[TopologySelectorTerm], node_labels: Mapping[str, str]) -> bool:
    """``v1helper.MatchTopologySelectorTerms``: no terms allow everything; terms are ORed."""
    if not terms:
        return True
    for term in terms:
        requirements = term.match_label_expressions
        # An empty term selects nothing; a requirement without values is invalid (no match).
        if not requirements or any(not r.values for r in requirements):
            continue
        if all(r.key in node_labels and node_labels[r.key] in r.values for r in requirements):
            return True
    return False


def _storage(resources: Mapping[str, Quantity]) -> Fraction:
    """The ``storage`` quantity of a resource list, exactly; zero when absent."""
    quantity = resources.get(_STORAGE)
    return quantity.value if quantity is not None else Fraction(0)


def _is_fully_bound(claim: PersistentVolumeClaim) -> bool:
    return bool(claim.spec.volume_name) and (
        ANN_BIND_COMPLETED in claim.metadata.annotations or claim.status.phase == "Bound"
    )


def _should_delay_binding(claim: PersistentVolumeClaim, objects: ClusterObjects) -> bool:
    """The PV controller's ``shouldDelayBinding`` at v1.14."""
    if ANN_SELECTED_NODE in claim.metadata.annotations:
        # The scheduler already chose a node for provisioning: no longer the scheduler's claim.
        return False
    class_name = claim_class(claim)
    if not class_name:
        return False
    storage_class = objects.storage_classes.get(class_name)
    return storage_class is not None and storage_class.volume_binding_mode == "WaitForFirstConsumer"


def _claim_names(pod: Pod) -> list[str]:
    return [
        v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim
    ]


def pod_passes_basic_checks(pod: Pod, objects: ClusterObjects) -> str | None:
    """v1.14 ``podPassesBasicChecks``: every claim the pod names exists and is not being deleted.

    Returns:
        ``None``, or the error the whole attempt fails with.
    """
    for name in _claim_names(pod):
        claim = objects.persistent_volume_claims.get(namespaced_key(pod.metadata.namespace, name))
        if claim is None:
            return f'persistentvolumeclaim "{name}" not found'
        if claim.metadata.deletion_timestamp is not None:
            return f'persistentvolumeclaim "{name}" is being deleted'
    return None


# --------------------------------------------------------------------------- pre-computed pod view


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A volume that could serve an unbound claim, whatever the node."""

    pv: PersistentVolume
    capacity: Fraction
    prebound: bool
    """Pre-bound to this claim (``claimRef``): it is this claim's volume or none is."""


@dataclass(frozen=True, slots=True)
class _Unbound:
    key: str
    claim: PersistentVolumeClaim
    candidates: tuple[_Candidate, ...]


@dataclass(frozen=True, slots=True)
class PodClaims:
    """What ``pre_filter`` learns about a pod's claims (node-independent).

    Attributes:
        error: the error every node gives (unbound immediate claims), or ``None``.
    """

    error: str | None
    bound: tuple[tuple[str, PersistentVolume | None], ...]
    """(volume name, volume or ``None`` when missing) per bound claim, in volume order."""
    unbound: tuple[_Unbound, ...]
    """Delayed claims, smallest request first."""
    classes: Mapping[str, StorageClass]


def _volume_mode(mode: str) -> str:
    return mode or _FILESYSTEM


def _is_bound_to_claim(pv: PersistentVolume, claim: PersistentVolumeClaim, namespace: str) -> bool:
    ref = pv.spec.claim_ref
    if ref is None or ref.name != claim.metadata.name or ref.namespace != namespace:
        return False
    return not ref.uid or ref.uid == claim.metadata.uid


def _candidates(
    claim: PersistentVolumeClaim, namespace: str, pvs: Sequence[PersistentVolume]
) -> tuple[_Candidate, ...]:
    """The node-independent part of v1.14 ``findMatchingVolume``, in visiting order."""
    listed_class = claim.spec.storage_class_name or ""
    requested_class = claim_class(claim)
    request = _storage(claim.spec.resources.requests)
    selector = claim.spec.selector
    wanted_modes = claim.spec.access_modes
    out = []
    for pv in pvs:
        if pv.spec.storage_class_name != listed_class:
            continue  # the assume cache lists the claim's class only
        if _volume_mode(claim.spec.volume_mode) != _volume_mode(pv.spec.volume_mode):
            continue
        if pv.metadata.deletion_timestamp is not None:
            continue
        capacity = _storage(pv.spec.capacity)
        if _is_bound_to_claim(pv, claim, namespace):
            if capacity >= request:
                out.append(_Candidate(pv, capacity, prebound=True))
            continue
        if pv.spec.claim_ref is not None:
            continue
        if selector is not None and not label_selector_matches(selector, pv.metadata.labels):
            continue
        if pv_class(pv) != requested_class:
            continue
        if not set(wanted_modes) <= set(pv.spec.access_modes):
            continue
        if capacity >= request:
            out.append(_Candidate(pv, capacity, prebound=False))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """What ``FindPodVolumes`` decided for one (pod, node).

    Attributes:
        bound_satisfied: every bound claim's volume admits the node.
        unbound_satisfied: every delayed claim has a volume here or can be provisioned here.
        bindings: claim key (``namespace/name``) -> the volume it would bind to.
        provisions: claim keys that would be dynamically provisioned on this node.
    """

    bound_satisfied: bool
    unbound_satisfied: bool
    bindings: Mapping[str, str]
    provisions: tuple[str, ...]


# --------------------------------------------------------------------------- the plugin


class VolumeBinding(FilterPlugin[PodClaims]):
    """v1.14 CheckVolumeBinding over the snapshot's objects (see the module docstring).

    ``pre_filter`` runs the pod-level checks once (claims exist, which are bound, which wait for
    the scheduler) and pre-selects each waiting claim's candidate volumes; ``filter`` does the
    node-dependent part. :meth:`find_pod_volumes` exposes the decision for the binder.
    """

    missing_node = NODE_NOT_FOUND

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> PodClaims | Skip:
        if not _claim_names(pod.pod):
            return SKIP
        objects = snapshot.objects
        basic = pod_passes_basic_checks(pod.pod, objects)
        if basic is not None:
            raise PredicateError(basic)
        namespace = pod.namespace
        bound: list[tuple[str, PersistentVolume | None]] = []
        waiting: list[tuple[str, PersistentVolumeClaim]] = []
        immediate = False
        for name in _claim_names(pod.pod):
            key = f"{namespace}/{name}"
            claim = objects.persistent_volume_claims[key]
            if _is_fully_bound(claim):
                volume_name = claim.spec.volume_name
                bound.append((volume_name, objects.persistent_volumes.get(volume_name)))
            elif _should_delay_binding(claim, objects) and not claim.spec.volume_name:
                waiting.append((key, claim))
            else:
                immediate = True
        pvs = (
            [objects.persistent_volumes[n] for n in sorted(objects.persistent_volumes)]
            if waiting
            else []
        )
        # v1.14 sorts by request with sort.Sort, an insertion sort (stable) for so few claims.
        waiting.sort(key=lambda kc: _storage(kc[1].spec.resources.requests))
        unbound = tuple(
            _Unbound(key, claim, _candidates(claim, namespace, pvs)) for key, claim in waiting
        )
        return PodClaims(
            error=ERR_UNBOUND_IMMEDIATE if immediate else None,
            bound=tuple(bound),
            unbound=unbound,
            classes=objects.storage_classes,
        )

    def find_pod_volumes(self, pod: PodInfo, meta: PodClaims, node: NodeInfo) -> PodVolumes:
        """v1.14 ``FindPodVolumes`` for ``node``.

        Raises:
            PredicateError: v1.14's error for this pod and node (see the module docstring).
        """
        if meta.error is not None:
            raise PredicateError(meta.error)
        labels = node.labels
        bound_satisfied = True
        for volume_name, pv in meta.bound:
            if pv is None:
                raise PredicateError(f'could not find v1.PersistentVolume "{volume_name}"')
            if not pv_node_affinity_matches(pv, labels):
                bound_satisfied = False
                break
        bindings: dict[str, str] = {}
        unmatched: list[_Unbound] = []
        chosen: set[str] = set()
        for item in meta.unbound:
            pv = _match(item, labels, chosen)
            if pv is None:
                unmatched.append(item)
                continue
            chosen.add(pv.metadata.name)
            bindings[item.key] = pv.metadata.name
        unbound_satisfied = True
        provisions: tuple[str, ...] = ()
        if unmatched:
            unbound_satisfied = _can_provision(unmatched, meta.classes, labels)
            if unbound_satisfied:
                provisions = tuple(item.key for item in unmatched)
        return PodVolumes(bound_satisfied, unbound_satisfied, bindings, provisions)

    def filter(self, pod: PodInfo, meta: PodClaims, node: NodeInfo) -> Status:
        found = self.find_pod_volumes(pod, meta, node)
        reasons = []
        if not found.bound_satisfied:
            reasons.append(ERR_VOLUME_NODE_CONFLICT)
        if not found.unbound_satisfied:
            reasons.append(ERR_VOLUME_BIND_CONFLICT)
        if reasons:
            return unschedulable(*reasons, resolvable=False)
        return SUCCESS


def _match(item: _Unbound, labels: Mapping[str, str], chosen: set[str]) -> PersistentVolume | None:
    """The node-dependent part of v1.14 ``findMatchingVolume``: the smallest volume that fits."""
    smallest: _Candidate | None = None
    for candidate in item.candidates:
        if candidate.pv.metadata.name in chosen:
            continue
        affinity_ok = pv_node_affinity_matches(candidate.pv, labels)
        if candidate.prebound:
            # The claim's own volume: it or nothing.
            return candidate.pv if affinity_ok else None
        if affinity_ok and (smallest is None or candidate.capacity < smallest.capacity):
            smallest = candidate
    return smallest.pv if smallest is not None else None


def _can_provision(
    claims: Sequence[_Unbound], classes: Mapping[str, StorageClass], labels: Mapping[str, str]
) -> bool:
    """v1.14 ``checkVolumeProvisions``.

    Raises:
        PredicateError: a claim without a class, or whose class is missing.
    """
    for item in claims:
        class_name = claim_class(item.claim)
        if not class_name:
            raise PredicateError(f'no class for claim "{item.key}"')
        storage_class = classes.get(class_name)
        if storage_class is None:
            raise PredicateError(f'failed to find storage class "{class_name}"')
        if storage_class.provisioner in ("", NOT_SUPPORTED_PROVISIONER):
            return False
        if not _topology_allows(storage_class.allowed_topologies, labels):
            return False
    return True


FACTORIES: dict[str, Callable[[PluginArgs], VolumeBinding]] = {NAME: VolumeBinding}


# --------------------------------------------------------------------------- assumed decisions


def bound_claim(claim: PersistentVolumeClaim, pv_name: str) -> PersistentVolumeClaim:
    """The claim as assuming its binding to ``pv_name`` leaves it: ``spec.volumeName`` and
    ``pv.kubernetes.io/bind-completed`` set (the cache's assume, a gang's fold)."""
    meta = claim.metadata
    annotations = {**meta.annotations, ANN_BIND_COMPLETED: BIND_COMPLETED_VALUE}
    return msgspec.structs.replace(
        claim,
        metadata=msgspec.structs.replace(meta, annotations=annotations),
        spec=msgspec.structs.replace(claim.spec, volume_name=pv_name),
    )


def claimed_volume(pv: PersistentVolume, claim_key: str, claim_uid: str) -> PersistentVolume:
    """The volume as assuming its binding to the claim ``claim_key`` leaves it:
    ``spec.claimRef`` set."""
    namespace, _, name = claim_key.partition("/")
    ref = ObjectReference(
        kind="PersistentVolumeClaim", namespace=namespace, name=name, uid=claim_uid
    )
    return msgspec.structs.replace(pv, spec=msgspec.structs.replace(pv.spec, claim_ref=ref))


def selected_claim(claim: PersistentVolumeClaim, node: str) -> PersistentVolumeClaim:
    """The claim as assuming its provisioning on ``node`` leaves it:
    ``volume.kubernetes.io/selected-node`` set."""
    meta = claim.metadata
    annotations = {**meta.annotations, ANN_SELECTED_NODE: node}
    return msgspec.structs.replace(
        claim, metadata=msgspec.structs.replace(meta, annotations=annotations)
    )


def fold_volume_decision(
    objects: ClusterObjects, node: str, volumes: Mapping[str, str], provisions: Sequence[str]
) -> ClusterObjects:
    """``objects`` with a placed pod's volume decision assumed, as the cache's assume makes it
    (the claims bound to their volumes, the volumes claimed, the provisioned claims given their
    node): a new ClusterObjects whose two changed tables are new dicts, ``objects`` untouched
    (the snapshot's objects are shared with the cache). ``objects`` itself when the decision
    binds nothing. A gang's batch folds each member's decision in, so the next member's claims
    see the volumes the earlier ones took."""
    if not volumes and not provisions:
        return objects
    claims = dict(objects.persistent_volume_claims)
    pvs = dict(objects.persistent_volumes)
    for claim_key, pv_name in volumes.items():
        claim, pv = claims.get(claim_key), pvs.get(pv_name)
        if claim is None or pv is None:
            continue  # the cache's assume refuses it (a conflict)
        claims[claim_key] = bound_claim(claim, pv_name)
        pvs[pv_name] = claimed_volume(pv, claim_key, claim.metadata.uid)
    for claim_key in provisions:
        claim = claims.get(claim_key)
        if claim is not None:
            claims[claim_key] = selected_claim(claim, node)
    return dataclasses.replace(objects, persistent_volume_claims=claims, persistent_volumes=pvs)
