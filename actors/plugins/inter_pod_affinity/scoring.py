"""InterPodAffinityPriority: prefer nodes near the pods a pod likes, away from those it avoids.

Kubernetes counterpart: pkg/scheduler/framework/plugins/interpodaffinity/scoring.go, at v1.14
``CalculateInterPodAffinityPriority`` and ``podAffinityPriorityMap`` in
pkg/scheduler/algorithm/priorities/interpod_affinity.go@v1.14.0, with ``NodesHaveSameTopologyKey``
from pkg/scheduler/algorithm/priorities/util/topologies.go@v1.14.0.

For every existing pod ``e`` on a node ``N`` (on every node; only pods with affinity when the
incoming pod ``p`` has none), and every term below that matches, each scored node sharing ``N``'s
value of the term's topology key gains the term's weight:

=====================================================  ==========================  =========
term                                                   must match                  weight
=====================================================  ==========================  =========
``p``'s preferred pod affinity                         ``e``                       +weight
``p``'s preferred pod anti-affinity                    ``e``                       -weight
``e``'s *required* pod affinity (symmetry)             ``p``                       +hardPodAffinitySymmetricWeight
``e``'s preferred pod affinity                         ``p``                       +weight
``e``'s preferred pod anti-affinity                    ``p``                       -weight
=====================================================  ==========================  =========

A term's namespaces default to those of the pod defining it; an empty topology key, or a node
without the key, gains nothing. The symmetric weight is the policy's
``hardPodAffinitySymmetricWeight`` (:attr:`PluginArgs.hard_pod_affinity_symmetric_weight`); 0
turns the symmetry off, as in v1.14.

v1.14 is a "function" priority: it computes every node's count at once and normalises them.
Podium splits it: ``pre_score`` sums the weights per topology pair (key, value) once per pod,
``score`` (the map step) adds up the node's pairs, ``normalize`` (the reduce step) maps counts
over the scored nodes to ``int(10 * ((count - min) / (max - min)))`` in float64, where ``min``
is at most 0 and ``max`` at least 0; all 0 when ``max == min``.

Differences from v1.14: an existing pod on a row without a Node object is skipped, as v1.14
skips such node infos; a label selector that is not well formed raises :class:`PredicateError`
(v1.14's priority returns the selector's error).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
from podium.actors.plugins.inter_pod_affinity.common import (
    AffinityTerm,
    ClassCounts,
    PodTerms,
    TermCache,
    affinity_class_key,
    node_changes,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "FACTORIES",
    "NAME",
    "InterPodAffinityPriority",
    "PairWeights",
    "normalize_counts",
    "normalize_counts_array",
]

NAME = names.INTER_POD_AFFINITY

PairWeights = dict[str, dict[str, int]]
"""topology key -> label value -> summed weight: what ``pre_score`` hands ``score``."""


def _add(weights: PairWeights, term: AffinityTerm, labels: Mapping[str, str], weight: int) -> None:
    # NodesHaveSameTopologyKey: an empty key, or a node without it, shares nothing.
    key = term.topology_key
    if not key:
        return
    value = labels.get(key)
    if value is None:
        return
    per_value = weights.setdefault(key, {})
    per_value[value] = per_value.get(value, 0) + weight


def normalize_counts(counts: Sequence[int]) -> list[int]:
    """The v1.14 reduce: ``int(10 * ((c - min) / (max - min)))``, min <= 0 <= max, in float64."""
    scores: list[int] = normalize_counts_array(np.asarray(counts, dtype=np.int64)).tolist()
    return scores


def normalize_counts_array(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """:func:`normalize_counts` over an array."""
    if not len(counts):
        return counts
    high = max(int(counts.max()), 0)
    low = min(int(counts.min()), 0)
    if high - low <= 0:
        return np.zeros(len(counts), dtype=np.int64)
    # Same operation order as Go: float64(MaxPriority) * (float64(c-min) / float64(max-min)).
    scores = float(MAX_PRIORITY) * ((counts - low).astype(np.float64) / float(high - low))
    return scores.astype(np.int64)


class InterPodAffinityPriority(VectorScorePlugin[PairWeights]):
    """v1.14 InterPodAffinityPriority (see the module docstring)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self.hard_pod_affinity_weight = args.hard_pod_affinity_symmetric_weight
        self._terms = TermCache()
        self._classes: ClassCounts[PairWeights] = ClassCounts()

    def pre_score(
        self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]
    ) -> PairWeights | Skip:
        own = PodTerms(pod)
        affinity = pod.pod.spec.affinity
        has_affinity = affinity is not None and affinity.pod_affinity is not None
        has_anti = affinity is not None and affinity.pod_anti_affinity is not None
        preferred = (
            own.preferred_affinity() + own.preferred_anti_affinity()
            if has_affinity or has_anti
            else ()
        )
        # Without preferred terms of its own, only existing pods' terms can score the pod: the
        # nodes and pods without affinity need no visit, and the class's weights can be kept
        # from pod to pod, brought up to date from the nodes changed since.
        scan_all = bool(preferred)
        key = None if scan_all else affinity_class_key(pod)
        found = self._classes.find(key, snapshot) if key is not None else None
        if found is not None:
            weights, changes = found
            self._apply_changes(weights, pod, changes)
        else:
            weights = self._count(pod, snapshot, preferred, scan_all)
        if key is not None:
            self._classes.keep(key, snapshot, weights)
        if not any(any(v for v in per_value.values()) for per_value in weights.values()):
            return SKIP
        return weights

    def _apply_changes(
        self, weights: PairWeights, pod: PodInfo, changes: Sequence[tuple[NodeInfo, NodeInfo]]
    ) -> None:
        hard = self.hard_pod_affinity_weight
        for info, pods, sign in node_changes(changes, with_affinity=True):
            if info.node is None:
                continue
            labels = info.labels
            for existing in pods:
                if not existing.has_affinity:
                    continue
                terms = PodTerms(existing)
                if hard > 0:
                    for term in terms.required_affinity():
                        if term.matches(pod):
                            _add(weights, term, labels, sign * hard)
                for term in terms.preferred_affinity() + terms.preferred_anti_affinity():
                    if term.matches(pod):
                        _add(weights, term, labels, sign * term.weight)

    def _count(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        preferred: tuple[AffinityTerm, ...],
        scan_all: bool,
    ) -> PairWeights:
        """The weights afresh, over every pod (with ``scan_all``) or every pod with affinity."""
        hard = self.hard_pod_affinity_weight
        weights: PairWeights = {}
        self._terms.begin()
        for info in snapshot.node_infos if scan_all else snapshot.node_infos_with_affinity():
            if info.node is None:
                continue
            labels = info.labels
            for existing in info.pods if scan_all else info.pods_with_affinity:
                for term in preferred:
                    if term.matches(existing):
                        _add(weights, term, labels, term.weight)
                if not existing.has_affinity:
                    continue
                terms = self._terms.get(existing)
                if hard > 0:
                    for term in terms.required_affinity():
                        if term.matches(pod):
                            _add(weights, term, labels, hard)
                for term in terms.preferred_affinity() + terms.preferred_anti_affinity():
                    if term.matches(pod):
                        _add(weights, term, labels, term.weight)
        return weights

    def score(self, pod: PodInfo, meta: PairWeights, node: NodeInfo) -> int:
        labels = node.labels
        total = 0
        for key, per_value in meta.items():
            value = labels.get(key)
            if value is not None:
                total += per_value.get(value, 0)
        return total

    def score_columns(
        self, pod: PodInfo, meta: PairWeights, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        total = np.zeros(len(rows), dtype=np.int64)
        for key, per_value in meta.items():
            codes, table = cols.label(key)
            # One slot per label value plus a last 0 for code -1 (label absent).
            by_code = np.zeros(len(table) + 1, dtype=np.int64)
            for value, weight in per_value.items():
                code = table.get(value)
                if code is not None:
                    by_code[code] = weight
            total += by_code[codes[rows]]
        return total

    def normalize(
        self, pod: PodInfo, meta: PairWeights | Skip, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return normalize_counts(scores)

    def normalize_columns(
        self,
        pod: PodInfo,
        meta: PairWeights | Skip,
        nodes: Sequence[NodeInfo],
        scores: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        return normalize_counts_array(scores)

    def reduces_row_by_row(
        self, pod: PodInfo, meta: PairWeights | Skip, scores: npt.NDArray[np.int64]
    ) -> bool:
        """All counts zero (or SKIP): max - min is 0 in any window, every row gets 0."""
        return not scores.any()


FACTORIES: dict[str, Callable[[PluginArgs], InterPodAffinityPriority]] = {
    NAME: InterPodAffinityPriority
}
