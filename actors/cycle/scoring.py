"""The score actor (the brief's "scoring workers"): map and reduce of the priorities over the feasible nodes, weighted sum,
host selection, and the chosen node's volume decision.

Kubernetes counterpart: pkg/scheduler/core/generic_scheduler.go@v1.14 ``PrioritizeNodes`` and
``selectHost`` (with the later random tie-break, docs/differences.md), and the volume binder's
``FindPodVolumes`` for the chosen node, whose bindings the scheduler assumes with the pod
(``AssumePodVolumes``, seed 003).

Owns: the ScoreStage (priorities with weights, the tie-break's random source) and the volume
binder it decides the chosen node's volumes with (built with the plugin set, handed in).
Mailbox: :class:`~podium.actors.mail.messages.ScoreRequest`, :class:`~podium.actors.mail.messages.SetScorers`.
Emits: :class:`~podium.actors.mail.messages.Decision` on the request's reply channel.

Extenders (actors/cycle/extenders): with more than one feasible node, the extenders' prioritize
verbs are called at once and awaited here; each score times its weight joins the totals.

Metrics: the stage's duration travels in the Decision (the scheduler records it); for attempts
the filter actor sampled, each priority's time goes to
``scheduler_plugin_execution_duration_seconds``.
"""

from __future__ import annotations

import logging
from typing import assert_never

import msgspec
import trio

from podium.actors.cycle.extenders import NO_EXTENDERS, Call, Extenders
from podium.actors.cycle.generic_scheduler import ScoreStage
from podium.actors.framework.interface import SKIP, PredicateError
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.actors.mail.messages import Decision, ScoreMsg, ScoreRequest, SetScorers
from podium.actors.plugins.volume_binding import VolumeBinding
from podium.actors.runtime.mailbox import reply
from podium.protocol import metrics

__all__ = ["ScoreActor", "volume_decision"]

log = logging.getLogger("podium.score")


def volume_decision(
    volumes: VolumeBinding, pod: PodInfo, snapshot: Snapshot, node: str
) -> tuple[dict[str, str], list[str]]:
    """The claims of ``pod`` to bind on ``node``: claim key -> volume, and claims to provision.

    Args:
        volumes: the volume binder (CheckVolumeBinding's plugin, whether or not the policy
            runs that predicate: every placed pod's claims are decided).
        pod: the pod placed on ``node``.
        snapshot: the snapshot it was decided on.
        node: the chosen node.

    Raises:
        PredicateError: the volume binder cannot decide (the claims changed under the pod).
    """
    meta = volumes.pre_filter(pod, snapshot)
    info = snapshot.get(node)
    if meta is SKIP or info is None:
        return {}, []
    if meta.error is None and not meta.unbound:
        # v1.14 AssumePodVolumes: every claim is bound (arePodVolumesBound looks at the claims
        # only), so nothing is bound or provisioned and the volumes are not looked up. A bound
        # claim whose volume is missing fails only CheckVolumeBinding, when the policy runs it.
        return {}, []
    found = volumes.find_pod_volumes(pod, meta, info)
    return dict(found.bindings), list(found.provisions)


class ScoreActor:
    """The score actor: the brief's "scoring workers", as one task.

    One task, not a pool of workers: the priorities run over numpy columns on trio's one
    thread, so more tasks would add mailbox hops, not speed.

    Args:
        inbox: its mailbox.
        stage: the priorities to start with.
        volumes: the volume binder that decides the chosen node's claims (built where the
            plugin set is, :func:`~podium.actors.supervisor.supervisor.load_plugin_set`).
        extenders: the policy's extenders; their prioritize verbs add to the totals.
    """

    def __init__(
        self,
        inbox: trio.MemoryReceiveChannel[ScoreMsg],
        stage: ScoreStage,
        volumes: VolumeBinding,
        extenders: Extenders = NO_EXTENDERS,
    ) -> None:
        self._inbox = inbox
        self._stage = stage
        self._volumes = volumes
        self._extenders = extenders

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with self._inbox:
            task_status.started()
            async for msg in self._inbox:
                match msg:
                    case ScoreRequest():
                        reply(msg.reply, await self._decide(msg))
                    case SetScorers():
                        self._stage = ScoreStage(msg.scorers, rng=self._stage.rng)
                    case _:
                        assert_never(msg)

    async def _decide(self, msg: ScoreRequest) -> Decision:
        started = trio.current_time()
        try:
            node, result, volumes, provisions = await self._score(msg)
        except Exception as exc:
            # A plugin bug fails this attempt (result=error), never the daemon.
            log.exception("scoring pod %s failed", msg.pod.key)
            node, volumes, provisions = None, {}, []
            result = ScheduleResult(message=f"internal error: {exc}", error=True)
        return Decision(
            pod=msg.pod,
            node=node,
            result=result,
            generation=msg.snapshot.generation,
            volumes=volumes,
            provisions=provisions,
            filter_seconds=msg.filter_seconds,
            score_seconds=trio.current_time() - started,
        )

    async def _score(
        self, msg: ScoreRequest
    ) -> tuple[str | None, ScheduleResult, dict[str, str], list[str]]:
        extender_scores = None
        calls: list[Call] = []
        if self._extenders and (len(msg.feasible) > 1 or msg.explain):
            # v1.14 Schedule: one feasible node is taken without prioritizing.
            extender_scores = await self._extenders.prioritize(
                msg.pod, msg.snapshot, msg.feasible, calls
            )
        result = self._stage.run(
            msg.pod,
            msg.snapshot,
            msg.result,
            msg.feasible,
            explain=msg.explain,
            observe=metrics.observe_plugin if msg.sampled else None,
            extender_scores=extender_scores,
        )
        if calls and not result.error:
            # The prioritize calls join the filter's (an error result starts afresh).
            result = msgspec.structs.replace(
                result, extender_calls=(*result.extender_calls, *calls)
            )
        if result.node is None or not msg.pod.pod.spec.volumes:
            return result.node, result, {}, []
        try:
            volumes, provisions = volume_decision(self._volumes, msg.pod, msg.snapshot, result.node)
        except PredicateError as exc:
            return None, ScheduleResult(message=str(exc), error=True), {}, []
        return result.node, result, volumes, provisions
