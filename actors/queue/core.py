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

Pod groups (issue 24): a gang's members wait before the queue and go as one unit, popped
whole; :mod:`podium.actors.queue.gangs` (:class:`~podium.actors.queue.gangs.GangQueue`, which
:class:`SchedulingQueue` is) keeps them and draws the unit's states. What a pending pod's entry
holds is :mod:`podium.actors.queue.entry`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Iterator

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.queue.entry import (
    Entry,
    QueuedPodInfo,
    QueueName,
    Retried,
    affinity_term_matches,
    group_key,
    group_of,
    is_pod_updated,
    live_head,
    moved_by_assigned_pods,
    required_pod_affinity_terms,
)
from podium.actors.queue.gangs import GangQueue, PoppedGang
from podium.protocol.objects import Pod, pod_key

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


def _gated(pod: PodInfo) -> bool:
    return bool(pod.pod.spec.scheduling_gates)


def _same_pod(e: Entry, pod: PodInfo) -> bool:
    """Same key is given; a different uid (both known) is a deleted-and-re-created pod."""
    uid = pod.pod.metadata.uid
    return not (uid and e.uid and uid != e.uid)


_HEAP_SLACK = 1024


class SchedulingQueue(GangQueue):
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
        self._pods: dict[str, Entry] = {}
        # (-priority, arrived_at, arrival, token, key); stale items are skipped.
        self._active_q: list[tuple[int, float, int, int, str]] = []
        self._active_n = 0
        # (backoff expiry, token, key)
        self._backoff_q: list[tuple[float, int, str]] = []
        self._backoff_n = 0
        self._unschedulable_pods: dict[str, Entry] = {}
        # The unschedulable pods with required pod-affinity terms (or DoNotSchedule spread
        # constraints): the only ones an assigned pod can move (keeps Bound handling off the whole unschedulable set).
        self._unschedulable_with_affinity: dict[str, Entry] = {}
        self._in_flight: dict[str, Entry] = {}
        self._gated: dict[str, Entry] = {}
        self._scheduling_cycle = 0
        self._move_request_cycle = -1
        self._arrivals = 0
        self._tokens = 0
        self._flush_origin = now
        self._next_flush_at = now + unschedulable_flush_interval_seconds
        self._init_units()

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
        where = self._gangs[group_of(e)].where
        if where == "active" or where == "backoff" or where == "unschedulable":
            return (where, e.attempts)
        return ("waiting", e.attempts)

    def backoff_expiry(self, key: str) -> float | None:
        """When the pod's current backoff ends (its unit's, for a held member), or None when it
        has no backoff."""
        e = self._pods.get(key)
        if e is None:
            return None
        b: Retried = self._gangs[group_of(e)] if e.where == "gang" else e
        if b.backoff_updated_at is None:
            return None
        return b.backoff_expiry

    def pending_pods(self) -> Iterator[PodInfo]:
        """Every pod waiting in a queue (v1.14 ``PendingPods``; in-flight pods excluded)."""
        return (e.pod for e in self._pods.values() if e.where != "in_flight")

    def next_deadline(self) -> float | None:
        """The earliest time something must happen without a message: a backoff expiring,
        or the next leftover flush while pods are unschedulable; None when nothing is due."""
        deadline: float | None = None
        pods = live_head(self._backoff_q, self._valid_backoff)
        if pods is not None:
            deadline = pods[0]
        units = live_head(self._backoff_units, self._valid_backoff_unit)
        if units is not None:
            deadline = units[0] if deadline is None else min(deadline, units[0])
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
            e = Entry(pod, now, self._arrivals)
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

    def assigned_pod_added(self, pod: PodInfo, now: float, cycle: int = 0) -> int:
        """A pod was bound (v1.14 ``AssignedPodAdded``/``AssignedPodUpdated``).

        Moves the unschedulable pods with a required pod-affinity term matching ``pod``, or a
        DoNotSchedule spread constraint counting it (to backoffQ while backing off, else to
        activeQ), and records a move request even when none
        matched, as v1.14 ``movePodsToActiveQueue`` does. Returns the number moved.

        ``cycle``: the scheduling cycle that placed ``pod`` (0: not known, or not ours). A pod
        (or a gang's unit) that failed later in the same batch is not moved: its decision counted ``pod``
        already, as one pod at a time it would have been decided after ``pod``'s bind, which
        would have moved nothing of it (:meth:`pop_batch`).
        """
        moved = [
            e
            for e in self._unschedulable_with_affinity.values()
            if not e.decided_after(cycle) and affinity_term_matches(e.pod, pod)
        ]
        for e in moved:
            self._move_from_unschedulable(e, now)
        count = len(moved)
        if self._unschedulable_units_with_affinity:
            units = [
                self._gangs[key]
                for key in self._unschedulable_units_with_affinity
                if not self._gangs[key].decided_after(cycle)
                and any(
                    m.has_affinity and affinity_term_matches(m.pod, pod)
                    for m in self._gangs[key].members.values()
                )
            ]
            for g in units:
                count += len(g.members)
                self._move_unit_from_unschedulable(g, now)
        self._move_request_cycle = self._scheduling_cycle
        return count

    def move_all_to_active_queue(self, now: float, cycle: int = 0) -> int:
        """v1.14 ``MoveAllToActiveQueue``: every unschedulable pod to backoffQ (still backing
        off) or activeQ, and a move request at the current cycle. Returns the number moved.

        ``cycle``: when a bind made the change (its volumes), the cycle that placed its pod:
        the pods and units of its batch that failed after it stay (as in
        :meth:`assigned_pod_added`).
        """
        moved = [e for e in self._unschedulable_pods.values() if not e.decided_after(cycle)]
        for e in moved:
            self._move_from_unschedulable(e, now)
        count = len(moved)
        if self._unschedulable_units:
            units = [g for g in self._unschedulable_units.values() if not g.decided_after(cycle)]
            for g in units:
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
            e.cycle = e.batch = self._scheduling_cycle
            e.updated_in_flight = False
            e.where = "in_flight"
            self._in_flight[e.pod.key] = e
            return QueuedPodInfo(e.pod, e.cycle, e.attempts, e.arrived_at)
        return None

    def pop_batch(self, now: float, max_pods: int) -> tuple[list[QueuedPodInfo], list[PoppedGang]]:
        """Up to ``max_pods`` pops in a row, as successive :meth:`pop` calls at ``now`` would
        give them, each pod (and each unit) remembering the batch's first cycle
        (:meth:`assigned_pod_added` reads it). Empty when activeQ is empty.

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
        while len(batch) < max_pods:
            head = self._head_active()
            if head is None:
                break
            if self._active_units:
                unit = self._head_unit()
                if unit is not None and self._unit_first(unit, head):
                    break
            queued = self.pop(now)
            assert queued is not None  # the head is active
            head.batch = first.cycle
            batch.append(queued)
        return batch, []

    def bound_info(self, pod: Pod) -> PodInfo:
        """``pod``, just bound, as the queue reads it: its key, uid, namespace, labels and
        group. While it is in flight with the same uid, labels and annotations (a bind changes
        none of them), that is its entry's PodInfo; otherwise a new one. A new PodInfo costs
        ~8.6 us a pod under load for aggregates (requests, ports) the queue never reads of a
        bound pod, and the entry's differs from it only in them, its ``spec.nodeName`` and
        its status."""
        e = self._in_flight.get(pod_key(pod))
        if e is not None:
            mine, theirs = e.pod.pod.metadata, pod.metadata
            if (
                mine.uid == theirs.uid
                and mine.labels == theirs.labels
                and mine.annotations == theirs.annotations
            ):
                return e.pod
        return PodInfo(pod)

    def placed_cycle(self, pod: PodInfo) -> int:
        """The scheduling cycle of ``pod``'s pop while it is in flight (being bound), else 0:
        what :meth:`assigned_pod_added` takes when the pod's bind arrives."""
        e = self._in_flight_entry(pod)
        return 0 if e is None else e.cycle

    @property
    def has_affinity_waiters(self) -> bool:
        """Whether an unschedulable pod waits for an assigned pod to match its affinity or
        spread constraints (:meth:`assigned_pod_added` would move it), alone or in a unit."""
        return bool(self._unschedulable_with_affinity or self._unschedulable_units_with_affinity)

    def _head_active(self) -> Entry | None:
        """The entry :meth:`pop` would take next (stale heap items dropped on the way)."""
        item = live_head(self._active_q, self._valid_active)
        return None if item is None else self._pods[item[4]]

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

    def _known(self, pod: PodInfo, now: float) -> Entry | None:
        """The entry of ``pod``, dropping one of a deleted-and-re-created namesake."""
        e = self._pods.get(pod.key)
        if e is not None and not _same_pod(e, pod):
            self._forget(e, now)
            return None
        return e

    def _forget(self, e: Entry, now: float, *, bound: bool = False) -> None:
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

    def _in_flight_entry(self, pod: PodInfo) -> Entry | None:
        e = self._in_flight.get(pod.key)
        return e if e is not None and _same_pod(e, pod) else None

    def _set_pod(self, e: Entry, pod: PodInfo) -> None:
        e.pod = pod
        e.uid = pod.pod.metadata.uid or e.uid
        e.has_affinity = moved_by_assigned_pods(pod.pod)

    def _update_in_flight(self, e: Entry, pod: PodInfo) -> None:
        if is_pod_updated(e.pod.pod, pod.pod):
            e.updated_in_flight = True
        self._set_pod(e, pod)

    def _detach(self, e: Entry) -> None:
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
                g = self._gangs[group_of(e)]
                del g.members[key]
                if g.where in self._unit_pods:
                    self._unit_pods[g.where] -= 1
        e.token = 0

    def _enqueue(self, e: Entry, now: float) -> None:
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

    def _next_token(self) -> int:
        self._tokens += 1
        return self._tokens

    def _push_active(self, e: Entry) -> None:
        e.where = "active"
        e.token = self._next_token()
        self._active_n += 1
        heapq.heappush(
            self._active_q, (-e.pod.priority, e.arrived_at, e.arrival, e.token, e.pod.key)
        )
        if len(self._active_q) > 2 * self._active_n + _HEAP_SLACK:
            self._active_q = [i for i in self._active_q if self._valid_active(i)]
            heapq.heapify(self._active_q)

    def _push_backoff(self, e: Entry) -> None:
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

    def _put_unschedulable(self, e: Entry, since: float) -> None:
        e.where = "unschedulable"
        e.unschedulable_since = since
        key = e.pod.key
        self._unschedulable_pods[key] = e
        if e.has_affinity:
            self._unschedulable_with_affinity[key] = e

    def _move_from_unschedulable(self, e: Entry, now: float) -> None:
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

    def _is_backing_off(self, e: Retried, now: float) -> bool:
        """v1.14 ``isPodBackingOff``: the backoff ends after ``now``."""
        return e.backoff_updated_at is not None and e.backoff_expiry > now

    def _backoff_pod(self, e: Retried, now: float) -> None:
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
    def _clear_backoff(e: Retried) -> None:
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
