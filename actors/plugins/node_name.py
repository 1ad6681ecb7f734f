"""HostName: a pod that names a node (``spec.nodeName``) fits only that node.

Kubernetes: pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0 (``PodFitsHost``) and
error.go@v1.14.0 (``ErrPodNotMatchHostName``). A pod without ``spec.nodeName`` fits every
node; the failure is unresolvable (preemption cannot change a node's name). For a pod that
names a node, a row without a Node object is v1.14's "node not found" error.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    NODE_NOT_FOUND,
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
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names

__all__ = ["ERR_REASON_HOST_NAME", "FACTORIES", "NAME", "PodFitsHost"]

NAME = names.HOST_NAME

ERR_REASON_HOST_NAME = "node(s) didn't match the requested hostname"


class PodFitsHost(VectorFilterPlugin[str]):
    """v1.14 ``PodFitsHost``: ``spec.nodeName`` empty or equal to the node's name.

    ``pre_filter`` answers the wanted node's name, or SKIP for a pod that names none.
    """

    node_local = True
    missing_node = NODE_NOT_FOUND

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> str | Skip:
        return pod.node_name or SKIP

    def filter(self, pod: PodInfo, meta: str, node: NodeInfo) -> Status:
        if meta == node.name:
            return SUCCESS
        return unschedulable(ERR_REASON_HOST_NAME, resolvable=False)

    def filter_columns(self, pod: PodInfo, meta: str, cols: NodeColumns) -> ReasonMasks:
        fails = np.ones(cols.n, dtype=bool)
        row = cols.index.get(meta)
        if row is not None:
            fails[row] = False
        return [(ERR_REASON_HOST_NAME, fails, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]


FACTORIES: dict[str, Callable[[PluginArgs], PodFitsHost]] = {NAME: PodFitsHost}
