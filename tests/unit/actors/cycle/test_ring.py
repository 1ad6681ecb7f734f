"""The node ring's segment tree against the walk and pick it replaces.

The reference is what ``FilterStage._fit_vector`` and ``ScoreStage.run`` do over a list: walk
the rows from ``start`` (wrapping) until ``want`` fit, then among those the highest total, the
``j``-th tie in examination order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from podium.actors.cycle.ring import NONE, Ring


def _reference(
    alive: list[bool], totals: list[int], start: int, want: int
) -> tuple[int, int, int, list[int]]:
    """(rows examined, how many fit, best total, the tied rows in examination order)."""
    n = len(alive)
    examined, feasible = 0, []
    for step in range(n):
        row = (start + step) % n
        examined += 1
        if alive[row]:
            feasible.append(row)
            if len(feasible) == want:
                break
    top = max((totals[r] for r in feasible), default=NONE)
    return examined, len(feasible), top, [r for r in feasible if totals[r] == top]


def _ring(alive: list[bool], totals: list[int]) -> Ring:
    return Ring(np.array(alive, dtype=bool), np.array(totals, dtype=np.int64))


# (alive, totals, start, want, rows examined, fits, best, tied rows in examination order)
CASES = [
    pytest.param(
        [1, 1, 1, 1], [5, 7, 7, 1], 0, 4, 4, 4, 7, [1, 2], id="every row, two ties in order"
    ),
    pytest.param([1, 0, 1, 1], [9, 0, 3, 9], 2, 2, 2, 2, 9, [3], id="stops once want fit"),
    pytest.param([1, 0, 1, 1], [9, 0, 3, 9], 3, 2, 2, 2, 9, [3, 0], id="wraps past the last row"),
    pytest.param(
        [1, 0, 0, 1, 0], [4, 0, 0, 4, 0], 4, 9, 5, 2, 4, [0, 3], id="want beyond the fits"
    ),
    pytest.param([0, 0, 0], [1, 2, 3], 1, 2, 3, 0, NONE, [], id="nothing fits: every row examined"),
    pytest.param([1], [3], 0, 1, 1, 1, 3, [0], id="one row"),
    pytest.param(
        [0, 1, 0, 1, 1, 0, 1],
        [0, 2, 0, 8, 8, 0, 8],
        5,
        4,
        7,
        4,
        8,
        [6, 3, 4],
        id="ties across the wrap, in examination order",
    ),
    pytest.param(
        [1, 1, 0, 1], [1, 6, 6, 2], 1, 1, 1, 1, 6, [1], id="a row that does not fit holds no total"
    ),
]


@pytest.mark.parametrize(
    ("alive", "totals", "start", "want", "examined", "fits", "best", "tied"), CASES
)
def test_the_ring_walks_and_picks_as_the_list_does(
    alive: list[int],
    totals: list[int],
    start: int,
    want: int,
    examined: int,
    fits: int,
    best: int,
    tied: list[int],
) -> None:
    flags = [bool(a) for a in alive]
    assert _reference(flags, totals, start, want) == (examined, fits, best, tied)
    ring = _ring(flags, totals)
    assert ring.feasible == sum(flags)
    assert ring.walk(start, want) == (examined, fits)
    assert ring.best(start, examined) == (best, len(tied))
    assert [ring.nth_best(start, examined, best, j) for j in range(len(tied))] == tied
    with pytest.raises(IndexError, match=r"^j: no tie"):
        ring.nth_best(start, examined, best, len(tied))


def test_rows_changed_one_at_a_time_answer_as_a_ring_built_afresh() -> None:
    alive, totals = [True] * 6, [3, 3, 1, 0, 3, 2]
    ring = _ring(alive, totals)
    # A placement fills row 0 (no longer fits), another lowers row 4's total.
    ring.set_row(0, False)
    ring.set_row(4, True, 1)
    alive[0], totals[4] = False, 1
    assert ring.walk(5, 3) == (4, 3)  # rows 5, 0 (does not fit), 1, 2
    assert ring.best(5, 4) == (3, 1)
    assert ring.nth_best(5, 4, 3, 0) == 1
    fresh = _ring(alive, totals)
    for start in range(6):
        for want in range(1, 7):
            examined, fits = ring.walk(start, want)
            assert (examined, fits) == fresh.walk(start, want)
            assert ring.best(start, examined) == fresh.best(start, examined)


def test_a_ring_without_totals_still_walks() -> None:
    ring = Ring(np.array([False, True, True]))
    assert ring.walk(2, 2) == (3, 2)  # rows 2, 0 (does not fit), 1
    assert ring.best(2, 3) == (NONE, 0)
    ring.set_totals(np.array([False, True, True]), np.array([0, 4, 4], dtype=np.int64))
    assert ring.best(2, 3) == (4, 2)
    assert [ring.nth_best(2, 3, 4, j) for j in (0, 1)] == [2, 1]


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.booleans(), st.integers(0, 4)), min_size=1, max_size=40),
    start_seed=st.integers(0, 10**6),
    want=st.integers(1, 45),
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.booleans(), st.integers(0, 4))),
)
def test_the_ring_agrees_with_the_list_after_any_edits(
    rows: list[tuple[bool, int]],
    start_seed: int,
    want: int,
    edits: list[tuple[int, bool, int]],
) -> None:
    alive = [a for a, _ in rows]
    totals = [t for _, t in rows]
    ring = _ring(alive, totals)
    n = len(rows)
    for seed, fits, total in edits:
        row = seed % n
        alive[row], totals[row] = fits, total
        ring.set_row(row, fits, total)
    start = start_seed % n
    examined, fits_count, best, tied = _reference(alive, totals, start, want)
    assert ring.walk(start, want) == (examined, fits_count)
    assert ring.best(start, examined) == (best, len(tied))
    assert [ring.nth_best(start, examined, best, j) for j in range(len(tied))] == tied
