"""Offline scheduling of a cluster dump: the engine behind ``podium simulate``.

Nodes, bound pods (``spec.nodeName`` set) and the other objects form the cluster; pending pods
whose ``schedulerName`` matches are scheduled in queue order (higher priority first, then
arrival = file order) against the assumed state, exactly as the daemon decides them. A pod that
fails waits, as in the scheduling queue's unschedulable set, until a placement could help it:
v1.14 moves an unschedulable pod back when an assigned pod arrives that matches one of its
required pod-affinity terms (``getUnschedulablePodsWithMatchingAffinityTerm``). The run ends
when no pod is left to try.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from podium.actors.core.generic_scheduler import Algorithm, ScheduleResult
from podium.actors.core.node_tree import NodeTree
from podium.actors.core.nodeinfo import NodeInfo, PodInfo
from podium.actors.core.snapshot import ClusterObjects, Snapshot
from podium.protocol.labels import label_selector_matches
from podium.protocol.objects import (
    KubeObject,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    StorageClass,
)

__all__ = ["Cluster", "PodOutcome", "SimulationError", "build_cluster", "run"]

log = logging.getLogger("podium.simulate")


class SimulationError(ValueError):
    """The input cannot be simulated (e.g. a pod names a PriorityClass that does not exist)."""


@dataclass(slots=True)
class Cluster:
    """The cluster a simulation starts from."""

    tree: NodeTree
    infos: dict[str, NodeInfo]
    objects: ClusterObjects
    pending: list[PodInfo]
    warnings: list[str] = field(default_factory=list)

    def snapshot(self) -> Snapshot:
        return Snapshot([self.infos[name] for name in self.tree.list()], self.objects)


@dataclass(slots=True)
class PodOutcome:
    """Where one pending pod went, after its last attempt."""

    pod: PodInfo
    node: str | None
    message: str | None
    attempts: int
    result: ScheduleResult


def _key(obj: KubeObject) -> str:
    ns = obj.metadata.namespace or "default"
    return f"{ns}/{obj.metadata.name}"


def _holds_resources(pod: Pod) -> bool:
    return (
        pod.status.phase not in ("Succeeded", "Failed") and pod.metadata.deletion_timestamp is None
    )


def _resolve_priority(
    pod: Pod, classes: dict[str, PriorityClass], default: PriorityClass | None
) -> Pod:
    if pod.spec.priority is not None:
        return pod
    name = pod.spec.priority_class_name
    if name:
        pc = classes.get(name)
        if pc is None:
            raise SimulationError(
                f"pod {_key(pod)}: spec.priorityClassName: no PriorityClass named {name!r}"
            )
        value = pc.value
    elif default is not None:
        value = default.value
    else:
        return pod
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, priority=value))


def build_cluster(
    objects: Iterable[KubeObject], *, scheduler_name: str = "default-scheduler"
) -> Cluster:
    """Sort objects into nodes, bound pods, pending pods and the rest.

    A later object with the same kind/namespace/name replaces an earlier one (a put).

    Raises:
        SimulationError: a pod names an unknown PriorityClass.
    """
    nodes: dict[str, Node] = {}
    pods: dict[str, Pod] = {}
    objs = ClusterObjects()
    classes: dict[str, PriorityClass] = {}
    tables: dict[type, dict[str, object]] = {
        Service: objs.services,  # type: ignore[dict-item]
        ReplicationController: objs.replication_controllers,  # type: ignore[dict-item]
        ReplicaSet: objs.replica_sets,  # type: ignore[dict-item]
        StatefulSet: objs.stateful_sets,  # type: ignore[dict-item]
        PersistentVolumeClaim: objs.persistent_volume_claims,  # type: ignore[dict-item]
    }
    for obj in objects:
        match obj:
            case Node():
                nodes[obj.metadata.name] = obj
            case Pod():
                pods.pop(_key(obj), None)  # a replace moves it to the end of arrival order
                pods[_key(obj)] = obj
            case PersistentVolume():
                objs.persistent_volumes[obj.metadata.name] = obj
            case StorageClass():
                objs.storage_classes[obj.metadata.name] = obj
            case PriorityClass():
                classes[obj.metadata.name] = obj
            case _:
                tables[type(obj)][_key(obj)] = obj
    objs.priority_classes.update(classes)
    default_class = next((c for c in classes.values() if c.global_default), None)
    tree = NodeTree()
    infos: dict[str, NodeInfo] = {}
    for name, node in nodes.items():
        tree.add(name, node.metadata.labels)
        infos[name] = NodeInfo(node)
    pending: list[PodInfo] = []
    warnings: list[str] = []
    for key, pod in pods.items():
        if not _holds_resources(pod):
            continue
        info = PodInfo(_resolve_priority(pod, classes, default_class))
        if pod.spec.node_name:
            node_info = infos.get(pod.spec.node_name)
            if node_info is None:
                warnings.append(
                    f"pod {key} is bound to unknown node {pod.spec.node_name}; it is kept but holds nothing"
                )
                continue
            node_info.add_pod(info)
        elif pod.spec.scheduler_name == scheduler_name:
            pending.append(info)
    return Cluster(tree, infos, objs, pending, warnings)


def _matches_affinity_term(waiting: PodInfo, placed: PodInfo) -> bool:
    """Whether ``placed`` matches one of ``waiting``'s required pod-affinity terms (v1.14)."""
    affinity = waiting.pod.spec.affinity
    if affinity is None or affinity.pod_affinity is None:
        return False
    for term in affinity.pod_affinity.required_during_scheduling_ignored_during_execution:
        namespaces = term.namespaces or [waiting.namespace]
        if placed.namespace in namespaces and label_selector_matches(
            term.label_selector, placed.labels
        ):
            return True
    return False


def run(
    cluster: Cluster,
    algorithm: Algorithm,
    *,
    explain: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[PodOutcome]:
    """Schedule every pending pod; return one outcome per pod, in the order of its last attempt.

    Args:
        cluster: from :func:`build_cluster`.
        algorithm: the predicates, priorities and start index to decide with.
        explain: keep every examined node's reasons and scores in the outcomes.
        progress: called after each attempt with the number of pods tried so far.
    """
    order = {p.key: i for i, p in enumerate(cluster.pending)}

    def queue_key(p: PodInfo) -> tuple[int, int]:
        return (-p.priority, order[p.key])

    active = sorted(cluster.pending, key=queue_key)
    waiting: list[PodInfo] = []
    attempts: dict[str, int] = {}
    outcomes: dict[str, PodOutcome] = {}
    snapshot = cluster.snapshot()
    while active:
        pod = active.pop(0)
        attempts[pod.key] = attempts.get(pod.key, 0) + 1
        result = algorithm.schedule(pod, snapshot, explain=explain)
        outcomes.pop(pod.key, None)
        outcomes[pod.key] = PodOutcome(pod, result.node, result.message, attempts[pod.key], result)
        if progress is not None:
            progress(len(outcomes))
        if result.node is None:
            waiting.append(pod)
            continue
        bound = PodInfo(
            msgspec.structs.replace(
                pod.pod, spec=msgspec.structs.replace(pod.pod.spec, node_name=result.node)
            )
        )
        info = snapshot.get(result.node)
        assert info is not None
        updated = info.clone()
        updated.add_pod(bound)
        snapshot.replace_node_info(updated)
        moved = [w for w in waiting if _matches_affinity_term(w, bound)]
        if moved:
            waiting = [w for w in waiting if w not in moved]
            active = sorted([*active, *moved], key=queue_key)
    return list(outcomes.values())


def final_node_infos(cluster: Cluster, outcomes: Sequence[PodOutcome]) -> dict[str, NodeInfo]:
    """The nodes with every placement of ``outcomes`` applied (for utilisation summaries)."""
    infos = {name: info.clone() for name, info in cluster.infos.items()}
    for o in outcomes:
        if o.node is not None:
            infos[o.node].add_pod(o.pod)
    return infos
