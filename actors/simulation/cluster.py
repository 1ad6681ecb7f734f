"""The cluster a simulation starts from, and the outcomes it reports (pure, no actors).

``podium simulate`` runs the daemon's own actors in process (actors/simulation/run.py); this module
sorts a dump into nodes, bound pods and pending pods for the summaries before and after, and
collects each pod's outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from podium.actors.cycle.explain import placement
from podium.actors.framework.node_tree import NodeTree
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import ClusterObjects
from podium.actors.mail.messages import GroupAttempt
from podium.protocol.errors import ErrorCode, InvalidObject, PodiumError
from podium.protocol.gangs import min_count, pod_group_key
from podium.protocol.objects import (
    KubeObject,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    StorageClass,
    holds_resources,
    namespaced_key,
)
from podium.protocol.wire import GroupPlacement, Hint
from podium.store.admission import admit_pod, known_classes

__all__ = [
    "Cluster",
    "GroupOutcome",
    "GroupVerdict",
    "PodOutcome",
    "SimulationError",
    "build_cluster",
    "final_node_infos",
    "group_outcomes",
]

log = logging.getLogger("podium.simulate")


class SimulationError(PodiumError, ValueError):
    """The input cannot be simulated (e.g. a pod names a PriorityClass that does not exist).

    Args:
        message: the whole text.
        objects: per refused object, its position in the objects simulated, what is wrong
            (without the object's name) and the field's path, so a caller that knows where
            each object came from can name its file (``podium simulate``).
    """

    code: ErrorCode = "invalid"

    def __init__(
        self, message: str, *, objects: Sequence[tuple[int, str, str | None]] = ()
    ) -> None:
        super().__init__(message)
        self.objects = tuple(objects)


@dataclass(slots=True)
class Cluster:
    """The cluster a simulation starts from."""

    tree: NodeTree
    infos: dict[str, NodeInfo]
    objects: ClusterObjects
    pending: list[PodInfo]
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class PodOutcome:
    """Where one pending pod went, after its last attempt.

    ``gang``: the gang attempt it was last decided in (a member of a pod group); ``hints``:
    what would have made it fit there (with ``--explain``).
    """

    pod: PodInfo
    node: str | None
    message: str | None
    attempts: int
    result: ScheduleResult
    preempted: list[str] = field(default_factory=list)
    gang: GroupAttempt | None = None
    hints: list[Hint] = field(default_factory=list)


GroupVerdict = Literal["placed", "not placed", "waiting", "basic"]
"""How a pod group ended in a simulation: a gang ``placed`` (at least minCount members bound
or placed) or ``not placed``; ``waiting`` for its quorum (never tried: short of minCount pods,
or the group is not in the input); ``basic`` (its pods are ordinary pods: each row says where
it went)."""


@dataclass(slots=True)
class GroupOutcome:
    """One pod group of a simulation: the group (None: not in the input), its members bound
    in the input, and its pending members' outcomes."""

    key: str
    group: PodGroup | None
    bound: int
    members: list[PodOutcome]

    @property
    def min_count(self) -> int | None:
        return None if self.group is None else min_count(self.group)

    @property
    def verdict(self) -> GroupVerdict:
        if self.group is None or any(
            (o.message or "").startswith(f"waiting for pod group {self.key}:") for o in self.members
        ):
            return "waiting"
        wanted = self.min_count
        if wanted is None:
            return "basic"
        placed = sum(1 for o in self.members if o.node is not None)
        return "placed" if self.bound + placed >= wanted else "not placed"

    def placement(self) -> GroupPlacement:
        """The group as ``podium explain podgroup/...`` shows one, from its members' last
        attempt: each member's verdict there (the node it fitted, or its FitError), the
        members that blocked it and their hints, the gang's message."""
        namespace, _, name = self.key.partition("/")
        verdict = self.verdict
        wanted = self.min_count
        needed = 0 if wanted is None else max(wanted - self.bound, 0)
        members = [
            placement(o.pod, o.result, attempts=o.attempts, explain=True, preempted=o.preempted)
            for o in self.members
        ]
        blocking = [o.pod.key for o in self.members if o.node is None and o.result.node is None]
        message = None
        if verdict in ("waiting", "not placed"):
            message = next((o.message for o in self.members if o.message), None)
        return GroupPlacement(
            namespace=namespace,
            name=name,
            policy=None if self.group is None else ("basic" if wanted is None else "gang"),
            min_count=wanted,
            bound=self.bound,
            needed=needed,
            fit=sum(1 for o in self.members if o.node is not None or o.result.node is not None),
            placed=verdict in ("placed", "basic"),
            waiting=verdict == "waiting",
            message=message,
            members=members,
            blocking=[] if verdict == "waiting" else blocking,
            hints={o.pod.key: o.hints for o in self.members if o.hints and o.pod.key in blocking},
            preempted=[v for o in self.members for v in o.preempted],
        )


def group_outcomes(
    objects: Iterable[KubeObject], outcomes: Sequence[PodOutcome]
) -> dict[str, GroupOutcome]:
    """Every pod group a pending pod of ``outcomes`` names (``namespace/name``, in the order
    of its first member's outcome), with the group and its members bound in ``objects``."""
    groups: dict[str, PodGroup] = {}
    bound: dict[str, int] = {}
    for obj in objects:
        if isinstance(obj, PodGroup):
            groups[_key(obj)] = obj
        elif isinstance(obj, Pod) and obj.spec.node_name and holds_resources(obj):
            key = pod_group_key(obj)
            if key is not None:
                bound[key] = bound.get(key, 0) + 1
    out: dict[str, GroupOutcome] = {}
    for o in outcomes:
        key = pod_group_key(o.pod.pod)
        if key is None:
            continue
        if key not in out:
            out[key] = GroupOutcome(key, groups.get(key), bound.get(key, 0), [])
        out[key].members.append(o)
    return out


def _key(obj: KubeObject) -> str:
    return namespaced_key(obj.metadata.namespace, obj.metadata.name)


def _admitted(pod: Pod, position: int, classes: dict[str, PriorityClass]) -> Pod:
    """The pod as the store admits it (store/admission.py), so the summaries before the run
    show the priorities the run itself gives.

    Raises:
        SimulationError: the store would refuse it (an unknown class, a priority that
            differs); it names the pod's ``position`` among the objects.
    """
    try:
        return admit_pod(pod, classes)
    except InvalidObject as exc:
        reason = exc.message.removeprefix(f"pod {pod.metadata.namespace}/{pod.metadata.name}: ")
        raise SimulationError(
            f"{exc.message} ({exc.path})", objects=[(position, reason, exc.path)]
        ) from None


def build_cluster(
    objects: Iterable[KubeObject], *, scheduler_name: str = "default-scheduler"
) -> Cluster:
    """Sort objects into nodes, bound pods, pending pods and the rest.

    A later object with the same kind/namespace/name replaces an earlier one (a put).

    Raises:
        SimulationError: a pod names an unknown PriorityClass (the first such pod, by its
            position in ``objects``).
    """
    nodes: dict[str, Node] = {}
    pods: dict[str, tuple[int, Pod]] = {}  # by key: (position among the objects, pod)
    objs = ClusterObjects()
    classes: dict[str, PriorityClass] = {}
    tables: dict[type, dict[str, object]] = {
        Service: objs.services,  # type: ignore[dict-item]
        ReplicationController: objs.replication_controllers,  # type: ignore[dict-item]
        ReplicaSet: objs.replica_sets,  # type: ignore[dict-item]
        StatefulSet: objs.stateful_sets,  # type: ignore[dict-item]
        PersistentVolumeClaim: objs.persistent_volume_claims,  # type: ignore[dict-item]
        PodDisruptionBudget: objs.pod_disruption_budgets,  # type: ignore[dict-item]
        PodGroup: objs.pod_groups,  # type: ignore[dict-item]
    }
    for position, obj in enumerate(objects):
        match obj:
            case Node():
                nodes[obj.metadata.name] = obj
            case Pod():
                pods.pop(_key(obj), None)  # a replace moves it to the end of arrival order
                pods[_key(obj)] = (position, obj)
            case PersistentVolume():
                objs.persistent_volumes[obj.metadata.name] = obj
            case StorageClass():
                objs.storage_classes[obj.metadata.name] = obj
            case PriorityClass():
                classes[obj.metadata.name] = obj
            case _:
                tables[type(obj)][_key(obj)] = obj
    objs.priority_classes.update(classes)
    admitting = known_classes(classes.values())
    tree = NodeTree()
    infos: dict[str, NodeInfo] = {}
    for name, node in nodes.items():
        tree.add(name, node.metadata.labels)
        infos[name] = NodeInfo(node)
    pending: list[PodInfo] = []
    warnings: list[str] = []
    for key, (position, pod) in pods.items():
        if not holds_resources(pod):
            continue
        info = PodInfo(_admitted(pod, position, admitting))
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


def final_node_infos(cluster: Cluster, outcomes: Sequence[PodOutcome]) -> dict[str, NodeInfo]:
    """The nodes with every placement and eviction of ``outcomes`` applied (for utilisation
    summaries)."""
    infos = {name: info.clone() for name, info in cluster.infos.items()}
    evicted = {key for o in outcomes for key in o.preempted}
    for info in infos.values():
        for pod in [p for p in info.pods if p.key in evicted]:
            info.remove_pod(pod)
    for o in outcomes:
        if o.node is not None and o.pod.key not in evicted:
            infos[o.node].add_pod(o.pod)
    return infos
