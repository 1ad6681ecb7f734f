"""The shared reduce step of the v1.14 priorities: ``NormalizeReduce`` and Go integer division.

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/reduce.go@v1.14.0
(NormalizeReduce), used by NodeAffinityPriority and TaintTolerationPriority.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from podium.actors.framework.interface import MAX_PRIORITY

__all__ = ["go_div", "normalize_reduce", "normalize_reduce_array"]


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
