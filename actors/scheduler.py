"""The scheduler: one scheduling cycle after another, driving the other actors.

Kubernetes counterpart: pkg/scheduler/scheduler.go@v1.14 ``scheduleOne``: pop the next pod,
bring the snapshot up to date (``UpdateNodeInfoSnapshot``), filter and score it, assume it on
the chosen node in the cache, and hand the bind to the binder without waiting for it; on
failure record why (the pod's PodScheduled condition) and give the pod back to the queue.

Each cycle costs four mailbox round trips (pop, snapshot, decide, assume); the decide trip goes
filter pool -> scoring workers -> back here, so the two stages need no reply in between.

Owns: the cycle's snapshot (refreshed from the cache's deltas, lent to the filter pool and the
scoring workers for one decision at a time, under a lock shared with explain requests) and the
attempt counters.
Mailbox (control): :class:`~podium.actors.mail.BeginScheduling`,
:class:`~podium.actors.mail.ExplainPod`, :class:`~podium.actors.mail.ReloadPlugins`,
:class:`~podium.actors.mail.SchedulerStats`.
Emits: Pop and Requeue (queue); SnapshotRequest and Assume (cache); FilterRequest (filter pool);
SetFilters/SetScorers (filter pool, scoring workers); BindRequest (binder);
RecordUnschedulable (store); :class:`~podium.actors.mail.Attempted` (an observer, if any).

Preemption runs v1.14 ``Preempt`` with the extenders' preempt verbs narrowing the candidates
(actors/extenders), and every extender call of an attempt becomes a span of its trace.

Metrics (protocol/metrics.py): ``scheduler_schedule_attempts_total`` and
``scheduler_scheduling_attempt_duration_seconds`` by result (pop to hand-off; a conflict, an
assume the cache refused, counts as error as Kubernetes counts an assume failure), and
``scheduler_framework_extension_point_duration_seconds`` for Filter and Score (measured by
the filter pool and the scoring workers, carried in the Decision) and Reserve (the assume
round trip).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, assert_never

import trio

from podium.actors.core.cache_core import apply_delta
from podium.actors.core.explain import hints
from podium.actors.core.preemption import (
    NominatedPods,
    PredicateFitCheck,
    PreemptionResult,
    fit_error_with_preemption,
)
from podium.actors.extenders import NO_EXTENDERS, Extenders
from podium.actors.framework.interface import FilterPlugin
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.mail import (
    Assume,
    AssumeReply,
    Attempted,
    BeginScheduling,
    BindDone,
    BinderMsg,
    BindRequest,
    CacheMsg,
    Decision,
    Explained,
    ExplainPod,
    FilterMsg,
    FilterRequest,
    Pop,
    Popped,
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
from podium.actors.tracing import DISABLED, Attempt, Tracing
from podium.protocol import metrics
from podium.protocol.errors import PodiumError
from podium.protocol.extender import ExtenderConfig
from podium.store.mail import (
    Evict,
    EvictResult,
    RecordUnschedulable,
    StoreFailure,
    StoreMsg,
    Victim,
)
from podium.store.mailbox import ask, reply, send

__all__ = ["PluginSet", "Scheduler"]

log = logging.getLogger("podium.scheduler")


@dataclass(frozen=True, slots=True)
class PluginSet:
    """A policy made ready to send: what the filter pool and the scoring workers will use."""

    filters: SetFilters
    scorers: SetScorers
    predicates: list[str]
    priorities: list[tuple[str, int]]
    warnings: list[str]
    extenders: tuple[ExtenderConfig, ...] = ()


class Scheduler:
    """The scheduling-cycle actor.

    Args:
        control: its mailbox.
        queue, cache, filter_pool, scorers, binder, store: the mailboxes it sends to (its own
            clones; closed when it stops).
        reports: where each finished attempt is reported (None: nowhere).
        load_plugins: reads the policy again for ReloadPlugins (raises PodiumError).
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
        extenders: the policy's extenders (their preempt verbs narrow the candidates; their
            calls in the filter pool and scoring workers get spans here).
    """

    def __init__(
        self,
        control: trio.MemoryReceiveChannel[SchedulerMsg],
        *,
        queue: trio.MemorySendChannel[QueueMsg],
        cache: trio.MemorySendChannel[CacheMsg],
        filter_pool: trio.MemorySendChannel[FilterMsg],
        scorers: trio.MemorySendChannel[ScoreMsg],
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
        extenders: Extenders = NO_EXTENDERS,
    ) -> None:
        self._extenders = extenders
        self._control = control
        self._queue = queue
        self._cache = cache
        self._filter_pool = filter_pool
        self._scorers = scorers
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
        self._snapshot: Snapshot | None = None
        self._lock = trio.Lock()
        self._begin = trio.Event()
        self._scope = trio.CancelScope()
        self._counts = {"scheduled": 0, "unschedulable": 0, "error": 0, "conflict": 0}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with (
            self._queue,
            self._cache,
            self._filter_pool,
            self._scorers,
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
            while await self._schedule_one():
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
                failed = await self._failures(msg.pod, snapshot, decision)
                fits = PredicateFitCheck(self._filters)
                would = await self._extenders.preempt(msg.pod, snapshot, failed, fits)
        preempted = [v.key for v in would.victims] if would is not None else []
        if would is not None and would.node is None and decision.result.message:
            message = fit_error_with_preemption(decision.result.message, would)
            decision.result.message = message
        return Explained(decision=decision, hints=found, preempted=preempted)

    async def _reload(self) -> Reloaded:
        if self._load_plugins is None:
            return Reloaded(predicates=[], priorities=[], error="no policy loader is configured")
        try:
            plugins = self._load_plugins()
        except PodiumError as exc:
            return Reloaded(predicates=[], priorities=[], error=str(exc))
        async with self._lock:
            await send(self._filter_pool, plugins.filters)
            await send(self._scorers, plugins.scorers)
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
        return await ask(
            self._filter_pool,
            lambda r: FilterRequest(
                pod=pod, snapshot=snapshot, dry=dry, explain=explain, nominated=nominated, reply=r
            ),
        )

    async def _failures(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        decision: Decision,
        nominated: NominatedPods | None = None,
    ) -> dict[str, tuple[str, ...]]:
        """Every node's reasons for a pod that fit nowhere (what preemption starts from):
        the attempt's own when it kept them, else a dry re-run with every node's verdict."""
        if decision.result.failed:
            return dict(decision.result.failed)
        again = await self._decide(pod, snapshot, dry=True, explain=True, nominated=nominated)
        return dict(again.result.failed)

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

    async def _schedule_one(self) -> bool:
        """One cycle; False when the queue is idle and the scheduler should stop."""
        popped: Popped | QueueIdle = await ask(
            self._queue, lambda r: Pop(reply=r, idle_ok=self._exit_when_idle)
        )
        if isinstance(popped, QueueIdle):
            return False
        started = trio.current_time()
        with self._tracing.attempt(
            popped.pod.key,
            links=popped.links,
            arrived_at=popped.arrived_at,
            popped_at=started,
            attempts=popped.attempts,
        ) as attempt:
            await self._attempt(popped, started, attempt)
        return True

    async def _attempt(self, popped: Popped, started: float, attempt: Attempt) -> None:
        pod = popped.pod
        preemption: PreemptionResult | None = None
        async with self._lock:
            snapshot = await self._refresh()
            deciding = trio.current_time()
            decision = await self._decide(
                pod, snapshot, dry=False, explain=self._explain_attempts, nominated=popped.nominated
            )
            decided = trio.current_time()
            if decision.node is None and not decision.result.error and self._preemption:
                failed = await self._failures(pod, snapshot, decision, popped.nominated)
                preemption = await self._extenders.preempt(
                    pod,
                    snapshot,
                    failed,
                    PredicateFitCheck(self._filters, popped.nominated),
                    nominated=popped.nominated,
                    calls=decision.result.extender_calls,
                )
        result = decision.result
        preempted: list[str] = []
        if preemption is not None:
            preempted = await self._carry_out(pod, preemption)
            if preemption.node is None and result.message:
                result.message = fit_error_with_preemption(result.message, preemption)
        _observe_stages(decision)
        if attempt.sampled:
            filtered = deciding + decision.filter_seconds
            attempt.record("filter", deciding, filtered)
            scored = filtered
            if decision.score_seconds is not None:
                scored = min(filtered + decision.score_seconds, decided)
                attempt.record("score", filtered, scored)
            attempt.record("select", scored, decided)
            for extender, verb, outcome, start, end in result.extender_calls:
                attributes = {"podium.extender": extender, "podium.result": outcome}
                attempt.record(f"extender {verb}", start, end, attributes)
        if decision.node is None:
            why: Literal["error", "unschedulable"] = "error" if result.error else "unschedulable"
            if result.error:
                log.warning("scheduling pod %s failed: %s", pod.key, result.message)
            await send(
                self._queue,
                Requeue(
                    pod=pod,
                    cycle=popped.cycle,
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
            attempt.outcome(
                why,
                nodes_examined=result.evaluated,
                nodes_feasible=result.feasible,
                message=result.message or "",
            )
            await self._report(popped, why, None, decision, started, preempted)
            return
        reserving = trio.current_time()
        with attempt.phase("assume"):
            assumed = await self._assume(decision)
        reserve = metrics.RESERVE_SUCCESS if assumed.status == "assumed" else metrics.RESERVE_ERROR
        reserve.observe(trio.current_time() - reserving)
        if assumed.status != "assumed":
            status: Literal["conflict", "error"] = (
                "conflict" if assumed.status == "conflict" else "error"
            )
            if status == "error":
                log.error(
                    "assuming pod %s on %s failed: %s", pod.key, decision.node, assumed.message
                )
            await send(self._queue, Requeue(pod=pod, cycle=popped.cycle, why=status))
            attempt.outcome(
                status,
                node=decision.node,
                nodes_examined=result.evaluated,
                nodes_feasible=result.feasible,
                message=assumed.message,
            )
            await self._report(popped, status, None, decision, started)
            return
        attempt.outcome(
            "scheduled",
            node=decision.node,
            nodes_examined=result.evaluated,
            nodes_feasible=result.feasible,
        )
        done_to, done = trio.open_memory_channel[BindDone](1)
        await send(
            self._binder,
            BindRequest(
                pod=pod,
                node=decision.node,
                cycle=popped.cycle,
                volumes=decision.volumes,
                provisions=decision.provisions,
                done=done_to if self._sync_binds else None,
                attempts=popped.attempts,
                arrived_at=popped.arrived_at,
                trace=self._tracing.carrier_of(attempt),
            ),
        )
        await self._report(popped, "scheduled", decision.node, decision, started)
        if self._sync_binds:
            await done.receive()

    async def _assume(self, decision: Decision) -> AssumeReply:
        node = decision.node
        assert node is not None
        return await ask(
            self._cache,
            lambda r: Assume(
                pod=decision.pod,
                node=node,
                generation=decision.generation,
                volumes=decision.volumes,
                provisions=decision.provisions,
                reply=r,
            ),
        )

    async def _report(
        self,
        popped: Popped,
        status: Literal["scheduled", "unschedulable", "error", "conflict"],
        node: str | None,
        decision: Decision,
        started: float,
        preempted: list[str] | None = None,
    ) -> None:
        self._counts[status] += 1
        finished = trio.current_time()
        counter, duration = _ATTEMPT_METRICS[status]
        counter.inc()
        duration.observe(finished - started)
        if self._reports is None:
            return
        await send(
            self._reports,
            Attempted(
                pod=popped.pod,
                status=status,
                node=node,
                result=decision.result,
                attempts=popped.attempts,
                preempted=preempted or [],
            ),
        )


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
