"""CheckNodeCondition: a node must be Ready, have its network, and be schedulable.

Kubernetes source: ``CheckNodeConditionPredicate`` in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0, reasons from error.go there.

v1.14 walks ``node.status.conditions`` in order and appends one reason per condition that
fails: ``Ready`` whose status is not ``True``, ``NetworkUnavailable`` whose status is not
``False``; then one more when ``spec.unschedulable`` is set (the predicate ignores
tolerations; CheckNodeUnschedulable is the one that honours them). A condition that is absent
does not count. ``OutOfDisk`` is not checked: v1.12 dropped it (kubernetes PR #67037), so
v1.14 never reports "node(s) were out of disk space". A row without a Node object gets
"node(s) had unknown conditions" alone.

Every reason is unresolvable: v1.14's ``nodesWherePreemptionMightHelp`` never preempts for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from podium.actors.framework.interface import (
    ERR_REASON_UNKNOWN_CONDITION,
    NODE_UNKNOWN_CONDITION,
    SUCCESS,
    Code,
    PluginArgs,
    ReasonMasks,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.plugins import names

if TYPE_CHECKING:
    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "ERR_REASON_NETWORK_UNAVAILABLE",
    "ERR_REASON_NOT_READY",
    "ERR_REASON_UNKNOWN_CONDITION",
    "ERR_REASON_UNSCHEDULABLE",
    "FACTORIES",
    "NAME",
    "NodeCondition",
]

NAME = names.CHECK_NODE_CONDITION

ERR_REASON_NOT_READY = "node(s) were not ready"
ERR_REASON_NETWORK_UNAVAILABLE = "node(s) had unavailable network"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"


class NodeCondition(VectorFilterPlugin[None]):
    """v1.14 CheckNodeConditionPredicate (see the module docstring)."""

    node_local = True
    missing_node = NODE_UNKNOWN_CONDITION

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        """Nothing to precompute: the predicate reads only the node."""
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        reasons: list[str] = []
        for cond in node.conditions:
            if cond.type == "Ready" and cond.status != "True":
                reasons.append(ERR_REASON_NOT_READY)
            elif cond.type == "NetworkUnavailable" and cond.status != "False":
                reasons.append(ERR_REASON_NETWORK_UNAVAILABLE)
        if node.unschedulable:
            reasons.append(ERR_REASON_UNSCHEDULABLE)
        return unschedulable(*reasons, resolvable=False) if reasons else SUCCESS

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        # The boolean columns describe a node that lists each condition type at most once;
        # the rare node listing one twice is re-checked by the scalar form below.
        regular = ~cols.duplicate_conditions
        not_ready = cols.not_ready & regular
        network = cols.network_unavailable & regular
        # Both failing: the reasons come in the order the node lists the two conditions.
        network_first = not_ready & network & cols.network_before_ready
        masks: ReasonMasks = [
            (ERR_REASON_NETWORK_UNAVAILABLE, network_first, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
            (ERR_REASON_NOT_READY, not_ready, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
            (
                ERR_REASON_NETWORK_UNAVAILABLE,
                network & ~network_first,
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ),
            (
                ERR_REASON_UNSCHEDULABLE,
                cols.unschedulable & regular,
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ),
        ]
        masks.extend(self._scalar_masks(pod, cols, np.flatnonzero(cols.duplicate_conditions)))
        return masks

    def _scalar_masks(
        self, pod: PodInfo, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> ReasonMasks:
        """One-hot (reason, mask, code) entries for ``rows``, each answered by the scalar form."""
        masks: ReasonMasks = []
        for row in rows.tolist():
            status = self.filter(pod, None, cols.infos[row])
            for reason in status.reasons:
                mask = np.zeros(cols.n, dtype=bool)
                mask[row] = True
                masks.append((reason, mask, status.code))
        return masks


FACTORIES: dict[str, Callable[[PluginArgs], NodeCondition]] = {NAME: NodeCondition}
