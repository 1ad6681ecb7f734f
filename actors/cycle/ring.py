"""A segment tree over the node ring: per range, the feasible nodes and the best total.

Kubernetes counterpart: none. v1.14 ``findNodesThatFit`` walks the nodes from
``nextStartNodeIndex`` until ``numFeasibleNodesToFind`` fit, and ``selectHost`` takes the
highest total among them, ties broken at random (docs/differences.md); both cost O(nodes) a
pod. For the pods of one equivalence class (actors/cycle/runs.py) only the chosen node changes
from one pod to the next, so the tree keeps per range of rows the number of feasible rows, the
best total among them and how many rows have it, and answers the same walk and the same pick in
O(log nodes):

- :meth:`Ring.walk`: from ``start``, how many rows are examined until ``want`` fit (all of
  them when fewer fit), and how many fit among them: the start index moves on by the first;
- :meth:`Ring.best`: the best total among the feasible rows of that window and its tie count;
- :meth:`Ring.nth_best`: the ``j``-th of those tied rows in examination order (from ``start``,
  wrapping past the last row), the row ``selectHost``'s draw ``j`` picks.

A row that does not fit holds no total (:data:`NONE`). The tree is a list-backed complete
binary tree (leaf ``i`` at ``size + i``); built level by level with numpy, updated one row at
a time (a placement changes one row): the filter stage moves the counts when a re-judged row's
fit changes (:meth:`Ring.set_alive`), the score stage sets its total when it scores the row
again (:meth:`Ring.set_total`, which stops climbing where a range's best and ties stay), so
each path is walked once a row and the walk never reads a total.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["NONE", "Ring"]

NONE = -(2**62)
"""The total of a row that does not fit (below every weighted sum of scores)."""


class Ring:
    """Feasible counts and best totals over ``n`` rows in ring order.

    Args:
        alive: which rows fit (length ``n``).
        totals: each row's total (read where ``alive``); None: not known yet (every total
            :data:`NONE` until :meth:`set_totals`), which :meth:`walk` does not need.
    """

    def __init__(
        self, alive: npt.NDArray[np.bool_], totals: npt.NDArray[np.int64] | None = None
    ) -> None:
        self.n = n = len(alive)
        size = 1
        while size < max(n, 1):
            size *= 2
        self._size = size
        self._count: list[int] = []
        self._best: list[int] = []
        self._ties: list[int] = []
        self._last_window: tuple[tuple[int, int], list[int]] = ((-1, -1), [])
        self._build(alive, totals)

    def _build(self, alive: npt.NDArray[np.bool_], totals: npt.NDArray[np.int64] | None) -> None:
        size, n = self._size, self.n
        count = np.zeros(size, dtype=np.int64)
        count[:n] = alive
        best = np.full(size, NONE, dtype=np.int64)
        if totals is not None:
            best[:n] = np.where(alive, totals, NONE)
        ties = (best != NONE).astype(np.int64)
        # Levels from the leaves up; each list holds the level's nodes in order.
        counts, bests, tie_levels = [count], [best], [ties]
        while len(count) > 1:
            left_c, right_c = count[0::2], count[1::2]
            left_b, right_b = best[0::2], best[1::2]
            left_t, right_t = ties[0::2], ties[1::2]
            count = left_c + right_c
            best = np.maximum(left_b, right_b)
            ties = np.where(left_b == best, left_t, 0) + np.where(right_b == best, right_t, 0)
            ties[best == NONE] = 0
            counts.append(count)
            bests.append(best)
            tie_levels.append(ties)
        # Index 0 unused; the root at 1, the level of width w at [w, 2w).
        self._count = [0]
        self._best = [NONE]
        self._ties = [0]
        for c, b, t in zip(reversed(counts), reversed(bests), reversed(tie_levels), strict=True):
            self._count += c.tolist()
            self._best += b.tolist()
            self._ties += t.tolist()

    @property
    def feasible(self) -> int:
        """How many rows fit."""
        return self._count[1]

    def set_totals(self, alive: npt.NDArray[np.bool_], totals: npt.NDArray[np.int64]) -> None:
        """Rebuild with every row's fit and total (O(n), numpy)."""
        self._build(alive, totals)

    def set_row(self, row: int, alive: bool, total: int = NONE) -> None:
        """Row ``row`` now fits or not, with ``total`` (ignored when it does not fit)."""
        self.set_alive(row, alive)
        self.set_total(row, total if alive else NONE)

    def set_alive(self, row: int, alive: bool) -> None:
        """Row ``row`` now fits or not; its total is left as it was (what :meth:`walk`
        reads is up to date; :meth:`best` is not until :meth:`set_total` is told the row's
        total, or :data:`NONE` when it does not fit)."""
        i = self._size + row
        count = self._count
        step = (1 if alive else 0) - count[i]
        if step:
            # Only the counts on the leaf's path change, each by the same step.
            while i:
                count[i] += step
                i //= 2

    def set_total(self, row: int, total: int) -> None:
        """Row ``row``'s total (:data:`NONE`: it does not fit); the ranges above it are
        updated only as far as their best total or tie count changes."""
        i = self._size + row
        best, ties = self._best, self._ties
        if best[i] == total:
            return
        best[i] = total
        ties[i] = 0 if total == NONE else 1
        i //= 2
        while i:
            left = 2 * i
            b_left, b_right = best[left], best[left + 1]
            if b_left > b_right:
                b, t = b_left, ties[left]
            elif b_right > b_left:
                b, t = b_right, ties[left + 1]
            else:
                b, t = b_left, (ties[left] + ties[left + 1] if b_left != NONE else 0)
            if best[i] == b and ties[i] == t:
                return
            best[i], ties[i] = b, t
            i //= 2

    # ------------------------------------------------------------------ queries

    def _cover(self, a: int, b: int) -> list[int]:
        """The tree nodes that exactly cover rows ``[a, b)``, left to right."""
        left: list[int] = []
        right: list[int] = []
        lo, hi = a + self._size, b + self._size
        while lo < hi:
            if lo & 1:
                left.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                right.append(hi)
            lo //= 2
            hi //= 2
        left.extend(reversed(right))
        return left

    def spans(self, start: int, examined: int) -> list[tuple[int, int]]:
        """The rows ``examined`` rows from ``start`` cover: one span, or two when they wrap."""
        end = start + examined
        return [(start, end)] if end <= self.n else [(start, self.n), (0, end - self.n)]

    def _window_cover(self, start: int, examined: int) -> list[int]:
        """The tree nodes covering the window's spans, left to right in examination order;
        the last window's kept (:meth:`best` and :meth:`nth_best` read the same one)."""
        if self._last_window[0] != (start, examined):
            nodes = [node for a, b in self.spans(start, examined) for node in self._cover(a, b)]
            self._last_window = ((start, examined), nodes)
        return self._last_window[1]

    def walk(self, start: int, want: int) -> tuple[int, int]:
        """From row ``start``: (rows examined until ``want`` fit, or all ``n`` when fewer fit;
        how many of them fit). ``want`` >= 1."""
        total = self._count[1]
        if total < want:
            return self.n, total
        before = self._rank(start)
        # The ``want``-th row that fits from ``start`` on, wrapping past the last row.
        k = before + want if want <= total - before else want - (total - before)
        return (self._select(k) - start) % self.n + 1, want

    def _rank(self, row: int) -> int:
        """How many rows before ``row`` fit (the left siblings on the leaf's path)."""
        count = self._count
        i = self._size + row
        rank = 0
        while i > 1:
            if i & 1:
                rank += count[i - 1]
            i //= 2
        return rank

    def _select(self, k: int) -> int:
        """The row of the ``k``-th (from 1) row that fits; ``k`` <= :attr:`feasible`."""
        count, size = self._count, self._size
        node = 1
        while node < size:
            node *= 2
            if count[node] < k:
                k -= count[node]
                node += 1
        return node - size

    def best(self, start: int, examined: int) -> tuple[int, int]:
        """(the best total among the rows that fit in the window, how many have it);
        (:data:`NONE`, 0) when none fits."""
        top, ties = NONE, 0
        best, tie_counts = self._best, self._ties
        for node in self._window_cover(start, examined):
            value = best[node]
            if value > top:
                top, ties = value, tie_counts[node]
            elif value == top and value != NONE:
                ties += tie_counts[node]
        return top, ties

    def nth_best(self, start: int, examined: int, top: int, j: int) -> int:
        """The row of the ``j``-th (from 0) row with total ``top`` in the window, in
        examination order."""
        best, ties = self._best, self._ties
        for node in self._window_cover(start, examined):
            if best[node] != top:
                continue
            if ties[node] <= j:
                j -= ties[node]
                continue
            while node < self._size:
                node *= 2
                here = ties[node] if best[node] == top else 0
                if here <= j:
                    j -= here
                    node += 1
            return node - self._size
        raise IndexError(f"j: no tie {j} with total {top} in the window")
