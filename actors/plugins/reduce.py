"""The shared reduce steps of the v1.14 priorities: ``NormalizeReduce``, none, Go division.

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/reduce.go@v1.14.0
(NormalizeReduce), used by NodeAffinityPriority and TaintTolerationPriority; the priorities
registered with ``Reduce: nil`` (pkg/scheduler/algorithmprovider/defaults/defaults.go), whose
map scores are their scores. Each comes as a function and as a mixin holding a priority's
``normalize`` and ``normalize_columns``, listed before the plugin's Protocol::

    class NodeAffinity(NormalizeReduce, VectorScorePlugin[tuple[_Term, ...]]):
        reverse = False
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from podium.actors.framework.interface import MAX_PRIORITY

if TYPE_CHECKING:
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo

__all__ = ["NoReduce", "NormalizeReduce", "go_div", "normalize_reduce", "normalize_reduce_array"]


def go_div(a: int, b: int) -> int:
    """Go's integer division: the quotient truncated toward zero (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def normalize_reduce(
    scores: Sequence[int], max_priority: int = MAX_PRIORITY, *, reverse: bool
) -> list[int]:
    """Scale map scores to [0, ``max_priority``] by the highest one, as ``NormalizeReduce`` does.

    When every score is <= 0 they are returned unchanged, or all ``max_priority`` with
    ``reverse`` (nothing to prefer). Otherwise each becomes ``max_priority * score / highest``
    (Go integer division), subtracted from ``max_priority`` with ``reverse``.
    """
    highest = max((s for s in scores if s > 0), default=0)
    if highest == 0:
        return [max_priority] * len(scores) if reverse else list(scores)
    scaled = [go_div(max_priority * s, highest) for s in scores]
    return [max_priority - s for s in scaled] if reverse else scaled


def normalize_reduce_array(
    scores: npt.NDArray[np.int64], max_priority: int = MAX_PRIORITY, *, reverse: bool
) -> npt.NDArray[np.int64]:
    """:func:`normalize_reduce` over an array (the same integers, element by element)."""
    highest = int(scores.max(initial=0))
    if highest <= 0:
        return np.full(len(scores), max_priority, dtype=np.int64) if reverse else scores
    product = max_priority * scores
    # Go's division truncates toward zero; numpy's // floors, so divide magnitudes.
    scaled: npt.NDArray[np.int64] = np.sign(product) * (np.abs(product) // highest)
    return max_priority - scaled if reverse else scaled


class NormalizeReduce:
    """The reduce step ``NormalizeReduce(MaxPriority, reverse)``, scalar and array forms.

    Attributes:
        reverse: subtract the scaled score from ``MAX_PRIORITY`` (fewer is better).
    """

    reverse: ClassVar[bool]

    def normalize(
        self, pod: PodInfo, meta: object, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return normalize_reduce(scores, reverse=self.reverse)

    def normalize_columns(
        self,
        pod: PodInfo,
        meta: object,
        nodes: Sequence[NodeInfo],
        scores: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        return normalize_reduce_array(scores, reverse=self.reverse)

    def reduces_row_by_row(self, pod: PodInfo, meta: object, scores: npt.NDArray[np.int64]) -> bool:
        """While no score is above 0 the highest is 0 in any window: every row keeps its
        score (or gets ``MAX_PRIORITY`` with ``reverse``), whatever the others."""
        return int(scores.max(initial=0)) <= 0


class NoReduce:
    """No reduce step (``Reduce: nil``): the map scores are the priority's scores."""

    def normalize(
        self, pod: PodInfo, meta: object, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return list(scores)

    def normalize_columns(
        self,
        pod: PodInfo,
        meta: object,
        nodes: Sequence[NodeInfo],
        scores: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        return scores

    def reduces_row_by_row(self, pod: PodInfo, meta: object, scores: npt.NDArray[np.int64]) -> bool:
        """No reduce step: a row's score is its map score."""
        return True
