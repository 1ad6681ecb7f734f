"""CheckServiceAffinity: a service's pods share the values of the configured node labels.

Kubernetes source: ``ServiceAffinity``, ``serviceAffinityMetadataProducer`` and
``checkServiceAffinity`` in pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0, with
``FindLabelsInSet``, ``AddUnsetLabelsToMap``, ``CreateSelectorFromLabels`` and
``FilterPodsByNamespace`` from predicates/utils.go there; the reason from predicates/error.go.

The predicate exists only with a policy argument (``serviceAffinity.labels``). For a pod, the
wanted value of each label ``L`` is:

1. the pod's own ``nodeSelector[L]``, when it names ``L``;
2. otherwise, when some Service in the pod's namespace selects the pod, the value of ``L`` on
   the node of the first existing pod in the pod's namespace that carries all of the pod's
   labels (v1.14 looks those pods up by the pod's labels, not by the Service's selector). The
   first pod decides; a node without ``L`` leaves ``L`` unconstrained.

A node fits when it has every wanted label with the wanted value; nothing wanted fits all.
``pre_filter`` settles the wanted labels once per pod (they do not depend on the node), so
``filter`` is one dict comparison and ``filter_columns`` one gather per label.

Differences from v1.14: "first pod" is the first in node-tree order (v1.14 took the pod
lister's order, which is unspecified); a Service whose ``selector`` is empty selects nothing
(the API server stores an absent selector as empty, and v1.14's lister skips absent ones); the
first pod's node being unknown leaves the labels unconstrained (v1.14 returns an error); a row
without a Node object is judged as a node without labels (v1.14 returns an error).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from podium.actors.framework.snapshot import set_selector_selects
from podium.actors.plugins import names
from podium.protocol.labels import selector_from_set_matches

if TYPE_CHECKING:
    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "ERR_REASON_SERVICE_AFFINITY_VIOLATED",
    "FACTORIES",
    "NAME",
    "ServiceAffinity",
    "wanted_labels",
]

NAME = names.CHECK_SERVICE_AFFINITY

ERR_REASON_SERVICE_AFFINITY_VIOLATED = "node(s) didn't match service affinity"


def _has_service(pod: PodInfo, snapshot: Snapshot) -> bool:
    """Whether a Service in the pod's namespace selects it (``GetPodServices`` non-empty)."""
    return any(
        set_selector_selects(svc.spec.selector, svc.metadata.namespace, pod)
        for svc in snapshot.objects.services.values()
    )


def _first_peer_node_labels(pod: PodInfo, snapshot: Snapshot) -> Mapping[str, str] | None:
    """Labels of the node of the first pod in the namespace carrying all of ``pod``'s labels."""
    for info in snapshot.node_infos:
        for peer in info.pods:
            if peer.namespace == pod.namespace and selector_from_set_matches(
                pod.labels, peer.labels
            ):
                return info.labels
    return None


def wanted_labels(pod: PodInfo, snapshot: Snapshot, labels: tuple[str, ...]) -> dict[str, str]:
    """The node label values the pod must land on (see the module docstring)."""
    selector = pod.pod.spec.node_selector
    wanted = {key: selector[key] for key in labels if key in selector}  # FindLabelsInSet
    if len(wanted) < len(labels) and _has_service(pod, snapshot):
        peer_labels = _first_peer_node_labels(pod, snapshot)
        if peer_labels is not None:
            for key in labels:  # AddUnsetLabelsToMap
                if key not in wanted and key in peer_labels:
                    wanted[key] = peer_labels[key]
    return wanted


class ServiceAffinity(VectorFilterPlugin[dict[str, str]]):
    """v1.14 CheckServiceAffinity, built from ``serviceAffinity.labels`` (see the module docstring)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self.labels = tuple(args.labels)

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> dict[str, str] | Skip:
        wanted = wanted_labels(pod, snapshot, self.labels)
        return wanted if wanted else SKIP

    def filter(self, pod: PodInfo, meta: dict[str, str], node: NodeInfo) -> Status:
        if selector_from_set_matches(meta, node.labels):
            return SUCCESS
        return unschedulable(ERR_REASON_SERVICE_AFFINITY_VIOLATED)

    def filter_columns(self, pod: PodInfo, meta: dict[str, str], cols: NodeColumns) -> ReasonMasks:
        fail = np.zeros(cols.n, dtype=bool)
        for key, value in meta.items():
            codes, table = cols.label(key)
            code = table.get(value)
            if code is None:
                fail[:] = True
            else:
                fail |= codes != code
        return [(ERR_REASON_SERVICE_AFFINITY_VIOLATED, fail, Code.UNSCHEDULABLE)]


FACTORIES: dict[str, Callable[[PluginArgs], ServiceAffinity]] = {NAME: ServiceAffinity}
