"""PodToleratesNodeTaints: the pod must tolerate every NoSchedule and NoExecute taint.

Kubernetes source: ``PodToleratesNodeTaints`` and ``podToleratesNodeTaints`` in
pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0, ``TolerationsTolerateTaintsWithFilter``
in pkg/apis/core/v1/helper/helpers.go@v1.14.0; reasons from predicates/error.go there.

``PreferNoSchedule`` taints are ignored here (TaintTolerationPriority scores them). A row
without a Node object gets "node(s) had unknown conditions". Both reasons are unresolvable
(v1.14 ``nodesWherePreemptionMightHelp``).

The two forms are :func:`pod_tolerates_node_taints` and its columns twin, which
PodToleratesNodeNoExecuteTaints shares with its own effects, as v1.14 shares
``podToleratesNodeTaints``. The vector form decides once per distinct taint list of the
cluster (``NodeColumns.taint_sets``, each taint judged once per key/value/effect) and gathers
the answer by ``taint_set`` id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from podium.protocol.labels import toleration_tolerates_taint, tolerations_tolerate_taints

if TYPE_CHECKING:
    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot
    from podium.protocol.objects import Taint, Toleration

__all__ = [
    "ERR_REASON_TAINTS_NOT_TOLERATED",
    "ERR_REASON_UNKNOWN_CONDITION",
    "FACTORIES",
    "NAME",
    "TaintToleration",
    "pod_tolerates_node_taints",
    "pod_tolerates_node_taints_columns",
    "taint_sets_tolerated",
]

NAME = names.POD_TOLERATES_NODE_TAINTS

ERR_REASON_TAINTS_NOT_TOLERATED = "node(s) had taints that the pod didn't tolerate"

_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def taint_sets_tolerated(
    tolerations: Sequence[Toleration],
    taint_sets: Sequence[Sequence[Taint]],
    effects: frozenset[str],
) -> npt.NDArray[np.bool_]:
    """For each taint list: are all its taints whose effect is in ``effects`` tolerated?"""
    verdicts: dict[tuple[str, str, str], bool] = {}

    def tolerated(taint: Taint) -> bool:
        # timeAdded does not take part in matching, so judge each key/value/effect once.
        key = (taint.key, taint.value, taint.effect)
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = taint.effect not in effects or any(
                toleration_tolerates_taint(t, taint) for t in tolerations
            )
        return verdict

    return np.fromiter(
        (all(tolerated(t) for t in taints) for taints in taint_sets),
        dtype=bool,
        count=len(taint_sets),
    )


def pod_tolerates_node_taints(pod: PodInfo, node: NodeInfo, effects: frozenset[str]) -> Status:
    """v1.14 ``podToleratesNodeTaints``: the pod tolerates the node's taints of ``effects``."""
    if tolerations_tolerate_taints(pod.pod.spec.tolerations, node.taints, effects):
        return SUCCESS
    return unschedulable(ERR_REASON_TAINTS_NOT_TOLERATED, resolvable=False)


def pod_tolerates_node_taints_columns(
    pod: PodInfo, cols: NodeColumns, effects: frozenset[str]
) -> ReasonMasks:
    """:func:`pod_tolerates_node_taints` for every row, decided once per distinct taint list."""
    tolerated = taint_sets_tolerated(pod.pod.spec.tolerations, cols.taint_sets, effects)
    return [
        (
            ERR_REASON_TAINTS_NOT_TOLERATED,
            ~tolerated[cols.taint_set],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        )
    ]


class TaintToleration(VectorFilterPlugin[None]):
    """v1.14 PodToleratesNodeTaints (see the module docstring)."""

    node_local = True
    missing_node = NODE_UNKNOWN_CONDITION

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        return pod_tolerates_node_taints(pod, node, _EFFECTS)

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        return pod_tolerates_node_taints_columns(pod, cols, _EFFECTS)


FACTORIES: dict[str, Callable[[PluginArgs], TaintToleration]] = {NAME: TaintToleration}
