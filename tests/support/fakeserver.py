"""A small fake Podium daemon for client and CLI tests: the real handshake and framing
(protocol/framing.py), scripted replies.

    async def handler(request: ClientMessage) -> list[Reply]:
        match request:
            case Stats():
                return [stats_reply(request.id)]
        ...

    async with fake_server(handler) as server:          # listens on 127.0.0.1, port 0
        async with connect(server.address) as client:
            ...

``handler(request)`` (sync or async) returns what to send back, in order: wire messages,
raw payload ``bytes`` (framed as they are, for malformed-frame tests), or :data:`DROP` to close
the connection there. Each request is handled in its own task, so an async handler that waits
makes replies arrive out of order. A handler returning ``None`` sends nothing. Streaming:
return a WatchReply and events for a Watch, or push more later with :meth:`FakeServer.push`.

For sync tests (the CLI commands call ``trio.run`` themselves), :func:`fake_server_thread`
runs the same server on its own trio loop in a background thread.
"""

from __future__ import annotations

import enum
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TypeAlias

import trio

from podium.protocol.errors import PodiumError
from podium.protocol.framing import (
    Codec,
    FrameReader,
    decode_hello,
    encode_hello,
    frame,
)
from podium.protocol.wire import ClientMessage, ErrorReply, Hello, HelloReply, ServerMessage

__all__ = [
    "DROP",
    "FakeConnection",
    "FakeServer",
    "Handler",
    "Outgoing",
    "fake_server",
    "fake_server_thread",
]


class _Drop(enum.Enum):
    DROP = "drop"


DROP = _Drop.DROP
"""Returned among a handler's replies: close the connection at that point."""

Outgoing: TypeAlias = ServerMessage | bytes | _Drop
Handler: TypeAlias = Callable[
    [ClientMessage], Sequence[Outgoing] | Awaitable[Sequence[Outgoing] | None] | None
]


class FakeConnection:
    """One accepted client connection."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.codec: Codec | None = None
        self.hello: Hello | None = None
        self.closed = trio.Event()
        self._lock = trio.Lock()

    async def send(self, item: Outgoing) -> None:
        if self.closed.is_set():
            return
        if item is DROP:
            await self.close()
            return
        payload = item if isinstance(item, bytes) else self._encode(item)
        async with self._lock:
            try:
                await self.stream.send_all(frame(payload))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                await self.close()

    def _encode(self, msg: ServerMessage) -> bytes:
        assert self.codec is not None, "no reply before the handshake"
        return self.codec.encode(msg)

    async def close(self) -> None:
        self.closed.set()
        await self.stream.aclose()


class FakeServer:
    """The running fake: its address and what it saw.

    Attributes:
        address: ``127.0.0.1:PORT``, to pass to ``connect``.
        hellos: every Hello received.
        requests: every request received, in arrival order.
        connections: the connections accepted (open or closed).
    """

    def __init__(
        self,
        handler: Handler,
        hello_reply: HelloReply | ErrorReply,
    ) -> None:
        self.handler = handler
        self.hello_reply = hello_reply
        self.address = ""
        self.hellos: list[Hello] = []
        self.requests: list[ClientMessage] = []
        self.connections: list[FakeConnection] = []
        self.received = trio.Event()

    async def push(self, item: Outgoing) -> None:
        """Send ``item`` on every open connection (events of a running watch, say)."""
        for conn in self.connections:
            await conn.send(item)

    async def drop(self) -> None:
        """Close every connection, as a crashed daemon would."""
        for conn in self.connections:
            await conn.close()

    async def wait_for_requests(self, count: int) -> None:
        """Wait until ``count`` requests have arrived in all."""
        while len(self.requests) < count:
            self.received = trio.Event()
            await self.received.wait()

    async def serve(self, stream: trio.SocketStream) -> None:
        conn = FakeConnection(stream)
        self.connections.append(conn)
        frames = FrameReader()
        try:
            async with trio.open_nursery() as nursery:
                while not conn.closed.is_set():
                    while (payload := frames.next_frame()) is not None:
                        if conn.hello is None:
                            await self._handshake(conn, payload)
                            continue
                        assert conn.codec is not None
                        request = conn.codec.decode_request(payload)
                        self.requests.append(request)
                        self.received.set()
                        nursery.start_soon(self._answer, conn, request)
                    data = await stream.receive_some(1 << 16)
                    if not data:
                        break
                    frames.feed(data)
                nursery.cancel_scope.cancel()
        except* (trio.BrokenResourceError, trio.ClosedResourceError, PodiumError):
            pass  # the client went away or sent garbage: this connection is over
        finally:
            conn.closed.set()
            await stream.aclose()

    async def _handshake(self, conn: FakeConnection, payload: bytes) -> None:
        hello = decode_hello(payload)
        self.hellos.append(hello)
        conn.hello = hello
        await conn.send(encode_hello(self.hello_reply))
        if isinstance(self.hello_reply, ErrorReply):
            await conn.close()
        else:
            conn.codec = Codec(hello.encoding)

    async def _answer(self, conn: FakeConnection, request: ClientMessage) -> None:
        result = self.handler(request)
        if inspect.isawaitable(result):
            result = await result
        for item in result or ():
            await conn.send(item)


@asynccontextmanager
async def fake_server(
    handler: Handler,
    *,
    hello_reply: HelloReply | ErrorReply | None = None,
) -> AsyncIterator[FakeServer]:
    """Serve ``handler`` on 127.0.0.1 (port 0) until the block ends.

    Args:
        handler: called with each request; returns what to send back (see the module doc).
        hello_reply: the handshake answer (default: protocol 1, version ``fake``, revision 7);
            an ErrorReply refuses the client and closes the connection.
    """
    server = FakeServer(
        handler,
        hello_reply or HelloReply(protocol=1, server_version="fake", revision=7),
    )
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, server.serve, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        server.address = f"127.0.0.1:{port}"
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


@contextmanager
def fake_server_thread(
    handler: Handler,
    *,
    hello_reply: HelloReply | ErrorReply | None = None,
) -> Iterator[FakeServer]:
    """:func:`fake_server` on its own trio loop in a background thread, for sync tests.

    The handler runs on that thread. ``server.requests`` may be read once the code under
    test returned (its replies were received, so the requests were recorded).
    """
    state = _ThreadState()

    async def main() -> None:
        state.stop = trio.Event()
        async with fake_server(handler, hello_reply=hello_reply) as server:
            state.server = server
            state.token = trio.lowlevel.current_trio_token()
            state.ready.set()
            await state.stop.wait()

    def run() -> None:
        try:
            trio.run(main)
        except BaseException as exc:
            state.error = exc
            state.ready.set()

    thread = threading.Thread(target=run, name="fake-podium", daemon=True)
    thread.start()
    state.ready.wait(10)
    if state.server is None or state.token is None:
        raise AssertionError("the fake server did not start") from state.error
    try:
        yield state.server
    finally:
        trio.from_thread.run_sync(state.stop.set, trio_token=state.token)
        thread.join(10)
        if state.error is not None:
            raise AssertionError("the fake server failed") from state.error


class _ThreadState:
    def __init__(self) -> None:
        self.ready = threading.Event()
        self.stop = trio.Event()  # replaced on the server's own loop
        self.server: FakeServer | None = None
        self.token: trio.lowlevel.TrioToken | None = None
        self.error: BaseException | None = None
