"""LeastRequestedPriority: prefer the node with the most unrequested cpu and memory.

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/least_requested.go@v1.14.0
(``LeastRequestedPriorityMap``, ``leastResourceScorer``, ``leastRequestedScore``). Per
resource ``((capacity - requested) * 10) / capacity``, 0 when the capacity is 0 or the request
exceeds it; the node's score is the integer mean of the cpu and memory scores. The shared
map step is in :mod:`podium.actors.plugins.resource_allocation`; there is no reduce step.
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

__all__ = ["FACTORIES", "NAME", "LeastRequested", "least_requested_score"]

NAME = names.LEAST_REQUESTED


def least_requested_score(requested: int, capacity: int) -> int:
    """The unused share of one resource on a 0-10 scale (``leastRequestedScore``)."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_PRIORITY // capacity


def _least_requested_columns(
    requested: npt.NDArray[np.int64], capacity: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    # Every operand is >= 0 where the result is kept, so numpy's floor division is Go's.
    score = (capacity - requested) * MAX_PRIORITY // safe_denominator(capacity)
    return np.where((capacity == 0) | (requested > capacity), 0, score)


class LeastRequested(ResourceAllocationPriority):
    """LeastRequestedPriority (map only)."""

    def scorer(
        self, cpu_requested: int, cpu_allocatable: int, mem_requested: int, mem_allocatable: int
    ) -> int:
        return (
            least_requested_score(cpu_requested, cpu_allocatable)
            + least_requested_score(mem_requested, mem_allocatable)
        ) // 2

    def scorer_columns(
        self,
        cpu_requested: npt.NDArray[np.int64],
        cpu_allocatable: npt.NDArray[np.int64],
        mem_requested: npt.NDArray[np.int64],
        mem_allocatable: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        total = _least_requested_columns(cpu_requested, cpu_allocatable) + _least_requested_columns(
            mem_requested, mem_allocatable
        )
        return total // 2


FACTORIES: dict[str, Callable[[PluginArgs], LeastRequested]] = {NAME: LeastRequested}
