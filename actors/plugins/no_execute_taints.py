"""PodToleratesNodeNoExecuteTaints: the pod must tolerate every NoExecute taint.

Kubernetes source: ``PodToleratesNodeNoExecuteTaints`` and ``podToleratesNodeTaints`` in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0; reason from predicates/error.go there.
``podToleratesNodeTaints`` and the reason are PodToleratesNodeTaints' (:mod:`taint_toleration`).

Unlike PodToleratesNodeTaints, v1.14 does not check for a missing Node object here: a row
without one has no taints and passes. The reason is unresolvable (v1.14
``nodesWherePreemptionMightHelp``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from podium.actors.framework.interface import (
    SKIP,
    PluginArgs,
    ReasonMasks,
    Skip,
    Status,
    VectorFilterPlugin,
)
from podium.actors.plugins import names
from podium.actors.plugins.taint_toleration import (
    ERR_REASON_TAINTS_NOT_TOLERATED,
    pod_tolerates_node_taints,
    pod_tolerates_node_taints_columns,
)

if TYPE_CHECKING:
    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = ["ERR_REASON_TAINTS_NOT_TOLERATED", "FACTORIES", "NAME", "NoExecuteTaints"]

NAME = names.POD_TOLERATES_NODE_NO_EXECUTE_TAINTS

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
        return pod_tolerates_node_taints(pod, node, _EFFECTS)

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        return pod_tolerates_node_taints_columns(pod, cols, _EFFECTS)


FACTORIES: dict[str, Callable[[PluginArgs], NoExecuteTaints]] = {NAME: NoExecuteTaints}
