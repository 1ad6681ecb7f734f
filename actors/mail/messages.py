"""Actor <-> actor mailbox messages (they carry reply channels, so they live here, not on the wire).

Every message is a frozen msgspec Struct, and so is the
:class:`~podium.actors.framework.result.ScheduleResult` that ScoreRequest, Decision and
Attempted carry: a stage that adds to a result makes a new one (``msgspec.structs.replace``).
The containers a message holds (lists, dicts) are built before it is made and never changed
after it is sent, by its sender or anyone else. Fields may hold in-process objects the receiver
only reads: PodInfo, NodeInfo and Snapshot instances are never mutated once sent (the node
cache copies a NodeInfo before changing it; a Snapshot is lent to the filter actor and the
score actor for one cycle, during which its owner, the scheduler, does not touch it; for a
run of a batch's pods, :class:`FilterRequest` ``run``, the filter actor folds each placed pod
into it before the next is filtered, as the scheduler would have).
Replies travel on one-shot channels carried in the request, opened with capacity 1 so the
replier's ``send_nowait`` never blocks.

The store's messages (Committed, Recovered, WriteObjects, BindPods, ...) are in
:mod:`podium.store.mail`; the queue and the cache subscribe to the store's published stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import msgspec

from podium.actors.framework.snapshot import SnapshotDelta
from podium.protocol.errors import ErrorCode
from podium.store.mail import Committed, Recovered, StoreMsg

if TYPE_CHECKING:
    from collections.abc import Sequence

    import trio

    from podium.actors.framework.interface import FilterPlugin, ScorePlugin
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.nominated import NominatedPods
    from podium.actors.framework.result import ScheduleResult
    from podium.actors.framework.snapshot import Snapshot
    from podium.protocol.wire import Hint

__all__ = [
    "Assume",
    "AssumeReply",
    "AssumeStatus",
    "Assumption",
    "Attempted",
    "BeginScheduling",
    "BindBatch",
    "BindDone",
    "BindRequest",
    "BinderMsg",
    "CacheMsg",
    "CacheStats",
    "CacheStatsReply",
    "Decision",
    "ExplainGroup",
    "ExplainPod",
    "Explained",
    "ExplainedGroup",
    "FilterMsg",
    "FilterRequest",
    "FinishBinding",
    "Forget",
    "GangBatch",
    "GiveBack",
    "GroupAttempt",
    "GroupPlaced",
    "Handles",
    "Lookup",
    "LookupReply",
    "Pop",
    "Popped",
    "PoppedBatch",
    "QueueIdle",
    "QueueMsg",
    "QueueStats",
    "QueueStatsReply",
    "ReloadPlugins",
    "Reloaded",
    "Requeue",
    "RequeueGroup",
    "SchedulerMsg",
    "SchedulerStats",
    "SchedulerStatsReply",
    "ScoreMsg",
    "ScoreRequest",
    "SetFilters",
    "SetScorers",
    "SnapshotDelta",
    "SnapshotRequest",
]


class _Mail(msgspec.Struct, frozen=True, kw_only=True):
    """Base of actor mail."""


# --------------------------------------------------------------------------- scheduling queue


class Pop(_Mail, frozen=True, kw_only=True):
    """Ask for the next pods once one is active: up to ``max_pods`` of them, in exactly the
    order successive v1.14 Pops would give (highest priority, then earliest arrival).

    The queue answers one pod when batching them could change a decision (see
    :mod:`podium.actors.queue.batching` and the queue actor's docstring): while nominations
    exist or unschedulable pods wait for assigned pods to match their affinity.

    With ``idle_ok`` (``podium simulate``), answer :class:`QueueIdle` instead of waiting when
    activeQ and backoffQ are both empty. A Pop is answered exactly once; only one may be
    outstanding.
    """

    reply: trio.MemorySendChannel[PoppedBatch | QueueIdle]
    idle_ok: bool = False
    max_pods: int = 1


class Popped(_Mail, frozen=True, kw_only=True):
    """The pod to schedule now.

    Attributes:
        pod: the latest version of the pod.
        cycle: the scheduling cycle this pop started (Kubernetes' schedulingCycle).
        attempts: attempts including this one.
        arrived_at: first enqueue time (trio clock), kept across retries.
        links: trace carriers of the protocol requests that submitted the pod (its attempts'
            traces link to them).
        nominated: the pending pods nominated to nodes (v1.14 ``PriorityQueue.nominatedPods``),
            a copy-on-write view the queue never mutates once handed out (the same object
            until nominations change); None when no pod is nominated.
    """

    pod: PodInfo
    cycle: int
    attempts: int
    arrived_at: float
    links: list[dict[str, str]] = []
    nominated: NominatedPods | None = None


class GangBatch(_Mail, frozen=True, kw_only=True):
    """A pod group a :class:`PoppedBatch` holds the members of (protocol/gangs.py).

    Attributes:
        key: the group's ``namespace/name``.
        min_count: its minCount (``minMember``).
        bound: its members bound, or placed and awaiting their binds, before this pop: at
            least ``min_count - bound`` of its popped members must fit, or none is placed.
        members: how many of the batch's pods are its members: the next ones, after the
            members of the groups before it in :attr:`PoppedBatch.groups`.
    """

    key: str
    min_count: int
    bound: int
    members: int


class PoppedBatch(_Mail, frozen=True, kw_only=True):
    """The pods to schedule now, one after another in this order (never empty).

    ``groups``: the batch is gangs, one after another in queue order, each all the members
    its unit holds (the first whatever ``max_pods`` asked: a gang is decided whole; the next
    ones while the batch stays within ``max_pods``), ``pods`` their members group by group
    (:attr:`GangBatch.members` each); a batch of gangs holds no other pods. Empty for other
    pods.
    """

    pods: list[Popped]
    groups: list[GangBatch] = []


class GiveBack(_Mail, frozen=True, kw_only=True):
    """Popped pods the scheduler did not decide (the batch's time bound passed, or an earlier
    pod of the batch ended it): back to activeQ exactly where they were, their attempt not
    counted and no backoff, as if never popped."""

    keys: list[str]


class QueueIdle(_Mail, frozen=True, kw_only=True):
    """No pod is active or backing off (only unschedulable pods, if any, remain)."""

    unschedulable: int


class Requeue(_Mail, frozen=True, kw_only=True):
    """Give a popped pod back.

    ``why`` is ``unschedulable`` (it fits nowhere), ``error`` (the attempt or its bind
    failed): both follow v1.14 AddUnschedulableIfNotPresent (backoff, then the unschedulable
    set or backoffQ by the moveRequestCycle rule); ``conflict`` (AssumeConflict): straight back
    to activeQ without backoff. A pod deleted or bound meanwhile is dropped; a pod updated
    meanwhile is requeued in its latest version.

    ``plugins``: the predicates that rejected the pod on some node (Kubernetes'
    UnschedulablePlugins), counted by ``scheduler_unschedulable_pods`` while it is unschedulable.
    """

    pod: PodInfo
    cycle: int
    why: Literal["unschedulable", "error", "conflict"]
    plugins: frozenset[str] = frozenset()


class RequeueGroup(_Mail, frozen=True, kw_only=True):
    """Give a gang's members back as one unit (the group ``key``, ``namespace/name``).

    From the scheduler when fewer than the needed members fit (``unschedulable``, or ``error``
    when a member's attempt failed) or the cache refused one of them (``conflict``, or
    ``error``); from the binder when the store refused the group's bindings (``error``). The
    ``pods`` still in flight rejoin the group's unit, which is requeued once, as a pod would be
    (backoff by the group's attempts; ``conflict`` straight to activeQ). ``plugins``: the
    predicates that rejected a member, counted for each member while the unit is
    unschedulable.
    """

    key: str
    pods: list[PodInfo]
    cycle: int
    why: Literal["unschedulable", "error", "conflict"]
    plugins: frozenset[str] = frozenset()


class GroupPlaced(_Mail, frozen=True, kw_only=True):
    """A gang attempt placed ``pods`` (assumed, handed to the binder), at least as many as the
    group needed: they count as placed until bound, the group's other members popped with
    them are requeued as ordinary pods (each with its own Requeue, which follows), and its
    members that arrive now schedule as ordinary pods."""

    key: str
    pods: list[PodInfo]


class Lookup(_Mail, frozen=True, kw_only=True):
    """Is the pod ``key`` (namespace/name) pending, and how many attempts has it had?"""

    key: str
    reply: trio.MemorySendChannel[LookupReply]


class LookupReply(_Mail, frozen=True, kw_only=True):
    """``queue`` is active, backoff, unschedulable, in_flight, gated (the pod has scheduling
    gates), waiting (a gang member held before the queue: ``message`` says why, e.g.
    ``waiting for pod group ml/train: 5 of 8 pods exist``), or None when not pending."""

    queue: Literal["active", "backoff", "unschedulable", "in_flight", "gated", "waiting"] | None
    attempts: int
    message: str = ""


class QueueStats(_Mail, frozen=True, kw_only=True):
    reply: trio.MemorySendChannel[QueueStatsReply]


class QueueStatsReply(_Mail, frozen=True, kw_only=True):
    active: int
    backoff: int
    unschedulable: int
    in_flight: int


QueueMsg: TypeAlias = (
    Recovered
    | Committed
    | Pop
    | GiveBack
    | Requeue
    | RequeueGroup
    | GroupPlaced
    | Lookup
    | QueueStats
)


# --------------------------------------------------------------------------- node cache


class SnapshotRequest(_Mail, frozen=True, kw_only=True):
    """What changed since ``generation`` (0: everything)."""

    generation: int
    reply: trio.MemorySendChannel[SnapshotDelta]


class Assumption(_Mail, frozen=True, kw_only=True):
    """One pod of an :class:`Assume`: ``pod`` on ``node``, with its volume-binding decision
    (``volumes``/``provisions``), assumed with the pod. ``assumed``: the pod as the assume
    counts it (``spec.nodeName`` set), when the sender made it already (the scheduler's fold
    did): the cache counts that same PodInfo instead of making another."""

    pod: PodInfo
    node: str
    volumes: dict[str, str] = {}
    provisions: list[str] = []
    assumed: PodInfo | None = None


class Assume(_Mail, frozen=True, kw_only=True):
    """Assume the pods of a batch, in order, as decided on the snapshot at ``generation``
    (with ``folded``, each decision also saw the earlier ones of the batch folded in).

    If a node changed since ``generation``, the cache re-checks the fit on its current
    NodeInfo and answers ``conflict`` for that pod when it no longer holds. Answered with one
    :class:`AssumeReply` whose ``statuses`` follow ``pods``.
    """

    pods: list[Assumption]
    generation: int
    reply: trio.MemorySendChannel[AssumeReply]
    folded: bool = False
    """Each pod was decided with the batch's earlier pods folded in (the scheduler's batches
    are): a node that changed after ``generation`` only by those pods' assumes is what the
    decision saw and is not checked again."""
    atomic: bool = False
    """All or nothing (a gang's members): when the cache refuses any pod, it assumes none
    (the ones it took are forgotten again) and answers ``conflict`` for the others, naming the
    refused pod."""
    units: list[int] | None = None
    """With ``atomic``, the sizes of the all-or-nothing units ``pods`` holds one after another
    (the gangs of one batch, each its members; they add up to ``len(pods)``); None: ``pods``
    is one unit. A unit refused is all or nothing as above, and the units after it are not
    assumed either (``conflict``, naming the refused pod): each was decided with the refused
    unit's pods folded in. The units before it stay assumed."""


class AssumeStatus(_Mail, frozen=True, kw_only=True):
    """``assumed``; ``conflict`` (requeue without backoff); ``error`` (a cache state error)."""

    status: Literal["assumed", "conflict", "error"]
    message: str = ""


class AssumeReply(_Mail, frozen=True, kw_only=True):
    """One status per pod of the :class:`Assume`, in its order."""

    statuses: list[AssumeStatus]


class FinishBinding(_Mail, frozen=True, kw_only=True):
    """The binder handed these pods' bindings to the store (one batch): their assumed TTL
    starts when the cache receives this."""

    keys: list[str]


class Forget(_Mail, frozen=True, kw_only=True):
    """The bind failed: drop the assumed pod and its volume assumptions."""

    key: str


class CacheStats(_Mail, frozen=True, kw_only=True):
    reply: trio.MemorySendChannel[CacheStatsReply]


class CacheStatsReply(_Mail, frozen=True, kw_only=True):
    nodes: int
    pods: int
    assumed: int
    generation: int


CacheMsg: TypeAlias = (
    Recovered | Committed | SnapshotRequest | Assume | FinishBinding | Forget | CacheStats
)


# --------------------------------------------------------------------------- filter / score


class Decision(_Mail, frozen=True, kw_only=True):
    """The outcome of filtering and scoring one pod on one snapshot.

    ``node`` is None when nothing fits (``result.message`` has the FitError) or on error
    (``result.error``). ``volumes``/``provisions`` are the chosen node's volume decision.
    ``filter_seconds``/``score_seconds`` are the stages' durations (``score_seconds`` None when
    no scoring ran), for ``scheduler_framework_extension_point_duration_seconds``.

    A decision of a run (:class:`FilterRequest` ``run``) also carries when the filter actor
    started and finished deciding it (``started``, ``decided``: trio clock; 0 otherwise) and,
    placed, the pod as it folded it into the snapshot and the cache's assume is to count it
    (``assumed``).
    """

    pod: PodInfo
    node: str | None
    result: ScheduleResult
    generation: int
    volumes: dict[str, str] = {}
    provisions: list[str] = []
    filter_seconds: float = 0.0
    score_seconds: float | None = None
    started: float = 0.0
    decided: float = 0.0
    assumed: PodInfo | None = None


class FilterRequest(_Mail, frozen=True, kw_only=True):
    """Filter ``pod`` over ``snapshot`` from the carried start index; the filter actor forwards
    the survivors to the score actor, which answers :class:`Decision` on ``reply``.

    ``dry`` (explain, simulate requests): do not advance the start index. ``explain``: keep
    every examined node's reasons and scores. ``nominated``: the queue's nominated pods (from
    :class:`Popped`), filtered with v1.14's two passes where they matter; only read.

    A *run* (``before`` given: a batch's pods, not dry): ``pod``, then each pod of ``run`` in
    turn, each decided after the one before it was placed and folded into ``snapshot`` by the
    filter actor (:func:`~podium.actors.cycle.steps.fold_member`, ``before`` keeping each
    node's NodeInfo before the batch's first fold on it: the scheduler's, lent with the
    snapshot). The run stops after a pod that is not placed, and before a pod that would start
    at or after ``until``; its decisions are answered together when it stops, in order, so
    the scheduler is woken once a run rather than once a pod.
    """

    pod: PodInfo
    snapshot: Snapshot
    dry: bool = False
    explain: bool = False
    reply: trio.MemorySendChannel[Decision]
    nominated: NominatedPods | None = None
    run: Sequence[PodInfo] = ()
    until: float = float("inf")
    before: dict[str, NodeInfo] | None = None


class SetFilters(_Mail, frozen=True, kw_only=True):
    """Decide with these predicates from the next request on (policy reload)."""

    filters: list[FilterPlugin[Any]]
    percentage_of_nodes_to_score: int
    always_check_all_predicates: bool


FilterMsg: TypeAlias = FilterRequest | SetFilters


class ScoreRequest(_Mail, frozen=True, kw_only=True):
    """Score the feasible rows of ``result`` and pick a host (sent by the filter actor).

    ``filter_seconds`` is the filter stage's duration, passed on into the Decision; ``sampled``
    says this attempt records per-plugin durations (drawn once per attempt by the filter actor).
    """

    pod: PodInfo
    snapshot: Snapshot
    result: ScheduleResult
    feasible: Sequence[int]
    explain: bool
    reply: trio.MemorySendChannel[Decision]
    filter_seconds: float = 0.0
    sampled: bool = False


class SetScorers(_Mail, frozen=True, kw_only=True):
    """Score with these (priority, weight) pairs from the next request on (policy reload)."""

    scorers: list[tuple[ScorePlugin[Any], int]]


ScoreMsg: TypeAlias = ScoreRequest | SetScorers


# --------------------------------------------------------------------------- binder


class BindDone(_Mail, frozen=True, kw_only=True):
    """A bind finished: ``ok``, or failed with ``message`` (the pod was forgotten and requeued)."""

    key: str
    ok: bool
    message: str = ""


class BindRequest(_Mail, frozen=True, kw_only=True):
    """Bind an assumed pod (one pod of a :class:`BindBatch`) (its volumes first, in the same transaction).

    ``done`` (``podium simulate``) is told when the bind is committed or has failed.
    ``attempts`` and ``arrived_at`` (the pod's first enqueue, trio clock; None: unknown) feed
    ``scheduler_pod_scheduling_attempts`` and ``scheduler_pod_scheduling_sli_duration_seconds``
    when the bind commits.
    """

    pod: PodInfo
    node: str
    cycle: int
    volumes: dict[str, str] = {}
    provisions: list[str] = []
    done: trio.MemorySendChannel[BindDone] | None = None
    attempts: int = 1
    arrived_at: float | None = None
    trace: dict[str, str] | None = None
    group: str = ""
    """The pod group (``namespace/name``) whose members of this batch the store binds all or
    none (``Binding.group``); "" for a pod bound on its own."""


class BindBatch(_Mail, frozen=True, kw_only=True):
    """The assumed pods of one scheduling batch to bind, in decision order."""

    requests: list[BindRequest]


BinderMsg: TypeAlias = BindBatch


# --------------------------------------------------------------------------- scheduler


class Attempted(_Mail, frozen=True, kw_only=True):
    """One finished scheduling attempt, reported to an observer (``podium simulate``, stats).

    Attributes:
        pod: the pod as it was decided.
        status: scheduled (assumed and handed to the binder), unschedulable, error, or conflict
            (the cache refused the assume; requeued without backoff).
        node: the chosen node when scheduled.
        result: the decision's details (reasons; per-node verdicts with explain).
        attempts: the pod's attempts including this one.
        preempted: ``namespace/name`` of the pods this attempt evicted to make room.
        group: the gang attempt this was one member of (None: a pod's own attempt).
        hints: what would make the pod fit (a member of a gang that did not fit, when the
            scheduler keeps every examined node's verdict: ``podium simulate --explain``).
    """

    pod: PodInfo
    status: Literal["scheduled", "unschedulable", "error", "conflict"]
    node: str | None
    result: ScheduleResult
    attempts: int
    preempted: list[str] = []
    group: GroupAttempt | None = None
    hints: list[Hint] = []


class GroupAttempt(_Mail, frozen=True, kw_only=True):
    """One attempt of a gang, as each member's :class:`Attempted` carries it.

    Attributes:
        key: the group (``namespace/name``).
        min_count: its minCount; bound: its members bound (or placed) before the attempt.
        members: the members decided; fit: how many of them fit.
        placed: whether the group was placed (assumed and handed to the binder).
    """

    key: str
    min_count: int
    bound: int
    members: int
    fit: int
    placed: bool


class BeginScheduling(_Mail, frozen=True, kw_only=True):
    """Start taking pods from the queue (after recovery; in simulate, after the cluster is put)."""


class ExplainPod(_Mail, frozen=True, kw_only=True):
    """Decide ``pod`` on the current snapshot without advancing, assuming or binding anything.

    ``explain`` keeps every examined node's verdict. Answered with :class:`Explained`.
    """

    pod: PodInfo
    explain: bool = True
    reply: trio.MemorySendChannel[Explained]


class Explained(_Mail, frozen=True, kw_only=True):
    """A dry decision (its ``generation`` is the snapshot's) and the hints that would make the
    pod fit."""

    decision: Decision
    hints: list[Hint]
    preempted: list[str] = []


class ExplainGroup(_Mail, frozen=True, kw_only=True):
    """Decide a pod group's pending ``members`` as its next attempt would (``podium explain
    podgroup/NS/NAME``): one after another on the current snapshot, each placement folded in,
    then, when fewer than ``min_count - bound`` fit and preemption is on, the victims its
    preemption would evict; nothing is advanced, assumed, evicted or bound.

    ``min_count`` None: a ``basic`` group (every member decided as an ordinary pod, in turn).
    Answered with :class:`ExplainedGroup`.
    """

    key: str
    min_count: int | None
    bound: int
    members: list[PodInfo]
    reply: trio.MemorySendChannel[ExplainedGroup]


class ExplainedGroup(_Mail, frozen=True, kw_only=True):
    """A group's dry run.

    Attributes:
        decisions: each member's, in order (every examined node's verdict); a member that did
            not fit has its FitError with the ``preemption:`` part preemption gave it.
        hints: member key -> what would make it fit, for the members that did not.
        fit: how many members fit; needed: how many must (``min_count - bound``, 0 for a
            ``basic`` group or one with minCount bound).
        preempted: member key -> the pods the group's preemption would evict for it (only
            when that places the whole group).
        message: what every member would be told when the group is not placed (its attempt's
            message); None when it would be.
    """

    decisions: list[Decision]
    hints: dict[str, list[Hint]] = {}
    fit: int = 0
    needed: int = 0
    preempted: dict[str, list[str]] = {}
    message: str | None = None


class ReloadPlugins(_Mail, frozen=True, kw_only=True):
    """Read the policy file again and decide with it from the next attempt on."""

    reply: trio.MemorySendChannel[Reloaded]


class Reloaded(_Mail, frozen=True, kw_only=True):
    """The predicates and weighted priorities now in force, or the error that kept the old
    (``code``: ``invalid`` for a policy that breaks a rule, ``not_found`` for a daemon with no
    policy file to read again)."""

    predicates: list[str]
    priorities: list[tuple[str, int]]
    warnings: list[str] = []
    error: str | None = None
    code: ErrorCode = "invalid"


class SchedulerStats(_Mail, frozen=True, kw_only=True):
    reply: trio.MemorySendChannel[SchedulerStatsReply]


class SchedulerStatsReply(_Mail, frozen=True, kw_only=True):
    """Attempts by result since start."""

    scheduled: int
    unschedulable: int
    errors: int


SchedulerMsg: TypeAlias = (
    BeginScheduling | ExplainPod | ExplainGroup | ReloadPlugins | SchedulerStats
)


# --------------------------------------------------------------------------- runtime


@dataclass(frozen=True, slots=True)
class Handles:
    """The mailboxes the caller may send to; the caller closes them to let the runtime end."""

    store: trio.MemorySendChannel[StoreMsg]
    scheduler: trio.MemorySendChannel[SchedulerMsg]
    queue: trio.MemorySendChannel[QueueMsg]
    cache: trio.MemorySendChannel[CacheMsg]

    async def aclose(self) -> None:
        for channel in (self.store, self.scheduler, self.queue, self.cache):
            await channel.aclose()
