"""BalancedResourceAllocation: prefer the node whose cpu and memory shares stay closest.

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/balanced_resource_allocation.go@v1.14.0
(``BalancedResourceAllocationMap``, ``balancedResourceScorer``, ``fractionOfCapacity``).
Each resource's share is ``requested / capacity`` as a float64 (1 when the capacity is 0); a
share >= 1 gives 0; otherwise the score is ``int((1 - |cpuShare - memShare|) * 10)``, the
float truncated as Go converts it. The alpha ``BalanceAttachedNodeVolumes`` variant (volume
counts in the variance, off by default in v1.14) is not implemented. No reduce step.
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

__all__ = ["FACTORIES", "NAME", "BalancedAllocation", "fraction_of_capacity"]

NAME = names.BALANCED_RESOURCE_ALLOCATION


def fraction_of_capacity(requested: int, capacity: int) -> float:
    """``fractionOfCapacity``: the requested share as a float64, 1 for a zero capacity."""
    if capacity == 0:
        return 1.0
    return float(requested) / float(capacity)


def _fraction_columns(
    requested: npt.NDArray[np.int64], capacity: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    # int64 -> float64 then an IEEE division, exactly the scalar form's float(a) / float(b).
    share = requested.astype(np.float64) / safe_denominator(capacity).astype(np.float64)
    return np.where(capacity == 0, 1.0, share)


class BalancedAllocation(ResourceAllocationPriority):
    """BalancedResourceAllocation (map only)."""

    def scorer(
        self, cpu_requested: int, cpu_allocatable: int, mem_requested: int, mem_allocatable: int
    ) -> int:
        cpu = fraction_of_capacity(cpu_requested, cpu_allocatable)
        mem = fraction_of_capacity(mem_requested, mem_allocatable)
        if cpu >= 1 or mem >= 1:
            # A node that the pod would fill (or overfill) is never preferred.
            return 0
        return int((1 - abs(cpu - mem)) * MAX_PRIORITY)

    def scorer_columns(
        self,
        cpu_requested: npt.NDArray[np.int64],
        cpu_allocatable: npt.NDArray[np.int64],
        mem_requested: npt.NDArray[np.int64],
        mem_allocatable: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        cpu = _fraction_columns(cpu_requested, cpu_allocatable)
        mem = _fraction_columns(mem_requested, mem_allocatable)
        score = ((1 - np.abs(cpu - mem)) * MAX_PRIORITY).astype(
            np.int64
        )  # truncates, as Go's int64()
        return np.where((cpu >= 1) | (mem >= 1), 0, score)


FACTORIES: dict[str, Callable[[PluginArgs], BalancedAllocation]] = {NAME: BalancedAllocation}
