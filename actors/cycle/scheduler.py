"""The scheduler: one scheduling cycle after another, in batches, driving the other actors.

Kubernetes counterpart: pkg/scheduler/scheduler.go@v1.14 ``scheduleOne``: pop the next pod,
bring the snapshot up to date (``UpdateNodeInfoSnapshot``), filter and score it, assume it on
the chosen node in the cache, and hand the bind to the binder without waiting for it; on
failure record why (the pod's PodScheduled condition) and give the pod back to the queue.

Podium runs those cycles in batches (the only path; a batch of one is one cycle): one Pop
answers up to ``batch_max_pods`` pods in the order successive pops would give (fewer when
the time a decision has taken in recent batches says the batch could not decide that many
within ``batch_max_seconds``: :class:`~podium.actors.cycle.steps.PopSize`); one snapshot
request brings the snapshot up to date; the pods are then decided one after another, each
decision folded into the snapshot as the cache's assume would change it (its NodeInfo change,
:func:`~podium.actors.framework.snapshot.fold_assumed`, and its volume decision in the
snapshot's objects: :func:`~podium.actors.cycle.steps.fold_member`), so the next pod sees
what it would have seen one pod at a time. They go as runs: one FilterRequest carries the
batch's next pods, the filter actor asks the score actor for each and folds each placed pod
in before filtering the next, and answers the run's decisions together when a pod is not
placed, the time bound passes or the pods seeing the same nominations end (a lone pod makes
the plain trip: filter actor -> score actor -> back here, folded in here); then one Assume
for the batch, one BindBatch to the binder. Which pods may share a batch is :mod:`podium.actors.queue.batching`'s rule (the queue applies it); a
preemption that evicts pods or clears a nomination ends the batch: carried out when its pod
is the batch's first, otherwise that pod goes back to the queue with the rest (GiveBack, not
counted as attempts) and comes first in the next batch, after the pods decided before it are
bound (the queue's cycle numbers then compare as one pod at a time). The pods not yet decided
when ``batch_max_seconds`` has passed go back too.

Gangs (issue 24: a Popped batch with ``groups``) are decided by
:class:`~podium.actors.cycle.gang_cycle.GangCycle`, which the scheduler is: all or nothing,
each gang of a batch decided before the next, the ones that fit assumed and bound together
(that module says how).

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, assert_never

import msgspec
import trio

from podium.actors.cycle.explain import hints
from podium.actors.cycle.extenders import NO_EXTENDERS, Call, Extenders
from podium.actors.cycle.gang_cycle import GangCycle
from podium.actors.cycle.steps import (
    Outcome,
    PopSize,
    decision_for,
    fold_member,
    observe_stages,
    record_stages,
    record_unschedulable,
)
from podium.actors.framework.interface import FilterPlugin
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.framework.preemption import (
    PredicateFitCheck,
    PreemptionResult,
    fit_error_with_preemption,
)
from podium.actors.framework.snapshot import ClusterObjects, Snapshot, apply_delta
from podium.actors.mail.messages import (
    Assume,
    AssumeReply,
    AssumeStatus,
    Attempted,
    BeginScheduling,
    BindBatch,
    BindDone,
    BinderMsg,
    BindRequest,
    CacheMsg,
    Decision,
    Explained,
    ExplainGroup,
    ExplainPod,
    FilterMsg,
    FilterRequest,
    GiveBack,
    GroupAttempt,
    Pop,
    Popped,
    PoppedBatch,
    QueueIdle,
    QueueMsg,
    Reloaded,
    ReloadPlugins,
    Requeue,
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
    Attempt,
    Tracing,
)
from podium.protocol import metrics
from podium.protocol.config import DEFAULT_BATCH_MAX_PODS, DEFAULT_BATCH_MAX_SECONDS
from podium.protocol.errors import PodiumError
from podium.protocol.extender import ExtenderConfig
from podium.store.mail import (
    EvictResult,
    StoreFailure,
    StoreMsg,
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


class Scheduler(GangCycle):
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
        batch_max_pods: the most pods one batch takes from the queue (1: one at a time); it
            pops fewer when recent batches say it could not decide that many within
            ``batch_max_seconds``.
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
        self._pop_size = PopSize(batch_max_pods, batch_max_seconds)
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
        run: tuple[Sequence[PodInfo], float, dict[str, NodeInfo]] | None = None,
    ) -> Decision:
        """``pod``'s decision; with ``run`` (the pods after it, the time bound, the batch's
        NodeInfos before their first fold), the first of the run's (FilterRequest ``run``),
        the others following in the channel."""
        pods, until, before = run if run is not None else ((), math.inf, None)
        await send(
            self._filter_actor,
            FilterRequest(
                pod=pod,
                snapshot=snapshot,
                dry=dry,
                explain=explain,
                nominated=nominated,
                reply=self._decisions_to,
                run=pods,
                until=until,
                before=before,
            ),
        )
        return await decision_for(self._decisions, pod)

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
        return await self._evict_group([(pod, node, victims)])  # a group of one

    async def _schedule_batch(self) -> bool:
        """One batch; False when the queue is idle and the scheduler should stop."""
        popped: PoppedBatch | QueueIdle = await ask(
            self._queue,
            lambda r: Pop(reply=r, idle_ok=self._exit_when_idle, max_pods=self._pop_size.next()),
        )
        if isinstance(popped, QueueIdle):
            return False
        with contextlib.ExitStack() as traces:
            if popped.groups:
                await self._gangs(popped.pods, popped.groups, trio.current_time(), traces)
            else:
                await self._batch(popped.pods, trio.current_time(), traces)
        return True

    async def _batch(
        self, pods: list[Popped], popped_at: float, traces: contextlib.ExitStack
    ) -> None:
        """Decide ``pods`` one after another on one snapshot, each decision folded in before
        the next (the assume's NodeInfo change and volume decision), then assume and bind the
        placed ones in one message each. Pods not decided when the time bound passes go back
        to the queue.
        """
        deadline = popped_at + self._batch_max_seconds
        outcomes: list[Outcome] = []
        # Node -> its NodeInfo before the batch's first fold on it (put back if refused).
        before: dict[str, NodeInfo] = {}
        async with self._lock:
            snapshot = await self._refresh()
            # The objects before the batch's volume decisions (put back if one is refused).
            objects = snapshot.objects
            refreshed = trio.current_time()
            measured = True  # a batch that ends on a preemption does not size the next pop
            i = 0
            while i < len(pods):
                if i and trio.current_time() >= deadline:
                    await self._give_back(pods[i:])
                    break
                # The pods from i on, decided as one run in the filter actor (each placement
                # folded in before the next) until one is not placed or the bound passes.
                decided = await self._decide_run(pods[i:], snapshot, before, deadline)
                ended = False
                for decision, started, finished in decided:
                    popped = pods[i]
                    attempt = traces.enter_context(
                        self._tracing.attempt(
                            popped.pod.key,
                            links=popped.links,
                            arrived_at=popped.arrived_at,
                            popped_at=popped_at if i == 0 else started,
                            attempts=popped.attempts,
                        )
                    )
                    outcome = await self._attempt(
                        popped, snapshot, started, attempt, decision, finished
                    )
                    i += 1
                    if isinstance(outcome, Outcome):
                        observe_stages(outcome.decision)
                        if outcome.status is None:
                            # Its NodeInfo change and its volume decision, as the cache's
                            # assume will make them (the filter actor folded a run's in);
                            # one PodInfo for the fold and the assume.
                            outcome.assumed = decision.assumed
                            if outcome.assumed is None:
                                outcome.assumed = fold_member(
                                    snapshot, before, popped.pod, outcome.decision
                                )
                        outcomes.append(outcome)
                        continue
                    # Preemption evicts pods or clears nominations: the batch ends. A
                    # preemptor that is not the batch's first pod goes back with the rest and
                    # comes first in the next batch, after the pods before it are bound, as
                    # one pod at a time it would have been popped (its cycle after their binds).
                    measured = False
                    ended = True
                    if i > 1:
                        attempt.outcome("given_back")
                        await self._give_back(pods[i - 1 :])
                        break
                    observe_stages(outcome.decision)
                    outcomes.append(await self._preempted(popped, outcome, attempt, started))
                    await self._give_back(pods[1:])
                    break
                if ended:
                    break
            if measured:
                self._pop_size.observe(
                    refreshed - popped_at, trio.current_time() - refreshed, len(outcomes)
                )
            # The pop and the snapshot's refresh served every pod decided: each attempt
            # counts its share (as the assume's round trip below).
            for o in outcomes:
                o.started -= (refreshed - popped_at) / len(outcomes)
            await self._commit(outcomes, snapshot, before, objects)

    async def _give_back(self, pods: list[Popped]) -> None:
        if pods:
            await send(self._queue, GiveBack(keys=[p.pod.key for p in pods]))

    async def _decide_run(
        self,
        pods: Sequence[Popped],
        snapshot: Snapshot,
        before: dict[str, NodeInfo],
        until: float,
    ) -> list[tuple[Decision, float, float]]:
        """Decide ``pods[0]`` and, as one run in the filter actor (FilterRequest ``run``), the
        pods after it that see the same nominations, each placement folded in before the next,
        until one is not placed or a pod would start at or after ``until``. Returns each pod's
        decision, when its decision started and when it ended, in order. A lone pod takes the
        plain trip (the scheduler folds it in)."""
        first = pods[0]
        run: list[PodInfo] = []
        for popped in pods[1:]:
            if popped.nominated is not first.nominated:
                break
            run.append(popped.pod)
        deciding = trio.current_time()
        # The extenders' filter and prioritize verbs (actors/cycle/extenders) run in the filter
        # actor and the score actor, inside this round trip: once per pod of the run.
        decision = await self._decide(
            first.pod,
            snapshot,
            dry=False,
            explain=self._explain_attempts,
            nominated=first.nominated,
            run=(run, until, before) if run else None,
        )
        if not run:
            return [(decision, deciding, trio.current_time())]
        decisions = [(decision, decision.started, decision.decided)]
        # The run's other decisions came in the same breath (answered together).
        for _ in run:
            try:
                decision = self._decisions.receive_nowait()
            except trio.WouldBlock:
                break
            decisions.append((decision, decision.started, decision.decided))
        return decisions

    async def _attempt(
        self,
        popped: Popped,
        snapshot: Snapshot,
        started: float,
        attempt: Attempt,
        decision: Decision,
        decided: float,
    ) -> Outcome | _Preempting:
        """One pod of the batch, filtered and scored (``decision``, from ``started`` to
        ``decided``).

        Returns:
            Its outcome: placed (``status`` None: the caller folds it in, unless its run did,
            and assumes it), or unschedulable or error (already requeued here); or the
            preemption to carry out when it evicts pods or clears nominations.
        """
        pod = popped.pod
        if attempt.sampled:
            record_stages(attempt, decision, started, decided)
        if decision.node is not None:
            return Outcome(popped, decision, attempt, started, finished=decided)
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
        return await self._unschedulable(Outcome(popped, decision, attempt, started))

    async def _preempted(
        self, popped: Popped, preempting: _Preempting, attempt: Attempt, started: float
    ) -> Outcome:
        preemption = preempting.preemption
        preempted = await self._carry_out(popped.pod, preemption)
        decision = _with_preemption(preempting.decision, preemption, preempting.calls)
        return await self._unschedulable(
            Outcome(popped, decision, attempt, started, preempted=preempted)
        )

    async def _unschedulable(self, outcome: Outcome) -> Outcome:
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
        await record_unschedulable(self._store, outcome, why, result.message or "")
        outcome.status = why
        outcome.finished = trio.current_time()
        return outcome

    async def _commit(
        self,
        outcomes: list[Outcome],
        snapshot: Snapshot,
        before: dict[str, NodeInfo],
        objects: ClusterObjects,
    ) -> None:
        """Assume the placed pods (one message), requeue the ones the cache refused, hand the
        rest to the binder (one message), and report every outcome in decision order; with
        ``sync_binds``, wait for the binds to commit. ``objects``: the snapshot's objects
        before the batch's volume decisions were folded in."""
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
                elif o.decision.volumes or o.decision.provisions:
                    # Its volume decision is not the cache's either: the objects as before
                    # the batch (the next refresh brings the cache's whenever another pod's
                    # volume decision was assumed, as the cache's objects changed then).
                    snapshot.objects = objects
        if binds:
            await send(self._binder, BindBatch(requests=binds))
        for o in outcomes:
            await self._report(o)
        if self._sync_binds:
            for _ in binds:
                await done.receive()

    async def _reserved(
        self,
        o: Outcome,
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

    async def _report(self, o: Outcome, *, group: GroupAttempt | None = None) -> None:
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


_ATTEMPT_METRICS = {
    "scheduled": (metrics.ATTEMPTS_SCHEDULED, metrics.ATTEMPT_DURATION_SCHEDULED),
    "unschedulable": (metrics.ATTEMPTS_UNSCHEDULABLE, metrics.ATTEMPT_DURATION_UNSCHEDULABLE),
    # Kubernetes counts an assume failure as an error.
    "error": (metrics.ATTEMPTS_ERROR, metrics.ATTEMPT_DURATION_ERROR),
    "conflict": (metrics.ATTEMPTS_ERROR, metrics.ATTEMPT_DURATION_ERROR),
}


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
