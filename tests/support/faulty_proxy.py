"""A small TCP proxy on trio that a test puts between a Podium replica and one etcd member, to
make the network misbehave the way a nemesis (Jepsen's word) wants it to.

Every connection the proxy accepts is joined to a fresh connection to the upstream, and each
direction is pumped chunk by chunk; what happens to a chunk is decided by the mode in force
*when it is read* (the connection's own mode if it has one, else the proxy's):

=================  ==========================================================================
mode               what a chunk does
=================  ==========================================================================
``pass``           goes through at once
``delay``          goes through ``delay`` seconds later (order kept: a slow link, not a
                   reordering one)
``drop_replies``   requests reach etcd, its replies are discarded (etcd may apply a write
                   whose answer never comes: the ambiguous case)
``drop_requests``  requests are discarded, replies (of what was sent before) still come back
``black_hole``     nothing passes either way; the connection stays open, silent
=================  ==========================================================================

A fault may be limited to the connections whose latest request went to a path
(:meth:`FaultyProxy.set_mode`'s ``only``): ``/v3/kv/txn`` black-holes a replica's writes while
its reads and lease renewals pass (issue 25, point 2).

A connection that lost a byte has an HTTP stream out of step; when its fault is healed
(:meth:`FaultyProxy.heal`, or its mode set back to ``pass``) it is closed, as a real network
would end it in a reset or a timeout, and the client connects again. New connections are
accepted in every mode (a black hole accepts and then says nothing, as a partitioned host's
kernel buffers would); a connection whose upstream refuses (a member killed) is closed.

Cancellation: :meth:`FaultyProxy.run` serves until its scope is cancelled; every connection
task lives in its nursery.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from functools import partial

import trio

__all__ = ["Connection", "FaultyProxy", "Mode"]

CHUNK = 65536


class Mode(enum.Enum):
    PASS = "pass"
    DELAY = "delay"
    DROP_REPLIES = "drop_replies"
    DROP_REQUESTS = "drop_requests"
    BLACK_HOLE = "black_hole"


_DROPS_REQUESTS = {Mode.DROP_REQUESTS, Mode.BLACK_HOLE}
_DROPS_REPLIES = {Mode.DROP_REPLIES, Mode.BLACK_HOLE}
# The start of a chunk that begins an HTTP/1.1 request (etcd's gateway takes POST; GET for
# /version and /health).
_METHODS = {b"POST ", b"GET /"}


@dataclass(eq=False)
class Connection:
    """One proxied connection.

    Attributes:
        mode: this connection's own mode (None: the proxy's).
        lost_bytes: bytes discarded either way (non-zero: closed when healed).
        requests, replies: bytes forwarded each way.
    """

    proxy: FaultyProxy
    cancel_scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    mode: Mode | None = None
    lost_bytes: int = 0
    requests: int = 0
    replies: int = 0

    last_path: bytes = b""

    @property
    def effective_mode(self) -> Mode:
        if self.mode is not None:
            return self.mode
        if self.proxy.only and self.proxy.only not in self.last_path:
            return Mode.PASS
        return self.proxy.mode

    def set_mode(self, mode: Mode | None) -> None:
        """This connection's own mode (None: follow the proxy's); back to pass (or to the
        proxy's pass) ends it if it lost bytes."""
        self.mode = mode
        self._close_if_healed()

    def _close_if_healed(self) -> None:
        if self.effective_mode in (Mode.PASS, Mode.DELAY) and self.lost_bytes:
            self.cancel_scope.cancel("proxy: a healed connection that lost bytes is reset")


class FaultyProxy:
    """Listen on ``127.0.0.1`` (port 0), forward to ``upstream`` (``host:port``).

    Attributes:
        mode: the mode of every connection without one of its own.
        delay: seconds a chunk waits in ``delay`` mode.
        port: the port it listens on (after :meth:`run` started).
        connections: the open connections.
        accepted: connections accepted so far.
    """

    def __init__(self, upstream: str) -> None:
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.mode = Mode.PASS
        self.delay = 0.0
        self.only = b""
        self.port = 0
        self.connections: set[Connection] = set()
        self.accepted = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def set_mode(self, mode: Mode, delay: float = 0.0, only: bytes = b"") -> None:
        """Every connection without a mode of its own (and every new one) now runs in
        ``mode``; ``delay`` seconds in ``delay`` mode; with ``only``, just the connections
        whose latest HTTP request's path holds it (``b"/v3/kv/txn"``: the write path, while
        reads and lease renewals pass)."""
        self.mode = mode
        self.delay = delay
        self.only = only
        for connection in list(self.connections):
            connection._close_if_healed()

    def heal(self) -> None:
        """Back to pass, for the proxy and every connection (those that lost bytes end)."""
        for connection in list(self.connections):
            connection.mode = None
        self.set_mode(Mode.PASS)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(trio.serve_tcp, self._serve, 0, host="127.0.0.1")
            )
            self.port = listeners[0].socket.getsockname()[1]
            task_status.started()

    async def _serve(self, client: trio.SocketStream) -> None:
        connection = Connection(self)
        self.accepted += 1
        self.connections.add(connection)
        try:
            with connection.cancel_scope:
                try:
                    upstream = await trio.open_tcp_stream(*self.upstream)
                except OSError:
                    return  # the member is down: the client sees its connection end
                async with upstream, trio.open_nursery() as nursery:
                    nursery.start_soon(self._pump, connection, client, upstream, True)
                    nursery.start_soon(self._pump, connection, upstream, client, False)
        finally:
            self.connections.discard(connection)
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await client.aclose()

    async def _pump(
        self,
        connection: Connection,
        source: trio.SocketStream,
        sink: trio.SocketStream,
        is_request: bool,
    ) -> None:
        """One direction: read, judge by the mode in force, forward (maybe later) in order.
        Either side closing, or failing, ends the whole connection."""
        send, receive = trio.open_memory_channel[tuple[float, bytes]](math.inf)
        dropping = _DROPS_REQUESTS if is_request else _DROPS_REPLIES

        async def forward() -> None:
            async for due, data in receive:
                await trio.sleep_until(due)
                await sink.send_all(data)

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(forward)
                while True:
                    data = await source.receive_some(CHUNK)
                    if not data:
                        break
                    if is_request and data[:5] in _METHODS:
                        connection.last_path = data.split(b" ", 2)[1]
                    mode = connection.effective_mode
                    if mode in dropping:
                        connection.lost_bytes += len(data)
                        continue
                    if is_request:
                        connection.requests += len(data)
                    else:
                        connection.replies += len(data)
                    later = self.delay if mode is Mode.DELAY else 0.0
                    send.send_nowait((trio.current_time() + later, data))
                send.close()
        except* (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # a side reset or closed: the connection ends, below
        # One side is done: so is the connection (HTTP/1.1 has no half-close to keep).
        connection.cancel_scope.cancel("proxy: one side of the connection ended")
