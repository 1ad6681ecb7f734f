"""ServiceAntiAffinityPriority: spread a Service's pods over the values of a node label.

Kubernetes sources (v1.14): pkg/scheduler/algorithm/priorities/selector_spreading.go@v1.14.0
(``CalculateAntiAffinityPriorityMap`` / ``CalculateAntiAffinityPriorityReduce``),
pkg/scheduler/algorithm/priorities/metadata.go@v1.14.0 (``getFirstServiceSelector``). The
priority exists only with a policy argument, ``serviceAntiAffinity: {label: ...}``, so it
reports under the entry's name.

Map: the number of pods on the node in the pod's namespace, not being deleted, that the first
Service selecting the pod also selects (0 when no Service selects it). Reduce, over the
feasible nodes, with ``total`` the sum of every feasible node's count and ``count(v)`` the sum
over the feasible nodes whose label has value ``v``::

    score = 10 * (total - count(value)) / total     (10 when total == 0)

as float64 truncated to int; a node without the label scores 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from podium.actors.framework.interface import (
    MAX_PRIORITY,
    SKIP,
    PluginArgs,
    Skip,
    VectorScorePlugin,
)
from podium.actors.plugins import names
from podium.actors.plugins.selector_spread import (
    CountMatchingPods,
    Siblings,
    first_service_selector,
)
from podium.protocol.objects import LabelSelector

if TYPE_CHECKING:
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = ["FACTORIES", "NAME", "ServiceAntiAffinity", "anti_affinity_reduce"]

NAME = names.SERVICE_ANTI_AFFINITY

_MAX = float(MAX_PRIORITY)


def anti_affinity_reduce(scores: Sequence[int], values: Sequence[str | None]) -> list[int]:
    """v1.14 ``CalculateAntiAffinityPriorityReduce``.

    Args:
        scores: the map scores (the Service's pods per node), one per feasible node.
        values: each node's value of the label, ``None`` where the node lacks it.

    Returns:
        The scores in [0, 10]; 0 for a node without the label.
    """
    total = sum(scores)
    by_value: dict[str, int] = {}
    for value, count in zip(values, scores, strict=True):
        if value is not None:
            by_value[value] = by_value.get(value, 0) + count
    out: list[int] = []
    for value in values:
        if value is None:
            out.append(0)
            continue
        f = _MAX
        if total > 0:
            f = _MAX * (float(total - by_value[value]) / float(total))
        out.append(int(f))
    return out


class ServiceAntiAffinity(CountMatchingPods, VectorScorePlugin[Siblings]):
    """ServiceAntiAffinityPriority: prefer label values holding fewer of the Service's pods.

    The map step counts the pods the first Service selecting the pod selects (its siblings).
    """

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self.label = args.label

    def pre_score(
        self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]
    ) -> Siblings | Skip:
        """The first Service's selector; :data:`SKIP` when no Service selects the pod."""
        selector = first_service_selector(pod, snapshot.objects)
        if selector is None:
            return SKIP
        siblings = Siblings.of(pod.namespace, [LabelSelector(match_labels=selector)])
        return SKIP if siblings is None else siblings

    def normalize(
        self, pod: PodInfo, meta: Siblings | Skip, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        """The reduce step: spread over the label's values; unlabeled nodes score 0."""
        label = self.label
        values = [n.labels.get(label) for n in nodes]
        if meta is SKIP:
            scores = [0] * len(nodes)
        return anti_affinity_reduce(scores, values)


FACTORIES: dict[str, Callable[[PluginArgs], ServiceAntiAffinity]] = {NAME: ServiceAntiAffinity}
