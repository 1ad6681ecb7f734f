"""What the inter-pod affinity predicate and priority share: compiled terms, class counts.

Kubernetes counterpart: pkg/scheduler/framework/plugins/interpodaffinity/plugin.go (the plugin's
shared state), here over v1.14's helpers: pkg/scheduler/algorithm/priorities/util/topologies.go
(``GetNamespacesFromPodAffinityTerm``, ``PodMatchesTermsNamespaceAndSelector``) and
pkg/scheduler/algorithm/predicates/predicates.go (``GetPodAffinityTerms``,
``GetPodAntiAffinityTerms``).

A term's namespaces default to the namespace of the pod that defines it, and its label selector
is compiled once (:class:`~podium.protocol.labels.Selector`). Existing pods' terms are kept in a
:class:`TermCache` from one pod's pass to the next; the counts both plugins make per class of
incoming pods are kept in :class:`ClassCounts` against the snapshot's journal and brought up to
date from the nodes changed since (:func:`node_changes`), so a pod of a class seen on this
snapshot costs the changed nodes, not every pod of the cluster.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import msgspec

from podium.actors.framework.interface import PredicateError
from podium.protocol.labels import Selector, label_selector_as_selector, label_selector_is_valid
from podium.protocol.objects import enc_hook

if TYPE_CHECKING:
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot
    from podium.protocol.objects import PodAffinityTerm, WeightedPodAffinityTerm

__all__ = [
    "CLASSES",
    "AffinityTerm",
    "ClassCounts",
    "PodTerms",
    "TermCache",
    "TopologyPair",
    "affinity_class_key",
    "compile_term",
    "node_changes",
]

TopologyPair = tuple[str, str]
"""(topology key, the value a node carries for it)."""


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

    def required_affinity(self) -> tuple[AffinityTerm, ...]:
        """``GetPodAffinityTerms``: the requiredDuringSchedulingIgnoredDuringExecution terms."""
        return self._terms("required_affinity")

    def required_anti_affinity(self) -> tuple[AffinityTerm, ...]:
        """``GetPodAntiAffinityTerms``: the required anti-affinity terms."""
        return self._terms("required_anti_affinity")

    def preferred_affinity(self) -> tuple[AffinityTerm, ...]:
        """The preferred affinity terms, weights positive."""
        return self._terms("preferred_affinity")

    def preferred_anti_affinity(self) -> tuple[AffinityTerm, ...]:
        """The preferred anti-affinity terms, weights negated."""
        return self._terms("preferred_anti_affinity")

    def _terms(self, kind: str) -> tuple[AffinityTerm, ...]:
        terms = self._cache.get(kind)
        if terms is None:
            terms = self._cache[kind] = self._compile(kind)
        return terms

    def _compile(self, kind: str) -> tuple[AffinityTerm, ...]:
        """The terms of ``kind``, one of the four accessors' names."""
        affinity = self.pod.pod.spec.affinity
        if affinity is None:
            return ()
        anti = kind.endswith("anti_affinity")
        rules = affinity.pod_anti_affinity if anti else affinity.pod_affinity
        if rules is None:
            return ()
        if kind.startswith("required"):
            required = rules.required_during_scheduling_ignored_during_execution
            return tuple(compile_term(self.pod, t) for t in required)
        preferred = rules.preferred_during_scheduling_ignored_during_execution
        return _compile_weighted(self.pod, preferred, -1 if anti else 1)


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


# --------------------------------------------------------------------------- incremental counts

CLASSES = 64
"""Classes of incoming pods whose counts are kept between pods (least recently used dropped)."""

_KEY_ENCODER = msgspec.msgpack.Encoder(enc_hook=enc_hook)

S = TypeVar("S")


def affinity_class_key(pod: PodInfo) -> bytes:
    """Incoming pods with the same namespace, labels and spec match and are matched alike."""
    meta = pod.pod.metadata
    # msgpack values delimit themselves: the two encodings side by side are one key.
    return _KEY_ENCODER.encode((meta.namespace, meta.labels)) + pod.encoded_spec()


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
