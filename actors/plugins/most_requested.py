"""MostRequestedPriority: prefer the node whose cpu and memory are most requested (packing).

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/most_requested.go@v1.14.0
(``MostRequestedPriorityMap``, ``mostResourceScorer``, ``mostRequestedScore``). Per resource
``(requested * 10) / capacity``, 0 when the capacity is 0 or the request exceeds it (v1.14;
later versions clamp the request to the capacity instead); the node's score is the integer
mean of the cpu and memory scores. The shared map step is in
:mod:`podium.actors.plugins.resource_allocation`; there is no reduce step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import MAX_PRIORITY, PluginArgs
from podium.actors.plugins import names
from podium.actors.plugins.resource_allocation import ResourceAllocationPriority, safe_denominator

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["FACTORIES", "NAME", "MostRequested", "most_requested_score"]

NAME = names.MOST_REQUESTED


def most_requested_score(requested: int, capacity: int) -> int:
    """The requested share of one resource on a 0-10 scale (``mostRequestedScore``)."""
    if capacity == 0 or requested > capacity:
        return 0
    return requested * MAX_PRIORITY // capacity


def _most_requested_columns(
    requested: npt.NDArray[np.int64], capacity: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    # Every operand is >= 0 where the result is kept, so numpy's floor division is Go's.
    score = requested * MAX_PRIORITY // safe_denominator(capacity)
    return np.where((capacity == 0) | (requested > capacity), 0, score)


class MostRequested(ResourceAllocationPriority):
    """MostRequestedPriority (map only)."""

    def scorer(
        self, cpu_requested: int, cpu_allocatable: int, mem_requested: int, mem_allocatable: int
    ) -> int:
        return (
            most_requested_score(cpu_requested, cpu_allocatable)
            + most_requested_score(mem_requested, mem_allocatable)
        ) // 2

    def scorer_columns(
        self,
        cpu_requested: npt.NDArray[np.int64],
        cpu_allocatable: npt.NDArray[np.int64],
        mem_requested: npt.NDArray[np.int64],
        mem_allocatable: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        total = _most_requested_columns(cpu_requested, cpu_allocatable) + _most_requested_columns(
            mem_requested, mem_allocatable
        )
        return total // 2


FACTORIES: dict[str, Callable[[PluginArgs], MostRequested]] = {NAME: MostRequested}
