"""PodToleratesNodeNoExecuteTaints: the pod must tolerate every NoExecute taint.

Kubernetes source: ``PodToleratesNodeNoExecuteTaints`` and ``podToleratesNodeTaints`` in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0; reason from predicates/error.go there.

Unlike PodToleratesNodeTaints, v1.14 does not check for a missing Node object here: a row
without one has no taints and passes. The reason is unresolvable (v1.14
``nodesWherePreemptionMightHelp``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    PluginArgs,
    ReasonMasks,
    Skip,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.plugins import names
from podium.actors.plugins.taint_toleration import taint_sets_tolerated
from podium.protocol.labels import tolerations_tolerate_taints

if TYPE_CHECKING:
    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = ["ERR_REASON_TAINTS_NOT_TOLERATED", "FACTORIES", "NAME", "NoExecuteTaints"]

NAME = names.POD_TOLERATES_NODE_NO_EXECUTE_TAINTS

ERR_REASON_TAINTS_NOT_TOLERATED = "node(s) had taints that the pod didn't tolerate"

_EFFECTS = frozenset({"NoExecute"})


class NoExecuteTaints(VectorFilterPlugin[None]):
    """v1.14 PodToleratesNodeNoExecuteTaints (see the module docstring)."""

    node_local = True

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> Skip | None:
        # A toleration with no key, operator Exists and effect "" or NoExecute tolerates every
        # NoExecute taint, so the predicate passes on every node.
        for t in pod.pod.spec.tolerations:
            if not t.key and t.operator == "Exists" and t.effect in ("", "NoExecute"):
                return SKIP
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        if tolerations_tolerate_taints(pod.pod.spec.tolerations, node.taints, _EFFECTS):
            return SUCCESS
        return unschedulable(ERR_REASON_TAINTS_NOT_TOLERATED, resolvable=False)

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        tolerated = taint_sets_tolerated(pod.pod.spec.tolerations, cols.taint_sets, _EFFECTS)
        return [(ERR_REASON_TAINTS_NOT_TOLERATED, ~tolerated[cols.taint_set])]


FACTORIES: dict[str, Callable[[PluginArgs], NoExecuteTaints]] = {NAME: NoExecuteTaints}
