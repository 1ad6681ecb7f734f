"""The scheduling queue's pod groups: a gang's members held before the queue, then queued,
popped and requeued as one unit (sans-IO; :class:`GangQueue` is the part of
:class:`~podium.actors.queue.core.SchedulingQueue` that keeps them, and it reaches the queue's
pods through :class:`QueueSteps`).

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
  one pod would be, with the group's own attempts and backoff (the units of one pop remember
  its first cycle, so the binds of an earlier gang of the batch do not move a later one that
  failed, as for pods); a member's update moves it as
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
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.queue.entry import (
    Entry,
    QueuedPodInfo,
    QueueName,
    Retried,
    group_key,
    group_of,
    is_pod_updated,
    live_head,
)
from podium.protocol.gangs import min_count
from podium.protocol.objects import PodGroup

__all__ = ["Gang", "GangQueue", "PoppedGang", "QueueSteps", "UnitWhere"]

UnitWhere: TypeAlias = Literal["waiting", "active", "backoff", "unschedulable", "in_flight"]


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


class Gang(Retried):
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
        "bound",
        "creation",
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
        "where",
    )

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        self.group: PodGroup | None = None
        self.min_count: int | None = None
        self.creation = ""
        self.seen_at = 0.0
        self.pending: dict[str, Entry] = {}
        self.members: dict[str, Entry] = {}
        self.bound: set[str] = set()
        self.placed: set[str] = set()
        self.where: UnitWhere = "waiting"
        self.priority = 0
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

    def sorted_members(self) -> list[Entry]:
        """The unit's members in the order they are decided: priority, then arrival."""
        return sorted(self.members.values(), key=lambda e: (-e.pod.priority, e.arrival))


class QueueSteps(Protocol):
    """The queue's pods as the gang part uses them (:class:`~podium.actors.queue.core.
    SchedulingQueue` implements it): its entries, cycles, and the pod-level steps a unit's
    members take as pods do."""

    _pods: dict[str, Entry]
    _in_flight: dict[str, Entry]
    _scheduling_cycle: int
    _move_request_cycle: int

    def _detach(self, e: Entry) -> None:
        """Take the entry out of its sub-queue."""
        ...

    def _push_active(self, e: Entry) -> None:
        """The entry to activeQ."""
        ...

    def _head_active(self) -> Entry | None:
        """The entry a pod's pop would take next."""
        ...

    def _in_flight_entry(self, pod: PodInfo) -> Entry | None:
        """The in-flight entry of ``pod`` (same uid), or None."""
        ...

    def _set_pod(self, e: Entry, pod: PodInfo) -> None:
        """The entry's pod replaced by its latest version."""
        ...

    def _next_token(self) -> int:
        """A new heap token (older heap items of the entry or unit go stale)."""
        ...

    def _is_backing_off(self, e: Entry | Gang, now: float) -> bool:
        """v1.14 ``isPodBackingOff``, for a pod or a unit."""
        ...

    def _backoff_pod(self, e: Entry | Gang, now: float) -> None:
        """v1.14 ``backoffPod``, for a pod or a unit."""
        ...

    def _clear_backoff(self, e: Entry | Gang) -> None:
        """v1.14 ``clearPodBackoff``, for a pod or a unit."""
        ...


class GangQueue(QueueSteps):
    """The queue's pod groups and their units (see the module docstring)."""

    _gangs: dict[str, Gang]
    _active_units: list[tuple[int, float, str, str, int]]
    _backoff_units: list[tuple[float, int, str]]
    _unschedulable_units: dict[str, Gang]
    _unschedulable_units_with_affinity: set[str]
    _unit_pods: dict[str, int]
    _waiting_groups: set[str]
    _activated: int
    _completed: list[tuple[str, float]]

    def _init_units(self) -> None:
        # Pod groups (gangs): every group a pending or bound pod names, or the store holds.
        self._gangs = {}
        # Units in activeQ: (-priority, seen_at, creationTimestamp, key, token).
        self._active_units = []
        # Units in backoffQ: (backoff expiry, token, key).
        self._backoff_units = []
        self._unschedulable_units = {}
        # The unschedulable units with a member an assigned pod can move.
        self._unschedulable_units_with_affinity = set()
        # Pods held by the units in each sub-queue (counted with the pods there).
        self._unit_pods = {"active": 0, "backoff": 0, "unschedulable": 0}
        self._waiting_groups = set()
        # Held pods that entered activeQ with their unit (its quorum met), since the last
        # take_activated(); and the groups whose last placed member was bound since the last
        # take_completed(), with the seconds from their quorum.
        self._activated = 0
        self._completed = []

    @property
    def waiting_groups(self) -> int:
        """Groups whose pending members wait before the queue (no group yet, or fewer pods
        than minCount)."""
        return len(self._waiting_groups)

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
        g = self._gangs[group_of(e)]
        if g.where == "in_flight":
            return f"waiting for pod group {g.key}: its other members are being scheduled"
        if g.where != "waiting":
            return ""
        if g.group is None:
            return f"waiting for pod group {g.key}: the group does not exist"
        return f"waiting for pod group {g.key}: {g.exist} of {g.min_count} pods exist"

    def take_activated(self) -> int:
        """Held pods that entered activeQ with their unit since the last call."""
        n, self._activated = self._activated, 0
        return n

    def take_completed(self) -> list[tuple[str, float]]:
        """``(group, seconds)`` for each gang whose last placed member was bound since the last
        call: the seconds from its quorum to that bind."""
        done, self._completed = self._completed, []
        return done

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
            g = self._gangs[key] = Gang(key)
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
            g = self._gangs[key] = Gang(key)
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

    def _head_unit(self) -> Gang | None:
        """The unit :meth:`pop_batch` would take next among the units (stale items dropped)."""
        item = live_head(self._active_units, self._valid_active_unit)
        return None if item is None else self._gangs[item[3]]

    def _valid_active_unit(self, item: tuple[int, float, str, str, int]) -> bool:
        g = self._gangs.get(item[3])
        return g is not None and g.where == "active" and g.token == item[4]

    @staticmethod
    def _unit_first(unit: Gang, head: Entry | None) -> bool:
        """Whether ``unit`` goes before the pod ``head`` (see :meth:`pop_batch`)."""
        if head is None:
            return True
        return (-unit.priority, unit.seen_at) < (-head.pod.priority, head.arrived_at)

    def _pop_units(self, unit: Gang, max_pods: int) -> tuple[list[QueuedPodInfo], list[PoppedGang]]:
        """``unit`` whole, then the units that come next (before any pod) while the batch
        stays within ``max_pods`` (see :meth:`pop_batch`)."""
        popped: list[QueuedPodInfo] = []
        gangs: list[PoppedGang] = []
        batch = self._scheduling_cycle + 1  # the first unit's cycle
        while True:
            gangs.append(self._pop_unit(unit, popped, batch))
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

    def _pop_unit(self, g: Gang, popped: list[QueuedPodInfo], batch: int) -> PoppedGang:
        """Pop the head unit ``g`` (its own scheduling cycle, as a pod's pop), its members
        appended to ``popped``; ``batch``: the first cycle of its batch, which the unit and its
        members remember (the moves read it: :meth:`~podium.actors.queue.entry.Retried.decided_after`)."""
        heapq.heappop(self._active_units)
        self._unit_pods["active"] -= len(g.members)
        self._scheduling_cycle += 1
        cycle = self._scheduling_cycle
        g.attempts += 1
        g.cycle = cycle
        g.batch = batch
        g.updated_in_flight = False
        g.where = "in_flight"
        g.token = 0
        members = g.sorted_members()
        for e in members:
            e.attempts += 1
            e.cycle = cycle
            e.batch = batch
            e.updated_in_flight = False
            e.where = "in_flight"
            self._in_flight[e.pod.key] = e
            popped.append(QueuedPodInfo(e.pod, cycle, e.attempts, e.arrived_at))
        assert g.min_count is not None  # a unit is queued only once its group is a gang
        return PoppedGang(g.key, g.min_count, len(g.bound) + len(g.placed), len(members))

    def _gang(self, key: str) -> Gang:
        g = self._gangs.get(key)
        if g is None:
            g = self._gangs[key] = Gang(key)
        return g

    def _join(self, e: Entry, now: float) -> None:
        """A pending member (not gated) arrives: an ordinary pod while its group is released,
        else held by the unit."""
        g = self._gang(group_of(e))
        g.pending[e.pod.key] = e
        if g.released:
            self._push_active(e)
        else:
            self._hold(g, e)
        self._regroup(g, now)

    def _rejoin(self, e: Entry, now: float) -> bool:
        """A member given back (detached) while its group holds its members: held by the unit
        (the unit's own state decides where it is). False when the group is released."""
        g = self._gangs[group_of(e)]
        if g.released:
            return False
        self._hold(g, e)
        self._regroup(g, now)
        return True

    def _hold(self, g: Gang, e: Entry) -> None:
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

    def _regroup(self, g: Gang, now: float, *, place: bool = True) -> None:
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
            # The unit leaves its sub-queue even with no member left (the last one bound,
            # which released the group): an empty unit popped would be a gang of no members.
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

    def _note_waiting(self, g: Gang) -> None:
        if g.where == "waiting" and g.members and g.held:
            self._waiting_groups.add(g.key)
        else:
            self._waiting_groups.discard(g.key)

    def _end_flight(self, g: Gang) -> None:
        """The unit's pop is answered: its members still in flight are ordinary pods in flight
        now (a requeue or a bind follows each), and the unit waits."""
        for key, e in list(g.members.items()):
            if e.where == "in_flight":
                del g.members[key]
        g.where = "waiting"
        g.updated_in_flight = False

    def _count_bound(self, g: Gang, key: str, now: float) -> None:
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

    def _update_held(self, e: Entry, old: PodInfo | None, new: PodInfo) -> None:
        """A held member changed: its unit moves as the update would move a pod."""
        g = self._gangs[group_of(e)]
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

    def _detach_unit(self, g: Gang) -> None:
        """Take the unit out of its sub-queue; it waits (heap items go stale with the token)."""
        where = g.where
        if where in self._unit_pods:
            self._unit_pods[where] -= len(g.members)
        if where == "unschedulable":
            del self._unschedulable_units[g.key]
            self._unschedulable_units_with_affinity.discard(g.key)
        g.where = "waiting"
        g.token = 0

    def _push_unit_active(self, g: Gang) -> None:
        g.where = "active"
        g.token = self._next_token()
        g.priority = max(e.pod.priority for e in g.members.values())
        self._unit_pods["active"] += len(g.members)
        heapq.heappush(self._active_units, (*g.order(), g.token))
        self._waiting_groups.discard(g.key)

    def _push_unit_backoff(self, g: Gang) -> None:
        g.where = "backoff"
        g.token = self._next_token()
        self._unit_pods["backoff"] += len(g.members)
        heapq.heappush(self._backoff_units, (g.backoff_expiry, g.token, g.key))

    def _put_unit_unschedulable(self, g: Gang, since: float) -> None:
        g.where = "unschedulable"
        g.unschedulable_since = since
        self._unit_pods["unschedulable"] += len(g.members)
        self._unschedulable_units[g.key] = g
        self._note_unit_affinity(g)

    def _note_unit_affinity(self, g: Gang) -> None:
        if any(e.has_affinity for e in g.members.values()):
            self._unschedulable_units_with_affinity.add(g.key)
        else:
            self._unschedulable_units_with_affinity.discard(g.key)

    def _move_unit_from_unschedulable(self, g: Gang, now: float) -> None:
        """``movePodsToActiveQueue`` for a unit."""
        self._detach_unit(g)
        if self._is_backing_off(g, now):
            self._push_unit_backoff(g)
        else:
            self._push_unit_active(g)

    def _valid_backoff_unit(self, item: tuple[float, int, str]) -> bool:
        g = self._gangs.get(item[2])
        return g is not None and g.where == "backoff" and g.token == item[1]
