"""One scheduling decision: filter, score, select a host (the v1.14 generic scheduler).

Kubernetes counterpart: pkg/scheduler/core/generic_scheduler.go@v1.14 (``Schedule``,
``findNodesThatFit``, ``podFitsOnNode``, ``PrioritizeNodes``, ``numFeasibleNodesToFind``), with
the later random tie-break (docs/differences.md). This module is a sans-IO core: the filter
pool and scoring actors drive it, ``podium simulate`` drives it through them.

Filtering walks the snapshot's nodes (zone-interleaved node-tree order) from the carried start
index and stops once ``num_feasible_nodes_to_find`` nodes fit; the next pod starts where this
one stopped. A node is rejected at its first failing predicate (every failing predicate with
``always_check_all_predicates``). When every predicate that matters for the pod has a vector
form, the whole walk is a few numpy operations over the node columns: "first failing
predicate" is the mask of rows still alive when that predicate fails them, and the early stop
is a cumulative count over the rotated feasibility mask. Otherwise the walk falls back to the
per-node loop, still using the vector masks it has. Both paths give identical answers.

Nominated pods (v1.14 ``podFitsOnNode`` with ``addNominatedPods``): when pods nominated by an
earlier preemption, of priority equal to or higher than the pod's (the pod itself aside), wait
for some nodes, the walk takes the per-node loop and evaluates each of those nodes twice: first
as if those pods already ran there (the predicates' metadata recomputed over a copy of the
snapshot holding that node's changed NodeInfo, so a nominated pod's anti-affinity counts), then,
only when that passes, as the node is (the vector masks serve). The node fits only if both
passes do; its reasons are those of the failing pass. Every other node is evaluated once, as
without nominated pods; with none the vector walk runs unchanged.
"""

from __future__ import annotations

import functools
import operator
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import msgspec
import numpy as np
import numpy.typing as npt

from podium.actors.cycle.equivalence import (
    Blame,
    EquivalenceCache,
    ScoreCache,
    Verdict,
    Window,
    WindowNodes,
)
from podium.actors.cycle.ring import NONE
from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    NO_NODES_AVAILABLE,
    SKIP,
    SUCCESS,
    ArrayNormalizePlugin,
    Code,
    FilterPlugin,
    PredicateError,
    ReasonMasks,
    ScorePlugin,
    Status,
    VectorFilterPlugin,
    VectorScorePlugin,
    fit_error_message,
    run_filter,
    run_filter_columns,
    run_score,
    run_score_columns,
    status_of,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins.volume_binding import pod_passes_basic_checks
from podium.protocol.objects import enc_hook

if TYPE_CHECKING:
    from podium.actors.framework.nominated import NominatedPods

__all__ = [
    "FilterStage",
    "PluginObserver",
    "ScoreStage",
    "num_feasible_nodes_to_find",
]

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 50

PluginObserver = Callable[[str, str, str, float], None]
"""``observe(plugin, extension_point, status, seconds)``: one plugin's time in one attempt
(``scheduler_plugin_execution_duration_seconds``). The stages take one only for the sampled
attempts; without one they read no clock. A sampled attempt decides as any other (on its
class's ring when the class keeps one), and each plugin is timed doing what it did in that
attempt: over every row, or over the rows a class's ring re-judged or re-scored (none when
no row changed: its time is then 0)."""


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """How many feasible nodes to look for before stopping (v1.14 numFeasibleNodesToFind).

    Below 100 nodes, or at 100 %, every node. Otherwise ``percentage`` of the nodes, or when it
    is 0 the adaptive ``50 - nodes/125`` with a floor of 5 %; never fewer than 100.
    """
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return num_all_nodes
    adaptive = percentage
    if adaptive <= 0:
        adaptive = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125
        adaptive = max(adaptive, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * adaptive // 100, MIN_FEASIBLE_NODES_TO_FIND)


def _aggregate(errors: Counter[str]) -> str:
    """Per-node predicate errors as v1.14 reports them (``CreateAggregateFromMessageCountMap``):
    ``"<message> (repeated N times)"`` when N > 1, several joined as ``[a, b]`` (sorted here,
    where Go's map order was random)."""
    parts = sorted(f"{m} (repeated {n} times)" if n > 1 else m for m, n in errors.items())
    return parts[0] if len(parts) == 1 else f"[{', '.join(parts)}]"


_SPEC_ENCODER = msgspec.msgpack.Encoder(enc_hook=enc_hook)
"""Encodes a pod's spec as its equivalence class key."""


def _class_key(pod: PodInfo) -> bytes:
    """A pod's equivalence class (:mod:`podium.actors.cycle.equivalence`): its spec, less
    ``schedulingGroup``, which no predicate or priority reads (the pod group a pod belongs to
    is the gang cycle's, :mod:`podium.actors.cycle.gang_cycle`). So the members of different
    gangs with the same spec share one class, as the pods of a ReplicaSet do, instead of each
    gang's first member filtering and scoring every node afresh (issue 24: at 5000 nodes that
    cost gangs of 8 about a fifth of their throughput)."""
    spec = pod.pod.spec
    if spec.scheduling_group is not None:
        return _SPEC_ENCODER.encode(msgspec.structs.replace(spec, scheduling_group=None))
    return pod.encoded_spec()


@dataclass(slots=True)
class _Walk:
    """The filter walk's tallies, built up in place by the walk alone and then made into one
    :class:`ScheduleResult` (a value once made): what the examined nodes said."""

    evaluated: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    failed_plugins: set[str] = field(default_factory=set)
    examined: list[str] = field(default_factory=list)
    failed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unresolvable: set[str] = field(default_factory=set)


class FilterStage:
    """The filter half of an attempt: predicates in order from the carried start index.

    The filter actor owns one. ``run`` answers the examined nodes' reasons and the
    feasible rows; it advances the start index by the nodes examined unless ``dry``.

    Args:
        filters: predicates in the order they run.
        percentage_of_nodes_to_score: 0 (adaptive) to 100.
        always_check_all_predicates: record every failing predicate, not only the first.

    Pods with the same spec share the node-local predicates' verdicts
    (:mod:`~podium.actors.cycle.equivalence`). When every predicate active for a pod is
    node-local, its class's verdict keeps a ring (:mod:`~podium.actors.cycle.ring`): the walk
    costs O(log n), the feasible rows are a
    :class:`~podium.actors.cycle.equivalence.Window` the score stage picks from on the same
    ring, and a placement re-judges only the row it changed.
    """

    use_ring = True
    """Walk and pick on the class's ring; False: the list walk every pod (the reference the
    property tests compare the ring with, tests/property/test_equivalence.py)."""

    def __init__(
        self,
        filters: Sequence[FilterPlugin[Any]],
        *,
        percentage_of_nodes_to_score: int = 0,
        always_check_all_predicates: bool = False,
    ) -> None:
        self.filters = list(filters)
        self.percentage = percentage_of_nodes_to_score
        self.check_all = always_check_all_predicates
        self.next_start_index = 0
        # isinstance against a runtime-checkable Protocol costs ~25 us: decide once, not per pod.
        self._vector_filters = {id(p) for p in self.filters if isinstance(p, VectorFilterPlugin)}
        self._node_local = {id(p) for p in self.filters if p.node_local}
        # The predicates a ring's pod must see SKIP it (_ring_active), listed once.
        self._not_node_local = [p for p in self.filters if not p.node_local]
        self.equivalence = EquivalenceCache()

    def run(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        explain: bool = False,
        dry: bool = False,
        observe: PluginObserver | None = None,
        nominated: NominatedPods | None = None,
    ) -> tuple[ScheduleResult, Sequence[int]]:
        """Filter ``pod`` over ``snapshot`` (never mutated).

        ``observe`` (sampled attempts) is told each predicate's time over the walk (on a
        class's ring, over the rows re-judged), with status Unschedulable when it rejected a
        node it judged, else Success. ``nominated``: the pods
        nominated to nodes (the queue's copy-on-write view, only read); the nodes holding
        some of equal or higher priority than ``pod`` are evaluated with v1.14's two passes.

        Returns:
            The result so far (reasons, counts; ``message`` set when the attempt already
            failed: FitError text, or the error with ``error`` set) and the feasible rows in
            examination order (empty when the attempt failed): on a class's ring a
            :class:`~podium.actors.cycle.equivalence.Window`, which lists them only when read
            and which :class:`ScoreStage` picks from on the ring.
        """
        basic = pod_passes_basic_checks(pod.pod, snapshot.objects)
        if basic is not None:
            # v1.14 Schedule: a missing or terminating claim fails the attempt before any predicate.
            return ScheduleResult(message=basic, error=True), []
        n = len(snapshot)
        if n == 0:
            return ScheduleResult(message=NO_NODES_AVAILABLE), []
        saved = self.next_start_index
        try:
            walk, feasible = self._find_nodes_that_fit(
                pod, snapshot, explain=explain, observe=observe, nominated=nominated
            )
        except PredicateError as exc:
            return ScheduleResult(message=str(exc), error=True), []
        finally:
            if dry:
                self.next_start_index = saved
        # The walk's tallies become the result whole, once: it is a value from here on.
        result = ScheduleResult(
            message=None if feasible else fit_error_message(n, walk.reasons),
            evaluated=walk.evaluated,
            feasible=len(feasible),
            reasons=walk.reasons,
            failed_plugins=frozenset(walk.failed_plugins),
            examined=tuple(walk.examined),
            failed=walk.failed,
            unresolvable=frozenset(walk.unresolvable),
            feasible_nodes=(
                tuple(snapshot.node_infos[i].name for i in feasible) if explain else ()
            ),
        )
        return result, feasible

    # ------------------------------------------------------------------ filter

    def _active_filters(
        self, pod: PodInfo, snapshot: Snapshot
    ) -> list[tuple[FilterPlugin[Any], Any]]:
        active = []
        for plugin in self.filters:
            meta = plugin.pre_filter(pod, snapshot)
            if meta is not SKIP:
                active.append((plugin, meta))
        return active

    @staticmethod
    def _nominated_rows(
        pod: PodInfo, snapshot: Snapshot, nominated: NominatedPods | None
    ) -> dict[int, list[PodInfo]]:
        """Row -> the pods nominated to that node that ``addNominatedPods`` would add for
        ``pod`` (priority >= the pod's, not the pod itself); nodes without any are absent.

        v1.14 runs the second pass whenever the node has nominated pods, even when none was
        added; it then repeats the first pass exactly, so only nodes with added pods matter.
        """
        if nominated is None or not len(nominated):
            return {}
        rows: dict[int, list[PodInfo]] = {}
        index: dict[str, int] | None = None
        for node, other in nominated:
            if other.priority < pod.priority or other.key == pod.key:
                continue
            info = snapshot.get(node)
            if info is None or info.node is None:
                # A node the snapshot lacks is never walked (v1.14: "only in tests").
                continue
            if index is None:
                index = snapshot.columns.index
            rows.setdefault(index[node], []).append(other)
        return rows

    def _find_nodes_that_fit(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        explain: bool,
        observe: PluginObserver | None,
        nominated: NominatedPods | None = None,
    ) -> tuple[_Walk, Sequence[int]]:
        n = len(snapshot)
        start = self.next_start_index % n
        if not self.filters:
            # v1.14 findNodesThatFit: with no predicates every node is feasible.
            order = [(start + i) % n for i in range(n)]
            examined = [snapshot.node_infos[i].name for i in order] if explain else []
            return _Walk(evaluated=n, examined=examined), order
        want = num_feasible_nodes_to_find(n, self.percentage)
        key = _class_key(pod)
        active = None
        if self.use_ring and not explain:
            active = self._ring_active(key, pod, snapshot)
        if active is None:
            active = self._active_filters(pod, snapshot)
        with_nominated = self._nominated_rows(pod, snapshot, nominated)
        if not with_nominated and all(id(p) in self._vector_filters for p, _ in active):
            walk, feasible = self._fit_vector(
                pod, snapshot, active, start, want, key, explain=explain, observe=observe
            )
        else:
            walk, feasible = self._fit_loop(
                pod,
                snapshot,
                active,
                start,
                want,
                explain=explain,
                observe=observe,
                with_nominated=with_nominated,
            )
        self.next_start_index = (start + walk.evaluated) % n
        return walk, feasible

    def _ring_active(
        self, key: bytes, pod: PodInfo, snapshot: Snapshot
    ) -> list[tuple[FilterPlugin[Any], Any]] | None:
        """The active predicates of a pod whose class keeps a ring, without making the
        node-local ones' metadata again: their answers depend on the spec alone, so the
        class's (``Verdict.head``) serve; None unless the class has a ring and every other
        predicate skips this pod (then :meth:`_active_filters` decides)."""
        verdict = self.equivalence.peek(key)
        if verdict is None or verdict.head is None:
            return None
        for plugin in self._not_node_local:
            if plugin.pre_filter(pod, snapshot) is not SKIP:
                return None
        return verdict.head

    def _fit_vector(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        active: list[tuple[FilterPlugin[Any], Any]],
        start: int,
        want: int,
        key: bytes,
        *,
        explain: bool,
        observe: PluginObserver | None,
    ) -> tuple[_Walk, Sequence[int]]:
        cols = snapshot.columns
        n = cols.n
        # The node-local predicates at the head of the active list share a verdict with every
        # pod of the same spec; the others (inter-pod affinity, spreading, volumes), which
        # come after them in the canonical order, run on top of it for each pod.
        local = 0
        if not self.check_all:
            while local < len(active) and id(active[local][0]) in self._node_local:
                local += 1
        if local:
            head, tail = active[:local], active[local:]
            verdict = None
            if not explain:
                # A sampled attempt's predicates are timed as they run: here on the rows the
                # class's verdict re-judges (each predicate's seconds and whether it rejected
                # one of them), in _verdict on every row.
                timing = [[0.0, False] for _ in head] if observe is not None else None
                verdict = self.equivalence.lookup(key, pod, cols, head, timing)
                if verdict is not None and observe is not None and timing is not None:
                    for (plugin, _), (seconds, rejected) in zip(head, timing, strict=True):
                        status = "Unschedulable" if rejected else "Success"
                        observe(plugin.name, "Filter", status, seconds)
            if verdict is None:
                verdict = self._verdict(pod, cols, head, observe)
                # An explained attempt computes its own verdict; it does not take the place
                # of the class's, whose ring and scores the next pod reuses.
                if not explain or self.equivalence.peek(key) is None:
                    verdict = self.equivalence.store(key, verdict)
            if tail:
                verdict = self._verdict(pod, cols, tail, observe, after=verdict)
            elif self.use_ring and not explain:
                # Every active predicate is node-local: the class's ring walks in O(log n).
                verdict.head = head
                return self._fit_ring(verdict, start, want)
        else:
            verdict = self._verdict(pod, cols, active, observe)
        alive, blamed = verdict.alive, verdict.blamed
        # The walk starts at ``start`` and wraps: rotate by slicing (np.roll copies twice).
        fit_in_order = np.concatenate((alive[start:], alive[:start])) if start else alive
        counts = np.cumsum(fit_in_order)
        total = int(counts[-1])
        evaluated = n if total < want else int(np.searchsorted(counts, want)) + 1
        # The examined rows are one span, or two when the walk wraps past the last row.
        end = start + evaluated
        spans = [(start, end)] if end <= n else [(start, n), (0, end - n)]
        feasible = [i for a, b in spans for i in (np.flatnonzero(alive[a:b]) + a).tolist()]
        walk = _Walk(evaluated=evaluated)
        _count_reasons(walk, blamed, spans)
        if explain:
            examined = np.concatenate([np.arange(a, b) for a, b in spans])
            walk.examined = [cols.names[i] for i in examined.tolist()]
            for i in examined[~fit_in_order[:evaluated]].tolist():
                reasons: list[str] = []
                code = Code.UNSCHEDULABLE
                for _, rows, masks in blamed:
                    if rows[i]:
                        for reason, mask, given in masks:
                            if mask[i]:
                                reasons.append(reason)
                                code = max(code, given)
                walk.failed[cols.names[i]] = tuple(reasons)
                if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    walk.unresolvable.add(cols.names[i])
        return walk, feasible

    def _fit_ring(self, verdict: Verdict, start: int, want: int) -> tuple[_Walk, Window]:
        """The walk of :meth:`_fit_vector` on the class's ring (:mod:`~podium.actors.cycle.ring`):
        the rows examined and how many fit in O(log n), the feasible rows as a
        :class:`~podium.actors.cycle.equivalence.Window` the score stage picks from; the
        reasons counted over the same spans."""
        ring = verdict.ring
        if ring is None:
            ring = self.equivalence.attach_ring(verdict)
        else:
            self.equivalence.walked(verdict)
        evaluated, count = ring.walk(start, want)
        walk = _Walk(evaluated=evaluated)
        _count_reasons(walk, verdict.blamed, ring.spans(start, evaluated))
        return walk, Window(verdict, start, evaluated, count)

    def _verdict(
        self,
        pod: PodInfo,
        cols: NodeColumns,
        active: list[tuple[FilterPlugin[Any], Any]],
        observe: PluginObserver | None,
        *,
        after: Verdict | None = None,
    ) -> Verdict:
        """Every active predicate's vector form over every row, in order; ``after`` the
        verdict of the predicates before them (not changed: a new verdict is returned)."""
        if after is None:
            alive = np.ones(cols.n, dtype=bool)
            blamed: list[Blame] = []
        else:
            alive, blamed = after.alive.copy(), list(after.blamed)
        for plugin, meta in active:
            vector = cast("VectorFilterPlugin[Any]", plugin)
            if observe is None:
                masks = run_filter_columns(vector, pod, meta, cols)
            else:
                started = time.perf_counter()
                masks = run_filter_columns(vector, pod, meta, cols)
                seconds = time.perf_counter() - started
                rejected = any(bool(m.any()) for _, m, _ in masks)
                observe(plugin.name, "Filter", "Unschedulable" if rejected else "Success", seconds)
            if not masks:
                continue
            fails = np.logical_or.reduce([m for _, m, _ in masks])
            rows = fails if self.check_all else fails & alive
            alive &= ~fails
            # Only what some row is blamed for is kept: most predicates reject no node, and
            # counting their reasons per pod would cost a numpy call each.
            if rows.any():
                blamed.append((plugin.name, rows, [e for e in masks if (e[1] & rows).any()]))
        return Verdict(alive, blamed, cols.epoch, cols.version)

    def _fit_loop(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        active: list[tuple[FilterPlugin[Any], Any]],
        start: int,
        want: int,
        *,
        explain: bool,
        observe: PluginObserver | None,
        with_nominated: dict[int, list[PodInfo]] | None = None,
    ) -> tuple[_Walk, list[int]]:
        n = len(snapshot)
        infos = snapshot.node_infos
        # Vector predicates answer for every row up front; the others run per node.
        checks: list[tuple[FilterPlugin[Any], Any, ReasonMasks | None]] = []
        # Sampled attempts only: seconds per predicate, summed over the walk.
        spent: dict[str, float] = {}
        for plugin, meta in active:
            if id(plugin) in self._vector_filters:
                vector = cast("VectorFilterPlugin[Any]", plugin)
                started = time.perf_counter() if observe is not None else 0.0
                masks = run_filter_columns(vector, pod, meta, snapshot.columns)
                if observe is not None:
                    spent[plugin.name] = time.perf_counter() - started
                checks.append((plugin, meta, masks))
            else:
                checks.append((plugin, meta, None))
        walk = _Walk()
        feasible: list[int] = []
        errors: Counter[str] = Counter()
        evaluated = 0
        timing = spent if observe is not None else None
        # The snapshot copy the first passes swap nodes into (made on first need).
        work: Snapshot | None = None
        for step in range(n):
            i = (start + step) % n
            evaluated += 1
            if explain:
                walk.examined.append(infos[i].name)
            status = SUCCESS
            erred = False
            added = with_nominated.get(i) if with_nominated else None
            if added:
                # v1.14 podFitsOnNode, first pass: as if the nominated pods ran there.
                if work is None:
                    work = snapshot.copy()
                status, erred = self._first_pass(
                    pod, i, infos[i], added, work, walk, errors, timing
                )
            if not erred and not status.reasons:
                status, erred = self._node_reasons(pod, checks, i, infos[i], walk, errors, timing)
            if erred:
                continue
            if status.reasons:
                walk.reasons.update(status.reasons)
                if explain:
                    walk.failed[infos[i].name] = status.reasons
                    if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        walk.unresolvable.add(infos[i].name)
                continue
            feasible.append(i)
            if len(feasible) >= want:
                break
        if observe is not None:
            for name, seconds in spent.items():
                rejected = name in walk.failed_plugins
                observe(name, "Filter", "Unschedulable" if rejected else "Success", seconds)
        if errors:
            raise PredicateError(_aggregate(errors))
        walk.evaluated = evaluated
        return walk, feasible

    def _node_reasons(
        self,
        pod: PodInfo,
        checks: Sequence[tuple[FilterPlugin[Any], Any, ReasonMasks | None]],
        row: int,
        info: NodeInfo,
        walk: _Walk,
        errors: Counter[str],
        spent: dict[str, float] | None,
    ) -> tuple[Status, bool]:
        """The predicates ``checks`` on one node, in order (v1.14 ``podFitsOnNode``): a vector
        predicate's status is read from its masks at ``row``; the others run on ``info``
        (their seconds added to ``spent`` on sampled attempts).

        Returns:
            (the node's status: the reasons it fails, in order, and the highest code among the
            failing predicates'; whether a predicate erred: its error is counted in ``errors``,
            and v1.14 fails the attempt once the walk is over).
        """
        reasons: list[str] = []
        code = Code.SUCCESS
        for plugin, meta, row_masks in checks:
            if row_masks is not None:
                status = status_of(row_masks, row)
            else:
                status = _run_filter_timed(plugin, pod, meta, info, spent)
                if status.code is Code.ERROR:
                    errors["; ".join(status.reasons)] += 1
                    return SUCCESS, True
            if status.reasons:
                reasons.extend(status.reasons)
                code = max(code, status.code)
                walk.failed_plugins.add(plugin.name)
                if not self.check_all:
                    break
        return (Status(code, tuple(reasons)) if reasons else SUCCESS), False

    def _first_pass(
        self,
        pod: PodInfo,
        row: int,
        info: NodeInfo,
        added: list[PodInfo],
        work: Snapshot,
        walk: _Walk,
        errors: Counter[str],
        spent: dict[str, float] | None,
    ) -> tuple[Status, bool]:
        """The predicates on ``info`` with the nominated pods ``added`` (v1.14
        ``addNominatedPods``): their metadata recomputed over ``work`` holding the changed
        node (v1.14 updates its metadata with ``meta.AddPod``), which is put back after.

        Returns:
            What :meth:`_node_reasons` returns for the changed node.

        Raises:
            PredicateError: a predicate's metadata cannot be computed (fails the attempt).
        """
        changed = info.clone()
        for other in added:
            changed.add_pod(other)
        work.replace_node_info(changed)
        try:
            active = self._active_filters(pod, work)
        finally:
            work.replace_node_info(info)
        # No masks: the vector forms answer for the snapshot's rows, not for the changed node.
        checks = [(plugin, meta, None) for plugin, meta in active]
        return self._node_reasons(pod, checks, row, changed, walk, errors, spent)


def _count_reasons(walk: _Walk, blamed: Sequence[Blame], spans: Sequence[tuple[int, int]]) -> None:
    """Add to ``walk`` the reasons of the rows in ``spans`` each predicate is blamed for."""
    for name, rows, masks in blamed:
        for reason, mask, _ in masks:
            count = sum(int(np.count_nonzero(mask[a:b] & rows[a:b])) for a, b in spans)
            if count:
                walk.reasons[reason] += count
                walk.failed_plugins.add(name)


def _run_filter_timed(
    plugin: FilterPlugin[Any],
    pod: PodInfo,
    meta: Any,
    node: NodeInfo,
    spent: dict[str, float] | None,
) -> Status:
    """:func:`run_filter`, its seconds added to ``spent[plugin.name]`` unless ``spent`` is
    ``None`` (only sampled attempts read the clock)."""
    if spent is None:
        return run_filter(plugin, pod, meta, node)
    started = time.perf_counter()
    status = run_filter(plugin, pod, meta, node)
    seconds = time.perf_counter() - started
    spent[plugin.name] = spent.get(plugin.name, 0.0) + seconds
    return status


def _add_extender_scores(
    totals: npt.NDArray[np.int64],
    infos: Sequence[NodeInfo],
    extender_scores: tuple[Mapping[str, int], Mapping[str, Mapping[str, int]]],
    explain: _Explained | None,
) -> None:
    """Add the extenders' weighted scores to ``totals`` (hosts not among ``infos`` are
    ignored, as v1.14 sums only the feasible nodes' entries)."""
    combined, per_extender = extender_scores
    for j, info in enumerate(infos):
        totals[j] += combined.get(info.name, 0)
        if explain is not None:
            scores = explain.scores.setdefault(info.name, {})
            for extender, by_node in per_extender.items():
                if info.name in by_node:
                    scores[f"extender {extender}"] = by_node[info.name]
            explain.totals[info.name] = int(totals[j])


def _reduces_row_by_row(
    plugin: ScorePlugin[Any], pod: PodInfo, meta: Any, raw: npt.NDArray[np.int64]
) -> bool:
    """:meth:`ScorePlugin.reduces_row_by_row`, False for a priority without it."""
    ask = getattr(plugin, "reduces_row_by_row", None)
    return bool(ask(pod, meta, raw)) if ask is not None else False


@dataclass(slots=True)
class ClassScores:
    """The score stage's state for one class on its verdict (``Verdict.scores``).

    Attributes:
        stage: the ScoreStage that made it (another, after a reload, starts afresh).
        metas: each priority's metadata for the class's pods.
        by_row: every priority's reduce step reads no other row (``reduces_row_by_row``), so
            the totals the ring holds are good in any window; False: each pod prioritizes its
            own window.
    """

    stage: ScoreStage
    metas: list[Any]
    by_row: bool
    reduced: dict[tuple[int, int], int] = field(default_factory=dict)
    """(priority's index, map score) -> its reduced score, for rows scored alone."""


@dataclass(slots=True)
class _Explained:
    """Every feasible node's scores and total, built up by the score stage (explain only)
    before they go into the result."""

    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)


class ScoreStage:
    """The score half of an attempt: weighted priorities over the feasible nodes, then a host.

    The score actor owns one. Ties between equal best totals are broken at random with
    ``rng`` (seeded for repeatable runs), as later Kubernetes versions do.

    Args:
        scorers: (priority, weight) pairs.
        rng: the tie-break's random source.

    Node-local map scores are kept per class of pods with the same spec
    (:class:`~podium.actors.cycle.equivalence.ScoreCache`).
    """

    def __init__(
        self,
        scorers: Sequence[tuple[ScorePlugin[Any], int]],
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.scorers = list(scorers)
        self.rng = rng if rng is not None else random.Random()
        self._vector_scorers = {id(p) for p, _ in self.scorers if isinstance(p, VectorScorePlugin)}
        # Priorities whose reduce step also runs on arrays (``normalize_columns``).
        self._normalize_columns: dict[int, Callable[..., npt.NDArray[np.int64]]] = {
            id(p): p.normalize_columns
            for p, _ in self.scorers
            if id(p) in self._vector_scorers and isinstance(p, ArrayNormalizePlugin)
        }
        self._node_local = {id(p) for p, _ in self.scorers if p.node_local}
        # Per priority in order, whether it is node-local (its class metadata is kept).
        self._local_flags = [id(p) in self._node_local for p, _ in self.scorers]
        self.classes = ScoreCache()

    def run(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        result: ScheduleResult,
        feasible: Sequence[int],
        *,
        explain: bool = False,
        observe: PluginObserver | None = None,
        extender_scores: tuple[Mapping[str, int], Mapping[str, Mapping[str, int]]] | None = None,
    ) -> ScheduleResult:
        """Pick the host among ``feasible`` rows.

        Returns:
            ``result`` with ``node`` (and with ``explain`` the scores and totals) set: a new
            result, ``result`` itself unchanged; or an error result.

        ``observe`` (sampled attempts) is told each priority's time (map and reduce; on a
        class's ring, its metadata and the rows scored again).
        ``extender_scores``: what the extenders' prioritize verbs gave (actors/cycle/extenders):
        node -> the sum of score x weight, added to the totals (v1.14 ``PrioritizeNodes``'
        ``combinedScores``), and extender -> node -> score (shown with ``explain``).
        """
        if (
            isinstance(feasible, Window)
            and not explain
            and extender_scores is None
            and self.scorers
        ):
            node = self._pick_on_ring(pod, snapshot, feasible, observe)
            if node is not None:
                return msgspec.structs.replace(result, node=node)
        # itemgetter builds the list in C (a comprehension costs ~25 us for 500 rows).
        infos = (
            list(operator.itemgetter(*feasible)(snapshot.node_infos))
            if len(feasible) > 1
            else [snapshot.node_infos[i] for i in feasible]
        )
        if len(infos) == 1 and not explain:
            # v1.14: "When only one node after predicate, just use it."
            return msgspec.structs.replace(result, node=infos[0].name)
        shown = _Explained() if explain else None
        try:
            totals = self._prioritize(pod, snapshot, infos, list(feasible), shown, observe)
        except PredicateError as exc:
            return ScheduleResult(message=str(exc), error=True)
        if extender_scores is not None:
            _add_extender_scores(totals, infos, extender_scores, shown)
        best = np.flatnonzero(totals == totals.max())
        pick = int(best[0]) if len(best) == 1 else int(best[self.rng.randrange(len(best))])
        if shown is None:
            return msgspec.structs.replace(result, node=infos[pick].name)
        return msgspec.structs.replace(
            result, node=infos[pick].name, scores=shown.scores, totals=shown.totals
        )

    # ------------------------------------------------------------------ the class's ring

    def _pick_on_ring(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        window: Window,
        observe: PluginObserver | None = None,
    ) -> str | None:
        """The host ``selectHost`` picks among ``window``'s rows, read off the class's ring in
        O(log n) with the same draw; None when the class's scores cannot be kept per row (a
        reduce step that depends on the window, a priority that erred): the caller then
        prioritizes the window as usual.

        The class keeps every feasible row's total (``ClassScores``); a row the filter stage
        re-judged since (the node a pod was folded onto) is scored again alone. A priority's
        scores are kept per row only while :meth:`ScorePlugin.reduces_row_by_row` says its
        reduce step reads no other row, and only for pods whose metadata equals the class's
        (node-local priorities' depends on the spec alone, the class's key; the others' is
        made again for each pod and compared).

        ``observe`` (sampled attempts) is told, once the host is picked here, each priority's
        time in this attempt: its metadata made and the rows it scored (none: its class's
        metadata kept, no row changed); a pick that falls back observes nothing here.
        """
        verdict = window.verdict
        ring = verdict.ring
        if ring is None or verdict.version != window.version:
            raise RuntimeError("the class's verdict changed since this window was walked")
        n = ring.n
        if window.fits == 1:
            # v1.14: "When only one node after predicate, just use it" (no draw).
            examined, _ = ring.walk(window.start, 1)
            return snapshot.node_infos[(window.start + examined - 1) % n].name
        timing = [0.0] * len(self.scorers) if observe is not None else None
        try:
            scores = self._class_scores(pod, snapshot, window, timing)
        except PredicateError:
            return None
        if scores is None:
            return None
        top, ties = ring.best(window.start, window.examined)
        j = self.rng.randrange(ties) if ties > 1 else 0
        if observe is not None and timing is not None:
            for (plugin, _), seconds in zip(self.scorers, timing, strict=True):
                observe(plugin.name, "Score", "Success", seconds)
        return snapshot.node_infos[ring.nth_best(window.start, window.examined, top, j)].name

    def _class_scores(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        window: Window,
        timing: list[float] | None = None,
    ) -> ClassScores | None:
        """The class's per-row totals, up to date on ``window.verdict``'s ring; None when a
        priority's reduce step reads the window for this class. ``timing``: each priority's
        seconds here are added to its entry."""
        verdict = window.verdict
        kept: ClassScores | None = verdict.scores
        metas: list[Any] = []
        nodes = WindowNodes(window, snapshot.node_infos)
        reuse = kept.metas if kept is not None and kept.stage is self else None
        for i, (plugin, _) in enumerate(self.scorers):
            if reuse is not None and self._local_flags[i]:
                metas.append(reuse[i])
            elif timing is None:
                metas.append(plugin.pre_score(pod, snapshot, nodes))
            else:
                started = time.perf_counter()
                metas.append(plugin.pre_score(pod, snapshot, nodes))
                timing[i] += time.perf_counter() - started
        if kept is None or kept.stage is not self or not _same_metas(kept.metas, metas):
            kept = verdict.scores = self._score_class(pod, snapshot, verdict, metas, timing)
            verdict.dirty.clear()
        elif verdict.dirty and kept.by_row:
            kept.by_row = self._score_rows(
                pod, snapshot, verdict, kept, sorted(verdict.dirty), timing
            )
            verdict.dirty.clear()
        return kept if kept.by_row else None

    def _score_class(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        verdict: Verdict,
        metas: list[Any],
        timing: list[float] | None = None,
    ) -> ClassScores:
        """Every feasible row's total for a class (O(n) numpy), set on the ring."""
        cols = snapshot.columns
        rows = np.flatnonzero(verdict.alive)
        infos = (
            list(operator.itemgetter(*rows.tolist())(cols.infos))
            if len(rows) > 1
            else [cols.infos[i] for i in rows.tolist()]
        )
        totals = np.zeros(cols.n, dtype=np.int64)
        by_row = True
        key: bytes | None = None
        for i, ((plugin, weight), meta) in enumerate(zip(self.scorers, metas, strict=True)):
            started = time.perf_counter() if timing is not None else 0.0
            if meta is SKIP:
                raw = np.zeros(len(rows), dtype=np.int64)
            elif id(plugin) in self._vector_scorers:
                raw, key = self._map_columns(plugin, pod, meta, cols, rows, key)
            else:
                raw = np.asarray(run_score(plugin, pod, meta, infos), dtype=np.int64)
            if not _reduces_row_by_row(plugin, pod, meta, raw):
                by_row = False
                break
            totals[rows] += self._reduce(plugin, pod, meta, infos, raw) * weight
            if timing is not None:
                timing[i] += time.perf_counter() - started
        kept = ClassScores(self, metas, by_row)
        if by_row:
            assert verdict.ring is not None
            verdict.ring.set_totals(verdict.alive, totals)
        return kept

    def _score_rows(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        verdict: Verdict,
        kept: ClassScores,
        rows: list[int],
        timing: list[float] | None = None,
    ) -> bool:
        """Score ``rows`` (re-judged by the filter stage) again, each alone, onto the ring;
        False when a row's map score makes some priority's reduce read the window.
        ``timing``: each priority's seconds are added to its entry."""
        ring = verdict.ring
        assert ring is not None
        infos = snapshot.columns.infos
        reduced = kept.reduced
        for row in rows:
            if not verdict.alive[row]:
                ring.set_total(row, NONE)
                continue
            info = infos[row]
            total = 0
            for i, ((plugin, weight), meta) in enumerate(
                zip(self.scorers, kept.metas, strict=True)
            ):
                started = time.perf_counter() if timing is not None else 0.0
                raw = 0 if meta is SKIP else plugin.score(pod, meta, info)
                # A reduce step that reads no other row gives a row a function of its map
                # score (reduces_row_by_row's contract): one per distinct score and priority.
                score = reduced.get((i, raw))
                if score is None:
                    one = np.array([raw], dtype=np.int64)
                    if not _reduces_row_by_row(plugin, pod, meta, one):
                        return False
                    score = reduced[(i, raw)] = int(self._reduce(plugin, pod, meta, [info], one)[0])
                total += score * weight
                if timing is not None:
                    timing[i] += time.perf_counter() - started
            ring.set_total(row, total)
        return True

    def _map_columns(
        self,
        plugin: ScorePlugin[Any],
        pod: PodInfo,
        meta: Any,
        cols: NodeColumns,
        rows: npt.NDArray[np.intp],
        key: bytes | None,
    ) -> tuple[npt.NDArray[np.int64], bytes | None]:
        """A vector priority's map scores for ``rows`` (a node-local one's kept per class in
        :attr:`classes`), and the pod's class key (``key``, encoded here on first need)."""
        vector = cast("VectorScorePlugin[Any]", plugin)
        if id(plugin) not in self._node_local:
            return vector.score_columns(pod, meta, cols, rows), key
        if key is None:
            key = _class_key(pod)
        infos_by_row = cols.infos
        raw = self.classes.raw(
            (key, id(plugin)),
            cols,
            rows,
            functools.partial(vector.score_columns, pod, meta, cols),
            lambda row: plugin.score(pod, meta, infos_by_row[row]),
        )
        return raw, key

    def _reduce(
        self,
        plugin: ScorePlugin[Any],
        pod: PodInfo,
        meta: Any,
        infos: list[NodeInfo],
        raw: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        normalize_columns = self._normalize_columns.get(id(plugin))
        if normalize_columns is not None:
            return normalize_columns(pod, meta, infos, raw)
        return np.asarray(plugin.normalize(pod, meta, infos, raw.tolist()), dtype=np.int64)

    # ------------------------------------------------------------------ score

    def _prioritize(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        infos: list[NodeInfo],
        rows: list[int],
        explain: _Explained | None,
        observe: PluginObserver | None,
    ) -> npt.NDArray[np.int64]:
        totals = np.zeros(len(infos), dtype=np.int64)
        if not self.scorers:
            # v1.14 PrioritizeNodes: no priorities means EqualPriority for every node.
            totals += 1
            if explain is not None:
                for info in infos:
                    explain.scores[info.name] = {}
                    explain.totals[info.name] = 1
            return totals
        per_plugin: list[tuple[str, list[int]]] = []
        row_array = np.asarray(rows, dtype=np.intp)
        key: bytes | None = None  # the pod's class, encoded when a cached priority needs it
        for plugin, weight in self.scorers:
            started = time.perf_counter() if observe is not None else 0.0
            meta = plugin.pre_score(pod, snapshot, infos)
            normalize_columns = self._normalize_columns.get(id(plugin))
            if normalize_columns is not None:
                # The array path: no Python list per priority (the common case).
                if meta is SKIP:
                    columns = np.zeros(len(infos), dtype=np.int64)
                else:
                    columns, key = self._map_columns(
                        plugin, pod, meta, snapshot.columns, row_array, key
                    )
                array = normalize_columns(pod, meta, infos, columns)
                if observe is not None:
                    observe(plugin.name, "Score", "Success", time.perf_counter() - started)
                totals += array * weight
                if explain is not None:
                    per_plugin.append((plugin.name, array.tolist()))
                continue
            if id(plugin) in self._vector_scorers:
                vector = cast("VectorScorePlugin[Any]", plugin)
                raw = run_score_columns(vector, pod, meta, snapshot.columns, row_array).tolist()
            else:
                raw = run_score(plugin, pod, meta, infos)
            scores = plugin.normalize(pod, meta, infos, raw)
            if observe is not None:
                observe(plugin.name, "Score", "Success", time.perf_counter() - started)
            totals += np.asarray(scores, dtype=np.int64) * weight
            if explain is not None:
                per_plugin.append((plugin.name, scores))
        if explain is not None:
            for j, info in enumerate(infos):
                explain.scores[info.name] = {name: int(s[j]) for name, s in per_plugin}
                explain.totals[info.name] = int(totals[j])
        return totals


def _same_metas(kept: Sequence[Any], made: Sequence[Any]) -> bool:
    """Whether the priorities' pre-score metadata ``made`` for this pod equals what ``kept``
    was scored with. Metadata holding arrays (a spreading matrix) cannot say it is equal
    (numpy answers an array, whose truth raises): such metadata counts as changed."""
    if len(kept) != len(made):
        return False
    for a, b in zip(kept, made, strict=True):
        if a is b:
            continue
        try:
            if a != b:
                return False
        except ValueError:
            return False
    return True
