"""Equivalence classes: pods with the same spec share their node-local filter verdicts.

Kubernetes counterpart: the v1.14 equivalence cache (``pkg/scheduler/core/equivalence``, since
removed upstream), which cached predicate results per equivalence class and node and
invalidated them on node and pod events. Podium keeps one verdict per class over all rows and
re-checks only the rows that changed since it was made.

A verdict is valid for another pod when every active predicate is *node-local* (it declares
:attr:`~podium.actors.framework.interface.FilterPlugin.node_local`: its answer for
a row depends only on the pod's spec and that row's NodeInfo: resources, ports, selectors,
taints, conditions) and the pod's spec encodes to the same bytes, ``spec.schedulingGroup`` left
out (which gang a pod belongs to is read by no predicate or priority). Predicates that look at other
nodes' pods or at other objects (inter-pod affinity, spreading, volumes) are not node-local;
a pod for which one of them is active (not SKIP) is filtered in full every time.

Rows change in place (:meth:`NodeColumns.update_row` stamps ``row_version``); a new node set
builds new columns with a new ``epoch``, which empties every verdict made on the old ones.
The changed rows are re-judged with the predicates' scalar forms, the reference the vector
forms are tested against, so a verdict patched row by row equals one computed afresh.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

import numpy as np
import numpy.typing as npt

from podium.actors.cycle.ring import Ring
from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import Code, FilterPlugin, Status, run_filter
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo

__all__ = ["Blame", "EquivalenceCache", "ScoreCache", "Verdict", "Window", "WindowNodes"]

Blame = tuple[str, npt.NDArray[np.bool_], list[tuple[str, npt.NDArray[np.bool_], Code]]]
"""A predicate's name, the rows it is blamed for, and (reason, rows giving it, code) entries
(a :data:`~podium.actors.framework.interface.ReasonMasks`)."""

CLASSES = 64
"""Verdicts kept (least recently used dropped first)."""

RINGS = 8
"""Verdicts that keep a ring (about 1.5 MB at 5000 nodes each; the least recently walked
one loses its ring and scores first; a verdict dropped or replaced gives its ring up)."""

SCALAR_ROWS = 16
"""Up to this many unknown map scores are computed row by row with the scalar form."""

PATCH_LIMIT = 64
"""Above this many changed rows a verdict is recomputed in full rather than patched."""


@dataclass(slots=True)
class Verdict:
    """Which rows pass every active predicate, and which predicate and reasons fail the rest.

    Attributes:
        alive: rows that pass.
        blamed: per predicate, the rows it rejected first and their reasons.
        epoch, version: the columns this verdict reflects (``NodeColumns.epoch`` and
            ``NodeColumns.version`` when it was made or last patched).
        ring: the rows that pass, and the class's totals, as a tree that walks and picks in
            O(log nodes) (:mod:`podium.actors.cycle.ring`); kept by the cache for classes
            whose every active predicate is node-local, patched with ``alive``.
        head: the active predicates and their metadata when every one is node-local (the
            ring's pods: the next pod of the class reuses them, ``FilterStage._ring_active``).
        dirty: rows re-judged since the score stage last brought ``scores`` up to date.
        scores: the score stage's per-class state over every row
            (``generic_scheduler.ClassScores``), None until a pod of the class is scored.
    """

    alive: npt.NDArray[np.bool_]
    blamed: list[Blame]
    epoch: int
    version: int
    ring: Ring | None = None
    head: list[tuple[FilterPlugin[Any], Any]] | None = None
    dirty: set[int] = field(default_factory=set)
    scores: Any = None


class EquivalenceCache:
    """Verdicts by equivalence class (the pod's encoded spec), least recently used dropped."""

    def __init__(self, size: int = CLASSES, rings: int = RINGS) -> None:
        self._size = size
        self._verdicts: OrderedDict[bytes, Verdict] = OrderedDict()
        self._rings = rings
        # The verdicts holding a ring, least recently walked first (by identity).
        self._with_ring: OrderedDict[int, Verdict] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._verdicts)

    def attach_ring(self, verdict: Verdict) -> Ring:
        """Give ``verdict`` a ring over its rows; past :data:`RINGS` of them, the least
        recently walked one drops its ring, scores and head (it is walked over lists again
        until given a new one)."""
        ring = verdict.ring = Ring(verdict.alive)
        self._with_ring[id(verdict)] = verdict
        while len(self._with_ring) > self._rings:
            self._release(next(iter(self._with_ring.values())))
        return ring

    def walked(self, verdict: Verdict) -> None:
        """``verdict``'s ring was walked: the last to lose it."""
        if id(verdict) in self._with_ring:
            self._with_ring.move_to_end(id(verdict))

    def _release(self, verdict: Verdict) -> None:
        """``verdict`` gives up its ring, scores and head (a dropped or replaced verdict does
        not keep a ring slot, nor its arrays, from a live class)."""
        if self._with_ring.pop(id(verdict), None) is not None:
            verdict.ring, verdict.scores, verdict.head = None, None, None
            verdict.dirty.clear()

    def peek(self, key: bytes) -> Verdict | None:
        """The class's verdict as kept (maybe behind the columns), or None; not counted."""
        return self._verdicts.get(key)

    def lookup(
        self,
        key: bytes,
        pod: PodInfo,
        cols: NodeColumns,
        active: list[tuple[FilterPlugin[Any], Any]],
        timing: list[list[Any]] | None = None,
    ) -> Verdict | None:
        """The class's verdict brought up to date with ``cols``, or None (compute it afresh).

        ``timing`` (a sampled attempt's): per predicate of ``active``, ``[seconds, rejected]``,
        to which the re-judge of the changed rows adds its time and whether it rejected one.
        """
        verdict = self._verdicts.get(key)
        if verdict is None or verdict.epoch != cols.epoch:
            self.misses += 1
            return None
        if verdict.version != cols.version:
            changed = cols.changed_since(verdict.version)
            if len(changed) > PATCH_LIMIT or not _patch(
                verdict, pod, cols.infos, changed, active, timing
            ):
                self._release(self._verdicts.pop(key))
                self.misses += 1
                return None
            verdict.version = cols.version
            ring = verdict.ring
            if ring is not None:
                # The walk reads the counts alone; the totals of the rows re-judged are set
                # when the score stage next scores them (``dirty``), the only reader of totals.
                alive = verdict.alive
                for row in changed:
                    ring.set_alive(row, bool(alive[row]))
                verdict.dirty.update(changed)
        self._verdicts.move_to_end(key)
        self.hits += 1
        return verdict

    def store(self, key: bytes, verdict: Verdict) -> Verdict:
        """Keep a copy of ``verdict`` (its arrays may be the plugins' or the columns' own);
        returns the copy."""
        replaced = self._verdicts.get(key)
        if replaced is not None:
            self._release(replaced)
        kept = self._verdicts[key] = Verdict(
            verdict.alive.copy(),
            [
                (name, rows.copy(), [(reason, mask.copy(), code) for reason, mask, code in masks])
                for name, rows, masks in verdict.blamed
            ],
            verdict.epoch,
            verdict.version,
        )
        self._verdicts.move_to_end(key)
        while len(self._verdicts) > self._size:
            self._release(self._verdicts.popitem(last=False)[1])
        return kept


def _patch(
    verdict: Verdict,
    pod: PodInfo,
    infos: list[NodeInfo],
    rows: list[int],
    active: list[tuple[FilterPlugin[Any], Any]],
    timing: list[list[Any]] | None = None,
) -> bool:
    """Re-judge ``rows`` (ascending) with the scalar forms; False when a predicate errs
    (recompute). ``timing``: see :meth:`EquivalenceCache.lookup`."""
    by_name = {name: (blame_rows, masks) for name, blame_rows, masks in verdict.blamed}
    n = len(verdict.alive)
    for row in rows:
        first: tuple[str, Status] | None = None
        for i, (plugin, meta) in enumerate(active):
            if timing is None:
                status = run_filter(plugin, pod, meta, infos[row])
            else:
                started = time.perf_counter()
                status = run_filter(plugin, pod, meta, infos[row])
                timing[i][0] += time.perf_counter() - started
                timing[i][1] = timing[i][1] or bool(status.reasons)
            if status.code is Code.ERROR:
                return False
            if status.reasons:
                first = (plugin.name, status)
                break
        for blame_rows, masks in by_name.values():
            blame_rows[row] = False
            for _, mask, _ in masks:
                mask[row] = False
        verdict.alive[row] = first is None
        if first is None:
            continue
        name, status = first
        if name not in by_name:
            by_name[name] = (np.zeros(n, dtype=bool), [])
            verdict.blamed.append((name, *by_name[name]))
        blame_rows, masks = by_name[name]
        blame_rows[row] = True
        # A reason may repeat (a node listing Ready=False twice is "not ready" twice): the
        # k-th occurrence sets the k-th mask carrying that reason, as the vector forms do. A
        # mask carries the status's code with the reason, so the row's code stays the status's.
        used: set[int] = set()
        for reason in status.reasons:
            index = next(
                (
                    i
                    for i, (known, _, code) in enumerate(masks)
                    if known == reason and code == status.code and i not in used
                ),
                None,
            )
            if index is None:
                index = len(masks)
                masks.append((reason, np.zeros(n, dtype=bool), status.code))
            used.add(index)
            masks[index][1][row] = True
    return True


@dataclass(slots=True)
class _Scores:
    raw: npt.NDArray[np.int64]
    valid: npt.NDArray[np.bool_]
    epoch: int
    version: int


class ScoreCache:
    """Map scores of node-local priorities by (class, priority), computed for a row once and
    again only after that row changed. The reduce step still runs per pod: it depends on which
    rows are feasible."""

    def __init__(self, size: int = CLASSES * 8) -> None:
        self._size = size
        self._scores: OrderedDict[tuple[bytes, int], _Scores] = OrderedDict()

    def raw(
        self,
        key: tuple[bytes, int],
        cols: NodeColumns,
        rows: npt.NDArray[np.intp],
        compute: Callable[[npt.NDArray[np.intp]], npt.NDArray[np.int64]],
        compute_one: Callable[[int], int],
    ) -> npt.NDArray[np.int64]:
        """Map scores for ``rows``; the ones not known yet come from ``compute(rows)`` (the
        vector form) or, for a few rows, ``compute_one(row)`` (the scalar form: a numpy call
        costs more than a handful of rows)."""
        entry = self._scores.get(key)
        if entry is None or entry.epoch != cols.epoch:
            entry = _Scores(
                np.zeros(cols.n, dtype=np.int64), np.zeros(cols.n, dtype=bool), cols.epoch, 0
            )
            entry.version = cols.version
            self._scores[key] = entry
            while len(self._scores) > self._size:
                self._scores.popitem(last=False)
        elif entry.version != cols.version:
            entry.valid[cols.row_version > entry.version] = False
            entry.version = cols.version
        self._scores.move_to_end(key)
        needed = rows[~entry.valid[rows]]
        if len(needed) > SCALAR_ROWS:
            entry.raw[needed] = compute(needed)
            entry.valid[needed] = True
        elif len(needed):
            for row in needed.tolist():
                entry.raw[row] = compute_one(row)
            entry.valid[needed] = True
        return entry.raw[rows]


T = TypeVar("T")


class _Listed(Sequence[T]):
    """A sequence whose items are listed on first read (:meth:`_listed`), its length known
    before."""

    __slots__ = ()

    def _listed(self) -> list[T]:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        return self._listed()[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self._listed())


class Window(_Listed[int]):
    """The feasible rows of one attempt as the class's ring gives them: ``examined`` rows from
    ``start``, ``fits`` of which fit, without listing them.

    The score stage picks among them on the ring (``ScoreStage.run``); anything else that
    reads them (extenders, explain, a priority whose reduce step needs the window) gets the
    rows in examination order, listed on first read. Valid until the verdict is next patched
    (the next pod's filter stage): the scheduler decides one pod at a time.
    """

    __slots__ = ("_rows", "examined", "fits", "start", "verdict", "version")

    def __init__(self, verdict: Verdict, start: int, examined: int, fits: int) -> None:
        self.verdict = verdict
        self.start = start
        self.examined = examined
        self.fits = fits
        self.version = verdict.version
        self._rows: list[int] | None = None

    def _listed(self) -> list[int]:
        """The feasible rows in examination order."""
        if self._rows is None:
            verdict = self.verdict
            if verdict.version != self.version or verdict.ring is None:
                raise RuntimeError("the class's verdict changed since this window was walked")
            alive = verdict.alive
            self._rows = [
                i
                for a, b in verdict.ring.spans(self.start, self.examined)
                for i in (np.flatnonzero(alive[a:b]) + a).tolist()
            ]
        return self._rows

    def __len__(self) -> int:
        return self.fits

    def __eq__(self, other: object) -> bool:
        """Equal to the list of the same rows in the same order (as the list walk gives)."""
        if isinstance(other, Window):
            other = other._listed()
        return isinstance(other, list) and self._listed() == other

    __hash__ = None  # type: ignore[assignment]


class WindowNodes(_Listed[NodeInfo]):
    """A :class:`Window`'s NodeInfos in examination order, listed on first read (what
    ``pre_score`` is handed as the feasible nodes: most priorities never read them)."""

    __slots__ = ("_infos", "_nodes", "_window")

    def __init__(self, window: Window, infos: list[NodeInfo]) -> None:
        self._window = window
        self._infos = infos
        self._nodes: list[NodeInfo] | None = None

    def _listed(self) -> list[NodeInfo]:
        if self._nodes is None:
            infos = self._infos
            self._nodes = [infos[i] for i in self._window]
        return self._nodes

    def __len__(self) -> int:
        return len(self._window)
