"""EvenPodsSpreadPriority: the PodTopologySpread score, on the 0-10 scale.

Kubernetes counterpart: pkg/scheduler/framework/plugins/podtopologyspread/scoring.go
(``initPreScoreState``, ``PreScore``, ``Score``, ``NormalizeScore``,
``topologyNormalizingWeight``, ``scoreForCount``), release-1.19/1.20; the legacy
pkg/scheduler/algorithm/priorities/even_pods_spread.go@v1.16 (MaxPriority 10) read for the
0-10 scale. See the package docstring.

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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import (
    MAX_PRIORITY,
    SKIP,
    PluginArgs,
    Skip,
    VectorScorePlugin,
)
from podium.actors.plugins import names
from podium.actors.plugins.node_selector import PodMatchNodeSelector
from podium.actors.plugins.pod_topology_spread.common import (
    LABEL_HOSTNAME,
    SCHEDULE_ANYWAY,
    CountCache,
    DomainCounts,
    SpecCounts,
    SpreadConstraint,
    column_domains,
    counting_rows,
    spread_constraints,
    walk_domains,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "FACTORIES",
    "NAME",
    "EvenPodsSpreadPriority",
    "PreScoreMeta",
    "normalize_spread_scores",
]

NAME = names.EVEN_PODS_SPREAD_PRIORITY


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
    spec: SpecCounts
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
        self._cache = CountCache()
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
        spec: SpecCounts,
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
            domains = walk_domains(pod, snapshot.node_infos, constraints, spec, wanted)
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
        spec: SpecCounts,
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
            counting = counting_rows(pod, cols, keys, self._node_selector)
            chosen = [constraints[i] for i in by_value]
            found = column_domains(cols, counting, chosen, matrix[:, by_value])
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

    def reduces_row_by_row(
        self, pod: PodInfo, meta: PreScoreMeta | Skip, scores: npt.NDArray[np.int64]
    ) -> bool:
        """SKIP (no soft constraint): every row 0 in any window."""
        return meta is SKIP


FACTORIES: dict[str, Callable[[PluginArgs], EvenPodsSpreadPriority]] = {
    NAME: EvenPodsSpreadPriority
}
