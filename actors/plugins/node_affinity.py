"""NodeAffinityPriority: prefer nodes matching the pod's preferred node affinity terms.

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/node_affinity.go@v1.14.0
(``CalculateNodeAffinityPriorityMap``, ``CalculateNodeAffinityPriorityReduce``). A node's map
score is the sum of the weights of the pod's
``preferredDuringSchedulingIgnoredDuringExecution`` terms it matches; the reduce step is
``NormalizeReduce(10, false)``. As in v1.14 a term is read through
``NodeSelectorRequirementsAsSelector(term.matchExpressions)``:

- terms of weight 0 are skipped;
- only ``matchExpressions`` count: ``matchFields`` are ignored, and a term without
  expressions matches no node;
- an invalid requirement (``In`` without values, ``Gt`` with a non-integer, a bad key or
  value) is an error of the whole attempt, not a non-match (:class:`PredicateError`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import (
    SKIP,
    PluginArgs,
    PredicateError,
    Skip,
    VectorScorePlugin,
)
from podium.actors.plugins import names
from podium.actors.plugins.reduce import NormalizeReduce
from podium.protocol.labels import (
    is_qualified_name,
    is_valid_label_value,
    node_selector_requirement_matches,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot
    from podium.protocol.objects import NodeSelectorRequirement

__all__ = ["FACTORIES", "NAME", "NodeAffinity", "requirement_error"]

NAME = names.NODE_AFFINITY


def requirement_error(req: NodeSelectorRequirement) -> str | None:
    """Why ``labels.NewRequirement`` rejects ``req`` (its v1.14 message), or ``None`` if valid."""
    if not is_qualified_name(req.key):
        return f"invalid label key {req.key!r}"
    op, values = req.operator, req.values
    if op in ("In", "NotIn") and not values:
        return "for 'in', 'notin' operators, values set can't be empty"
    if op in ("Exists", "DoesNotExist") and values:
        return "values set must be empty for exists and does not exist"
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            return "for 'Gt', 'Lt' operators, exactly one value is required"
        if node_selector_requirement_matches(req, {}) is None:
            return "for 'Gt', 'Lt' operators, the value must be an integer"
    for v in values:
        if not is_valid_label_value(v):
            return f"invalid label value: {v!r}"
    if node_selector_requirement_matches(req, {}) is None:
        # A rule protocol.labels enforces that the checks above do not name.
        return f"invalid node selector requirement {req.key} {op} {values}"
    return None


@dataclass(frozen=True, slots=True)
class _Term:
    weight: int
    requirements: tuple[NodeSelectorRequirement, ...]

    def matches(self, labels: dict[str, str]) -> bool:
        # NodeSelectorRequirementsAsSelector: no expressions -> labels.Nothing().
        return bool(self.requirements) and all(
            node_selector_requirement_matches(r, labels) is True for r in self.requirements
        )


class NodeAffinity(NormalizeReduce, VectorScorePlugin[tuple[_Term, ...]]):
    """NodeAffinityPriority: map = matched weights, reduce = NormalizeReduce(10, false)."""

    node_local = True
    reverse = False

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_score(
        self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]
    ) -> tuple[_Term, ...] | Skip:
        """The pod's weighted terms; :data:`SKIP` when it has none (every node scores 0).

        Raises:
            PredicateError: a weighted term holds an invalid requirement (v1.14 fails the
                attempt with the requirement's error).
        """
        affinity = pod.pod.spec.affinity
        if affinity is None or affinity.node_affinity is None:
            return SKIP
        terms: list[_Term] = []
        for pref in affinity.node_affinity.preferred_during_scheduling_ignored_during_execution:
            if pref.weight == 0:
                continue
            reqs = tuple(pref.preference.match_expressions)
            for req in reqs:
                err = requirement_error(req)
                if err is not None:
                    raise PredicateError(err)
            terms.append(_Term(pref.weight, reqs))
        return tuple(terms) if terms else SKIP

    def score(self, pod: PodInfo, meta: tuple[_Term, ...], node: NodeInfo) -> int:
        labels = node.labels
        return sum(t.weight for t in meta if t.matches(labels))

    def score_columns(
        self, pod: PodInfo, meta: tuple[_Term, ...], cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        total = np.zeros(len(rows), dtype=np.int64)
        for term in meta:
            if not term.requirements:
                continue
            match = np.ones(len(rows), dtype=bool)
            for req in term.requirements:
                match &= _requirement_mask(req, cols, rows)
            total += np.where(match, term.weight, 0)
        return total


def _requirement_mask(
    req: NodeSelectorRequirement, cols: NodeColumns, rows: npt.NDArray[np.intp]
) -> npt.NDArray[np.bool_]:
    """Rows whose label ``req.key`` satisfies ``req``: decided once per distinct value."""
    codes, vocab = cols.label(req.key)
    # table[code] for a present value, table[-1] (the extra last slot) for a missing key.
    table = np.zeros(len(vocab) + 1, dtype=bool)
    for value, code in vocab.items():
        table[code] = node_selector_requirement_matches(req, {req.key: value}) is True
    table[-1] = node_selector_requirement_matches(req, {}) is True
    return table[codes[rows]]


FACTORIES: dict[str, Callable[[PluginArgs], NodeAffinity]] = {NAME: NodeAffinity}
