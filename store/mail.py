"""The store actor's mailbox and what it publishes: the one source of truth's vocabulary.

Every change (a client's put or delete, a binding, an Unschedulable record) is committed by
the store first; the node cache, the scheduling queue and the watch hub are views fed by the
:class:`Committed` batches the store publishes, in revision order, after each commit. Recovery
is "publish :class:`Recovered` with every stored object", so the views are rebuilt the same way
at start and after a crash (the in-memory store and the SQLite store speak these same
messages).

Requests carry a one-shot reply channel (``reply``); the store answers on it only after the
commit (the in-memory store's commit is immediate; SQLite's is a durable transaction).
``send_nowait`` into the reply channel never blocks: callers open it with capacity 1.

Mailbox (``StoreMsg``): :class:`WriteObjects`, :class:`BindPods`,
:class:`RecordUnschedulable`, :class:`Evict`, :class:`ReadObjects`, :class:`ReadEvents`,
:class:`ReadStats`.
Emits to every subscriber: :class:`Recovered` once, then :class:`Committed` per commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import msgspec

from podium.protocol.errors import ErrorCode
from podium.protocol.objects import KubeObject, LabelSelector
from podium.protocol.wire import EventType, ObjectError, ObjectRef, ObjectStatus

if TYPE_CHECKING:
    import trio

__all__ = [
    "BindFailure",
    "BindPods",
    "BindResult",
    "Binding",
    "Change",
    "Committed",
    "EventsResult",
    "Evict",
    "EvictResult",
    "Preemptor",
    "ReadEvents",
    "ReadObjects",
    "ReadResult",
    "ReadStats",
    "RecordUnschedulable",
    "Recovered",
    "StoreFailure",
    "StoreMsg",
    "StoreStats",
    "Victim",
    "WriteObjects",
    "WriteResult",
]


class _Mail(msgspec.Struct, frozen=True, kw_only=True):
    """Base of store mail. Not sent over the wire: fields may hold channels."""


# --------------------------------------------------------------------------- published


class Change(_Mail, frozen=True, kw_only=True):
    """One committed change; each change has its own revision.

    Attributes:
        revision: the store revision of this change (strictly increasing, never reused).
        type: Added, Modified, Deleted, Bound, Unschedulable or Preempted.
        kind, namespace, name: the object ("" namespace for cluster-scoped kinds).
        object: the object after the change (the last state for Deleted/Preempted).
        old: the object before the change (None for Added).
        node: for Bound, the node the pod was bound to.
        message: for Unschedulable, the FitError message.
        trace: the trace carrier of the protocol request that made the change (not stored).
    """

    revision: int
    type: EventType
    kind: str
    namespace: str
    name: str
    object: KubeObject
    old: KubeObject | None = None
    node: str = ""
    message: str = ""
    trace: dict[str, str] | None = None


class Committed(_Mail, frozen=True, kw_only=True):
    """The changes of one commit, in revision order; ``revision`` is the last one's."""

    revision: int
    changes: list[Change]


class Recovered(_Mail, frozen=True, kw_only=True):
    """Sent once to every subscriber before any Committed: the store's whole state at
    ``revision`` (nodes first, then the other kinds, pods last; each kind in name order)."""

    revision: int
    objects: list[KubeObject]


# --------------------------------------------------------------------------- writes


class StoreFailure(_Mail, frozen=True, kw_only=True):
    """A request the store refused, whole: nothing of it was written.

    Attributes:
        code: the ErrorReply code (invalid, not_found, conflict, gone, unavailable, ...).
        message: a one-line summary naming the object(s) and rule.
        errors: one entry per rejected object (writes).
        revision: for ``gone``, the oldest revision still kept.
        leader: for ``not_leader``, the address of the replica that leads (None: none now).
    """

    code: ErrorCode
    message: str
    errors: list[ObjectError] = []
    revision: int | None = None
    leader: str | None = None


class WriteResult(_Mail, frozen=True, kw_only=True):
    """A committed write: ``objects`` in request order (puts first, then deletes)."""

    revision: int
    objects: list[ObjectStatus]


class WriteObjects(_Mail, frozen=True, kw_only=True):
    """Create-or-replace ``puts`` and delete ``deletes`` in one atomic transaction.

    Answered with :class:`WriteResult` once committed, or :class:`StoreFailure` (nothing
    written) when any object breaks a rule.
    """

    puts: list[KubeObject] = []
    deletes: list[ObjectRef] = []
    reply: trio.MemorySendChannel[WriteResult | StoreFailure]
    trace: dict[str, str] | None = None


class Binding(_Mail, frozen=True, kw_only=True):
    """Podium's decision for one pod, committed with its volume bindings in one transaction.

    Attributes:
        namespace, name, uid: the pod (the uid guards against a pod deleted and re-created).
        node: where it goes.
        volumes: claim key (``namespace/name``) -> PersistentVolume name to bind it to.
        provisions: claim keys to annotate ``volume.kubernetes.io/selected-node: <node>``.
        group: the pod group (``namespace/name``) this binding is all-or-nothing with: the
            bindings of one :class:`BindPods` that name the same group commit together, in
            one transaction, or none of them does ("": a lone pod, committed on its own).
    """

    namespace: str
    name: str
    uid: str
    node: str
    volumes: dict[str, str] = {}
    provisions: list[str] = []
    group: str = ""


class BindFailure(_Mail, frozen=True, kw_only=True):
    """A binding the store refused (pod gone, re-created, already bound; node gone; volume
    taken); the others of its batch still commit, but for the members of its pod group.

    When one member of a group is refused, none of the group is bound: that member's failure
    says why (its own code and message), each other member's names the group and that member
    (``pod group ml/train: not bound, because ml/worker-3 could not be: ...``, the same code).
    """

    binding: Binding
    code: ErrorCode
    message: str


class BindResult(_Mail, frozen=True, kw_only=True):
    """The batch is committed: every binding not in ``failed`` is durable and published."""

    revision: int
    failed: list[BindFailure] = []
    commit_seconds: float = 0.0


class BindPods(_Mail, frozen=True, kw_only=True):
    """Commit a batch of bindings (each Bound change published only after the commit).

    A lone binding commits or fails on its own; the bindings naming one pod group
    (:attr:`Binding.group`) commit all or none, in the same durable commit (so after a crash
    either every member is bound or none is). A group is applied where its first member
    stands in ``bindings``, its members in their order. All-or-nothing holds within one
    message: a group's members sent in two BindPods are two groups to the store.
    """

    bindings: list[Binding]
    reply: trio.MemorySendChannel[BindResult | StoreFailure]


class RecordUnschedulable(_Mail, frozen=True, kw_only=True):
    """Record that a pending pod's attempt failed with ``message`` (no reply).

    Written (pod condition PodScheduled=False, reason Unschedulable, and an Unschedulable
    change) only when the message differs from the last one recorded for that pod, and only
    while the pod with ``uid`` exists and is unbound.
    """

    namespace: str
    name: str
    uid: str
    message: str


class Victim(_Mail, frozen=True, kw_only=True):
    """A pod to evict: the uid guards against a pod deleted and re-created since; ``node``,
    the node it is bound to ("": the preemptor's; a placed gang evicted whole has members on
    other nodes, issue 24)."""

    namespace: str
    name: str
    uid: str
    node: str = ""


class EvictResult(_Mail, frozen=True, kw_only=True):
    """The eviction is committed.

    Attributes:
        revision: the store revision after it.
        evicted: the ``namespace/name`` of each victim actually evicted, in request order (a
            victim already gone, re-created or no longer on the node is skipped).
        nominated: whether the preemptor's ``status.nominatedNodeName`` was written (False when
            it already was ``node``).
    """

    revision: int
    evicted: list[str] = []
    nominated: bool = False


class Preemptor(_Mail, frozen=True, kw_only=True):
    """One more preemptor of an :class:`Evict`: a member of the first one's pod group,
    nominated to ``node`` with its ``victims`` evicted there (none: only nominated)."""

    namespace: str
    name: str
    uid: str
    node: str
    victims: list[Victim] = []


class Evict(_Mail, frozen=True, kw_only=True):
    """Evict a preemptor's victims and nominate it to ``node``, in one transaction.

    The preemptor (``namespace``, ``name``, ``uid``) must exist with that uid and be unbound,
    else ``StoreFailure(code="conflict")`` and nothing is written. Each victim that still exists
    with its uid and is bound to ``node`` (or to its own ``Victim.node``) is deleted with a Preempted change (``node`` the node,
    ``message`` naming the preemptor); the others are skipped. Then the preemptor's
    ``status.nominatedNodeName`` becomes ``node`` ("" clears it) with a Modified change, when
    that changes it. Answered with :class:`EvictResult` once committed.

    ``group``: the other members of the preemptor's pod group (issue 24), each checked,
    evicted for and nominated as the preemptor is, in the same transaction: a gang's
    preemption evicts all its victims and nominates every member it placed, or (one member
    gone, re-created or bound) nothing at all.
    """

    namespace: str
    name: str
    uid: str
    node: str
    victims: list[Victim] = []
    group: list[Preemptor] = []
    reply: trio.MemorySendChannel[EvictResult | StoreFailure]


# --------------------------------------------------------------------------- reads


class ReadResult(_Mail, frozen=True, kw_only=True):
    """Objects sorted by (namespace, name), the revision they reflect, and (a page) how many
    matching objects follow them (None: some, not counted)."""

    revision: int
    items: list[KubeObject]
    remaining: int | None = 0


class ReadObjects(_Mail, frozen=True, kw_only=True):
    """Read one object (``name``) or list a kind, optionally by namespace and selector.

    ``namespace`` None means every namespace (a read by name then looks in ``default``).
    A read by name of a missing object answers ``StoreFailure(code="not_found")``; an unknown
    kind ``StoreFailure(code="invalid")``. A list can be read a page at a time: the first
    ``limit`` objects (0: all) whose (namespace, name) sorts after ``after``.
    """

    kind: str
    name: str = ""
    namespace: str | None = None
    selector: LabelSelector | None = None
    after: tuple[str, str] | None = None
    limit: int = 0
    reply: trio.MemorySendChannel[ReadResult | StoreFailure]


class EventsResult(_Mail, frozen=True, kw_only=True):
    """The retained changes with revision > the request's ``after``, and the current revision.

    ``more``: a page of the log on disk (at most the request's ``limit`` changes): ask again
    after its last change. False: every change up to ``revision`` is here (the core's memory
    answered), so a watch joins the hub at ``revision``."""

    revision: int
    changes: list[Change]
    more: bool = False


class ReadEvents(_Mail, frozen=True, kw_only=True):
    """Changes after revision ``after``; ``StoreFailure(code="gone", revision=oldest kept)`` when
    some were compacted away, ``invalid`` when ``after`` is beyond the current revision."""

    after: int
    reply: trio.MemorySendChannel[EventsResult | StoreFailure]
    limit: int = 0
    """At most this many changes from the log on disk, read off the store's loop (0: all of
    them); the core's memory is answered whole."""


class StoreStats(_Mail, frozen=True, kw_only=True):
    """The store's counts; ``leading`` is False on a follower replica, whose ``leader`` is the
    leader's address (None when unknown or not under leader election)."""

    revision: int
    oldest_revision: int
    objects: dict[str, int]
    bound_pods: int
    leading: bool = True
    leader: str | None = None


class ReadStats(_Mail, frozen=True, kw_only=True):
    reply: trio.MemorySendChannel[StoreStats]


StoreMsg: TypeAlias = (
    WriteObjects | BindPods | RecordUnschedulable | Evict | ReadObjects | ReadEvents | ReadStats
)
Published: TypeAlias = Recovered | Committed
