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

Extenders (actors/cycle/extenders): after the predicates, the policy's extenders with a filter verb
narrow the feasible nodes, each in turn, awaited here (v1.14 ``findNodesThatFit``).

Metrics: the stage's duration travels in the ScoreRequest/Decision (the scheduler records it);
for a random ``PLUGIN_METRICS_SAMPLE_PERCENT`` of attempts (Kubernetes'
``pluginMetricsSamplePercent``) each predicate's time goes to
``scheduler_plugin_execution_duration_seconds``, and the draw is passed on to the score actor.
"""

from __future__ import annotations

import logging
import random
from typing import assert_never

import trio

from podium.actors.cycle.extenders import NO_EXTENDERS, Extenders
from podium.actors.cycle.generic_scheduler import FilterStage
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
        # Dry requests (explain, simulate) are not attempts: never sampled.
        sampled = not msg.dry and self._rng.random() < _SAMPLE_RATIO
        started = trio.current_time()
        try:
            result, feasible = self._stage.run(
                msg.pod,
                msg.snapshot,
                explain=msg.explain,
                dry=msg.dry,
                observe=metrics.observe_plugin if sampled else None,
                nominated=msg.nominated,
            )
        except Exception as exc:
            # A plugin bug fails this attempt (result=error), never the daemon.
            log.exception("filtering pod %s failed", msg.pod.key)
            result, feasible = ScheduleResult(message=f"internal error: {exc}", error=True), []
        if feasible and self._extenders:
            result, feasible = await self._extenders.filter(
                msg.pod, msg.snapshot, result, list(feasible), explain=msg.explain
            )
        seconds = trio.current_time() - started
        if feasible:
            await send(
                self._score_actor,
                ScoreRequest(
                    pod=msg.pod,
                    snapshot=msg.snapshot,
                    result=result,
                    feasible=feasible,
                    explain=msg.explain,
                    reply=msg.reply,
                    filter_seconds=seconds,
                    sampled=sampled,
                ),
            )
        else:
            reply(
                msg.reply,
                Decision(
                    pod=msg.pod,
                    node=None,
                    result=result,
                    generation=msg.snapshot.generation,
                    filter_seconds=seconds,
                ),
            )
