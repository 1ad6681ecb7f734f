"""A pending pod as the scheduling queue holds it (sans-IO): where it is, its attempts and
backoff, its group (:mod:`podium.actors.queue.core` and :mod:`podium.actors.queue.gangs` share
it), and the pod-level rules both read: the pod's group key, whether a bound pod can move it
(required pod affinity, DoNotSchedule spreading) and whether an update may make it schedulable.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

import msgspec

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.plugins.pod_topology_spread import hard_constraints_select
from podium.protocol.gangs import GROUP_ANNOTATIONS, GROUP_LABELS, pod_group_key
from podium.protocol.labels import label_selector_matches
from podium.protocol.objects import Pod, PodAffinityTerm, PodStatus

__all__ = [
    "Entry",
    "QueueName",
    "QueuedPodInfo",
    "Retried",
    "Where",
    "affinity_term_matches",
    "group_key",
    "group_of",
    "is_pod_updated",
    "live_head",
    "moved_by_assigned_pods",
    "required_pod_affinity_terms",
]

QueueName: TypeAlias = Literal[
    "active", "backoff", "unschedulable", "in_flight", "gated", "waiting"
]
"""Where a pending pod is; ``waiting``: a gang member held before the queue (its group does not
exist, has fewer pods than minCount, or its other members are being scheduled)."""

Where: TypeAlias = Literal["active", "backoff", "unschedulable", "in_flight", "gated", "gang"]
"""Where an entry is; ``gang``: held by its group's unit (which is waiting, or queued)."""


@dataclass(frozen=True, slots=True)
class QueuedPodInfo:
    """A popped pod (v1.14 ``podInfo`` plus Podium's attempt count).

    Attributes:
        pod: the latest version of the pod.
        cycle: the scheduling cycle this pop started.
        attempts: pops of this pod so far, this one included.
        arrived_at: the first enqueue time, kept across retries.
    """

    pod: PodInfo
    cycle: int
    attempts: int
    arrived_at: float


class Retried:
    """What the queue keeps of anything it pops and retries as one: a pending pod
    (:class:`Entry`) or a gang's unit (:class:`~podium.actors.queue.gangs.Gang`).

    Attributes:
        token: the heap entry that is current (older ones are skipped when popped).
        attempts: pops so far; cycle: the scheduling cycle of the last pop.
        backoff_attempts, backoff_updated_at, backoff_expiry: v1.14's ``PodBackoff`` entry.
        unschedulable_since: when it last entered the unschedulable queue.
        updated_in_flight: it changed while popped (its outcome puts it back in activeQ).
    """

    __slots__ = (
        "attempts",
        "backoff_attempts",
        "backoff_expiry",
        "backoff_updated_at",
        "batch",
        "cycle",
        "token",
        "unschedulable_since",
        "updated_in_flight",
    )

    def __init__(self) -> None:
        self.token = 0
        self.attempts = 0
        self.backoff_attempts = 0
        self.backoff_updated_at: float | None = None
        self.backoff_expiry = 0.0
        self.unschedulable_since = 0.0
        self.cycle = 0
        # The first cycle of the batch it was last popped in (its own cycle when it was first).
        self.batch = 0
        self.updated_in_flight = False

    def decided_after(self, cycle: int) -> bool:
        """Whether its last pop came after the pop of ``cycle`` in the same batch: its
        decision already counted what that pop placed, and one at a time that placement's
        bind would have come before its pop, so the bind moves nothing of it (0: a change no
        bind of ours made, which moves it)."""
        return self.batch <= cycle < self.cycle


class Entry(Retried):
    """One pending pod and where it is."""

    __slots__ = (
        "arrival",
        "arrived_at",
        "group",
        "has_affinity",
        "pod",
        "uid",
        "where",
    )

    def __init__(self, pod: PodInfo, now: float, arrival: int) -> None:
        super().__init__()
        self.pod = pod
        self.uid = pod.pod.metadata.uid
        self.arrived_at = now
        self.arrival = arrival
        self.where: Where = "active"
        self.has_affinity = moved_by_assigned_pods(pod.pod)
        # The pod's group (namespace/name), or None: immutable in the store (protocol/gangs.py).
        self.group = group_key(pod.pod)


def required_pod_affinity_terms(pod: Pod) -> list[PodAffinityTerm]:
    """``predicates.GetPodAffinityTerms``: the pod's required pod-affinity terms."""
    affinity = pod.spec.affinity
    if affinity is None or affinity.pod_affinity is None:
        return []
    return affinity.pod_affinity.required_during_scheduling_ignored_during_execution


def moved_by_assigned_pods(pod: Pod) -> bool:
    """Whether a bound pod can move ``pod``: it has required pod-affinity terms, or
    DoNotSchedule topology spread constraints (EvenPodsSpread, adopted from later Kubernetes,
    whose queue moves a pod rejected by PodTopologySpread when a pod it counts is added)."""
    return bool(required_pod_affinity_terms(pod)) or any(
        c.when_unsatisfiable == "DoNotSchedule" for c in pod.spec.topology_spread_constraints
    )


def affinity_term_matches(unschedulable: PodInfo, assigned: PodInfo) -> bool:
    """Whether any required affinity term of ``unschedulable`` selects ``assigned``
    (``getUnschedulablePodsWithMatchingAffinityTerm``: a term's namespaces default to the
    defining pod's own, then ``PodMatchesTermsNamespaceAndSelector``), or one of its
    DoNotSchedule spread constraints counts ``assigned`` (same namespace, selected)."""
    for term in required_pod_affinity_terms(unschedulable.pod):
        namespaces = term.namespaces or (unschedulable.namespace,)
        if assigned.namespace in namespaces and label_selector_matches(
            term.label_selector, assigned.labels
        ):
            return True
    return hard_constraints_select(unschedulable.pod, assigned)


_LABEL, _OLD_LABEL = GROUP_LABELS
_ANNOTATION, _OLD_ANNOTATION = GROUP_ANNOTATIONS


def group_key(pod: Pod) -> str | None:
    """:func:`~podium.protocol.gangs.pod_group_key`, answered in ~0.2 us for a pod that names
    no group (nearly every pod: the queue asks at each add and each bind) instead of ~2.5."""
    if pod.spec.scheduling_group is None:
        labels, annotations = pod.metadata.labels, pod.metadata.annotations
        if not (
            _LABEL in labels
            or _OLD_LABEL in labels
            or _ANNOTATION in annotations
            or _OLD_ANNOTATION in annotations
        ):
            return None
    return pod_group_key(pod)


def group_of(e: Entry) -> str:
    """The group of a member (only called for entries that have one)."""
    assert e.group is not None
    return e.group


_NO_STATUS = PodStatus()


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """v1.14 ``isPodUpdated``: did anything but the status and resourceVersion change?"""

    def strip(pod: Pod) -> Pod:
        meta = msgspec.structs.replace(pod.metadata, resource_version="")
        return msgspec.structs.replace(pod, metadata=meta, status=_NO_STATUS)

    return strip(old) != strip(new)


# The number of stale heap items tolerated beyond twice the live ones before a rebuild.


_Item = TypeVar("_Item", bound=tuple[Any, ...])


def live_head(heap: list[_Item], live: Callable[[_Item], bool]) -> _Item | None:
    """The first item of ``heap`` for which ``live`` holds (None when there is none); the
    stale items before it (an entry or unit moved since, whose token no longer matches) are
    popped on the way."""
    while heap:
        if live(heap[0]):
            return heap[0]
        heapq.heappop(heap)
    return None
