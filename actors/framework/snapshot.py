"""A consistent view of the cluster for one scheduling attempt.

Kubernetes counterpart: pkg/scheduler/internal/cache Snapshot (nodeInfoMap + the node tree
order), plus the listers v1.14 predicates and priorities were built with (services,
controllers, PVs, PVCs, storage classes).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import msgspec

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo, same_for_scheduling
from podium.protocol.labels import selector_from_set_matches
from podium.protocol.objects import (
    PersistentVolume,
    PersistentVolumeClaim,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    StorageClass,
    namespace_or_default,
)

__all__ = [
    "ClusterObjects",
    "ImageState",
    "Snapshot",
    "SnapshotDelta",
    "apply_delta",
    "assumed_pod",
    "fold_assumed",
    "set_selector_selects",
]

JOURNAL = 4096
"""Node changes a snapshot remembers (older ones are dropped half at a time)."""

_TOKENS = itertools.count(1)


@dataclass(slots=True)
class ClusterObjects:
    """The non-node, non-pod objects predicates, priorities and pod groups read.

    Namespaced kinds are keyed ``namespace/name``; cluster-scoped kinds by name.
    """

    services: dict[str, Service] = field(default_factory=dict)
    replication_controllers: dict[str, ReplicationController] = field(default_factory=dict)
    replica_sets: dict[str, ReplicaSet] = field(default_factory=dict)
    stateful_sets: dict[str, StatefulSet] = field(default_factory=dict)
    persistent_volumes: dict[str, PersistentVolume] = field(default_factory=dict)
    persistent_volume_claims: dict[str, PersistentVolumeClaim] = field(default_factory=dict)
    storage_classes: dict[str, StorageClass] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    pod_disruption_budgets: dict[str, PodDisruptionBudget] = field(default_factory=dict)
    # Who belongs to a group and how many must fit at once: protocol/gangs.py.
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)


def set_selector_selects(
    selector: Mapping[str, str] | None, namespace: str | None, pod: PodInfo
) -> bool:
    """Whether a Service or ReplicationController (a label-set selector) selects ``pod``.

    client-go's ``GetPodServices`` / ``GetPodControllers`` rule: the object is in the pod's
    namespace (both defaulted), and its selector is not empty (the API server drops an empty
    map, so it reads as none and selects nothing) and matches the pod's labels.

    Args:
        selector: the object's ``spec.selector``.
        namespace: the object's ``metadata.namespace``.
        pod: the pod.
    """
    if not selector:
        return False
    return namespace_or_default(namespace) == pod.namespace and selector_from_set_matches(
        selector, pod.labels
    )


@dataclass(frozen=True, slots=True)
class ImageState:
    """An image's size and on how many nodes it is present (schedulernodeinfo.ImageStateSummary)."""

    size: int
    num_nodes: int


class Snapshot:
    """Nodes in node-tree order with their pods, the columns over them, and the other objects.

    Attributes:
        node_infos: one NodeInfo per node, in zone-interleaved node-tree order.
        objects: services, controllers, volumes and classes.
        generation: the cache generation this snapshot reflects.
    """

    def __init__(
        self,
        node_infos: Sequence[NodeInfo],
        objects: ClusterObjects | None = None,
        generation: int = 0,
    ) -> None:
        self.node_infos = list(node_infos)
        self.by_name = {n.name: n for n in self.node_infos}
        self.objects = objects if objects is not None else ClusterObjects()
        self.generation = generation
        self._init_journal()
        self._columns: NodeColumns | None = None
        self._images: dict[str, ImageState] | None = None
        # Nodes holding pods with pod (anti-)affinity, by name; kept in step by replace_node_info.
        self._with_affinity: dict[str, NodeInfo] | None = None
        # name -> row, built on first need, so replace_node_info finds a row in O(1).
        self._positions: dict[str, int] | None = None

    @property
    def columns(self) -> NodeColumns:
        if self._columns is None:
            self._columns = NodeColumns(self.node_infos)
        return self._columns

    @property
    def has_columns(self) -> bool:
        """Whether :attr:`columns` is built already (reading it costs no build). A plugin whose
        metadata can use the columns or walk the nodes asks this, so that a snapshot copy used
        for a few what-if checks (preemption, nominated pods) is not made to build them."""
        return self._columns is not None

    def __len__(self) -> int:
        return len(self.node_infos)

    def get(self, name: str) -> NodeInfo | None:
        return self.by_name.get(name)

    def pods_with_affinity(self) -> Iterator[PodInfo]:
        for info in self.node_infos:
            yield from info.pods_with_affinity

    def node_infos_with_affinity(self) -> Collection[NodeInfo]:
        """The nodes holding at least one pod with pod affinity or anti-affinity (any order).

        Built once, then kept in step by :meth:`replace_node_info` at O(1) a change, so the
        inter-pod affinity plugins need not visit every node for every pod.
        """
        if self._with_affinity is None:
            self._with_affinity = {n.name: n for n in self.node_infos if n.pods_with_affinity}
        return self._with_affinity.values()

    def image_states(self) -> dict[str, ImageState]:
        """Image name -> (size, number of nodes having it), over every node.

        As the v1.14 cache keeps them (``imageStates``): a node counts once per name however
        often it lists it, and the size is the one first seen.
        """
        if self._images is None:
            sizes: dict[str, int] = {}
            counts: dict[str, int] = {}
            for info in self.node_infos:
                if info.node is None:
                    continue
                names_on_node: set[str] = set()
                for image in info.node.status.images:
                    for name in image.names:
                        sizes.setdefault(name, image.size_bytes)
                        names_on_node.add(name)
                for name in names_on_node:
                    counts[name] = counts.get(name, 0) + 1
            self._images = {k: ImageState(sizes[k], counts[k]) for k in sizes}
        return self._images

    def copy(self) -> Snapshot:
        """A shallow copy whose node list can be changed with :meth:`replace_node_info` while
        this snapshot stays as it is (preemption's what-if evaluation works on one).

        The NodeInfos, the objects and the image states are shared (none is ever mutated);
        the columns are rebuilt in the copy on first use.
        """
        other = Snapshot.__new__(Snapshot)
        other.node_infos = list(self.node_infos)
        other.by_name = dict(self.by_name)
        other.objects = self.objects
        other.generation = self.generation
        other._init_journal()
        other._columns = None
        other._images = self._images
        other._with_affinity = None if self._with_affinity is None else dict(self._with_affinity)
        other._positions = self._positions
        return other

    def _position(self, name: str) -> int:
        if self._columns is not None:
            return self._columns.index[name]
        if self._positions is None:
            self._positions = {n.name: i for i, n in enumerate(self.node_infos)}
        return self._positions[name]

    # ------------------------------------------------------------------ journal

    def _init_journal(self) -> None:
        # A fresh token per snapshot object (copies included): state kept against one
        # snapshot's journal never applies to another.
        self.token = next(_TOKENS)
        self._journal: list[tuple[NodeInfo, NodeInfo]] = []
        self._journal_base = 0

    @property
    def journal_position(self) -> int:
        """How many node changes this snapshot has seen (see :meth:`changes_since`)."""
        return self._journal_base + len(self._journal)

    def changes_since(self, position: int) -> Sequence[tuple[NodeInfo, NodeInfo]] | None:
        """The (old, new) NodeInfos swapped in since ``position``, oldest first; ``None`` when
        the journal no longer reaches back that far. Plugins that keep counts per topology
        domain (inter-pod affinity) apply these instead of walking every pod again."""
        if position < self._journal_base:
            return None
        return self._journal[position - self._journal_base :]

    def replace_node_info(self, info: NodeInfo) -> None:
        """Swap in a changed NodeInfo (same name), keeping the columns in step.

        A NodeInfo holding the very pods and Node object of the one in the snapshot (the
        cache's after an assume the scheduler folded in itself, or a node whose one pod came
        and went) takes the old one's place and nothing else: no predicate or priority can
        tell them apart, so no row is stamped and the journal has nothing to follow, but the
        snapshot holds the cache's NodeInfo (its generation) as a full snapshot would. One that differs only in what no predicate or priority reads
        (:func:`~podium.actors.framework.nodeinfo.same_for_scheduling`: a confirmed binding)
        is swapped in, so preemption and the extenders see the store's pod, but its row is not
        stamped changed (:meth:`NodeColumns.replace_row`): the equivalence classes' verdicts
        and the per-row scores made on it still hold.
        """
        old = self.by_name[info.name]
        unseen = False
        if old is info:
            # Changed in place (preemption's what-if steps): nothing to diff against, so state
            # kept against this journal is void.
            self._init_journal()
        elif old.node is info.node and old.pods == info.pods:
            # PodInfo has no __eq__: the same pods, by identity, in the same order.
            i = self._position(info.name)
            self.node_infos[i] = info
            self.by_name[info.name] = info
            if self._columns is not None:
                # The row points at the snapshot's NodeInfo (spreading's window reads it so).
                self._columns.replace_row(i, info)
            if self._with_affinity is not None and info.pods_with_affinity:
                self._with_affinity[info.name] = info
            return
        else:
            unseen = same_for_scheduling(old, info)
            self._journal.append((old, info))
        if len(self._journal) > JOURNAL:
            half = len(self._journal) // 2
            del self._journal[:half]
            self._journal_base += half
        i = self._position(info.name)
        self.node_infos[i] = info
        self.by_name[info.name] = info
        if self._columns is not None:
            if unseen:
                self._columns.replace_row(i, info)
            else:
                same = old.node is info.node
                self._columns.update_row(i, info, labels_changed=not same, pods_only=same)
        if old.node is not info.node:
            self._images = None
        if self._with_affinity is not None:
            if info.pods_with_affinity:
                self._with_affinity[info.name] = info
            else:
                self._with_affinity.pop(info.name, None)


class SnapshotDelta(msgspec.Struct, frozen=True, kw_only=True):
    """The cache's answer to a snapshot request: the changes that bring a snapshot at the request's generation to ``generation``.

    Attributes:
        generation: the cache generation this delta brings the snapshot to.
        nodes: NodeInfos added or changed since (never mutated after sending).
        removed: names of nodes removed since.
        order: every node name in zone-interleaved node-tree order, when the set or order of
            nodes changed (or for a full snapshot); None when it did not.
        objects: the services, controllers, volumes and classes, when any changed; else None.
    """

    generation: int
    nodes: list[NodeInfo]
    removed: list[str]
    order: list[str] | None
    objects: ClusterObjects | None


def assumed_pod(pod: PodInfo, node: str) -> PodInfo:
    """``pod`` as an assume counts it: with ``spec.nodeName`` set to ``node``."""
    return pod.on_node(node)


def fold_assumed(
    snapshot: Snapshot, pod: PodInfo, node: str, *, assumed: PodInfo | None = None
) -> NodeInfo:
    """Make in ``snapshot`` the NodeInfo change :meth:`podium.actors.cache.core.SchedulerCache.assume` makes: ``pod``
    counted on ``node`` (requested resources, ports, pod counts, affinity pods, images), the
    columns kept in step by ``Snapshot.replace_node_info``. A scheduling batch folds each
    decision in, so the next pod of the batch sees what it would have seen after the assume.
    ``assumed``: ``assumed_pod(pod, node)`` made already (the scheduler hands the same one to
    the cache's assume).

    Returns:
        The node's NodeInfo before the fold (to put back if the cache refuses the assume).

    Raises:
        KeyError: ``node`` is not in the snapshot.
    """
    before = snapshot.by_name[node]
    info = before.clone()
    info.add_pod(assumed if assumed is not None else assumed_pod(pod, node))
    snapshot.replace_node_info(info)
    return before


def apply_delta(snapshot: Snapshot | None, delta: SnapshotDelta) -> Snapshot:
    """Bring ``snapshot`` to ``delta.generation``.

    When the delta carries the node order, a new Snapshot is built (reusing the snapshot's
    NodeInfos for unchanged nodes); otherwise the changed NodeInfos are swapped into
    ``snapshot`` in place (``Snapshot.replace_node_info`` keeps its columns in step) and the
    objects replaced when given.

    Args:
        snapshot: the snapshot at the generation the delta was requested for (None: none yet).
        delta: the cache's answer.

    Returns:
        The up-to-date snapshot (``snapshot`` itself unless a new one had to be built).

    Raises:
        ValueError: a first delta without the node order, or a changed node the snapshot
            does not have.
    """
    if delta.order is not None:
        by_name = dict(snapshot.by_name) if snapshot is not None else {}
        for info in delta.nodes:
            by_name[info.name] = info
        if delta.objects is not None:
            objects = delta.objects
        else:
            objects = snapshot.objects if snapshot is not None else ClusterObjects()
        return Snapshot([by_name[name] for name in delta.order], objects, delta.generation)
    if snapshot is None:
        raise ValueError("the first snapshot delta must carry the node order (ask generation 0)")
    for info in delta.nodes:
        if info.name not in snapshot.by_name:
            raise ValueError(f"node {info.name} changed but is not in the snapshot")
        snapshot.replace_node_info(info)
    if delta.objects is not None:
        snapshot.objects = delta.objects
    snapshot.generation = delta.generation
    return snapshot
