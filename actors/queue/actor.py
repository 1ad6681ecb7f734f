"""The scheduling-queue actor: pending pods in, the next pod to schedule out.

Kubernetes counterparts: pkg/scheduler/internal/queue/scheduling_queue.go@v1.14 (the state,
in :mod:`podium.actors.queue.core`) and the event handlers that feed it, which v1.14 keeps
in pkg/scheduler/factory/factory.go (``NewConfigFactory``; pkg/scheduler/eventhandlers.go in
later releases). Which store change does what ("pending": unbound, ours by spec.schedulerName,
not terminating and not finished, :func:`is_pending`):

==========================================  ===================================================
change                                      queue operation
==========================================  ===================================================
Pod Added, pending                          add
Pod Modified, pending before and after      update
Pod Modified, pending before only           delete (and, when it became bound, assigned pod
                                            added)
Pod Modified, pending after only            add
Pod Deleted / Preempted, pending            delete
Pod Bound                                   delete (it was in flight) + assigned pod added
                                            (a member: one more of its group bound)
Pod Unschedulable                           nothing (status only)
bound pod Added, or Modified while active   assigned pod added (v1.14 AssignedPodAdded/Updated)
bound pod Deleted / Preempted               move all (a member: one fewer bound)
bound pod Modified to terminated            move all (it holds no resources any more)
Node Added                                  move all
Node Modified                               move all when no pod is unschedulable or a
                                            scheduling property changed
                                            (:func:`node_scheduling_properties_changed`)
PersistentVolume(Claim) Added / Modified    move all
Service Added / Modified / Deleted          move all
StorageClass Added, WaitForFirstConsumer    move all
PodGroup Added / Modified / Deleted         the group's waiting members let in once it has
                                            minCount pods, released (basic), or held again
anything else                               nothing
==========================================  ===================================================

Pod groups (see :mod:`podium.actors.queue.core`): a gang's members wait before the queue until
their group exists with minCount pods, then go as one unit; a Pop whose head is a unit is
answered with all its members and a :class:`~podium.actors.mail.messages.GangBatch`, and with
the units that come next while the batch stays within ``max_pods``. The waiting
is not written to the store: a gang of 128 arriving would cost a write per arrival for every
member waiting (O(n^2)), and the count changes with each; :class:`Lookup` answers it instead
(``waiting for pod group ml/train: 5 of 8 pods exist``), which ``podium explain`` shows. Once a
gang attempt fails, every member's PodScheduled condition says why (the scheduler records it).

Owns: a :class:`~podium.actors.queue.core.SchedulingQueue`, the nominated pods
(:class:`~podium.actors.queue.core.Nominations`, v1.14 ``PriorityQueue.nominatedPods``)
and at most one parked Pop.

Nominated pods: a pending pod whose ``status.nominatedNodeName`` is set (Recovered, Added,
Modified) is nominated to that node; it stops being nominated when a Modified clears it, when
it is bound (Bound, or a Modified that assigns it), deleted or preempted, or stops being
pending. Every Popped carries the same immutable view until the nominations change.

Mailbox (:data:`~podium.actors.mail.messages.QueueMsg`): Recovered, Committed (from the store); Pop,
GiveBack, Requeue, RequeueGroup (scheduler, binder), GroupPlaced (scheduler); Lookup, QueueStats
(gateway, operators).

Emits: PoppedBatch / QueueIdle on a Pop's reply channel; LookupReply, QueueStatsReply.

Batches: a Pop asks for up to ``max_pods`` pods and gets them in the order successive pops
would give. The batch holds one pod while nominations exist or an unschedulable pod waits for
an assigned pod to match its affinity (a bind between two one-pod pops could change what the
second gives: :func:`~podium.actors.queue.batching.batch_max_pods`). A Bound carries the cycle
its pod was popped in to :meth:`~podium.actors.queue.core.SchedulingQueue.assigned_pod_added`,
so it does not move a pod, or a gang's unit, of its batch that failed after it. GiveBack returns popped pods the
scheduler did not decide to activeQ where they were (their attempt not counted), so a
higher-priority pod that arrived meanwhile goes first.

Timers: the receive loop waits for mail at most until the core's next deadline (a backoff
expiring, the next leftover flush), then flushes with the trio clock's ``now``; a parked Pop is
answered as soon as a pod is active.

Metrics: ``scheduler_pending_pods{queue}`` set after each batch of mail;
``scheduler_queue_incoming_pods_total{queue, event}`` at each add, requeue and move, with
Kubernetes' event names (PodAdd, ScheduleAttemptFailure, BackoffComplete,
UnschedulableTimeout, NodeAdd, NodeUpdate, AssignedPodAdd, AssignedPodDelete, PvAdd, PvUpdate,
PvcAdd, PvcUpdate, ServiceAdd, ServiceUpdate, ServiceDelete, StorageClassAdd);
``scheduler_unschedulable_pods{plugin}``: each pod in the unschedulable set counts once under
every predicate that rejected it (the Requeue's ``plugins``). The pods of units count as pods in
each of these (a unit reaching its quorum: PodAdd for each member). ``podium_pod_groups_waiting``:
the groups whose members wait for their quorum; ``podium_pod_group_scheduling_duration_seconds``:
from a group's quorum to the Bound of the last member its placing attempt placed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, assert_never

import trio

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.mail.messages import (
    GangBatch,
    GiveBack,
    GroupPlaced,
    Lookup,
    LookupReply,
    Pop,
    Popped,
    PoppedBatch,
    QueueIdle,
    QueueMsg,
    QueueStats,
    QueueStatsReply,
    Requeue,
    RequeueGroup,
)
from podium.actors.queue.batching import batch_max_pods
from podium.actors.queue.core import Nominations, QueueName, SchedulingQueue
from podium.actors.runtime.mailbox import StepBudget, receive_batch, reply
from podium.protocol import metrics
from podium.protocol.objects import (
    Node,
    Pod,
    PodGroup,
    StorageClass,
    holds_resources,
    namespaced_key,
    pod_key,
)
from podium.protocol.quantity import Quantity
from podium.store.mail import Change, Committed, Recovered

if TYPE_CHECKING:
    from prometheus_client import Counter, Gauge

    from podium.protocol.objects import KubeObject

__all__ = [
    "COMMIT_STEP_CHANGES",
    "DEFAULT_SCHEDULER_NAME",
    "QueueActor",
    "is_pending",
    "node_scheduling_properties_changed",
]

log = logging.getLogger("podium.queue")

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# Kinds whose every Added/Modified may make an unschedulable pod schedulable (v1.14 onPvAdd,
# onPvUpdate, onPvcAdd, onPvcUpdate, onServiceAdd, onServiceUpdate; Service also on delete).
_MOVE_ON_ADD_OR_MODIFY = frozenset({"PersistentVolume", "PersistentVolumeClaim", "Service"})

# The kinds a bind changes besides its pod (a claim bound to its volume, or provisioned).
_VOLUME_KINDS = frozenset({"PersistentVolume", "PersistentVolumeClaim"})

# The queue_incoming_pods_total event of a move caused by (kind, change type).
_MOVE_EVENTS = {
    ("Node", "Added"): "NodeAdd",
    ("Node", "Modified"): "NodeUpdate",
    ("PersistentVolume", "Added"): "PvAdd",
    ("PersistentVolume", "Modified"): "PvUpdate",
    ("PersistentVolumeClaim", "Added"): "PvcAdd",
    ("PersistentVolumeClaim", "Modified"): "PvcUpdate",
    ("Service", "Added"): "ServiceAdd",
    ("Service", "Modified"): "ServiceUpdate",
    ("Service", "Deleted"): "ServiceDelete",
    ("StorageClass", "Added"): "StorageClassAdd",
}

_INCOMING: dict[tuple[str, str], Counter] = {}
_UNSCHEDULABLE_BY_PLUGIN: dict[str, Gauge] = {}


def _incoming(queue: str, event: str, count: int = 1) -> None:
    """Count pods entering ``queue`` on ``event`` (children bound on first use)."""
    child = _INCOMING.get((queue, event))
    if child is None:
        child = metrics.QUEUE_INCOMING_PODS.labels(queue=queue, event=event)
        _INCOMING[queue, event] = child
    child.inc(count)


def _unschedulable_gauge(plugin: str) -> Gauge:
    child = _UNSCHEDULABLE_BY_PLUGIN.get(plugin)
    if child is None:
        child = metrics.UNSCHEDULABLE_PODS.labels(plugin=plugin, profile=metrics.PROFILE)
        _UNSCHEDULABLE_BY_PLUGIN[plugin] = child
    return child


def is_pending(pod: Pod, scheduler_name: str) -> bool:
    """Whether the queue holds ``pod``: unbound, ours (spec.schedulerName) and not
    terminated (v1.14's ``!assignedPod(pod) && responsibleForPod(pod, schedulerName)``, with the
    later skip of terminated pods)."""
    return (
        not pod.spec.node_name
        and pod.spec.scheduler_name == scheduler_name
        and holds_resources(pod)
    )


def _is_assigned(pod: Pod) -> bool:
    """A bound pod that still holds its place (v1.14 ``assignedPod``, terminated ones aside)."""
    return bool(pod.spec.node_name) and holds_resources(pod)


def _allocatable(node: Node) -> Mapping[str, Quantity]:
    # The store defaults allocatable to capacity; a node read elsewhere may lack it.
    return node.status.allocatable or node.status.capacity


def node_scheduling_properties_changed(new: Node, old: Node) -> bool:
    """v1.14 ``nodeSchedulingPropertiesChanged``: became schedulable (spec.unschedulable
    true -> false), or its allocatable, labels, taints or condition statuses changed."""
    if old.spec.unschedulable and not new.spec.unschedulable:
        return True
    if _allocatable(old) != _allocatable(new):
        return True
    if old.metadata.labels != new.metadata.labels:
        return True
    if old.spec.taints != new.spec.taints:
        return True
    old_conditions = {c.type: c.status for c in old.status.conditions}
    new_conditions = {c.type: c.status for c in new.status.conditions}
    return old_conditions != new_conditions


MAX_LINKS = 4
"""Trace carriers kept per pending pod (the latest requests that put it)."""

COMMIT_STEP_CHANGES = 8
"""A commit's changes handled in one trio step at most (6-10 us each: a Put of 500 pods was
one 5 ms step, a bind batch's Bound changes 0.6 ms; docs/benchmarks.md, "what the slow
attempts held")."""


class QueueActor:
    """Runs a :class:`SchedulingQueue` fed by the store's changes.

    Args:
        inbox: the mailbox (``QueueMsg``); the actor stops when every sender has closed it.
        scheduler_name: the spec.schedulerName whose pods are ours.
        pod_initial_backoff_seconds, pod_max_backoff_seconds: the backoff range.
        unschedulable_flush_interval_seconds: how often the leftover flush runs.
        unschedulable_max_wait_seconds: how long a pod may stay unschedulable before that
            flush retries it.
    """

    def __init__(
        self,
        inbox: trio.MemoryReceiveChannel[QueueMsg],
        *,
        scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        pod_initial_backoff_seconds: float = 1.0,
        pod_max_backoff_seconds: float = 10.0,
        unschedulable_flush_interval_seconds: float = 30.0,
        unschedulable_max_wait_seconds: float = 300.0,
    ) -> None:
        self._links: dict[str, list[dict[str, str]]] = {}
        self._inbox = inbox
        self.scheduler_name = scheduler_name
        self.core = SchedulingQueue(
            pod_initial_backoff_seconds=pod_initial_backoff_seconds,
            pod_max_backoff_seconds=pod_max_backoff_seconds,
            unschedulable_flush_interval_seconds=unschedulable_flush_interval_seconds,
            unschedulable_max_wait_seconds=unschedulable_max_wait_seconds,
        )
        self.nominations = Nominations()
        self._parked: Pop | None = None
        # Pod key -> the predicates that rejected it, for every pod put in the unschedulable
        # set (a superset of it between batches; trimmed to it after each batch).
        self._unschedulable_plugins: dict[str, frozenset[str]] = {}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the mailbox until it is closed.

        Cancellation: safe at any point; a cancelled wait loses no mail (trio memory channels).
        A long commit is taken in steps (:class:`~podium.actors.runtime.mailbox.StepBudget`):
        its pauses are schedule points, never cancel points, and no message is read until the
        commit is whole, so no other task sees the queue half-updated.
        """
        async with self._inbox:
            self.core.start(trio.current_time())
            task_status.started()
            try:
                await self._serve()
            finally:
                # This queue's pods no longer count (tests run several queues in one process).
                for plugins in self._unschedulable_plugins.values():
                    for plugin in plugins:
                        _unschedulable_gauge(plugin).dec()
                self._unschedulable_plugins.clear()

    async def _serve(self) -> None:
        core = self.core
        while True:
            # What is already waiting comes too, without passing the scheduler (STYLE.md).
            batch = await receive_batch(self._inbox, deadline=core.next_deadline())
            if batch is None:
                return
            # A commit of hundreds of pods is taken a few changes a step, so a decision in
            # flight waits for a few of them, not all (mailbox.py's StepBudget).
            budget = StepBudget(COMMIT_STEP_CHANGES)
            for msg in batch:
                await self._handle(msg, budget)
            now = trio.current_time()
            moved = core.flush_backoff_completed(now)
            if moved:
                _incoming("active", "BackoffComplete", moved)
            backoff = core.backoff_count
            moved = core.flush_unschedulable_leftover(now)
            if moved:
                self._count_moved("UnschedulableTimeout", moved, backoff)
            self._answer_parked(now)
            self._record()

    # ------------------------------------------------------------------ metrics

    def _record(self) -> None:
        """Set the gauges after a batch."""
        core = self.core
        metrics.PENDING_ACTIVE.set(core.active_count)
        metrics.PENDING_BACKOFF.set(core.backoff_count)
        metrics.PENDING_UNSCHEDULABLE.set(core.unschedulable_count)
        metrics.POD_GROUPS_WAITING.set(core.waiting_groups)
        activated = core.take_activated()
        if activated:
            _incoming("active", "PodAdd", activated)
        for _, seconds in core.take_completed():
            metrics.POD_GROUP_SCHEDULING_DURATION.observe(seconds)
        tracked = self._unschedulable_plugins
        if len(tracked) > core.unschedulable_count:
            # Some tracked pods left the unschedulable set (a move, an update): every entry
            # was tracked, so the set is smaller than the tracking exactly when one left.
            for key in list(tracked):
                if core.lookup(key)[0] != "unschedulable":
                    self._untrack(key)

    def _track(self, key: str, plugins: frozenset[str]) -> None:
        self._untrack(key)
        self._unschedulable_plugins[key] = plugins
        for plugin in plugins:
            _unschedulable_gauge(plugin).inc()

    def _untrack(self, key: str) -> None:
        plugins = self._unschedulable_plugins.pop(key, None)
        if plugins:
            for plugin in plugins:
                _unschedulable_gauge(plugin).dec()

    def _count_moved(self, event: str, moved: int, backoff_before: int) -> None:
        """Count ``moved`` pods leaving the unschedulable set: to backoffQ while backing off,
        the rest to activeQ (the backoffQ growth tells them apart)."""
        to_backoff = self.core.backoff_count - backoff_before
        if to_backoff:
            _incoming("backoff", event, to_backoff)
        if moved > to_backoff:
            _incoming("active", event, moved - to_backoff)

    def _move_all(self, event: str, now: float, cycle: int = 0) -> None:
        backoff = self.core.backoff_count
        moved = self.core.move_all_to_active_queue(now, cycle)
        if moved:
            self._count_moved(event, moved, backoff)

    def _assigned_pod_added(self, pod: PodInfo, now: float, cycle: int = 0) -> None:
        self.core.assigned_member(pod, now)
        backoff = self.core.backoff_count
        moved = self.core.assigned_pod_added(pod, now, cycle)
        if moved:
            self._count_moved("AssignedPodAdd", moved, backoff)

    def _add(self, pod: PodInfo, now: float) -> None:
        core = self.core
        core.add(pod, now)
        # Not a gated pod, nor a held gang member (counted when its unit enters activeQ).
        if core.lookup(pod.key)[0] == "active" and not core.held(pod.key):
            _incoming("active", "PodAdd")

    def _delete(self, pod: PodInfo, now: float, *, bound: bool = False) -> None:
        where, _ = self.core.lookup(pod.key)
        if self.core.delete(pod, now, bound=bound) and where == "unschedulable":
            self._untrack(pod.key)

    # ------------------------------------------------------------------ mail

    async def _handle(self, msg: QueueMsg, budget: StepBudget) -> None:
        now = trio.current_time()
        match msg:
            case Recovered(objects=objects):
                self._recover(objects, now)
            case Committed(changes=changes):
                # Every change of the commit at the commit's ``now``, in order; nothing else
                # reaches the queue before the last one (a Pop is answered after the batch).
                for i, change in enumerate(changes):
                    if change.kind in _VOLUME_KINDS and change.type == "Modified":
                        self._apply(change, now, self._binding_cycle(changes, i))
                    else:
                        self._apply(change, now)
                    await budget.spend()
            case Pop():
                if self._parked is not None:
                    # One Pop at a time; a requester that gave up and asked again replaces it.
                    log.warning("a second Pop arrived while one was parked; the first is dropped")
                self._parked = msg
            case GiveBack(keys=keys):
                # Not counted as incoming: to the metrics the pod never left activeQ.
                for key in keys:
                    self.core.cancel_pop(key)
            case RequeueGroup():
                self._requeue_group(msg, now)
            case GroupPlaced(key=group, pods=pods):
                self.core.group_placed(group, pods, now)
            case Requeue(pod=pod, cycle=cycle, why=why, plugins=plugins):
                went: QueueName | None
                if why == "conflict":
                    went = self.core.requeue_conflict(pod, now)
                else:
                    went = self.core.add_unschedulable_if_not_present(pod, cycle, now)
                if went is None:
                    log.debug("requeue of %s dropped: it is no longer in flight", pod.key)
                elif went != "waiting":
                    _incoming(went, "ScheduleAttemptFailure")
                    if went == "unschedulable":
                        self._track(pod.key, plugins)
            case Lookup(key=key, reply=answer_to):
                where, attempts = self.core.lookup(key)
                message = self.core.waiting_message(key)
                reply(answer_to, LookupReply(queue=where, attempts=attempts, message=message))
            case QueueStats(reply=answer_to):
                core = self.core
                reply(
                    answer_to,
                    QueueStatsReply(
                        active=core.active_count,
                        backoff=core.backoff_count,
                        unschedulable=core.unschedulable_count,
                        in_flight=core.in_flight_count,
                    ),
                )
            case _:
                assert_never(msg)

    def _requeue_group(self, msg: RequeueGroup, now: float) -> None:
        went, count = self.core.requeue_group(msg.key, msg.pods, msg.cycle, msg.why, now)
        if went is None:
            log.debug("requeue of pod group %s dropped: no member is in flight", msg.key)
            return
        if went != "waiting":
            _incoming(went, "ScheduleAttemptFailure", count)
        if went == "unschedulable":
            for member in msg.pods:
                if self.core.lookup(member.key)[0] == "unschedulable":
                    self._track(member.key, msg.plugins)

    def _recover(self, objects: list[KubeObject], now: float) -> None:
        """Every pending pod, in the order given, the pod groups, and the bound members of
        each group."""
        for obj in objects:
            if isinstance(obj, Pod):
                if is_pending(obj, self.scheduler_name):
                    info = PodInfo(obj)
                    self._add(info, now)
                    self.nominations.set(info)
                elif _is_assigned(obj):
                    self.core.assigned_member(PodInfo(obj), now)
            elif isinstance(obj, PodGroup):
                key = namespaced_key(obj.metadata.namespace, obj.metadata.name)
                self.core.group_changed(key, obj, now)

    def _binding_cycle(self, changes: Sequence[Change], i: int) -> int:
        """The cycle that placed the pod whose bind made the volume change ``changes[i]`` (the
        store commits a binding as its volumes' and claims' Modified, then the pod's Bound),
        or 0 when no bind of a pod in flight made it."""
        for change in changes[i + 1 :]:
            if change.kind in _VOLUME_KINDS and change.type == "Modified":
                continue
            if change.type == "Bound" and isinstance(change.object, Pod):
                return self.core.placed_cycle(self.core.bound_info(change.object))
            return 0
        return 0

    def _apply(self, change: Change, now: float, cycle: int = 0) -> None:
        """One change of a commit; ``cycle``: a volume change's :meth:`_binding_cycle`."""
        obj = change.object
        if isinstance(obj, Pod):
            self._apply_pod(change, obj, now)
            return
        core = self.core
        if change.kind == "PodGroup":
            group = obj if isinstance(obj, PodGroup) and change.type != "Deleted" else None
            core.group_changed(namespaced_key(change.namespace, change.name), group, now)
            return
        event = _MOVE_EVENTS.get((change.kind, change.type), "")
        match change.kind, change.type:
            case "Node", "Added":
                self._move_all(event, now)
            case "Node", "Modified":
                old = change.old
                if (
                    core.unschedulable_count == 0
                    or not isinstance(old, Node)
                    or not isinstance(obj, Node)
                    or node_scheduling_properties_changed(obj, old)
                ):
                    # With no unschedulable pod the move is cheap and still records a move
                    # request for the pod in flight (v1.14 updateNodeInCache).
                    self._move_all(event, now)
            case kind, "Added" | "Modified" if kind in _MOVE_ON_ADD_OR_MODIFY:
                self._move_all(event, now, cycle)
            case "Service", "Deleted":
                self._move_all(event, now)
            case "StorageClass", "Added":
                if (
                    isinstance(obj, StorageClass)
                    and obj.volume_binding_mode == "WaitForFirstConsumer"
                ):
                    self._move_all(event, now)
            case _:
                pass

    def _apply_pod(self, change: Change, pod: Pod, now: float) -> None:
        core = self.core
        name = self.scheduler_name
        key = pod_key(pod)
        if change.trace is not None and is_pending(pod, name):
            # The requests that submitted the pod: its attempts' traces link to them.
            # A new list, never the old one extended: a Popped already sent holds the old.
            self._links[key] = [*self._links.get(key, ()), change.trace][-MAX_LINKS:]
        elif change.type in ("Deleted", "Preempted", "Bound"):
            self._links.pop(key, None)
        match change.type:
            case "Added":
                if is_pending(pod, name):
                    info = PodInfo(pod)
                    self._add(info, now)
                    self.nominations.set(info)
                    return
                self.nominations.delete(key)
                if _is_assigned(pod):
                    self._assigned_pod_added(PodInfo(pod), now)
            case "Modified":
                old = change.old if isinstance(change.old, Pod) else None
                was_pending = old is not None and is_pending(old, name)
                info = PodInfo(pod)
                if is_pending(pod, name):
                    if was_pending or info.key in core:
                        core.update(PodInfo(old) if old is not None else None, info, now)
                    else:
                        self._add(info, now)
                    self.nominations.set(info)
                    return
                # Bound, terminating, finished or not ours any more: no longer nominated.
                self.nominations.delete(key)
                assigned = _is_assigned(pod)
                cycle = core.placed_cycle(info)
                if was_pending or info.key in core:
                    self._delete(info, now, bound=assigned)
                if assigned:
                    self._assigned_pod_added(info, now, cycle)
                elif old is not None and _is_assigned(old):
                    core.unassigned_member(info, now)
                    self._move_all("AssignedPodDelete", now)
            case "Deleted" | "Preempted":
                info = PodInfo(pod)
                self.nominations.delete(key)
                self._delete(info, now)
                if pod.spec.node_name:
                    core.unassigned_member(info, now)
                    self._move_all("AssignedPodDelete", now)
            case "Bound":
                info = core.bound_info(pod)
                self.nominations.delete(key)
                cycle = core.placed_cycle(info)
                self._delete(info, now, bound=True)
                self._assigned_pod_added(info, now, cycle)
            case "Unschedulable":
                pass
            case _:
                assert_never(change.type)

    # ------------------------------------------------------------------ replies

    def _answer_parked(self, now: float) -> None:
        pop = self._parked
        if pop is None:
            return
        if pop.reply.statistics().open_receive_channels == 0:
            # The requester went away: popping for it would strand the pod in flight.
            self._parked = None
            return
        core = self.core
        if core.active_count:
            most = batch_max_pods(
                pop.max_pods,
                nominations=bool(self.nominations),
                affinity_waiters=core.has_affinity_waiters,
            )
            queued, gangs = core.pop_batch(now, most)
            if not queued:  # pragma: no cover - active_count says there is one
                return
            self._parked = None
            nominated = self.nominations.view(core.in_flight_keys)
            answer = PoppedBatch(
                pods=[
                    Popped(
                        pod=q.pod,
                        cycle=q.cycle,
                        attempts=q.attempts,
                        arrived_at=q.arrived_at,
                        links=self._links.get(q.pod.key, []),
                        nominated=nominated,
                    )
                    for q in queued
                ],
                groups=[
                    GangBatch(key=g.key, min_count=g.min_count, bound=g.bound, members=g.members)
                    for g in gangs
                ],
            )
            try:
                pop.reply.send_nowait(answer)
            except (trio.BrokenResourceError, trio.ClosedResourceError, trio.WouldBlock):
                for q in queued:
                    core.cancel_pop(q.pod.key)
        elif pop.idle_ok and core.backoff_count == 0:
            self._parked = None
            reply(pop.reply, QueueIdle(unschedulable=core.unschedulable_count))
