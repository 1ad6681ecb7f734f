"""The shared map step of the resource priorities (LeastRequested, MostRequested, Balanced).

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/resource_allocation.go@v1.14.0
(``ResourceAllocationPriority.PriorityMap``). A node's score is a function of

    requested   = the node's non-zero cpu/memory requests + the pod's non-zero requests
    allocatable = the node's allocatable cpu/memory

per resource. Non-zero requests count 100m cpu / 200 MiB memory for a container that names
none (``GetNonzeroRequests``); Podium's PodInfo/NodeInfo also count init containers and
overhead in them (docs/differences.md). The alpha ``BalanceAttachedNodeVolumes`` feature
(off by default in v1.14) is not implemented.

These priorities have no reduce step: ``normalize`` returns the map scores unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import PluginArgs, Skip, VectorScorePlugin

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = ["ResourceAllocationPriority", "safe_denominator"]


class ResourceAllocationPriority(VectorScorePlugin[None]):
    """Base of the resource priorities: gathers (requested, allocatable) and calls the scorer.

    Subclasses implement :meth:`scorer` (Python integers) and :meth:`scorer_columns` (numpy
    arrays, one element per row) with the same arithmetic.
    """

    node_local = True

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> None:
        return None

    def score(self, pod: PodInfo, meta: None, node: NodeInfo) -> int:
        alloc = node.allocatable
        return self.scorer(
            node.non_zero_milli_cpu + pod.non_zero_milli_cpu,
            alloc.milli_cpu,
            node.non_zero_memory + pod.non_zero_memory,
            alloc.memory,
        )

    def normalize(
        self, pod: PodInfo, meta: Skip | None, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return list(scores)

    def normalize_columns(
        self,
        pod: PodInfo,
        meta: Skip | None,
        nodes: Sequence[NodeInfo],
        scores: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        return scores

    def score_columns(
        self, pod: PodInfo, meta: None, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        return self.scorer_columns(
            cols.nz_milli_cpu[rows] + pod.non_zero_milli_cpu,
            cols.alloc_milli_cpu[rows],
            cols.nz_memory[rows] + pod.non_zero_memory,
            cols.alloc_memory[rows],
        )

    def scorer(
        self, cpu_requested: int, cpu_allocatable: int, mem_requested: int, mem_allocatable: int
    ) -> int:
        """The score of one node from its cpu (millicores) and memory (bytes) figures."""
        raise NotImplementedError

    def scorer_columns(
        self,
        cpu_requested: npt.NDArray[np.int64],
        cpu_allocatable: npt.NDArray[np.int64],
        mem_requested: npt.NDArray[np.int64],
        mem_allocatable: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        """:meth:`scorer` over arrays (one element per node)."""
        raise NotImplementedError


def safe_denominator(capacity: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``capacity`` with zeros replaced by ones, for a division whose zero rows are masked out."""
    return np.where(capacity == 0, 1, capacity)
