"""EvenPodsSpread: the PodTopologySpread filter.

Kubernetes counterpart: pkg/scheduler/framework/plugins/podtopologyspread/filtering.go
(``calPreFilterState``, ``Filter``, ``ErrReasonConstraintsNotMatch``,
``ErrReasonNodeLabelNotMatch``), release-1.19/1.20; see the package docstring.

Filter. Per constraint, the matching pods are summed per topology value over the counting
nodes; those values are the constraint's domains; ``minimum`` is the smallest domain count
(2**31-1 when there is no domain). A node fails at the first constraint, in order, whose key it
lacks (``ERR_REASON_NODE_LABEL_NOT_MATCH``, unresolvable) or for which
``count(node's value) + self_match - minimum > maxSkew`` (``ERR_REASON_CONSTRAINTS_NOT_MATCH``),
``self_match`` being 1 when the incoming pod matches the constraint's selector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
from podium.actors.plugins.node_selector import PodMatchNodeSelector
from podium.actors.plugins.pod_topology_spread.common import (
    DO_NOT_SCHEDULE,
    CountCache,
    DomainCounts,
    SpreadConstraint,
    column_domains,
    counting_rows,
    spread_constraints,
    walk_domains,
)

if TYPE_CHECKING:
    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "FACTORIES",
    "NAME",
    "EvenPodsSpread",
    "PreFilterMeta",
]

NAME = names.EVEN_PODS_SPREAD

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"


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
        self._cache = CountCache()
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
            counting = counting_rows(pod, cols, keys, self._node_selector)
            domains = column_domains(cols, counting, constraints, spec.matrix(cols)[0])
        else:
            domains = walk_domains(pod, snapshot.node_infos, constraints, spec)
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
            (ERR_REASON_NODE_LABEL_NOT_MATCH, missing_label, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
            (ERR_REASON_CONSTRAINTS_NOT_MATCH, too_skewed, Code.UNSCHEDULABLE),
        ]


FACTORIES: dict[str, Callable[[PluginArgs], EvenPodsSpread]] = {NAME: EvenPodsSpread}
