"""PodFitsResources: the node has room for one more pod and for the pod's requests.

Kubernetes: pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0 (``PodFitsResources``,
``GetResourceRequest``) and pkg/scheduler/algorithm/predicates/error.go@v1.14.0
(``InsufficientResourceError.GetReason``: ``"Insufficient <resource name>"``).

Rules:

- The pod count is always checked: ``len(pods) + 1 > allocatable pods`` gives
  ``Insufficient pods``, even for a pod that requests nothing.
- A pod requesting nothing (no cpu, memory or ephemeral storage, no scalar resource named) is
  checked for the pod count only.
- Otherwise ``allocatable < request + requested`` per resource, in the order cpu, memory,
  ephemeral-storage, then the scalar resources (extended, hugepages-*, attachable-volumes-*,
  ``*kubernetes.io/*``). v1.14 walks the scalars in Go map order, which is random; Podium
  sorts them by name so that reasons are deterministic. A scalar the node does not have counts
  as 0 allocatable.
- A row without a Node object is v1.14's "node not found" error.
- The pod request is :attr:`PodInfo.request` (containers summed, init containers maxed, plus
  overhead).
- v1.14's ``ignoredExtendedResources``: an extended resource that an extender manages with
  ``ignoredByScheduler: true`` (``PluginArgs.ignored_extended_resources``) is not checked.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    NODE_NOT_FOUND,
    SUCCESS,
    Code,
    PluginArgs,
    ReasonMasks,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo, Resource
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names

__all__ = [
    "ERR_REASON_INSUFFICIENT_CPU",
    "ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE",
    "ERR_REASON_INSUFFICIENT_MEMORY",
    "ERR_REASON_INSUFFICIENT_PODS",
    "FACTORIES",
    "NAME",
    "PodFitsResources",
    "insufficient",
    "insufficient_resources",
]

NAME = names.POD_FITS_RESOURCES


def insufficient(resource_name: str) -> str:
    """``InsufficientResourceError.GetReason``: ``"Insufficient <resource name>"``."""
    return f"Insufficient {resource_name}"


ERR_REASON_INSUFFICIENT_PODS = insufficient("pods")
ERR_REASON_INSUFFICIENT_CPU = insufficient("cpu")
ERR_REASON_INSUFFICIENT_MEMORY = insufficient("memory")
ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE = insufficient("ephemeral-storage")


def insufficient_resources(
    request: Resource, node: NodeInfo, ignored: frozenset[str] = frozenset()
) -> list[str]:
    """The reasons ``node`` cannot hold a pod requesting ``request``, in v1.14's order.

    Args:
        request: the pod's request (``PodInfo.request``).
        node: the node, with the pods already on it.
        ignored: extended resources not to check (managed by an extender).

    Returns:
        The ``Insufficient ...`` reasons; empty when the pod fits.
    """
    alloc, used = node.allocatable, node.requested
    reasons: list[str] = []
    if len(node.pods) + 1 > alloc.allowed_pod_number:
        reasons.append(ERR_REASON_INSUFFICIENT_PODS)
    if request.is_zero():
        return reasons
    if alloc.milli_cpu < request.milli_cpu + used.milli_cpu:
        reasons.append(ERR_REASON_INSUFFICIENT_CPU)
    if alloc.memory < request.memory + used.memory:
        reasons.append(ERR_REASON_INSUFFICIENT_MEMORY)
    if alloc.ephemeral_storage < request.ephemeral_storage + used.ephemeral_storage:
        reasons.append(ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE)
    for name in sorted(request.scalar):
        if name in ignored:
            continue
        if alloc.scalar.get(name, 0) < request.scalar[name] + used.scalar.get(name, 0):
            reasons.append(insufficient(name))
    return reasons


class PodFitsResources(VectorFilterPlugin[None]):
    """v1.14 ``PodFitsResources`` (see the module docstring)."""

    node_local = True
    missing_node = NODE_NOT_FOUND

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        self.ignored = args.ignored_extended_resources

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        # Never SKIP: the pod count is checked even for a pod that requests nothing.
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        reasons = insufficient_resources(pod.request, node, self.ignored)
        return unschedulable(*reasons) if reasons else SUCCESS

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        masks: ReasonMasks = [
            (ERR_REASON_INSUFFICIENT_PODS, cols.pod_count + 1 > cols.alloc_pods, Code.UNSCHEDULABLE)
        ]
        r = pod.request
        if r.is_zero():
            return masks
        # "free < asked", never "allocatable < asked + used": the sum wraps int64 for
        # quantities that saturate at INT64_MAX, and the scalar form (Python ints) would not.
        masks.append(
            (
                ERR_REASON_INSUFFICIENT_CPU,
                cols.alloc_milli_cpu - cols.req_milli_cpu < r.milli_cpu,
                Code.UNSCHEDULABLE,
            )
        )
        masks.append(
            (
                ERR_REASON_INSUFFICIENT_MEMORY,
                cols.alloc_memory - cols.req_memory < r.memory,
                Code.UNSCHEDULABLE,
            )
        )
        masks.append(
            (
                ERR_REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
                cols.alloc_ephemeral - cols.req_ephemeral < r.ephemeral_storage,
                Code.UNSCHEDULABLE,
            )
        )
        for name in sorted(r.scalar):
            if name in self.ignored:
                continue
            alloc, used = cols.scalar(name)
            masks.append(
                (insufficient(name), np.less(alloc - used, r.scalar[name]), Code.UNSCHEDULABLE)
            )
        return masks


FACTORIES: dict[str, Callable[[PluginArgs], PodFitsResources]] = {NAME: PodFitsResources}
