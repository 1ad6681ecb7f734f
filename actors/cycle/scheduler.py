"""The scheduler: one scheduling cycle after another, in batches, driving the other actors.

Kubernetes counterpart: pkg/scheduler/scheduler.go@v1.14 ``scheduleOne``: pop the next pod,
bring the snapshot up to date (``UpdateNodeInfoSnapshot``), filter and score it, assume it on
the chosen node in the cache, and hand the bind to the binder without waiting for it; on
failure record why (the pod's PodScheduled condition) and give the pod back to the queue.

Podium runs those cycles in batches (the only path; a batch of one is one cycle): one Pop
answers up to ``batch_max_pods`` pods in the order successive pops would give; one snapshot
request brings the snapshot up to date; the pods are then decided one after another (one
FilterRequest each: filter actor -> score actor -> back here), each decision folded into
the snapshot as the cache's assume would change it
(:func:`~podium.actors.cache.core.fold_assumed`), so the next pod sees what it would have
seen one pod at a time; then one Assume for the batch, one BindBatch to the binder. Which pods
may share a batch is :mod:`podium.actors.queue.batching`'s rule (the queue applies it); a
preemption that evicts pods or clears a nomination ends the batch: carried out when its pod
is the batch's first, otherwise that pod goes back to the queue with the rest (GiveBack, not
counted as attempts) and comes first in the next batch, after the pods decided before it are
bound (the queue's cycle numbers then compare as one pod at a time). The pods not yet decided
when ``batch_max_seconds`` has passed go back too.

A gang (issue 24: one of a Popped batch's ``groups``, all the members its unit holds; a batch of
gangs holds the units next in queue order up to ``batch_max_pods``, the first one whole whatever
its size) is decided the same way, one member after another on one snapshot with every predicate, priority, extender
and volume rule a lone pod gets, each placement folded in before the next, but all or nothing,
with no time bound, and with a preemption of its own (all or nothing too). Members an earlier
preemption of the group nominated are each decided seeing the other members' nominations until
those are placed (:func:`~podium.actors.cycle.gangs.nominated_with`: the queue's view leaves
out the pods in flight, the whole gang). What :mod:`podium.actors.queue.batching` says a fold
does not carry is exact here: pod (anti-)affinity and spreading keep their counts against the
snapshot's journal of node changes and the NodeInfo objects, which a fold changes like any
other node change (the next member sees the earlier ones: the actor tests place members with
anti-affinity to each other on distinct nodes); and a member's volume decision is folded into
the snapshot's objects (:func:`~podium.actors.plugins.volume_binding.fold_volume_decision`,
the claims bound and volumes taken as the cache's assume makes them), so the next member's
claims do not pick the same volume. Then:

- at least ``min_count - bound`` placed: one Assume with ``atomic`` (the cache takes all or
  none), GroupPlaced to the queue, the members that did not fit requeued as ordinary
  unschedulable pods (the group has its minCount), one BindBatch whose requests carry the group
  (the binder's bindings carry it, and the store binds them in one transaction or refuses them
  all); a refused Assume undoes every fold and requeues the group as one unit (conflict, or
  error);
- fewer: with preemption on (and no member's attempt an error), the gang's preemption
  (:mod:`podium.actors.cycle.gangs`: a plan member by member as pod preemption picks, never
  evicting members of gangs, then a check that every needed member fits once the victims are
  gone) may evict, in one Evict whose ``group`` nominates every member it placed. Then every
  fold is undone (each node put back as before the gang's first fold on it, the objects as
  before), nothing is assumed or bound, the group goes back to the queue as one unit
  (RequeueGroup, backed off: after an eviction it is decided whole again once the victims are
  gone) and every member's condition says why (:func:`gang_message`: ``pod group ml/train: 6
  of 8 members fit, minCount 8; ml/worker-6: 0/10 nodes are available: ... preemption: 0/10
  nodes are available: ...``, each member's preemption part as a pod's message has it).

The gangs of one batch are decided one after another, each all or nothing as above before the
next is decided (a gang placed is assumed and handed to the binder, a gang not placed has its
folds undone), so each sees the snapshot a batch of its own would have: exactly the placements
one gang a batch gives (tests/property/test_gangs.py compares the two). A gang whose preemption
writes to the store (evicts, or clears its members' nominations) ends the batch: when it is the
batch's first, it is carried out and the gangs after it go back to the queue (GiveBack); when
it is not, nothing is written and it goes back with them, to come first in the next batch, as
a pod's preemption does. The gangs not decided once ``batch_max_seconds`` has passed go back
too.

Each member still counts as one attempt in the per-pod metrics; the gang's attempt counts in
``podium_pod_group_attempts_total{result}`` and is one ``pod_group_attempt`` span.

Preemption runs v1.14 ``Preempt`` with the extenders' preempt verbs narrowing the candidates
(actors/cycle/extenders), and every extender call of an attempt becomes a span of its trace.

Owns: the batch's snapshot (refreshed from the cache's deltas once per batch, lent to the
filter actor and the score actor for one decision at a time and changed only between two,
under a lock shared with explain requests) and the attempt counters.
Mailbox (control): :class:`~podium.actors.mail.messages.BeginScheduling`,
:class:`~podium.actors.mail.messages.ExplainPod`,
:class:`~podium.actors.mail.messages.ExplainGroup` (a pod group's dry run: its members as its
attempt would decide them, and what its preemption would evict),
:class:`~podium.actors.mail.messages.ReloadPlugins`,
:class:`~podium.actors.mail.messages.SchedulerStats`.
Emits: Pop, GiveBack, Requeue, RequeueGroup and GroupPlaced (queue); SnapshotRequest and Assume
(cache); FilterRequest
(filter actor); SetFilters/SetScorers (filter actor, score actor); BindBatch (binder);
RecordUnschedulable and Evict (store); :class:`~podium.actors.mail.messages.Attempted` (an observer,
if any).

Metrics (protocol/metrics.py), per pod as one pod at a time: ``scheduler_schedule_attempts_total`` and
``scheduler_scheduling_attempt_duration_seconds`` by result (a pod's own cycle: its share of
the batch's pop and snapshot refresh, then from the start of its decision to its requeue, or
to the end of its decision plus its share of the batch's assume round trip; the time a pod
waits while the pods before and after it in its batch are decided is not its cycle; a
conflict, an assume the cache refused, counts as error as Kubernetes counts an assume
failure), and ``scheduler_framework_extension_point_duration_seconds`` for Filter and Score
(measured by the filter actor and the score actor, carried in the Decision) and Reserve (a
pod's share of the batch's assume round trip). A share is the round trip divided among the
pods it served: Kubernetes' attempt is the snapshot update, the algorithm and the assume of
one pod, and one message does each for the whole batch (counted whole in every pod's attempt,
a round trip and any stall in it counted once per pod).
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

import msgspec
import trio

from podium.actors.cycle.explain import hints
from podium.actors.cycle.extenders import NO_EXTENDERS, Call, Extenders
from podium.actors.cycle.gangs import (
    GANG_LISTED,
    GangPreemption,
    fold_member,
    gang_message,
    member_nominations,
    nominated_with,
    preemption_note,
    undo,
)
from podium.actors.framework.interface import FilterPlugin
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.framework.preemption import (
    PREEMPT_NEVER,
    PREEMPTION_PREFIX,
    DisruptionBudget,
    PredicateFitCheck,
    PreemptionResult,
    Spared,
    disruption_budgets,
    fit_error_with_preemption,
    gang_members,
    lowest_evictable_priority,
    pod_eligible_to_preempt_others,
    spend_budgets,
    without_victims,
    without_victims_anywhere,
)
from podium.actors.framework.snapshot import (
    ClusterObjects,
    Snapshot,
    apply_delta,
    assumed_pod,
    fold_assumed,
)
from podium.actors.mail.messages import (
    Assume,
    AssumeReply,
    AssumeStatus,
    Assumption,
    Attempted,
    BeginScheduling,
    BindBatch,
    BindDone,
    BinderMsg,
    BindRequest,
    CacheMsg,
    Decision,
    Explained,
    ExplainedGroup,
    ExplainGroup,
    ExplainPod,
    FilterMsg,
    FilterRequest,
    GangBatch,
    GiveBack,
    GroupAttempt,
    GroupPlaced,
    Pop,
    Popped,
    PoppedBatch,
    QueueIdle,
    QueueMsg,
    Reloaded,
    ReloadPlugins,
    Requeue,
    RequeueGroup,
    SchedulerMsg,
    SchedulerStats,
    SchedulerStatsReply,
    ScoreMsg,
    SetFilters,
    SetScorers,
    SnapshotDelta,
    SnapshotRequest,
)
from podium.actors.plugins.volume_binding import VolumeBinding
from podium.actors.runtime.mailbox import ask, reply, send
from podium.actors.runtime.tracing import (
    ASSUME,
    DISABLED,
    EXTENDER,
    FILTER,
    RESULT,
    SCORE,
    SELECT,
    Attempt,
    Tracing,
    extender_span,
)
from podium.protocol import metrics
from podium.protocol.config import DEFAULT_BATCH_MAX_PODS, DEFAULT_BATCH_MAX_SECONDS
from podium.protocol.errors import PodiumError
from podium.protocol.extender import ExtenderConfig
from podium.protocol.wire import Hint
from podium.store.mail import (
    Evict,
    EvictResult,
    Preemptor,
    RecordUnschedulable,
    StoreFailure,
    StoreMsg,
    Victim,
)

__all__ = ["NO_POLICY_FILE", "PluginSet", "Scheduler"]

log = logging.getLogger("podium.scheduler")

NO_POLICY_FILE = (
    "this daemon was started without a policy file: it runs the default policy, and there is "
    "no file to read again (to use one, restart it with --policy FILE, or with a config whose "
    "algorithmSource.policy.file.path names it)"
)
"""ReloadPlugins' answer (``not_found``) when there is no loader: no policy file to read."""


@dataclass(frozen=True, slots=True)
class PluginSet:
    """A policy made ready to send: what the filter actor and the score actor will use.

    ``volumes`` is the volume binder the score actor decides a placed pod's claims with
    (policy-independent: a reload keeps the one the score actor started with).
    """

    filters: SetFilters
    scorers: SetScorers
    predicates: list[str]
    priorities: list[tuple[str, int]]
    warnings: list[str]
    volumes: VolumeBinding
    extenders: tuple[ExtenderConfig, ...] = ()


class Scheduler:
    """The scheduling-cycle actor.

    Args:
        control: its mailbox.
        queue, cache, filter_actor, score_actor, binder, store: the mailboxes it sends to (its own
            clones; closed when it stops).
        reports: where each finished attempt is reported (None: nowhere).
        load_plugins: reads the policy file again for ReloadPlugins (raises PodiumError);
            None when there is no policy file (ReloadPlugins then says so).
        sync_binds: wait for each bind to commit before the next cycle (``podium simulate``,
            whose outcome must not depend on task interleaving).
        exit_when_idle: stop when no pod is active or backing off (``podium simulate``).
        explain_attempts: keep every examined node's verdict in each attempt's report
            (``podium simulate --explain``).
        tracing: one trace per attempt (queue_wait, filter, score, select, assume; the
            binder adds bind and commit), linked to the requests that submitted the pod.
        filters: the predicates in force (preemption re-checks nodes with them; a reload
            replaces them).
        preemption: when a pod fits nowhere, look for lower-priority pods to evict
            (``disablePreemption: false``, the default).
        batch_max_pods: the most pods one batch takes from the queue (1: one at a time).
        batch_max_seconds: once a batch has been deciding this long, the pods it has not
            decided go back to the queue (so a higher-priority pod that arrived meanwhile
            waits at most this long).
        extenders: the policy's extenders (their preempt verbs narrow the candidates; their
            calls in the filter actor and score actor get spans here).
    """

    def __init__(
        self,
        control: trio.MemoryReceiveChannel[SchedulerMsg],
        *,
        queue: trio.MemorySendChannel[QueueMsg],
        cache: trio.MemorySendChannel[CacheMsg],
        filter_actor: trio.MemorySendChannel[FilterMsg],
        score_actor: trio.MemorySendChannel[ScoreMsg],
        binder: trio.MemorySendChannel[BinderMsg],
        store: trio.MemorySendChannel[StoreMsg],
        reports: trio.MemorySendChannel[Attempted] | None = None,
        load_plugins: Callable[[], PluginSet] | None = None,
        sync_binds: bool = False,
        exit_when_idle: bool = False,
        explain_attempts: bool = False,
        tracing: Tracing = DISABLED,
        filters: Sequence[FilterPlugin[Any]] = (),
        preemption: bool = True,
        batch_max_pods: int = DEFAULT_BATCH_MAX_PODS,
        batch_max_seconds: float = DEFAULT_BATCH_MAX_SECONDS,
        extenders: Extenders = NO_EXTENDERS,
    ) -> None:
        self._extenders = extenders
        self._control = control
        self._queue = queue
        self._cache = cache
        self._filter_actor = filter_actor
        self._score_actor = score_actor
        self._binder = binder
        self._store = store
        self._reports = reports
        self._load_plugins = load_plugins
        self._sync_binds = sync_binds
        self._exit_when_idle = exit_when_idle
        self._explain_attempts = explain_attempts
        self._tracing = tracing
        self._filters = list(filters)
        self._preemption = preemption
        self._batch_max_pods = batch_max_pods
        self._batch_max_seconds = batch_max_seconds
        self._snapshot: Snapshot | None = None
        self._lock = trio.Lock()
        self._begin = trio.Event()
        self._scope = trio.CancelScope()
        self._counts = {"scheduled": 0, "unschedulable": 0, "error": 0, "conflict": 0}
        # Every FilterRequest is answered here: decisions are asked one at a time (under the
        # lock), so one channel serves them all instead of one opened per pod (~5 us each).
        self._decisions_to, self._decisions = trio.open_memory_channel[Decision](math.inf)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with (
            self._queue,
            self._cache,
            self._filter_actor,
            self._score_actor,
            self._binder,
            self._store,
        ):
            try:
                with self._scope:
                    await self._run(task_status)
            finally:
                if self._reports is not None:
                    self._reports.close()

    def stop(self) -> None:
        """Stop taking pods (shutdown): the cycle in progress is abandoned; its pod stays
        pending in the store and is scheduled again after a restart."""
        self._scope.cancel("podium is shutting down")

    async def _run(self, task_status: trio.TaskStatus[None]) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._serve_control, nursery.cancel_scope)
            task_status.started()
            await self._begin.wait()
            while await self._schedule_batch():
                pass
            nursery.cancel_scope.cancel("the queue is idle")

    # ------------------------------------------------------------------ control

    async def _serve_control(self, scope: trio.CancelScope) -> None:
        async with self._control:
            async for msg in self._control:
                match msg:
                    case BeginScheduling():
                        self._begin.set()
                    case ExplainPod():
                        reply(msg.reply, await self._explain(msg))
                    case ExplainGroup():
                        reply(msg.reply, await self._explain_group(msg))
                    case ReloadPlugins():
                        reply(msg.reply, await self._reload())
                    case SchedulerStats():
                        c = self._counts
                        reply(
                            msg.reply,
                            SchedulerStatsReply(
                                scheduled=c["scheduled"],
                                unschedulable=c["unschedulable"],
                                errors=c["error"],
                            ),
                        )
                    case _:
                        assert_never(msg)
        if not self._begin.is_set():
            # Told nothing before the control channel closed: there is nothing to schedule.
            scope.cancel("the control channel closed before scheduling began")

    async def _explain(self, msg: ExplainPod) -> Explained:
        async with self._lock:
            snapshot = await self._refresh()
            decision = await self._decide(msg.pod, snapshot, dry=True, explain=msg.explain)
            found = hints(msg.pod, decision.result, snapshot) if decision.node is None else []
            would = None
            if decision.node is None and not decision.result.error and self._preemption:
                unresolvable = await self._unresolvable(msg.pod, snapshot, decision)
                fits = PredicateFitCheck(self._filters)
                would = await self._extenders.preempt(msg.pod, snapshot, unresolvable, fits)
        preempted = [v.key for v in would.victims] if would is not None else []
        if would is not None:
            decision = _with_preemption(decision, would)
        return Explained(decision=decision, hints=found, preempted=preempted)

    async def _explain_group(self, msg: ExplainGroup) -> ExplainedGroup:
        """A group's members decided as its attempt would (dry, every node's verdict), the
        hints for those that do not fit, and, when too few fit, what its preemption would
        evict; the snapshot is left as it was."""
        needed = 0 if msg.min_count is None else max(msg.min_count - msg.bound, 0)
        decisions: list[Decision] = []
        found: dict[str, list[Hint]] = {}
        preemption: GangPreemption | None = None
        async with self._lock:
            snapshot = await self._refresh()
            objects = snapshot.objects
            before: dict[str, NodeInfo] = {}
            nominations = member_nominations(msg.members)
            try:
                for member in msg.members:
                    decision = await self._decide(
                        member,
                        snapshot,
                        dry=True,
                        explain=True,
                        nominated=nominated_with(None, nominations),
                    )
                    if decision.node is not None:
                        fold_member(snapshot, before, member, decision)
                        nominations.pop(member.key, None)
                    elif not decision.result.error:
                        found[member.key] = hints(member, decision.result, snapshot)
                    decisions.append(decision)
                fit = sum(1 for d in decisions if d.node is not None)
                errors = any(d.result.error for d in decisions)
                if fit < needed and self._preemption and not errors:
                    preemption = await self._gang_preemption(
                        msg.members, decisions, needed, snapshot, before, objects, None
                    )
            finally:
                undo(snapshot, before, objects)
        evicting = preemption is not None and preemption.evict
        parts: Mapping[str, str] = {}
        note = ""
        if preemption is not None and not evicting:
            parts, note = preemption.parts, preemption.note
        told: list[Decision] = []
        for member, decision in zip(msg.members, decisions, strict=True):
            part = parts.get(member.key)
            if part and decision.result.message:
                result = msgspec.structs.replace(
                    decision.result, message=_with_part(decision.result.message, part)
                )
                decision = msgspec.structs.replace(decision, result=result)
            told.append(decision)
        message = None
        if fit < needed:
            gang = GangBatch(
                key=msg.key,
                min_count=msg.min_count or 0,
                bound=msg.bound,
                members=len(msg.members),
            )
            unfit = [
                (m.key, d.result.message or "")
                for m, d in zip(msg.members, told, strict=True)
                if d.node is None
            ]
            unfit.sort(key=lambda entry: entry[0] not in parts)
            message = gang_message(gang, len(told), fit, unfit, note=note)
        preempted: dict[str, list[str]] = {}
        if preemption is not None and evicting:
            preempted = {k: [v.key for v in vs] for k, vs in preemption.victims.items() if vs}
        return ExplainedGroup(
            decisions=told,
            hints=found,
            fit=fit,
            needed=needed,
            preempted=preempted,
            message=message,
        )

    async def _reload(self) -> Reloaded:
        if self._load_plugins is None:
            return Reloaded(predicates=[], priorities=[], error=NO_POLICY_FILE, code="not_found")
        try:
            plugins = self._load_plugins()
        except PodiumError as exc:
            return Reloaded(predicates=[], priorities=[], error=str(exc))
        async with self._lock:
            await send(self._filter_actor, plugins.filters)
            await send(self._score_actor, plugins.scorers)
            self._filters = list(plugins.filters.filters)
        warnings = list(plugins.warnings)
        if plugins.extenders != self._extenders.configs:
            warnings.append("the policy's extenders changed: they take effect after a restart")
        log.info(
            "policy reloaded: %d predicates, %d priorities",
            len(plugins.predicates),
            len(plugins.priorities),
        )
        return Reloaded(
            predicates=plugins.predicates, priorities=plugins.priorities, warnings=warnings
        )

    # ------------------------------------------------------------------ the cycle

    async def _refresh(self) -> Snapshot:
        generation = self._snapshot.generation if self._snapshot is not None else 0
        delta: SnapshotDelta = await ask(
            self._cache, lambda r: SnapshotRequest(generation=generation, reply=r)
        )
        self._snapshot = apply_delta(self._snapshot, delta)
        return self._snapshot

    async def _decide(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        dry: bool,
        explain: bool,
        nominated: NominatedPods | None = None,
    ) -> Decision:
        await send(
            self._filter_actor,
            FilterRequest(
                pod=pod,
                snapshot=snapshot,
                dry=dry,
                explain=explain,
                nominated=nominated,
                reply=self._decisions_to,
            ),
        )
        while True:
            decision = await self._decisions.receive()
            # Only a request abandoned by a cancellation could have left another answer.
            if decision.pod is pod:
                return decision

    async def _unresolvable(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        decision: Decision,
        nominated: NominatedPods | None = None,
    ) -> frozenset[str]:
        """The nodes a pod that fit nowhere failed on unresolvably (what preemption starts
        from): the attempt's own verdicts when it kept them, else a dry re-run with every
        node's verdict."""
        if decision.result.failed:
            return decision.result.unresolvable
        again = await self._decide(pod, snapshot, dry=True, explain=True, nominated=nominated)
        return again.result.unresolvable

    async def _carry_out(self, pod: PodInfo, preemption: PreemptionResult) -> list[str]:
        """Evict the victims and nominate the preemptor (one store transaction), and clear the
        nominations preemption took away. Returns the ``namespace/name`` of the evicted pods."""
        evicted: list[str] = []
        if preemption.node is not None:
            metrics.PREEMPTION_ATTEMPTS.inc()
            metrics.PREEMPTION_VICTIMS.observe(len(preemption.victims))
            result = await self._evict(pod, preemption.node, list(preemption.victims))
            if isinstance(result, EvictResult):
                evicted = result.evicted
                log.info(
                    "pod %s preempted %s on node %s",
                    pod.key,
                    ", ".join(evicted) or "nothing",
                    preemption.node,
                )
        for other in preemption.nominated_pods_to_clear:
            if other.pod.status.nominated_node_name:
                await self._evict(other, "", [])
        return evicted

    async def _evict(
        self, pod: PodInfo, node: str, victims: list[PodInfo]
    ) -> EvictResult | StoreFailure:
        refs = [Victim(namespace=v.namespace, name=v.name, uid=v.pod.metadata.uid) for v in victims]
        return await ask(
            self._store,
            lambda r: Evict(
                namespace=pod.namespace,
                name=pod.name,
                uid=pod.pod.metadata.uid,
                node=node,
                victims=refs,
                reply=r,
            ),
        )

    async def _schedule_batch(self) -> bool:
        """One batch; False when the queue is idle and the scheduler should stop."""
        popped: PoppedBatch | QueueIdle = await ask(
            self._queue,
            lambda r: Pop(reply=r, idle_ok=self._exit_when_idle, max_pods=self._batch_max_pods),
        )
        if isinstance(popped, QueueIdle):
            return False
        with contextlib.ExitStack() as traces:
            if popped.groups:
                await self._gangs(popped.pods, popped.groups, trio.current_time(), traces)
            else:
                await self._batch(popped.pods, trio.current_time(), traces)
        return True

    # ------------------------------------------------------------------ gangs

    async def _gangs(
        self,
        pods: list[Popped],
        gangs: list[GangBatch],
        popped_at: float,
        traces: contextlib.ExitStack,
    ) -> None:
        """Decide a batch of gangs one after another on one snapshot (refreshed once), each as
        :meth:`_gang` decides it: a gang placed is assumed and handed to the binder, and a gang
        not placed has every fold undone, before the next gang is decided, so each sees the
        snapshot a batch of its own would have (the earlier gangs' placements as the cache's
        assume made them). The gangs not decided once ``batch_max_seconds`` has passed go back
        to the queue (GiveBack, not counted as attempts), and so do the ones after a gang whose
        preemption wrote to the store (see :meth:`_gang`)."""
        deadline = popped_at + self._batch_max_seconds
        async with self._lock:
            snapshot = await self._refresh()
            # The pop and the snapshot's refresh served every pod of the batch: each member's
            # attempt counts its share (as the assume's round trip).
            share = (trio.current_time() - popped_at) / len(pods)
            start = 0
            for n, gang in enumerate(gangs):
                if n and trio.current_time() >= deadline:
                    await self._give_back(pods[start:])
                    return
                members = pods[start : start + gang.members]
                start += gang.members
                went = await self._gang(
                    members,
                    gang,
                    snapshot,
                    traces,
                    popped_at=popped_at if n == 0 else None,
                    share=share,
                    first=n == 0,
                )
                if went == "given_back":
                    await self._give_back(pods[start - gang.members :])
                    return
                if went == "end":
                    await self._give_back(pods[start:])
                    return

    async def _gang(
        self,
        pods: list[Popped],
        gang: GangBatch,
        snapshot: Snapshot,
        traces: contextlib.ExitStack,
        *,
        popped_at: float | None,
        share: float,
        first: bool,
    ) -> Literal["next", "end", "given_back"]:
        """Decide a gang's members one after another on ``snapshot``, each placement folded in
        before the next (its NodeInfo change, and its volume decision into the snapshot's
        objects), with no time bound; then all or nothing: at least ``min_count - bound``
        placed are assumed in one atomic Assume and bound in one BindBatch carrying the group,
        else every fold is undone and the group requeued, after its preemption.

        ``popped_at``: when the batch was popped, for the batch's first gang (None for the
        others); ``share``: each member's share of the pop and refresh.

        Returns:
            ``next``; ``end`` when the gang's preemption wrote to the store (evicted, or
            cleared its members' nominations), which ends the batch (the gangs after it are
            decided on a refreshed snapshot in the next); ``given_back`` when it would have
            evicted but is not the batch's ``first``: nothing is written and the caller gives
            it back with the rest, so it comes first in the next batch, as pod preemption does
            (:meth:`_batch`).
        """
        needed = gang.min_count - gang.bound
        outcomes: list[_Outcome] = []
        # Node -> its NodeInfo before the gang's first fold on it; the objects before any.
        before: dict[str, NodeInfo] = {}
        objects = snapshot.objects
        began = trio.current_time() if popped_at is None else popped_at
        result = "unschedulable"
        went: Literal["next", "end", "given_back"] = "next"
        # The members an earlier preemption of the group nominated: each member sees the
        # others' nominations until they are placed (the queue's view leaves the gang out).
        nominations = member_nominations(p.pod for p in pods)
        for i, popped in enumerate(pods):
            started = trio.current_time()
            attempt = traces.enter_context(
                self._tracing.attempt(
                    popped.pod.key,
                    links=popped.links,
                    arrived_at=popped.arrived_at,
                    popped_at=popped_at if i == 0 and popped_at is not None else started,
                    attempts=popped.attempts,
                )
            )
            decision = await self._decide(
                popped.pod,
                snapshot,
                dry=False,
                explain=self._explain_attempts,
                nominated=nominated_with(popped.nominated, nominations),
            )
            decided = trio.current_time()
            if attempt.sampled:
                _record_stages(attempt, decision, started, decided)
            outcome = _Outcome(popped, decision, attempt, started - share, finished=decided)
            if decision.node is not None:
                outcome.assumed = fold_member(snapshot, before, popped.pod, decision)
                nominations.pop(popped.pod.key, None)
            elif self._explain_attempts and not decision.result.error:
                outcome.hints = hints(popped.pod, decision.result, snapshot)
            outcomes.append(outcome)
        placed = [o for o in outcomes if o.decision.node is not None]
        if len(placed) >= needed:
            for o in outcomes:
                _observe_stages(o.decision)
            result = await self._commit_gang(gang, outcomes, placed, snapshot, before, objects)
        else:
            preemption = None
            if self._preemption and not any(o.decision.result.error for o in outcomes):
                preemption = await self._gang_preemption(
                    [o.popped.pod for o in outcomes],
                    [o.decision for o in outcomes],
                    needed,
                    snapshot,
                    before,
                    objects,
                    pods[0].nominated,
                )
            undo(snapshot, before, objects)
            writes = preemption is not None and (
                preemption.evict or any(p.pod.pod.status.nominated_node_name for p in pods)
            )
            if writes and not first:
                for o in outcomes:
                    o.attempt.outcome("given_back")
                return "given_back"
            if writes:
                went = "end"
            for o in outcomes:
                _observe_stages(o.decision)
            result = await self._gang_unschedulable(gang, outcomes, len(placed), preemption)
        self._tracing.group_attempt(
            gang.key,
            members=len(pods),
            placed=len(placed) if result == "scheduled" else 0,
            result=result,
            start=began,
            end=trio.current_time(),
        )
        return went

    def _would_preempt(self, pod: PodInfo) -> bool:
        """Whether a pod that fits nowhere would have preemption tried for it (on, and the
        pod's ``preemptionPolicy`` is not Never)."""
        return self._preemption and pod.pod.spec.preemption_policy != PREEMPT_NEVER

    async def _gang_unschedulable(
        self,
        gang: GangBatch,
        outcomes: list[_Outcome],
        fit: int,
        preemption: GangPreemption | None,
    ) -> str:
        """Fewer members fit than the gang needs: none is placed. With a preemption that makes
        room for the whole group, its victims are evicted and the members nominated (one store
        transaction); either way the group goes back to the queue as one unit and every member
        is told why (:func:`gang_message`)."""
        unfit = [o for o in outcomes if o.decision.node is None]
        error = any(o.decision.result.error for o in unfit)
        why: Literal["error", "unschedulable"] = "error" if error else "unschedulable"
        evicted: set[str] = set()
        parts: Mapping[str, str] = {}
        note = ""
        if preemption is not None:
            if preemption.evict:
                evicted = await self._carry_out_gang(gang, preemption)
            else:
                parts, note = preemption.parts, preemption.note
                await self._clear_nominations([o.popped.pod for o in outcomes])
        told = [
            (
                o.popped.pod.key,
                _with_part(o.decision.result.message or "", parts.get(o.popped.pod.key)),
            )
            for o in unfit
        ]
        # The members preemption could not help first: they are what blocks the group.
        told.sort(key=lambda entry: entry[0] not in parts)
        message = gang_message(gang, len(outcomes), fit, told, note=note)
        plugins = frozenset().union(*(o.decision.result.failed_plugins for o in unfit))
        await send(
            self._queue,
            RequeueGroup(
                key=gang.key,
                pods=[o.popped.pod for o in outcomes],
                cycle=outcomes[0].popped.cycle,
                why=why,
                plugins=plugins,
            ),
        )
        now = trio.current_time()
        for o in outcomes:
            pod, result = o.popped.pod, o.decision.result
            await send(
                self._store,
                RecordUnschedulable(
                    namespace=pod.namespace,
                    name=pod.name,
                    uid=pod.pod.metadata.uid,
                    message=message,
                ),
            )
            o.attempt.outcome(
                why,
                nodes_examined=result.evaluated,
                nodes_feasible=result.feasible,
                message=message,
            )
            result = msgspec.structs.replace(result, message=message)
            o.decision = msgspec.structs.replace(o.decision, result=result)
            o.status = why
            o.finished = now
            if preemption is not None and evicted:
                o.preempted = [
                    v.key for v in preemption.victims.get(pod.key, ()) if v.key in evicted
                ]
        log.debug(
            "pod group %s: %d of %d members fit, fewer than needed", gang.key, fit, len(outcomes)
        )
        (
            metrics.POD_GROUP_ATTEMPTS_ERROR if error else metrics.POD_GROUP_ATTEMPTS_UNSCHEDULABLE
        ).inc()
        for o in outcomes:
            await self._report(o, group=_group_attempt(gang, len(outcomes), fit))
        return why

    # ------------------------------------------------------------------ gang preemption

    async def _gang_preemption(
        self,
        members: Sequence[PodInfo],
        decisions: Sequence[Decision],
        needed: int,
        snapshot: Snapshot,
        before: dict[str, NodeInfo],
        objects: ClusterObjects,
        nominated: NominatedPods | None,
    ) -> GangPreemption:
        """Look for victims so that ``needed`` members fit (actors/cycle/gangs.py: plan, then
        check). ``snapshot`` holds the attempt's folds (``before``, ``objects``: as before
        them) and is left as it was before the attempt: every change undone, ``before``
        emptied."""
        try:
            plan = await self._plan_gang(members, decisions, needed, snapshot, before, nominated)
        finally:
            undo(snapshot, before, objects)
        if len(plan.nodes) < needed:
            if plan.victims:
                plan.note = preemption_note(len(plan.evicted), len(plan.nodes), needed)
            return plan
        fit = await self._check_gang(members, plan, snapshot, objects, nominated)
        if fit >= needed:
            plan.evict = True
        elif plan.evicted:
            plan.note = preemption_note(len(plan.evicted), fit, needed)
        return plan

    async def _plan_gang(
        self,
        members: Sequence[PodInfo],
        decisions: Sequence[Decision],
        needed: int,
        snapshot: Snapshot,
        before: dict[str, NodeInfo],
        nominated: NominatedPods | None,
    ) -> GangPreemption:
        """The plan: a node for each member that did not fit, one after another, as pod
        preemption picks it (victims taken off and the member folded in before the next),
        until ``needed`` members have one or the members left cannot make up the difference;
        then the ``preemption:`` part of each listed member it found no node for."""
        plan = GangPreemption(
            members={m.key: m for m in members},
            nodes={m.key: d.node for m, d in zip(members, decisions, strict=True) if d.node},
        )
        keys = {m.key for m in members}
        spared = gang_members(snapshot.objects)
        budgets = disruption_budgets(snapshot)
        unfit = [(m, d) for m, d in zip(members, decisions, strict=True) if d.node is None]
        # Only pods below the highest unfit member's priority can be anyone's victims.
        top = max((m.priority for m, _ in unfit), default=None)
        lowest = lowest_evictable_priority(snapshot, spared, below=top)
        tried: set[str] = set()
        for i, (member, decision) in enumerate(unfit):
            if len(plan.nodes) >= needed or len(plan.nodes) + len(unfit) - i < needed:
                break
            tried.add(member.key)
            found = await self._member_preemption(
                member, decision, snapshot, nominated, budgets, spared, lowest
            )
            node = found.node
            if node is None:
                if found.message:
                    plan.parts[member.key] = found.message
                continue
            before.setdefault(node, without_victims(snapshot, node, found.victims))
            fold_member(snapshot, before, member, msgspec.structs.replace(decision, node=node))
            budgets = spend_budgets(budgets, found.victims)
            plan.nodes[member.key] = node
            plan.victims[member.key] = found.victims
            for other in found.nominated_pods_to_clear:
                if other.key not in keys:
                    plan.clear[other.key] = other
        if len(plan.nodes) < needed:
            # Every listed member says why preemption cannot help it, as a pod's message would.
            for member, decision in unfit[:GANG_LISTED]:
                if member.key in tried:
                    continue
                found = await self._member_preemption(
                    member, decision, snapshot, nominated, budgets, spared, lowest
                )
                if found.node is None and found.message:
                    plan.parts[member.key] = found.message
        return plan

    async def _member_preemption(
        self,
        member: PodInfo,
        decision: Decision,
        snapshot: Snapshot,
        nominated: NominatedPods | None,
        budgets: Sequence[DisruptionBudget],
        spared: Spared,
        lowest: int | None,
    ) -> PreemptionResult:
        """Pod preemption for one member (v1.14 ``Preempt`` with the extenders' preempt verbs),
        sparing the members of gangs; without a fit check per node when no pod of a lower
        priority than the member may be evicted anywhere."""
        eligible, why = pod_eligible_to_preempt_others(member, snapshot)
        if not eligible:
            return PreemptionResult(message=PREEMPTION_PREFIX + why)
        unresolvable = await self._unresolvable(member, snapshot, decision, nominated)
        if lowest is None or member.priority <= lowest:
            return without_victims_anywhere(member, snapshot, unresolvable)
        return await self._extenders.preempt(
            member,
            snapshot,
            unresolvable,
            PredicateFitCheck(self._filters, nominated),
            nominated=nominated,
            budgets=budgets,
            spared=spared,
        )

    async def _check_gang(
        self,
        members: Sequence[PodInfo],
        plan: GangPreemption,
        snapshot: Snapshot,
        objects: ClusterObjects,
        nominated: NominatedPods | None,
    ) -> int:
        """How many members fit once the plan's victims are gone: each decided (dry) one
        after another, each placement folded in, each seeing the nominations the plan would
        give the others until it is placed, as the group's retry will decide them. The
        snapshot is left as it was."""
        before: dict[str, NodeInfo] = {}
        nominations = {m.key: (m, plan.nodes[m.key]) for m in members if m.key in plan.nodes}
        fit = 0
        try:
            for key, victims in plan.victims.items():
                node = plan.nodes[key]
                before.setdefault(node, without_victims(snapshot, node, victims))
            for member in members:
                decision = await self._decide(
                    member,
                    snapshot,
                    dry=True,
                    explain=False,
                    nominated=nominated_with(nominated, nominations),
                )
                if decision.node is not None:
                    fold_member(snapshot, before, member, decision)
                    nominations.pop(member.key, None)
                    fit += 1
        finally:
            undo(snapshot, before, objects)
        return fit

    async def _carry_out_gang(self, gang: GangBatch, plan: GangPreemption) -> set[str]:
        """Evict every victim and nominate every member the plan placed to its node, in one
        store transaction; clear the lower-priority nominations on those nodes. Returns the
        ``namespace/name`` of the pods evicted (none when the store refused: a member gone,
        re-created or bound meanwhile)."""
        by_key = {v.key: v for v in plan.evicted}
        entries = [
            (plan.members[key], node, list(plan.victims.get(key, ())))
            for key, node in plan.nodes.items()
        ]
        result = await self._evict_group(entries)
        evicted: set[str] = set()
        if isinstance(result, EvictResult):
            evicted = set(result.evicted)
            for victims in plan.victims.values():
                if victims:
                    metrics.PREEMPTION_ATTEMPTS.inc()
                    metrics.PREEMPTION_VICTIMS.observe(len(victims))
            log.info(
                "pod group %s preempted %s",
                gang.key,
                ", ".join(k for k in by_key if k in evicted) or "nothing",
            )
            for other in plan.clear.values():
                if other.pod.status.nominated_node_name:
                    await self._evict(other, "", [])
        else:
            log.info("pod group %s evicted nothing: %s", gang.key, result.message)
        return evicted

    async def _clear_nominations(self, members: Sequence[PodInfo]) -> None:
        """Clear the nominations of a group's members (an earlier preemption's, which no
        longer makes room for the whole group), in one store transaction."""
        nominated: list[tuple[PodInfo, str, list[PodInfo]]] = [
            (m, "", []) for m in members if m.pod.status.nominated_node_name
        ]
        if nominated:
            await self._evict_group(nominated)

    async def _evict_group(
        self, entries: Sequence[tuple[PodInfo, str, list[PodInfo]]]
    ) -> EvictResult | StoreFailure:
        """One Evict for a group's members: each (member, node, victims) evicted for and
        nominated ("" clears), all in one transaction."""
        (first, node, victims), *rest = entries

        def refs(pods: Sequence[PodInfo]) -> list[Victim]:
            return [
                Victim(namespace=v.namespace, name=v.name, uid=v.pod.metadata.uid) for v in pods
            ]

        group = [
            Preemptor(
                namespace=m.namespace,
                name=m.name,
                uid=m.pod.metadata.uid,
                node=where,
                victims=refs(chosen),
            )
            for m, where, chosen in rest
        ]
        return await ask(
            self._store,
            lambda r: Evict(
                namespace=first.namespace,
                name=first.name,
                uid=first.pod.metadata.uid,
                node=node,
                victims=refs(victims),
                group=group,
                reply=r,
            ),
        )

    async def _commit_gang(
        self,
        gang: GangBatch,
        outcomes: list[_Outcome],
        placed: list[_Outcome],
        snapshot: Snapshot,
        before: dict[str, NodeInfo],
        objects: ClusterObjects,
    ) -> str:
        """Enough members fit: assume the placed ones all or nothing, then hand them to the
        binder in one BindBatch carrying the group; the members that did not fit are requeued
        as ordinary unschedulable pods. A refused assume undoes every fold and requeues the
        group as one unit."""
        reserving = trio.current_time()
        assumptions = [o.assumption() for o in placed]
        assumed: AssumeReply = await ask(
            self._cache,
            lambda r: Assume(
                pods=assumptions,
                generation=snapshot.generation,
                reply=r,
                folded=True,
                atomic=True,
            ),
        )
        reserved = trio.current_time()
        share = (reserved - reserving) / len(placed)
        for o in placed:
            o.attempt.record(ASSUME, reserving, reserved)
            o.finished += share
        refused = [s for s in assumed.statuses if s.status != "assumed"]
        if refused:
            undo(snapshot, before, objects)
            error = any(s.status == "error" for s in refused)
            why: Literal["conflict", "error"] = "error" if error else "conflict"
            log.warning("pod group %s was not assumed: %s", gang.key, refused[0].message)
            await send(
                self._queue,
                RequeueGroup(
                    key=gang.key,
                    pods=[o.popped.pod for o in outcomes],
                    cycle=outcomes[0].popped.cycle,
                    why=why,
                ),
            )
            statuses = dict(zip((o.popped.pod.key for o in placed), assumed.statuses, strict=True))
            for o in outcomes:
                result = o.decision.result
                status = statuses.get(o.popped.pod.key)
                if status is not None:
                    metrics.RESERVE_ERROR.observe(share)
                o.attempt.outcome(
                    why,
                    node=o.decision.node,
                    nodes_examined=result.evaluated,
                    nodes_feasible=result.feasible,
                    message=status.message if status is not None else refused[0].message,
                )
                o.status = why
            metrics.POD_GROUP_ATTEMPTS_ERROR.inc()
            attempt = _group_attempt(gang, len(outcomes), len(placed))
            for o in outcomes:
                await self._report(o, group=attempt)
            return "error"
        # The group first, so that the queue counts them placed before anything else of them.
        await send(self._queue, GroupPlaced(key=gang.key, pods=[o.popped.pod for o in placed]))
        for o in outcomes:
            if o.decision.node is None:
                result = o.decision.result
                if not result.error and result.message and self._would_preempt(o.popped.pod):
                    note = f" preemption: not tried for a member of pod group {gang.key}."
                    told = msgspec.structs.replace(result, message=result.message + note)
                    o.decision = msgspec.structs.replace(o.decision, result=told)
                await self._unschedulable(o)
        done_to, done = trio.open_memory_channel[BindDone](len(placed))
        binds: list[BindRequest] = []
        for o, status in zip(placed, assumed.statuses, strict=True):
            to = done_to if self._sync_binds else None
            bind = await self._reserved(o, status, snapshot, before, share, to, group=gang.key)
            assert bind is not None  # every member was assumed
            binds.append(bind)
        await send(self._binder, BindBatch(requests=binds))
        metrics.POD_GROUP_ATTEMPTS_SCHEDULED.inc()
        log.debug("pod group %s: %d of %d members placed", gang.key, len(placed), len(outcomes))
        attempt = _group_attempt(gang, len(outcomes), len(placed), placed=True)
        for o in outcomes:
            await self._report(o, group=attempt)
        if self._sync_binds:
            for _ in binds:
                await done.receive()
        return "scheduled"

    async def _batch(
        self, pods: list[Popped], popped_at: float, traces: contextlib.ExitStack
    ) -> None:
        """Decide ``pods`` one after another on one snapshot, each decision folded in before
        the next (the assume's NodeInfo change), then assume and bind the placed ones in one
        message each. Pods not decided when the time bound passes go back to the queue.
        """
        deadline = popped_at + self._batch_max_seconds
        outcomes: list[_Outcome] = []
        # Node -> its NodeInfo before the batch's first fold on it (put back if refused).
        before: dict[str, NodeInfo] = {}
        async with self._lock:
            snapshot = await self._refresh()
            refreshed = trio.current_time()
            for i, popped in enumerate(pods):
                started = trio.current_time()
                if i and started >= deadline:
                    await self._give_back(pods[i:])
                    break
                attempt = traces.enter_context(
                    self._tracing.attempt(
                        popped.pod.key,
                        links=popped.links,
                        arrived_at=popped.arrived_at,
                        popped_at=popped_at if i == 0 else started,
                        attempts=popped.attempts,
                    )
                )
                outcome = await self._attempt(popped, snapshot, started, attempt)
                if isinstance(outcome, _Outcome):
                    _observe_stages(outcome.decision)
                    if outcome.status is None:
                        node = outcome.node
                        # One PodInfo for the fold and the cache's assume of this pod.
                        outcome.assumed = assumed_pod(popped.pod, node)
                        folded = fold_assumed(snapshot, popped.pod, node, assumed=outcome.assumed)
                        before.setdefault(node, folded)
                    outcomes.append(outcome)
                    continue
                # Preemption evicts pods or clears nominations: the batch ends. A preemptor
                # that is not the batch's first pod goes back with the rest and comes first in
                # the next batch, after the pods before it are bound, as one pod at a time it
                # would have been popped (its cycle after their binds).
                if i:
                    attempt.outcome("given_back")
                    await self._give_back(pods[i:])
                    break
                _observe_stages(outcome.decision)
                outcomes.append(await self._preempted(popped, outcome, attempt, started))
                await self._give_back(pods[1:])
                break
            # The pop and the snapshot's refresh served every pod decided: each attempt
            # counts its share (as the assume's round trip below).
            for o in outcomes:
                o.started -= (refreshed - popped_at) / len(outcomes)
            await self._commit(outcomes, snapshot, before)

    async def _give_back(self, pods: list[Popped]) -> None:
        if pods:
            await send(self._queue, GiveBack(keys=[p.pod.key for p in pods]))

    async def _attempt(
        self, popped: Popped, snapshot: Snapshot, started: float, attempt: Attempt
    ) -> _Outcome | _Preempting:
        """Filter and score one pod of the batch.

        Returns:
            Its outcome: placed (``status`` None: the caller folds it in and assumes it), or
            unschedulable or error (already requeued here); or the preemption to carry out
            when it evicts pods or clears nominations.
        """
        pod = popped.pod
        deciding = trio.current_time()
        # The extenders' filter and prioritize verbs (actors/cycle/extenders) run in the filter actor
        # and the score actor, inside this round trip: once per pod of the batch.
        decision = await self._decide(
            pod, snapshot, dry=False, explain=self._explain_attempts, nominated=popped.nominated
        )
        decided = trio.current_time()
        if attempt.sampled:
            _record_stages(attempt, decision, deciding, decided)
        if decision.node is not None:
            return _Outcome(popped, decision, attempt, started, finished=decided)
        preemption: PreemptionResult | None = None
        calls: list[Call] = []
        if not decision.result.error and self._preemption:
            unresolvable = await self._unresolvable(pod, snapshot, decision, popped.nominated)
            preemption = await self._extenders.preempt(
                pod,
                snapshot,
                unresolvable,
                PredicateFitCheck(self._filters, popped.nominated),
                nominated=popped.nominated,
                calls=calls,
            )
        if preemption is not None and _changes_the_store(preemption):
            return _Preempting(decision, preemption, tuple(calls))
        if preemption is not None:
            decision = _with_preemption(decision, preemption, calls)
        return await self._unschedulable(_Outcome(popped, decision, attempt, started))

    async def _preempted(
        self, popped: Popped, preempting: _Preempting, attempt: Attempt, started: float
    ) -> _Outcome:
        preemption = preempting.preemption
        preempted = await self._carry_out(popped.pod, preemption)
        decision = _with_preemption(preempting.decision, preemption, preempting.calls)
        return await self._unschedulable(
            _Outcome(popped, decision, attempt, started, preempted=preempted)
        )

    async def _unschedulable(self, outcome: _Outcome) -> _Outcome:
        """A pod that fit nowhere (or whose attempt failed): requeued and its condition
        recorded now; reported with the batch, in decision order."""
        pod, result = outcome.popped.pod, outcome.decision.result
        why: Literal["error", "unschedulable"] = "error" if result.error else "unschedulable"
        if result.error:
            log.warning("scheduling pod %s failed: %s", pod.key, result.message)
        await send(
            self._queue,
            Requeue(
                pod=pod,
                cycle=outcome.popped.cycle,
                why=why,
                plugins=frozenset(result.failed_plugins),
            ),
        )
        await send(
            self._store,
            RecordUnschedulable(
                namespace=pod.namespace,
                name=pod.name,
                uid=pod.pod.metadata.uid,
                message=result.message or "",
            ),
        )
        outcome.attempt.outcome(
            why,
            nodes_examined=result.evaluated,
            nodes_feasible=result.feasible,
            message=result.message or "",
        )
        outcome.status = why
        outcome.finished = trio.current_time()
        return outcome

    async def _commit(
        self, outcomes: list[_Outcome], snapshot: Snapshot, before: dict[str, NodeInfo]
    ) -> None:
        """Assume the placed pods (one message), requeue the ones the cache refused, hand the
        rest to the binder (one message), and report every outcome in decision order; with
        ``sync_binds``, wait for the binds to commit."""
        placed = [o for o in outcomes if o.status is None]
        binds: list[BindRequest] = []
        done_to, done = trio.open_memory_channel[BindDone](max(len(placed), 1))
        if placed:
            reserving = trio.current_time()
            assumptions = [o.assumption() for o in placed]
            assumed: AssumeReply = await ask(
                self._cache,
                lambda r: Assume(
                    pods=assumptions, generation=snapshot.generation, reply=r, folded=True
                ),
            )
            reserved = trio.current_time()
            share = (reserved - reserving) / len(placed)
            for o, status in zip(placed, assumed.statuses, strict=True):
                # The trace shows the round trip as it ran; the metrics count each pod's share.
                o.attempt.record(ASSUME, reserving, reserved)
                # Its own cycle: its decision, then its share of the assume (the other pods'
                # decisions in between are theirs).
                o.finished += share
                to = done_to if self._sync_binds else None
                bind = await self._reserved(o, status, snapshot, before, share, to)
                if bind is not None:
                    binds.append(bind)
        if binds:
            await send(self._binder, BindBatch(requests=binds))
        for o in outcomes:
            await self._report(o)
        if self._sync_binds:
            for _ in binds:
                await done.receive()

    async def _reserved(
        self,
        o: _Outcome,
        status: AssumeStatus,
        snapshot: Snapshot,
        before: dict[str, NodeInfo],
        seconds: float,
        done: trio.MemorySendChannel[BindDone] | None,
        *,
        group: str = "",
    ) -> BindRequest | None:
        """One pod's assume answer: its bind, or None when the cache refused it (requeued)."""
        pod, result = o.popped.pod, o.decision.result
        if status.status != "assumed":
            metrics.RESERVE_ERROR.observe(seconds)
            # The cache did not take the pod, so the snapshot must not count it either (the
            # next refresh brings the node as the cache has it if anything else changed there).
            snapshot.replace_node_info(before[o.node])
            refused: Literal["conflict", "error"] = (
                "conflict" if status.status == "conflict" else "error"
            )
            if refused == "error":
                log.error("assuming pod %s on %s failed: %s", pod.key, o.node, status.message)
            await send(self._queue, Requeue(pod=pod, cycle=o.popped.cycle, why=refused))
            o.attempt.outcome(
                refused,
                node=o.node,
                nodes_examined=result.evaluated,
                nodes_feasible=result.feasible,
                message=status.message,
            )
            o.status = refused
            return None
        metrics.RESERVE_SUCCESS.observe(seconds)
        o.attempt.outcome(
            "scheduled",
            node=o.node,
            nodes_examined=result.evaluated,
            nodes_feasible=result.feasible,
        )
        o.status = "scheduled"
        return BindRequest(
            pod=pod,
            node=o.node,
            cycle=o.popped.cycle,
            volumes=o.decision.volumes,
            provisions=o.decision.provisions,
            done=done,
            attempts=o.popped.attempts,
            arrived_at=o.popped.arrived_at,
            trace=self._tracing.carrier_of(o.attempt),
            group=group,
        )

    async def _report(self, o: _Outcome, *, group: GroupAttempt | None = None) -> None:
        status = o.status
        assert status is not None
        self._counts[status] += 1
        counter, duration = _ATTEMPT_METRICS[status]
        counter.inc()
        duration.observe(o.finished - o.started)
        if self._reports is None:
            return
        await send(
            self._reports,
            Attempted(
                pod=o.popped.pod,
                status=status,
                node=o.decision.node if status == "scheduled" else None,
                result=o.decision.result,
                attempts=o.popped.attempts,
                preempted=o.preempted,
                group=group,
                hints=o.hints,
            ),
        )


@dataclass(slots=True)
class _Outcome:
    """One decided pod of a batch.

    ``status`` is None while it is placed and awaits the batch's assume. ``finished - started``
    is the attempt's duration: from the start of its decision, less its share of the batch's
    pop and refresh, to its requeue, or to the end of its decision plus its share of the
    batch's assume round trip.
    """

    popped: Popped
    decision: Decision
    attempt: Attempt
    started: float
    status: Literal["scheduled", "unschedulable", "error", "conflict"] | None = None
    finished: float = 0.0
    preempted: list[str] = field(default_factory=list)
    assumed: PodInfo | None = None
    hints: list[Hint] = field(default_factory=list)

    @property
    def node(self) -> str:
        assert self.decision.node is not None
        return self.decision.node

    def assumption(self) -> Assumption:
        """What the cache's Assume takes for this placed pod."""
        return Assumption(
            pod=self.popped.pod,
            node=self.node,
            volumes=self.decision.volumes,
            provisions=self.decision.provisions,
            assumed=self.assumed,
        )


def _record_stages(attempt: Attempt, decision: Decision, deciding: float, decided: float) -> None:
    """A sampled attempt's filter, score and select spans, and its extender calls."""
    filtered = deciding + decision.filter_seconds
    attempt.record(FILTER, deciding, filtered)
    scored = filtered
    if decision.score_seconds is not None:
        scored = min(filtered + decision.score_seconds, decided)
        attempt.record(SCORE, filtered, scored)
    attempt.record(SELECT, scored, decided)
    for extender, verb, outcome, start, end in decision.result.extender_calls:
        attributes = {EXTENDER: extender, RESULT: outcome}
        attempt.record(extender_span(verb), start, end, attributes)


def _with_part(message: str, part: str | None) -> str:
    """A member's FitError with the ``preemption:`` part its group's preemption gave it."""
    return f"{message} {part}" if part and message else message


def _group_attempt(
    gang: GangBatch, members: int, fit: int, *, placed: bool = False
) -> GroupAttempt:
    return GroupAttempt(
        key=gang.key,
        min_count=gang.min_count,
        bound=gang.bound,
        members=members,
        fit=fit,
        placed=placed,
    )


def _changes_the_store(preemption: PreemptionResult) -> bool:
    """Whether carrying ``preemption`` out writes anything: it evicts (and nominates), or
    clears a nomination (a pod it names is nominated now)."""
    return preemption.node is not None or any(
        p.pod.status.nominated_node_name for p in preemption.nominated_pods_to_clear
    )


@dataclass(frozen=True, slots=True)
class _Preempting:
    """A pod that fit nowhere, the preemption that ends its batch, and the extenders' preempt
    calls it made."""

    decision: Decision
    preemption: PreemptionResult
    calls: tuple[Call, ...] = ()


def _with_preemption(
    decision: Decision, preemption: PreemptionResult, calls: Sequence[Call] = ()
) -> Decision:
    """``decision`` with the preemption's part in its FitError and the extenders' preempt
    ``calls`` after its own: a new Decision around one new result (the one received is a
    value), or ``decision`` itself when neither changes."""
    result = decision.result
    message = result.message
    if message:
        message = fit_error_with_preemption(message, preemption)
    if message == result.message and not calls:
        return decision
    changed = msgspec.structs.replace(
        result, message=message, extender_calls=(*result.extender_calls, *calls)
    )
    return msgspec.structs.replace(decision, result=changed)


_ATTEMPT_METRICS = {
    "scheduled": (metrics.ATTEMPTS_SCHEDULED, metrics.ATTEMPT_DURATION_SCHEDULED),
    "unschedulable": (metrics.ATTEMPTS_UNSCHEDULABLE, metrics.ATTEMPT_DURATION_UNSCHEDULABLE),
    # Kubernetes counts an assume failure as an error.
    "error": (metrics.ATTEMPTS_ERROR, metrics.ATTEMPT_DURATION_ERROR),
    "conflict": (metrics.ATTEMPTS_ERROR, metrics.ATTEMPT_DURATION_ERROR),
}


def _observe_stages(decision: Decision) -> None:
    """The Filter and Score extension points' durations of one attempt."""
    result = decision.result
    scored = decision.score_seconds
    if scored is None:
        # Scoring never ran: the filter stage ended the attempt (no fit, or an error).
        if result.error:
            metrics.FILTER_ERROR.observe(decision.filter_seconds)
        else:
            metrics.FILTER_UNSCHEDULABLE.observe(decision.filter_seconds)
        return
    metrics.FILTER_SUCCESS.observe(decision.filter_seconds)
    (metrics.SCORE_ERROR if result.error else metrics.SCORE_SUCCESS).observe(scored)
