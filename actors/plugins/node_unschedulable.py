"""CheckNodeUnschedulable: a cordoned node takes only pods that tolerate being cordoned.

Kubernetes source: ``CheckNodeUnschedulablePredicate`` in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0, reasons from error.go there.

A node with ``spec.unschedulable`` rejects the pod unless one of the pod's tolerations
tolerates the taint ``node.kubernetes.io/unschedulable:NoSchedule`` (empty value), whether or
not the node actually carries that taint. A row without a Node object gets "node(s) had
unknown conditions". Both reasons are unresolvable (v1.14 ``nodesWherePreemptionMightHelp``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import (
    ERR_REASON_UNKNOWN_CONDITION,
    NODE_UNKNOWN_CONDITION,
    SUCCESS,
    Code,
    PluginArgs,
    ReasonMasks,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.plugins import names
from podium.protocol.labels import toleration_tolerates_taint
from podium.protocol.objects import Taint

if TYPE_CHECKING:
    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "ERR_REASON_UNKNOWN_CONDITION",
    "ERR_REASON_UNSCHEDULABLE",
    "FACTORIES",
    "NAME",
    "TAINT_NODE_UNSCHEDULABLE",
    "NodeUnschedulable",
    "tolerates_unschedulable",
]

NAME = names.CHECK_NODE_UNSCHEDULABLE

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
"""``schedulerapi.TaintNodeUnschedulable`` (v1.14)."""

_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")


def tolerates_unschedulable(pod: PodInfo) -> bool:
    """Whether the pod tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""
    return any(
        toleration_tolerates_taint(t, _UNSCHEDULABLE_TAINT) for t in pod.pod.spec.tolerations
    )


class NodeUnschedulable(VectorFilterPlugin[bool]):
    """v1.14 CheckNodeUnschedulablePredicate (see the module docstring).

    ``pre_filter`` answers the pod's half once: whether it tolerates being on a cordoned node.
    """

    node_local = True
    missing_node = NODE_UNKNOWN_CONDITION

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> bool:
        return tolerates_unschedulable(pod)

    def filter(self, pod: PodInfo, meta: bool, node: NodeInfo) -> Status:
        if node.unschedulable and not meta:
            return unschedulable(ERR_REASON_UNSCHEDULABLE, resolvable=False)
        return SUCCESS

    def filter_columns(self, pod: PodInfo, meta: bool, cols: NodeColumns) -> ReasonMasks:
        cordoned = cols.unschedulable if not meta else np.zeros(cols.n, dtype=bool)
        return [(ERR_REASON_UNSCHEDULABLE, cordoned, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]


FACTORIES: dict[str, Callable[[PluginArgs], NodeUnschedulable]] = {NAME: NodeUnschedulable}
