"""MatchInterPodAffinity: required pod affinity and anti-affinity, the pod's and the cluster's.

Kubernetes counterpart: pkg/scheduler/framework/plugins/interpodaffinity/filtering.go, at v1.14:

- pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0: ``PodAffinityChecker``,
  ``InterPodAffinityMatches``, ``satisfiesExistingPodsAntiAffinity``,
  ``satisfiesPodsAffinityAntiAffinity``, ``nodeMatchesAllTopologyTerms``,
  ``nodeMatchesAnyTopologyTerm``, ``targetPodMatchesAffinityOfPod``;
- pkg/scheduler/algorithm/predicates/metadata.go@v1.14.0: ``topologyPairsMaps``,
  ``getTPMapMatchingExistingAntiAffinity``, ``getTPMapMatchingIncomingAffinityAntiAffinity``;
- reasons from pkg/scheduler/algorithm/predicates/error.go@v1.14.0.

A node passes when, in this order (the first failure decides the reasons):

1. no existing pod has a required anti-affinity term that matches the incoming pod and whose
   topology pair (key, value of the existing pod's node) the node shares; else
   ``[ERR_REASON_AFFINITY_NOT_MATCH, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH]``;
2. for *every* required affinity term of the pod, the node carries the term's topology key and
   the pair (key, value) is one where an existing pod matching *all* the pod's affinity terms
   runs; else ``[..._NOT_MATCH, ERR_REASON_AFFINITY_RULES_NOT_MATCH]``. Exception ("first pod
   of a group"): when no existing pod anywhere matches all the terms and the pod matches its
   own terms, every node passes this step. This failure is unresolvable (v1.14's
   ``unresolvablePredicateFailureErrors`` lists ``ErrPodAffinityRulesNotMatch``: preemption
   never tries such a node); the other two are resolvable;
3. for *no* required anti-affinity term of the pod does the node share the pair of an existing
   pod matching that term; else ``[..._NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH]``.

A term's namespaces default to the namespace of the pod that defines it; an empty topology key
never matches a node (:mod:`.common`). ``pre_filter`` computes the three topology-pair counts
once per pod from the snapshot (v1.14's ``topologyPairsAntiAffinityPodsMap``,
``topologyPairsPotentialAffinityPods`` and ``topologyPairsPotentialAntiAffinityPods``), so
``filter`` costs a few dict lookups per node and ``filter_columns`` a few numpy gathers over
``NodeColumns.label`` codes.

Differences from v1.14, all at the edges: a row without a Node object is judged as a node
without labels (v1.14 returns an error); a label selector that is not well formed (``In``
without values, ...) raises :class:`PredicateError` from ``pre_filter``, as v1.14's metadata and
predicate return an error; ``filter`` trusts ``meta`` to be ``pre_filter``'s answer (v1.14
recomputes without metadata from its pod lister, with the same outcome).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    PluginArgs,
    ReasonMasks,
    Skip,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.plugins import names
from podium.actors.plugins.inter_pod_affinity.common import (
    AffinityTerm,
    ClassCounts,
    PodTerms,
    TermCache,
    TopologyPair,
    affinity_class_key,
    node_changes,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "ERR_REASON_AFFINITY_NOT_MATCH",
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "FACTORIES",
    "NAME",
    "InterPodAffinity",
    "InterPodAffinityMeta",
]

NAME = names.MATCH_INTER_POD_AFFINITY

ERR_REASON_AFFINITY_NOT_MATCH = "node(s) didn't match pod affinity/anti-affinity"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)


def _add_pair(pairs: dict[TopologyPair, int], key: str, labels: Mapping[str, str]) -> None:
    value = labels.get(key)
    if value is not None:
        pair = (key, value)
        pairs[pair] = pairs.get(pair, 0) + 1


def _hits(table: Mapping[str, int], values: Iterable[str]) -> npt.NDArray[np.bool_]:
    """A boolean table over label codes, with a last False slot for code -1 (label absent)."""
    hit = np.zeros(len(table) + 1, dtype=bool)
    for value in values:
        code = table.get(value)
        if code is not None:
            hit[code] = True
    return hit


class _PairTables:
    """For one pairs map of a meta: which topology keys it holds, and per key the boolean table
    over that key's label codes (:func:`_hits` of the key's values), both kept up to date as
    pairs appear and disappear, so ``filter_columns`` need not regroup thousands of pairs
    (one per node for a hostname topology) on every attempt.

    A table is built for the code table (``NodeColumns.label``) it was asked with, and made
    afresh when the columns hand out another one (their code tables are never changed in place:
    a label change replaces them).
    """

    __slots__ = ("_tables", "keys")

    def __init__(self, pairs: Iterable[TopologyPair]) -> None:
        self.keys: dict[str, int] = {}  # key -> number of pairs with that key
        for key, _ in pairs:
            self.keys[key] = self.keys.get(key, 0) + 1
        self._tables: dict[str, tuple[Mapping[str, int], npt.NDArray[np.bool_]]] = {}

    def changed(self, pair: TopologyPair, present: bool) -> None:
        """``pair`` just appeared in (``present``) or left the pairs map."""
        key, value = pair
        count = self.keys.get(key, 0) + (1 if present else -1)
        if count:
            self.keys[key] = count
        else:
            del self.keys[key]
        cached = self._tables.get(key)
        if cached is not None:
            code = cached[0].get(value)
            if code is not None:
                cached[1][code] = present

    def hits(
        self, pairs: Mapping[TopologyPair, int], key: str, table: Mapping[str, int]
    ) -> npt.NDArray[np.bool_]:
        """``_hits(table, values of key in pairs)``; the caller must not change it."""
        cached = self._tables.get(key)
        if cached is not None and cached[0] is table:
            return cached[1]
        hit = _hits(table, (v for k, v in pairs if k == key)) if key in self.keys else None
        if hit is None:
            hit = np.zeros(len(table) + 1, dtype=bool)
        self._tables[key] = (table, hit)
        return hit


# --------------------------------------------------------------------------- metadata


@dataclass(slots=True)
class InterPodAffinityMeta:
    """What ``pre_filter`` learns about one pod (v1.14 predicate metadata).

    Each ``*_pairs`` maps a topology pair (key, value) to the number of (existing pod, term)
    matches found there; only which pairs are present decides (v1.14 keeps the pods instead).

    Attributes:
        existing_anti_pairs: pairs where existing pods' required anti-affinity terms match the
            incoming pod (``topologyPairsAntiAffinityPodsMap``).
        affinity_pairs: pairs where existing pods matching all the pod's affinity terms run
            (``topologyPairsPotentialAffinityPods``).
        anti_affinity_pairs: pairs where existing pods matching one of the pod's anti-affinity
            terms run (``topologyPairsPotentialAntiAffinityPods``).
        affinity_keys: the topology keys of the pod's required affinity terms, in order.
        anti_affinity_keys: the topology keys of its required anti-affinity terms.
        first_of_group: no existing pod matches the affinity terms and the pod matches its own
            (``targetPodMatchesAffinityOfPod(pod, pod)``), so the affinity terms pass everywhere.
    """

    existing_anti_pairs: dict[TopologyPair, int] = field(default_factory=dict)
    affinity_pairs: dict[TopologyPair, int] = field(default_factory=dict)
    anti_affinity_pairs: dict[TopologyPair, int] = field(default_factory=dict)
    affinity_keys: tuple[str, ...] = ()
    anti_affinity_keys: tuple[str, ...] = ()
    first_of_group: bool = False
    existing_anti_tables: _PairTables = field(init=False, repr=False, compare=False)
    affinity_tables: _PairTables = field(init=False, repr=False, compare=False)
    anti_affinity_tables: _PairTables = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The pairs maps change afterwards only through _apply_changes, which keeps these.
        self.existing_anti_tables = _PairTables(self.existing_anti_pairs)
        self.affinity_tables = _PairTables(self.affinity_pairs)
        self.anti_affinity_tables = _PairTables(self.anti_affinity_pairs)

    @property
    def checks_affinity(self) -> bool:
        """Whether step 2 (the pod's affinity terms) can reject a node."""
        return bool(self.affinity_keys) and not self.first_of_group


def _existing_anti_pairs(
    pod: PodInfo, snapshot: Snapshot, cache: TermCache
) -> dict[TopologyPair, int]:
    """``getTPMapMatchingExistingAntiAffinity``: pairs where existing pods repel ``pod``."""
    pairs: dict[TopologyPair, int] = {}
    for info in snapshot.node_infos_with_affinity():
        if info.node is None:
            continue
        labels = info.labels
        for existing in info.pods_with_affinity:
            for term in cache.get(existing).required_anti_affinity():
                if term.matches(pod):
                    _add_pair(pairs, term.topology_key, labels)
    return pairs


def _incoming_pairs(
    snapshot: Snapshot, affinity: Sequence[AffinityTerm], anti: Sequence[AffinityTerm]
) -> tuple[dict[TopologyPair, int], dict[TopologyPair, int]]:
    """``getTPMapMatchingIncomingAffinityAntiAffinity`` over every pod on every node."""
    affinity_pairs: dict[TopologyPair, int] = {}
    anti_pairs: dict[TopologyPair, int] = {}
    keys = {t.topology_key for t in affinity} | {t.topology_key for t in anti}
    for info in snapshot.node_infos:
        if info.node is None or not info.pods:
            continue
        labels = info.labels
        if not any(k in labels for k in keys):
            continue  # no pair could be added from this node
        for existing in info.pods:
            # An existing pod counts for the affinity only when it matches every term.
            if affinity and all(t.matches(existing) for t in affinity):
                for t in affinity:
                    _add_pair(affinity_pairs, t.topology_key, labels)
            for t in anti:
                if t.matches(existing):
                    _add_pair(anti_pairs, t.topology_key, labels)
    return affinity_pairs, anti_pairs


def _bump(
    pairs: dict[TopologyPair, int],
    tables: _PairTables,
    key: str,
    labels: Mapping[str, str],
    sign: int,
) -> None:
    value = labels.get(key)
    if value is None:
        return
    pair = (key, value)
    before = pairs.get(pair, 0)
    count = before + sign
    if count:
        pairs[pair] = count
    else:
        del pairs[pair]
    if not before or not count:
        tables.changed(pair, bool(count))


def _apply_changes(
    meta: InterPodAffinityMeta,
    pod: PodInfo,
    affinity: Sequence[AffinityTerm],
    anti: Sequence[AffinityTerm],
    changes: Iterable[tuple[NodeInfo, NodeInfo]],
) -> None:
    """Bring the three pair counts of ``meta`` up to date with ``changes`` (what
    :func:`_existing_anti_pairs` and :func:`_incoming_pairs` would count afresh)."""
    for info, pods, sign in node_changes(changes, with_affinity=not affinity and not anti):
        if info.node is None:
            continue
        labels = info.labels
        for existing in pods:
            if existing.has_affinity:
                for term in PodTerms(existing).required_anti_affinity():
                    if term.matches(pod):
                        _bump(
                            meta.existing_anti_pairs,
                            meta.existing_anti_tables,
                            term.topology_key,
                            labels,
                            sign,
                        )
            if affinity and all(t.matches(existing) for t in affinity):
                for t in affinity:
                    _bump(meta.affinity_pairs, meta.affinity_tables, t.topology_key, labels, sign)
            for t in anti:
                if t.matches(existing):
                    _bump(
                        meta.anti_affinity_pairs,
                        meta.anti_affinity_tables,
                        t.topology_key,
                        labels,
                        sign,
                    )


# --------------------------------------------------------------------------- plugin


class InterPodAffinity(VectorFilterPlugin[InterPodAffinityMeta]):
    """v1.14 MatchInterPodAffinity (see the module docstring)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self._terms = TermCache()
        self._classes: ClassCounts[InterPodAffinityMeta] = ClassCounts()

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> InterPodAffinityMeta | Skip:
        """The pair counts, made afresh over every pod, or for a pod whose class was seen on
        this snapshot, brought up to date from the nodes changed since (the meta handed out
        is that class's state: valid until the next ``pre_filter``)."""
        own = PodTerms(pod)
        affinity, anti = own.required_affinity(), own.required_anti_affinity()
        key = affinity_class_key(pod)
        found = self._classes.find(key, snapshot)
        if found is not None:
            meta, changes = found
            _apply_changes(meta, pod, affinity, anti, changes)
        else:
            self._terms.begin()
            existing = _existing_anti_pairs(pod, snapshot, self._terms)
            affinity_pairs, anti_pairs = (
                _incoming_pairs(snapshot, affinity, anti) if affinity or anti else ({}, {})
            )
            meta = InterPodAffinityMeta(
                existing_anti_pairs=existing,
                affinity_pairs=affinity_pairs,
                anti_affinity_pairs=anti_pairs,
                affinity_keys=tuple(t.topology_key for t in affinity),
                anti_affinity_keys=tuple(t.topology_key for t in anti),
            )
        self._classes.keep(key, snapshot, meta)
        if not affinity and not anti and not meta.existing_anti_pairs:
            return SKIP
        meta.first_of_group = (
            bool(affinity) and not meta.affinity_pairs and all(t.matches(pod) for t in affinity)
        )
        return meta

    def filter(self, pod: PodInfo, meta: InterPodAffinityMeta, node: NodeInfo) -> Status:
        labels = node.labels
        for pair in labels.items():
            if pair in meta.existing_anti_pairs:
                return unschedulable(
                    ERR_REASON_AFFINITY_NOT_MATCH, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
                )
        if meta.checks_affinity:
            for key in meta.affinity_keys:
                have = labels.get(key)
                if have is None or (key, have) not in meta.affinity_pairs:
                    # Unresolvable: removing pods cannot create the pod the term asks for
                    # (v1.14 unresolvablePredicateFailureErrors lists ErrPodAffinityRulesNotMatch).
                    return unschedulable(
                        ERR_REASON_AFFINITY_NOT_MATCH,
                        ERR_REASON_AFFINITY_RULES_NOT_MATCH,
                        resolvable=False,
                    )
        for key in meta.anti_affinity_keys:
            have = labels.get(key)
            if have is not None and (key, have) in meta.anti_affinity_pairs:
                return unschedulable(
                    ERR_REASON_AFFINITY_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
                )
        return SUCCESS

    def filter_columns(
        self, pod: PodInfo, meta: InterPodAffinityMeta, cols: NodeColumns
    ) -> ReasonMasks:
        n = cols.n
        existing = np.zeros(n, dtype=bool)
        for key in meta.existing_anti_tables.keys:
            codes, table = cols.label(key)
            existing |= meta.existing_anti_tables.hits(meta.existing_anti_pairs, key, table)[codes]
        affinity = np.zeros(n, dtype=bool)
        if meta.checks_affinity:
            for key in meta.affinity_keys:
                codes, table = cols.label(key)
                affinity |= ~meta.affinity_tables.hits(meta.affinity_pairs, key, table)[codes]
        anti = np.zeros(n, dtype=bool)
        for key in meta.anti_affinity_keys:
            codes, table = cols.label(key)
            anti |= meta.anti_affinity_tables.hits(meta.anti_affinity_pairs, key, table)[codes]
        # The scalar form stops at the first failing step: later steps only where earlier passed.
        affinity &= ~existing
        anti &= ~(existing | affinity)
        return [
            (ERR_REASON_AFFINITY_NOT_MATCH, existing | affinity | anti, Code.UNSCHEDULABLE),
            (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, existing, Code.UNSCHEDULABLE),
            (ERR_REASON_AFFINITY_RULES_NOT_MATCH, affinity, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
            (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, anti, Code.UNSCHEDULABLE),
        ]


FACTORIES: dict[str, Callable[[PluginArgs], InterPodAffinity]] = {NAME: InterPodAffinity}
