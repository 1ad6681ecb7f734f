"""EqualPriority: every node scores 1 (a neutral priority).

Kubernetes counterpart: pkg/scheduler/core/generic_scheduler.go@v1.14.0 (``EqualPriorityMap``,
registered in pkg/scheduler/algorithmprovider/defaults/defaults.go as "EqualPriority" with no
reduce function and weight 1, outside the default set). Seed 004's ``UniformPriority`` is an
alias. The map score is 1 on every node, and there is no reduce step, so the 1 is what adds up
(times the policy weight), not a 0-10 score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import PluginArgs, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.reduce import NoReduce

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = ["EQUAL_SCORE", "FACTORIES", "NAME", "EqualPriority"]

NAME = names.EQUAL_PRIORITY

EQUAL_SCORE = 1
"""The map score of every node."""


class EqualPriority(NoReduce, VectorScorePlugin[None]):
    """EqualPriority (map only): 1 everywhere."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> None:
        return None

    def score(self, pod: PodInfo, meta: None, node: NodeInfo) -> int:
        return EQUAL_SCORE

    def score_columns(
        self, pod: PodInfo, meta: None, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        return np.full(len(rows), EQUAL_SCORE, dtype=np.int64)


FACTORIES: dict[str, Callable[[PluginArgs], EqualPriority]] = {NAME: EqualPriority}
