"""What the scheduler's two paths share (:mod:`podium.actors.cycle.scheduler` decides batches
of pods, :mod:`podium.actors.cycle.gang_cycle` batches of gangs): one decided pod's
:class:`Outcome`, its stages recorded as spans and metrics, and :class:`CycleSteps`, the steps
of a cycle the gang cycle takes through the scheduler (its snapshot, its decide trip to the
filter and score actors, its requeue, assume answer and report of one pod)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import trio

from podium.actors.cycle.extenders import Extenders
from podium.actors.framework.interface import FilterPlugin
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.framework.snapshot import Snapshot, assumed_pod, fold_assumed
from podium.actors.mail.messages import (
    AssumeStatus,
    Assumption,
    BindDone,
    BinderMsg,
    BindRequest,
    CacheMsg,
    Decision,
    GroupAttempt,
    Popped,
    QueueMsg,
)
from podium.actors.plugins.volume_binding import fold_volume_decision
from podium.actors.runtime.mailbox import send
from podium.actors.runtime.tracing import (
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
from podium.protocol.wire import Hint
from podium.store.mail import EvictResult, RecordUnschedulable, StoreFailure, StoreMsg, Victim

__all__ = [
    "CycleSteps",
    "Outcome",
    "PopSize",
    "decision_for",
    "fold_member",
    "observe_stages",
    "record_stages",
    "record_unschedulable",
    "victim_refs",
]


@dataclass(slots=True)
class Outcome:
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


@dataclass(slots=True)
class PopSize:
    """How many pods the next batch pops: about as many as it can decide within its time
    bound, so that few go back (each pod given back costs the queue a heap pop, a ``Popped``
    and a heap push, and under load the bound ended most batches early: 24 370 give-backs for
    20 000 pods at 500 nodes).

    A batch decides its first pod whatever the time, then each next pod that starts before
    ``popped_at + max_seconds``; after the refresh (``r`` seconds) each decision takes about
    ``t``, so it decides ``max(1, ceil((max_seconds - r) / t))`` pods. ``r`` and ``t`` are
    smoothed over recent batches (each new measure weighs :attr:`WEIGHT`). Until a batch has
    been measured, or while a decision takes no time (``podium simulate``'s virtual clock),
    the answer is ``max_pods``; while the refresh alone takes the bound, 1. Which pods come, and in which order, is the queue's as ever:
    only how many.
    """

    max_pods: int
    max_seconds: float
    measured: bool = False
    refresh: float = 0.0
    decision: float = 0.0

    WEIGHT = 0.25

    def next(self) -> int:
        """The ``max_pods`` of the next Pop."""
        if not self.measured:
            return self.max_pods
        room = self.max_seconds - self.refresh
        if room <= 0.0:
            return 1
        if room >= self.decision * self.max_pods:
            # Every pod it may take fits in the bound (also: no time bound, ``inf``; or a
            # decision that takes no time, ``podium simulate``'s virtual clock), and the
            # quotient below could overflow.
            return self.max_pods
        return max(1, math.ceil(room / self.decision))

    def observe(self, refresh: float, deciding: float, decided: int) -> None:
        """A batch's refresh took ``refresh`` seconds, then ``decided`` pods took
        ``deciding`` seconds (a batch that ended on a preemption is not a measure)."""
        if decided < 1:
            return
        each = deciding / decided
        if not self.measured:
            self.measured, self.refresh, self.decision = True, refresh, each
            return
        w = self.WEIGHT
        self.refresh += w * (refresh - self.refresh)
        self.decision += w * (each - self.decision)


def record_stages(attempt: Attempt, decision: Decision, deciding: float, decided: float) -> None:
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


def fold_member(
    snapshot: Snapshot, before: dict[str, NodeInfo], member: PodInfo, decision: Decision
) -> PodInfo:
    """Fold a placed member into ``snapshot``: its NodeInfo change (``before`` keeps each
    node's NodeInfo before the batch's or the gang's first change to it) and its volume decision (into the
    snapshot's objects). Returns the member as the cache's assume counts it. Shared by a batch
    of pods (:mod:`podium.actors.cycle.scheduler`) and a batch of gangs
    (:mod:`podium.actors.cycle.gang_cycle`)."""
    node = decision.node
    assert node is not None
    assumed = assumed_pod(member, node)
    before.setdefault(node, fold_assumed(snapshot, member, node, assumed=assumed))
    snapshot.objects = fold_volume_decision(
        snapshot.objects, node, decision.volumes, decision.provisions
    )
    return assumed


async def decision_for(decisions: trio.MemoryReceiveChannel[Decision], pod: PodInfo) -> Decision:
    """The next Decision on ``decisions`` about ``pod`` (the one asked for): only a request
    abandoned by a cancellation could have left another answer before it."""
    while True:
        decision = await decisions.receive()
        if decision.pod is pod:
            return decision


def observe_stages(decision: Decision) -> None:
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


class CycleSteps(Protocol):
    """The scheduler as the gang cycle uses it (:class:`~podium.actors.cycle.scheduler.Scheduler`
    implements it): its peers, settings and lock, and the steps both paths take. Each step's
    contract is the scheduler's method of the same name."""

    _lock: trio.Lock
    _queue: trio.MemorySendChannel[QueueMsg]
    _cache: trio.MemorySendChannel[CacheMsg]
    _binder: trio.MemorySendChannel[BinderMsg]
    _store: trio.MemorySendChannel[StoreMsg]
    _tracing: Tracing
    _extenders: Extenders
    _filters: list[FilterPlugin[Any]]
    _preemption: bool
    _explain_attempts: bool
    _sync_binds: bool
    _batch_max_seconds: float

    async def _refresh(self) -> Snapshot:
        """Bring the snapshot up to date with the cache (one round trip)."""
        ...

    async def _decide(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        *,
        dry: bool,
        explain: bool,
        nominated: NominatedPods | None = None,
    ) -> Decision:
        """Filter and score ``pod`` on ``snapshot`` (the filter and score actors' trip)."""
        ...

    async def _unresolvable(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        decision: Decision,
        nominated: NominatedPods | None = None,
    ) -> frozenset[str]:
        """The nodes a pod that fit nowhere failed on unresolvably."""
        ...

    async def _evict(
        self, pod: PodInfo, node: str, victims: list[PodInfo]
    ) -> EvictResult | StoreFailure:
        """One Evict: ``victims`` evicted for ``pod``, nominated to ``node`` ("" clears)."""
        ...

    async def _give_back(self, pods: list[Popped]) -> None:
        """Popped pods not decided: back to the queue, not counted as attempts."""
        ...

    async def _unschedulable(self, outcome: Outcome) -> Outcome:
        """A pod that fit nowhere (or whose attempt failed): requeued, its condition recorded."""
        ...

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
        """One pod's assume answer: its bind, or None when the cache refused it."""
        ...

    async def _report(self, o: Outcome, *, group: GroupAttempt | None = None) -> None:
        """Count a finished attempt and report it."""
        ...


def victim_refs(victims: Sequence[PodInfo], node: str) -> list[Victim]:
    """The store's references to the pods to evict for a preemptor nominated to ``node``, each
    naming its own node when it runs elsewhere (a member of a placed gang evicted whole)."""
    return [
        Victim(
            namespace=v.namespace,
            name=v.name,
            uid=v.pod.metadata.uid,
            node="" if v.pod.spec.node_name in ("", node) else v.pod.spec.node_name,
        )
        for v in victims
    ]


async def record_unschedulable(
    store: trio.MemorySendChannel[StoreMsg],
    o: Outcome,
    why: Literal["error", "unschedulable"],
    message: str,
) -> None:
    """A pod that was not placed: its PodScheduled condition's message to the store, and how
    its attempt ended (the nodes it examined and found feasible) to its span and metrics."""
    pod, result = o.popped.pod, o.decision.result
    await send(
        store,
        RecordUnschedulable(
            namespace=pod.namespace, name=pod.name, uid=pod.pod.metadata.uid, message=message
        ),
    )
    o.attempt.outcome(
        why, nodes_examined=result.evaluated, nodes_feasible=result.feasible, message=message
    )
