"""The filter actor: the ordered predicates over a snapshot, from the carried start index.

Kubernetes counterpart: pkg/scheduler/core/generic_scheduler.go@v1.14 ``findNodesThatFit``
(with its ``nextStartNodeIndex`` and ``numFeasibleNodesToFind``), whose workers ran the
predicates over the nodes in parallel. Here the predicates run as vector masks over the node
columns (actors/cycle/generic_scheduler.py), so one task serves; this actor is where sharding
the columns across processes would go if the numbers ever call for it (issue 6 measures).

Owns: the FilterStage (predicates in policy order, percentageOfNodesToScore, the start index).
Mailbox: :class:`~podium.actors.mail.messages.FilterRequest`, :class:`~podium.actors.mail.messages.SetFilters`.
Emits: :class:`~podium.actors.mail.messages.ScoreRequest` to the score actor when some node fits,
else the :class:`~podium.actors.mail.messages.Decision` (FitError or error) straight to the requester.

A run of a batch's pods (a FilterRequest with ``before``: the scheduler's batch, issue 27):
the score actor answers each pod here, this actor folds each placed pod into the lent
snapshot (:func:`~podium.actors.cycle.steps.fold_member`) and filters the next, and the
run's decisions go to the scheduler together, so a pod costs two task steps, not three.

Extenders (actors/cycle/extenders): after the predicates, the policy's extenders with a filter verb
narrow the feasible nodes, each in turn, awaited here (v1.14 ``findNodesThatFit``).

Metrics: the stage's duration travels in the ScoreRequest/Decision (the scheduler records it);
for a random ``PLUGIN_METRICS_SAMPLE_PERCENT`` of attempts (Kubernetes'
``pluginMetricsSamplePercent``) each predicate's time goes to
``scheduler_plugin_execution_duration_seconds``, and the draw is passed on to the score actor.
"""

from __future__ import annotations

import logging
import math
import random
from typing import assert_never

import msgspec
import trio

from podium.actors.cycle.extenders import NO_EXTENDERS, Extenders
from podium.actors.cycle.generic_scheduler import FilterStage
from podium.actors.cycle.steps import decision_for, fold_member
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.mail.messages import (
    Decision,
    FilterMsg,
    FilterRequest,
    ScoreMsg,
    ScoreRequest,
    SetFilters,
)
from podium.actors.runtime.mailbox import reply, send
from podium.protocol import metrics

__all__ = ["FilterActor"]

log = logging.getLogger("podium.filter")

_SAMPLE_RATIO = metrics.PLUGIN_METRICS_SAMPLE_PERCENT / 100


class FilterActor:
    """The filter actor: the brief's "filter pool", as one task.

    One task, not a pool of them: the predicates run as numpy masks over the node columns on
    trio's one thread, so more tasks would add mailbox hops, not speed (sharding the columns
    across processes is where a real pool would go; see the module docstring).

    Args:
        inbox: its mailbox.
        score_actor: the score actor's mailbox (this actor's clone; closed when it stops).
        stage: the predicates to start with.
        rng: the plugin-metrics sampling draw (not the tie-break's source).
        extenders: the policy's extenders; their filter verbs narrow the feasible nodes.
    """

    def __init__(
        self,
        inbox: trio.MemoryReceiveChannel[FilterMsg],
        score_actor: trio.MemorySendChannel[ScoreMsg],
        stage: FilterStage,
        *,
        rng: random.Random | None = None,
        extenders: Extenders = NO_EXTENDERS,
    ) -> None:
        self._extenders = extenders
        self._inbox = inbox
        self._score_actor = score_actor
        self._stage = stage
        self._rng = rng if rng is not None else random.Random()
        # The score actor's answers within a run (one run at a time, so one channel).
        self._decisions_to, self._decisions = trio.open_memory_channel[Decision](math.inf)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with self._inbox, self._score_actor:
            task_status.started()
            async for msg in self._inbox:
                match msg:
                    case FilterRequest():
                        await self._filter(msg)
                    case SetFilters():
                        start = self._stage.next_start_index
                        self._stage = FilterStage(
                            msg.filters,
                            percentage_of_nodes_to_score=msg.percentage_of_nodes_to_score,
                            always_check_all_predicates=msg.always_check_all_predicates,
                        )
                        self._stage.next_start_index = start
                    case _:
                        assert_never(msg)

    async def _filter(self, msg: FilterRequest) -> None:
        if msg.before is not None:
            await self._run(msg)
            return
        decision = await self._filter_one(msg, msg.pod, msg.reply)
        if decision is not None:
            reply(msg.reply, decision)

    async def _run(self, msg: FilterRequest) -> None:
        """A run of a batch's pods (:class:`FilterRequest` ``run``): each pod filtered, scored
        by the score actor (answering here), and, placed, folded into the lent snapshot before
        the next; the decisions answered together when the run stops. Two task steps a pod
        (this actor's and the score actor's) instead of three (the scheduler's too)."""
        before = msg.before
        assert before is not None
        decisions: list[Decision] = []
        for pod in (msg.pod, *msg.run):
            started = trio.current_time()
            if decisions and started >= msg.until:
                break
            decision = await self._filter_one(msg, pod, self._decisions_to)
            if decision is None:
                decision = await decision_for(self._decisions, pod)
            decided = trio.current_time()
            assumed = None
            if decision.node is not None:
                # Its NodeInfo change and its volume decision, as the cache's assume will make
                # them (what the scheduler folds between two pods of a batch decided alone).
                assumed = fold_member(msg.snapshot, before, pod, decision)
            decisions.append(
                msgspec.structs.replace(decision, started=started, decided=decided, assumed=assumed)
            )
            if decision.node is None:
                break
        for decision in decisions:
            reply(msg.reply, decision)

    async def _filter_one(
        self, msg: FilterRequest, pod: PodInfo, to: trio.MemorySendChannel[Decision]
    ) -> Decision | None:
        """Filter ``pod`` as ``msg`` asks: its Decision when no node is feasible (or filtering
        failed); else None, the feasible nodes handed to the score actor, which answers ``to``."""
        # Dry requests (explain, simulate) are not attempts: never sampled.
        sampled = not msg.dry and self._rng.random() < _SAMPLE_RATIO
        started = trio.current_time()
        try:
            result, feasible = self._stage.run(
                pod,
                msg.snapshot,
                explain=msg.explain,
                dry=msg.dry,
                observe=metrics.observe_plugin if sampled else None,
                nominated=msg.nominated,
            )
        except Exception as exc:
            # A plugin bug fails this attempt (result=error), never the daemon.
            log.exception("filtering pod %s failed", pod.key)
            result, feasible = ScheduleResult(message=f"internal error: {exc}", error=True), []
        if feasible and self._extenders:
            result, feasible = await self._extenders.filter(
                pod, msg.snapshot, result, list(feasible), explain=msg.explain
            )
        seconds = trio.current_time() - started
        if feasible:
            await send(
                self._score_actor,
                ScoreRequest(
                    pod=pod,
                    snapshot=msg.snapshot,
                    result=result,
                    feasible=feasible,
                    explain=msg.explain,
                    reply=to,
                    filter_seconds=seconds,
                    sampled=sampled,
                ),
            )
            return None
        return Decision(
            pod=pod,
            node=None,
            result=result,
            generation=msg.snapshot.generation,
            filter_seconds=seconds,
        )
