"""One client connection: framing, the hello, pipelined requests and their replies.

Kubernetes counterpart: none as such (the API server serves HTTP/2 streams); Podium speaks its
own typed protocol over length-prefixed frames (docs/protocol.md, protocol/framing.py).

A connection is three kinds of task in its own nursery: the reader (frames in, one task per
request so replies may come out of order), the writer (frames out from the outbox, batched into
one ``send_all``), and one forwarder per watch (watch.py). A frame that cannot be read
(malformed, over the size limit) is answered with ``ErrorReply{id: -1}`` and closes only its
own connection; a request that decodes but does not validate is answered with its id and the
field's path. A request whose handling raises is answered with the error's code (an
unexpected error: ``internal``, and logged); the connection goes on.

Its life::

    accepted ──hello──▶ serving ──the peer closes its side──▶ every request answered,
       │                   │                                  the watches stopped
       │ a refused hello,  │ close(reason),                            │
       │ or none in time   │ framing lost                              │
       ▼                   ▼                                           ▼
    the refusal,        ErrorReply{id: -1} ───────────────▶ the writer flushes the outbox
    closed                                                  (GOODBYE_SECONDS at most), closed

Limits (docs/protocol.md "Limits"): ``maxFrameBytes`` for a frame in, and a reply out over it
is replaced by ``too_large``; ``maxObjectBytes`` for a put's objects, refused ``too_large``
before the store sees them (object_limit.py); ``maxInFlightPerConnection`` requests other than watches, each
holding its slot until its reply is in the outbox (the reader stops reading until one is, so
TCP pushes back); ``maxWatchers`` over every connection, checked as the reader starts a watch;
the outbox is bounded in bytes, ``maxOutboxBytes`` for the connection and ``maxBufferedBytes``
over every connection (:class:`Outboxes`): a reply or a watch's event is encoded only once
there is room, so a client that never reads holds at most its outbox, one frame over it, and
its requests in flight (decoded, sharing the store's objects); its watches then fall behind and
are cut off by ``watchBuffer``. ``handshakeTimeoutSeconds`` for the hello, and the gateway
closes the oldest connection still without one past ``maxHandshakes``.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Sequence
from typing import Protocol

import trio

from podium.actors.gateway.access import authenticate_hello, forbidden
from podium.actors.gateway.counters import count_error, count_request, request_type
from podium.actors.gateway.object_limit import too_large
from podium.actors.runtime.mailbox import receive_batch
from podium.protocol.config import AccessToken
from podium.protocol.errors import (
    ErrorCode,
    FrameTooLarge,
    InvalidRequest,
    MalformedFrame,
    PodiumError,
)
from podium.protocol.framing import Codec, FrameReader, decode_hello, encode_hello, frame
from podium.protocol.wire import (
    PROTOCOL_VERSION,
    ClientMessage,
    ErrorReply,
    HelloReply,
    ServerMessage,
    Watch,
)

__all__ = [
    "BUFFERED_BYTES",
    "GOODBYE_SECONDS",
    "HANDSHAKE_SECONDS",
    "OUTBOX_BYTES",
    "Connection",
    "Outboxes",
    "Server",
    "receive_frame",
]

log = logging.getLogger("podium.gateway")

HANDSHAKE_SECONDS = 2.0
"""Default ``podium.handshakeTimeoutSeconds``: how long a new connection is given to send its
hello."""
GOODBYE_SECONDS = 1.0
"""How long a closing connection's writer is given to flush what is queued."""
OUTBOX_BYTES = 4 * 1024 * 1024
"""Default ``podium.maxOutboxBytes``: bytes one connection may have waiting to be written."""
BUFFERED_BYTES = 64 * 1024 * 1024
"""Default ``podium.maxBufferedBytes``: bytes every connection together may have waiting."""
WRITE_BATCH = 256
"""Frames the writer joins into one ``send_all`` at most."""


class Outboxes:
    """The bytes waiting to be written, over every connection (``podium.maxBufferedBytes``).

    A connection takes room before it queues a frame and gives it back once the frame is
    written; a connection with nothing waiting always gets room for one frame, so no
    connection waits for ever on the others.
    """

    def __init__(self, limit: int = BUFFERED_BYTES) -> None:
        self.limit = limit
        self.used = 0
        self._waiting: set[trio.lowlevel.ParkingLot] = set()

    def take(self, size: int) -> None:
        self.used += size

    def give(self, size: int) -> None:
        self.used -= size
        if self._waiting and self.used < self.limit:
            for lot in self._waiting:
                lot.unpark_all()
            self._waiting.clear()

    async def wait(self, lot: trio.lowlevel.ParkingLot) -> None:
        """Park in ``lot`` (a connection's, also unparked when its own writer drains) until
        some connection gives room back."""
        self._waiting.add(lot)
        await lot.park()


class Server(Protocol):
    """What a connection reads of the gateway that accepted it, and who answers its requests."""

    @property
    def server_version(self) -> str:
        """Reported in HelloReply."""
        ...

    @property
    def revision(self) -> int:
        """The revision the hub has seen (HelloReply's)."""
        ...

    @property
    def tokens(self) -> tuple[AccessToken, ...] | None:
        """The access tokens in force, or None: no token is asked for."""
        ...

    @property
    def max_frame_bytes(self) -> int:
        """``podium.maxFrameBytes``."""
        ...

    @property
    def max_object_bytes(self) -> int:
        """``podium.maxObjectBytes``."""
        ...

    @property
    def max_in_flight(self) -> int:
        """``podium.maxInFlightPerConnection``."""
        ...

    @property
    def max_watchers(self) -> int:
        """``podium.maxWatchers``."""
        ...

    @property
    def max_outbox_bytes(self) -> int:
        """``podium.maxOutboxBytes``."""
        ...

    @property
    def outboxes(self) -> Outboxes:
        """The bytes waiting over every connection (``podium.maxBufferedBytes``)."""
        ...

    @property
    def handshake_seconds(self) -> float:
        """``podium.handshakeTimeoutSeconds``."""
        ...

    def greeted(self, conn: Connection) -> None:
        """``conn``'s hello was accepted: it no longer counts against ``maxHandshakes``."""
        ...

    def watch_count(self) -> int:
        """Watches open over every connection."""
        ...

    async def handle(self, conn: Connection, msg: ClientMessage) -> ServerMessage | None:
        """Answer one request (a watch answers through its own stream and returns None)."""
        ...


async def receive_frame(stream: trio.abc.Stream, reader: FrameReader) -> bytes | None:
    """The next frame's payload, or None when the peer closed its side.

    Raises:
        MalformedFrame, FrameTooLarge: framing is lost.
    """
    while True:
        payload = reader.next_frame()
        if payload is not None:
            return payload
        data = await stream.receive_some(65536)
        if not data:
            return None
        reader.feed(data)


class Connection:
    """One client connection, served by :meth:`serve`.

    Args:
        server: the gateway that accepted it.
        conn_id: its number, for logs and watch keys.
        stream: the accepted stream (TLS already wrapped around it where configured).
        token_required: whether its hello must present a token.
        peer: the peer's address, for logs.

    Attributes:
        codec: the encoding the hello chose (None until the handshake succeeded).
        token: the token the hello presented (None where none is asked for: then read-write).
        watches: the cancel scope of each open watch, by the watch's id.
        closing: why :meth:`close` ended it, if it did.
    """

    def __init__(
        self,
        server: Server,
        conn_id: int,
        stream: trio.abc.Stream,
        *,
        token_required: bool = False,
        peer: str = "?",
    ) -> None:
        self.server = server
        self.conn_id = conn_id
        self.stream = stream
        self.token_required = token_required
        self.peer = peer
        self.codec: Codec | None = None
        self.token: AccessToken | None = None
        self.watches: dict[int, trio.CancelScope] = {}
        self.closing: str | None = None
        self.closing_code: ErrorCode = "unavailable"
        self.in_flight = trio.Semaphore(server.max_in_flight)
        self.read_scope = trio.CancelScope()
        self.outbox: trio.MemorySendChannel[bytes] | None = None
        self.queued = 0  # bytes in the outbox, not yet written
        self._written = trio.lowlevel.ParkingLot()

    def close(self, reason: str, code: ErrorCode = "unavailable") -> None:
        """End the connection: stop reading and serving, tell the client ``reason``."""
        self.closing = reason
        self.closing_code = code
        self.read_scope.cancel(reason)

    def cancel(self, watch_id: int) -> bool:
        """Stop the watch ``watch_id`` (its stream simply ends); False if there is none."""
        scope = self.watches.get(watch_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    async def serve(self) -> None:
        """Serve the connection until the peer leaves or it is closed (see the module's
        drawing)."""
        reader = FrameReader(self.server.max_frame_bytes)
        # Unbounded in frames: bounded in bytes by _room before anything is put in it.
        outbox, pending = trio.open_memory_channel[bytes](math.inf)
        self.outbox = outbox
        async with trio.open_nursery() as outer:
            fatal: ErrorReply | None = None
            async with trio.open_nursery() as requests:
                with self.read_scope:
                    self.codec = await self._handshake(reader)
                    if self.codec is not None:
                        self.server.greeted(self)
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
                count_error("frame", fatal.code)
                await self.send(fatal, wait=False)
            # The writer flushes what is queued, then ends; a peer that reads nothing gets
            # GOODBYE_SECONDS.
            outbox.close()
            outer.cancel_scope.deadline = trio.current_time() + GOODBYE_SECONDS

    async def send(self, msg: ServerMessage, *, wait: bool = True) -> None:
        """Queue one frame for the writer (waits while the outbox is full, unless ``wait`` is
        False: the last word of a closing connection goes behind what is queued).

        A reply larger than the frame limit (a list of a huge kind) is replaced by a
        ``too_large`` error: the client could not read it.
        """
        assert self.codec is not None and self.outbox is not None
        # Encoded only once there is room: a request waiting here holds no bytes of its own.
        if wait:
            await self.room()
        payload = self.codec.encode(msg)
        limit = self.server.max_frame_bytes
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
        await self.send_payload(payload, wait=wait)

    async def send_payload(self, payload: bytes, *, wait: bool = True) -> None:
        """Queue one encoded message for the writer (waits while the outbox is full)."""
        assert self.outbox is not None
        if wait:
            await self.room()
        data = frame(payload)
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            self.outbox.send_nowait(data)
            self.queued += len(data)
            self.server.outboxes.take(len(data))

    async def send_payloads(self, payloads: Sequence[bytes]) -> None:
        """Queue encoded messages for the writer as few outbox messages as the outbox's room
        allows (one when it has room for them all): a watch's commit wakes the writer once,
        not once per event. Waits, as :meth:`send_payload` does, while the outbox is full."""
        assert self.outbox is not None
        limit = self.server.max_outbox_bytes
        i, n = 0, len(payloads)
        while i < n:
            await self.room()
            chunk: list[bytes] = []
            size = 0
            # At least one frame; more while this connection's outbox stays under its limit.
            while i < n and (not chunk or self.queued + size < limit):
                data = frame(payloads[i])
                chunk.append(data)
                size += len(data)
                i += 1
            with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
                self.outbox.send_nowait(b"".join(chunk))
                self.queued += size
                self.server.outboxes.take(size)

    async def room(self) -> None:
        """Wait until the outbox may take a frame: below ``maxOutboxBytes`` here and below
        ``maxBufferedBytes`` over every connection, or empty (one frame always fits, so a reply
        larger than the limits still goes, alone)."""
        outboxes, limit = self.server.outboxes, self.server.max_outbox_bytes
        while self.queued:
            if self.queued >= limit:
                await self._written.park()
            elif outboxes.used >= outboxes.limit:
                await outboxes.wait(self._written)
            else:
                return

    # ------------------------------------------------------------------ hello

    async def _handshake(self, reader: FrameReader) -> Codec | None:
        """Read the hello and answer it; the codec it chose, or None once refused."""
        error: ErrorReply | None = None
        seconds = self.server.handshake_seconds
        with trio.move_on_after(seconds):
            try:
                payload = await receive_frame(self.stream, reader)
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
                        server_version=self.server.server_version,
                        revision=self.server.revision,
                    )
                    await self.stream.send_all(frame(encode_hello(welcome)))
                    return Codec(hello.encoding)
            except InvalidRequest as exc:
                error = ErrorReply(id=-1, code="invalid", message=exc.message, path=exc.path)
            except (MalformedFrame, FrameTooLarge) as exc:
                error = ErrorReply(id=-1, code=exc.code, message=str(exc))
        if error is None:
            error = ErrorReply(
                id=-1, code="invalid", message=f"no hello within {seconds:g} seconds"
            )
        count_error("frame", error.code)
        await self.stream.send_all(frame(encode_hello(error)))
        return None

    def _authenticate(self, presented: str | None) -> ErrorReply | None:
        """Check the hello's token where one is required; the refusal, or None to go on."""
        tokens = self.server.tokens
        if not self.token_required or tokens is None:
            return None
        checked = authenticate_hello(tokens, presented, conn_id=self.conn_id, peer=self.peer)
        if isinstance(checked, ErrorReply):
            return checked
        self.token = checked
        return None

    # ------------------------------------------------------------------ frames in and out

    async def _write(self, pending: trio.MemoryReceiveChannel[bytes]) -> None:
        outboxes = self.server.outboxes
        try:
            async with pending:
                while (frames := await receive_batch(pending, limit=WRITE_BATCH)) is not None:
                    data = b"".join(frames)
                    await self.stream.send_all(data)
                    self.queued -= len(data)
                    outboxes.give(len(data))
                    self._written.unpark_all()
        finally:
            # Whatever was never written (the peer left, the goodbye ran out) is let go.
            outboxes.give(self.queued)
            self.queued = 0
            self._written.unpark_all()

    async def _read(
        self, reader: FrameReader, codec: Codec, requests: trio.Nursery
    ) -> ErrorReply | None:
        """Read requests until the peer closes (None) or framing is lost (the error to send)."""
        while True:
            try:
                payload = await receive_frame(self.stream, reader)
            except (MalformedFrame, FrameTooLarge) as exc:
                return ErrorReply(id=-1, code=exc.code, message=str(exc))
            if payload is None:
                return None
            try:
                msg = codec.decode_request(payload)
            except InvalidRequest as exc:
                count_error("frame", "invalid")
                await self.send(codec.invalid_reply(payload, exc))
                continue
            except MalformedFrame as exc:
                return ErrorReply(id=-1, code="invalid", message=str(exc))
            count_request(request_type(msg))
            if (refusal := forbidden(self.token, msg)) is not None:
                count_error(request_type(msg), refusal.code)
                await self.send(refusal)
                continue
            if (refusal := too_large(msg, len(payload), self.server.max_object_bytes)) is not None:
                count_error(request_type(msg), refusal.code)
                await self.send(refusal)
                continue
            if isinstance(msg, Watch):
                if msg.id in self.watches:
                    count_error("watch", "conflict")
                    await self.send(
                        ErrorReply(
                            id=msg.id,
                            code="conflict",
                            message=f"a watch with id {msg.id} is already open on this connection",
                            path="$.id",
                        )
                    )
                    continue
                limit = self.server.max_watchers
                if self.server.watch_count() >= limit:
                    count_error("watch", "overloaded")
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
            # At most max_in_flight requests at once, each holding its slot until its reply
            # is in the outbox, and nothing read while the outbox is full: a client that
            # pipelines without reading waits here (and TCP pushes back) instead of growing
            # the daemon's memory.
            await self.in_flight.acquire()
            await self.room()
            requests.start_soon(self._request, msg, True)

    # ------------------------------------------------------------------ requests

    async def _request(self, msg: ClientMessage, counted: bool) -> None:
        try:
            answer = await self._answer(msg)
            if answer is not None:
                if isinstance(answer, ErrorReply):
                    count_error(request_type(msg), answer.code)
                await self.send(answer)
        finally:
            if counted:
                self.in_flight.release()

    async def _answer(self, msg: ClientMessage) -> ServerMessage | None:
        """The server's answer to ``msg``; an error it raised is answered here (the request
        task's boundary), so it ends neither the connection nor the daemon."""
        try:
            return await self.server.handle(self, msg)
        except PodiumError as exc:
            return ErrorReply(id=msg.id, code=exc.code, message=str(exc))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # The actor that answers it has stopped (the daemon is stopping, or the store
            # fail-stopped): nothing was done, and the client is told so, not sent a traceback.
            return ErrorReply(
                id=msg.id, code="unavailable", message="the daemon is stopping; nothing was done"
            )
        except Exception as exc:
            log.exception("request %s %d failed", type(msg).__name__, msg.id)
            return ErrorReply(id=msg.id, code="internal", message=f"internal error: {exc}")
