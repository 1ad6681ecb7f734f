"""The node cache's state machine: nodes with their bound and assumed pods, copy-on-write.

Kubernetes counterpart: pkg/scheduler/internal/cache/cache.go@v1.14 (``schedulerCache``:
AssumePod, FinishBinding, ForgetPod, AddPod, UpdatePod, RemovePod, AddNode, UpdateNode,
RemoveNode, cleanupAssumedPods/expirePod, UpdateNodeInfoSnapshot), interface.go@v1.14 (the pod
state machine below) and node_tree.go@v1.14 (:mod:`~podium.actors.framework.node_tree`). The volume
assumptions follow pkg/controller/volume/persistentvolume/scheduler_binder.go@v1.14
``AssumePodVolumes`` and its assume cache.

A pod's states in the cache (interface.go, redrawn)::

        +------------------------------- Add ----------------------------------+
        |  (bound without the scheduler, or after its assumption               |
        |   expired)                                                           v
     Initial --Assume--> Assumed -------------- Add (confirm) -------------> Added <--+
        ^                 |  |  ^                                              |  |   | Update
        |                 |  |  | FinishBinding (the TTL starts)               |  +---+
        +--- Forget ------+  +--+                                              |
                             |                                                 | Remove (Deleted,
                             +-- Expire (TTL after FinishBinding) --> Expired  | or terminal,
                                                                               | terminating)
                                                                               v
                                                                            Deleted

"Initial", "Expired" and "Deleted" pods are not in the cache. Wrong transitions raise
:class:`~podium.protocol.errors.CacheStateError` (``AlreadyAssumed``, ``NotAssumed``) with a
message naming the pod and the rule, e.g. ``pod default/web-1 is already assumed on node-3;
cannot assume twice``:

- Assume of an assumed or added pod -> ``AlreadyAssumed``;
- FinishBinding or Forget of a pod that is not assumed -> ``NotAssumed`` (v1.14's
  FinishBinding silently ignored it; Podium's binder always finishes before the store can
  confirm, so a miss is a bug worth a log line);
- Add of an added pod, Update or Remove of a pod that is not added -> ``CacheStateError``.

:meth:`SchedulerCache.apply_change` maps the store's changes onto these transitions so that a
consistent stream never triggers them (a Deleted pod that is still assumed keeps its
assumption: its bind fails and the binder forgets it, as v1.14's assigned-pod informer never
sees unassigned pods).

Copy-on-write. Every NodeInfo and ClusterObjects handed out in a
:class:`~podium.actors.framework.snapshot.SnapshotDelta` is never mutated again: the cache changes a node by
cloning its NodeInfo (``NodeInfo.clone``), changing the clone and storing it under a new cache
generation; the ClusterObjects is replaced by a new instance whose changed tables are new dicts.
A NodeInfo created since the last hand-out is changed in place (it is still private).

Generations. Every change bumps one counter; each node remembers the generation of its last
change, removed nodes leave a tombstone, and the node order and the objects remember theirs, so
:meth:`SchedulerCache.snapshot_since` sends only what changed (v1.14 walks its most recently
updated list the same way) and :func:`apply_delta` rebuilds the scheduler's Snapshot from it.

Where Podium differs from v1.14 (or guesses):

- an assumed pod expires when ``now >= deadline`` (v1.14: strictly after, checked every 1 s);
  a TTL of 0 means never;
- Assume re-checks PodFitsHostPorts and PodFitsResources when the chosen node changed after
  the decision's generation, answering a conflict instead of over-committing (v1.14 decided on
  the live cache, under one lock, and had no such race);
- an assumed pod's volume bindings set the claim's ``spec.volumeName`` and
  ``pv.kubernetes.io/bind-completed`` as well as the volume's ``claimRef`` (v1.14 assumed only
  the volume; the PV controller bound the claim later); provisioned claims get
  ``volume.kubernetes.io/selected-node`` as in v1.14;
- a confirmed pod replaces the assumed PodInfo by the store's object (v1.14 kept the assumed
  object in the NodeInfo);
- a pod moving to another node in an Update is moved and logged (v1.14 exits the process);
- a confirmed pod's volume assumptions stay until the store's own claim/volume changes
  supersede them (they arrive in the same commit as the binding); a forgotten or expired
  pod's are reverted to the store's objects;
- ``Recovered`` rebuilds the cache from the store and drops assumed pods (their binds, if
  any, fail and the binder's Forget is logged as a NotAssumed error).
"""

from __future__ import annotations

import dataclasses
import heapq
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from podium.actors.framework.interface import FilterPlugin, PluginArgs, run_filter
from podium.actors.framework.node_tree import NodeTree
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo, Resource
from podium.actors.framework.snapshot import ClusterObjects, Snapshot, SnapshotDelta, assumed_pod
from podium.actors.framework.zones import zone_key
from podium.actors.plugins import names
from podium.actors.plugins.node_ports import PodFitsHostPorts
from podium.actors.plugins.node_resources_fit import PodFitsResources
from podium.actors.plugins.volume_binding import (
    ANN_SELECTED_NODE,
    bound_claim,
    claimed_volume,
    selected_claim,
)
from podium.protocol.errors import AlreadyAssumed, CacheStateError, NotAssumed
from podium.protocol.objects import (
    NAMESPACED_KINDS,
    KubeObject,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    holds_resources,
    namespaced_key,
    pod_key,
)
from podium.store.mail import Change

__all__ = [
    "CacheDump",
    "PodState",
    "SchedulerCache",
    "object_key",
]

log = logging.getLogger("podium.cache")

# kind -> the ClusterObjects table it lives in.
_TABLES: dict[str, str] = {
    "Service": "services",
    "ReplicationController": "replication_controllers",
    "ReplicaSet": "replica_sets",
    "StatefulSet": "stateful_sets",
    "PersistentVolume": "persistent_volumes",
    "PersistentVolumeClaim": "persistent_volume_claims",
    "StorageClass": "storage_classes",
    "PriorityClass": "priority_classes",
    "PodDisruptionBudget": "pod_disruption_budgets",
    "PodGroup": "pod_groups",
}
_FIELDS = tuple(f.name for f in dataclasses.fields(ClusterObjects))
_CLAIMS = "persistent_volume_claims"
_VOLUMES = "persistent_volumes"
_MAX_TOMBSTONES = 4096
"""Removed-node tombstones kept; a request older than the oldest dropped gets a full snapshot."""


def object_key(kind: str, namespace: str, name: str) -> str:
    """The ClusterObjects key: ``namespace/name`` for namespaced kinds, else ``name``."""
    if kind in NAMESPACED_KINDS:
        return namespaced_key(namespace, name)
    return name


@dataclass(slots=True)
class PodState:
    """What the cache knows of one pod (v1.14 ``podState`` plus the assumed flag).

    Attributes:
        info: the pod (with ``spec.nodeName`` set) as counted on its node.
        node: the node it is counted on.
        assumed: assumed by the scheduler and not yet confirmed by the store.
        deadline: when an assumed pod whose binding finished expires (None: its binding has
            not finished, v1.14 ``bindingFinished`` false, or the TTL is 0: never).
        volumes: (table, key) of the volume assumptions made with the pod.
    """

    info: PodInfo
    node: str
    assumed: bool
    deadline: float | None = None
    volumes: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class _VolumeAssumption:
    """An assumed claim or volume; ``owner`` is the assumed pod, None once it is confirmed."""

    owner: str | None
    obj: PersistentVolumeClaim | PersistentVolume


@dataclass(frozen=True, slots=True)
class CacheDump:
    """A copy of the cache's state for tests and debugging (v1.14 ``Dump``).

    Attributes:
        nodes: every NodeInfo (clones), including those of unknown or removed nodes that
            still hold pods (``node`` is None there).
        order: the node names in node-tree order.
        pods: pod key -> the node it is counted on.
        assumed: the keys of the assumed pods.
    """

    nodes: dict[str, NodeInfo]
    order: list[str]
    pods: dict[str, str]
    assumed: frozenset[str]


class SchedulerCache:
    """The cache of nodes, their pods and the other objects (see the module docstring).

    Args:
        assumed_pod_ttl_seconds: how long an assumed pod stays after its binding finished
            without the store confirming it; 0 means forever.
        ignored_extended_resources: left out of the assume-time PodFitsResources check, as
            the predicates leave out what an extender manages with ``ignoredByScheduler``.
    """

    def __init__(
        self,
        *,
        assumed_pod_ttl_seconds: float = 30.0,
        ignored_extended_resources: frozenset[str] = frozenset(),
    ) -> None:
        if assumed_pod_ttl_seconds < 0:
            raise ValueError(f"assumed_pod_ttl_seconds must be >= 0, got {assumed_pod_ttl_seconds}")
        self.ttl = assumed_pod_ttl_seconds
        self._generation = 0
        self._nodes: dict[str, NodeInfo] = {}
        self._fresh: set[str] = set()
        self._tree = NodeTree()
        self._zone_of: dict[str, str] = {}
        # name -> generation of its last change; re-inserted on change, so newest last.
        self._changed: dict[str, int] = {}
        self._removed: dict[str, int] = {}
        self._tombstone_floor = 0
        self._order_gen = 0
        self._objects_gen = 0
        self._pods: dict[str, PodState] = {}
        self._assumed: set[str] = set()
        self._deadlines: list[tuple[float, str]] = []
        self._objects = ClusterObjects()
        self._objects_shared = False
        self._fresh_tables: set[str] = set(_FIELDS)
        self._real: dict[str, dict[str, Any]] = {_CLAIMS: {}, _VOLUMES: {}}
        self._overlay: dict[str, dict[str, _VolumeAssumption]] = {_CLAIMS: {}, _VOLUMES: {}}
        self._fit_checks: tuple[FilterPlugin[Any], ...] = (
            PodFitsHostPorts(PluginArgs(name=names.POD_FITS_HOST_PORTS)),
            PodFitsResources(
                PluginArgs(
                    name=names.POD_FITS_RESOURCES,
                    ignored_extended_resources=ignored_extended_resources,
                )
            ),
        )

    # ------------------------------------------------------------------ counts

    @property
    def generation(self) -> int:
        """The generation of the last change (0 before any)."""
        return self._generation

    @property
    def node_count(self) -> int:
        """Nodes the cache knows (those in the node tree)."""
        return len(self._tree)

    @property
    def pod_count(self) -> int:
        """Pods held, assumed ones included (v1.14 ``len(podStates)``)."""
        return len(self._pods)

    @property
    def assumed_count(self) -> int:
        return len(self._assumed)

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed

    def get_pod(self, key: str) -> PodInfo | None:
        """The pod as the cache counts it, or None (v1.14 ``GetPod``)."""
        state = self._pods.get(key)
        return state.info if state is not None else None

    def dump(self) -> CacheDump:
        """A copy of the state (clones: nothing handed out here is shared)."""
        return CacheDump(
            nodes={name: info.clone() for name, info in self._nodes.items()},
            order=self._tree.list(),
            pods={key: state.node for key, state in self._pods.items()},
            assumed=frozenset(self._assumed),
        )

    # ------------------------------------------------------------------ snapshots

    def snapshot_since(self, generation: int) -> SnapshotDelta:
        """What changed after ``generation`` (0, or one the cache cannot serve: everything).

        Returns:
            The NodeInfos of existing nodes changed since, the nodes removed since, the node
            order when the set or order of nodes changed, the objects when they changed. What
            it hands out is never mutated afterwards.
        """
        full = (
            generation <= 0 or generation > self._generation or generation < self._tombstone_floor
        )
        nodes: list[NodeInfo]
        removed: list[str] = []
        order: list[str] | None
        if full:
            order = self._tree.list()
            nodes = [self._nodes[name] for name in order]
            objects: ClusterObjects | None = self._objects
        else:
            nodes = []
            for name, gen in reversed(self._changed.items()):
                if gen <= generation:
                    break
                if name in self._tree:
                    nodes.append(self._nodes[name])
            nodes.reverse()
            for name, gen in reversed(self._removed.items()):
                if gen <= generation:
                    break
                if name not in self._tree:
                    removed.append(name)
            removed.reverse()
            order = self._tree.list() if self._order_gen > generation else None
            objects = self._objects if self._objects_gen > generation else None
        for info in nodes:
            self._fresh.discard(info.name)
        if objects is not None:
            self._objects_shared = True
        return SnapshotDelta(
            generation=self._generation, nodes=nodes, removed=removed, order=order, objects=objects
        )

    # ------------------------------------------------------------------ assume / forget

    def assume(
        self,
        pod: PodInfo,
        node: str,
        generation: int,
        volumes: Mapping[str, str] | None = None,
        provisions: Sequence[str] = (),
        *,
        assumed: PodInfo | None = None,
        batch: dict[str, int] | None = None,
    ) -> str | None:
        """Assume ``pod`` on ``node``, as decided on the snapshot at ``generation``.

        If the node changed after ``generation``, PodFitsHostPorts and PodFitsResources are
        checked again on its current NodeInfo, unless the only changes since are the earlier
        pods of the same batch (``batch``), which the decision saw folded in: the node is then
        what the decision saw, or has fewer pods where one of them was refused, and both
        checks only fail with more. The pod is counted on the node with ``spec.nodeName`` set;
        its volume decision is assumed in the objects.

        Args:
            pod: the pending pod.
            node: the chosen node.
            generation: the snapshot generation the decision was made on.
            volumes: claim key (``namespace/name``) -> PersistentVolume name to bind.
            provisions: claim keys to provision on ``node``.
            assumed: ``assumed_pod(pod, node)`` when the caller made it already (the
                scheduler's fold), counted as it is.
            batch: shared by the pods of one Assume, in order: node -> the generation at which
                the batch's own last assume changed it, for nodes that had not changed after
                ``generation`` before the batch came to them (kept up to date here).

        Returns:
            None when assumed; otherwise why the decision no longer holds (a conflict: the
            pod goes back to the queue without backoff).

        Raises:
            AlreadyAssumed: the pod is already assumed or added.
        """
        key = pod.key
        state = self._pods.get(key)
        if state is not None:
            if state.assumed:
                raise AlreadyAssumed(
                    f"pod {key} is already assumed on {state.node}; cannot assume twice"
                )
            raise AlreadyAssumed(f"pod {key} is already bound to {state.node}; cannot assume it")
        if node not in self._tree:
            return f"node {node} is not in the cache; cannot assume pod {key} on it"
        changed = self._changed.get(node, 0)
        as_decided = changed <= generation or (batch is not None and batch.get(node) == changed)
        if not as_decided:
            reasons = self._recheck_fit(pod, self._nodes[node])
            if reasons:
                return (
                    f"pod {key} no longer fits node {node} ({', '.join(reasons)}); the node "
                    f"changed after generation {generation}"
                )
        volumes = volumes or {}
        conflict = self._check_volumes(key, node, volumes, provisions)
        if conflict is not None:
            return conflict
        bound = assumed if assumed is not None else assumed_pod(pod, node)
        self._add_to_node(bound)
        if batch is not None:
            if as_decided:
                batch[node] = self._changed[node]
            else:
                batch.pop(node, None)
        assumed_volumes = self._assume_volumes(key, node, volumes, provisions)
        self._pods[key] = PodState(bound, node, assumed=True, volumes=assumed_volumes)
        self._assumed.add(key)
        return None

    def finish_binding(self, key: str, now: float) -> None:
        """The pod's binding was handed to the store: its TTL runs from ``now``.

        Raises:
            NotAssumed: the pod is not assumed.
        """
        state = self._assumed_state(key, "finish binding")
        if self.ttl > 0:
            state.deadline = now + self.ttl
            heapq.heappush(self._deadlines, (state.deadline, key))

    def forget(self, key: str) -> None:
        """Drop an assumed pod (its bind failed) and revert its volume assumptions.

        Raises:
            NotAssumed: the pod is not assumed.
        """
        state = self._assumed_state(key, "forget")
        self._drop(key, state)

    def cleanup_expired(self, now: float) -> list[str]:
        """Expire the assumed pods whose binding finished and whose deadline is <= ``now``.

        Returns:
            The keys of the expired pods, earliest deadline first.
        """
        expired: list[str] = []
        while self._deadlines and self._deadlines[0][0] <= now:
            deadline, key = heapq.heappop(self._deadlines)
            state = self._pods.get(key)
            if state is None or not state.assumed or state.deadline != deadline:
                continue  # confirmed, forgotten or re-assumed since: a stale entry
            self._drop(key, state)
            expired.append(key)
        return expired

    def next_deadline(self) -> float | None:
        """The earliest deadline of an assumed pod, or None when none can expire."""
        while self._deadlines:
            deadline, key = self._deadlines[0]
            state = self._pods.get(key)
            if state is not None and state.assumed and state.deadline == deadline:
                return deadline
            heapq.heappop(self._deadlines)
        return None

    # ------------------------------------------------------------------ bound pods

    def add_pod(self, pod: Pod) -> None:
        """A bound pod from the store: confirm it if assumed, otherwise count it.

        A pod confirmed on another node than assumed is moved there (v1.14). A pod that holds
        no resources (terminal phase, deletionTimestamp) is not counted; if it was assumed, it
        is dropped.

        Raises:
            CacheStateError: the pod has no ``spec.nodeName`` or is already added.
        """
        key = pod_key(pod)
        node = pod.spec.node_name
        if not node:
            raise CacheStateError(f"pod {key} has no spec.nodeName; only a bound pod can be added")
        state = self._pods.get(key)
        if state is not None and not state.assumed:
            raise CacheStateError(
                f"pod {key} is already added on {state.node}; cannot add it twice"
            )
        if state is not None:
            # Confirm: the assumption ends, its volume assumptions stay until the store's own
            # claim/volume changes supersede them.
            self._assumed.discard(key)
            state.assumed = False
            state.deadline = None
            self._detach_volumes(key, state)
            if not holds_resources(pod):
                self._remove_from_node(state)
                del self._pods[key]
                return
            if state.node != node:
                log.warning("pod %s was assumed on %s but was bound to %s", key, state.node, node)
            self._replace_on_node(state, state.info.with_pod(pod))
            return
        if not holds_resources(pod):
            return
        info = PodInfo(pod)
        self._add_to_node(info)
        self._pods[key] = PodState(info, node, assumed=False)

    def update_pod(self, old: Pod, new: Pod) -> None:
        """An added pod changed; a pod that stops holding resources is removed.

        Raises:
            CacheStateError: the pod is not in the cache, or only assumed.
        """
        key = pod_key(new)
        state = self._added_state(key, "update")
        if not holds_resources(new) or not new.spec.node_name:
            self._remove_from_node(state)
            del self._pods[key]
            return
        if new.spec.node_name != state.node:
            # v1.14 treats this as a corrupted cache and exits; the store forbids it, so log.
            log.error(
                "pod %s was updated onto node %s but is counted on %s; moving it",
                key,
                new.spec.node_name,
                state.node,
            )
        self._replace_on_node(state, state.info.with_pod(new))

    def remove_pod(self, pod: Pod) -> None:
        """An added pod was deleted.

        Raises:
            CacheStateError: the pod is not in the cache, or only assumed.
        """
        key = pod_key(pod)
        state = self._added_state(key, "remove")
        self._remove_from_node(state)
        del self._pods[key]

    # ------------------------------------------------------------------ nodes

    def add_node(self, node: Node) -> None:
        """A node arrived (an update when it is already known)."""
        name = node.metadata.name
        if name in self._tree:
            self.update_node(node)
            return
        info = self._writable(name)
        info.set_node(node)
        zone = zone_key(node.metadata.labels)
        self._tree.add(name, node.metadata.labels)
        self._zone_of[name] = zone
        self._removed.pop(name, None)
        self._order_gen = self._mark(name)

    def update_node(self, node: Node) -> None:
        """A node changed; a zone change moves it to the end of its new zone."""
        name = node.metadata.name
        if name not in self._tree:
            self.add_node(node)
            return
        info = self._writable(name)
        info.set_node(node)
        gen = self._mark(name)
        zone = zone_key(node.metadata.labels)
        if zone != self._zone_of[name]:
            self._tree.add(name, node.metadata.labels)
            self._zone_of[name] = zone
            self._order_gen = gen

    def remove_node(self, name: str) -> None:
        """A node was deleted; the pods still on it keep an unlisted NodeInfo.

        Raises:
            CacheStateError: the node is not in the cache.
        """
        if name not in self._tree:
            raise CacheStateError(f"node {name} is not in the cache; cannot remove it")
        self._tree.remove(name)
        del self._zone_of[name]
        if self._nodes[name].pods:
            ghost = self._writable(name)
            ghost.node = None
            ghost.allocatable = Resource()
            ghost.generation += 1
            gen = self._mark(name)
        else:
            self._forget_node_info(name)
            gen = self._bump()
        self._removed.pop(name, None)
        self._removed[name] = gen
        self._order_gen = gen
        if len(self._removed) > _MAX_TOMBSTONES:
            oldest = next(iter(self._removed))
            self._tombstone_floor = self._removed.pop(oldest)

    # ------------------------------------------------------------------ other objects

    def add_object(self, obj: KubeObject) -> None:
        """A Service, controller, volume, claim or class arrived (or changed)."""
        kind = type(obj).__name__
        table = _TABLES.get(kind)
        if table is None:
            raise CacheStateError(f"{kind} {obj.metadata.name} is not a cluster object kind")
        key = object_key(kind, obj.metadata.namespace, obj.metadata.name)
        if table in self._real:
            # The store's own version supersedes what was assumed (the assume cache's rule).
            self._real[table][key] = obj
            self._overlay[table].pop(key, None)
        self._table(table)[key] = obj
        self._objects_gen = self._bump()

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """An object was deleted (a no-op when the cache does not have it)."""
        table = _TABLES.get(kind)
        if table is None:
            raise CacheStateError(f"{kind} {name} is not a cluster object kind")
        key = object_key(kind, namespace, name)
        if table in self._real:
            self._real[table].pop(key, None)
            self._overlay[table].pop(key, None)
        if key in getattr(self._objects, table):
            self._table(table).pop(key)
            self._objects_gen = self._bump()

    @property
    def objects(self) -> ClusterObjects:
        """The current objects, assumptions included (never mutated once read)."""
        self._objects_shared = True
        return self._objects

    # ------------------------------------------------------------------ the store's stream

    def recover(self, objects: Iterable[KubeObject]) -> None:
        """Rebuild from the store's whole state (``Recovered``); assumed pods are dropped, and
        kinds no predicate reads (PodGroups) skipped."""
        gen = self._bump()
        for name in self._tree.list():
            self._removed.pop(name, None)
            self._removed[name] = gen
        self._nodes.clear()
        self._fresh.clear()
        self._tree = NodeTree()
        self._zone_of.clear()
        self._changed.clear()
        self._pods.clear()
        self._assumed.clear()
        self._deadlines.clear()
        self._objects = ClusterObjects()
        self._objects_shared = False
        self._fresh_tables = set(_FIELDS)
        for table in self._real.values():
            table.clear()
        for overlay in self._overlay.values():
            overlay.clear()
        self._order_gen = self._objects_gen = gen
        for obj in objects:
            if isinstance(obj, Node):
                self.add_node(obj)
            elif isinstance(obj, Pod):
                if obj.spec.node_name:
                    self.add_pod(obj)
            elif type(obj).__name__ in _TABLES:
                self.add_object(obj)

    def apply_change(self, change: Change, now: float) -> None:
        """Apply one committed change of the store.

        Pods: Added/Modified/Bound of a bound pod add, confirm or update it; Deleted and
        Preempted remove an added pod (an assumed one keeps its assumption until the binder
        forgets it or it expires); Unschedulable is ignored, as are unbound pods. Nodes:
        Added/Modified/Deleted. Other kinds: put or delete in the objects.

        Args:
            change: the change.
            now: the trio clock (unused today: no change starts a timer).

        Raises:
            CacheStateError: the change contradicts the cache (the actor logs it).
        """
        del now
        obj = change.object
        if change.type == "Unschedulable":
            return
        if change.kind == "Pod":
            if isinstance(obj, Pod):
                self._apply_pod_change(change.type, obj)
            return
        if change.kind == "Node":
            if change.type == "Deleted":
                self.remove_node(change.name)
            elif change.type in ("Added", "Modified") and isinstance(obj, Node):
                self.add_node(obj)
            return
        if change.kind not in _TABLES:
            log.debug("ignoring a change of kind %s", change.kind)
            return
        if change.type == "Deleted":
            self.delete_object(change.kind, change.namespace, change.name)
        elif change.type in ("Added", "Modified"):
            self.add_object(obj)

    def _apply_pod_change(self, type_: str, pod: Pod) -> None:
        key = pod_key(pod)
        state = self._pods.get(key)
        if type_ in ("Deleted", "Preempted"):
            if state is not None and not state.assumed:
                self.remove_pod(pod)
            return
        if not pod.spec.node_name:
            if state is not None and not state.assumed:
                # A bound pod cannot become unbound in the store; stop counting it if it did.
                log.error("pod %s lost its spec.nodeName; removing it from the cache", key)
                self.remove_pod(pod)
            # An assumed pod's pending object changed while its bind runs: keep the assumption.
            return
        if state is None or state.assumed:
            self.add_pod(pod)
        else:
            self.update_pod(state.info.pod, pod)

    # ------------------------------------------------------------------ internals

    def _bump(self) -> int:
        self._generation += 1
        return self._generation

    def _mark(self, name: str) -> int:
        """Record that node ``name`` changed; returns the new generation."""
        gen = self._bump()
        self._changed.pop(name, None)
        self._changed[name] = gen
        return gen

    def _writable(self, name: str) -> NodeInfo:
        """The node's NodeInfo, safe to change: a clone unless it is still private."""
        info = self._nodes.get(name)
        if info is None:
            info = NodeInfo(name=name)
        elif name not in self._fresh:
            info = info.clone()
        else:
            return info
        self._nodes[name] = info
        self._fresh.add(name)
        return info

    def _forget_node_info(self, name: str) -> None:
        del self._nodes[name]
        self._fresh.discard(name)
        self._changed.pop(name, None)

    def _add_to_node(self, info: PodInfo) -> None:
        name = info.node_name
        if name not in self._tree:
            log.warning(
                "pod %s is bound to node %s, which the cache does not know; it is kept and "
                "counts once the node arrives",
                info.key,
                name,
            )
        self._writable(name).add_pod(info)
        self._mark(name)

    def _remove_from_node(self, state: PodState) -> None:
        name = state.node
        node_info = self._writable(name)
        node_info.remove_pod(state.info)
        if node_info.node is None and not node_info.pods:
            self._forget_node_info(name)
            self._bump()
        else:
            self._mark(name)

    def _replace_on_node(self, state: PodState, info: PodInfo) -> None:
        """Count ``info`` instead of ``state.info`` (on ``info``'s node)."""
        if info.node_name == state.node:
            node_info = self._writable(state.node)
            node_info.remove_pod(state.info)
            node_info.add_pod(info)
            self._mark(state.node)
        else:
            self._remove_from_node(state)
            self._add_to_node(info)
        state.info = info
        state.node = info.node_name

    def _assumed_state(self, key: str, action: str) -> PodState:
        state = self._pods.get(key)
        if state is None:
            raise NotAssumed(f"pod {key} is not assumed; cannot {action} it")
        if not state.assumed:
            raise NotAssumed(
                f"pod {key} is not assumed (it is bound to {state.node}); cannot {action} it"
            )
        return state

    def _added_state(self, key: str, action: str) -> PodState:
        state = self._pods.get(key)
        if state is None:
            raise CacheStateError(f"pod {key} is not in the cache; cannot {action} it")
        if state.assumed:
            raise CacheStateError(
                f"pod {key} is assumed on {state.node}, not added; cannot {action} it before "
                "the store confirms it"
            )
        return state

    def _drop(self, key: str, state: PodState) -> None:
        """Forget or expire an assumed pod."""
        self._remove_from_node(state)
        self._revert_volumes(key, state)
        del self._pods[key]
        self._assumed.discard(key)

    def _recheck_fit(self, pod: PodInfo, info: NodeInfo) -> list[str]:
        snapshot = Snapshot([info], self._objects)
        reasons: list[str] = []
        for plugin in self._fit_checks:
            status = run_filter(plugin, pod, plugin.pre_filter(pod, snapshot), info)
            if not status.is_success:
                reasons.extend(status.reasons)
        return reasons

    # ------------------------------------------------------------------ objects and volumes

    def _table(self, table: str) -> dict[str, Any]:
        """The objects table ``table``, safe to change (copy-on-write, see the docstring)."""
        if self._objects_shared:
            # Shares every dict with the instance handed out; each is copied before a change.
            self._objects = ClusterObjects(**{f: getattr(self._objects, f) for f in _FIELDS})
            self._objects_shared = False
            self._fresh_tables.clear()
        if table not in self._fresh_tables:
            setattr(self._objects, table, dict(getattr(self._objects, table)))
            self._fresh_tables.add(table)
        current: dict[str, Any] = getattr(self._objects, table)
        return current

    def _check_volumes(
        self, key: str, node: str, volumes: Mapping[str, str], provisions: Sequence[str]
    ) -> str | None:
        claims = self._objects.persistent_volume_claims
        pvs = self._objects.persistent_volumes
        for claim_key, pv_name in volumes.items():
            claim = claims.get(claim_key)
            if claim is None:
                return f"persistentvolumeclaim {claim_key} does not exist; cannot assume pod {key}"
            if claim.spec.volume_name and claim.spec.volume_name != pv_name:
                return (
                    f"persistentvolumeclaim {claim_key} is already bound to persistentvolume "
                    f"{claim.spec.volume_name}; cannot assume pod {key}"
                )
            pv = pvs.get(pv_name)
            if pv is None:
                return f"persistentvolume {pv_name} does not exist; cannot assume pod {key}"
            ref = pv.spec.claim_ref
            if (
                ref is not None
                and (ref_key := namespaced_key(ref.namespace, ref.name)) != claim_key
            ):
                return (
                    f"persistentvolume {pv_name} is already bound to claim "
                    f"{ref_key}; cannot assume pod {key}"
                )
        for claim_key in provisions:
            claim = claims.get(claim_key)
            if claim is None:
                return f"persistentvolumeclaim {claim_key} does not exist; cannot assume pod {key}"
            selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is not None and selected != node:
                return (
                    f"persistentvolumeclaim {claim_key} is already provisioned for node "
                    f"{selected}; cannot assume pod {key} on {node}"
                )
        return None

    def _assume_volumes(
        self, key: str, node: str, volumes: Mapping[str, str], provisions: Sequence[str]
    ) -> tuple[tuple[str, str], ...]:
        if not volumes and not provisions:
            return ()
        claims = self._objects.persistent_volume_claims
        pvs = self._objects.persistent_volumes
        made: list[tuple[str, str]] = []
        for claim_key, pv_name in volumes.items():
            claim = claims[claim_key]
            claimed = claimed_volume(pvs[pv_name], claim_key, claim.metadata.uid)
            self._set_assumed(_CLAIMS, claim_key, key, bound_claim(claim, pv_name))
            self._set_assumed(_VOLUMES, pv_name, key, claimed)
            made += [(_CLAIMS, claim_key), (_VOLUMES, pv_name)]
        for claim_key in provisions:
            self._set_assumed(_CLAIMS, claim_key, key, selected_claim(claims[claim_key], node))
            made.append((_CLAIMS, claim_key))
        self._objects_gen = self._bump()
        return tuple(made)

    def _set_assumed(
        self,
        table: str,
        key: str,
        owner: str,
        obj: PersistentVolumeClaim | PersistentVolume,
    ) -> None:
        self._overlay[table][key] = _VolumeAssumption(owner, obj)
        self._table(table)[key] = obj

    def _revert_volumes(self, key: str, state: PodState) -> None:
        changed = False
        for table, obj_key in state.volumes:
            assumption = self._overlay[table].get(obj_key)
            if assumption is None or assumption.owner != key:
                continue  # superseded by the store, or re-assumed by another pod
            del self._overlay[table][obj_key]
            real = self._real[table].get(obj_key)
            if real is None:
                self._table(table).pop(obj_key, None)
            else:
                self._table(table)[obj_key] = real
            changed = True
        if changed:
            self._objects_gen = self._bump()

    def _detach_volumes(self, key: str, state: PodState) -> None:
        for table, obj_key in state.volumes:
            assumption = self._overlay[table].get(obj_key)
            if assumption is not None and assumption.owner == key:
                assumption.owner = None
        state.volumes = ()
