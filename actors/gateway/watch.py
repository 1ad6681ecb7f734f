"""The watch hub and the watches it feeds: a client's stream of committed changes.

Kubernetes counterpart: the API server's watch cache (staging/src/k8s.io/apiserver/pkg/storage/
cacher/watch_cache.go@v1.14: a ring of recent events that a watch from a resourceVersion
starts from, or ``410 Gone``) and its cacher's watchers, which a slow one is cut off from
(cacher.go ``cacheWatcher``).

The hub (:class:`Hub`, fed by the gateway's hub task) is the gateway's subscription to the
store's published stream: it keeps the recent changes in a ring and hands each change to the
watches that want it. A watch from a revision (:class:`Watches`) first reads the retained log
from the store, then joins the hub at the store's answer; the ring fills whatever the hub saw
in between, so nothing is lost or repeated. A watch whose buffer fills (a client that does not
read) is cut off with ``overloaded`` and the revision to resume from, so it never grows memory
or slows scheduling: the hub never waits for a watch.

``watchBuffer`` (docs/protocol.md "Limits"): events a watch may have waiting. A watch with
events waiting whose next commit would take it past the buffer is cut off; a commit handed to
a watch with none waiting is taken whole, so one large put does not cut off a watcher that
keeps up.

The hub hands each watch one message per commit (the changes of it the watch wants, one list
shared by every watch of the same kinds at the same position), and the watch's forwarder
hands its connection's writer one message for the lot: a commit wakes each watch's forwarder
and writer once, not once per change. Each committed change's event is encoded once per
encoding and shared by every watch sending it, only the watch id spliced in
(:class:`EncodedObjects`).
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeAlias

import msgspec
import trio

from podium.actors.gateway.connection import Connection
from podium.actors.gateway.counters import count_error
from podium.actors.gateway.replies import failure
from podium.actors.runtime.mailbox import ask, receive_batch, send
from podium.protocol.objects import KINDS, enc_hook
from podium.protocol.wire import ErrorReply, EventFrame, Watch, WatchReply
from podium.store.mail import (
    Change,
    Committed,
    EventsResult,
    ReadEvents,
    Recovered,
    StoreFailure,
    StoreMsg,
)

__all__ = [
    "ENCODED_OBJECTS",
    "PAGE",
    "PAGE_STALL_SECONDS",
    "RING",
    "WATCH_BUFFER",
    "AddWatch",
    "Batch",
    "EncodedObjects",
    "Hub",
    "HubMsg",
    "RemoveWatch",
    "WatchCursor",
    "Watches",
    "has_room",
]

ENCODED_OBJECTS = 8192
"""Committed changes whose events' encodings are kept for the watches still sending them."""
RING = 65_536
"""Recent changes the hub keeps, to fill the gap between a watch's read of the log and its
joining the hub."""
WATCH_BUFFER = 4096
"""Default ``podium.watchBuffer``: events a watch may have waiting before it is cut off as too
slow."""
PAGE = 1000
"""Changes per page of the log on disk a watch from an old revision reads (at most
``watchBuffer``)."""
PAGE_STALL_SECONDS = 5.0
"""A watch reading the log on disk whose connection has no room for its next page this long
(its client reads nothing) is cut off with ``overloaded``."""
FORWARD_CHUNK = 32
"""Events a watch's forwarder encodes and hands its writer in one go (~4 us each: a task step
of ~0.12 ms), so a large commit does not hold every other actor up while it is encoded (at 128
such steps were a third of the daemon's steps over 0.3 ms: docs/benchmarks.md, "what the slow
attempts held")."""
PAGE_POLL_SECONDS = 0.02
"""How often a watch waiting for room looks at its connection's outbox."""


@dataclass(eq=False, slots=True)
class WatchCursor:
    """Where a watch's forwarder is (written by the forwarder, read by the hub; both run in
    the gateway's own tasks).

    Attributes:
        delivered: the last revision it delivered (``podium_watcher_lag_revisions``).
        taken: the events it has taken from its channel (what waits there is what the hub
            handed minus this: ``watchBuffer`` counts events, the channel carries batches).
    """

    delivered: int = 0
    taken: int = 0


Batch: TypeAlias = list[Change]
"""What a watch's channel carries: the changes of one commit it wants (or of the ring's gap
when it joins), in revision order, never empty. One message per commit, not per change: the
forwarder wakes once for the lot."""


@dataclass(eq=False, slots=True)
class _Watch:
    kinds: frozenset[str]
    position: int
    channel: trio.MemorySendChannel[Batch]
    cursor: WatchCursor | None = None
    counts: WatchCursor | None = None  # cursor, or one of its own when none was given
    handed: int = 0  # the revision of the last change put in ``channel``
    events: int = 0  # the events put in ``channel``

    def waiting(self) -> int:
        """Events handed to the forwarder and not yet taken."""
        assert self.counts is not None
        return self.events - self.counts.taken


class AddWatch(msgspec.Struct, frozen=True, kw_only=True):
    """Join the hub: deliver changes after ``position`` (None: from the hub's revision)."""

    key: tuple[int, int]
    position: int | None
    kinds: frozenset[str]
    channel: trio.MemorySendChannel[Batch]
    reply: trio.MemorySendChannel[int | None]
    cursor: WatchCursor | None = None


class RemoveWatch(msgspec.Struct, frozen=True, kw_only=True):
    """Leave the hub (a key it does not know is ignored)."""

    key: tuple[int, int]


HubMsg: TypeAlias = Recovered | Committed | AddWatch | RemoveWatch
"""The hub's mailbox: the store's published stream, and the watches joining and leaving."""


_OBJECT_ENCODERS: dict[str, Any] = {
    "msgpack": msgspec.msgpack.Encoder(enc_hook=enc_hook),
    "json": msgspec.json.Encoder(enc_hook=enc_hook),
}
"""The same encoders the connections' codecs use (``protocol/framing.py``)."""


def _id_split(encoding: str) -> int:
    """Where the watch id's value starts in an encoded :class:`EventFrame`: the frame is
    ``{"msg": "event", "id": <id>, ...}`` in both encodings (the tag, then the fields in
    order), so the bytes before the id are the same for every event. Found by encoding ids 0
    and 1 (one byte each in both encodings) and taking the first byte that differs."""
    encoder = _OBJECT_ENCODERS[encoding]
    template = EventFrame(id=0, revision=1, type="Added", kind="Pod", namespace="", name="")
    zero, one = encoder.encode(template), encoder.encode(msgspec.structs.replace(template, id=1))
    at = next(i for i, (a, b) in enumerate(zip(zero, one, strict=True)) if a != b)
    assert zero[at + 1 :] == one[at + 1 :]
    return at


_ID_AT = {encoding: _id_split(encoding) for encoding in _OBJECT_ENCODERS}


class EncodedObjects:
    """Each committed change's event encoded once per encoding and shared by every watch
    sending it: with 20 watchers, encoding every Pod for each of them was the daemon's largest
    cost, and then each event's envelope.

    The event is encoded once with watch id 0; a watch's frame is the bytes before the id, its
    own id encoded, and the bytes after (:func:`_id_split`), equal to encoding its Event.
    Holds the last :data:`ENCODED_OBJECTS` changes' events; each change is kept beside its
    bytes, so a recycled ``id()`` never answers another's bytes.
    """

    def __init__(self, size: int = ENCODED_OBJECTS) -> None:
        self._size = size
        self._events: collections.OrderedDict[tuple[int, str], tuple[Change, bytes, bytes]] = (
            collections.OrderedDict()
        )

    def frame(self, encoding: str, watch_id: int, change: Change) -> bytes:
        """The payload of ``change``'s event for watch ``watch_id``, equal to encoding
        the Event itself with the connection's codec."""
        key = (id(change), encoding)
        hit = self._events.get(key)
        if hit is None or hit[0] is not change:
            obj = change.object
            encoder = _OBJECT_ENCODERS[encoding]
            payload: bytes = encoder.encode(
                EventFrame(
                    id=0,
                    revision=change.revision,
                    type=change.type,
                    kind=change.kind,
                    namespace=change.namespace,
                    name=change.name,
                    object=None if obj is None else msgspec.Raw(encoder.encode(obj)),
                    node=change.node,
                    message=change.message,
                )
            )
            at = _ID_AT[encoding]
            hit = (change, payload[:at], payload[at + 1 :])
            self._events[key] = hit
            if len(self._events) > self._size:
                self._events.popitem(last=False)
        _, head, tail = hit
        watch: bytes = _OBJECT_ENCODERS[encoding].encode(watch_id)
        return head + watch + tail


class Hub:
    """The watch hub's state (owned by the gateway's hub task).

    Args:
        watch_buffer: events a watch may have waiting (``podium.watchBuffer``).

    Attributes:
        revision: the last revision the hub has seen.
        ready: set once the store's recovered state is in.
        ring: the last :data:`RING` changes (without their previous object and trace).
        watches: the watches joined, by (connection, watch id).
    """

    def __init__(self, watch_buffer: int = WATCH_BUFFER) -> None:
        self.revision = 0
        self.ready = trio.Event()
        self.ring: collections.deque[Change] = collections.deque(maxlen=RING)
        self.watches: dict[tuple[int, int], _Watch] = {}
        self.watch_buffer = watch_buffer

    def _wanted(self, watch: _Watch, changes: Sequence[Change]) -> Batch:
        """The changes of ``changes`` past ``watch``'s position that it wants."""
        position, kinds = watch.position, watch.kinds
        if changes and changes[0].revision > position:
            if not kinds:
                return list(changes)
            return [c for c in changes if c.kind in kinds]
        return [c for c in changes if c.revision > position and (not kinds or c.kind in kinds)]

    def _room(self, watch: _Watch, wanted: int) -> bool:
        """Whether ``watch`` may take ``wanted`` more events: always when nothing is waiting
        for its forwarder (a commit is taken whole), else while the waiting events stay within
        the buffer."""
        waiting = watch.waiting()
        return not waiting or waiting + wanted <= self.watch_buffer

    def _deliver(self, watch: _Watch, batch: Batch, through: int) -> bool:
        """Hand ``batch`` (possibly empty) to ``watch`` as one message; its position moves to
        ``through``. False when its channel is full or gone."""
        if batch:
            try:
                watch.channel.send_nowait(batch)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                return False
            watch.handed = batch[-1].revision
            watch.events += len(batch)
        watch.position = max(watch.position, through)
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
        """Keep ``msg``'s changes in the ring and hand them to the watches; cut off each watch
        too slow to take them."""
        # The ring serves watchers only: the previous object and the trace carrier are dead
        # weight there (65 536 of them).
        self.ring.extend(
            c
            if c.old is None and c.trace is None
            else msgspec.structs.replace(c, old=None, trace=None)
            for c in msg.changes
        )
        self.revision = max(self.revision, msg.revision)
        changes = msg.changes
        if not changes:
            return
        through = changes[-1].revision
        # Watches of the same kinds at the same position (the usual case: every watch that
        # keeps up) want the same changes: filtered once, the one list handed to each.
        shared: dict[tuple[frozenset[str], int], Batch] = {}
        for key, watch in list(self.watches.items()):
            at = (watch.kinds, watch.position)
            wanted = shared.get(at)
            if wanted is None:
                wanted = shared[at] = self._wanted(watch, changes)
            if not (self._room(watch, len(wanted)) and self._deliver(watch, wanted, through)):
                # Too slow (or gone): cut it off; its forwarder reports where to resume.
                watch.channel.close()
                del self.watches[key]

    def add(self, msg: AddWatch) -> int | None:
        """Register a watch; answer its starting position, or None when the ring no longer
        reaches back to it (the watcher must read the log again)."""
        position = self.revision if msg.position is None else msg.position
        counts = msg.cursor if msg.cursor is not None else WatchCursor(delivered=position)
        watch = _Watch(msg.kinds, position, msg.channel, msg.cursor, counts)
        if position < self.revision:
            if self.ring and self.ring[0].revision > position + 1:
                return None
            # A new watch has nothing waiting: it takes the whole gap (references into the
            # ring), so a watcher that resumes while the daemon is busy still gets in.
            gap = [c for c in self.ring if c.revision > position]
            through = gap[-1].revision if gap else position
            if not self._deliver(watch, self._wanted(watch, gap), through):
                return None
        self.watches[msg.key] = watch
        return position

    def remove(self, key: tuple[int, int]) -> None:
        """Let go of the watch ``key`` (its forwarder's stream ends)."""
        watch = self.watches.pop(key, None)
        if watch is not None:
            watch.channel.close()


class Watches:
    """Serves each connection's watch requests: the retained log, then the hub's changes.

    Args:
        store: the store's mailbox (the log is read from it).
        hub: the hub's mailbox (watches join and leave it).
        watch_buffer: ``podium.watchBuffer``, named when a watch is cut off.
        stopping: whether the gateway is stopping (a watch the hub let go of is then told
            ``unavailable``, not ``overloaded``).

    Attributes:
        encoded: the encodings of committed objects, shared by every watch.
    """

    def __init__(
        self,
        store: trio.MemorySendChannel[StoreMsg],
        hub: trio.MemorySendChannel[HubMsg],
        *,
        watch_buffer: int = WATCH_BUFFER,
        stopping: Callable[[], bool],
    ) -> None:
        self._store = store
        self._hub = hub
        self._watch_buffer = watch_buffer
        self._stopping = stopping
        self.encoded = EncodedObjects()

    async def serve(self, conn: Connection, msg: Watch) -> None:
        """Serve one watch until it is cancelled, cut off, or the connection ends.

        The reader registered the watch's cancel scope before this task started, so a Cancel
        sent right behind the Watch finds it (request tasks start in no set order).
        """
        scope = conn.watches.get(msg.id)
        if scope is None:
            return
        key = (conn.conn_id, msg.id)
        try:
            with scope:
                await self._join(conn, msg, key)
        finally:
            conn.watches.pop(msg.id, None)
            # Always: a watch cancelled while joining or streaming is still in the hub (a
            # RemoveWatch for a key the hub never saw is harmless).
            with trio.CancelScope(shield=True):
                await send(self._hub, RemoveWatch(key=key))

    async def _join(self, conn: Connection, msg: Watch, key: tuple[int, int]) -> int | None:
        """Register with the hub and stream; the position joined at, or None if it never was."""
        unknown = sorted(set(msg.kinds) - set(KINDS))
        if unknown:
            await _watch_error(
                conn,
                ErrorReply(
                    id=msg.id,
                    code="invalid",
                    message=f"unknown kind {unknown[0]!r}; known: {', '.join(sorted(KINDS))}",
                    path="$.kinds",
                ),
            )
            return None
        kinds = frozenset(msg.kinds)
        backlog: list[Change] = []
        position: int | None = None
        cursor = WatchCursor(delivered=msg.from_revision or 0)
        replied = False
        assert conn.codec is not None  # a watch runs only after the handshake
        encoded, encoding = self.encoded, conn.codec.encoding
        if msg.from_revision is not None:
            # Behind the core's memory the store answers a page of the log on disk at a time
            # (read off its loop); each page is sent before the next is read, once the
            # connection has room for it. The core's memory answers the rest whole.
            after = msg.from_revision
            limit = max(1, min(PAGE, self._watch_buffer))
            while True:
                events: EventsResult | StoreFailure = await ask(
                    self._store, partial(_read_events, after, limit)
                )
                if isinstance(events, StoreFailure):
                    # Beyond the current revision (invalid) or compacted (gone): the field is
                    # from_revision.
                    failed = msgspec.structs.replace(
                        failure(msg.id, events), path="$.from_revision"
                    )
                    await _watch_error(conn, failed)
                    return None
                wanted = [c for c in events.changes if not kinds or c.kind in kinds]
                if not events.more:
                    backlog = wanted
                    position = events.revision
                    break
                if not replied:
                    await conn.send(WatchReply(id=msg.id, revision=msg.from_revision))
                    replied = True
                if not (
                    await _wait_for_room(conn, len(wanted), self._watch_buffer)
                    and await self._send_page(conn, msg.id, wanted, cursor)
                ):
                    await _watch_error(conn, self._too_slow(msg.id, cursor.delivered))
                    return None
                after = cursor.delivered = events.changes[-1].revision
        # Unbounded: the hub counts what waits here against podium.watchBuffer and cuts the
        # watch off rather than ever wait for it.
        changes_to, changes = trio.open_memory_channel[Batch](math.inf)
        joined: int | None = await ask(
            self._hub,
            lambda r: AddWatch(
                key=key, position=position, kinds=kinds, channel=changes_to, cursor=cursor, reply=r
            ),
        )
        if joined is None:
            # Nothing of the core's backlog was sent: resume after the last page sent (where
            # the client asked to start when there was none).
            changes_to.close()
            resume = cursor.delivered if replied else msg.from_revision
            await _watch_error(
                conn,
                ErrorReply(
                    id=msg.id,
                    code="overloaded",
                    message=f"the daemon moved on too fast; resume from revision {resume}",
                    revision=resume,
                ),
            )
            return None
        if msg.from_revision is None:
            last = cursor.delivered = joined
        else:
            last = cursor.delivered
        if not replied:
            await conn.send(WatchReply(id=msg.id, revision=last))
        if backlog:
            await conn.send_payloads([encoded.frame(encoding, msg.id, c) for c in backlog])
            last = cursor.delivered = backlog[-1].revision
        async with changes:
            # A commit's changes arrive as one batch (and whatever else waits is taken with
            # it): encoded, then handed to the writer as one message.
            while (batches := await receive_batch(changes)) is not None:
                batch = [c for b in batches for c in b]
                cursor.taken += len(batch)
                for start in range(0, len(batch), FORWARD_CHUNK):
                    if start:
                        # A put of thousands: let the scheduler's actors in between slices.
                        await trio.lowlevel.checkpoint()
                    part = batch[start : start + FORWARD_CHUNK]
                    await conn.send_payloads([encoded.frame(encoding, msg.id, c) for c in part])
                    last = cursor.delivered = part[-1].revision
        # The hub let go of us: we were too slow, or the daemon is stopping.
        if self._stopping():
            end = ErrorReply(
                id=msg.id, code="unavailable", message="podium is shutting down", revision=last
            )
        else:
            end = self._too_slow(msg.id, last)
        await _watch_error(conn, end)
        return joined

    async def _send_page(
        self, conn: Connection, watch_id: int, page: list[Change], cursor: WatchCursor
    ) -> bool:
        """Send a page of the log; False when the client takes nothing for
        :data:`PAGE_STALL_SECONDS` (``cursor.delivered``: the last change sent)."""
        assert conn.codec is not None
        encoding = conn.codec.encoding
        for change in page:
            with trio.move_on_after(PAGE_STALL_SECONDS):
                await conn.send_payload(self.encoded.frame(encoding, watch_id, change))
                cursor.delivered = change.revision
                continue
            return False
        return True

    def _too_slow(self, watch_id: int, last: int) -> ErrorReply:
        return ErrorReply(
            id=watch_id,
            code="overloaded",
            message=(
                f"watch fell more than {self._watch_buffer} events behind "
                f"(podium.watchBuffer); resume from revision {last}"
            ),
            revision=last,
        )


def _read_events(
    after: int, limit: int, reply: trio.MemorySendChannel[EventsResult | StoreFailure]
) -> ReadEvents:
    return ReadEvents(after=after, limit=limit, reply=reply)


def has_room(waiting: int, wanted: int, buffer: int) -> bool:
    """Whether a page of ``wanted`` events may join ``waiting`` frames not yet written: always
    when none wait (a page is taken whole), else while they stay within the watch buffer (the
    hub's rule for a commit)."""
    return not waiting or waiting + wanted <= buffer


async def _wait_for_room(conn: Connection, wanted: int, buffer: int) -> bool:
    """Wait until the connection's outbox has room for a page of ``wanted`` events; False
    when the client takes nothing for :data:`PAGE_STALL_SECONDS` (the watch is cut off)."""
    assert conn.outbox is not None
    outbox = conn.outbox
    with trio.move_on_after(PAGE_STALL_SECONDS):
        # A memory channel tells no one when it drains: look again every PAGE_POLL_SECONDS.
        while not has_room(outbox.statistics().current_buffer_used, wanted, buffer):  # noqa: ASYNC110
            await trio.sleep(PAGE_POLL_SECONDS)
        return True
    return False


async def _watch_error(conn: Connection, error: ErrorReply) -> None:
    count_error("watch", error.code)
    await conn.send(error)
