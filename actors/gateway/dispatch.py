"""Every request kind, answered from the store, queue, cache and scheduler actors.

Kubernetes counterpart: the API server's request handlers for a create or replace, a delete,
a get or a list in pages, and a watch (staging/src/k8s.io/apiserver/pkg/endpoints/handlers);
``explain``, ``simulate``, ``reload_policy`` and ``stats`` are Podium's own (docs/protocol.md).

A request is answered by asking the actor that owns what it reads (a one-shot reply channel,
:func:`~podium.actors.runtime.mailbox.ask`); a watch answers through its own stream (watch.py) and a
store refusal becomes an ``ErrorReply`` naming the request's field. ``simulate`` admits its pod
as a put would (store/admission.py) and stores nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, assert_never

import msgspec
import trio

from podium.actors.cycle.explain import placement
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.gateway.connection import Connection
from podium.actors.gateway.paging import continue_token, read_continue
from podium.actors.gateway.replies import failure, written
from podium.actors.gateway.watch import Hub, Watches
from podium.actors.mail.messages import (
    CacheStats,
    CacheStatsReply,
    Explained,
    ExplainedGroup,
    ExplainGroup,
    ExplainPod,
    Handles,
    Lookup,
    LookupReply,
    QueueStats,
    QueueStatsReply,
    Reloaded,
    ReloadPlugins,
    SchedulerStats,
    SchedulerStatsReply,
)
from podium.actors.runtime.mailbox import ask
from podium.actors.runtime.tracing import DISABLED, OBJECTS, PUT, Tracing
from podium.protocol.errors import InvalidObject
from podium.protocol.gangs import min_count, pod_group_key, pod_group_name
from podium.protocol.labels import parse_selector
from podium.protocol.objects import (
    DEFAULT_NAMESPACE,
    Pod,
    PodGroup,
    PriorityClass,
    holds_resources,
    namespace_or_default,
    namespaced_key,
)
from podium.protocol.validation import SCHEDULING_GATED_MESSAGE
from podium.protocol.wire import (
    Cancel,
    CancelReply,
    ClientMessage,
    Delete,
    DeleteReply,
    ErrorReply,
    Explain,
    ExplainGroupReply,
    ExplainReply,
    Get,
    GetReply,
    GroupPlacement,
    PendingCounts,
    Placement,
    PriorityWeight,
    Put,
    PutReply,
    ReloadPolicy,
    ReloadPolicyReply,
    ServerMessage,
    Simulate,
    SimulateReply,
    Stats,
    StatsReply,
    Watch,
)
from podium.store.admission import admit_pod, known_classes
from podium.store.mail import (
    ReadObjects,
    ReadResult,
    ReadStats,
    StoreFailure,
    StoreStats,
    WriteObjects,
    WriteResult,
)

__all__ = ["Dispatcher"]


class Dispatcher:
    """Answers the requests of every connection.

    Args:
        handles: the runtime's mailboxes.
        hub: the watch hub's state (read for revisions, readiness and the watchers' count).
        watches: serves the watch requests.
        connections: how many connections are open (for ``stats``).
        started: when the gateway started (for ``stats``' uptime).
        tracing: a span per Put, carried with its write so pod attempts link to it.
    """

    def __init__(
        self,
        handles: Handles,
        hub: Hub,
        watches: Watches,
        *,
        connections: Callable[[], int],
        started: float,
        tracing: Tracing = DISABLED,
    ) -> None:
        self._handles = handles
        self._hub = hub
        self._watches = watches
        self._connections = connections
        self._started = started
        self._tracing = tracing

    async def handle(self, conn: Connection, msg: ClientMessage) -> ServerMessage | None:
        """Answer one request (watches answer through their own stream and return None)."""
        h = self._handles
        match msg:
            case Put():
                # A Put's span is what the attempts of the pods it submits link to.
                with self._tracing.request_span(PUT, {OBJECTS: len(msg.objects)}):
                    trace = self._tracing.inject()
                    put: WriteResult | StoreFailure = await ask(
                        h.store, lambda r: WriteObjects(puts=msg.objects, trace=trace, reply=r)
                    )
                return written(msg.id, put, PutReply)
            case Delete():
                deleted: WriteResult | StoreFailure = await ask(
                    h.store, lambda r: WriteObjects(deletes=msg.refs, reply=r)
                )
                return written(msg.id, deleted, DeleteReply)
            case Get():
                return await self._get(msg)
            case Watch():
                await self._watches.serve(conn, msg)
                return None
            case Cancel():
                if not conn.cancel(msg.target):
                    return ErrorReply(
                        id=msg.id,
                        code="not_found",
                        message=f"no watch with id {msg.target} on this connection",
                        path="$.target",
                    )
                return CancelReply(id=msg.id)
            case Explain():
                return await self._explain(msg)
            case Simulate():
                return await self._simulate(msg)
            case ReloadPolicy():
                reloaded: Reloaded = await ask(h.scheduler, lambda r: ReloadPlugins(reply=r))
                if reloaded.error is not None:
                    return ErrorReply(id=msg.id, code=reloaded.code, message=reloaded.error)
                return ReloadPolicyReply(
                    id=msg.id,
                    predicates=reloaded.predicates,
                    priorities=[PriorityWeight(name=n, weight=w) for n, w in reloaded.priorities],
                    warnings=reloaded.warnings,
                )
            case Stats():
                return await self._stats(msg)
            case _:
                assert_never(msg)

    async def _get(self, msg: Get) -> ServerMessage:
        try:
            selector = parse_selector(msg.label_selector) if msg.label_selector else None
        except ValueError as exc:
            return ErrorReply(id=msg.id, code="invalid", message=str(exc), path="$.label_selector")
        first: tuple[int, tuple[str, str]] | None = None
        if msg.continue_:
            try:
                first = read_continue(msg)
            except ValueError as exc:
                return ErrorReply(id=msg.id, code="invalid", message=str(exc), path="$.continue")
        read: ReadResult | StoreFailure = await ask(
            self._handles.store,
            lambda r: ReadObjects(
                kind=msg.kind,
                name=msg.name,
                namespace=msg.namespace,
                selector=selector,
                after=first[1] if first else None,
                limit=msg.limit,
                reply=r,
            ),
        )
        if isinstance(read, StoreFailure):
            failed = failure(msg.id, read)
            # The store refuses only an unknown kind as invalid: name the field.
            if read.code == "invalid":
                failed = msgspec.structs.replace(failed, path="$.kind")
            return failed
        revision = first[0] if first else read.revision
        token = ""
        if read.remaining != 0:
            last = read.items[-1].metadata
            token = continue_token(revision, msg.kind, (last.namespace, last.name))
        return GetReply(
            id=msg.id,
            revision=revision,
            items=read.items,
            continue_=token,
            remaining=read.remaining,
        )

    async def _simulate(self, msg: Simulate) -> ServerMessage:
        pod = msg.pod
        if not pod.metadata.namespace:
            meta = msgspec.structs.replace(pod.metadata, namespace=DEFAULT_NAMESPACE)
            pod = msgspec.structs.replace(pod, metadata=meta)
        admitted = await self._admit(msg.id, pod)
        if isinstance(admitted, ErrorReply):
            return admitted
        explained: Explained = await ask(
            self._handles.scheduler,
            lambda r: ExplainPod(pod=PodInfo(admitted), explain=msg.explain, reply=r),
        )
        d = explained.decision
        return SimulateReply(
            id=msg.id,
            revision=self._hub.revision,
            placement=placement(
                d.pod,
                d.result,
                attempts=1,
                explain=msg.explain,
                preempted=explained.preempted,
            ),
        )

    async def _admit(self, request_id: int, pod: Pod) -> Pod | ErrorReply:
        """The pod with the priority a put would give it (store/admission.py, over the stored
        classes), or the refusal a put would get (its path under the request's ``pod``)."""
        read: ReadResult | StoreFailure = await ask(
            self._handles.store, lambda r: ReadObjects(kind="PriorityClass", reply=r)
        )
        if isinstance(read, StoreFailure):
            return failure(request_id, read)
        classes = known_classes(c for c in read.items if isinstance(c, PriorityClass))
        try:
            return admit_pod(pod, classes)
        except InvalidObject as exc:
            # The pod is the request's ``pod``: its field is named from the request.
            path = None if exc.path is None else "$.pod" + exc.path.removeprefix("$")
            return ErrorReply(id=request_id, code=exc.code, message=exc.message, path=path)

    async def _explain(self, msg: Explain) -> ServerMessage:
        if msg.kind == "PodGroup":
            return await self._explain_group(msg)
        h = self._handles
        read: ReadResult | StoreFailure = await ask(
            h.store,
            lambda r: ReadObjects(kind="Pod", name=msg.name, namespace=msg.namespace, reply=r),
        )
        if isinstance(read, StoreFailure):
            return failure(msg.id, read)
        pod = read.items[0]
        assert isinstance(pod, Pod)
        info = PodInfo(pod)
        if pod.spec.node_name:
            # As kubectl describe shows a bound pod: its node and that it is bound. Its
            # attempts are not kept once it is bound (the queue forgets it at the bind).
            bound = Placement(
                namespace=info.namespace,
                name=info.name,
                node=pod.spec.node_name,
                message=None,
                bound=True,
            )
            return ExplainReply(id=msg.id, revision=read.revision, placement=bound)
        looked: LookupReply = await ask(h.queue, lambda r: Lookup(key=info.key, reply=r))
        group = await self._members_group(msg, pod)
        if pod.spec.scheduling_gates:
            # Not for the scheduler to try while gated (Kubernetes 1.27+ SchedulingGates).
            gates = ", ".join(g.name for g in pod.spec.scheduling_gates)
            return ExplainReply(
                id=msg.id,
                revision=read.revision,
                placement=placement(
                    info,
                    ScheduleResult(message=f"{SCHEDULING_GATED_MESSAGE}: {gates}"),
                    attempts=looked.attempts,
                    explain=False,
                ),
                group=group,
            )
        if looked.queue == "waiting":
            # A gang member held before the queue (the GangScheduling PreEnqueue): not for the
            # scheduler to try until its group exists with minCount pods.
            return ExplainReply(
                id=msg.id,
                revision=read.revision,
                placement=placement(
                    info,
                    ScheduleResult(message=looked.message),
                    attempts=looked.attempts,
                    explain=False,
                ),
                group=group,
            )
        if group is not None and group.needed:
            # A member its group's next attempt decides: its verdict there, not alone.
            entry = next((m for m in group.members if m.name == info.name), None)
            if entry is not None:
                return ExplainReply(
                    id=msg.id,
                    revision=read.revision,
                    placement=entry,
                    hints=group.hints.get(info.key, []),
                    group=group,
                )
        explained: Explained = await ask(
            h.scheduler, lambda r: ExplainPod(pod=info, explain=True, reply=r)
        )
        d = explained.decision
        return ExplainReply(
            id=msg.id,
            revision=read.revision,
            placement=placement(
                info,
                d.result,
                attempts=looked.attempts,
                explain=True,
                preempted=explained.preempted,
            ),
            hints=explained.hints,
            group=group,
        )

    async def _members_group(self, msg: Explain, pod: Pod) -> GroupPlacement | None:
        """The explanation of ``pod``'s group, as ``explain podgroup/NS/NAME`` gives it, when
        the pod names a gang or a group that does not exist (a ``basic`` group's pods are
        ordinary pods: None), else None."""
        name = pod_group_name(pod)
        if name is None:
            return None
        asked = Explain(id=msg.id, name=name, namespace=pod.metadata.namespace, kind="PodGroup")
        answer = await self._group(asked)
        if isinstance(answer, StoreFailure) or answer[1].policy == "basic":
            return None
        return answer[1]

    async def _explain_group(self, msg: Explain) -> ServerMessage:
        """``explain podgroup/NS/NAME`` (:meth:`_group`)."""
        answer = await self._group(msg)
        if isinstance(answer, StoreFailure):
            return failure(msg.id, answer)
        revision, group = answer
        return ExplainGroupReply(id=msg.id, revision=revision, group=group)

    async def _group(self, msg: Explain) -> tuple[int, GroupPlacement] | StoreFailure:
        """A pod group's members (read from the store: every pod of its namespace that names
        it), the queue's word on each (the quorum it waits for, its attempts), and the
        scheduler's dry run of the pending ones as the group's next attempt (ExplainGroup).
        Returns the store's revision and the group's explanation."""
        h = self._handles
        namespace = namespace_or_default(msg.namespace)
        key = namespaced_key(namespace, msg.name)
        read: ReadResult | StoreFailure = await ask(
            h.store,
            lambda r: ReadObjects(kind="PodGroup", name=msg.name, namespace=namespace, reply=r),
        )
        group = None
        if isinstance(read, ReadResult):
            found = read.items[0]
            assert isinstance(found, PodGroup)
            group = found
        listed: ReadResult | StoreFailure = await ask(
            h.store, lambda r: ReadObjects(kind="Pod", namespace=namespace, reply=r)
        )
        if isinstance(listed, StoreFailure):
            return listed
        members = [p for p in listed.items if isinstance(p, Pod) and pod_group_key(p) == key]
        if group is None and not members:
            # Neither the group nor a pod naming it: the store's not_found for the group.
            assert isinstance(read, StoreFailure)
            return read
        minimum = min_count(group) if group is not None else None
        policy: Literal["gang", "basic"] | None = (
            None if group is None else ("basic" if minimum is None else "gang")
        )
        # Members as a gang's unit orders them: by priority, then arrival (creation), then name.
        members.sort(
            key=lambda p: (
                -(p.spec.priority or 0),
                p.metadata.creation_timestamp or "",
                p.metadata.name,
            )
        )
        bound = [p for p in members if p.spec.node_name and holds_resources(p)]
        placements = [
            Placement(
                namespace=namespace,
                name=p.metadata.name,
                node=p.spec.node_name,
                message=None,
                bound=True,
            )
            for p in bound
        ]
        pending: list[tuple[PodInfo, LookupReply]] = []
        waiting = ""
        for p in members:
            if p.spec.node_name or not holds_resources(p):
                continue
            info = PodInfo(p)
            looked = await self._lookup(info.key)
            if looked.queue is None:
                continue  # not this scheduler's to place (another scheduler, terminating)
            if looked.queue == "waiting":
                waiting = waiting or looked.message
            if looked.queue == "gated" or p.spec.scheduling_gates:
                gates = ", ".join(g.name for g in p.spec.scheduling_gates)
                why = ScheduleResult(message=f"{SCHEDULING_GATED_MESSAGE}: {gates}")
                placements.append(placement(info, why, attempts=looked.attempts, explain=False))
                continue
            pending.append((info, looked))
        needed = 0 if minimum is None else max(minimum - len(bound), 0)
        exist = len(bound) + len(pending)
        if not waiting and not pending and minimum is not None and exist < minimum:
            # No pending member to ask the queue about: the count it would give.
            waiting = f"waiting for pod group {key}: {exist} of {minimum} pods exist"
        if waiting:
            # The GangScheduling PreEnqueue holds them: not for the scheduler to try yet.
            placements += [
                placement(
                    info, ScheduleResult(message=waiting), attempts=looked.attempts, explain=False
                )
                for info, looked in pending
            ]
            answer = GroupPlacement(
                namespace=namespace,
                name=msg.name,
                policy=policy,
                min_count=minimum,
                bound=len(bound),
                needed=needed,
                fit=0,
                placed=False,
                waiting=True,
                message=waiting,
                members=placements,
            )
            return listed.revision, answer
        explained: ExplainedGroup = await ask(
            h.scheduler,
            lambda r: ExplainGroup(
                key=key,
                min_count=minimum,
                bound=len(bound),
                members=[info for info, _ in pending],
                reply=r,
            ),
        )
        blocking: list[str] = []
        for (info, looked), decision in zip(pending, explained.decisions, strict=True):
            if decision.node is None:
                blocking.append(info.key)
            placements.append(
                placement(
                    info,
                    decision.result,
                    attempts=looked.attempts,
                    explain=True,
                    preempted=explained.preempted.get(info.key, []),
                )
            )
        answer = GroupPlacement(
            namespace=namespace,
            name=msg.name,
            policy=policy,
            min_count=minimum,
            bound=len(bound),
            needed=needed,
            fit=explained.fit,
            placed=explained.fit >= needed,
            message=explained.message,
            members=placements,
            blocking=blocking,
            hints={k: v for k, v in explained.hints.items() if v},
            preempted=[v for victims in explained.preempted.values() for v in victims],
        )
        return listed.revision, answer

    async def _lookup(self, key: str) -> LookupReply:
        looked: LookupReply = await ask(self._handles.queue, lambda r: Lookup(key=key, reply=r))
        return looked

    async def _stats(self, msg: Stats) -> StatsReply:
        h = self._handles
        store: StoreStats = await ask(h.store, lambda r: ReadStats(reply=r))
        queue: QueueStatsReply = await ask(h.queue, lambda r: QueueStats(reply=r))
        cache: CacheStatsReply = await ask(h.cache, lambda r: CacheStats(reply=r))
        sched: SchedulerStatsReply = await ask(h.scheduler, lambda r: SchedulerStats(reply=r))
        return StatsReply(
            id=msg.id,
            revision=store.revision,
            ready=self._hub.ready.is_set(),
            nodes=store.objects.get("Node", 0),
            pods=store.objects.get("Pod", 0),
            bound=store.bound_pods,
            assumed=cache.assumed,
            pending=PendingCounts(
                active=queue.active + queue.in_flight,
                backoff=queue.backoff,
                unschedulable=queue.unschedulable,
            ),
            scheduled=sched.scheduled,
            unschedulable=sched.unschedulable,
            errors=sched.errors,
            connections=self._connections(),
            watchers=len(self._hub.watches),
            uptime_seconds=trio.current_time() - self._started,
            leading=store.leading,
            leader=store.leader,
        )
