"""The gateway actor: the daemon's listeners, their connections, and the watch hub.

Kubernetes counterpart: the API server's side of the scheduler's world (a client's write, a
list, a watch from a resourceVersion, 410 Gone) — Podium speaks its own typed protocol
(docs/protocol.md) instead of HTTP.

The actor accepts connections on its listeners and runs the hub task; the rest of the package
serves them, a module per part::

    gateway.py     this actor: accept, the connection limit, the hub task, tokens, stop
    connection.py  one connection: the hello, frames in and out, the outbox, requests in flight
    object_limit.py  a put's objects over ``maxObjectBytes``, refused before the store
    access.py      tokens, what a read-only token may ask, TLS failures, peer addresses
    dispatch.py    every request kind, answered from the store, queue, cache and scheduler
    watch.py       the watch hub, the watches it feeds, the shared encodings of their events
    paging.py      continue tokens
    replies.py     the store's answers as wire replies
    counters.py    the protocol counters

Limits (``podium:`` keys, docs/protocol.md "Limits"): ``maxConnections`` (one more is told
``unavailable: connection limit N reached`` in place of its HelloReply and closed);
``maxHandshakes`` (one more connection without a hello closes the oldest such);
``maxFrameBytes``, ``maxObjectBytes`` (object_limit.py), ``maxInFlightPerConnection``, ``maxWatchers``, ``maxOutboxBytes``,
``maxBufferedBytes`` and ``handshakeTimeoutSeconds`` (connection.py); ``watchBuffer``
(watch.py).

Access (docs/protocol.md "Access", access.py): with ``tokens``, a connection from a listener
that is not ``tokenless`` must present one of them in its hello; a token revoked by a reload of
the token file closes the connections that presented it.

Owns: connections, watches and their positions, the ring of recent changes.
Mailbox (hub): :class:`~podium.store.mail.Recovered`, :class:`~podium.store.mail.Committed`,
:class:`~podium.actors.gateway.watch.AddWatch`, :class:`~podium.actors.gateway.watch.RemoveWatch`.
Emits: store reads and writes; ExplainPod, ExplainGroup, ReloadPlugins, SchedulerStats
(scheduler); Lookup, QueueStats (queue); CacheStats (cache).

Metrics: ``podium_protocol_connections``, ``podium_protocol_requests_total{type}`` (the
request's wire tag), ``podium_protocol_errors_total{type, code}`` (``frame`` for a frame or
hello that could not be read, or a request that did not decode), ``podium_watchers`` and
``podium_watcher_lag_revisions`` (the largest hub revision minus the last revision a watch's
forwarder delivered, set at each Committed).
"""

from __future__ import annotations

import itertools
import logging
import ssl
from collections.abc import Sequence
from typing import assert_never

import trio

from podium.actors.gateway.access import peer_address, tls_failure
from podium.actors.gateway.connection import (
    BUFFERED_BYTES,
    GOODBYE_SECONDS,
    HANDSHAKE_SECONDS,
    OUTBOX_BYTES,
    Connection,
    Outboxes,
    receive_frame,
)
from podium.actors.gateway.counters import count_error
from podium.actors.gateway.dispatch import Dispatcher
from podium.actors.gateway.watch import (
    WATCH_BUFFER,
    AddWatch,
    Hub,
    HubMsg,
    RemoveWatch,
    Watches,
)
from podium.actors.mail.messages import Handles
from podium.actors.runtime.mailbox import reply
from podium.actors.runtime.tracing import DISABLED, Tracing
from podium.protocol import metrics
from podium.protocol.config import DEFAULT_MAX_OBJECT_BYTES, AccessToken
from podium.protocol.errors import PodiumError
from podium.protocol.framing import DEFAULT_MAX_FRAME_BYTES, FrameReader, encode_hello, frame
from podium.protocol.wire import ClientMessage, ErrorReply, ServerMessage
from podium.store.mail import Committed, Recovered

__all__ = ["IN_FLIGHT", "MAX_CONNECTIONS", "MAX_HANDSHAKES", "MAX_WATCHERS", "Gateway"]

log = logging.getLogger("podium.gateway")

MAX_CONNECTIONS = 1024
"""Default ``podium.maxConnections``."""
IN_FLIGHT = 256
"""Default ``podium.maxInFlightPerConnection``: requests one connection may have in progress at
once (watches aside: they are bounded by ``maxWatchers``)."""
MAX_WATCHERS = 1024
"""Default ``podium.maxWatchers``: watches open at once, over every connection."""
MAX_HANDSHAKES = 64
"""Default ``podium.maxHandshakes``: connections accepted that have not sent their hello yet;
one more closes the oldest of them (a crowd of silent sockets holds at most this many slots,
each for ``handshakeTimeoutSeconds`` at most)."""
REJECT_SECONDS = 1.0
"""How long a connection over the limit is given to send its hello before it is told why it
is refused (reading the hello first spares the client a reset that would hide the message)."""
MAX_REJECTING = 64
"""Connections over the limit being told so at once; any more are closed without a word."""


class Gateway:
    """The gateway actor (the :class:`~podium.actors.gateway.connection.Server` of its
    connections).

    Args:
        hub_inbox: the hub's mailbox (a subscriber of the store's published stream).
        hub: a sender into it, for the connections' AddWatch/RemoveWatch (closed on stop).
        handles: the runtime's mailboxes (the gateway closes them when it stops).
        server_version: reported in HelloReply.
        max_frame_bytes: the largest frame accepted (``podium.maxFrameBytes``).
        max_object_bytes: the largest object a put may store (``podium.maxObjectBytes``).
        max_connections: connections open at once (``podium.maxConnections``).
        max_in_flight: requests other than watches one connection may have in progress
            (``podium.maxInFlightPerConnection``).
        max_watchers: watches open at once, over every connection (``podium.maxWatchers``).
        watch_buffer: events a watch may have waiting (``podium.watchBuffer``).
        max_outbox_bytes: bytes one connection may have waiting to be written
            (``podium.maxOutboxBytes``).
        max_buffered_bytes: the same over every connection (``podium.maxBufferedBytes``).
        handshake_seconds: how long a new connection has to send its hello
            (``podium.handshakeTimeoutSeconds``).
        max_handshakes: connections without a hello yet; one more closes the oldest
            (``podium.maxHandshakes``).
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
        max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES,
        max_connections: int = MAX_CONNECTIONS,
        max_in_flight: int = IN_FLIGHT,
        max_watchers: int = MAX_WATCHERS,
        watch_buffer: int = WATCH_BUFFER,
        max_outbox_bytes: int = OUTBOX_BYTES,
        max_buffered_bytes: int = BUFFERED_BYTES,
        handshake_seconds: float = HANDSHAKE_SECONDS,
        max_handshakes: int = MAX_HANDSHAKES,
        tokens: Sequence[AccessToken] | None = None,
        tracing: Tracing = DISABLED,
    ) -> None:
        self._hub_inbox = hub_inbox
        self._hub_tx = hub
        self._handles = handles
        self._server_version = server_version
        self._max_frame_bytes = max_frame_bytes
        self._max_object_bytes = max_object_bytes
        self._max_connections = max_connections
        self._max_in_flight = max_in_flight
        self._max_watchers = max_watchers
        self._max_outbox_bytes = max_outbox_bytes
        self._outboxes = Outboxes(max_buffered_bytes)
        self._handshake_seconds = handshake_seconds
        self._max_handshakes = max_handshakes
        # Connections without a hello yet, oldest first (a dict keeps insertion order).
        self._handshaking: dict[Connection, None] = {}
        self._tokens = tuple(tokens) if tokens is not None else None
        self._hub = Hub(watch_buffer)
        self._ids = itertools.count(1)
        self._listen_scope = trio.CancelScope()
        self._connections: set[Connection] = set()
        self._rejecting = 0
        self._stopping = False
        watches = Watches(
            handles.store, hub, watch_buffer=watch_buffer, stopping=lambda: self._stopping
        )
        self._dispatch = Dispatcher(
            handles,
            self._hub,
            watches,
            connections=lambda: len(self._connections),
            started=trio.current_time(),
            tracing=tracing,
        )

    # ------------------------------------------------------------------ what connections read

    @property
    def server_version(self) -> str:
        return self._server_version

    @property
    def revision(self) -> int:
        return self._hub.revision

    @property
    def tokens(self) -> tuple[AccessToken, ...] | None:
        return self._tokens

    @property
    def max_frame_bytes(self) -> int:
        return self._max_frame_bytes

    @property
    def max_object_bytes(self) -> int:
        return self._max_object_bytes

    @property
    def max_in_flight(self) -> int:
        return self._max_in_flight

    @property
    def max_watchers(self) -> int:
        return self._max_watchers

    @property
    def max_outbox_bytes(self) -> int:
        return self._max_outbox_bytes

    @property
    def outboxes(self) -> Outboxes:
        return self._outboxes

    @property
    def handshake_seconds(self) -> float:
        return self._handshake_seconds

    def greeted(self, conn: Connection) -> None:
        self._handshaking.pop(conn, None)

    @property
    def ready(self) -> bool:
        """Whether the hub has the store's recovered state (readiness)."""
        return self._hub.ready.is_set()

    def watch_count(self) -> int:
        """Watches open over every connection (a watch cut off whose error its client has not
        read yet still counts: it still holds its buffer)."""
        return sum(len(conn.watches) for conn in self._connections)

    async def handle(self, conn: Connection, msg: ClientMessage) -> ServerMessage | None:
        """Answer one request (dispatch.py)."""
        return await self._dispatch.handle(conn, msg)

    # ------------------------------------------------------------------ the actor

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

    def _open(self, stream: trio.abc.Stream, *, token_required: bool) -> Connection:
        conn = Connection(
            self,
            next(self._ids),
            stream,
            token_required=token_required and self._tokens is not None,
            peer=peer_address(stream),
        )
        self._connections.add(conn)
        metrics.PROTOCOL_CONNECTIONS.inc()
        if len(self._handshaking) >= self._max_handshakes:
            # A crowd of silent sockets must not keep a real client out: the one that has been
            # silent longest makes room.
            oldest = next(iter(self._handshaking))
            del self._handshaking[oldest]
            log.warning(
                "%d connections are waiting for their hello (podium.maxHandshakes): closing "
                "the oldest, connection %d from %s",
                self._max_handshakes,
                oldest.conn_id,
                oldest.peer,
            )
            oldest.close(f"{self._max_handshakes} connections were waiting for their hello")
        self._handshaking[conn] = None
        return conn

    async def _connection(self, conn: Connection) -> None:
        stream = conn.stream
        if self._stopping:
            conn.close("podium is shutting down")
        try:
            try:
                async with stream:
                    await conn.serve()
            except* (trio.BrokenResourceError, trio.ClosedResourceError) as group:
                tls = tls_failure(group)
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
            self._handshaking.pop(conn, None)
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
        count_error("frame", "unavailable")
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
                await receive_frame(stream, FrameReader(self._max_frame_bytes))
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
