"""MatchNodeSelector: the node satisfies the pod's nodeSelector and required node affinity.

Kubernetes: pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0 (``PodMatchNodeSelector``,
``PodMatchesNodeSelectorAndAffinityTerms``, ``nodeMatchesNodeSelectorTerms``) and
pkg/apis/core/v1/helper/helpers.go@v1.14.0 (``MatchNodeSelectorTerms``); the per-requirement
rules live in :mod:`podium.protocol.labels`.

Rules:

- ``spec.nodeSelector``: every pair must be among the node's labels.
- ``requiredDuringSchedulingIgnoredDuringExecution``: absent matches every node; present, its
  terms are ORed and an empty list of terms matches nothing. A term's matchExpressions (In,
  NotIn, Exists, DoesNotExist, Gt, Lt) and matchFields (``metadata.name`` In/NotIn with one
  value) are ANDed; a term with neither, or with an invalid requirement, matches nothing.
- Both must hold. The failure is unresolvable (preemption cannot change a node's labels).
- A row without a Node object is v1.14's "node not found" error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    NODE_NOT_FOUND,
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
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.protocol.labels import (
    node_fields,
    node_selector_requirement_matches,
    node_selector_terms_match,
    parse_int64,
    selector_from_set_matches,
)
from podium.protocol.objects import NodeSelectorRequirement, NodeSelectorTerm, Pod

__all__ = [
    "ERR_REASON_NODE_SELECTOR",
    "FACTORIES",
    "NAME",
    "NodeConstraints",
    "PodMatchNodeSelector",
    "node_constraints",
]

NAME = names.MATCH_NODE_SELECTOR

ERR_REASON_NODE_SELECTOR = "node(s) didn't match node selector"

_OBJECT_NAME_FIELD = "metadata.name"

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class NodeConstraints:
    """What a pod demands of a node's labels and fields.

    Attributes:
        node_selector: ``spec.nodeSelector`` (empty: no demand).
        required_terms: the required node affinity terms, or ``None`` when the pod has no
            required node affinity (which matches every node; an empty tuple matches none).
    """

    node_selector: Mapping[str, str]
    required_terms: tuple[NodeSelectorTerm, ...] | None

    @property
    def is_empty(self) -> bool:
        return not self.node_selector and self.required_terms is None

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        """Whether the node ``name`` carrying ``labels`` satisfies both demands."""
        if self.node_selector and not selector_from_set_matches(self.node_selector, labels):
            return False
        return self.required_terms is None or node_selector_terms_match(
            self.required_terms, labels, node_fields(name)
        )


def node_constraints(pod: Pod) -> NodeConstraints:
    """The pod's nodeSelector and required node affinity terms."""
    affinity = pod.spec.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    required = (
        node_affinity.required_during_scheduling_ignored_during_execution
        if node_affinity is not None
        else None
    )
    terms = tuple(required.node_selector_terms) if required is not None else None
    return NodeConstraints(pod.spec.node_selector, terms)


# --------------------------------------------------------------------------- vector form


class _LabelIntegers:
    """Each label value parsed once as Go's ``ParseInt``, per code table, for Gt and Lt.

    A code table (``NodeColumns.label``'s vocab) is never changed once built (a label change
    builds a new one), so it is keyed by identity and kept alive while cached.
    """

    _LIMIT = 64

    def __init__(self) -> None:
        self._tables: dict[int, tuple[dict[str, int], BoolArray, npt.NDArray[np.int64]]] = {}

    def table(self, vocab: dict[str, int]) -> tuple[BoolArray, npt.NDArray[np.int64]]:
        """(is an integer, its value) per code of ``vocab``."""
        hit = self._tables.get(id(vocab))
        if hit is not None and hit[0] is vocab:
            return hit[1], hit[2]
        parsed = [parse_int64(v) for v in vocab]
        valid = np.fromiter((p is not None for p in parsed), dtype=bool, count=len(parsed))
        ints = np.fromiter((p or 0 for p in parsed), dtype=np.int64, count=len(parsed))
        if len(self._tables) >= self._LIMIT:
            self._tables.clear()
        self._tables[id(vocab)] = (vocab, valid, ints)
        return valid, ints


def _expression_mask(
    cols: NodeColumns, req: NodeSelectorRequirement, ints: _LabelIntegers
) -> BoolArray | None:
    """Rows whose labels satisfy ``req``; ``None`` when ``req`` is invalid (its term fails)."""
    if node_selector_requirement_matches(req, {}) is None:
        return None
    codes, vocab = cols.label(req.key)
    op = req.operator
    if op in ("In", "NotIn"):
        hits = [vocab[v] for v in req.values if v in vocab]
        found = np.isin(codes, hits) if hits else np.zeros(cols.n, dtype=bool)
        return found if op == "In" else ~found
    if op == "Exists":
        return codes >= 0
    if op == "DoesNotExist":
        return codes < 0
    # Gt / Lt (the requirement is valid, so its one value is an integer).
    bound = parse_int64(req.values[0])
    assert bound is not None
    if not vocab:
        return np.zeros(cols.n, dtype=bool)
    valid, values = ints.table(vocab)
    per_code: BoolArray = valid & (values > bound if op == "Gt" else values < bound)
    present: BoolArray = codes >= 0
    return present & per_code[np.maximum(codes, 0)]


def _field_mask(cols: NodeColumns, req: NodeSelectorRequirement) -> BoolArray | None:
    """Rows whose fields satisfy ``req`` (``NodeSelectorRequirementsAsFieldSelector``)."""
    if req.operator not in ("In", "NotIn") or len(req.values) != 1:
        return None
    equal = np.zeros(cols.n, dtype=bool)
    if req.key == _OBJECT_NAME_FIELD:
        row = cols.index.get(req.values[0])
        if row is not None:
            equal[row] = True
    return equal if req.operator == "In" else ~equal


def _term_mask(cols: NodeColumns, term: NodeSelectorTerm, ints: _LabelIntegers) -> BoolArray | None:
    if not term.match_expressions and not term.match_fields:
        return None
    ok = np.ones(cols.n, dtype=bool)
    for req in term.match_expressions:
        m = _expression_mask(cols, req, ints)
        if m is None:
            return None
        ok &= m
    for req in term.match_fields:
        m = _field_mask(cols, req)
        if m is None:
            return None
        ok &= m
    return ok


def _terms_mask(
    cols: NodeColumns, terms: Sequence[NodeSelectorTerm], ints: _LabelIntegers
) -> BoolArray:
    ok = np.zeros(cols.n, dtype=bool)
    for term in terms:
        m = _term_mask(cols, term, ints)
        if m is not None:
            ok |= m
    return ok


def _selector_mask(cols: NodeColumns, selector: Mapping[str, str]) -> BoolArray:
    ok = np.ones(cols.n, dtype=bool)
    for key, value in selector.items():
        codes, vocab = cols.label(key)
        code = vocab.get(value)
        if code is None:
            return np.zeros(cols.n, dtype=bool)
        ok &= codes == code
    return ok


class PodMatchNodeSelector(VectorFilterPlugin[NodeConstraints]):
    """v1.14 ``PodMatchNodeSelector`` (see the module docstring).

    ``pre_filter`` answers the pod's constraints, or SKIP for a pod without any.
    """

    node_local = True
    missing_node = NODE_NOT_FOUND

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self._ints = _LabelIntegers()

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> NodeConstraints | Skip:
        c = node_constraints(pod.pod)
        return SKIP if c.is_empty else c

    def filter(self, pod: PodInfo, meta: NodeConstraints, node: NodeInfo) -> Status:
        if meta.matches(node.labels, node.name):
            return SUCCESS
        return unschedulable(ERR_REASON_NODE_SELECTOR, resolvable=False)

    def filter_columns(self, pod: PodInfo, meta: NodeConstraints, cols: NodeColumns) -> ReasonMasks:
        ok = (
            _selector_mask(cols, meta.node_selector)
            if meta.node_selector
            else np.ones(cols.n, dtype=bool)
        )
        if meta.required_terms is not None:
            ok &= _terms_mask(cols, meta.required_terms, self._ints)
        return [(ERR_REASON_NODE_SELECTOR, ~ok, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]


FACTORIES: dict[str, Callable[[PluginArgs], PodMatchNodeSelector]] = {NAME: PodMatchNodeSelector}
