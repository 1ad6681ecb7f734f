"""The node cache actor: the nodes, their bound and assumed pods, and snapshot deltas.

Kubernetes counterpart: pkg/scheduler/internal/cache/cache.go@v1.14 (``schedulerCache`` and
its ``run``/``cleanupExpiredAssumedPods`` goroutine); the state machine is
:class:`~podium.actors.cache.core.SchedulerCache`. Instead of v1.14's 1 s cleanup tick, the
actor waits for its next message at most until the earliest assumed pod's deadline, so a pod
expires exactly at ``FinishBinding time + TTL`` on the trio clock.

Owns: the :class:`~podium.actors.cache.core.SchedulerCache` (nodes, pods, assumptions,
the objects the predicates read).
Mailbox (:data:`~podium.actors.mail.messages.CacheMsg`): :class:`~podium.store.mail.Recovered` and
:class:`~podium.store.mail.Committed` (the store's stream), :class:`SnapshotRequest`,
:class:`Assume`, :class:`FinishBinding`, :class:`Forget`, :class:`CacheStats`.
Emits: replies only (:class:`SnapshotDelta`, :class:`AssumeReply`, :class:`CacheStatsReply`).
Metrics: ``scheduler_cache_size{type}`` (nodes, pods, assumed_pods; also under its older name
``scheduler_scheduler_cache_size``), set after each batch of mail.

An Assume with ``atomic`` (a gang's members) is all or nothing: when any pod is refused, the
ones assumed by the same message are forgotten again before the answer, which says
``conflict`` for them and names the refused pod. With ``units`` (the gangs of one batch), each
unit is all or nothing on its own: the units before a refused one stay assumed, and the ones
after it are not assumed (``conflict``, naming the refused pod: they were decided with its pods
folded in).

Error handling: a :class:`~podium.protocol.errors.CacheStateError` (a wrong transition, from
a message or from the store's stream) is logged and, for Assume, answered with status
``error``; it never stops the actor.
"""

from __future__ import annotations

import logging
from typing import assert_never

import trio

from podium.actors.cache.core import SchedulerCache
from podium.actors.mail.messages import (
    Assume,
    AssumeReply,
    AssumeStatus,
    Assumption,
    CacheMsg,
    CacheStats,
    CacheStatsReply,
    FinishBinding,
    Forget,
    SnapshotRequest,
)
from podium.actors.runtime.mailbox import StepBudget, receive_batch, reply
from podium.protocol import metrics
from podium.protocol.errors import CacheStateError
from podium.store.mail import Committed, Recovered

__all__ = ["COMMIT_STEP_CHANGES", "CacheActor"]

log = logging.getLogger("podium.cache")

COMMIT_STEP_CHANGES = 8
"""A commit's changes applied in one trio step at most (the confirmation of an assumed pod
~18 us, a bound pod it did not assume ~7, a pending pod ~0.5: a bind batch's confirmations
were one step of ~0.6 ms; docs/benchmarks.md, "what the slow attempts held")."""


class CacheActor:
    """The node cache actor.

    Args:
        inbox: its mailbox.
        assumed_pod_ttl_seconds: how long an assumed pod whose binding finished waits for the
            store's confirmation before it expires; 0 means forever.
        ignored_extended_resources: what the extenders manage with ``ignoredByScheduler``:
            not re-checked when a pod is assumed.

    Attributes:
        core: the cache state (read it only from the actor's own task, or in tests).
    """

    def __init__(
        self,
        inbox: trio.MemoryReceiveChannel[CacheMsg],
        *,
        assumed_pod_ttl_seconds: float = 30.0,
        ignored_extended_resources: frozenset[str] = frozenset(),
    ) -> None:
        self._inbox = inbox
        self.core = SchedulerCache(
            assumed_pod_ttl_seconds=assumed_pod_ttl_seconds,
            ignored_extended_resources=ignored_extended_resources,
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the mailbox until every sender has closed it.

        Cancellation: safe at any await; every message is handled whole between two awaits
        (a long commit's pauses are schedule points, not cancel points: StepBudget).
        """
        async with self._inbox:
            task_status.started()
            while True:
                # What else is waiting comes too, without a scheduler pass per message.
                batch = await receive_batch(self._inbox, deadline=self.core.next_deadline())
                if batch is None:
                    return
                # A commit of many bound pods is confirmed a few changes a step, so a decision
                # in flight waits for a few of them, not all (mailbox.py's StepBudget).
                budget = StepBudget(COMMIT_STEP_CHANGES)
                for msg in batch:
                    await self._handle(msg, budget)
                self._expire(trio.current_time())
                core = self.core
                metrics.set_cache_size(
                    nodes=core.node_count, pods=core.pod_count, assumed_pods=core.assumed_count
                )

    async def _handle(self, msg: CacheMsg, budget: StepBudget) -> None:
        match msg:
            case Committed():
                # Every change at the commit's ``now``, in order; no request (a snapshot, an
                # assume) is answered before the last one, as the mailbox is read only between
                # messages.
                now = trio.current_time()
                for change in msg.changes:
                    try:
                        self.core.apply_change(change, now)
                    except CacheStateError as exc:
                        log.error(
                            "store change %d (%s %s %s) does not apply to the cache: %s",
                            change.revision,
                            change.type,
                            change.kind,
                            change.name,
                            exc,
                        )
                    await budget.spend()
            case Recovered():
                self.core.recover(msg.objects)
            case SnapshotRequest():
                reply(msg.reply, self.core.snapshot_since(msg.generation))
            case Assume():
                reply(msg.reply, self._assume(msg))
            case FinishBinding():
                now = trio.current_time()
                for key in msg.keys:
                    try:
                        self.core.finish_binding(key, now)
                    except CacheStateError as exc:
                        log.error("FinishBinding: %s", exc)
            case Forget():
                try:
                    self.core.forget(msg.key)
                except CacheStateError as exc:
                    log.error("Forget: %s", exc)
            case CacheStats():
                core = self.core
                reply(
                    msg.reply,
                    CacheStatsReply(
                        nodes=core.node_count,
                        pods=core.pod_count,
                        assumed=core.assumed_count,
                        generation=core.generation,
                    ),
                )
            case _:
                assert_never(msg)

    def _assume(self, msg: Assume) -> AssumeReply:
        # The nodes only this batch's own earlier pods changed since the decisions' snapshot
        # (with ``folded``, their fit is not checked again: the decisions saw those pods).
        batch: dict[str, int] | None = {} if msg.folded else None
        if not msg.atomic:
            return AssumeReply(
                statuses=[self._assume_one(a, msg.generation, batch) for a in msg.pods]
            )
        units = [len(msg.pods)] if msg.units is None else msg.units
        if sum(units) != len(msg.pods) or any(n < 1 for n in units):
            # A sender's bug: nothing is assumed, and the answer says which field is wrong.
            bad = (
                f"Assume.units {units}: not sizes of at least 1 adding up to its "
                f"{len(msg.pods)} pods; nothing assumed"
            )
            log.error("%s", bad)
            return AssumeReply(statuses=[AssumeStatus(status="error", message=bad)] * len(msg.pods))
        statuses: list[AssumeStatus] = []
        start = 0
        for n in units:
            unit = msg.pods[start : start + n]
            start += n
            answer = self._all_or_nothing(
                unit, [self._assume_one(a, msg.generation, batch) for a in unit]
            )
            statuses += answer
            if answer[0].status != "assumed":
                # The units after it saw its pods folded in: none of them is assumed either.
                cause = next(s for s in answer if s.status != "assumed")
                after = AssumeStatus(
                    status="conflict",
                    message=f"not assumed: decided with a pod group the cache refused "
                    f"({cause.message})",
                )
                statuses += [after] * (len(msg.pods) - start)
                break
        return AssumeReply(statuses=statuses)

    def _all_or_nothing(
        self, pods: list[Assumption], statuses: list[AssumeStatus]
    ) -> list[AssumeStatus]:
        """A gang's Assume: when any pod was refused, the ones assumed are forgotten again
        (nodes and volume assumptions as before the message) and answered ``conflict``, naming
        the first refused pod and why."""
        refused = next(
            ((a, s) for a, s in zip(pods, statuses, strict=True) if s.status != "assumed"), None
        )
        if refused is None:
            return statuses
        pod, why = refused
        rolled_back = AssumeStatus(
            status="conflict",
            message=f"not assumed: the cache refused {pod.pod.key} of its pod group "
            f"({why.message})",
        )
        answer = []
        for a, s in zip(pods, statuses, strict=True):
            if s.status == "assumed":
                self.core.forget(a.pod.key)
                answer.append(rolled_back)
            else:
                answer.append(s)
        return answer

    def _assume_one(
        self, a: Assumption, generation: int, batch: dict[str, int] | None
    ) -> AssumeStatus:
        try:
            conflict = self.core.assume(
                a.pod,
                a.node,
                generation,
                a.volumes,
                a.provisions,
                assumed=a.assumed,
                batch=batch,
            )
        except CacheStateError as exc:
            log.error("Assume: %s", exc)
            return AssumeStatus(status="error", message=str(exc))
        if conflict is not None:
            return AssumeStatus(status="conflict", message=conflict)
        return AssumeStatus(status="assumed")

    def _expire(self, now: float) -> None:
        for key in self.core.cleanup_expired(now):
            log.warning(
                "pod %s expired: assumed, its binding handed to the store, but not confirmed "
                "within %ss; its node no longer counts it",
                key,
                self.core.ttl,
            )
