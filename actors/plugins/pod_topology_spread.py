"""EvenPodsSpread and EvenPodsSpreadPriority: Kubernetes' PodTopologySpread, on the 0-10 scale.

Adopted from later Kubernetes on purpose (BRIEF.md, "Precise rules"; docs/differences.md).
Kubernetes sources (release-1.19/1.20, the framework plugin):

- pkg/scheduler/framework/plugins/podtopologyspread/filtering.go: ``calPreFilterState``,
  ``Filter``, ``ErrReasonConstraintsNotMatch``, ``ErrReasonNodeLabelNotMatch``;
- .../podtopologyspread/scoring.go: ``initPreScoreState``, ``PreScore``, ``Score``,
  ``NormalizeScore``, ``topologyNormalizingWeight``, ``scoreForCount``;
- .../podtopologyspread/common.go: ``filterTopologySpreadConstraints``,
  ``nodeLabelsMatchSpreadConstraints``, ``countPodsMatchSelector``;
- the legacy pkg/scheduler/algorithm/priorities/even_pods_spread.go@v1.16 (MaxPriority 10),
  read for the 0-10 scale; its formula is *not* the one followed (see "Score").

Names: ``EvenPodsSpread`` (predicate) and ``EvenPodsSpreadPriority`` (priority), both aliased
``PodTopologySpread``; neither is in the default sets. No cluster-level default constraints.

Constraints: a pod's ``topologySpreadConstraints`` with ``whenUnsatisfiable: DoNotSchedule``
drive the filter, those with ``ScheduleAnyway`` the score. A constraint's pods are the existing
pods in the incoming pod's namespace, not being deleted, matching its ``labelSelector`` (absent:
none; ``{}``: all). A node *counts* when it has a Node object, matches the incoming pod's
nodeSelector and required node affinity, and carries every (filter's or score's) constraint's
topology key.

Filter. Per constraint, the matching pods are summed per topology value over the counting
nodes; those values are the constraint's domains; ``minimum`` is the smallest domain count
(2**31-1 when there is no domain). A node fails at the first constraint, in order, whose key it
lacks (``ERR_REASON_NODE_LABEL_NOT_MATCH``, unresolvable) or for which
``count(node's value) + self_match - minimum > maxSkew`` (``ERR_REASON_CONSTRAINTS_NOT_MATCH``),
``self_match`` being 1 when the incoming pod matches the constraint's selector.

Score. Kubernetes 1.19's formula with ``framework.MaxNodeScore`` (100) replaced by 10:

- feasible nodes lacking a soft constraint's key are *ignored*: map 0, final 0;
- per constraint, ``weight = ln(size + 2)``, ``size`` being the number of distinct values of its
  key among the feasible, non-ignored nodes (for ``kubernetes.io/hostname``: their number);
- map = ``int64(sum(count * weight + (maxSkew - 1)))`` (float64, truncated as Go's 1.19/1.20
  ``int64(score)``; later releases round), where ``count`` is the matching pods in the node's
  domain over the counting nodes (for ``kubernetes.io/hostname``: on the node itself);
- reduce over the non-ignored nodes: ``10 * (max + min - score) // max`` (Go integer division),
  or 10 for all when ``max == 0``.

A pod without soft constraints skips the priority (``pre_score`` answers SKIP): every node 0,
as later Kubernetes (whose PreScore returns Skip) and the legacy v1.16 priority give; 1.19 gave
every node the maximum. The legacy v1.16 reduce (``10 * (total - count - min) / (max - min)``,
no weights, no maxSkew) is not used.

Differences from Kubernetes 1.19, all at the edges: domains are counted per constraint, as
later releases do (1.19 pooled the counts of two constraints naming the same topology key);
every node is checked against the pod's node affinity on its own (1.19 counted the pods of a
non-matching node whose topology value some matching node shared); a row without a Node object
is judged as a node without labels (1.19: an error); an invalid label selector raises
:class:`PredicateError` (1.19: an error status). Preemption and nominated pods recompute
``pre_filter`` over the changed snapshot (Podium's protocol) instead of 1.19's
``AddPod``/``RemovePod`` updates, with the same counts.

Cost: a node's matching-pod counts are kept per NodeInfo object (snapshots never mutate a
NodeInfo) and per selector list, so only the nodes that changed since the last pod with the same
selectors have their pods visited. When the snapshot's node columns are built (the scheduling
path), ``pre_filter``/``pre_score`` are numpy over them: an identity check of the rows, the
counts as a rows x constraints matrix, ``bincount`` over ``NodeColumns.label`` codes (about 1 ms
a pod at 5000 nodes and 20000 pods, warm). Otherwise (a snapshot copy checked by preemption)
they walk the nodes once. ``filter``/``score`` are lookups; the vector forms numpy gathers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

import numpy as np

from podium.actors.framework.interface import (
    MAX_PRIORITY,
    SKIP,
    SUCCESS,
    PluginArgs,
    PredicateError,
    ReasonMasks,
    Skip,
    Status,
    VectorFilterPlugin,
    VectorScorePlugin,
    unschedulable,
)
from podium.actors.plugins import names
from podium.actors.plugins.node_selector import PodMatchNodeSelector, node_constraints
from podium.protocol.labels import (
    Selector,
    label_selector_as_selector,
    label_selector_is_valid,
    label_selector_matches,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot
    from podium.protocol.objects import Pod

__all__ = [
    "DO_NOT_SCHEDULE",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "FACTORIES",
    "LABEL_HOSTNAME",
    "NAME",
    "NO_DOMAIN_MINIMUM",
    "PRIORITY_NAME",
    "SCHEDULE_ANYWAY",
    "DomainCounts",
    "EvenPodsSpread",
    "EvenPodsSpreadPriority",
    "PreFilterMeta",
    "PreScoreMeta",
    "SpreadConstraint",
    "hard_constraints_select",
    "normalize_spread_scores",
    "spread_constraints",
]

NAME = names.EVEN_PODS_SPREAD
PRIORITY_NAME = names.EVEN_PODS_SPREAD_PRIORITY

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
LABEL_HOSTNAME = "kubernetes.io/hostname"
"""``v1.LabelHostname``: a constraint on it counts the node's own pods when scoring."""

NO_DOMAIN_MINIMUM = 2**31 - 1
"""``newCriticalPaths``' ``math.MaxInt32``: the minimum of a constraint with no domain."""

Action = Literal["DoNotSchedule", "ScheduleAnyway"]


# --------------------------------------------------------------------------- constraints


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One topology spread constraint of the incoming pod (``topologySpreadConstraint``)."""

    max_skew: int
    topology_key: str
    selector: Selector


def spread_constraints(pod: PodInfo, action: Action) -> tuple[SpreadConstraint, ...]:
    """``filterTopologySpreadConstraints``: the pod's constraints with ``action``, in order.

    Raises:
        PredicateError: a constraint's label selector is not well formed.
    """
    found: list[SpreadConstraint] = []
    for c in pod.pod.spec.topology_spread_constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = c.label_selector
        if selector is not None and not label_selector_is_valid(selector):
            raise PredicateError(
                f"pod {pod.key} has an invalid label selector in a topology spread constraint "
                f"(topologyKey {c.topology_key!r})"
            )
        found.append(
            SpreadConstraint(c.max_skew, c.topology_key, label_selector_as_selector(selector))
        )
    return tuple(found)


def hard_constraints_select(unschedulable: Pod, assigned: PodInfo) -> bool:
    """Whether a DoNotSchedule constraint of ``unschedulable`` counts ``assigned`` (same
    namespace, selected); the queue moves such pods when ``assigned`` is bound."""
    namespace = unschedulable.metadata.namespace or "default"
    if assigned.namespace != namespace:
        return False
    return any(
        c.when_unsatisfiable == DO_NOT_SCHEDULE
        and label_selector_matches(c.label_selector, assigned.labels)
        for c in unschedulable.spec.topology_spread_constraints
    )


# --------------------------------------------------------------------------- counting


_CountEntry = tuple["NodeInfo", tuple[int, ...]]


class _SpecCounts:
    """Matching pods per selector on each node, for one namespace and one selector list.

    Counts are kept per NodeInfo object (a snapshot never mutates a NodeInfo; a changed node is
    a new object), so a node's pods are visited again only after it changed: per object for
    the scalar walk, and as a matrix over the rows of the node columns for the vector one (rows
    stamped by ``NodeColumns.update_row`` since the last count are counted again).
    """

    __slots__ = ("_infos", "_matrix", "_new", "_old", "_seen", "_version", "namespace", "selectors")

    def __init__(self, namespace: str, selectors: tuple[Selector, ...]) -> None:
        self.namespace = namespace
        self.selectors = selectors
        self._old: dict[int, _CountEntry] = {}
        self._new: dict[int, _CountEntry] = {}
        # The rows' NodeInfos the matrix was counted over (kept alive, so equal ids mean the
        # same objects), their ids, and the matrix (rows x selectors).
        self._infos: list[NodeInfo] = []
        self._matrix: npt.NDArray[np.int64] | None = None
        # The columns (epoch, rows) and version the matrix was counted at.
        self._seen: tuple[int, int] = (0, 0)
        self._version = 0

    def begin(self) -> None:
        """Start a pass: per-object counts the last pass did not use are forgotten after it."""
        self._old, self._new = self._new, {}

    def count(self, info: NodeInfo) -> tuple[int, ...]:
        """``countPodsMatchSelector`` of every selector over ``info``'s pods."""
        key = id(info)
        hit = self._new.get(key) or self._old.get(key)
        if hit is not None and hit[0] is info:
            self._new[key] = hit
            return hit[1]
        counts = [0] * len(self.selectors)
        namespace = self.namespace
        for p in info.pods:
            # Terminating pods are bypassed (kubernetes #87621).
            if p.namespace != namespace or p.pod.metadata.deletion_timestamp is not None:
                continue
            labels = p.labels
            for i, selector in enumerate(self.selectors):
                if selector.matches(labels):
                    counts[i] += 1
        result = tuple(counts)
        self._new[key] = (info, result)
        return result

    def matrix(self, cols: NodeColumns) -> tuple[npt.NDArray[np.int64], list[NodeInfo]]:
        """Per row of ``cols`` (rows x selectors), the counts, and the NodeInfos counted per
        row; neither is changed once returned."""
        infos = cols.infos
        k = len(self.selectors)
        if self._matrix is not None and self._seen == (cols.epoch, cols.n):
            # The same columns: only rows stamped since the last count can differ.
            changed = np.flatnonzero(cols.row_version > self._version).tolist()
            if not changed:
                return self._matrix, self._infos
            matrix = self._matrix.copy()
            for r in changed:
                info = infos[r]
                matrix[r] = self.count(info) if info.pods else (0,) * k
        else:
            matrix = np.zeros((cols.n, k), dtype=np.int64)
            for r in np.flatnonzero(cols.pod_count > 0).tolist():
                matrix[r] = self.count(infos[r])
        self._infos, self._matrix = list(infos), matrix
        self._seen, self._version = (cols.epoch, cols.n), cols.version
        return matrix, self._infos


class _CountCache:
    """The :class:`_SpecCounts` of the last few selector lists (least recently used out)."""

    _LIMIT = 16

    def __init__(self) -> None:
        self._specs: dict[object, _SpecCounts] = {}

    def counts(self, namespace: str, constraints: Sequence[SpreadConstraint]) -> _SpecCounts:
        """The counts for ``constraints``' selectors in ``namespace``, a new pass begun."""
        selectors = tuple(c.selector for c in constraints)
        spec = (namespace, tuple(s.key for s in selectors))
        found = self._specs.pop(spec, None)
        if found is None:
            found = _SpecCounts(namespace, selectors)
        self._specs[spec] = found
        while len(self._specs) > self._LIMIT:
            del self._specs[next(iter(self._specs))]
        found.begin()
        return found


class DomainCounts:
    """A constraint's matching pods per topology value (its domains), and their minimum.

    Built from a dict by the scalar walk or from a table over a label's codes by the vector
    one; both answer :meth:`count` (0 for a value that is no domain) and :meth:`table`.
    """

    __slots__ = ("_counts", "_present", "_table", "_vocab", "minimum")

    def __init__(
        self,
        counts: dict[str, int] | None = None,
        *,
        vocab: dict[str, int] | None = None,
        table: npt.NDArray[np.int64] | None = None,
        present: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        self._counts = counts
        self._vocab = vocab
        self._table = table
        self._present = present
        if counts is not None:
            self.minimum = min(counts.values(), default=NO_DOMAIN_MINIMUM)
        else:
            assert table is not None and present is not None
            self.minimum = int(table[present].min()) if present.any() else NO_DOMAIN_MINIMUM

    def count(self, value: str) -> int:
        """The matching pods in the domain ``value`` (0 when it is no domain)."""
        if self._counts is not None:
            return self._counts.get(value, 0)
        assert self._vocab is not None and self._table is not None
        code = self._vocab.get(value)
        return 0 if code is None else int(self._table[code])

    def as_dict(self) -> dict[str, int]:
        """Domain value -> matching pods."""
        if self._counts is not None:
            return dict(self._counts)
        assert self._vocab is not None and self._table is not None and self._present is not None
        return {v: int(self._table[c]) for v, c in self._vocab.items() if self._present[c]}

    def table(self, vocab: dict[str, int]) -> npt.NDArray[np.int64]:
        """The counts over ``vocab``'s codes, with a last 0 slot for code -1 (label absent)."""
        if self._table is not None and self._vocab is vocab:
            return self._table
        counts = self.as_dict()
        table = np.zeros(len(vocab) + 1, dtype=np.int64)
        for value, n in counts.items():
            code = vocab.get(value)
            if code is not None:
                table[code] = n
        return table


def _walk_domains(
    pod: PodInfo,
    infos: Iterable[NodeInfo],
    constraints: Sequence[SpreadConstraint],
    spec: _SpecCounts,
    wanted: Sequence[set[str] | None] | None = None,
) -> list[DomainCounts | None]:
    """The scalar walk: each constraint's domains over the counting nodes.

    Args:
        pod: the incoming pod (its node selector and required affinity choose the nodes).
        infos: the nodes to walk (all of the snapshot's).
        constraints: the constraints; a counting node carries all of their keys.
        spec: counts a node's matching pods per constraint.
        wanted: per constraint, the only values to count (``None``: that constraint is not
            counted by domain); without it every counting node's value is a domain, even at 0.
    """
    keys = [c.topology_key for c in constraints]
    counts: list[dict[str, int]] = [{} for _ in constraints]
    if wanted is not None:
        for i, wanted_values in enumerate(wanted):
            if wanted_values is not None:
                counts[i] = dict.fromkeys(wanted_values, 0)
    # PodMatchesNodeSelectorAndAffinityTerms, when the pod has a nodeSelector or node affinity.
    matcher = node_constraints(pod.pod)
    zeros = (0,) * len(constraints)
    for info in infos:
        if info.node is None:
            continue
        labels = info.labels
        values = [labels.get(k) for k in keys]
        if None in values:
            continue
        if not matcher.is_empty and not matcher.matches(labels, info.name):
            continue
        per_node = spec.count(info) if info.pods else zeros
        for i, value in enumerate(values):
            domain = counts[i]
            assert value is not None
            if wanted is None:
                domain[value] = domain.get(value, 0) + per_node[i]
            elif value in domain:
                domain[value] += per_node[i]
    if wanted is None:
        return [DomainCounts(d) for d in counts]
    return [DomainCounts(d) if w is not None else None for d, w in zip(counts, wanted, strict=True)]


def _counting_rows(
    pod: PodInfo, cols: NodeColumns, keys: Sequence[str], node_selector: PodMatchNodeSelector
) -> npt.NDArray[np.bool_]:
    """The vector form of the walk's node test: a Node object, every key, the pod's
    nodeSelector and required node affinity."""
    ok = cols.has_node.copy()
    for key in keys:
        ok &= cols.label(key)[0] >= 0
    c = node_constraints(pod.pod)
    if c.is_empty:
        return ok
    if cols.has_node.all():
        for _, fails in node_selector.filter_columns(pod, c, cols):
            ok &= ~fails
        return ok
    # Some row lacks a Node object, which the vector form cannot be asked about: the rows
    # still counting (each with a Node object) are tested one by one.
    for r in np.flatnonzero(ok).tolist():
        info = cols.infos[r]
        ok[r] = c.matches(info.labels, info.name)
    return ok


def _column_domains(
    cols: NodeColumns,
    counting: npt.NDArray[np.bool_],
    constraints: Sequence[SpreadConstraint],
    matrix: npt.NDArray[np.int64],
) -> list[DomainCounts]:
    """The vector walk: each constraint's domains over the ``counting`` rows."""
    found: list[DomainCounts] = []
    for i, c in enumerate(constraints):
        codes, vocab = cols.label(c.topology_key)
        picked = codes[counting]  # every counting row carries the key: codes >= 0
        size = len(vocab) + 1
        weights = matrix[counting, i].astype(np.float64)
        table = np.bincount(picked, weights=weights, minlength=size).astype(np.int64)
        present = np.zeros(size, dtype=bool)
        present[picked] = True
        found.append(DomainCounts(vocab=vocab, table=table, present=present))
    return found


# --------------------------------------------------------------------------- filter


@dataclass(frozen=True, slots=True)
class PreFilterMeta:
    """What ``pre_filter`` learns about one pod (``preFilterState``).

    Attributes:
        constraints: the pod's DoNotSchedule constraints, in order.
        self_match: per constraint, 1 when the pod matches its own selector, else 0.
        domains: per constraint, the matching pods per domain and their minimum
            (:data:`NO_DOMAIN_MINIMUM` when there is no domain).
    """

    constraints: tuple[SpreadConstraint, ...]
    self_match: tuple[int, ...]
    domains: tuple[DomainCounts, ...]


class EvenPodsSpread(VectorFilterPlugin[PreFilterMeta]):
    """The PodTopologySpread filter (see the module docstring)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self._cache = _CountCache()
        self._node_selector = PodMatchNodeSelector(PluginArgs(names.MATCH_NODE_SELECTOR))

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> PreFilterMeta | Skip:
        """``calPreFilterState``; :data:`SKIP` for a pod without DoNotSchedule constraints.

        Uses the node columns when the snapshot has them built, else walks the nodes.

        Raises:
            PredicateError: a constraint's label selector is not well formed.
        """
        constraints = spread_constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return SKIP
        spec = self._cache.counts(pod.namespace, constraints)
        domains: Sequence[DomainCounts | None]
        if snapshot.has_columns:
            cols = snapshot.columns
            keys = [c.topology_key for c in constraints]
            counting = _counting_rows(pod, cols, keys, self._node_selector)
            domains = _column_domains(cols, counting, constraints, spec.matrix(cols)[0])
        else:
            domains = _walk_domains(pod, snapshot.node_infos, constraints, spec)
        return PreFilterMeta(
            constraints=constraints,
            self_match=tuple(int(c.selector.matches(pod.labels)) for c in constraints),
            domains=tuple(d for d in domains if d is not None),
        )

    def filter(self, pod: PodInfo, meta: PreFilterMeta, node: NodeInfo) -> Status:
        labels = node.labels
        for c, self_match, domains in zip(
            meta.constraints, meta.self_match, meta.domains, strict=True
        ):
            value = labels.get(c.topology_key)
            if value is None:
                return unschedulable(ERR_REASON_NODE_LABEL_NOT_MATCH, resolvable=False)
            if domains.count(value) + self_match - domains.minimum > c.max_skew:
                return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return SUCCESS

    def filter_columns(self, pod: PodInfo, meta: PreFilterMeta, cols: NodeColumns) -> ReasonMasks:
        n = cols.n
        decided = np.zeros(n, dtype=bool)
        missing_label = np.zeros(n, dtype=bool)
        too_skewed = np.zeros(n, dtype=bool)
        for c, self_match, domains in zip(
            meta.constraints, meta.self_match, meta.domains, strict=True
        ):
            codes, vocab = cols.label(c.topology_key)
            missing = codes < 0
            skew = domains.table(vocab)[codes] + (self_match - domains.minimum)
            over = ~missing & (skew > c.max_skew)
            # The scalar form stops at the first failing constraint.
            missing_label |= missing & ~decided
            too_skewed |= over & ~decided
            decided |= missing | over
        return [
            (ERR_REASON_NODE_LABEL_NOT_MATCH, missing_label),
            (ERR_REASON_CONSTRAINTS_NOT_MATCH, too_skewed),
        ]


# --------------------------------------------------------------------------- score


@dataclass(frozen=True, slots=True)
class PreScoreMeta:
    """What ``pre_score`` learns about one pod (``preScoreState``).

    Attributes:
        constraints: the pod's ScheduleAnyway constraints, in order.
        ignored: the feasible nodes lacking one of their keys (scored 0).
        domains: per constraint, the matching pods per topology value over the counting
            nodes, good for the values of the feasible non-ignored nodes (``None`` for a
            hostname constraint, which counts the node's own pods).
        weights: per constraint, ``topologyNormalizingWeight``.
        spec: counts a node's own matching pods (hostname constraints).
        matrix: those counts per row of ``cols``, when the vector walk made them.
        counted: the NodeInfo each row of ``matrix`` counted.
        cols: the columns ``matrix`` belongs to.
    """

    constraints: tuple[SpreadConstraint, ...]
    ignored: frozenset[str]
    domains: tuple[DomainCounts | None, ...]
    weights: tuple[float, ...]
    spec: _SpecCounts
    matrix: npt.NDArray[np.int64] | None = None
    counted: Sequence[NodeInfo] = ()
    cols: NodeColumns | None = None

    def own(self, node: NodeInfo) -> tuple[int, ...]:
        """Per constraint, the matching pods on ``node`` itself."""
        if self.matrix is not None and self.cols is not None:
            r = self.cols.index.get(node.name)
            if r is not None and r < len(self.counted) and self.counted[r] is node:
                return tuple(int(v) for v in self.matrix[r])
        return self.spec.count(node) if node.pods else (0,) * len(self.constraints)

    def own_counts(
        self, cols: NodeColumns, rows: npt.NDArray[np.intp], skip: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.int64]:
        """Per row (rows x constraints), the matching pods on the node itself."""
        if self.matrix is not None and self.cols is cols:
            return self.matrix[rows]
        own = np.zeros((len(rows), len(self.constraints)), dtype=np.int64)
        infos = cols.infos
        for j in np.flatnonzero((cols.pod_count[rows] > 0) & ~skip).tolist():
            own[j] = self.spec.count(infos[int(rows[j])])
        return own


def normalize_spread_scores(
    scores: Sequence[int], ignored: Sequence[bool], max_score: int = MAX_PRIORITY
) -> list[int]:
    """``NormalizeScore`` with ``framework.MaxNodeScore`` replaced by ``max_score``.

    Ignored nodes get 0; the others ``max_score * (max + min - score) // max`` over the
    non-ignored scores, or ``max_score`` when their maximum is 0.
    """
    kept = [s for s, skip in zip(scores, ignored, strict=True) if not skip]
    if not kept:
        return [0] * len(scores)
    low, high = min(kept), max(kept)
    if high == 0:
        return [0 if skip else max_score for skip in ignored]
    # Every operand is >= 0 (high + low - s >= low), so Go's truncation is Python's floor.
    return [
        0 if skip else max_score * (high + low - s) // high
        for s, skip in zip(scores, ignored, strict=True)
    ]


def _feasible_rows(cols: NodeColumns, nodes: Sequence[NodeInfo]) -> npt.NDArray[np.intp] | None:
    """The rows of ``nodes`` in ``cols``, or ``None`` when some node is not one of its rows."""
    index, infos = cols.index, cols.infos
    rows = np.empty(len(nodes), dtype=np.intp)
    for j, info in enumerate(nodes):
        r = index.get(info.name)
        if r is None or infos[r] is not info:
            return None
        rows[j] = r
    return rows


class EvenPodsSpreadPriority(VectorScorePlugin[PreScoreMeta]):
    """The PodTopologySpread score on the 0-10 scale (see the module docstring)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self._cache = _CountCache()
        self._node_selector = PodMatchNodeSelector(PluginArgs(names.MATCH_NODE_SELECTOR))

    def pre_score(
        self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]
    ) -> PreScoreMeta | Skip:
        """``initPreScoreState`` and ``PreScore``; :data:`SKIP` without soft constraints.

        Uses the node columns when the snapshot has them built, else walks the nodes.

        Raises:
            PredicateError: a constraint's label selector is not well formed.
        """
        constraints = spread_constraints(pod, SCHEDULE_ANYWAY)
        if not constraints or not nodes:
            return SKIP
        spec = self._cache.counts(pod.namespace, constraints)
        if snapshot.has_columns:
            cols = snapshot.columns
            rows = _feasible_rows(cols, nodes)
            if rows is not None:
                return self._pre_score_columns(pod, cols, rows, nodes, constraints, spec)
        return self._pre_score_walk(pod, snapshot, nodes, constraints, spec)

    @staticmethod
    def _pre_score_walk(
        pod: PodInfo,
        snapshot: Snapshot,
        nodes: Sequence[NodeInfo],
        constraints: tuple[SpreadConstraint, ...],
        spec: _SpecCounts,
    ) -> PreScoreMeta:
        keys = [c.topology_key for c in constraints]
        ignored: set[str] = set()
        wanted: list[set[str] | None] = [
            None if c.topology_key == LABEL_HOSTNAME else set() for c in constraints
        ]
        for info in nodes:
            labels = info.labels
            values = [labels.get(k) for k in keys]
            if None in values:
                ignored.add(info.name)
                continue
            for domain, value in zip(wanted, values, strict=True):
                if domain is not None and value is not None:
                    domain.add(value)
        scored = len(nodes) - len(ignored)
        weights = tuple(math.log((len(w) if w is not None else scored) + 2) for w in wanted)
        if any(w is not None for w in wanted):
            domains = _walk_domains(pod, snapshot.node_infos, constraints, spec, wanted)
        else:
            domains = [None] * len(constraints)
        return PreScoreMeta(constraints, frozenset(ignored), tuple(domains), weights, spec)

    def _pre_score_columns(
        self,
        pod: PodInfo,
        cols: NodeColumns,
        rows: npt.NDArray[np.intp],
        nodes: Sequence[NodeInfo],
        constraints: tuple[SpreadConstraint, ...],
        spec: _SpecCounts,
    ) -> PreScoreMeta:
        keys = [c.topology_key for c in constraints]
        feasible_codes = [cols.label(k)[0][rows] for k in keys]
        skipped = np.zeros(len(rows), dtype=bool)
        for codes in feasible_codes:
            skipped |= codes < 0
        kept = ~skipped
        scored = int(np.count_nonzero(kept))
        weights = tuple(
            math.log(
                (scored if c.topology_key == LABEL_HOSTNAME else len(np.unique(codes[kept]))) + 2
            )
            for c, codes in zip(constraints, feasible_codes, strict=True)
        )
        matrix, counted = spec.matrix(cols)
        domains: list[DomainCounts | None] = [None] * len(constraints)
        by_value = [i for i, c in enumerate(constraints) if c.topology_key != LABEL_HOSTNAME]
        if by_value:
            counting = _counting_rows(pod, cols, keys, self._node_selector)
            chosen = [constraints[i] for i in by_value]
            found = _column_domains(cols, counting, chosen, matrix[:, by_value])
            for i, d in zip(by_value, found, strict=True):
                domains[i] = d
        ignored = frozenset(nodes[j].name for j in np.flatnonzero(skipped).tolist())
        return PreScoreMeta(
            constraints, ignored, tuple(domains), weights, spec, matrix, counted, cols
        )

    def score(self, pod: PodInfo, meta: PreScoreMeta, node: NodeInfo) -> int:
        """The map step: ``int64(sum(count * weight + maxSkew - 1))`` (0 for ignored nodes)."""
        if node.name in meta.ignored:
            return 0
        labels = node.labels
        total = 0.0
        own: tuple[int, ...] | None = None
        for i, (c, domains) in enumerate(zip(meta.constraints, meta.domains, strict=True)):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if domains is None:
                if own is None:
                    own = meta.own(node)
                count = own[i]
            else:
                count = domains.count(value)
            total += count * meta.weights[i] + float(c.max_skew - 1)
        return int(total)

    def score_columns(
        self, pod: PodInfo, meta: PreScoreMeta, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        """The map step for ``rows`` of ``cols``."""
        labels = [cols.label(c.topology_key) for c in meta.constraints]
        skipped = np.zeros(len(rows), dtype=bool)
        for codes, _ in labels:
            skipped |= codes[rows] < 0
        own: npt.NDArray[np.int64] | None = None
        total = np.zeros(len(rows), dtype=np.float64)
        for i, (c, domains, (codes, vocab)) in enumerate(
            zip(meta.constraints, meta.domains, labels, strict=True)
        ):
            if domains is None:
                if own is None:
                    own = meta.own_counts(cols, rows, skipped)
                count = own[:, i]
            else:
                count = domains.table(vocab)[codes[rows]]
            # Go's float64 order: count * weight, plus maxSkew - 1, added to the running sum.
            total += count.astype(np.float64) * meta.weights[i] + float(c.max_skew - 1)
        out = total.astype(np.int64)
        out[skipped] = 0
        return out

    def normalize(
        self, pod: PodInfo, meta: PreScoreMeta | Skip, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        """The reduce step (``NormalizeScore`` on the 0-10 scale); all 0 after SKIP."""
        if meta is SKIP:
            return [0] * len(nodes)
        return normalize_spread_scores(scores, [n.name in meta.ignored for n in nodes])


FACTORIES: dict[str, Callable[[PluginArgs], EvenPodsSpread | EvenPodsSpreadPriority]] = {
    NAME: EvenPodsSpread,
    PRIORITY_NAME: EvenPodsSpreadPriority,
}
