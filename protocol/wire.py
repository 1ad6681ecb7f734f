"""The client <-> daemon messages: handshake, requests, replies, watch events and errors.

Every message is a msgspec Struct tagged by its ``msg`` field, so one typed decoder reads any
of them and a ``match`` dispatches on the class. Framing (the 4-byte length prefix, the size
limit, the msgpack/JSON codecs) lives in :mod:`podium.protocol.framing`; docs/protocol.md
describes the whole exchange for authors of clients in other languages, and
``podium protocol schema`` prints the JSON Schema of every message here.

The exchange (docs/protocol.md)::

    client                                   daemon
    Hello{protocol: 1, encoding}   ──JSON──▶
                                   ◀──JSON── HelloReply{protocol, server_version, revision}
    Put{id: 1, objects}            ────────▶
    Watch{id: 2, from_revision}    ────────▶
                                   ◀──────── WatchReply{id: 2, revision}
                                   ◀──────── PutReply{id: 1, revision, objects}
                                   ◀──────── Event{id: 2, revision, type: "Bound", ...}
    Cancel{id: 3, target: 2}       ────────▶
                                   ◀──────── CancelReply{id: 3}

Replies may come out of order; each carries the ``id`` of its request. A request that fails
gets ``ErrorReply{id, code, message, path?, revision?, errors?}`` instead of its reply.

Schema evolution follows msgspec's rules: new fields get defaults, no field changes type.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

import msgspec

from podium.protocol.errors import ErrorCode
from podium.protocol.objects import KubeObject, Pod

__all__ = [
    "PROTOCOL_VERSION",
    "Cancel",
    "CancelReply",
    "ClientMessage",
    "Delete",
    "DeleteReply",
    "Encoding",
    "ErrorReply",
    "Event",
    "EventFrame",
    "EventType",
    "Explain",
    "ExplainGroupReply",
    "ExplainReply",
    "Get",
    "GetReply",
    "GroupPlacement",
    "Hello",
    "HelloReply",
    "Hint",
    "NodeVerdict",
    "ObjectError",
    "ObjectRef",
    "ObjectStatus",
    "PendingCounts",
    "Placement",
    "PriorityWeight",
    "Put",
    "PutReply",
    "ReloadPolicy",
    "ReloadPolicyReply",
    "Reply",
    "Request",
    "ServerMessage",
    "Simulate",
    "SimulateReply",
    "Stats",
    "StatsReply",
    "Watch",
    "WatchReply",
]

PROTOCOL_VERSION = 1

RequestId = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
Revision = Annotated[int, msgspec.Meta(ge=0)]
Encoding = Literal["msgpack", "json"]
EventType = Literal["Added", "Modified", "Deleted", "Bound", "Unschedulable", "Preempted"]
"""Added/Modified/Deleted for every kind; Bound when Podium binds a pod (the object carries
``spec.nodeName``); Unschedulable when an attempt fails with a new FitError message; Preempted
when a pod is evicted to make room for a higher-priority one."""


class _Message(msgspec.Struct, tag_field="msg", frozen=True, kw_only=True):
    """Base of every wire message: the ``msg`` field names the message (``"put"``), leaving
    ``kind`` to the Kubernetes objects inside."""


# --------------------------------------------------------------------------- handshake


class Hello(_Message, tag="hello", frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The client's first frame, always JSON.

    Attributes:
        protocol: the protocol version the client speaks (1).
        encoding: how every later frame, both ways, is encoded.
        token: an access token, for listeners that require one.
    """

    protocol: int
    encoding: Encoding = "msgpack"
    token: str | None = None


class HelloReply(_Message, tag="hello_reply", frozen=True, kw_only=True):
    """The daemon's first frame, always JSON: its protocol, version and current revision."""

    protocol: int
    server_version: str
    revision: Revision


# --------------------------------------------------------------------------- shared parts


class ObjectRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Names one object. ``namespace`` is ignored for cluster-scoped kinds (Node, PV, ...) and
    defaults to ``default`` for namespaced ones."""

    kind: str
    name: Annotated[str, msgspec.Meta(min_length=1)]
    namespace: str = ""


class ObjectStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What a put or delete did to one object, in request order."""

    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str
    action: Literal["created", "replaced", "unchanged", "deleted"]


class ObjectError(msgspec.Struct, frozen=True, kw_only=True):
    """Why one object of a request was rejected.

    Attributes:
        index: the object's position in the request.
        kind, namespace, name: the object, as far as it could be read.
        path: the offending field, msgspec style (``$.spec.containers[0].resources``).
        message: the rule that was broken.
    """

    index: int
    kind: str
    namespace: str
    name: str
    path: str | None
    message: str


class NodeVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One examined node in an explanation: whether the pod fits, why not, how it scored."""

    fits: bool
    reasons: list[str] = []
    scores: dict[str, int] = {}
    total: int | None = None


class Placement(msgspec.Struct, frozen=True, kw_only=True):
    """Where a pod goes (or why it cannot go anywhere): ``podium simulate``'s per-pod entry.

    Attributes:
        namespace, name: the pod.
        node: the chosen node, or None.
        message: the FitError text (or the error) when ``node`` is None.
        attempts: scheduling attempts so far (1 for a simulate request); 0 for a bound pod,
            whose attempts are not kept (the queue forgets a pod once it is bound).
        nodes: every examined node, in walk order, with its verdict (explain only).
        preempted: ``NS/NAME`` of the pods this pod would evict or evicted.
        bound: ``explain`` of a pod already bound to ``node`` (by Podium or by its client):
            nothing was examined.
    """

    namespace: str
    name: str
    node: str | None
    message: str | None
    attempts: int = 0
    nodes: dict[str, NodeVerdict] = {}
    preempted: list[str] = []
    bound: bool = False


class Hint(msgspec.Struct, frozen=True, kw_only=True):
    """What would make a pending pod fit: ``missing`` more ``resource`` on ``nodes`` nodes
    (e.g. ``needs 200m more cpu on 3 nodes``).

    ``is_beyond_every_node``: the pod asks more ``resource`` than any node's allocatable, so
    no node can ever hold it, however many pods leave (Kubernetes' ``Unresolvable``
    insufficient resource); ``missing`` is then how much its request exceeds the largest
    allocatable, which ``nodes`` nodes have.
    """

    resource: str
    missing: str
    nodes: int
    is_beyond_every_node: bool = False


class GroupPlacement(msgspec.Struct, frozen=True, kw_only=True):
    """A pod group's dry run (``podium explain podgroup/NS/NAME``): its members decided one
    after another as its next attempt would decide them, all or nothing.

    Attributes:
        namespace, name: the group.
        policy: ``gang`` (all or nothing), ``basic`` (its pods are ordinary pods), or None
            when the group does not exist.
        min_count: its minCount (None: not a gang).
        bound: its members bound to nodes.
        needed: how many of its pending members must fit together (``min_count - bound``;
            0 when none must).
        fit: how many of them fit now, one after another.
        placed: whether the group as a whole would be placed now.
        waiting: the members wait for the group's quorum (``message`` says why): none is
            decided.
        message: what each member would be told when the group is not placed (the quorum
            message, or ``pod group ml/train: 6 of 8 members fit, minCount 8; ...``).
        members: each member's verdict: a bound one (``bound``), a pending one (the node it
            would go to, or its FitError, every examined node with its verdict, and the pods
            the group's preemption would evict for it).
        blocking: ``NS/NAME`` of the pending members that did not fit.
        hints: per blocking member, what would make it fit.
        preempted: every pod the group's preemption would evict (none unless evicting them
            places the whole group).
    """

    namespace: str
    name: str
    policy: Literal["gang", "basic"] | None
    min_count: int | None
    bound: int
    needed: int
    fit: int
    placed: bool
    waiting: bool = False
    message: str | None = None
    members: list[Placement] = []
    blocking: list[str] = []
    hints: dict[str, list[Hint]] = {}
    preempted: list[str] = []


class PriorityWeight(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    weight: int


class PendingCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Pending pods by queue, as ``scheduler_pending_pods{queue}`` counts them."""

    active: int
    backoff: int
    unschedulable: int


# --------------------------------------------------------------------------- requests


class Request(_Message, frozen=True, kw_only=True):
    """Base of requests: ``id`` is chosen by the client and echoed by the reply."""

    id: RequestId


class Put(Request, tag="put", frozen=True, kw_only=True):
    """Create or replace objects (by kind, namespace and name), atomically: all or none.

    A replace keeps the uid; the daemon assigns uid, resourceVersion and creationTimestamp.
    Answered by :class:`PutReply` once the write is durable.
    """

    objects: Annotated[list[KubeObject], msgspec.Meta(min_length=1)]


class Delete(Request, tag="delete", frozen=True, kw_only=True):
    """Delete objects atomically; a missing one fails the request with ``not_found``."""

    refs: Annotated[list[ObjectRef], msgspec.Meta(min_length=1)]


class Get(Request, tag="get", frozen=True, kw_only=True):
    """Read one object (``name`` set) or list a kind, whole or a page at a time.

    Attributes:
        kind: an object kind (``Pod``, ``Node``, ...).
        name: one object; empty to list.
        namespace: for namespaced kinds; None lists every namespace (a get by name reads
            ``default`` then).
        label_selector: Kubernetes selector syntax: ``app=web,tier!=db,env in (a,b),!legacy``.
        limit: a list's page size: at most this many items, and a ``continue`` token when
            more follow (0: every item in one reply, which may be ``too_large``).
        continue_: (``continue`` on the wire) the token of the previous page's reply, to
            read the next page of the same list.
    """

    kind: str
    name: str = ""
    namespace: str | None = None
    label_selector: str = ""
    limit: Annotated[int, msgspec.Meta(ge=0)] = 0
    continue_: str = msgspec.field(default="", name="continue")


class Watch(Request, tag="watch", frozen=True, kw_only=True):
    """Stream events after ``from_revision`` (None: from now) until cancelled.

    A revision older than the retained log is answered ``gone`` with the oldest revision kept:
    list again, then watch from the list's revision. ``kinds`` limits the stream (empty: all).
    """

    from_revision: Revision | None = None
    kinds: list[str] = []


class Cancel(Request, tag="cancel", frozen=True, kw_only=True):
    """Stop the watch whose request id is ``target``."""

    target: RequestId


class Explain(Request, tag="explain", frozen=True, kw_only=True):
    """Why is this pending pod pending: every node's reasons and scores, and hints.

    ``kind`` ``PodGroup``: the same for a pod group's members, decided as the group's next
    attempt would decide them, answered with :class:`ExplainGroupReply`.
    """

    name: Annotated[str, msgspec.Meta(min_length=1)]
    namespace: str = "default"
    kind: Literal["Pod", "PodGroup"] = "Pod"


class Simulate(Request, tag="simulate", frozen=True, kw_only=True):
    """Where would this pod go now? Nothing is stored, assumed or bound."""

    pod: Pod
    explain: bool = False


class ReloadPolicy(Request, tag="reload_policy", frozen=True, kw_only=True):
    """Read the configured policy file again and decide with it from the next attempt on."""


class Stats(Request, tag="stats", frozen=True, kw_only=True):
    """Counts of objects, queues and attempts."""


# --------------------------------------------------------------------------- replies


class Reply(_Message, frozen=True, kw_only=True):
    """Base of replies: ``id`` is the request's."""

    id: RequestId


class PutReply(Reply, tag="put_reply", frozen=True, kw_only=True):
    revision: Revision
    objects: list[ObjectStatus]


class DeleteReply(Reply, tag="delete_reply", frozen=True, kw_only=True):
    revision: Revision
    objects: list[ObjectStatus]


class GetReply(Reply, tag="get_reply", frozen=True, kw_only=True):
    """The objects (sorted by namespace, then name) and the revision they reflect: a watch from
    that revision misses nothing.

    A page of a list (the request had a ``limit``) also has ``continue``, the token for the next
    page ("" on the last), and ``remaining``, how many matching items follow it now (null with
    a label selector, as Kubernetes' ``remainingItemCount``: counting would match the rest).
    Each page is read when it is asked for; every page of one list carries its first page's
    revision, so a watch from it sees every change made while the pages were read.
    """

    revision: Revision
    items: list[KubeObject]
    continue_: str = msgspec.field(default="", name="continue")
    remaining: int | None = 0


class WatchReply(Reply, tag="watch_reply", frozen=True, kw_only=True):
    """The watch is established; events after ``revision`` follow as :class:`Event`."""

    revision: Revision


class Event(Reply, tag="event", frozen=True, kw_only=True):
    """One change, streamed to the watch whose request id is ``id``.

    Attributes:
        revision: the change's revision; strictly increasing within a watch.
        type: what happened (see :data:`EventType`).
        kind, namespace, name: the object.
        object: the object after the change (before it, for Deleted/Preempted).
        node: the node a Bound pod went to, or the node a Preempted pod was evicted from.
        message: the FitError text of an Unschedulable event; the preemptor of a Preempted one.
    """

    revision: Revision
    type: EventType
    kind: str
    namespace: str
    name: str
    object: KubeObject | None = None
    node: str = ""
    message: str = ""


class EventFrame(Reply, tag="event", frozen=True, kw_only=True):
    """An :class:`Event` as the daemon writes it, its object already encoded (``msgspec.Raw``
    in the connection's encoding), so every watch of one change shares that encoding. Encode
    only; the bytes equal the :class:`Event`'s."""

    revision: Revision
    type: EventType
    kind: str
    namespace: str
    name: str
    object: msgspec.Raw | None = None
    node: str = ""
    message: str = ""


class CancelReply(Reply, tag="cancel_reply", frozen=True, kw_only=True):
    pass


class ExplainReply(Reply, tag="explain_reply", frozen=True, kw_only=True):
    """The answer to an ``explain`` of a pod.

    ``group``: for a pod of a gang (or of a group that does not exist), the group's
    explanation as ``explain podgroup/NS/NAME`` answers it (the quorum it waits for, or its
    next attempt: the members that block it and what would help). A pending member that
    attempt decides is judged there: ``placement`` and ``hints`` are its entry in ``group``.
    """

    revision: Revision
    placement: Placement
    hints: list[Hint] = []
    group: GroupPlacement | None = None


class ExplainGroupReply(Reply, tag="explain_group_reply", frozen=True, kw_only=True):
    """The answer to an ``explain`` of ``kind`` ``PodGroup``."""

    revision: Revision
    group: GroupPlacement


class SimulateReply(Reply, tag="simulate_reply", frozen=True, kw_only=True):
    revision: Revision
    placement: Placement


class ReloadPolicyReply(Reply, tag="reload_policy_reply", frozen=True, kw_only=True):
    """The predicates (in run order) and weighted priorities now in force."""

    predicates: list[str]
    priorities: list[PriorityWeight]
    warnings: list[str] = []


class StatsReply(Reply, tag="stats_reply", frozen=True, kw_only=True):
    """A snapshot of the daemon's counts.

    Attributes:
        ready: recovery is done and every actor is running.
        nodes, pods: objects stored; bound: pods with a node; assumed: pods assumed, bind pending.
        pending: pods waiting, by queue.
        scheduled, unschedulable, errors: scheduling attempts by result since start.
        connections, watchers: open protocol connections and watches.
        leading: whether this daemon leads (always, but for a follower replica under leader
            election, which schedules nothing and answers writes ``not_leader``).
        leader: under leader election, the protocol address of the replica that leads
            (None: none now, or no election).
    """

    revision: Revision
    ready: bool
    nodes: int
    pods: int
    bound: int
    assumed: int
    pending: PendingCounts
    scheduled: int
    unschedulable: int
    errors: int
    connections: int
    watchers: int
    uptime_seconds: float
    leading: bool = True
    leader: str | None = None


class ErrorReply(Reply, tag="error", frozen=True, kw_only=True):
    """A request failed (or a frame could not be read: then ``id`` is -1 and the connection is
    closed after this frame).

    Attributes:
        code: invalid, not_found, conflict, gone, too_large, unauthorized, forbidden,
            overloaded, unavailable, internal or not_leader (a write sent to a
            replica that does not lead: ``leader`` names the one that does).
        message: what went wrong, naming the object and rule.
        path: the offending field of a single-object error.
        revision: for ``gone``, the oldest revision still kept; for a watch cut off as too
            slow (``overloaded``), the revision to resume from.
        errors: one entry per rejected object of a put or delete.
        leader: for ``not_leader``, the protocol address of the replica that leads (None:
            no replica leads at the moment; retry shortly).
    """

    id: Annotated[int, msgspec.Meta(ge=-1, le=2**63 - 1)]
    code: ErrorCode
    message: str
    path: str | None = None
    revision: int | None = None
    errors: list[ObjectError] = []
    leader: str | None = None


ClientMessage: TypeAlias = (
    Put | Delete | Get | Watch | Cancel | Explain | Simulate | ReloadPolicy | Stats
)
"""Every request a client may send after the handshake."""

ServerMessage: TypeAlias = (
    PutReply
    | DeleteReply
    | GetReply
    | WatchReply
    | Event
    | CancelReply
    | ExplainReply
    | ExplainGroupReply
    | SimulateReply
    | ReloadPolicyReply
    | StatsReply
    | ErrorReply
)
"""Every frame the daemon sends after the handshake."""
