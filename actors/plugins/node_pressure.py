"""CheckNodeMemoryPressure, CheckNodeDiskPressure, CheckNodePIDPressure: node pressure conditions.

Kubernetes source: ``CheckNodeMemoryPressurePredicate``, ``CheckNodeDiskPressurePredicate``,
``CheckNodePIDPressurePredicate`` and ``isPodBestEffort`` in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0; ``SetNode`` in
pkg/scheduler/nodeinfo/node_info.go@v1.14.0; ``GetPodQOS`` in
pkg/apis/core/v1/helper/qos/qos.go@v1.14.0; reasons from predicates/error.go there.

A node is under pressure when its condition of that type has status ``True``. v1.14's
``NodeInfo.SetNode`` keeps the status of the *last* condition of each type the node lists, so
a node listing ``MemoryPressure`` twice is judged by the second entry. A row without a Node
object has no conditions and passes.

Memory pressure rejects only BestEffort pods. v1.14's ``GetPodQOS`` looks at the regular
containers only (init containers joined in v1.15, kubernetes PR #75223): a pod is BestEffort
when none of them has a ``cpu`` or ``memory`` request or limit greater than zero. Other
resources (ephemeral-storage, extended resources) do not count.

Every reason is unresolvable (v1.14 ``nodesWherePreemptionMightHelp``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    PluginArgs,
    ReasonMasks,
    Skip,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.plugins import names

if TYPE_CHECKING:
    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "ERR_REASON_DISK_PRESSURE",
    "ERR_REASON_MEMORY_PRESSURE",
    "ERR_REASON_PID_PRESSURE",
    "FACTORIES",
    "NAME_DISK",
    "NAME_MEMORY",
    "NAME_PID",
    "NodeDiskPressure",
    "NodeMemoryPressure",
    "NodePIDPressure",
    "PressurePredicate",
    "is_pod_best_effort",
]

NAME_MEMORY = names.CHECK_NODE_MEMORY_PRESSURE
NAME_DISK = names.CHECK_NODE_DISK_PRESSURE
NAME_PID = names.CHECK_NODE_PID_PRESSURE

ERR_REASON_MEMORY_PRESSURE = "node(s) had memory pressure"
ERR_REASON_DISK_PRESSURE = "node(s) had disk pressure"
ERR_REASON_PID_PRESSURE = "node(s) had pid pressure"

_QOS_RESOURCES = ("cpu", "memory")


def is_pod_best_effort(pod: PodInfo) -> bool:
    """v1.14 ``GetPodQOS(pod) == BestEffort``: no container asks for or caps cpu or memory."""
    for container in pod.pod.spec.containers:
        for resources in (container.resources.requests, container.resources.limits):
            for name in _QOS_RESOURCES:
                quantity = resources.get(name)
                if quantity is not None and quantity.value > 0:
                    return False
    return True


def _last_status(node: NodeInfo, condition_type: str) -> str:
    """The status of the last condition of this type the node lists ("" when none)."""
    status = ""
    for cond in node.conditions:
        if cond.type == condition_type:
            status = cond.status
    return status


class PressurePredicate(VectorFilterPlugin[None]):
    """A node whose ``condition_type`` condition is ``True`` rejects the pod."""

    node_local = True

    condition_type: str
    column: str
    reason: str

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> Skip | None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        if _last_status(node, self.condition_type) == "True":
            return unschedulable(self.reason, resolvable=False)
        return SUCCESS

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        # The column says "some entry is True", which is the last entry's answer wherever the
        # type is listed once; rows listing a condition type twice are re-checked one by one.
        column: npt.NDArray[np.bool_] = getattr(cols, self.column)
        masks: ReasonMasks = [
            (self.reason, column & ~cols.duplicate_conditions, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        ]
        for row in np.flatnonzero(cols.duplicate_conditions).tolist():
            status = self.filter(pod, meta, cols.infos[row])
            if not status.is_success:
                mask = np.zeros(cols.n, dtype=bool)
                mask[row] = True
                masks.append((self.reason, mask, status.code))
        return masks


class NodeMemoryPressure(PressurePredicate):
    """v1.14 CheckNodeMemoryPressurePredicate: BestEffort pods avoid memory-pressured nodes."""

    condition_type = "MemoryPressure"
    column = "memory_pressure"
    reason = ERR_REASON_MEMORY_PRESSURE

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> Skip | None:
        # Only BestEffort pods are affected (v1.14 precomputes this as podBestEffort).
        return None if is_pod_best_effort(pod) else SKIP


class NodeDiskPressure(PressurePredicate):
    """v1.14 CheckNodeDiskPressurePredicate."""

    condition_type = "DiskPressure"
    column = "disk_pressure"
    reason = ERR_REASON_DISK_PRESSURE


class NodePIDPressure(PressurePredicate):
    """v1.14 CheckNodePIDPressurePredicate."""

    condition_type = "PIDPressure"
    column = "pid_pressure"
    reason = ERR_REASON_PID_PRESSURE


FACTORIES: dict[str, Callable[[PluginArgs], PressurePredicate]] = {
    NAME_MEMORY: NodeMemoryPressure,
    NAME_DISK: NodeDiskPressure,
    NAME_PID: NodePIDPressure,
}
