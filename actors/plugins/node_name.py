"""HostName: a pod that names a node (``spec.nodeName``) fits only that node.

Kubernetes: pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0 (``PodFitsHost``) and
error.go@v1.14.0 (``ErrPodNotMatchHostName``). A pod without ``spec.nodeName`` fits every
node; the failure is unresolvable (preemption cannot change a node's name).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    PluginArgs,
    PredicateError,
    ReasonMasks,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names

__all__ = ["ERR_NODE_NOT_FOUND", "ERR_REASON_HOST_NAME", "FACTORIES", "NAME", "PodFitsHost"]

NAME = names.HOST_NAME

ERR_REASON_HOST_NAME = "node(s) didn't match the requested hostname"
ERR_NODE_NOT_FOUND = "node not found"
"""The error (not a misfit) v1.14 returns for a NodeInfo without a Node."""


class PodFitsHost(VectorFilterPlugin):
    """v1.14 ``PodFitsHost``: ``spec.nodeName`` empty or equal to the node's name."""

    node_local = True
    """The answer for a node depends only on the pod's spec and that node (equivalence)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> object:
        return pod.node_name or SKIP

    def filter(self, pod: PodInfo, meta: object, node: NodeInfo) -> Status:
        wanted = pod.node_name
        if not wanted:
            return SUCCESS
        if node.node is None:
            return Status(Code.ERROR, (ERR_NODE_NOT_FOUND,))
        if wanted == node.name:
            return SUCCESS
        return unschedulable(ERR_REASON_HOST_NAME, resolvable=False)

    def filter_columns(self, pod: PodInfo, meta: object, cols: NodeColumns) -> ReasonMasks:
        wanted = pod.node_name
        if not wanted:
            return []
        if not cols.has_node.all():
            raise PredicateError(ERR_NODE_NOT_FOUND)
        fails = np.ones(cols.n, dtype=bool)
        row = cols.index.get(wanted)
        if row is not None:
            fails[row] = False
        return [(ERR_REASON_HOST_NAME, fails)]


FACTORIES: dict[str, Callable[[PluginArgs], PodFitsHost]] = {NAME: PodFitsHost}
