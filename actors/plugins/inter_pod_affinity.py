"""MatchInterPodAffinity: required pod affinity and anti-affinity, the pod's and the cluster's.

Kubernetes sources (v1.14):

- pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0: ``PodAffinityChecker``,
  ``InterPodAffinityMatches``, ``satisfiesExistingPodsAntiAffinity``,
  ``satisfiesPodsAffinityAntiAffinity``, ``nodeMatchesAllTopologyTerms``,
  ``nodeMatchesAnyTopologyTerm``, ``targetPodMatchesAffinityOfPod``;
- pkg/scheduler/algorithm/predicates/metadata.go@v1.14.0: ``topologyPairsMaps``,
  ``getTPMapMatchingExistingAntiAffinity``, ``getTPMapMatchingIncomingAffinityAntiAffinity``;
- pkg/scheduler/algorithm/priorities/util/topologies.go@v1.14.0:
  ``GetNamespacesFromPodAffinityTerm``, ``PodMatchesTermsNamespaceAndSelector``;
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
never matches a node. ``pre_filter`` computes the three topology-pair counts once per pod from
the snapshot (v1.14's ``topologyPairsAntiAffinityPodsMap``, ``topologyPairsPotentialAffinityPods``
and ``topologyPairsPotentialAntiAffinityPods``), so ``filter`` costs a few dict lookups per node
and ``filter_columns`` a few numpy gathers over ``NodeColumns.label`` codes. Existing pods'
terms are compiled once and kept in a :class:`TermCache` between pods.

Differences from v1.14, all at the edges: a row without a Node object is judged as a node
without labels (v1.14 returns an error); a label selector that is not well formed (``In``
without values, ...) raises :class:`PredicateError` from ``pre_filter``, as v1.14's metadata and
predicate return an error; ``filter`` trusts ``meta`` to be ``pre_filter``'s answer (v1.14
recomputes without metadata from its pod lister, with the same outcome).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

import msgspec
import numpy as np

from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    PluginArgs,
    PredicateError,
    ReasonMasks,
    Skip,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.plugins import names
from podium.protocol.labels import Selector, label_selector_as_selector, label_selector_is_valid
from podium.protocol.objects import enc_hook

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot
    from podium.protocol.objects import PodAffinityTerm, WeightedPodAffinityTerm

__all__ = [
    "ERR_REASON_AFFINITY_NOT_MATCH",
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "FACTORIES",
    "NAME",
    "AffinityTerm",
    "ClassCounts",
    "InterPodAffinity",
    "InterPodAffinityMeta",
    "PodTerms",
    "TermCache",
    "affinity_class_key",
    "compile_term",
    "node_changes",
]

NAME = names.MATCH_INTER_POD_AFFINITY

ERR_REASON_AFFINITY_NOT_MATCH = "node(s) didn't match pod affinity/anti-affinity"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)

TopologyPair = tuple[str, str]


# --------------------------------------------------------------------------- terms


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A PodAffinityTerm resolved against the pod that defines it.

    Attributes:
        namespaces: the term's namespaces, or the defining pod's namespace when it lists none
            (``GetNamespacesFromPodAffinityTerm``).
        topology_key: the term's topology key.
        selector: its label selector, compiled.
        weight: the weight of a preferred term (1 for a required one).
    """

    namespaces: frozenset[str]
    topology_key: str
    selector: Selector
    weight: int = 1

    def matches(self, pod: PodInfo) -> bool:
        """``PodMatchesTermsNamespaceAndSelector``: ``pod`` is in the namespaces and selected."""
        return pod.namespace in self.namespaces and self.selector.matches(pod.labels)


def compile_term(defining: PodInfo, term: PodAffinityTerm, weight: int = 1) -> AffinityTerm:
    """Resolve and compile a term of ``defining``'s.

    Raises:
        PredicateError: the term's label selector is not well formed (v1.14's
            ``LabelSelectorAsSelector`` error fails the attempt).
    """
    selector = term.label_selector
    if selector is not None and not label_selector_is_valid(selector):
        raise PredicateError(
            f"pod {defining.key} has an invalid label selector in a pod affinity term "
            f"(topologyKey {term.topology_key!r})"
        )
    namespaces = frozenset(term.namespaces) if term.namespaces else frozenset((defining.namespace,))
    return AffinityTerm(namespaces, term.topology_key, label_selector_as_selector(selector), weight)


def _compile_weighted(
    defining: PodInfo, terms: Sequence[WeightedPodAffinityTerm], sign: int
) -> tuple[AffinityTerm, ...]:
    return tuple(compile_term(defining, t.pod_affinity_term, sign * t.weight) for t in terms)


class PodTerms:
    """One pod's affinity terms, each kind compiled on first use.

    A kind whose selector is invalid raises :class:`PredicateError` when asked for, so a bad
    preferred term does not fail the predicate (which never reads it), as in v1.14.
    """

    __slots__ = ("_cache", "pod")

    def __init__(self, pod: PodInfo) -> None:
        self.pod = pod
        self._cache: dict[str, tuple[AffinityTerm, ...]] = {}

    def _get(
        self, kind: str, build: Callable[[], tuple[AffinityTerm, ...]]
    ) -> tuple[AffinityTerm, ...]:
        terms = self._cache.get(kind)
        if terms is None:
            terms = self._cache[kind] = build()
        return terms

    def required_affinity(self) -> tuple[AffinityTerm, ...]:
        """``GetPodAffinityTerms``: the requiredDuringSchedulingIgnoredDuringExecution terms."""

        def build() -> tuple[AffinityTerm, ...]:
            a = self.pod.pod.spec.affinity
            if a is None or a.pod_affinity is None:
                return ()
            terms = a.pod_affinity.required_during_scheduling_ignored_during_execution
            return tuple(compile_term(self.pod, t) for t in terms)

        return self._get("ra", build)

    def required_anti_affinity(self) -> tuple[AffinityTerm, ...]:
        """``GetPodAntiAffinityTerms``: the required anti-affinity terms."""

        def build() -> tuple[AffinityTerm, ...]:
            a = self.pod.pod.spec.affinity
            if a is None or a.pod_anti_affinity is None:
                return ()
            terms = a.pod_anti_affinity.required_during_scheduling_ignored_during_execution
            return tuple(compile_term(self.pod, t) for t in terms)

        return self._get("rn", build)

    def preferred_affinity(self) -> tuple[AffinityTerm, ...]:
        """The preferred affinity terms, weights positive."""

        def build() -> tuple[AffinityTerm, ...]:
            a = self.pod.pod.spec.affinity
            if a is None or a.pod_affinity is None:
                return ()
            terms = a.pod_affinity.preferred_during_scheduling_ignored_during_execution
            return _compile_weighted(self.pod, terms, 1)

        return self._get("pa", build)

    def preferred_anti_affinity(self) -> tuple[AffinityTerm, ...]:
        """The preferred anti-affinity terms, weights negated."""

        def build() -> tuple[AffinityTerm, ...]:
            a = self.pod.pod.spec.affinity
            if a is None or a.pod_anti_affinity is None:
                return ()
            terms = a.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution
            return _compile_weighted(self.pod, terms, -1)

        return self._get("pn", build)


class TermCache:
    """Compiled terms of existing pods, kept from one pod's pass to the next.

    Keyed by the PodInfo object (a pod changed in the cache is a new PodInfo, so it is compiled
    afresh). Two generations: call :meth:`begin` before each pass; entries not used during a
    pass are dropped at the next one, so the cache never outgrows the cluster.
    """

    __slots__ = ("_current", "_previous")

    def __init__(self) -> None:
        self._current: dict[int, PodTerms] = {}
        self._previous: dict[int, PodTerms] = {}

    def begin(self) -> None:
        """Start a pass: what the last pass did not touch is forgotten after this one."""
        self._previous = self._current
        self._current = {}

    def get(self, pod: PodInfo) -> PodTerms:
        key = id(pod)
        terms = self._current.get(key)
        if terms is not None and terms.pod is pod:
            return terms
        terms = self._previous.get(key)
        if terms is None or terms.pod is not pod:
            terms = PodTerms(pod)
        self._current[key] = terms
        return terms


def _add_pair(pairs: dict[TopologyPair, int], key: str, labels: Mapping[str, str]) -> None:
    value = labels.get(key)
    if value is not None:
        pair = (key, value)
        pairs[pair] = pairs.get(pair, 0) + 1


def _values_by_key(pairs: Iterable[TopologyPair]) -> dict[str, frozenset[str]]:
    grouped: dict[str, set[str]] = {}
    for key, value in pairs:
        grouped.setdefault(key, set()).add(value)
    return {key: frozenset(values) for key, values in grouped.items()}


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


# --------------------------------------------------------------------------- incremental counts

CLASSES = 64
"""Classes of incoming pods whose counts are kept between pods (least recently used dropped)."""

_KEY_ENCODER = msgspec.msgpack.Encoder(enc_hook=enc_hook)

S = TypeVar("S")


def affinity_class_key(pod: PodInfo) -> bytes:
    """Incoming pods with the same namespace, labels and spec match and are matched alike."""
    meta = pod.pod.metadata
    return _KEY_ENCODER.encode((meta.namespace, meta.labels, pod.pod.spec))


def node_changes(
    changes: Iterable[tuple[NodeInfo, NodeInfo]], *, with_affinity: bool = False
) -> Iterator[tuple[NodeInfo, list[PodInfo], int]]:
    """(node, pods, -1) for pods a change took away and (node, pods, +1) for pods it brought,
    each with the NodeInfo whose labels they counted under. A node whose labels changed has
    all its old pods taken away and all its new ones brought. ``with_affinity``: only the pods
    with affinity terms (the only ones that count when the incoming pod has none)."""
    for old, new in changes:
        old_pods = old.pods_with_affinity if with_affinity else old.pods
        new_pods = new.pods_with_affinity if with_affinity else new.pods
        if old.node is not new.node and (
            old.node is None or new.node is None or old.labels != new.labels
        ):
            yield old, old_pods, -1
            yield new, new_pods, 1
            continue
        if not old_pods and not new_pods:
            continue
        old_ids = {id(p) for p in old_pods}
        new_ids = {id(p) for p in new_pods}
        removed = [p for p in old_pods if id(p) not in new_ids]
        added = [p for p in new_pods if id(p) not in old_ids]
        if removed:
            yield old, removed, -1
        if added:
            yield new, added, 1


class ClassCounts(Generic[S]):
    """Per-class counts (``S``) kept against one snapshot's journal.

    :meth:`find` answers the state made for this class on this snapshot and the node changes
    since; the caller applies them and hands the state back with :meth:`keep`. Another snapshot
    (a what-if copy, a new node set), a journal that no longer reaches back, or a class not seen
    lately answers ``None``: the caller counts afresh over every pod.
    """

    def __init__(self, size: int = CLASSES) -> None:
        self._size = size
        self._entries: OrderedDict[bytes, tuple[int, int, S]] = OrderedDict()

    def find(
        self, key: bytes, snapshot: Snapshot
    ) -> tuple[S, Sequence[tuple[NodeInfo, NodeInfo]]] | None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        token, position, state = entry
        if token != snapshot.token:
            return None
        changes = snapshot.changes_since(position)
        return None if changes is None else (state, changes)

    def keep(self, key: bytes, snapshot: Snapshot, state: S) -> None:
        self._entries[key] = (snapshot.token, snapshot.journal_position, state)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


def _bump(pairs: dict[TopologyPair, int], key: str, labels: Mapping[str, str], sign: int) -> None:
    value = labels.get(key)
    if value is None:
        return
    pair = (key, value)
    count = pairs.get(pair, 0) + sign
    if count:
        pairs[pair] = count
    else:
        del pairs[pair]


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
                        _bump(meta.existing_anti_pairs, term.topology_key, labels, sign)
            if affinity and all(t.matches(existing) for t in affinity):
                for t in affinity:
                    _bump(meta.affinity_pairs, t.topology_key, labels, sign)
            for t in anti:
                if t.matches(existing):
                    _bump(meta.anti_affinity_pairs, t.topology_key, labels, sign)


# --------------------------------------------------------------------------- plugin


def _hits(table: Mapping[str, int], values: Iterable[str]) -> npt.NDArray[np.bool_]:
    """A boolean table over label codes, with a last False slot for code -1 (label absent)."""
    hit = np.zeros(len(table) + 1, dtype=bool)
    for value in values:
        code = table.get(value)
        if code is not None:
            hit[code] = True
    return hit


class InterPodAffinity(VectorFilterPlugin[InterPodAffinityMeta]):
    """v1.14 MatchInterPodAffinity (see the module docstring)."""

    incremental = True
    """Keep each class's pair counts between pods (off only to test that it changes nothing)."""

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
        key = affinity_class_key(pod) if self.incremental else None
        found = self._classes.find(key, snapshot) if key is not None else None
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
        if key is not None:
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
        for key, values in _values_by_key(meta.existing_anti_pairs).items():
            codes, table = cols.label(key)
            existing |= _hits(table, values)[codes]
        affinity = np.zeros(n, dtype=bool)
        if meta.checks_affinity:
            grouped = _values_by_key(meta.affinity_pairs)
            for key in meta.affinity_keys:
                codes, table = cols.label(key)
                affinity |= ~_hits(table, grouped.get(key, ()))[codes]
        anti = np.zeros(n, dtype=bool)
        grouped = _values_by_key(meta.anti_affinity_pairs)
        for key in meta.anti_affinity_keys:
            codes, table = cols.label(key)
            anti |= _hits(table, grouped.get(key, ()))[codes]
        # The scalar form stops at the first failing step: later steps only where earlier passed.
        affinity &= ~existing
        anti &= ~(existing | affinity)
        return [
            (ERR_REASON_AFFINITY_NOT_MATCH, existing | affinity | anti),
            (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, existing),
            (ERR_REASON_AFFINITY_RULES_NOT_MATCH, affinity),
            (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, anti),
        ]


FACTORIES: dict[str, Callable[[PluginArgs], InterPodAffinity]] = {NAME: InterPodAffinity}
