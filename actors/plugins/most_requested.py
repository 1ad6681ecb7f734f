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

from podium.actors.framework.interface import PluginArgs
from podium.actors.plugins import names
from podium.actors.plugins.resource_allocation import (
    RequestedSharePriority,
    share_score,
    share_score_columns,
)

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["FACTORIES", "NAME", "MostRequested", "most_requested_score"]

NAME = names.MOST_REQUESTED


def most_requested_score(requested: int, capacity: int) -> int:
    """The requested share of one resource on a 0-10 scale (``mostRequestedScore``)."""
    return share_score(requested, requested, capacity)


class MostRequested(RequestedSharePriority):
    """MostRequestedPriority (map only)."""

    def resource_score(self, requested: int, capacity: int) -> int:
        return most_requested_score(requested, capacity)

    def resource_score_columns(
        self, requested: npt.NDArray[np.int64], capacity: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        return share_score_columns(requested, requested, capacity)


FACTORIES: dict[str, Callable[[PluginArgs], MostRequested]] = {NAME: MostRequested}
