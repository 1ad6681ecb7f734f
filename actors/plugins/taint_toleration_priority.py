"""TaintTolerationPriority: prefer nodes with fewer PreferNoSchedule taints the pod does not tolerate.

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/taint_toleration.go@v1.14.0
(``ComputeTaintTolerationPriorityMap``, ``ComputeTaintTolerationPriorityReduce``). The map
score counts the node's ``PreferNoSchedule`` taints that none of the pod's tolerations with
effect ``PreferNoSchedule`` or empty tolerates; the reduce step is ``NormalizeReduce(10,
true)``, so the node with the most such taints gets 0 and a node with none gets 10.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import PluginArgs, Skip, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.reduce import NormalizeReduce
from podium.protocol.labels import toleration_tolerates_taint
from podium.protocol.objects import Toleration

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot
    from podium.protocol.objects import Taint

__all__ = ["FACTORIES", "NAME", "TaintTolerationPriority", "count_intolerable_taints"]

NAME = names.TAINT_TOLERATION

PREFER_NO_SCHEDULE = "PreferNoSchedule"


def _prefer_no_schedule_tolerations(pod: PodInfo) -> tuple[Toleration, ...]:
    """``getAllTolerationPreferNoSchedule``: an empty effect means every effect, so it counts."""
    return tuple(t for t in pod.pod.spec.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


def count_intolerable_taints(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
    """``countIntolerableTaintsPreferNoSchedule``: PreferNoSchedule taints no toleration covers."""
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE
        and not any(toleration_tolerates_taint(t, taint) for t in tolerations)
    )


class TaintTolerationPriority(NormalizeReduce, VectorScorePlugin[tuple[Toleration, ...]]):
    """TaintTolerationPriority: map = intolerable taints, reduce = NormalizeReduce(10, true)."""

    node_local = True
    reverse = True

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_score(
        self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]
    ) -> tuple[Toleration, ...] | Skip:
        """The pod's tolerations that can cover a PreferNoSchedule taint."""
        return _prefer_no_schedule_tolerations(pod)

    def score(self, pod: PodInfo, meta: tuple[Toleration, ...], node: NodeInfo) -> int:
        return count_intolerable_taints(node.taints, meta)

    def score_columns(
        self,
        pod: PodInfo,
        meta: tuple[Toleration, ...],
        cols: NodeColumns,
        rows: npt.NDArray[np.intp],
    ) -> npt.NDArray[np.int64]:
        tolerations = meta
        ids = cols.taint_set[rows]
        # One count per distinct taint list among the rows, not one per node.
        unique, inverse = np.unique(ids, return_inverse=True)
        counts = np.fromiter(
            (count_intolerable_taints(cols.taint_sets[i], tolerations) for i in unique.tolist()),
            dtype=np.int64,
            count=len(unique),
        )
        return counts[inverse.reshape(-1)]


FACTORIES: dict[str, Callable[[PluginArgs], TaintTolerationPriority]] = {
    NAME: TaintTolerationPriority
}
