"""The binder: asynchronous binds, group-committed by the store, volumes first.

Kubernetes counterpart: pkg/scheduler/scheduler.go@v1.14 ``bind`` and ``bindVolumes`` (run in
their own goroutine so the next pod is scheduled while earlier binds complete), with the
volume binder's ``BindPodVolumes`` (seed 003): a pod's claims are bound to the volumes chosen
for its node in the same store transaction as the pod, so either both are durable or neither.

Every scheduling batch waiting in the mailbox (:class:`~podium.actors.mail.messages.BindBatch`, the
scheduler's assumed pods of one batch) goes to the store as one :class:`BindPods` batch, with
one FinishBinding for all of them; while the store commits it, new batches gather for the
next one. A pod whose binding the store
refuses (pod deleted or re-created, already bound, node gone, volume taken) is forgotten by
the cache, with its volume assumptions, and requeued with backoff, as v1.14's error path does.

A gang's members carry their group (``BindRequest.group``) into their bindings
(``Binding.group``): the store commits a group's bindings of one BindPods in one transaction or
refuses them all. When it refuses a group's members, each is forgotten by the cache and the
group is requeued once, as a unit (:class:`~podium.actors.mail.messages.RequeueGroup`), never
member by member.

Owns: the batch in flight.
Mailbox: :class:`~podium.actors.mail.messages.BindBatch` (of :class:`~podium.actors.mail.messages.BindRequest`).
Emits: :class:`~podium.store.mail.BindPods` (store); :class:`~podium.actors.mail.messages.FinishBinding`
and :class:`~podium.actors.mail.messages.Forget` (cache); :class:`~podium.actors.mail.messages.Requeue`
and :class:`~podium.actors.mail.messages.RequeueGroup` (queue);
:class:`~podium.actors.mail.messages.BindDone` to a requester that asked.

A binding extender (actors/cycle/extenders; v1.14 ``getBinderFunc``) binds the pods it is
interested in first, concurrently; only those it bound go on to the store, the others are
forgotten and requeued as a refused bind is.

Metrics: ``scheduler_framework_extension_point_duration_seconds{extension_point="Bind"}`` (the
store round trip, per pod, Success or Error) and, for each pod whose bind committed,
``scheduler_pod_scheduling_attempts`` and ``scheduler_pod_scheduling_sli_duration_seconds``
(from its first enqueue), as Kubernetes records them at the end of a successful binding cycle.
"""

from __future__ import annotations

import logging

import trio

from podium.actors.cycle.extenders import NO_EXTENDERS, Extenders
from podium.actors.mail.messages import (
    BindDone,
    BinderMsg,
    BindRequest,
    CacheMsg,
    FinishBinding,
    Forget,
    QueueMsg,
    Requeue,
    RequeueGroup,
)
from podium.actors.runtime.mailbox import ask, receive_batch, reply, send
from podium.actors.runtime.tracing import (
    BIND,
    COMMIT,
    DISABLED,
    EXTENDER,
    NODE,
    RESULT,
    Tracing,
    extender_span,
)
from podium.protocol import metrics
from podium.store.mail import Binding, BindPods, BindResult, StoreFailure, StoreMsg

__all__ = ["Binder"]

log = logging.getLogger("podium.binder")


class Binder:
    """The binder actor.

    Args:
        inbox: its mailbox.
        store, cache, queue: the mailboxes it sends to (its own clones; closed when it stops).
        tracing: records ``bind`` and ``commit`` under each sampled attempt's trace.
        extenders: the policy's extenders; one with a bind verb binds the pods it is
            interested in, and only the pods it bound go on to the store.
    """

    def __init__(
        self,
        inbox: trio.MemoryReceiveChannel[BinderMsg],
        *,
        store: trio.MemorySendChannel[StoreMsg],
        cache: trio.MemorySendChannel[CacheMsg],
        queue: trio.MemorySendChannel[QueueMsg],
        tracing: Tracing = DISABLED,
        extenders: Extenders = NO_EXTENDERS,
    ) -> None:
        self._tracing = tracing
        self._extenders = extenders
        self._inbox = inbox
        self._store = store
        self._cache = cache
        self._queue = queue

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with self._inbox, self._store, self._cache, self._queue:
            task_status.started()
            while (batch := await receive_batch(self._inbox)) is not None:
                await self._bind([r for b in batch for r in b.requests])

    async def _bind_by_extender(self, batch: list[BindRequest]) -> dict[str, str]:
        """Bind through the binding extender the pods it is interested in (concurrently);
        answers uid -> why, for the pods it did not bind."""
        refused, calls = await self._extenders.bind_all([(r.pod, r.node) for r in batch])
        for r in batch:
            for extender, verb, outcome, start, end in calls.get(r.pod.pod.metadata.uid, ()):
                attributes = {EXTENDER: extender, RESULT: outcome}
                self._tracing.span_from(r.trace, extender_span(verb), start, end, attributes)
        return refused

    async def _bind(self, batch: list[BindRequest]) -> None:
        refused: dict[str, str] = {}
        if self._extenders.binder is not None:
            # v1.14 getBinderFunc: the extender binds; the store records only what it bound.
            refused = await self._bind_by_extender(batch)
        bindings = [
            Binding(
                namespace=r.pod.namespace,
                name=r.pod.name,
                uid=r.pod.pod.metadata.uid,
                node=r.node,
                volumes=r.volumes,
                provisions=r.provisions,
                group=r.group,
            )
            for r in batch
            if r.pod.pod.metadata.uid not in refused
        ]
        # v1.14 counts the assumed pod's TTL from FinishBinding; Podium from the hand-off.
        await send(self._cache, FinishBinding(keys=[r.pod.key for r in batch]))
        started = trio.current_time()
        result: BindResult | StoreFailure = (
            await ask(self._store, lambda r: BindPods(bindings=bindings, reply=r))
            if bindings
            else BindResult(revision=0)
        )
        now = trio.current_time()
        seconds = now - started
        if isinstance(result, StoreFailure):
            failed = {r.pod.pod.metadata.uid: result.message for r in batch}
        else:
            # By uid: a pod deleted and re-created under its name may share this batch.
            failed = {f.binding.uid: f.message for f in result.failed}
        failed.update(refused)
        commit_seconds = 0.0 if isinstance(result, StoreFailure) else result.commit_seconds
        # The members of each group the store refused, requeued once per group below.
        groups: dict[str, list[BindRequest]] = {}
        for r in batch:
            message = failed.get(r.pod.pod.metadata.uid)
            if r.trace is not None:
                attributes = {
                    NODE: r.node,
                    RESULT: "ok" if message is None else "error",
                }
                self._tracing.span_from(r.trace, BIND, started, now, attributes)
                self._tracing.span_from(r.trace, COMMIT, now - commit_seconds, now)
            if message is None:
                metrics.BIND_SUCCESS.observe(seconds)
                metrics.POD_SCHEDULING_ATTEMPTS.observe(r.attempts)
                if r.arrived_at is not None:
                    metrics.sli_duration(r.attempts).observe(now - r.arrived_at)
            else:
                metrics.BIND_ERROR.observe(seconds)
                log.warning("binding pod %s to node %s failed: %s", r.pod.key, r.node, message)
                await send(self._cache, Forget(key=r.pod.key))
                if r.group:
                    groups.setdefault(r.group, []).append(r)
                else:
                    await send(self._queue, Requeue(pod=r.pod, cycle=r.cycle, why="error"))
            if r.done is not None:
                reply(r.done, BindDone(key=r.pod.key, ok=message is None, message=message or ""))
        for group, members in groups.items():
            log.warning(
                "the store refused the bindings of pod group %s (%d members): requeued as one",
                group,
                len(members),
            )
            await send(
                self._queue,
                RequeueGroup(
                    key=group,
                    pods=[r.pod for r in members],
                    cycle=members[0].cycle,
                    why="error",
                ),
            )
