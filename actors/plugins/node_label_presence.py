"""CheckNodeLabelPresence: the node must have (or must lack) each of the listed label keys.

Kubernetes source: ``NodeLabelChecker.CheckNodeLabelPresence`` in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0; reason from error.go there. The
predicate exists only through a Policy entry with the ``labelsPresence`` argument
(``labels``, ``presence``), so it reports under that entry's name.

With ``presence: true`` every listed key must be on the node; with ``presence: false`` none
may be. Values do not matter. A row without a Node object is an error ("node not found"), as
in v1.14. The reason is unresolvable (v1.14 ``nodesWherePreemptionMightHelp``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import (
    NODE_NOT_FOUND,
    SUCCESS,
    Code,
    PluginArgs,
    ReasonMasks,
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
    "ERR_REASON_LABEL_PRESENCE",
    "FACTORIES",
    "NAME",
    "NodeLabelPresence",
]

NAME = names.CHECK_NODE_LABEL_PRESENCE

ERR_REASON_LABEL_PRESENCE = "node(s) didn't have the requested labels"


class NodeLabelPresence(VectorFilterPlugin[None]):
    """v1.14 CheckNodeLabelPresence, configured by ``labelsPresence`` (see the module docstring)."""

    node_local = True
    missing_node = NODE_NOT_FOUND

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self.labels = args.labels
        self.presence = args.presence

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        node_labels = node.labels
        if any((key in node_labels) != self.presence for key in self.labels):
            return unschedulable(ERR_REASON_LABEL_PRESENCE, resolvable=False)
        return SUCCESS

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        violated = np.zeros(cols.n, dtype=bool)
        for key in self.labels:
            codes, _ = cols.label(key)
            violated |= (codes >= 0) != self.presence
        return [(ERR_REASON_LABEL_PRESENCE, violated, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]


FACTORIES: dict[str, Callable[[PluginArgs], NodeLabelPresence]] = {NAME: NodeLabelPresence}
