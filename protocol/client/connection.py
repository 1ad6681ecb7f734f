"""One connection to the daemon: the trio :class:`Client`, its pipelined requests, paged lists
and watches, and :func:`connect` with the handshake.

Kubernetes counterpart: k8s.io/client-go/rest (the request, ``Do`` and ``Watch``) and
client-go/tools/pager (a list read in pages with ``limit``/``continue``).

Owns: one stream (TCP or Unix socket), the request ids it hands out, the requests waiting for
a reply and the open watches.
Mailbox: none; one reader task receives every frame and routes it by ``id`` to the waiting
request (a one-shot channel) or to the watch (a bounded channel).
Emits: protocol frames (``Hello`` then requests).

Error handling:
    An ``ErrorReply`` raises :class:`RemoteError` (its ``code``, ``path``, ``errors`` and
    ``revision`` are attributes). A server that cannot be reached raises
    :class:`ServerUnreachable`; a connection that is lost or closed while requests wait fails
    each of them with :class:`ConnectionLost` (both are :class:`ClientConnectionError`, a
    :class:`ConnectionError` and a ``PodiumError`` with code ``unavailable``). An ErrorReply
    with id -1 (the daemon could not read a frame and closes the connection) fails every
    waiting request with a :class:`RemoteError` carrying it.

Cancellation:
    Cancelling a request abandons it; its reply is dropped when it arrives. A request cancelled
    while its frame is half sent breaks the framing, so the connection is failed. Leaving a
    ``watch`` block sends ``Cancel`` and waits (shielded, at most :data:`CANCEL_TIMEOUT_SECONDS`)
    for its ``CancelReply``.
"""

from __future__ import annotations

import itertools
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TypeVar

import msgspec
import trio

from podium.protocol.client.backoff import Backoff
from podium.protocol.client.errors import (
    ClientConnectionError,
    ConnectionLost,
    LeaderUnavailable,
    RemoteError,
    ServerUnreachable,
    TLSFailed,
)
from podium.protocol.client.transport import DEFAULT_SERVER, open_stream
from podium.protocol.errors import InvalidRequest, PodiumError, ProtocolError
from podium.protocol.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    Codec,
    FrameReader,
    decode_hello_reply,
    encode_hello,
    frame,
)
from podium.protocol.objects import KubeObject, Pod
from podium.protocol.wire import (
    PROTOCOL_VERSION,
    Cancel,
    CancelReply,
    ClientMessage,
    Delete,
    DeleteReply,
    Encoding,
    ErrorReply,
    Event,
    Explain,
    ExplainGroupReply,
    ExplainReply,
    Get,
    GetReply,
    Hello,
    HelloReply,
    ObjectRef,
    Put,
    PutReply,
    ReloadPolicy,
    ReloadPolicyReply,
    Reply,
    ServerMessage,
    Simulate,
    SimulateReply,
    Stats,
    StatsReply,
    Watch,
    WatchReply,
)

__all__ = [
    "CANCEL_TIMEOUT_SECONDS",
    "DEFAULT_CHUNK_SIZE",
    "LEADER_WAIT_SECONDS",
    "WATCH_BUFFER",
    "Client",
    "WatchStream",
    "connect",
]

# The package's name, as before the client was split into modules: log filters keep working.
logger = logging.getLogger("podium.protocol.client")

DEFAULT_CHUNK_SIZE = 2000
"""Objects a Get of a list asks for at a time (kubectl's ``--chunk-size`` is 500; a page costs
the daemon a bisect, so the size only trades round trips against the size of one reply)."""
WATCH_BUFFER = 10_000
"""Events a watch holds for a consumer that has not read them yet. When it is full the reader
waits for the consumer (back-pressure through TCP to the daemon, which cuts off a watcher
that stays behind with ``overloaded``); replies to other requests on the connection wait too,
so leave a ``watch`` block you stop reading."""
CANCEL_TIMEOUT_SECONDS = 5.0
_RECEIVE_BYTES = 1 << 16

_R = TypeVar("_R", bound=Reply)


class _WatchState:
    """What the reader knows of one watch: where its events go and how it ended."""

    __slots__ = ("error", "id", "receive", "send", "server_ended")

    def __init__(self, watch_id: int, buffer: int) -> None:
        self.id = watch_id
        self.send, self.receive = trio.open_memory_channel[WatchReply | Event](buffer)
        self.error: ErrorReply | None = None
        self.server_ended = False


class WatchStream:
    """The events of one watch, as an async iterator (``async for event in stream``).

    Attributes:
        id: the watch's request id.
        revision: the revision the watch was established at (its WatchReply's).
        last_revision: the revision of the last event read (None before the first); resume
            from it after an ``overloaded`` error.

    Raises (from iteration):
        RemoteError: the daemon ended the watch (``gone``, ``overloaded``, ``unavailable``) or
            the client's buffer overflowed (code ``overloaded``).
        ConnectionLost: the connection went away.
    """

    def __init__(self, client: Client, state: _WatchState, revision: int) -> None:
        self._client = client
        self._state = state
        self.id = state.id
        self.revision = revision
        self.last_revision: int | None = None

    def __aiter__(self) -> WatchStream:
        return self

    async def __anext__(self) -> Event:
        try:
            item = await self._state.receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            if self._state.error is not None:
                raise RemoteError(self._state.error) from None
            raise self._client._failure() from None
        assert isinstance(item, Event), f"watch {self.id} got a second {type(item).__name__}"
        self.last_revision = item.revision
        return item


LEADER_HANDSHAKE_SECONDS = 5.0
LEADER_WAIT_SECONDS = 20.0
"""How long a write refused with ``not_leader`` waits for a replica to take it: Kubernetes'
default lease (15 s, ``--leader-elect-lease-duration``) plus a few seconds for the election."""
"""How long a connection to the leader a follower named may take to answer its hello."""


class Client:
    """One connection to a Podium daemon; use :func:`connect` to get one.

    Every method may be called from several tasks at once: requests carry increasing ids and
    the reader routes each reply to its caller, in whatever order replies come.

    Attributes:
        server: the address connected to.
        revision: the store revision the HelloReply announced.
        server_version: the daemon's version.
        encoding: the encoding of every frame after the handshake.
        leader_wait_seconds: how long a write waits for a leader (see :meth:`put`).
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        frames: FrameReader,
        hello: HelloReply,
        *,
        server: str,
        encoding: Encoding,
        watch_buffer: int = WATCH_BUFFER,
        leader_wait_seconds: float = LEADER_WAIT_SECONDS,
    ) -> None:
        self.server = server
        self.leader_wait_seconds = leader_wait_seconds
        self.revision = hello.revision
        self.server_version = hello.server_version
        self.encoding: Encoding = encoding
        self._stream = stream
        self._frames = frames
        self._codec = Codec(encoding)
        self._send_lock = trio.StrictFIFOLock()
        self._ids = itertools.count(1)
        self._waiting: dict[int, trio.MemorySendChannel[ServerMessage]] = {}
        self._watches: dict[int, _WatchState] = {}
        self._watch_buffer = watch_buffer
        self._lost: str | None = None
        self._lost_reply: ErrorReply | None = None
        # Writes a follower replica answered ``not_leader`` go to the leader it named, on a
        # second connection whose reader runs in :func:`connect`'s nursery.
        self._nursery: trio.Nursery | None = None
        self._token: str | None = None
        self._tls: ssl.SSLContext | None = None
        self._max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        self._leader: Client | None = None
        self._leader_lock = trio.Lock()

    # ------------------------------------------------------------------ requests

    async def put(self, objects: Iterable[KubeObject]) -> PutReply:
        """Create or replace ``objects`` atomically; returns once the write is durable.

        Under leader election a put a follower refuses goes to the leader it names, and
        while no replica leads it waits for one (at most :attr:`leader_wait_seconds`).

        Raises:
            RemoteError: the put was rejected (``errors`` names each bad object); nothing
                was written.
            LeaderUnavailable: no replica took it within the leader wait; nothing was
                written.
        """
        items = list(objects)
        return await self._write(lambda i: Put(id=i, objects=items), PutReply)

    async def delete(self, refs: Iterable[ObjectRef]) -> DeleteReply:
        """Delete objects atomically; a missing one fails the request with ``not_found``.
        Under leader election it goes to the leader, and waits for one, as :meth:`put`."""
        items = list(refs)
        return await self._write(lambda i: Delete(id=i, refs=items), DeleteReply)

    async def get(
        self,
        kind: str,
        name: str = "",
        namespace: str | None = None,
        label_selector: str = "",
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        on_page: Callable[[int, int | None], None] | None = None,
    ) -> GetReply:
        """Read one object (``name``) or list a kind (``namespace`` None: every namespace).

        A list is read ``chunk_size`` objects a request (0: in one request, which fails with
        ``too_large`` past the frame limit) and returned whole, with its first page's revision:
        a watch from it sees every change made while the pages were read. A page the daemon
        finds too large for a frame is asked for again at half the size. ``on_page`` is told
        after each page how many objects have come and how many more the daemon counts
        (None with a label selector).
        """
        if name or chunk_size <= 0:
            return await self.get_page(kind, name, namespace, label_selector)
        first: GetReply | None = None
        items: list[KubeObject] = []
        token = ""
        while first is None or token:
            try:
                page = await self.get_page(
                    kind, "", namespace, label_selector, limit=chunk_size, continue_=token
                )
            except RemoteError as exc:
                if exc.code != "too_large" or chunk_size == 1:
                    raise
                chunk_size //= 2
                continue
            first = first or page
            items.extend(page.items)
            token = page.continue_
            if on_page is not None:
                on_page(len(items), page.remaining)
        return msgspec.structs.replace(first, items=items, continue_="", remaining=0)

    async def get_page(
        self,
        kind: str,
        name: str = "",
        namespace: str | None = None,
        label_selector: str = "",
        *,
        limit: int = 0,
        continue_: str = "",
    ) -> GetReply:
        """One Get request: at most ``limit`` objects (0: all) after the page whose reply's
        ``continue_`` token is given."""
        return await self._call(
            lambda i: Get(
                id=i,
                kind=kind,
                name=name,
                namespace=namespace,
                label_selector=label_selector,
                limit=limit,
                continue_=continue_,
            ),
            GetReply,
        )

    async def explain(self, namespace: str, name: str) -> ExplainReply:
        """Why the pod is pending: every examined node's reasons and scores, and hints."""
        return await self._call(
            lambda i: Explain(id=i, namespace=namespace, name=name), ExplainReply
        )

    async def explain_group(self, namespace: str, name: str) -> ExplainGroupReply:
        """Why the pod group is not placed: each member's verdict, the members that block it,
        what would help, and the victims its preemption would evict."""
        return await self._call(
            lambda i: Explain(id=i, namespace=namespace, name=name, kind="PodGroup"),
            ExplainGroupReply,
        )

    async def simulate(self, pod: Pod, explain: bool = False) -> SimulateReply:
        """Where ``pod`` would go now; nothing is stored, assumed or bound."""
        return await self._call(lambda i: Simulate(id=i, pod=pod, explain=explain), SimulateReply)

    async def reload_policy(self) -> ReloadPolicyReply:
        """Make the daemon read its policy file again; returns what is now in force."""
        return await self._call(lambda i: ReloadPolicy(id=i), ReloadPolicyReply)

    async def stats(self) -> StatsReply:
        """The daemon's counts of objects, queues and attempts."""
        return await self._call(lambda i: Stats(id=i), StatsReply)

    @asynccontextmanager
    async def watch(
        self, from_revision: int | None = None, kinds: Sequence[str] = ()
    ) -> AsyncIterator[WatchStream]:
        """Stream events after ``from_revision`` (None: from now), of ``kinds`` (empty: all).

        The block is entered once the daemon established the watch (its WatchReply); leaving
        it cancels the watch.

        Raises:
            RemoteError: the watch was refused (``gone``: ``revision`` is the oldest kept).
        """
        watch_id = next(self._ids)
        state = _WatchState(watch_id, self._watch_buffer)
        self._watches[watch_id] = state
        sent = False
        try:
            await self._send(Watch(id=watch_id, from_revision=from_revision, kinds=list(kinds)))
            sent = True
            try:
                first = await state.receive.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                if state.error is not None:
                    raise RemoteError(state.error) from None
                raise self._failure() from None
            assert isinstance(first, WatchReply), f"watch {watch_id} began with {first!r}"
            yield WatchStream(self, state, first.revision)
        finally:
            self._watches.pop(watch_id, None)
            state.send.close()
            state.receive.close()
            if sent and not state.server_ended and self._lost is None:
                # Shielded: the daemon must hear that this watch is over even when the block
                # is left by cancellation; bounded, so a dead daemon cannot hang the exit.
                # A RemoteError or lost connection means there is nothing left to stop.
                with (
                    trio.move_on_after(CANCEL_TIMEOUT_SECONDS, shield=True),
                    suppress(RemoteError, ClientConnectionError),
                ):
                    await self._call(lambda i: Cancel(id=i, target=watch_id), CancelReply)

    # ------------------------------------------------------------------ plumbing

    async def _write(self, build: Callable[[int], ClientMessage], expected: type[_R]) -> _R:
        """A put or delete: sent here, or to the leader a follower replica named
        (``not_leader``), and to that leader from then on while its connection lasts.

        A write refused with ``not_leader`` was not done, so it is sent again: to the leader
        named, or, while none leads (no ``leader``) or the one named cannot be reached (it
        died and its lease has not yet run out), here again after a backoff, until a leader
        takes it or :attr:`leader_wait_seconds` have passed (then :class:`LeaderUnavailable`).
        A write whose connection is lost after it was sent is not sent again: it may have
        been done (the caller finds out by reading).
        """
        deadline = trio.current_time() + self.leader_wait_seconds
        backoff = Backoff(initial=0.05, maximum=1.0, jitter=0.5)
        while True:
            leader = self._leader
            if leader is not None and leader._lost is not None:
                self._leader = None
                await trio.aclose_forcefully(leader._stream)
                leader = None
            try:
                return await (leader or self)._call(build, expected)
            except RemoteError as exc:
                if exc.code != "not_leader" or self._nursery is None:
                    raise
                why = str(exc)
                named = exc.reply.leader
            if named is not None and named != self.server:
                try:
                    target = await self._connect_leader(named)
                    return await target._call(build, expected)
                except RemoteError as exc:
                    if exc.code != "not_leader":
                        raise
                    why = str(exc)
                except ServerUnreachable as exc:
                    why = f"the leader it names is unreachable: {exc}"
            now = trio.current_time()
            if now >= deadline:
                raise LeaderUnavailable(
                    f"no podium replica took the write within {self.leader_wait_seconds:g} s "
                    f"(podium at {self.server}: {why})"
                )
            await trio.sleep(min(backoff.next_delay(), deadline - now))

    async def _connect_leader(self, address: str) -> Client:
        """The connection to the leader at ``address`` (opened once, reused)."""
        assert self._nursery is not None
        async with self._leader_lock:
            current = self._leader
            if current is not None and current.server == address and current._lost is None:
                return current
            if current is not None:
                await current._stream.aclose()
            # Bounded: the leader a follower names may be paused or cut off (its key lives
            # until its lease expires), and its port may accept without ever answering.
            with trio.move_on_after(LEADER_HANDSHAKE_SECONDS) as waiting:
                stream = await open_stream(address, self._tls)
                try:
                    frames = FrameReader(self._max_frame_bytes)
                    hello = await _handshake(
                        stream, frames, server=address, encoding=self.encoding, token=self._token
                    )
                except BaseException:
                    await trio.aclose_forcefully(stream)
                    raise
            if waiting.cancelled_caught:
                raise ServerUnreachable(
                    address, f"the leader did not answer within {LEADER_HANDSHAKE_SECONDS:g} s"
                )
            leader = Client(stream, frames, hello, server=address, encoding=self.encoding)
            self._nursery.start_soon(leader._read_loop)
            self._leader = leader
            logger.info("writes go to the leader at %s", address)
            return leader

    async def _call(self, build: Callable[[int], ClientMessage], expected: type[_R]) -> _R:
        request_id = next(self._ids)
        send, receive = trio.open_memory_channel[ServerMessage](1)
        self._waiting[request_id] = send
        try:
            await self._send(build(request_id))
            try:
                reply = await receive.receive()
            except trio.EndOfChannel:
                raise self._failure() from None
        finally:
            self._waiting.pop(request_id, None)
            send.close()
            receive.close()
        if isinstance(reply, ErrorReply):
            raise RemoteError(reply)
        if not isinstance(reply, expected):
            raise ProtocolError(
                f"request {request_id} was answered by {type(reply).__name__}, "
                f"expected {expected.__name__}"
            )
        return reply

    async def _send(self, msg: ClientMessage) -> None:
        if self._lost is not None:
            raise self._failure()
        data = frame(self._codec.encode(msg))
        async with self._send_lock:
            try:
                await self._stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                self._fail(f"sending failed: {exc}")
                raise self._failure() from exc
            except trio.Cancelled:
                # Part of the frame may be on the wire: the framing, and so the connection,
                # cannot be trusted any more.
                self._fail("a request was cancelled while its frame was being sent")
                raise

    def _failure(self) -> PodiumError:
        """A fresh exception describing why the connection is unusable."""
        if self._lost_reply is not None:
            return RemoteError(self._lost_reply)
        return ConnectionLost(
            f"connection to podium at {self.server} was lost: {self._lost or 'closed'}"
        )

    def _fail(self, reason: str, reply: ErrorReply | None = None) -> None:
        """Mark the connection lost and end every waiting request and watch."""
        if self._lost is None:
            self._lost = reason
            self._lost_reply = reply
        for send in self._waiting.values():
            send.close()
        self._waiting.clear()
        for state in self._watches.values():
            state.send.close()
        self._watches.clear()

    async def _receive_frame(self) -> bytes | None:
        while True:
            payload = self._frames.next_frame()
            if payload is not None:
                return payload
            data = await self._stream.receive_some(_RECEIVE_BYTES)
            if not data:
                return None
            self._frames.feed(data)

    async def _read_loop(self) -> None:
        """The one reader: route every frame by id until the connection ends. Never raises
        (except Cancelled): failures are recorded and handed to the waiting requests."""
        reason = "closed by the daemon"
        reply: ErrorReply | None = None
        try:
            while True:
                payload = await self._receive_frame()
                if payload is None:
                    if self._frames.buffered():
                        reason = "closed by the daemon in the middle of a frame"
                    break
                try:
                    msg = self._codec.decode_reply(payload)
                except InvalidRequest as exc:
                    if exc.request_id < 0:
                        raise
                    # A reply this client cannot read (a newer daemon's message): fail only
                    # the request or watch it answers, not the whole connection.
                    msg = ErrorReply(
                        id=exc.request_id,
                        code="internal",
                        message=f"this client cannot read the daemon's reply: {exc.message}",
                        path=exc.path,
                    )
                if isinstance(msg, ErrorReply) and msg.id == -1:
                    reason, reply = msg.message, msg
                    break
                await self._dispatch(msg)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            reason = f"the connection broke: {exc}"
        except ProtocolError as exc:
            reason = f"the daemon sent an unreadable frame: {exc}"
        except Exception as exc:  # a bug here must still release every waiting request
            logger.exception("podium client reader failed")
            reason = f"the client reader failed: {exc!r}"
        finally:
            self._fail(reason, reply)

    async def _dispatch(self, msg: ServerMessage) -> None:
        state = self._watches.get(msg.id)
        if state is not None:
            await self._route_watch(state, msg)
            return
        waiter = self._waiting.pop(msg.id, None)
        if waiter is None:
            return  # an abandoned request, or events racing a Cancel: nobody waits for it
        # The caller may have been cancelled after registering: then its reply has no reader.
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError, trio.WouldBlock):
            waiter.send_nowait(msg)

    async def _route_watch(self, state: _WatchState, msg: ServerMessage) -> None:
        if isinstance(msg, WatchReply | Event):
            try:
                try:
                    state.send.send_nowait(msg)
                except trio.WouldBlock:
                    # The consumer is behind: wait for it rather than drop or end the watch.
                    await state.send.send(msg)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            return
        if isinstance(msg, ErrorReply):
            state.error = msg
            state.server_ended = True
            self._end_watch(state)
            return
        logger.warning("watch %d got an unexpected %s; ignored", state.id, type(msg).__name__)

    def _end_watch(self, state: _WatchState) -> None:
        self._watches.pop(state.id, None)
        state.send.close()


@asynccontextmanager
async def connect(
    server: str = DEFAULT_SERVER,
    *,
    encoding: Encoding = "msgpack",
    token: str | None = None,
    tls: ssl.SSLContext | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    watch_buffer: int = WATCH_BUFFER,
    leader_wait_seconds: float = LEADER_WAIT_SECONDS,
) -> AsyncIterator[Client]:
    """Connect to a daemon, do the handshake, and yield a :class:`Client`.

    Args:
        server: ``HOST:PORT`` (``[::1]:7070`` for IPv6) or ``unix:/path/to/socket``; or
            several, comma-separated (replicas under leader election): the first that answers
            is used, and writes a follower answers ``not_leader`` go to the leader it names.
        encoding: ``msgpack`` (compact) or ``json`` (readable on the wire, for debugging).
        token: the access token, for listeners that require one.
        tls: TLS for a TCP server (:func:`client_ssl_context`); None for plain text.
        max_frame_bytes: the largest reply frame accepted.
        watch_buffer: events each watch may hold unread (see :data:`WATCH_BUFFER`).
        leader_wait_seconds: how long a write answered ``not_leader`` waits for a replica
            to take it (while none leads, or the one named cannot be reached) before it
            fails with :class:`LeaderUnavailable` (:data:`LEADER_WAIT_SECONDS`: Kubernetes'
            default lease plus a few seconds; give the daemons' lease plus a few seconds).

    Raises:
        ServerUnreachable: nothing answered at ``server``.
        ValueError: ``server`` is not an address, or ``tls`` was given for a Unix socket.
        TLSFailed: the daemon's certificate did not verify, or it does not speak TLS.
        RemoteError: the daemon refused the handshake (``unauthorized``: no valid token;
            ``unavailable``: its connection limit), ...).
        ConnectionLost: the daemon closed the connection during the handshake.

    The body runs inside the nursery of the reader task; the reader never raises, so an
    exception from the body is re-raised as itself rather than inside an exception group.
    """
    servers = [s.strip() for s in server.split(",") if s.strip()] or [server]
    for index, address in enumerate(servers):
        try:
            stream = await open_stream(address, tls)
            break
        except ServerUnreachable:
            if index == len(servers) - 1:
                raise
    server = address
    try:
        frames = FrameReader(max_frame_bytes)
        hello = await _handshake(stream, frames, server=server, encoding=encoding, token=token)
        client = Client(
            stream,
            frames,
            hello,
            server=server,
            encoding=encoding,
            watch_buffer=watch_buffer,
            leader_wait_seconds=leader_wait_seconds,
        )
        client._token, client._tls, client._max_frame_bytes = token, tls, max_frame_bytes
        try:
            async with trio.open_nursery() as nursery:
                client._nursery = nursery
                nursery.start_soon(client._read_loop)
                try:
                    yield client
                finally:
                    nursery.cancel_scope.cancel("the client is closing")
                    if client._leader is not None:
                        await trio.aclose_forcefully(client._leader._stream)
        except BaseExceptionGroup as group:
            # Only the body can raise into this nursery (the reader records its failures), so
            # a group here holds the body's own exception: give the caller that exception.
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from group.exceptions[0].__cause__
            raise
    finally:
        await stream.aclose()


async def _handshake(
    stream: trio.abc.Stream,
    frames: FrameReader,
    *,
    server: str,
    encoding: Encoding,
    token: str | None,
) -> HelloReply:
    hello = Hello(protocol=PROTOCOL_VERSION, encoding=encoding, token=token)
    first = b""
    try:
        await stream.send_all(frame(encode_hello(hello)))
        while True:
            try:
                payload = frames.next_frame()
            except ProtocolError:
                if first[:1] in (b"\x15", b"\x16") and first[1:2] == b"\x03":
                    # A TLS record (an alert or a handshake): the daemon speaks TLS.
                    raise TLSFailed(
                        f"podium at {server} answered in TLS: connect with TLS (--tls or --tls-ca)"
                    ) from None
                raise
            if payload is not None:
                break
            data = await stream.receive_some(_RECEIVE_BYTES)
            if not data:
                raise ConnectionLost(
                    f"podium at {server} closed the connection during the handshake"
                    + ("" if isinstance(stream, trio.SSLStream) else _TLS_HINT)
                )
            first = first or bytes(data[:2])
            frames.feed(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        raise ConnectionLost(
            f"connection to podium at {server} broke during the handshake: {exc}"
            + ("" if isinstance(stream, trio.SSLStream) else _TLS_HINT)
        ) from exc
    reply = decode_hello_reply(payload)
    if isinstance(reply, ErrorReply):
        raise RemoteError(reply)
    if reply.protocol != PROTOCOL_VERSION:
        raise ProtocolError(
            f"podium at {server} speaks protocol {reply.protocol}; this client speaks "
            f"{PROTOCOL_VERSION}"
        )
    return reply


_TLS_HINT = " (if it listens with TLS, connect with --tls or --tls-ca)"
