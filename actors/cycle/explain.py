"""Placements and hints: what ``simulate`` and ``explain`` report about one decision.

A :class:`~podium.protocol.wire.Placement` is the per-pod entry of ``podium simulate``; an
explanation adds hints, the smallest change that would make a pending pod fit: for each
resource that is the only obstacle on some examined nodes, how much more of it the closest of
those nodes would need, and on how many nodes exactly that much would do ("needs 200m more cpu
on 3 nodes"). A resource the pod asks more of than any node's allocatable is said as that
instead ("no node can ever hold it"): no eviction can make room. Kubernetes has no such
report; the reasons it builds on are its own (and the second is its ``Unresolvable``).
"""

from __future__ import annotations

from collections import defaultdict

from podium.actors.framework.nodeinfo import NodeInfo, PodInfo, Resource
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins.node_resources_fit import insufficient
from podium.protocol.wire import Hint, NodeVerdict, Placement

__all__ = ["format_amount", "hints", "placement"]

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def placement(
    pod: PodInfo,
    result: ScheduleResult,
    *,
    attempts: int,
    explain: bool,
    preempted: list[str] | None = None,
) -> Placement:
    """The simulate entry of one decision (every examined node's verdict with ``explain``)."""
    nodes: dict[str, NodeVerdict] = {}
    if explain:
        for name in result.examined:
            reasons = result.failed.get(name)
            if reasons is not None:
                nodes[name] = NodeVerdict(fits=False, reasons=list(reasons))
            else:
                nodes[name] = NodeVerdict(
                    fits=True,
                    scores=dict(result.scores.get(name, {})),
                    total=result.totals.get(name),
                )
    return Placement(
        namespace=pod.namespace,
        name=pod.name,
        node=result.node,
        message=None if result.node is not None else result.message,
        attempts=attempts,
        nodes=nodes,
        preempted=preempted or [],
    )


def format_amount(resource: str, amount: int) -> str:
    """A resource amount in Kubernetes quantity notation: cpu ``200m``/``2``, bytes ``512Mi``."""
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, size in _BINARY:
            if amount >= size and amount % size == 0:
                return f"{amount // size}{suffix}"
    return str(amount)


def _shortfalls(pod: PodInfo, info: NodeInfo) -> dict[str, int]:
    """How much of each resource ``info`` lacks for ``pod`` (only the lacking ones)."""
    want: Resource = pod.request
    have, used = info.allocatable, info.requested
    out: dict[str, int] = {}
    if len(info.pods) + 1 > have.allowed_pod_number:
        out["pods"] = len(info.pods) + 1 - have.allowed_pod_number
    for name, need, free in (
        ("cpu", want.milli_cpu, have.milli_cpu - used.milli_cpu),
        ("memory", want.memory, have.memory - used.memory),
        (
            "ephemeral-storage",
            want.ephemeral_storage,
            have.ephemeral_storage - used.ephemeral_storage,
        ),
    ):
        if need > free:
            out[name] = need - free
    for name, need in want.scalar.items():
        free = have.scalar.get(name, 0) - used.scalar.get(name, 0)
        if need > free:
            out[name] = need - free
    return out


def _requested_beyond_allocatable(pod: PodInfo, info: NodeInfo) -> dict[str, int]:
    """How much more of each resource ``pod`` asks than ``info``'s whole allocatable: what no
    eviction can free (Kubernetes' noderesources fit.go marks it ``Unresolvable``)."""
    want, have = pod.request, info.allocatable
    out: dict[str, int] = {}
    if have.allowed_pod_number < 1:
        out["pods"] = 1 - have.allowed_pod_number
    for name, need, whole in (
        ("cpu", want.milli_cpu, have.milli_cpu),
        ("memory", want.memory, have.memory),
        ("ephemeral-storage", want.ephemeral_storage, have.ephemeral_storage),
        *((name, need, have.scalar.get(name, 0)) for name, need in want.scalar.items()),
    ):
        if need > whole:
            out[name] = need - whole
    return out


def _beyond_every_node(pod: PodInfo, snapshot: Snapshot) -> dict[str, list[int]]:
    """Each resource the pod asks more of than every node's allocatable: by how much, node by
    node (none when there are no nodes)."""
    beyond: dict[str, list[int]] = defaultdict(list)
    for info in snapshot.node_infos:
        for resource, excess in _requested_beyond_allocatable(pod, info).items():
            beyond[resource].append(excess)
    return {r: excess for r, excess in beyond.items() if len(excess) == len(snapshot)}


def hints(pod: PodInfo, result: ScheduleResult, snapshot: Snapshot) -> list[Hint]:
    """For each resource that alone keeps the pod off some examined nodes: the least missing
    amount among them and how many nodes need exactly that much (needs ``result.failed``).

    A resource the pod asks more of than any node's allocatable is said as such instead
    (``is_beyond_every_node``): no node can ever hold the pod, and the amount is by how much
    the request exceeds the largest allocatable.
    """
    given = {reason for reasons in result.failed.values() for reason in reasons}
    beyond = {  # (a resource the filter did not hold against the pod is no obstacle)
        resource: excess
        for resource, excess in _beyond_every_node(pod, snapshot).items()
        if insufficient(resource) in given
    }
    closest: dict[str, list[int]] = defaultdict(list)
    for name, reasons in result.failed.items():
        info = snapshot.get(name)
        if info is None or len(reasons) != 1:
            continue
        lacking = _shortfalls(pod, info)
        if len(lacking) == 1:
            ((resource, missing),) = lacking.items()
            if reasons[0] == insufficient(resource) and resource not in beyond:
                closest[resource].append(missing)
    out = [
        Hint(
            resource=resource,
            missing=format_amount(resource, min(excess)),
            nodes=excess.count(min(excess)),
            is_beyond_every_node=True,
        )
        for resource, excess in sorted(beyond.items())
    ]
    for resource in sorted(closest):
        least = min(closest[resource])
        out.append(
            Hint(
                resource=resource,
                missing=format_amount(resource, least),
                nodes=closest[resource].count(least),
            )
        )
    return out
