"""NodeLabelPriority: prefer nodes that have (or lack) a label, from a policy ``labelPreference``.

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/node_label.go@v1.14.0
(``NewNodeLabelPriority``, ``CalculateNodeLabelPriorityMap``). With ``presence: true`` a node
carrying the label (any value) scores 10 and the others 0; with ``presence: false`` the
reverse. The priority exists only as a policy entry with an ``argument``
(``{"labelPreference": {"label": ..., "presence": ...}}``), reported under the entry's name.
No reduce step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import MAX_PRIORITY, PluginArgs, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.reduce import NoReduce

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = ["FACTORIES", "NAME", "NodeLabel"]

NAME = names.NODE_LABEL


class NodeLabel(NoReduce, VectorScorePlugin[None]):
    """NodeLabelPriority (map only), configured by ``PluginArgs.label`` and ``.presence``."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self.label = args.label
        self.presence = args.presence

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> None:
        return None

    def score(self, pod: PodInfo, meta: None, node: NodeInfo) -> int:
        return MAX_PRIORITY if (self.label in node.labels) == self.presence else 0

    def score_columns(
        self, pod: PodInfo, meta: None, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        codes, _ = cols.label(self.label)
        has_label = codes[rows] >= 0
        return np.where(has_label == self.presence, MAX_PRIORITY, 0).astype(np.int64)


FACTORIES: dict[str, Callable[[PluginArgs], NodeLabel]] = {NAME: NodeLabel}
