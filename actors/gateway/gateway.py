"""The gateway: protocol connections, framing, request dispatch, and the watch hub.

Kubernetes counterpart: the API server's side of the scheduler's world (a client's write, a
list, a watch from a resourceVersion, 410 Gone) — Podium speaks its own typed protocol
(docs/protocol.md) instead of HTTP.

A connection is three kinds of task in its own nursery: the reader (frames in, one task per
request so replies may come out of order), the writer (frames out, batched into one
``send_all``), and one forwarder per watch. A frame that cannot be read (malformed, over the
size limit) is answered with ``ErrorReply{id: -1}`` and closes only its own connection; a
request that decodes but does not validate is answered with its id and the field's path.

The watch hub is the gateway's subscription to the store's published stream: it keeps the
recent changes in a ring and hands each change to the watches that want it. A watch from a
revision first reads the retained log from the store, then joins the hub at the store's answer;
the ring fills whatever the hub saw in between, so nothing is lost or repeated. A watch whose
buffer fills (a client that does not read) is cut off with ``overloaded`` and the revision to
resume from, so it never grows memory or slows scheduling: the hub never waits for a watch.

Limits (``podium:`` keys, docs/protocol.md "Limits"): ``maxFrameBytes``; ``maxConnections``
(one more is told ``unavailable: connection limit N reached`` in place of its HelloReply and
closed); ``maxInFlightPerConnection`` (requests other than watches; the reader stops reading
until one finishes, so TCP pushes back); ``maxWatchers`` (over every connection; one more is
answered ``overloaded``); ``watchBuffer`` (events a watch may have waiting: a watch with events
waiting whose next commit would take it past the buffer is cut off; a commit handed to a watch
with none waiting is taken whole, so one large put does not cut off a watcher that keeps up).

Access (docs/protocol.md "Access"): with ``tokens``, a connection from a listener that is not
``tokenless`` must present one of them in its hello, else it is answered ``unauthorized`` and
closed before it can read or write anything; a read-only token's put, delete and
reload_policy are answered ``forbidden``. TLS is the listener's business (serve.py wraps the
TCP listener in trio's SSLListener); a failed TLS handshake is logged and ends only its own
connection.

Owns: connections, watches and their positions, the ring of recent changes.
Mailbox (hub): :class:`~podium.store.mail.Recovered`, :class:`~podium.store.mail.Committed`,
:class:`AddWatch`, :class:`RemoveWatch`.
Emits: store reads and writes; ExplainPod, ReloadPlugins, SchedulerStats (scheduler); Lookup,
QueueStats (queue); CacheStats (cache).

Metrics: ``podium_protocol_connections``, ``podium_protocol_requests_total{type}`` (the
request's wire tag), ``podium_protocol_errors_total{type, code}`` (``frame`` for a frame or
hello that could not be read, or a request that did not decode), ``podium_watchers`` and
``podium_watcher_lag_revisions`` (the largest hub revision minus the last revision a watch's
forwarder delivered, set at each Committed).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import itertools
import logging
import math
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar, assert_never

import msgspec
import trio
from prometheus_client import Counter

from podium.actors.core.explain import placement
from podium.actors.core.generic_scheduler import ScheduleResult
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.mail import (
    CacheStats,
    CacheStatsReply,
    Explained,
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
from podium.actors.tracing import DISABLED, Tracing
from podium.protocol import metrics
from podium.protocol.config import READ_ONLY_REQUESTS, AccessToken, authenticate
from podium.protocol.errors import (
    ErrorCode,
    FrameTooLarge,
    InvalidObject,
    InvalidRequest,
    MalformedFrame,
    PodiumError,
)
from podium.protocol.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    Codec,
    FrameReader,
    decode_hello,
    encode_hello,
    frame,
)
from podium.protocol.labels import parse_selector
from podium.protocol.objects import KINDS, Pod, PriorityClass, enc_hook
from podium.protocol.wire import (
    PROTOCOL_VERSION,
    Cancel,
    CancelReply,
    ClientMessage,
    Delete,
    DeleteReply,
    ErrorReply,
    Event,
    EventFrame,
    Explain,
    ExplainReply,
    Get,
    GetReply,
    HelloReply,
    PendingCounts,
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
    WatchReply,
)
from podium.store.admission import admit_pod, known_classes
from podium.store.mail import (
    Change,
    Committed,
    EventsResult,
    ReadEvents,
    ReadObjects,
    ReadResult,
    ReadStats,
    Recovered,
    StoreFailure,
    StoreStats,
    WriteObjects,
    WriteResult,
)
from podium.store.mailbox import reply, send

__all__ = ["AddWatch", "Gateway", "HubMsg", "RemoveWatch", "WatchCursor"]

log = logging.getLogger("podium.gateway")

T = TypeVar("T")

ENCODED_OBJECTS = 8192
"""Committed objects whose encodings are kept for the watches still sending them."""

RING = 65_536
"""Recent changes the hub keeps, to fill the gap between a watch's read of the log and its
joining the hub."""
WATCH_BUFFER = 4096
"""Default ``podium.watchBuffer``: events a watch may have waiting before it is cut off as too
slow."""
MAX_CONNECTIONS = 1024
"""Default ``podium.maxConnections``."""
IN_FLIGHT = 256
"""Default ``podium.maxInFlightPerConnection``: requests one connection may have in progress at
once (watches aside: they are bounded by ``maxWatchers``)."""
MAX_WATCHERS = 1024
"""Default ``podium.maxWatchers``: watches open at once, over every connection."""
HANDSHAKE_SECONDS = 10.0
GOODBYE_SECONDS = 1.0
REJECT_SECONDS = 1.0
"""How long a connection over the limit is given to send its hello before it is told why it
is refused (reading the hello first spares the client a reset that would hide the message)."""
MAX_REJECTING = 64
"""Connections over the limit being told so at once; any more are closed without a word."""


@dataclass(eq=False, slots=True)
class WatchCursor:
    """The last revision a watch's forwarder delivered (written by the forwarder, read by the
    hub for ``podium_watcher_lag_revisions``; both run in the gateway's own tasks)."""

    delivered: int = 0


@dataclass(eq=False, slots=True)
class _Watch:
    kinds: frozenset[str]
    position: int
    channel: trio.MemorySendChannel[Change]
    cursor: WatchCursor | None = None
    handed: int = 0  # the revision of the last change put in ``channel``


class AddWatch(msgspec.Struct, frozen=True, kw_only=True):
    """Join the hub: deliver changes after ``position`` (None: from the hub's revision)."""

    key: tuple[int, int]
    position: int | None
    kinds: frozenset[str]
    channel: trio.MemorySendChannel[Change]
    reply: trio.MemorySendChannel[int | None]
    cursor: WatchCursor | None = None


class RemoveWatch(msgspec.Struct, frozen=True, kw_only=True):
    key: tuple[int, int]


HubMsg: TypeAlias = Recovered | Committed | AddWatch | RemoveWatch


def event_of(watch_id: int, change: Change) -> Event:
    """The wire event of one committed change."""
    return Event(
        id=watch_id,
        revision=change.revision,
        type=change.type,
        kind=change.kind,
        namespace=change.namespace,
        name=change.name,
        object=change.object,
        node=change.node,
        message=change.message,
    )


_OBJECT_ENCODERS: dict[str, Any] = {
    "msgpack": msgspec.msgpack.Encoder(enc_hook=enc_hook),
    "json": msgspec.json.Encoder(enc_hook=enc_hook),
}
"""The same encoders the connections' codecs use (``protocol/framing.py``)."""


class EncodedObjects:
    """Each committed object encoded once per encoding and shared by every watch sending it:
    with 20 watchers, encoding every Pod for each of them was the daemon's largest cost.

    Holds the last :data:`ENCODED_OBJECTS` (object, encoding) pairs; an object is kept beside
    its bytes, so a recycled ``id()`` never answers another object's bytes.
    """

    def __init__(self, size: int = ENCODED_OBJECTS) -> None:
        self._size = size
        self._raw: collections.OrderedDict[tuple[int, str], tuple[object, msgspec.Raw]] = (
            collections.OrderedDict()
        )

    def frame(self, encoding: str, watch_id: int, change: Change) -> bytes:
        """The payload of ``change``'s event for watch ``watch_id``, equal to encoding
        :func:`event_of` with the connection's codec."""
        obj = change.object
        raw = None
        if obj is not None:
            key = (id(obj), encoding)
            hit = self._raw.get(key)
            if hit is not None and hit[0] is obj:
                raw = hit[1]
            else:
                raw = msgspec.Raw(_OBJECT_ENCODERS[encoding].encode(obj))
                self._raw[key] = (obj, raw)
                if len(self._raw) > self._size:
                    self._raw.popitem(last=False)
        payload: bytes = _OBJECT_ENCODERS[encoding].encode(
            EventFrame(
                id=watch_id,
                revision=change.revision,
                type=change.type,
                kind=change.kind,
                namespace=change.namespace,
                name=change.name,
                object=raw,
                node=change.node,
                message=change.message,
            )
        )
        return payload


class _Hub:
    """The watch hub's state (owned by the hub task).

    Args:
        watch_buffer: events a watch may have waiting (``podium.watchBuffer``).
    """

    def __init__(self, watch_buffer: int = WATCH_BUFFER) -> None:
        self.revision = 0
        self.ready = trio.Event()
        self.ring: collections.deque[Change] = collections.deque(maxlen=RING)
        self.watches: dict[tuple[int, int], _Watch] = {}
        self.watch_buffer = watch_buffer

    def _room(self, watch: _Watch, changes: Sequence[Change] | collections.deque[Change]) -> bool:
        """Whether ``watch`` may take the changes it wants of ``changes``: always when nothing
        is waiting for its forwarder (a commit is taken whole), else while the waiting events
        stay within the buffer."""
        waiting = watch.channel.statistics().current_buffer_used
        if not waiting:
            return True
        position, kinds = watch.position, watch.kinds
        wanted = sum(1 for c in changes if c.revision > position and (not kinds or c.kind in kinds))
        return waiting + wanted <= self.watch_buffer

    def _deliver(self, watch: _Watch, change: Change) -> bool:
        if change.revision <= watch.position:
            return True
        if not watch.kinds or change.kind in watch.kinds:
            try:
                watch.channel.send_nowait(change)
            except trio.WouldBlock:
                return False
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return False
            watch.handed = change.revision
        watch.position = change.revision
        return True

    def lag(self) -> int:
        """The largest (hub revision - last revision delivered) over the watches: a watch
        whose forwarder has taken everything handed to it is as far as its position."""
        worst = 0
        for watch in self.watches.values():
            cursor = watch.cursor
            if cursor is None or cursor.delivered >= watch.handed:
                behind = self.revision - watch.position
            else:
                behind = self.revision - cursor.delivered
            worst = max(worst, behind)
        return worst

    def committed(self, msg: Committed) -> None:
        # The ring serves watchers only: the previous object and the trace carrier are dead
        # weight there (65 536 of them).
        self.ring.extend(
            c
            if c.old is None and c.trace is None
            else msgspec.structs.replace(c, old=None, trace=None)
            for c in msg.changes
        )
        self.revision = max(self.revision, msg.revision)
        for key, watch in list(self.watches.items()):
            if not (
                self._room(watch, msg.changes) and all(self._deliver(watch, c) for c in msg.changes)
            ):
                # Too slow (or gone): cut it off; its forwarder reports where to resume.
                watch.channel.close()
                del self.watches[key]

    def add(self, msg: AddWatch) -> int | None:
        """Register a watch; answer its starting position, or None when the ring no longer
        reaches back to it (the watcher must read the log again)."""
        position = self.revision if msg.position is None else msg.position
        watch = _Watch(msg.kinds, position, msg.channel, msg.cursor)
        if position < self.revision:
            if self.ring and self.ring[0].revision > position + 1:
                return None
            # A new watch has nothing waiting: it takes the whole gap (references into the
            # ring), so a watcher that resumes while the daemon is busy still gets in.
            for change in self.ring:
                if change.revision > position and not self._deliver(watch, change):
                    return None
            watch.position = max(watch.position, position)
        self.watches[msg.key] = watch
        return position

    def remove(self, key: tuple[int, int]) -> None:
        watch = self.watches.pop(key, None)
        if watch is not None:
            watch.channel.close()


class Gateway:
    """The gateway actor.

    Args:
        hub_inbox: the hub's mailbox (a subscriber of the store's published stream).
        hub: a sender into it, for the connections' AddWatch/RemoveWatch (closed on stop).
        handles: the runtime's mailboxes (the gateway closes them when it stops).
        server_version: reported in HelloReply.
        max_frame_bytes: the largest frame accepted (``podium.maxFrameBytes``).
        max_connections: connections open at once (``podium.maxConnections``).
        max_in_flight: requests other than watches one connection may have in progress
            (``podium.maxInFlightPerConnection``).
        max_watchers: watches open at once, over every connection (``podium.maxWatchers``).
        watch_buffer: events a watch may have waiting (``podium.watchBuffer``).
        tokens: the access tokens (``podium.tokenFile``), or None: no token is asked for.
        tracing: a span per Put, carried with its write so pod attempts link to it.
    """

    def __init__(
        self,
        hub_inbox: trio.MemoryReceiveChannel[HubMsg],
        hub: trio.MemorySendChannel[HubMsg],
        handles: Handles,
        *,
        server_version: str,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_connections: int = MAX_CONNECTIONS,
        max_in_flight: int = IN_FLIGHT,
        max_watchers: int = MAX_WATCHERS,
        watch_buffer: int = WATCH_BUFFER,
        tokens: Sequence[AccessToken] | None = None,
        tracing: Tracing = DISABLED,
    ) -> None:
        self._tracing = tracing
        self._hub_inbox = hub_inbox
        self._hub_tx = hub
        self._handles = handles
        self._server_version = server_version
        self._max_frame_bytes = max_frame_bytes
        self._max_connections = max_connections
        self._max_in_flight = max_in_flight
        self._max_watchers = max_watchers
        self._watch_buffer = watch_buffer
        self._tokens = tuple(tokens) if tokens is not None else None
        self._hub = _Hub(watch_buffer)
        self.encoded = EncodedObjects()
        self._ids = itertools.count(1)
        self._started = trio.current_time()
        self._listen_scope = trio.CancelScope()
        self._connections: set[_Connection] = set()
        self._rejecting = 0
        self._stopping = False

    @property
    def revision(self) -> int:
        return self._hub.revision

    @property
    def ready(self) -> bool:
        """Whether the hub has the store's recovered state (readiness)."""
        return self._hub.ready.is_set()

    def watch_count(self) -> int:
        """Watches open over every connection (a watch cut off whose error its client has not
        read yet still counts: it still holds its buffer)."""
        return sum(len(conn.watches) for conn in self._connections)

    async def run(
        self,
        listeners: Sequence[trio.abc.Listener[trio.abc.Stream]],
        *,
        tokenless: Sequence[trio.abc.Listener[trio.abc.Stream]] = (),
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve ``listeners`` until :meth:`stop`; started once the store's state is in.

        ``tokenless`` listeners (the Unix socket, guarded by its file mode) serve too, and
        their connections need no token even when the gateway has tokens.
        """
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._run_hub)
            await self._hub.ready.wait()
            async with trio.open_nursery() as conns:
                with self._listen_scope:
                    async with trio.open_nursery() as accepting:
                        for listener in listeners:
                            accepting.start_soon(self._accept, listener, conns, True)
                        for listener in tokenless:
                            accepting.start_soon(self._accept, listener, conns, False)
                        task_status.started()
                # stop(): listeners are closed; every connection is told why, then ends.
                for conn in list(self._connections):
                    conn.close("podium is shutting down")
            await self._hub_tx.aclose()
            await self._handles.aclose()

    def set_tokens(self, tokens: Sequence[AccessToken]) -> int:
        """Replace the access tokens (the token file was read again).

        New connections must present one of ``tokens``. A connection whose token is no longer
        there (or has another role now) is closed with ``unauthorized``: a revoked token
        reads and writes nothing more. Returns how many connections were closed.
        """
        self._tokens = tuple(tokens)
        kept = {(entry.token, entry.role) for entry in self._tokens}
        closed = 0
        for conn in list(self._connections):
            token = conn.token
            if token is not None and (token.token, token.role) not in kept:
                log.warning(
                    "connection %d from %s: token %s was revoked: closing it",
                    conn.conn_id,
                    conn.peer,
                    token.name,
                )
                conn.close(
                    f"token {token.name!r} was revoked (the token file was reloaded)",
                    code="unauthorized",
                )
                closed += 1
        return closed

    def stop(self) -> None:
        """Stop accepting; close every connection with ``unavailable: podium is shutting down``."""
        self._stopping = True
        self._listen_scope.cancel("podium is shutting down")

    # ------------------------------------------------------------------ hub

    async def _run_hub(self) -> None:
        hub = self._hub
        async with self._hub_inbox:
            async for msg in self._hub_inbox:
                match msg:
                    case Recovered():
                        hub.revision = msg.revision
                        hub.ready.set()
                    case Committed():
                        hub.committed(msg)
                        metrics.WATCHER_LAG.set(hub.lag())
                    case AddWatch():
                        reply(msg.reply, hub.add(msg))
                    case RemoveWatch():
                        hub.remove(msg.key)
                    case _:
                        assert_never(msg)
                metrics.WATCHERS.set(len(hub.watches))
        for watch in hub.watches.values():
            watch.channel.close()
        metrics.WATCHERS.set(0)
        metrics.WATCHER_LAG.set(0)

    # ------------------------------------------------------------------ connections

    async def _accept(
        self,
        listener: trio.abc.Listener[trio.abc.Stream],
        nursery: trio.Nursery,
        token_required: bool,
    ) -> None:
        async with listener:
            while True:
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    # EMFILE and friends: wait a little rather than spin (trio's serve_listeners).
                    log.error("accept failed: %s", exc)
                    await trio.sleep(0.1)
                    continue
                if len(self._connections) >= self._max_connections:
                    nursery.start_soon(self._reject, stream)
                else:
                    # Counted here, not when its task starts: a burst of accepts cannot
                    # overshoot the limit.
                    nursery.start_soon(
                        self._connection, self._open(stream, token_required=token_required)
                    )

    def _open(self, stream: trio.abc.Stream, *, token_required: bool = False) -> _Connection:
        conn = _Connection(
            self,
            next(self._ids),
            stream,
            in_flight=trio.Semaphore(self._max_in_flight),
            token_required=token_required and self._tokens is not None,
            peer=_peer(stream),
        )
        self._connections.add(conn)
        metrics.PROTOCOL_CONNECTIONS.inc()
        return conn

    async def _connection(self, conn: _Connection) -> None:
        stream = conn.stream
        if self._stopping:
            conn.close("podium is shutting down")
        try:
            try:
                async with stream:
                    await conn.serve()
            except* (trio.BrokenResourceError, trio.ClosedResourceError) as group:
                tls = _tls_failure(group)
                if tls is not None and conn.codec is None and not isinstance(tls, ssl.SSLEOFError):
                    # Before the hello: a plain-text client, a wrong CA, a TLS version the
                    # daemon refuses. Later TLS errors are a peer that left without close_notify.
                    log.warning(
                        "connection %d from %s: TLS handshake failed (%s); closed",
                        conn.conn_id,
                        conn.peer,
                        tls,
                    )
                else:
                    log.debug("connection %d: the peer went away", conn.conn_id)
        except Exception:
            log.exception("connection %d failed", conn.conn_id)
        finally:
            self._connections.discard(conn)
            metrics.PROTOCOL_CONNECTIONS.dec()

    async def _reject(self, stream: trio.abc.Stream) -> None:
        """Refuse a connection over ``max_connections``: read its hello (briefly), answer
        ``unavailable`` in its place, close."""
        if self._rejecting >= MAX_REJECTING:
            await trio.aclose_forcefully(stream)
            return
        self._rejecting += 1
        limit = self._max_connections
        log.warning("connection limit %d reached; a new connection was refused", limit)
        _count_error("frame", "unavailable")
        error = ErrorReply(
            id=-1,
            code="unavailable",
            message=(
                f"connection limit {limit} reached (podium.maxConnections); "
                "retry later or raise the limit"
            ),
        )
        try:
            with trio.move_on_after(REJECT_SECONDS) as scope:
                reader = FrameReader(self._max_frame_bytes)
                while reader.next_frame() is None:
                    data = await stream.receive_some(65536)
                    if not data:
                        break
                    reader.feed(data)
                await stream.send_all(frame(encode_hello(error)))
            if scope.cancelled_caught:
                await trio.aclose_forcefully(stream)
            else:
                with trio.move_on_after(GOODBYE_SECONDS):
                    await stream.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError, PodiumError):
            await trio.aclose_forcefully(stream)
        finally:
            self._rejecting -= 1

    # ------------------------------------------------------------------ requests

    async def ask(self, channel: trio.MemorySendChannel[Any], make: Any) -> Any:
        """Send ``make(reply=...)`` to ``channel`` and wait for the one answer."""
        answer_to, answer = trio.open_memory_channel[Any](1)
        await send(channel, make(reply=answer_to))
        return await answer.receive()

    async def handle(self, conn: _Connection, msg: ClientMessage) -> ServerMessage | None:
        """Answer one request (watches answer through their own stream and return None)."""
        h = self._handles
        match msg:
            case Put():
                # A Put's span is what the attempts of the pods it submits link to.
                with self._tracing.request_span("Put", {"podium.objects": len(msg.objects)}):
                    trace = self._tracing.inject()
                    result = await self.ask(
                        h.store, lambda **kw: WriteObjects(puts=msg.objects, trace=trace, **kw)
                    )
                return _written(msg.id, result, PutReply)
            case Delete():
                result = await self.ask(h.store, lambda **kw: WriteObjects(deletes=msg.refs, **kw))
                return _written(msg.id, result, DeleteReply)
            case Get():
                try:
                    selector = parse_selector(msg.label_selector) if msg.label_selector else None
                except ValueError as exc:
                    return ErrorReply(
                        id=msg.id, code="invalid", message=str(exc), path="$.label_selector"
                    )
                first: tuple[int, tuple[str, str]] | None = None
                if msg.continue_:
                    try:
                        first = _read_continue(msg)
                    except ValueError as exc:
                        return ErrorReply(
                            id=msg.id, code="invalid", message=str(exc), path="$.continue"
                        )
                read = await self.ask(
                    h.store,
                    lambda **kw: ReadObjects(
                        kind=msg.kind,
                        name=msg.name,
                        namespace=msg.namespace,
                        selector=selector,
                        after=first[1] if first else None,
                        limit=msg.limit,
                        **kw,
                    ),
                )
                if isinstance(read, StoreFailure):
                    failed = _failure(msg.id, read)
                    # The store refuses only an unknown kind as invalid: name the field.
                    if read.code == "invalid":
                        failed = msgspec.structs.replace(failed, path="$.kind")
                    return failed
                assert isinstance(read, ReadResult)
                revision = first[0] if first else read.revision
                token = ""
                if read.remaining != 0:
                    last = read.items[-1].metadata
                    token = _continue_token(revision, msg.kind, (last.namespace, last.name))
                return GetReply(
                    id=msg.id,
                    revision=revision,
                    items=read.items,
                    continue_=token,
                    remaining=read.remaining,
                )
            case Watch():
                await conn.watch(msg)
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
                pod = msg.pod
                if not pod.metadata.namespace:
                    meta = msgspec.structs.replace(pod.metadata, namespace="default")
                    pod = msgspec.structs.replace(pod, metadata=meta)
                admitted = await self._admit(msg.id, pod)
                if isinstance(admitted, ErrorReply):
                    return admitted
                pod = admitted
                explained: Explained = await self.ask(
                    h.scheduler,
                    lambda **kw: ExplainPod(pod=PodInfo(pod), explain=msg.explain, **kw),
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
            case ReloadPolicy():
                reloaded: Reloaded = await self.ask(h.scheduler, lambda **kw: ReloadPlugins(**kw))
                if reloaded.error is not None:
                    return ErrorReply(id=msg.id, code="invalid", message=reloaded.error)
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

    async def _admit(self, request_id: int, pod: Pod) -> Pod | ErrorReply:
        """The pod with the priority a put would give it (store/admission.py, over the stored
        classes), or the refusal a put would get (its path under the request's ``pod``)."""
        read = await self.ask(
            self._handles.store, lambda **kw: ReadObjects(kind="PriorityClass", **kw)
        )
        if isinstance(read, StoreFailure):
            return _failure(request_id, read)
        assert isinstance(read, ReadResult)
        classes = known_classes(c for c in read.items if isinstance(c, PriorityClass))
        try:
            return admit_pod(pod, classes)
        except InvalidObject as exc:
            # The pod is the request's ``pod``: its field is named from the request.
            path = None if exc.path is None else "$.pod" + exc.path.removeprefix("$")
            return ErrorReply(id=request_id, code=exc.code, message=exc.message, path=path)

    async def _explain(self, msg: Explain) -> ServerMessage:
        h = self._handles
        read = await self.ask(
            h.store,
            lambda **kw: ReadObjects(kind="Pod", name=msg.name, namespace=msg.namespace, **kw),
        )
        if isinstance(read, StoreFailure):
            return _failure(msg.id, read)
        assert isinstance(read, ReadResult)
        pod = read.items[0]
        assert isinstance(pod, Pod)
        info = PodInfo(pod)
        looked: LookupReply = await self.ask(h.queue, lambda **kw: Lookup(key=info.key, **kw))
        if pod.spec.node_name:
            return ExplainReply(
                id=msg.id,
                revision=read.revision,
                placement=placement(
                    info,
                    ScheduleResult(node=pod.spec.node_name),
                    attempts=looked.attempts,
                    explain=False,
                ),
            )
        explained: Explained = await self.ask(
            h.scheduler, lambda **kw: ExplainPod(pod=info, explain=True, **kw)
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
        )

    async def _stats(self, msg: Stats) -> StatsReply:
        h = self._handles
        store: StoreStats = await self.ask(h.store, lambda **kw: ReadStats(**kw))
        queue: QueueStatsReply = await self.ask(h.queue, lambda **kw: QueueStats(**kw))
        cache: CacheStatsReply = await self.ask(h.cache, lambda **kw: CacheStats(**kw))
        sched: SchedulerStatsReply = await self.ask(h.scheduler, lambda **kw: SchedulerStats(**kw))
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
            connections=len(self._connections),
            watchers=len(self._hub.watches),
            uptime_seconds=trio.current_time() - self._started,
        )


_REQUESTS: dict[str, Counter] = {}
_ERRORS: dict[tuple[str, str], Counter] = {}


def _request_type(msg: ClientMessage) -> str:
    """The request's wire tag (``put``, ``watch``, ...), the ``type`` label."""
    return str(type(msg).__struct_config__.tag)


def _count_request(kind: str) -> None:
    child = _REQUESTS.get(kind)
    if child is None:
        child = _REQUESTS[kind] = metrics.PROTOCOL_REQUESTS.labels(type=kind)
    child.inc()


def _count_error(kind: str, code: str) -> None:
    child = _ERRORS.get((kind, code))
    if child is None:
        child = _ERRORS[kind, code] = metrics.PROTOCOL_ERRORS.labels(type=kind, code=code)
    child.inc()


def _tls_failure(group: BaseExceptionGroup[BaseException]) -> ssl.SSLError | None:
    """The TLS error behind a broken stream (trio's SSLStream raises BrokenResourceError from
    the ssl module's error), or None when the peer simply went away."""
    for exc in group.exceptions:
        cause = exc.__cause__
        if isinstance(cause, ssl.SSLError):
            return cause
        if isinstance(exc, BaseExceptionGroup) and (inner := _tls_failure(exc)) is not None:
            return inner
    return None


def _peer(stream: trio.abc.Stream) -> str:
    """The peer's address, for logs (``unix`` for a Unix socket, ``?`` when unknown)."""
    while isinstance(stream, trio.SSLStream):
        stream = stream.transport_stream
    sock = getattr(stream, "socket", None)
    if sock is None:
        return "?"
    try:
        name = sock.getpeername()
    except OSError:
        return "?"
    if isinstance(name, tuple) and len(name) >= 2:
        host, port = name[0], name[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return "unix"


_CONTINUE = msgspec.msgpack.Decoder(tuple[int, int, str, str, str])
"""A continue token: (format 1, the list's revision, kind, last namespace, last name)."""


def _continue_token(revision: int, kind: str, last: tuple[str, str]) -> str:
    """The opaque token for the page after the one ending at ``last``."""
    raw = msgspec.msgpack.encode((1, revision, kind, *last))
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _read_continue(msg: Get) -> tuple[int, tuple[str, str]]:
    """The list's revision and the key its next page starts after.

    Raises:
        ValueError: the token is not one Podium made for this kind of list.
    """
    if msg.name:
        raise ValueError("a read by name is one object: it has no pages to continue")
    try:
        text = msg.continue_ + "=" * (-len(msg.continue_) % 4)
        version, revision, kind, namespace, name = _CONTINUE.decode(
            base64.urlsafe_b64decode(text.encode("ascii"))
        )
    except (ValueError, msgspec.DecodeError):
        raise ValueError(
            "not a continue token (pass the `continue` of the previous page's reply)"
        ) from None
    if version != 1 or revision < 0:
        raise ValueError("not a continue token this daemon made")
    if kind != msg.kind:
        raise ValueError(f"the continue token is for a list of {kind}, not of {msg.kind}")
    return revision, (namespace, name)


def _failure(request_id: int, failure: StoreFailure) -> ErrorReply:
    return ErrorReply(
        id=request_id,
        code=failure.code,
        message=failure.message,
        path=failure.errors[0].path if len(failure.errors) == 1 else None,
        revision=failure.revision,
        errors=failure.errors,
    )


def _written(
    request_id: int, result: WriteResult | StoreFailure, kind: type[PutReply] | type[DeleteReply]
) -> ServerMessage:
    if isinstance(result, StoreFailure):
        return _failure(request_id, result)
    return kind(id=request_id, revision=result.revision, objects=result.objects)


OUTBOX_PER_REQUEST = 4
"""A connection's outbox holds this many frames per request it may have in flight (1024 by
default); a watch forwarder waits when it is full, so a client that does not read fills its
watch's buffer and is cut off."""


@dataclass(eq=False)
class _Connection:
    gateway: Gateway
    conn_id: int
    stream: trio.abc.Stream
    codec: Codec | None = None
    outbox: trio.MemorySendChannel[bytes] | None = None
    watches: dict[int, trio.CancelScope] = field(default_factory=dict)
    closing: str | None = None
    closing_code: ErrorCode = "unavailable"
    in_flight: trio.Semaphore = field(default_factory=lambda: trio.Semaphore(IN_FLIGHT))
    read_scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    token_required: bool = False
    token: AccessToken | None = None
    """The token the hello presented (None where none is asked for: then read-write)."""
    peer: str = "?"
    """The peer's address, for logs."""

    def close(self, reason: str, code: ErrorCode = "unavailable") -> None:
        """End the connection: stop reading and serving, tell the client ``reason``."""
        self.closing = reason
        self.closing_code = code
        self.read_scope.cancel(reason)

    async def serve(self) -> None:
        reader = FrameReader(self.gateway._max_frame_bytes)
        outbox, pending = trio.open_memory_channel[bytes](
            OUTBOX_PER_REQUEST * self.gateway._max_in_flight
        )
        self.outbox = outbox
        async with trio.open_nursery() as outer:
            fatal: ErrorReply | None = None
            async with trio.open_nursery() as requests:
                with self.read_scope:
                    self.codec = await self._handshake(reader)
                    if self.codec is not None:
                        outer.start_soon(self._write, pending)
                        fatal = await self._read(reader, self.codec, requests)
                if fatal is None and self.closing is None:
                    # The client closed its side: every request it sent still gets its
                    # answer; only the watches (which never end by themselves) stop.
                    for scope in list(self.watches.values()):
                        scope.cancel()
                else:
                    requests.cancel_scope.cancel()
            if self.codec is None:
                # No handshake, so no encoding to speak: _handshake already said why.
                pending.close()
                outbox.close()
                return
            if self.closing is not None:
                fatal = ErrorReply(id=-1, code=self.closing_code, message=self.closing)
            if fatal is not None:
                _count_error("frame", fatal.code)
                await self.send(fatal)
            # The writer flushes what is queued, then ends; a peer that reads nothing gets
            # GOODBYE_SECONDS.
            outbox.close()
            outer.cancel_scope.deadline = trio.current_time() + GOODBYE_SECONDS

    async def _receive_frame(self, reader: FrameReader) -> bytes | None:
        while True:
            payload = reader.next_frame()
            if payload is not None:
                return payload
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            reader.feed(data)

    async def _handshake(self, reader: FrameReader) -> Codec | None:
        error: ErrorReply | None = None
        with trio.move_on_after(HANDSHAKE_SECONDS):
            try:
                payload = await self._receive_frame(reader)
                if payload is None:
                    return None
                hello = decode_hello(payload)
                if hello.protocol != PROTOCOL_VERSION:
                    error = ErrorReply(
                        id=-1,
                        code="invalid",
                        message=(
                            f"protocol {hello.protocol} is not supported; "
                            f"this daemon speaks {PROTOCOL_VERSION}"
                        ),
                        path="$.protocol",
                    )
                elif (refusal := self._authenticate(hello.token)) is not None:
                    error = refusal
                else:
                    welcome = HelloReply(
                        protocol=PROTOCOL_VERSION,
                        server_version=self.gateway._server_version,
                        revision=self.gateway.revision,
                    )
                    await self.stream.send_all(frame(encode_hello(welcome)))
                    return Codec(hello.encoding)
            except InvalidRequest as exc:
                error = ErrorReply(id=-1, code="invalid", message=exc.message, path=exc.path)
            except (MalformedFrame, FrameTooLarge) as exc:
                error = ErrorReply(id=-1, code=exc.code, message=str(exc))
        if error is None:
            error = ErrorReply(
                id=-1, code="invalid", message=f"no hello within {HANDSHAKE_SECONDS:g} seconds"
            )
        _count_error("frame", error.code)
        await self.stream.send_all(frame(encode_hello(error)))
        return None

    def _authenticate(self, presented: str | None) -> ErrorReply | None:
        """Check the hello's token where one is required; the refusal, or None to go on."""
        tokens = self.gateway._tokens
        if not self.token_required or tokens is None:
            return None
        self.token = authenticate(tokens, presented)
        if self.token is not None:
            log.debug(
                "connection %d from %s: token %s (%s)",
                self.conn_id,
                self.peer,
                self.token.name,
                self.token.role,
            )
            return None
        why = "no token was given" if not presented else "the token is not valid"
        log.warning("connection %d from %s: refused: %s", self.conn_id, self.peer, why)
        return ErrorReply(
            id=-1,
            code="unauthorized",
            message=f"this listener requires an access token and {why}",
            path="$.token",
        )

    def _forbidden(self, msg: ClientMessage) -> ErrorReply | None:
        """A read-only token's put, delete or reload_policy: the refusal. (Read-only tokens
        may make the requests listed, so a request type added later is refused to them until
        it is listed.)"""
        token = self.token
        if token is None or not token.read_only:
            return None
        kind = _request_type(msg)
        if kind in READ_ONLY_REQUESTS:
            return None
        return ErrorReply(
            id=msg.id,
            code="forbidden",
            message=(
                f"token {token.name!r} is read-only: {kind} is not allowed "
                f"(a read-only token may {', '.join(READ_ONLY_REQUESTS)})"
            ),
        )

    async def _write(self, pending: trio.MemoryReceiveChannel[bytes]) -> None:
        async with pending:
            while True:
                try:
                    frames = [await pending.receive()]
                except trio.EndOfChannel:
                    return
                while len(frames) < 256:
                    try:
                        frames.append(pending.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                await self.stream.send_all(b"".join(frames))

    async def send(self, msg: ServerMessage) -> None:
        """Queue one frame for the writer (waits while the outbox is full).

        A reply larger than the frame limit (a list of a huge kind) is replaced by a
        ``too_large`` error: the client could not read it.
        """
        assert self.codec is not None and self.outbox is not None
        payload = self.codec.encode(msg)
        limit = self.gateway._max_frame_bytes
        if len(payload) > limit and not isinstance(msg, ErrorReply):
            payload = self.codec.encode(
                ErrorReply(
                    id=msg.id,
                    code="too_large",
                    message=(
                        f"the reply would be {len(payload)} bytes, over the {limit}-byte frame "
                        "limit; read a list in pages (a get's limit and continue), narrow it "
                        "(a namespace, a label selector) or raise podium.maxFrameBytes"
                    ),
                )
            )
        await self.send_payload(payload)

    async def send_payload(self, payload: bytes) -> None:
        """Queue one encoded message for the writer (waits while the outbox is full)."""
        assert self.outbox is not None
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await send(self.outbox, frame(payload))

    async def _read(
        self, reader: FrameReader, codec: Codec, requests: trio.Nursery
    ) -> ErrorReply | None:
        """Read requests until the peer closes (None) or framing is lost (the error to send)."""
        while True:
            try:
                payload = await self._receive_frame(reader)
            except (MalformedFrame, FrameTooLarge) as exc:
                return ErrorReply(id=-1, code=exc.code, message=str(exc))
            if payload is None:
                return None
            try:
                msg = codec.decode_request(payload)
            except InvalidRequest as exc:
                _count_error("frame", "invalid")
                await self.send(
                    ErrorReply(
                        id=exc.request_id, code="invalid", message=exc.message, path=exc.path
                    )
                )
                continue
            except MalformedFrame as exc:
                return ErrorReply(id=-1, code="invalid", message=str(exc))
            _count_request(_request_type(msg))
            if (refusal := self._forbidden(msg)) is not None:
                _count_error(_request_type(msg), refusal.code)
                await self.send(refusal)
                continue
            if isinstance(msg, Watch):
                if msg.id in self.watches:
                    _count_error("watch", "conflict")
                    await self.send(
                        ErrorReply(
                            id=msg.id,
                            code="conflict",
                            message=f"a watch with id {msg.id} is already open on this connection",
                            path="$.id",
                        )
                    )
                    continue
                limit = self.gateway._max_watchers
                if self.gateway.watch_count() >= limit:
                    _count_error("watch", "overloaded")
                    await self.send(
                        ErrorReply(
                            id=msg.id,
                            code="overloaded",
                            message=(
                                f"watcher limit {limit} reached (podium.maxWatchers); "
                                "retry later or raise the limit"
                            ),
                        )
                    )
                    continue
                self.watches[msg.id] = trio.CancelScope()
                # A watch holds no in-flight slot: it lasts, and maxWatchers bounds it.
                requests.start_soon(self._request, msg, False)
                continue
            # At most max_in_flight requests at once: a client that pipelines without
            # reading waits here (and TCP pushes back) instead of growing the daemon's memory.
            await self.in_flight.acquire()
            requests.start_soon(self._request, msg, True)

    async def _request(self, msg: ClientMessage, counted: bool) -> None:
        try:
            answer = await self._answer(msg)
        finally:
            if counted:
                self.in_flight.release()
        if answer is not None:
            if isinstance(answer, ErrorReply):
                _count_error(_request_type(msg), answer.code)
            await self.send(answer)

    async def _answer(self, msg: ClientMessage) -> ServerMessage | None:
        try:
            return await self.gateway.handle(self, msg)
        except PodiumError as exc:
            return ErrorReply(id=msg.id, code=exc.code, message=str(exc))
        except Exception as exc:
            log.exception("request %s %d failed", type(msg).__name__, msg.id)
            return ErrorReply(id=msg.id, code="internal", message=f"internal error: {exc}")

    # ------------------------------------------------------------------ watches

    async def watch(self, msg: Watch) -> None:
        """Serve one watch until it is cancelled, cut off, or the connection ends.

        The reader registered the watch's cancel scope before this task started, so a Cancel
        sent right behind the Watch finds it (request tasks start in no set order).
        """
        scope = self.watches.get(msg.id)
        if scope is None:
            return
        key = (self.conn_id, msg.id)
        try:
            with scope:
                await self._join(msg, key)
        finally:
            self.watches.pop(msg.id, None)
            # Always: a watch cancelled while joining or streaming is still in the hub (a
            # RemoveWatch for a key the hub never saw is harmless).
            with trio.CancelScope(shield=True):
                await send(self.gateway._hub_tx, RemoveWatch(key=key))

    async def _join(self, msg: Watch, key: tuple[int, int]) -> int | None:
        """Register with the hub and stream; the position joined at, or None if it never was."""
        gateway = self.gateway
        unknown = sorted(set(msg.kinds) - set(KINDS))
        if unknown:
            await self._watch_error(
                ErrorReply(
                    id=msg.id,
                    code="invalid",
                    message=f"unknown kind {unknown[0]!r}; known: {', '.join(sorted(KINDS))}",
                    path="$.kinds",
                )
            )
            return None
        kinds = frozenset(msg.kinds)
        backlog: list[Change] = []
        position: int | None = None
        if msg.from_revision is not None:
            after = msg.from_revision
            events = await gateway.ask(
                gateway._handles.store, lambda **kw: ReadEvents(after=after, **kw)
            )
            if isinstance(events, StoreFailure):
                # Beyond the current revision (invalid) or compacted (gone): the field is
                # from_revision.
                failed = msgspec.structs.replace(_failure(msg.id, events), path="$.from_revision")
                await self._watch_error(failed)
                return None
            assert isinstance(events, EventsResult)
            backlog = [c for c in events.changes if not kinds or c.kind in kinds]
            position = events.revision
        # Unbounded: the hub counts what waits here against podium.watchBuffer and cuts the
        # watch off rather than ever wait for it.
        changes_to, changes = trio.open_memory_channel[Change](math.inf)
        cursor = WatchCursor(delivered=msg.from_revision or 0)
        joined: int | None = await gateway.ask(
            gateway._hub_tx,
            lambda **kw: AddWatch(
                key=key, position=position, kinds=kinds, channel=changes_to, cursor=cursor, **kw
            ),
        )
        if joined is None:
            # Nothing was sent yet (not even the log's backlog): resume where the client
            # asked to start.
            changes_to.close()
            await self._watch_error(
                ErrorReply(
                    id=msg.id,
                    code="overloaded",
                    message=(
                        f"the daemon moved on too fast; resume from revision {msg.from_revision}"
                    ),
                    revision=msg.from_revision,
                )
            )
            return None
        last = msg.from_revision if msg.from_revision is not None else joined
        cursor.delivered = last
        await self.send(WatchReply(id=msg.id, revision=last))
        assert self.codec is not None  # a watch runs only after the handshake
        encoded, encoding = gateway.encoded, self.codec.encoding
        for change in backlog:
            await self.send_payload(encoded.frame(encoding, msg.id, change))
            last = cursor.delivered = change.revision
        async with changes:
            async for change in changes:
                await self.send_payload(encoded.frame(encoding, msg.id, change))
                last = cursor.delivered = change.revision
        # The hub let go of us: we were too slow, or the daemon is stopping.
        if gateway._stopping:
            end = ErrorReply(
                id=msg.id, code="unavailable", message="podium is shutting down", revision=last
            )
        else:
            end = ErrorReply(
                id=msg.id,
                code="overloaded",
                message=(
                    f"watch fell more than {gateway._watch_buffer} events behind "
                    f"(podium.watchBuffer); resume from revision {last}"
                ),
                revision=last,
            )
        await self._watch_error(end)
        return joined

    async def _watch_error(self, error: ErrorReply) -> None:
        _count_error("watch", error.code)
        await self.send(error)

    def cancel(self, watch_id: int) -> bool:
        """Stop the watch ``watch_id`` (its stream simply ends); False if there is none."""
        scope = self.watches.get(watch_id)
        if scope is None:
            return False
        scope.cancel()
        return True
