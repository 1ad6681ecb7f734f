"""NormalizeReduce and Go integer division (pkg/scheduler/algorithm/priorities/reduce.go@v1.14.0).

v1.14 has no unit test of its own for NormalizeReduce (it is exercised through the node
affinity and taint toleration tests); these Podium rows pin its edge cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest

from podium.actors.plugins.reduce import go_div, normalize_reduce


@dataclass(frozen=True)
class Case:
    name: str
    scores: tuple[int, ...]
    reverse: bool
    want: tuple[int, ...]


CASES = [
    Case("scaled by the highest score", (0, 2, 4, 11), False, (0, 1, 3, 10)),
    Case("reversed", (0, 1, 2), True, (10, 5, 0)),
    Case("all zero stays zero", (0, 0), False, (0, 0)),
    Case("all zero reversed is all ten", (0, 0), True, (10, 10)),
    Case("no nodes", (), True, ()),
    # Go keeps maxCount at 0 when every score is negative and returns them unchanged.
    Case("all negative are left unchanged", (-3, -1), False, (-3, -1)),
    # 10 * -1 / 3 truncates toward zero in Go: -3, where Python's // would give -4.
    Case("negative scores divide toward zero", (-1, 3), False, (-3, 10)),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_normalize_reduce(case: Case) -> None:
    assert tuple(normalize_reduce(case.scores, reverse=case.reverse)) == case.want


@pytest.mark.parametrize(
    ("a", "b", "want"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)]
)
def test_go_div_truncates_toward_zero(a: int, b: int, want: int) -> None:
    assert go_div(a, b) == want
