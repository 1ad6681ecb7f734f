"""The shared map step of the resource priorities (LeastRequested, MostRequested, Balanced).

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/resource_allocation.go@v1.14.0
(``ResourceAllocationPriority.PriorityMap``). A node's score is a function of

    requested   = the node's non-zero cpu/memory requests + the pod's non-zero requests
    allocatable = the node's allocatable cpu/memory

per resource. Non-zero requests count 100m cpu / 200 MiB memory for a container that names
none (``GetNonzeroRequests``); Podium's PodInfo/NodeInfo also count init containers and
overhead in them (docs/differences.md). The alpha ``BalanceAttachedNodeVolumes`` feature
(off by default in v1.14) is not implemented.

LeastRequested and MostRequested score each resource alike and take the integer mean
(:class:`RequestedSharePriority`, ``leastResourceScorer`` and ``mostResourceScorer``): a share
of the capacity on the 0-10 scale, 0 when the capacity is 0 or the request exceeds it
(:func:`share_score`, the common steps of ``leastRequestedScore`` and ``mostRequestedScore``).

These priorities have no reduce step (:class:`~podium.actors.plugins.reduce.NoReduce`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import MAX_PRIORITY, PluginArgs, VectorScorePlugin
from podium.actors.plugins.reduce import NoReduce

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "RequestedSharePriority",
    "ResourceAllocationPriority",
    "safe_denominator",
    "share_score",
    "share_score_columns",
]


class ResourceAllocationPriority(NoReduce, VectorScorePlugin[None]):
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


def share_score(part: int, requested: int, capacity: int) -> int:
    """``part`` as a share of ``capacity`` on the 0-10 scale (Go integer division).

    0 when the capacity is 0 or ``requested`` exceeds it. ``part`` is the unrequested amount
    for ``leastRequestedScore``, the requested amount for ``mostRequestedScore``.
    """
    if capacity == 0 or requested > capacity:
        return 0
    return part * MAX_PRIORITY // capacity


def share_score_columns(
    part: npt.NDArray[np.int64],
    requested: npt.NDArray[np.int64],
    capacity: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """:func:`share_score` over arrays (one element per node)."""
    # Every operand is >= 0 where the result is kept, so numpy's floor division is Go's.
    score = part * MAX_PRIORITY // safe_denominator(capacity)
    return np.where((capacity == 0) | (requested > capacity), 0, score)


class RequestedSharePriority(ResourceAllocationPriority):
    """A resource priority scoring cpu and memory alike: the node's score is their integer mean.

    Subclasses implement :meth:`resource_score` and :meth:`resource_score_columns` (one
    resource's requested amount and capacity, Python integers or numpy arrays).
    """

    def resource_score(self, requested: int, capacity: int) -> int:
        """One resource's score on the 0-10 scale."""
        raise NotImplementedError

    def resource_score_columns(
        self, requested: npt.NDArray[np.int64], capacity: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """:meth:`resource_score` over arrays (one element per node)."""
        raise NotImplementedError

    def scorer(
        self, cpu_requested: int, cpu_allocatable: int, mem_requested: int, mem_allocatable: int
    ) -> int:
        return (
            self.resource_score(cpu_requested, cpu_allocatable)
            + self.resource_score(mem_requested, mem_allocatable)
        ) // 2

    def scorer_columns(
        self,
        cpu_requested: npt.NDArray[np.int64],
        cpu_allocatable: npt.NDArray[np.int64],
        mem_requested: npt.NDArray[np.int64],
        mem_allocatable: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        cpu = self.resource_score_columns(cpu_requested, cpu_allocatable)
        memory = self.resource_score_columns(mem_requested, mem_allocatable)
        return (cpu + memory) // 2
