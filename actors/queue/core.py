"""The scheduling queue: activeQ, podBackoffQ, the unschedulable pods and the pods in flight.

Kubernetes counterpart: pkg/scheduler/internal/queue/scheduling_queue.go@v1.14 (PriorityQueue)
with pkg/scheduler/util/backoff_utils.go@v1.14 (PodBackoff). Sync and sans-IO: every method that
depends on time takes ``now`` (the trio clock, read by :mod:`podium.actors.queue.actor`).

Owns: every pending pod the scheduler is responsible for, in exactly one place::

    add, update ─────────────────▶ activeQ ──────── pop ────────▶ in flight
                                    ▲ ▲ ▲                          │ │ │
                                    │ │ └─ conflict, or updated ───┘ │ │
                                    │ │    in flight                 │ │
        flush_backoff_completed     │ │ move, not backing off        │ │
    backoffQ ───────────────────────┘ │                              │ │
      ▲ ▲                             │                              │ │
      │ └─ move, backing off ── unschedulable ◀── failed, moveRequestCycle < cycle
      └─────────────────────────────────────────── failed, moveRequestCycle >= cycle

    delete takes a pod out of any of them; a Bound pod leaves from in flight.
    "move": move_all_to_active_queue, assigned_pod_added, flush_unschedulable_leftover.

    add, update with spec.schedulingGates ──▶ gated ── update without them ──▶ activeQ

* A pod with scheduling gates (Kubernetes 1.27+, not v1.14: the SchedulingGates PreEnqueue
  plugin) waits in the gated set, never popped nor moved, until an update removes its last
  gate; it then goes to activeQ with its first arrival time.

* activeQ is ordered by priority (higher first), then arrival: the first enqueue time, kept
  across retries (docs/differences.md, "The queue and the cache"), ties in insertion order.
* backoffQ is ordered by backoff expiry; :meth:`SchedulingQueue.flush_backoff_completed` moves
  the pods whose backoff has expired (exactly at expiry: the actor wakes at
  :meth:`SchedulingQueue.next_deadline`, where v1.14 polled every second).
* unschedulable pods remember when they were put there; every
  ``unschedulable_flush_interval_seconds`` (30 s) the ones waiting longer than
  ``unschedulable_max_wait_seconds`` (5 min) are moved (a later Kubernetes rule adopted on
  purpose; v1.14 used 60 s).
* A popped pod stays known while in flight, in its latest version, so a requeue of a pod deleted
  or bound meanwhile is dropped and one updated meanwhile requeues the update.

Backoff (v1.14 ``PodBackoff``): each failure (``add_unschedulable_if_not_present``) of a pod that
is not backing off any more bumps it, to ``initial * 2^(n-1)`` capped at ``max`` (1, 2, 4, 8, 10,
10 s); a pod whose last bump is more than ``max`` ago starts again at ``initial`` (v1.14
``Gc``); a scheduling-relevant update of an unschedulable pod clears it. Conflicts (the cache's
AssumeConflict) do not bump it.

moveRequestCycle: ``schedulingCycle`` counts pops; every move request (move all, an assigned pod
added, the leftover flush) records the current cycle, so a pod that fails in a cycle during or
after which a move request arrived goes to backoffQ, not to the unschedulable pods.

Pod groups (issue 24; protocol/gangs.py says who belongs to which group and its minCount). The
queue keeps, per group a pod names: the PodGroup (None until it exists), its pending members
(gated ones aside), its members bound, and those *placed* (a gang attempt assumed them; in
flight until Bound). While the group *holds* its members (it does not exist yet, or it is a
gang with fewer than minCount members bound or placed), its pending members are not pods of
activeQ but members of the group's **unit**::

    member added ──▶ unit waiting ── the group exists with minCount pods ──▶ unit in activeQ
                      ▲   (pending + bound)                                    │ pop_batch
                      │                                                        ▼
      a member or the group deleted                                      unit in flight
      (fewer than minCount pods)        requeue_group ◀── too few fit, ───┤ (all its members,
                                        (as a pod: backoff by the         │  one batch)
                                         group's attempts, then           │
                                         backoffQ or unschedulable)       ▼ group_placed
                                                                  placed members in flight
                                                                  until Bound; the rest are
                                                                  ordinary pods from now on

* Waiting is Kubernetes' GangScheduling PreEnqueue (v1.35+): a waiting unit is never popped nor
  moved; :meth:`SchedulingQueue.waiting_message` says why (``waiting for pod group ml/train: 5
  of 8 pods exist``, or ``...: the group does not exist``). A member deleted lowers the count;
  a group deleted sends its members back to waiting for it.
* Once the group has minCount pods, the unit goes to activeQ, ordered against the other units
  by priority (its members' highest), then the group's creation: first as the queue saw it
  (``seen_at``, the trio clock, the only clock the queue can compare with a pod's arrival),
  then its ``creationTimestamp`` (groups recovered or committed together), then its key:
  scheduler-plugins' Coscheduling QueueSort. Against pods, a unit goes before a pod of lower
  priority, or of the same priority that arrived later than the group was created; a tie goes
  to the pod. :meth:`SchedulingQueue.pop_batch` answers a unit whole (its members by priority,
  then arrival), whatever ``max_pods``, with a :class:`PoppedGang`, followed by the units
  that come next (before any pod) while the batch stays within ``max_pods``; a batch of pods
  ends before a unit that comes next, so gangs share a batch only with gangs.
* A unit is requeued, backed off, moved (move all, an assigned pod matching a member's
  affinity, the leftover flush) and given back (a Pop answer that could not be delivered) as
  one pod would be, with the group's own attempts and backoff; a member's update moves it as
  an update moves a pod, and so does the group's minCount lowered (for an unschedulable unit,
  or one in flight whose attempt then fails).
* Once minCount members are placed or bound (:meth:`SchedulingQueue.group_placed`, then
  Bound), the group is *released*: its members schedule as ordinary pods (a ``basic`` group's
  always do). If the binder gives placed members back (:meth:`SchedulingQueue.requeue_group`:
  the store refused the group's bindings), or a bound member goes, the group holds its
  members again and pulls its ordinary ones back into the unit.
* A group costs nothing to pods that name none beyond one check at each add and bind
  (:func:`group_key`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Literal, TypeAlias

import msgspec

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.plugins.pod_topology_spread import hard_constraints_select
from podium.protocol.gangs import GROUP_ANNOTATIONS, GROUP_LABELS, min_count, pod_group_key
from podium.protocol.labels import label_selector_matches
from podium.protocol.objects import Pod, PodAffinityTerm, PodGroup, PodStatus

__all__ = [
    "Nominations",
    "PoppedGang",
    "QueueName",
    "QueuedPodInfo",
    "SchedulingQueue",
    "group_key",
    "is_pod_updated",
    "required_pod_affinity_terms",
]

QueueName: TypeAlias = Literal[
    "active", "backoff", "unschedulable", "in_flight", "gated", "waiting"
]
"""Where a pending pod is; ``waiting``: a gang member held before the queue (its group does not
exist, has fewer pods than minCount, or its other members are being scheduled)."""

_Where: TypeAlias = Literal["active", "backoff", "unschedulable", "in_flight", "gated", "gang"]
"""Where an entry is; ``gang``: held by its group's unit (which is waiting, or queued)."""

_UnitWhere: TypeAlias = Literal["waiting", "active", "backoff", "unschedulable", "in_flight"]


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


@dataclass(frozen=True, slots=True)
class PoppedGang:
    """A gang a :meth:`SchedulingQueue.pop_batch` answered: its group ``key``
    (``namespace/name``), ``min_count``, ``bound``: its members bound or placed (assumed,
    awaiting their binds) before this pop, so ``min_count - bound`` of the popped ones must
    fit, and ``members``: how many of the batch's pods, after the earlier gangs', are its.
    """

    key: str
    min_count: int
    bound: int
    members: int


class _Entry:
    """One pending pod and where it is."""

    __slots__ = (
        "arrival",
        "arrived_at",
        "attempts",
        "backoff_attempts",
        "backoff_expiry",
        "backoff_updated_at",
        "cycle",
        "group",
        "has_affinity",
        "pod",
        "token",
        "uid",
        "unschedulable_since",
        "updated_in_flight",
        "where",
    )

    def __init__(self, pod: PodInfo, now: float, arrival: int) -> None:
        self.pod = pod
        self.uid = pod.pod.metadata.uid
        self.arrived_at = now
        self.arrival = arrival
        self.where: _Where = "active"
        self.token = 0
        self.attempts = 0
        self.backoff_attempts = 0
        self.backoff_updated_at: float | None = None
        self.backoff_expiry = 0.0
        self.unschedulable_since = 0.0
        self.cycle = 0
        self.updated_in_flight = False
        self.has_affinity = _moved_by_assigned_pods(pod.pod)
        # The pod's group (namespace/name), or None: immutable in the store (protocol/gangs.py).
        self.group = group_key(pod.pod)


def required_pod_affinity_terms(pod: Pod) -> list[PodAffinityTerm]:
    """``predicates.GetPodAffinityTerms``: the pod's required pod-affinity terms."""
    affinity = pod.spec.affinity
    if affinity is None or affinity.pod_affinity is None:
        return []
    return affinity.pod_affinity.required_during_scheduling_ignored_during_execution


def _moved_by_assigned_pods(pod: Pod) -> bool:
    """Whether a bound pod can move ``pod``: it has required pod-affinity terms, or
    DoNotSchedule topology spread constraints (EvenPodsSpread, adopted from later Kubernetes,
    whose queue moves a pod rejected by PodTopologySpread when a pod it counts is added)."""
    return bool(required_pod_affinity_terms(pod)) or any(
        c.when_unsatisfiable == "DoNotSchedule" for c in pod.spec.topology_spread_constraints
    )


def _affinity_term_matches(unschedulable: PodInfo, assigned: PodInfo) -> bool:
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


def _group_of(e: _Entry) -> str:
    """The group of a member (only called for entries that have one)."""
    assert e.group is not None
    return e.group


def _gated(pod: PodInfo) -> bool:
    return bool(pod.pod.spec.scheduling_gates)


def _same_pod(e: _Entry, pod: PodInfo) -> bool:
    """Same key is given; a different uid (both known) is a deleted-and-re-created pod."""
    uid = pod.pod.metadata.uid
    return not (uid and e.uid and uid != e.uid)


_NO_STATUS = PodStatus()


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """v1.14 ``isPodUpdated``: did anything but the status and resourceVersion change?"""

    def strip(pod: Pod) -> Pod:
        meta = msgspec.structs.replace(pod.metadata, resource_version="")
        return msgspec.structs.replace(pod, metadata=meta, status=_NO_STATUS)

    return strip(old) != strip(new)


# The number of stale heap items tolerated beyond twice the live ones before a rebuild.
_HEAP_SLACK = 1024


class _Gang:
    """One pod group as the queue sees it: the group object (None until it exists), its
    pending members, the members bound or placed, and its *unit* (the members it holds, queued
    and backed off as one, with the group's own attempts and backoff).

    ``pending``: every pending member the queue holds that is not gated, wherever it is (held
    by the unit, an ordinary entry, in flight). ``members``: the ones the unit holds (``where``
    is ``gang``, or ``in_flight`` when the unit's pop took them). ``placed``: members a gang
    attempt assumed, in flight until their Bound (or until the binder gives them back).
    ``released``: the members are ordinary pods (the group is ``basic``, or has minCount
    members bound or placed), as of the last regroup (a unit in flight defers it).
    """

    __slots__ = (
        "attempts",
        "backoff_attempts",
        "backoff_expiry",
        "backoff_updated_at",
        "bound",
        "creation",
        "cycle",
        "group",
        "key",
        "members",
        "min_count",
        "pending",
        "placed",
        "priority",
        "quorum_at",
        "released",
        "seen_at",
        "token",
        "unschedulable_since",
        "updated_in_flight",
        "where",
    )

    def __init__(self, key: str) -> None:
        self.key = key
        self.group: PodGroup | None = None
        self.min_count: int | None = None
        self.creation = ""
        self.seen_at = 0.0
        self.pending: dict[str, _Entry] = {}
        self.members: dict[str, _Entry] = {}
        self.bound: set[str] = set()
        self.placed: set[str] = set()
        self.where: _UnitWhere = "waiting"
        self.token = 0
        self.priority = 0
        self.attempts = 0
        self.backoff_attempts = 0
        self.backoff_updated_at: float | None = None
        self.backoff_expiry = 0.0
        self.unschedulable_since = 0.0
        self.cycle = 0
        self.updated_in_flight = False
        self.quorum_at: float | None = None
        # The last regroup found the group not holding its members: they are ordinary pods.
        self.released = False

    @property
    def held(self) -> bool:
        """Whether the group's pending members wait for and go with the unit: the group does
        not exist yet, or it is a gang with fewer than minCount members bound or placed
        (afterwards its members schedule as ordinary pods; a ``basic`` group's always do)."""
        if self.group is None:
            return True
        return self.min_count is not None and len(self.bound) + len(self.placed) < self.min_count

    @property
    def exist(self) -> int:
        """The group's pods: pending (gated ones aside) and bound."""
        return len(self.pending) + len(self.bound)

    @property
    def quorum(self) -> bool:
        """The group exists and has at least minCount pods (the GangScheduling PreEnqueue)."""
        return (
            self.min_count is not None and self.group is not None and (self.exist >= self.min_count)
        )

    def order(self) -> tuple[int, float, str, str]:
        """The unit's place in activeQ: its priority (the highest of its members'), then the
        group's creation as the queue saw it (``seen_at``, the trio clock), its
        ``creationTimestamp`` and its key (Coscheduling's QueueSort)."""
        return (-self.priority, self.seen_at, self.creation, self.key)

    def sorted_members(self) -> list[_Entry]:
        """The unit's members in the order they are decided: priority, then arrival."""
        return sorted(self.members.values(), key=lambda e: (-e.pod.priority, e.arrival))


class SchedulingQueue:
    """v1.14 ``PriorityQueue``, sans locks and goroutines.

    Args:
        pod_initial_backoff_seconds: the first backoff of a failed pod.
        pod_max_backoff_seconds: the longest backoff.
        unschedulable_flush_interval_seconds: how often the leftover flush runs.
        unschedulable_max_wait_seconds: how long a pod may stay unschedulable before the
            flush moves it.
        now: the time the queue starts; the leftover flush runs at ``now + k * interval``.
    """

    def __init__(
        self,
        *,
        pod_initial_backoff_seconds: float = 1.0,
        pod_max_backoff_seconds: float = 10.0,
        unschedulable_flush_interval_seconds: float = 30.0,
        unschedulable_max_wait_seconds: float = 300.0,
        now: float = 0.0,
    ) -> None:
        if (
            pod_initial_backoff_seconds <= 0
            or pod_max_backoff_seconds < pod_initial_backoff_seconds
        ):
            raise ValueError(
                f"backoff must satisfy 0 < initial <= max, got initial "
                f"{pod_initial_backoff_seconds} s and max {pod_max_backoff_seconds} s"
            )
        if unschedulable_flush_interval_seconds <= 0:
            raise ValueError(
                "the unschedulable flush interval must be positive, got "
                f"{unschedulable_flush_interval_seconds} s"
            )
        self.pod_initial_backoff_seconds = pod_initial_backoff_seconds
        self.pod_max_backoff_seconds = pod_max_backoff_seconds
        self.unschedulable_flush_interval_seconds = unschedulable_flush_interval_seconds
        self.unschedulable_max_wait_seconds = unschedulable_max_wait_seconds
        self._pods: dict[str, _Entry] = {}
        # (-priority, arrived_at, arrival, token, key); stale items are skipped.
        self._active_q: list[tuple[int, float, int, int, str]] = []
        self._active_n = 0
        # (backoff expiry, token, key)
        self._backoff_q: list[tuple[float, int, str]] = []
        self._backoff_n = 0
        self._unschedulable_pods: dict[str, _Entry] = {}
        # The unschedulable pods with required pod-affinity terms (or DoNotSchedule spread
        # constraints): the only ones an assigned pod can move (keeps Bound handling off the whole unschedulable set).
        self._unschedulable_with_affinity: dict[str, _Entry] = {}
        self._in_flight: dict[str, _Entry] = {}
        self._gated: dict[str, _Entry] = {}
        self._scheduling_cycle = 0
        self._move_request_cycle = -1
        self._arrivals = 0
        self._tokens = 0
        self._flush_origin = now
        self._next_flush_at = now + unschedulable_flush_interval_seconds
        # Pod groups (gangs): every group a pending or bound pod names, or the store holds.
        self._gangs: dict[str, _Gang] = {}
        # Units in activeQ: (-priority, seen_at, creationTimestamp, key, token).
        self._active_units: list[tuple[int, float, str, str, int]] = []
        # Units in backoffQ: (backoff expiry, token, key).
        self._backoff_units: list[tuple[float, int, str]] = []
        self._unschedulable_units: dict[str, _Gang] = {}
        # The unschedulable units with a member an assigned pod can move.
        self._unschedulable_units_with_affinity: set[str] = set()
        # Pods held by the units in each sub-queue (counted with the pods there).
        self._unit_pods: dict[str, int] = {"active": 0, "backoff": 0, "unschedulable": 0}
        self._waiting_groups: set[str] = set()
        # Held pods that entered activeQ with their unit (its quorum met), since the last
        # take_activated(); and the groups whose last placed member was bound since the last
        # take_completed(), with the seconds from their quorum.
        self._activated = 0
        self._completed: list[tuple[str, float]] = []

    # ------------------------------------------------------------------ observation

    @property
    def scheduling_cycle(self) -> int:
        """Pops so far (v1.14 ``SchedulingCycle()``)."""
        return self._scheduling_cycle

    @property
    def move_request_cycle(self) -> int:
        """The scheduling cycle of the last move request (-1: none yet)."""
        return self._move_request_cycle

    @property
    def active_count(self) -> int:
        """Pods in activeQ, those of the units there included."""
        return self._active_n + self._unit_pods["active"]

    @property
    def backoff_count(self) -> int:
        """Pods in backoffQ, those of the units there included."""
        return self._backoff_n + self._unit_pods["backoff"]

    @property
    def unschedulable_count(self) -> int:
        """v1.14 ``NumUnschedulablePods()``, the pods of unschedulable units included."""
        return len(self._unschedulable_pods) + self._unit_pods["unschedulable"]

    @property
    def waiting_groups(self) -> int:
        """Groups whose pending members wait before the queue (no group yet, or fewer pods
        than minCount)."""
        return len(self._waiting_groups)

    @property
    def gated_count(self) -> int:
        """Pods waiting for their scheduling gates to be removed."""
        return len(self._gated)

    @property
    def in_flight_count(self) -> int:
        return len(self._in_flight)

    @property
    def in_flight_keys(self) -> Collection[str]:
        """Keys of the popped pods not given back yet."""
        return self._in_flight.keys()

    def __len__(self) -> int:
        """Every pod the queue knows, in flight included."""
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def lookup(self, key: str) -> tuple[QueueName | None, int]:
        """Where the pod ``key`` is (None: not pending) and how many times it was popped; a
        member its unit holds is where its unit is, or ``waiting``."""
        e = self._pods.get(key)
        if e is None:
            return (None, 0)
        if e.where != "gang":
            return (e.where, e.attempts)
        where = self._gangs[_group_of(e)].where
        if where == "active" or where == "backoff" or where == "unschedulable":
            return (where, e.attempts)
        return ("waiting", e.attempts)

    def held(self, key: str) -> bool:
        """Whether the pod ``key`` is a member its group's unit holds."""
        e = self._pods.get(key)
        return e is not None and e.where == "gang"

    def waiting_message(self, key: str) -> str:
        """Why the pod ``key`` waits before the queue for its group ("" when it does not):
        ``waiting for pod group ml/train: 5 of 8 pods exist``."""
        e = self._pods.get(key)
        if e is None or e.where != "gang":
            return ""
        g = self._gangs[_group_of(e)]
        if g.where == "in_flight":
            return f"waiting for pod group {g.key}: its other members are being scheduled"
        if g.where != "waiting":
            return ""
        if g.group is None:
            return f"waiting for pod group {g.key}: the group does not exist"
        return f"waiting for pod group {g.key}: {g.exist} of {g.min_count} pods exist"

    def backoff_expiry(self, key: str) -> float | None:
        """When the pod's current backoff ends (its unit's, for a held member), or None when it
        has no backoff."""
        e = self._pods.get(key)
        if e is None:
            return None
        b: _Entry | _Gang = self._gangs[_group_of(e)] if e.where == "gang" else e
        if b.backoff_updated_at is None:
            return None
        return b.backoff_expiry

    def take_activated(self) -> int:
        """Held pods that entered activeQ with their unit since the last call."""
        n, self._activated = self._activated, 0
        return n

    def take_completed(self) -> list[tuple[str, float]]:
        """``(group, seconds)`` for each gang whose last placed member was bound since the last
        call: the seconds from its quorum to that bind."""
        done, self._completed = self._completed, []
        return done

    def pending_pods(self) -> Iterator[PodInfo]:
        """Every pod waiting in a queue (v1.14 ``PendingPods``; in-flight pods excluded)."""
        return (e.pod for e in self._pods.values() if e.where != "in_flight")

    def next_deadline(self) -> float | None:
        """The earliest time something must happen without a message: a backoff expiring,
        or the next leftover flush while pods are unschedulable; None when nothing is due."""
        deadline: float | None = None
        q = self._backoff_q
        while q and not self._valid_backoff(q[0]):
            heapq.heappop(q)
        if q:
            deadline = q[0][0]
        units = self._backoff_units
        while units and not self._valid_backoff_unit(units[0]):
            heapq.heappop(units)
        if units:
            deadline = units[0][0] if deadline is None else min(deadline, units[0][0])
        if self._unschedulable_pods or self._unschedulable_units:
            flush = self._next_flush_at
            deadline = flush if deadline is None else min(deadline, flush)
        return deadline

    def start(self, now: float) -> None:
        """Restart the leftover-flush clock at ``now`` (the actor's start time)."""
        self._flush_origin = now
        self._next_flush_at = now + self.unschedulable_flush_interval_seconds

    # ------------------------------------------------------------------ cluster events

    def add(self, pod: PodInfo, now: float) -> None:
        """A new pending pod (v1.14 ``Add``): into activeQ, arriving ``now``.

        A pod already queued with the same uid is moved to activeQ in this version (keeping its
        arrival), one in flight is updated as :meth:`update` does; one with another uid was
        deleted and re-created, so the old one is dropped.
        """
        e = self._known(pod, now)
        if e is None:
            self._arrivals += 1
            e = _Entry(pod, now, self._arrivals)
            self._pods[pod.key] = e
            self._enqueue(e, now)
            return
        if e.where == "in_flight":
            self._update_in_flight(e, pod)
            return
        self._detach(e)
        self._set_pod(e, pod)
        self._enqueue(e, now)

    def update(self, old: PodInfo | None, new: PodInfo, now: float) -> None:
        """A pending pod changed (v1.14 ``Update``).

        In activeQ it is updated in place; in backoffQ it moves to activeQ; an unschedulable pod
        whose update may make it schedulable (:func:`is_pod_updated`) has its backoff cleared and
        moves to activeQ, else stays; in flight, the latest version is kept for the requeue;
        unknown, it is added. A gated pod stays gated while it has gates and goes to activeQ
        when the update removed the last one. The arrival time never changes. A member its unit
        holds moves its unit as the update would move a pod (an unschedulable or backing-off
        unit to activeQ); the store keeps a pod's group unchanged.
        """
        e = self._known(new, now)
        if e is None:
            self.add(new, now)
            return
        if e.where == "gated" or (e.where != "in_flight" and _gated(new)):
            self._detach(e)
            self._set_pod(e, new)
            self._enqueue(e, now)
            return
        match e.where:
            case "gang":
                self._update_held(e, old, new)
            case "in_flight":
                self._update_in_flight(e, new)
            case "active":
                reorder = new.priority != e.pod.priority
                self._set_pod(e, new)
                if reorder:
                    self._active_n -= 1
                    self._push_active(e)
            case "backoff":
                self._detach(e)
                self._set_pod(e, new)
                self._push_active(e)
            case "unschedulable":
                if is_pod_updated((old or e.pod).pod, new.pod):
                    self._detach(e)
                    self._clear_backoff(e)
                    self._set_pod(e, new)
                    self._push_active(e)
                else:
                    self._detach(e)
                    self._set_pod(e, new)
                    self._put_unschedulable(e, e.unschedulable_since)

    def delete(self, pod: PodInfo, now: float = 0.0, *, bound: bool = False) -> bool:
        """The pod is gone, bound or no longer ours (v1.14 ``Delete``): forget it wherever it
        is, in flight included. Returns whether it was known (same key and uid).

        ``bound``: it left because it was bound; a member of a group then counts as one of its
        bound members (:meth:`assigned_member`).
        """
        e = self._pods.get(pod.key)
        if e is None or not _same_pod(e, pod):
            if bound:
                self.assigned_member(pod, now)
            return False
        self._forget(e, now, bound=bound)
        return True

    # ------------------------------------------------------------------ pod groups

    def group_changed(self, key: str, group: PodGroup | None, now: float) -> None:
        """The PodGroup ``key`` (``namespace/name``) was put, or deleted (``group`` None): its
        waiting members are let in once it has minCount pods, a ``basic`` group's (or a gang's
        with minCount members bound) schedule as ordinary pods, and those of a deleted group go
        back to waiting for it. A lowered minCount may let the gang fit: its unschedulable unit
        is moved (to backoffQ while backing off, else activeQ), and one in flight goes straight
        back to activeQ if its attempt fails (Kubernetes' GangScheduling queueing hint: a
        PodGroup update that decreases minCount is ``Queue``)."""
        g = self._gangs.get(key)
        if g is None:
            if group is None:
                return
            g = self._gangs[key] = _Gang(key)
        if group is not None and g.group is None:
            g.seen_at = now
        before = g.min_count
        g.group = group
        if group is None:
            g.min_count, g.creation = None, ""
        else:
            g.min_count = min_count(group)
            g.creation = group.metadata.creation_timestamp or ""
        self._regroup(g, now)
        if before is not None and g.min_count is not None and g.min_count < before:
            if g.where == "unschedulable":
                self._move_unit_from_unschedulable(g, now)
            elif g.where == "in_flight":
                g.updated_in_flight = True

    def assigned_member(self, pod: PodInfo, now: float) -> None:
        """A pod is bound (or was found bound): if it names a group, one more of the group's
        members is bound (once per pod)."""
        key = group_key(pod.pod)
        if key is None:
            return
        g = self._gangs.get(key)
        if g is None:
            g = self._gangs[key] = _Gang(key)
        if pod.key in g.bound:
            return
        self._count_bound(g, pod.key, now)
        self._regroup(g, now)

    def unassigned_member(self, pod: PodInfo, now: float) -> None:
        """A bound pod was deleted or stopped holding its place: its group has one bound member
        fewer (its waiting members may be held again)."""
        key = group_key(pod.pod)
        g = self._gangs.get(key) if key is not None else None
        if g is None or pod.key not in g.bound:
            return
        g.bound.discard(pod.key)
        self._regroup(g, now)

    def group_placed(self, key: str, pods: Collection[PodInfo], now: float) -> None:
        """A gang attempt placed ``pods`` (assumed, handed to the binder) and met the group's
        minCount: they stay in flight until bound, counted as placed; the unit's other members
        popped with them are ordinary pods in flight now (their own Requeue follows), and the
        members that arrived meanwhile schedule as ordinary pods once the group has minCount
        members placed or bound."""
        g = self._gangs.get(key)
        if g is None:
            return
        for pod in pods:
            e = self._in_flight_entry(pod)
            if e is not None and e.group == key:
                g.placed.add(pod.key)
        if g.where == "in_flight":
            self._end_flight(g)
        self._regroup(g, now)

    def requeue_group(
        self,
        key: str,
        pods: Collection[PodInfo],
        cycle: int,
        why: Literal["unschedulable", "error", "conflict"],
        now: float,
    ) -> tuple[QueueName | None, int]:
        """Give a gang back as one unit: the members ``pods`` in flight (its attempt in
        ``cycle`` placed fewer than it needed, the cache refused one of them, or the store
        refused the group's bindings) go back into the unit with the group's other held
        members, and the unit goes where :meth:`add_unschedulable_if_not_present` sends a pod
        (its backoff bumped, the group's attempts counting), or straight to activeQ for a
        ``conflict`` or a member updated in flight. Returns where the unit went and how many
        pods it holds; ``(None, 0)`` when no member was in flight any more."""
        g = self._gangs.get(key)
        if g is None:
            return (None, 0)
        updated = g.updated_in_flight  # minCount lowered during the attempt
        if g.where == "in_flight":
            self._end_flight(g)
        elif g.where != "waiting":
            self._detach_unit(g)
        back = 0
        for pod in pods:
            e = self._in_flight_entry(pod)
            if e is None or e.group != key:
                continue
            del self._in_flight[pod.key]
            g.placed.discard(pod.key)
            updated = updated or e.updated_in_flight
            self._hold(g, e)
            back += 1
        if not back:
            self._regroup(g, now)
            return (None, 0)
        self._regroup(g, now, place=False)
        if not g.members:
            # Released: the group is no longer a gang (basic, or minCount bound meanwhile).
            return ("active", back)
        if not g.quorum:
            self._note_waiting(g)
            return ("waiting", len(g.members))
        if why == "conflict" or updated:
            self._push_unit_active(g)
            return ("active", len(g.members))
        self._backoff_pod(g, now)
        if self._move_request_cycle >= cycle:
            self._push_unit_backoff(g)
            return ("backoff", len(g.members))
        self._put_unit_unschedulable(g, now)
        return ("unschedulable", len(g.members))

    def assigned_pod_added(self, pod: PodInfo, now: float) -> int:
        """A pod was bound (v1.14 ``AssignedPodAdded``/``AssignedPodUpdated``).

        Moves the unschedulable pods with a required pod-affinity term matching ``pod``, or a
        DoNotSchedule spread constraint counting it (to backoffQ while backing off, else to
        activeQ), and records a move request even when none
        matched, as v1.14 ``movePodsToActiveQueue`` does. Returns the number moved.
        """
        moved = [
            e
            for e in self._unschedulable_with_affinity.values()
            if _affinity_term_matches(e.pod, pod)
        ]
        for e in moved:
            self._move_from_unschedulable(e, now)
        count = len(moved)
        if self._unschedulable_units_with_affinity:
            units = [
                self._gangs[key]
                for key in self._unschedulable_units_with_affinity
                if any(
                    m.has_affinity and _affinity_term_matches(m.pod, pod)
                    for m in self._gangs[key].members.values()
                )
            ]
            for g in units:
                count += len(g.members)
                self._move_unit_from_unschedulable(g, now)
        self._move_request_cycle = self._scheduling_cycle
        return count

    def move_all_to_active_queue(self, now: float) -> int:
        """v1.14 ``MoveAllToActiveQueue``: every unschedulable pod to backoffQ (still backing
        off) or activeQ, and a move request at the current cycle. Returns the number moved."""
        moved = list(self._unschedulable_pods.values())
        for e in moved:
            self._move_from_unschedulable(e, now)
        count = len(moved)
        if self._unschedulable_units:
            for g in list(self._unschedulable_units.values()):
                count += len(g.members)
                self._move_unit_from_unschedulable(g, now)
        self._move_request_cycle = self._scheduling_cycle
        return count

    # ------------------------------------------------------------------ the scheduler's side

    def pop(self, now: float) -> QueuedPodInfo | None:
        """The head of activeQ's pods (backoffs completed by ``now`` first), or None when there
        is none; units are popped by :meth:`pop_batch`. Starts a scheduling cycle; the pod is in
        flight until requeued, bound or deleted."""
        self.flush_backoff_completed(now)
        q = self._active_q
        while q:
            item = heapq.heappop(q)
            e = self._pods.get(item[4])
            if e is None or e.where != "active" or e.token != item[3]:
                continue
            self._active_n -= 1
            self._scheduling_cycle += 1
            e.attempts += 1
            e.cycle = self._scheduling_cycle
            e.updated_in_flight = False
            e.where = "in_flight"
            self._in_flight[e.pod.key] = e
            return QueuedPodInfo(e.pod, e.cycle, e.attempts, e.arrived_at)
        return None

    def pop_batch(
        self, now: float, max_pods: int, alone: Callable[[PodInfo], bool]
    ) -> tuple[list[QueuedPodInfo], list[PoppedGang]]:
        """Up to ``max_pods`` pops in a row, as successive :meth:`pop` calls at ``now`` would
        give them; a pod for which ``alone`` holds comes in a batch of its own (the batch ends
        before it, or after it when it is the first). Empty when activeQ is empty.

        When a gang's unit leads activeQ, the batch is units: that one, every member it holds
        whatever ``max_pods`` (a gang is decided whole), then each unit that comes next, whole,
        while the batch stays within ``max_pods``, each with its :class:`PoppedGang` (a pod
        that comes next ends it); a batch of pods ends before a unit that comes next. A unit
        comes before a pod of lower priority, or of the same priority that arrived after the
        group was created (on the queue's clock); a tie goes to the pod.
        """
        # Backoffs ended by ``now`` first, whatever activeQ holds: a unit whose backoff has
        # just ended may be the head.
        self.flush_backoff_completed(now)
        if self._active_units:
            unit = self._head_unit()
            if unit is not None and self._unit_first(unit, self._head_active()):
                return self._pop_units(unit, max_pods)
        first = self.pop(now)
        if first is None:
            return [], []
        batch = [first]
        if alone(first.pod):
            return batch, []
        while len(batch) < max_pods:
            head = self._head_active()
            if head is None or alone(head.pod):
                break
            if self._active_units:
                unit = self._head_unit()
                if unit is not None and self._unit_first(unit, head):
                    break
            queued = self.pop(now)
            assert queued is not None  # the head is active
            batch.append(queued)
        return batch, []

    @property
    def has_affinity_waiters(self) -> bool:
        """Whether an unschedulable pod waits for an assigned pod to match its affinity or
        spread constraints (:meth:`assigned_pod_added` would move it), alone or in a unit."""
        return bool(self._unschedulable_with_affinity or self._unschedulable_units_with_affinity)

    def _head_unit(self) -> _Gang | None:
        """The unit :meth:`pop_batch` would take next among the units (stale items dropped)."""
        q = self._active_units
        while q:
            g = self._gangs.get(q[0][3])
            if g is not None and g.where == "active" and g.token == q[0][4]:
                return g
            heapq.heappop(q)
        return None

    @staticmethod
    def _unit_first(unit: _Gang, head: _Entry | None) -> bool:
        """Whether ``unit`` goes before the pod ``head`` (see :meth:`pop_batch`)."""
        if head is None:
            return True
        return (-unit.priority, unit.seen_at) < (-head.pod.priority, head.arrived_at)

    def _pop_units(
        self, unit: _Gang, max_pods: int
    ) -> tuple[list[QueuedPodInfo], list[PoppedGang]]:
        """``unit`` whole, then the units that come next (before any pod) while the batch
        stays within ``max_pods`` (see :meth:`pop_batch`)."""
        popped: list[QueuedPodInfo] = []
        gangs: list[PoppedGang] = []
        while True:
            gangs.append(self._pop_unit(unit, popped))
            if not self._active_units:
                break
            nxt = self._head_unit()
            if (
                nxt is None
                or len(popped) + len(nxt.members) > max_pods
                or not self._unit_first(nxt, self._head_active())
            ):
                break
            unit = nxt
        return popped, gangs

    def _pop_unit(self, g: _Gang, popped: list[QueuedPodInfo]) -> PoppedGang:
        """Pop the head unit ``g`` (its own scheduling cycle, as a pod's pop), its members
        appended to ``popped``."""
        heapq.heappop(self._active_units)
        self._unit_pods["active"] -= len(g.members)
        self._scheduling_cycle += 1
        cycle = self._scheduling_cycle
        g.attempts += 1
        g.cycle = cycle
        g.updated_in_flight = False
        g.where = "in_flight"
        g.token = 0
        members = g.sorted_members()
        for e in members:
            e.attempts += 1
            e.cycle = cycle
            e.updated_in_flight = False
            e.where = "in_flight"
            self._in_flight[e.pod.key] = e
            popped.append(QueuedPodInfo(e.pod, cycle, e.attempts, e.arrived_at))
        assert g.min_count is not None  # a unit is queued only once its group is a gang
        return PoppedGang(g.key, g.min_count, len(g.bound) + len(g.placed), len(members))

    def _head_active(self) -> _Entry | None:
        """The entry :meth:`pop` would take next (stale heap items dropped on the way)."""
        q = self._active_q
        while q:
            e = self._pods.get(q[0][4])
            if e is not None and e.where == "active" and e.token == q[0][3]:
                return e
            heapq.heappop(q)
        return None

    def cancel_pop(self, key: str) -> bool:
        """Undo a pop whose answer could not be delivered: the pod goes back to activeQ as if it
        had never been popped (its cycle number stays used)."""
        e = self._in_flight.get(key)
        if e is None:
            return False
        if e.group is not None:
            g = self._gangs[e.group]
            if g.where == "in_flight" and g.members.get(key) is e:
                # The unit's pop is undone whole.
                for m in g.members.values():
                    if m.where == "in_flight":
                        del self._in_flight[m.pod.key]
                        m.attempts -= 1
                        m.where = "gang"
                g.attempts -= 1
                g.where = "waiting"
                self._push_unit_active(g)
                return True
        self._detach(e)
        e.attempts -= 1
        self._push_active(e)
        return True

    def add_unschedulable_if_not_present(
        self, pod: PodInfo, cycle: int, now: float
    ) -> QueueName | None:
        """Give back a pod whose attempt in ``cycle`` failed (unschedulable, or an error).

        v1.14 ``AddUnschedulableIfNotPresent``: the pod's backoff is bumped, then it goes to
        backoffQ if a move request arrived in or after ``cycle`` (moveRequestCycle >= cycle),
        else to the unschedulable pods. The latest version is requeued; a pod updated in flight
        (:func:`is_pod_updated`) goes straight to activeQ without a bump, where v1.14's
        ``Update`` had already put it. Returns where it went, or None when it was dropped (not
        in flight: deleted, bound or re-created meanwhile).
        """
        e = self._in_flight_entry(pod)
        if e is None:
            return None
        self._detach(e)
        if e.group is not None and self._rejoin(e, now):
            return self.lookup(pod.key)[0]
        if e.updated_in_flight:
            self._push_active(e)
            return "active"
        self._backoff_pod(e, now)
        if self._move_request_cycle >= cycle:
            self._push_backoff(e)
            return "backoff"
        self._put_unschedulable(e, now)
        return "unschedulable"

    def requeue_conflict(self, pod: PodInfo, now: float) -> QueueName | None:
        """Give back a pod whose assume met a conflict: straight to activeQ, no backoff.
        Returns "active", or None when it was dropped (not in flight)."""
        e = self._in_flight_entry(pod)
        if e is None:
            return None
        self._detach(e)
        if e.group is not None and self._rejoin(e, now):
            return self.lookup(pod.key)[0]
        self._push_active(e)
        return "active"

    # ------------------------------------------------------------------ timers

    def flush_backoff_completed(self, now: float) -> int:
        """v1.14 ``flushBackoffQCompleted``: move every pod whose backoff has expired by
        ``now`` to activeQ. Returns the number moved."""
        q = self._backoff_q
        moved = 0
        while q:
            item = q[0]
            if not self._valid_backoff(item):
                heapq.heappop(q)
                continue
            if item[0] > now:
                break
            heapq.heappop(q)
            e = self._pods[item[2]]
            self._backoff_n -= 1
            self._push_active(e)
            moved += 1
        units = self._backoff_units
        while units:
            unit = units[0]
            if not self._valid_backoff_unit(unit):
                heapq.heappop(units)
                continue
            if unit[0] > now:
                break
            heapq.heappop(units)
            g = self._gangs[unit[2]]
            self._unit_pods["backoff"] -= len(g.members)
            g.where = "waiting"
            self._push_unit_active(g)
            moved += len(g.members)
        return moved

    def flush_unschedulable_leftover(self, now: float) -> int:
        """v1.14 ``flushUnschedulableQLeftover`` on its periodic tick: when a tick is due by
        ``now``, move the pods unschedulable for longer than the max wait (to backoffQ while
        backing off, else activeQ; a move request when any moved). A no-op between ticks.
        Returns the number moved."""
        if now < self._next_flush_at:
            return 0
        interval = self.unschedulable_flush_interval_seconds
        ticks = math.floor((now - self._flush_origin) / interval) + 1
        self._next_flush_at = self._flush_origin + ticks * interval
        while self._next_flush_at <= now:  # float rounding must never leave a past deadline
            ticks += 1
            self._next_flush_at = self._flush_origin + ticks * interval
        wait = self.unschedulable_max_wait_seconds
        moved = [e for e in self._unschedulable_pods.values() if now - e.unschedulable_since > wait]
        for e in moved:
            self._move_from_unschedulable(e, now)
        count = len(moved)
        if self._unschedulable_units:
            for g in list(self._unschedulable_units.values()):
                if now - g.unschedulable_since > wait:
                    count += len(g.members)
                    self._move_unit_from_unschedulable(g, now)
        if count:
            self._move_request_cycle = self._scheduling_cycle
        return count

    # ------------------------------------------------------------------ internals

    def _known(self, pod: PodInfo, now: float) -> _Entry | None:
        """The entry of ``pod``, dropping one of a deleted-and-re-created namesake."""
        e = self._pods.get(pod.key)
        if e is not None and not _same_pod(e, pod):
            self._forget(e, now)
            return None
        return e

    def _forget(self, e: _Entry, now: float, *, bound: bool = False) -> None:
        """Drop the entry: out of its sub-queue, and out of its group (``bound``: as one of its
        bound members)."""
        self._detach(e)
        key = e.pod.key
        del self._pods[key]
        if e.group is None:
            return
        g = self._gangs[e.group]
        g.pending.pop(key, None)
        g.placed.discard(key)
        if bound:
            self._count_bound(g, key, now)
        self._regroup(g, now)

    def _in_flight_entry(self, pod: PodInfo) -> _Entry | None:
        e = self._in_flight.get(pod.key)
        return e if e is not None and _same_pod(e, pod) else None

    def _set_pod(self, e: _Entry, pod: PodInfo) -> None:
        e.pod = pod
        e.uid = pod.pod.metadata.uid or e.uid
        e.has_affinity = _moved_by_assigned_pods(pod.pod)

    def _update_in_flight(self, e: _Entry, pod: PodInfo) -> None:
        if is_pod_updated(e.pod.pod, pod.pod):
            e.updated_in_flight = True
        self._set_pod(e, pod)

    def _detach(self, e: _Entry) -> None:
        """Take the entry out of its sub-queue (heap items go stale with the token)."""
        key = e.pod.key
        match e.where:
            case "active":
                self._active_n -= 1
            case "backoff":
                self._backoff_n -= 1
            case "unschedulable":
                del self._unschedulable_pods[key]
                self._unschedulable_with_affinity.pop(key, None)
            case "in_flight":
                del self._in_flight[key]
                if e.group is not None:
                    self._gangs[e.group].members.pop(key, None)
            case "gated":
                del self._gated[key]
            case "gang":
                g = self._gangs[_group_of(e)]
                del g.members[key]
                if g.where in self._unit_pods:
                    self._unit_pods[g.where] -= 1
        e.token = 0

    def _enqueue(self, e: _Entry, now: float) -> None:
        """A pod (new, or re-added or updated) to activeQ, or to the gated set while it has
        scheduling gates (the SchedulingGates PreEnqueue plugin, Kubernetes 1.27+), or to its
        group, whose unit holds it while the group is a gang short of minCount bound (the
        GangScheduling PreEnqueue, Kubernetes 1.35+)."""
        if _gated(e.pod):
            e.where = "gated"
            self._gated[e.pod.key] = e
            if e.group is not None and e.group in self._gangs:
                g = self._gangs[e.group]
                if g.pending.pop(e.pod.key, None) is not None:
                    self._regroup(g, now)
        elif e.group is not None:
            self._join(e, now)
        else:
            self._push_active(e)

    # ------------------------------------------------------------------ units

    def _gang(self, key: str) -> _Gang:
        g = self._gangs.get(key)
        if g is None:
            g = self._gangs[key] = _Gang(key)
        return g

    def _join(self, e: _Entry, now: float) -> None:
        """A pending member (not gated) arrives: an ordinary pod while its group is released,
        else held by the unit."""
        g = self._gang(_group_of(e))
        g.pending[e.pod.key] = e
        if g.released:
            self._push_active(e)
        else:
            self._hold(g, e)
        self._regroup(g, now)

    def _rejoin(self, e: _Entry, now: float) -> bool:
        """A member given back (detached) while its group holds its members: held by the unit
        (the unit's own state decides where it is). False when the group is released."""
        g = self._gangs[_group_of(e)]
        if g.released:
            return False
        self._hold(g, e)
        self._regroup(g, now)
        return True

    def _hold(self, g: _Gang, e: _Entry) -> None:
        """``e`` (detached) is held by ``g``'s unit, wherever that is."""
        e.where = "gang"
        g.members[e.pod.key] = e
        if g.where in self._unit_pods:
            self._unit_pods[g.where] += 1
            if g.where == "active":
                self._activated += 1
                if e.pod.priority > g.priority:
                    self._detach_unit(g)
                    self._push_unit_active(g)

    def _regroup(self, g: _Gang, now: float, *, place: bool = True) -> None:
        """Bring the group's unit in line with its group after any change.

        While the group holds its members: ordinary members (not in flight) are pulled into
        the unit, which waits while the group is short of minCount pods and goes to activeQ
        once it has them (``place``). Once released (a ``basic`` group, or minCount members
        bound or placed), the held members go to activeQ as ordinary pods. A unit in flight
        is left alone: its outcome regroups it.
        """
        if g.where == "in_flight":
            self._note_waiting(g)
            return
        if not g.held:
            g.released = True
            if g.members:
                if g.where != "waiting":
                    self._detach_unit(g)
                for e in list(g.members.values()):
                    del g.members[e.pod.key]
                    self._push_active(e)
                    self._activated += 1
        else:
            if g.released:
                # Held again (a bound member gone, minCount raised, the group re-created):
                # the ordinary members not in flight are pulled back into the unit.
                g.released = False
                for e in list(g.pending.values()):
                    if e.where in ("active", "backoff", "unschedulable"):
                        self._detach(e)
                        self._hold(g, e)
            if g.where != "waiting" and (not g.members or not g.quorum):
                self._detach_unit(g)
            elif place and g.where == "waiting" and g.members and g.quorum:
                if g.quorum_at is None:
                    g.quorum_at = now
                self._activated += len(g.members)
                self._push_unit_active(g)
        self._note_waiting(g)
        if not g.pending and not g.bound and not g.placed and g.group is None:
            del self._gangs[g.key]

    def _note_waiting(self, g: _Gang) -> None:
        if g.where == "waiting" and g.members and g.held:
            self._waiting_groups.add(g.key)
        else:
            self._waiting_groups.discard(g.key)

    def _end_flight(self, g: _Gang) -> None:
        """The unit's pop is answered: its members still in flight are ordinary pods in flight
        now (a requeue or a bind follows each), and the unit waits."""
        for key, e in list(g.members.items()):
            if e.where == "in_flight":
                del g.members[key]
        g.where = "waiting"
        g.updated_in_flight = False

    def _count_bound(self, g: _Gang, key: str, now: float) -> None:
        g.placed.discard(key)
        g.bound.add(key)
        if (
            g.quorum_at is not None
            and not g.placed
            and g.min_count is not None
            and len(g.bound) >= g.min_count
        ):
            self._completed.append((g.key, now - g.quorum_at))
            g.quorum_at = None

    def _update_held(self, e: _Entry, old: PodInfo | None, new: PodInfo) -> None:
        """A held member changed: its unit moves as the update would move a pod."""
        g = self._gangs[_group_of(e)]
        updated = is_pod_updated((old or e.pod).pod, new.pod)
        self._set_pod(e, new)
        match g.where:
            case "unschedulable" if updated:
                self._detach_unit(g)
                self._clear_backoff(g)
                self._push_unit_active(g)
            case "backoff":
                self._detach_unit(g)
                self._push_unit_active(g)
            case "active" if new.priority > g.priority:
                self._detach_unit(g)
                self._push_unit_active(g)
            case _:
                pass
        if g.where == "unschedulable":
            self._note_unit_affinity(g)

    def _detach_unit(self, g: _Gang) -> None:
        """Take the unit out of its sub-queue; it waits (heap items go stale with the token)."""
        where = g.where
        if where in self._unit_pods:
            self._unit_pods[where] -= len(g.members)
        if where == "unschedulable":
            del self._unschedulable_units[g.key]
            self._unschedulable_units_with_affinity.discard(g.key)
        g.where = "waiting"
        g.token = 0

    def _push_unit_active(self, g: _Gang) -> None:
        g.where = "active"
        g.token = self._next_token()
        g.priority = max(e.pod.priority for e in g.members.values())
        self._unit_pods["active"] += len(g.members)
        heapq.heappush(self._active_units, (*g.order(), g.token))
        self._waiting_groups.discard(g.key)

    def _push_unit_backoff(self, g: _Gang) -> None:
        g.where = "backoff"
        g.token = self._next_token()
        self._unit_pods["backoff"] += len(g.members)
        heapq.heappush(self._backoff_units, (g.backoff_expiry, g.token, g.key))

    def _put_unit_unschedulable(self, g: _Gang, since: float) -> None:
        g.where = "unschedulable"
        g.unschedulable_since = since
        self._unit_pods["unschedulable"] += len(g.members)
        self._unschedulable_units[g.key] = g
        self._note_unit_affinity(g)

    def _note_unit_affinity(self, g: _Gang) -> None:
        if any(e.has_affinity for e in g.members.values()):
            self._unschedulable_units_with_affinity.add(g.key)
        else:
            self._unschedulable_units_with_affinity.discard(g.key)

    def _move_unit_from_unschedulable(self, g: _Gang, now: float) -> None:
        """``movePodsToActiveQueue`` for a unit."""
        self._detach_unit(g)
        if self._is_backing_off(g, now):
            self._push_unit_backoff(g)
        else:
            self._push_unit_active(g)

    def _valid_backoff_unit(self, item: tuple[float, int, str]) -> bool:
        g = self._gangs.get(item[2])
        return g is not None and g.where == "backoff" and g.token == item[1]

    def _next_token(self) -> int:
        self._tokens += 1
        return self._tokens

    def _push_active(self, e: _Entry) -> None:
        e.where = "active"
        e.token = self._next_token()
        self._active_n += 1
        heapq.heappush(
            self._active_q, (-e.pod.priority, e.arrived_at, e.arrival, e.token, e.pod.key)
        )
        if len(self._active_q) > 2 * self._active_n + _HEAP_SLACK:
            self._active_q = [i for i in self._active_q if self._valid_active(i)]
            heapq.heapify(self._active_q)

    def _push_backoff(self, e: _Entry) -> None:
        e.where = "backoff"
        e.token = self._next_token()
        self._backoff_n += 1
        heapq.heappush(self._backoff_q, (e.backoff_expiry, e.token, e.pod.key))
        if len(self._backoff_q) > 2 * self._backoff_n + _HEAP_SLACK:
            self._backoff_q = [i for i in self._backoff_q if self._valid_backoff(i)]
            heapq.heapify(self._backoff_q)

    def _valid_active(self, item: tuple[int, float, int, int, str]) -> bool:
        e = self._pods.get(item[4])
        return e is not None and e.where == "active" and e.token == item[3]

    def _valid_backoff(self, item: tuple[float, int, str]) -> bool:
        e = self._pods.get(item[2])
        return e is not None and e.where == "backoff" and e.token == item[1]

    def _put_unschedulable(self, e: _Entry, since: float) -> None:
        e.where = "unschedulable"
        e.unschedulable_since = since
        key = e.pod.key
        self._unschedulable_pods[key] = e
        if e.has_affinity:
            self._unschedulable_with_affinity[key] = e

    def _move_from_unschedulable(self, e: _Entry, now: float) -> None:
        """v1.14 ``movePodsToActiveQueue`` for one pod."""
        self._detach(e)
        if self._is_backing_off(e, now):
            self._push_backoff(e)
        else:
            self._push_active(e)

    def _backoff_duration(self, attempts: int) -> float:
        # initial * 2^(attempts-1), capped; the exponent is bounded so the float cannot overflow.
        return min(
            self.pod_initial_backoff_seconds * 2.0 ** min(attempts - 1, 64),
            self.pod_max_backoff_seconds,
        )

    def _is_backing_off(self, e: _Entry | _Gang, now: float) -> bool:
        """v1.14 ``isPodBackingOff``: the backoff ends after ``now``."""
        return e.backoff_updated_at is not None and e.backoff_expiry > now

    def _backoff_pod(self, e: _Entry | _Gang, now: float) -> None:
        """v1.14 ``backoffPod``: bump the backoff unless the pod (or unit) is still backing
        off."""
        updated = e.backoff_updated_at
        if updated is not None and now - updated > self.pod_max_backoff_seconds:
            # PodBackoff.Gc: an entry untouched for longer than the max backoff is dropped.
            self._clear_backoff(e)
        if e.backoff_updated_at is None or e.backoff_expiry <= now:
            e.backoff_attempts += 1
            e.backoff_updated_at = now
            e.backoff_expiry = now + self._backoff_duration(e.backoff_attempts)

    @staticmethod
    def _clear_backoff(e: _Entry | _Gang) -> None:
        """v1.14 ``clearPodBackoff``."""
        e.backoff_attempts = 0
        e.backoff_updated_at = None
        e.backoff_expiry = 0.0


class Nominations:
    """The pending pods nominated to nodes (v1.14 ``PriorityQueue.nominatedPods``), handed out
    copy-on-write.

    v1.14 adds a pod on Add, Update (``nominatedPodMap.update``: delete then add, so the map
    holds the latest pod object), AddUnschedulableIfNotPresent, and removes it on Delete and
    when it is assumed. Podium keeps the map from the store's changes only: a pending pod
    whose ``status.nominatedNodeName`` is set is here under that node; it leaves when the
    nomination is cleared, when it is bound, deleted or stops being pending. A pod popped for
    scheduling stays (the filter skips the pod itself, as v1.14 compares UIDs).

    :meth:`view` answers one immutable :class:`NominatedPods`, rebuilt only after a change,
    so every pop between two changes shares the same object.
    """

    __slots__ = ("_pods", "_view")

    def __init__(self) -> None:
        # Working state (never handed out): pod key -> (node, pod), in nomination order.
        self._pods: dict[str, tuple[str, PodInfo]] = {}
        self._view: NominatedPods | None = None

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def set(self, pod: PodInfo) -> bool:
        """Record a pending pod's latest version: nominated to its
        ``status.nominatedNodeName``, or not nominated when that is empty.

        Returns:
            Whether the nominations changed (a nominated pod's new version is a change: the
            filter must see its latest spec).
        """
        node = pod.pod.status.nominated_node_name
        if not node:
            return self.delete(pod.key)
        old = self._pods.get(pod.key)
        if old is not None and old[0] == node and old[1] is pod:
            return False
        # Delete then add, as nominatedPodMap.update: the pod goes last on its node.
        self._pods.pop(pod.key, None)
        self._pods[pod.key] = (node, pod)
        self._view = None
        return True

    def delete(self, key: str) -> bool:
        """Forget the pod with ``key`` (bound, deleted, no longer pending).

        Returns:
            Whether it was nominated.
        """
        if self._pods.pop(key, None) is None:
            return False
        self._view = None
        return True

    def view(self, in_flight: Collection[str] = ()) -> NominatedPods | None:
        """The nominations as an immutable :class:`NominatedPods` (None when there are none);
        the same object until the next change. Callers must never mutate it.

        Pods in ``in_flight`` (popped and not given back) are left out: Podium schedules one
        pod at a time, so such a pod is assumed and awaiting its bind, and v1.14 drops a pod's
        nomination when it is assumed (its space is in the cache then, not to count twice).
        """
        if not self._pods:
            return None
        if any(key in self._pods for key in in_flight):
            partial = NominatedPods()
            for key, (node, pod) in self._pods.items():
                if key not in in_flight:
                    partial.add(pod, node)
            return partial if len(partial) else None
        if self._view is None:
            view = NominatedPods()
            for node, pod in self._pods.values():
                view.add(pod, node)
            self._view = view
        return self._view
