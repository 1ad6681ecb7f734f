"""Pod groups for the gang tests: a PodGroup in Kubernetes' form (or ``basic``), and pods that
join one by ``spec.schedulingGroup.podGroupName``."""

from __future__ import annotations

from typing import Any

from builders import decode, make_pod

from podium.protocol import objects as o

__all__ = ["member", "pod_group"]


def pod_group(
    name: str,
    min_count: int | None,
    *,
    ns: str = "ml",
    created: str = "",
    uid: str = "",
) -> o.PodGroup:
    """A scheduling.k8s.io PodGroup: a gang of ``min_count``, or ``basic`` when None."""
    policy: dict[str, Any] = (
        {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    )
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": uid or f"uid-pg-{name}"}
    if created:
        meta["creationTimestamp"] = created
    group: o.PodGroup = decode(
        o.PodGroup,
        {
            "kind": "PodGroup",
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "metadata": meta,
            "spec": {"schedulingPolicy": policy},
        },
    )
    return group


def member(
    name: str,
    group: str,
    *,
    ns: str = "ml",
    cpu: str = "1",
    priority: int = 0,
    node: str = "",
    labels: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    priority_class: str = "",
) -> o.Pod:
    """A pod of ``group`` (in its namespace) asking for ``cpu``; bound when ``node`` is set;
    of ``priority_class`` when given (the store admits no bare priority but 0)."""
    b = (
        make_pod(name)
        .ns(ns)
        .uid(f"uid-{ns}-{name}")
        .req(cpu=cpu)
        .spec(schedulingGroup={"podGroupName": group})
    )
    if priority_class:
        b.spec(priorityClassName=priority_class)
    else:
        b.priority(priority)
    if labels:
        b.labels(labels)
    if affinity:
        b.affinity(affinity)
    if node:
        b.node(node)
    pod: o.Pod = b.obj()
    return pod
