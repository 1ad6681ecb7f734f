"""Pods nominated to nodes by an earlier preemption, and how a fit check counts them.

The queue owns the nominations (it hands the scheduler a copy with each pop); the scheduling cycle
and preemption read them. Kubernetes counterparts: pkg/scheduler/internal/queue/
scheduling_queue.go@v1.14 ``nominatedPodMap``; pkg/scheduler/core/generic_scheduler.go@v1.14
``addNominatedPods`` and ``getLowerPriorityNominatedPods``.
"""

from __future__ import annotations

from collections.abc import Iterator

from podium.actors.framework.nodeinfo import NodeInfo, PodInfo

__all__ = ["NominatedPods", "add_nominated_pods", "lower_priority_nominated_pods"]


class NominatedPods:
    """Pods nominated to nodes by an earlier preemption (v1.14 ``nominatedPodMap``).

    Keyed by pod key (``namespace/name``); each node keeps its pods in nomination order. A pod
    is nominated to at most one node: adding it again moves it.
    """

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add(self, pod: PodInfo, node: str = "") -> None:
        """Nominate ``pod`` to ``node`` (its ``status.nominatedNodeName`` when ``node`` is
        empty; neither: the pod is only removed)."""
        self.delete(pod.key)
        target = node or pod.pod.status.nominated_node_name
        if not target:
            return
        self._by_node.setdefault(target, {})[pod.key] = pod
        self._node_of[pod.key] = target

    def delete(self, key: str) -> None:
        """Forget the nomination of the pod with ``key`` (no-op when it has none)."""
        node = self._node_of.pop(key, None)
        if node is None:
            return
        pods = self._by_node[node]
        del pods[key]
        if not pods:
            del self._by_node[node]

    def pods_for_node(self, node: str) -> list[PodInfo]:
        """The pods nominated to ``node``, in nomination order (``NominatedPodsForNode``)."""
        pods = self._by_node.get(node)
        return list(pods.values()) if pods else []

    def __contains__(self, key: object) -> bool:
        return key in self._node_of

    def __len__(self) -> int:
        return len(self._node_of)

    def __iter__(self) -> Iterator[tuple[str, PodInfo]]:
        """(node, pod) pairs, node by node."""
        for node, pods in self._by_node.items():
            for pod in pods.values():
                yield node, pod


def add_nominated_pods(
    pod: PodInfo, node_info: NodeInfo, nominated: NominatedPods | None
) -> tuple[bool, NodeInfo]:
    """v1.14 ``addNominatedPods``: ``node_info`` as if its nominated pods of equal or higher
    priority than ``pod`` (other than ``pod`` itself) were already running there.

    Returns:
        (whether any pod was added, a clone with them added; ``node_info`` itself when none
        was).
    """
    if nominated is None or node_info.node is None:
        return False, node_info
    out: NodeInfo | None = None
    for p in nominated.pods_for_node(node_info.name):
        if p.priority >= pod.priority and p.key != pod.key:
            if out is None:
                out = node_info.clone()
            out.add_pod(p)
    return (False, node_info) if out is None else (True, out)


def lower_priority_nominated_pods(
    pod: PodInfo, node: str, nominated: NominatedPods | None
) -> list[PodInfo]:
    """v1.14 ``getLowerPriorityNominatedPods``: pods nominated to ``node`` with a lower
    priority than ``pod``; their nomination is cleared when ``pod`` preempts there."""
    if nominated is None:
        return []
    return [p for p in nominated.pods_for_node(node) if p.priority < pod.priority]
