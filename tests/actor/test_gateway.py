"""The gateway at the actor level: the hub's per-watch buffer accounting, the in-flight bound
of one connection, and simulate's priority admission (over an in-memory stream, with fakes for
the store and the scheduler)."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import pytest
import trio
import trio.testing
from builders import make_node, make_pod

from podium.actors.framework.result import ScheduleResult
from podium.actors.gateway.connection import Outboxes
from podium.actors.gateway.gateway import Gateway
from podium.actors.gateway.watch import FORWARD_CHUNK, AddWatch, Batch, Hub, HubMsg
from podium.actors.mail.messages import (
    CacheMsg,
    Decision,
    Explained,
    ExplainPod,
    Handles,
    QueueMsg,
    SchedulerMsg,
)
from podium.protocol import objects as o
from podium.protocol.framing import FrameReader, frame
from podium.store.mail import (
    Change,
    Committed,
    EventsResult,
    ReadEvents,
    ReadObjects,
    ReadResult,
    Recovered,
    StoreMsg,
)

_revisions = itertools.count(1)


def _change(obj: o.KubeObject) -> Change:
    return Change(
        revision=next(_revisions),
        type="Added",
        kind=type(obj).__name__,
        namespace=obj.metadata.namespace,
        name=obj.metadata.name,
        object=obj,
    )


def _committed(changes: list[Change]) -> Committed:
    return Committed(revision=changes[-1].revision, changes=changes)


# --------------------------------------------------------------------------- the hub


@dataclass(frozen=True)
class BufferCase:
    name: str
    waiting: int  # events already waiting for the watch's forwarder
    pods: int  # pods in the next commit
    nodes: int  # nodes in the next commit (the watch wants pods only)
    kept: bool


BUFFER_CASES = [
    BufferCase("an idle watch takes a commit larger than its buffer", 0, 20, 0, kept=True),
    BufferCase("waiting plus the commit within the buffer", 3, 5, 0, kept=True),
    BufferCase("waiting plus the commit exactly the buffer", 4, 4, 0, kept=True),
    BufferCase("waiting plus the commit past the buffer", 4, 5, 0, kept=False),
    BufferCase("changes the watch does not want do not count", 4, 4, 30, kept=True),
    BufferCase("one waiting event and a commit past the buffer", 1, 8, 0, kept=False),
]


@pytest.mark.parametrize("case", BUFFER_CASES, ids=lambda c: c.name)
async def test_a_watch_is_cut_off_only_when_its_waiting_events_pass_the_buffer(
    case: BufferCase,
) -> None:
    hub = Hub(watch_buffer=8)
    hub.revision = next(_revisions)
    tx, rx = trio.open_memory_channel[Batch](math.inf)
    reply_to, _reply = trio.open_memory_channel[int | None](1)
    hub.add(
        AddWatch(key=(1, 1), position=None, kinds=frozenset({"Pod"}), channel=tx, reply=reply_to)
    )
    if case.waiting:
        hub.committed(_committed([_change(make_pod(f"w{i}").obj()) for i in range(case.waiting)]))
    changes = [_change(make_node(f"n{i}").obj()) for i in range(case.nodes)]
    changes += [_change(make_pod(f"p{i}").obj()) for i in range(case.pods)]
    hub.committed(_committed(changes))
    assert ((1, 1) in hub.watches) == case.kept
    taken, batches = [], []
    while True:
        try:
            batch = rx.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            break
        batches.append(len(batch))
        taken += [c.name for c in batch]
    # One message per commit, holding only the changes the watch wants.
    assert batches == [n for n in (case.waiting, case.pods if case.kept else 0) if n]
    expected = [f"w{i}" for i in range(case.waiting)]
    if case.kept:
        expected += [f"p{i}" for i in range(case.pods)]
    # A watch cut off keeps what it had: its forwarder sends that, then where to resume.
    assert taken == expected


async def test_a_new_watch_takes_the_whole_gap_from_the_ring() -> None:
    hub = Hub(watch_buffer=4)
    start = next(_revisions)  # the changes below come right after it
    hub.revision = start
    hub.committed(_committed([_change(make_pod(f"p{i}").obj()) for i in range(10)]))
    tx, rx = trio.open_memory_channel[Batch](math.inf)
    reply_to, _reply = trio.open_memory_channel[int | None](1)
    joined = hub.add(
        AddWatch(key=(1, 1), position=start, kinds=frozenset(), channel=tx, reply=reply_to)
    )
    assert joined == start
    # The gap as one message.
    (gap,) = [rx.receive_nowait()]
    assert [c.name for c in gap] == [f"p{i}" for i in range(10)]
    assert rx.statistics().current_buffer_used == 0


async def test_watches_that_keep_up_share_one_filtered_list_per_commit() -> None:
    hub = Hub(watch_buffer=8)
    hub.revision = next(_revisions)
    reply_to, _reply = trio.open_memory_channel[int | None](4)
    inboxes = []
    for watch_id, kinds in ((1, {"Pod"}), (2, {"Pod"}), (3, {"Node"})):
        tx, rx = trio.open_memory_channel[Batch](math.inf)
        inboxes.append(rx)
        hub.add(
            AddWatch(
                key=(1, watch_id), position=None, kinds=frozenset(kinds), channel=tx, reply=reply_to
            )
        )
    hub.committed(_committed([_change(make_pod("a").obj()), _change(make_node("n").obj())]))
    pods_1, pods_2, nodes = (rx.receive_nowait() for rx in inboxes)
    assert [c.name for c in pods_1] == ["a"] and [c.name for c in nodes] == ["n"]
    assert pods_1 is pods_2  # filtered once for both Pod watches


# --------------------------------------------------------------------------- a gateway


@dataclass
class Peer:
    """The client's end of one in-memory connection, speaking JSON frames."""

    stream: trio.abc.Stream
    reader: FrameReader = field(default_factory=FrameReader)

    async def send(self, doc: dict[str, Any]) -> None:
        await self.stream.send_all(frame(json.dumps(doc).encode()))

    async def receive(self) -> dict[str, Any]:
        while (payload := self.reader.next_frame()) is None:
            self.reader.feed(await self.stream.receive_some(65536))
        doc: dict[str, Any] = json.loads(payload)
        return doc


class OneConnection(trio.abc.Listener[trio.abc.Stream]):
    """A listener that accepts ``stream`` once, then nothing more."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self._stream: trio.abc.Stream | None = stream

    async def accept(self) -> trio.abc.Stream:
        stream, self._stream = self._stream, None
        if stream is None:
            await trio.sleep_forever()
        assert stream is not None
        return stream

    async def aclose(self) -> None:
        self._stream = None


async def _unused(inbox: trio.MemoryReceiveChannel[Any]) -> None:
    async for msg in inbox:
        raise AssertionError(f"unexpected {msg}")


Fake = Callable[[trio.MemoryReceiveChannel[Any]], Awaitable[None]]


@asynccontextmanager
async def _gateway(
    store: Fake,
    scheduler: Fake = _unused,
    pair: Callable[[], tuple[trio.abc.Stream, trio.abc.Stream]] = trio.testing.memory_stream_pair,
    **limits: int,
) -> AsyncIterator[tuple[Gateway, Peer]]:
    """A gateway whose store and scheduler are the fakes given, with one client connected
    (``pair``: lockstep_stream_pair for a client whose reads the test decides)."""
    store_tx, store_rx = trio.open_memory_channel[StoreMsg](math.inf)
    scheduler_tx, scheduler_rx = trio.open_memory_channel[SchedulerMsg](math.inf)
    hub_tx, hub_rx = trio.open_memory_channel[HubMsg](math.inf)
    handles = Handles(
        store=store_tx,
        scheduler=scheduler_tx,
        queue=trio.open_memory_channel[QueueMsg](1)[0],
        cache=trio.open_memory_channel[CacheMsg](1)[0],
    )
    gateway = Gateway(hub_rx, hub_tx, handles, server_version="test", **limits)
    client, server = pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(store, store_rx)
        nursery.start_soon(scheduler, scheduler_rx)
        hub_tx.send_nowait(Recovered(revision=1, objects=[]))
        await nursery.start(gateway.run, [OneConnection(server)])
        peer = Peer(client)
        await peer.send({"msg": "hello", "protocol": 1, "encoding": "json"})
        assert (await peer.receive())["msg"] == "hello_reply"
        yield gateway, peer
        nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------- in flight


@dataclass
class HeldReads:
    """A store that answers each ReadObjects with an empty list, once the test releases it."""

    held: list[ReadObjects] = field(default_factory=list)
    most: int = 0

    async def run(self, inbox: trio.MemoryReceiveChannel[StoreMsg]) -> None:
        async for msg in inbox:
            assert isinstance(msg, ReadObjects), msg
            self.held.append(msg)
            self.most = max(self.most, len(self.held))

    def release(self, n: int) -> None:
        for msg in self.held[:n]:
            msg.reply.send_nowait(ReadResult(revision=1, items=[]))
        del self.held[:n]


async def test_a_connection_has_at_most_max_in_flight_requests_at_once() -> None:
    store = HeldReads()
    async with _gateway(store.run, max_in_flight=3) as (_, peer):
        for i in range(10):
            await peer.send({"msg": "get", "id": i, "kind": "Pod"})
        await trio.testing.wait_all_tasks_blocked()
        assert len(store.held) == 3  # the reader waits; the other 7 stay in the socket
        store.release(1)
        await trio.testing.wait_all_tasks_blocked()
        assert len(store.held) == 3
        answered = {(await peer.receive())["id"]}
        for _ in range(9):
            store.release(len(store.held))
            await trio.testing.wait_all_tasks_blocked()
        while len(answered) < 10:
            answered.add((await peer.receive())["id"])
        assert answered == set(range(10))
        assert store.most == 3


async def test_watches_hold_no_in_flight_slot() -> None:
    store = HeldReads()
    async with _gateway(store.run, max_in_flight=1) as (gateway, peer):
        for i in (1, 2, 3):
            await peer.send({"msg": "watch", "id": i})
        for _ in (1, 2, 3):
            assert (await peer.receive())["msg"] == "watch_reply"
        assert gateway.watch_count() == 3
        await peer.send({"msg": "get", "id": 4, "kind": "Pod"})
        await trio.testing.wait_all_tasks_blocked()
        store.release(1)
        assert await peer.receive() == {
            "msg": "get_reply",
            "id": 4,
            "revision": 1,
            "items": [],
            "continue": "",
            "remaining": 0,
        }


@dataclass
class BigReads:
    """A store that answers each ReadObjects at once with one pod of ~4 KiB."""

    answered: int = 0

    async def run(self, inbox: trio.MemoryReceiveChannel[StoreMsg]) -> None:
        pod = make_pod("big").annotation("bulk", "x" * 4096).obj()
        async for msg in inbox:
            assert isinstance(msg, ReadObjects), msg
            self.answered += 1
            msg.reply.send_nowait(ReadResult(revision=1, items=[pod]))


async def test_a_peer_that_does_not_read_stops_its_reader_at_its_outbox_bytes() -> None:
    # Issue 16, point 1: the in-flight slot is held until the reply is in the outbox, and the
    # outbox is bounded in bytes, so the requests answered while the peer reads nothing are
    # the ones in flight plus the frame the writer is blocked on.
    store = BigReads()
    async with (
        trio.open_nursery() as nursery,
        _gateway(
            store.run,
            pair=trio.testing.lockstep_stream_pair,
            max_in_flight=2,
            max_outbox_bytes=1024,
        ) as (gateway, peer),
    ):

        async def pipeline() -> None:
            for i in range(20):
                await peer.send({"msg": "get", "id": i, "kind": "Pod", "name": "big"})

        nursery.start_soon(pipeline)
        await trio.testing.wait_all_tasks_blocked()
        assert store.answered <= 2 + 1
        # One frame (over the limit alone) waits for the writer; nothing else is encoded.
        assert 4096 < gateway.outboxes.used < 2 * 4096
        answered = set()
        while len(answered) < 20:
            reply = await peer.receive()
            assert reply["msg"] == "get_reply"
            answered.add(reply["id"])
        assert answered == set(range(20))
        await trio.testing.wait_all_tasks_blocked()
        assert gateway.outboxes.used == 0


async def test_the_total_outbox_bytes_wake_a_waiter_once_below_the_limit() -> None:
    outboxes = Outboxes(100)
    outboxes.take(60)
    outboxes.take(60)
    woken = trio.Event()
    lot = trio.lowlevel.ParkingLot()

    async def waiter() -> None:
        await outboxes.wait(lot)
        woken.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        outboxes.give(10)  # 110: still full
        await trio.testing.wait_all_tasks_blocked()
        assert not woken.is_set()
        outboxes.give(20)  # 90
        await trio.testing.wait_all_tasks_blocked()
        assert woken.is_set()


async def test_a_connection_waiting_on_the_total_goes_on_once_its_own_outbox_is_written() -> None:
    # Every connection together is over maxBufferedBytes (another client holds it all), but
    # this one's writer empties its own outbox: it must not wait for the others.
    store = BigReads()
    async with (
        trio.open_nursery() as nursery,
        _gateway(store.run, max_in_flight=2, max_buffered_bytes=1024) as (gateway, peer),
    ):
        gateway.outboxes.take(10**6)  # the other clients' bytes, never given back here

        async def pipeline() -> None:
            for i in range(10):
                await peer.send({"msg": "get", "id": i, "kind": "Pod", "name": "big"})

        nursery.start_soon(pipeline)
        answered = set()
        with trio.fail_after(5):
            while len(answered) < 10:
                answered.add((await peer.receive())["id"])
        assert answered == set(range(10))


# --------------------------------------------------------------------------- the hello


class Streams(trio.abc.Listener[trio.abc.Stream]):
    """A listener that accepts each stream put in it by the test."""

    def __init__(self) -> None:
        self.tx, self._rx = trio.open_memory_channel[trio.abc.Stream](math.inf)

    async def accept(self) -> trio.abc.Stream:
        return await self._rx.receive()

    async def aclose(self) -> None:
        pass

    def connect(self) -> Peer:
        client, server = trio.testing.memory_stream_pair()
        self.tx.send_nowait(server)
        return Peer(client)


async def test_past_max_handshakes_the_oldest_connection_without_a_hello_is_closed() -> None:
    hub_tx, hub_rx = trio.open_memory_channel[HubMsg](math.inf)
    handles = Handles(
        store=trio.open_memory_channel[StoreMsg](1)[0],
        scheduler=trio.open_memory_channel[SchedulerMsg](1)[0],
        queue=trio.open_memory_channel[QueueMsg](1)[0],
        cache=trio.open_memory_channel[CacheMsg](1)[0],
    )
    gateway = Gateway(
        hub_rx, hub_tx, handles, server_version="test", max_handshakes=2, handshake_seconds=60
    )
    listener = Streams()
    async with trio.open_nursery() as nursery:
        hub_tx.send_nowait(Recovered(revision=1, objects=[]))
        await nursery.start(gateway.run, [listener])
        greeted = listener.connect()
        await greeted.send({"msg": "hello", "protocol": 1, "encoding": "json"})
        assert (await greeted.receive())["msg"] == "hello_reply"
        silent = [listener.connect() for _ in range(4)]
        await trio.testing.wait_all_tasks_blocked()
        # The two oldest silent ones were closed; the greeted one never counted.
        for peer, closed in zip(silent, (True, True, False, False), strict=True):
            with trio.move_on_after(1) as waited:
                assert await peer.stream.receive_some(1) == b""
            assert waited.cancelled_caught is not closed
        await silent[3].send({"msg": "hello", "protocol": 1, "encoding": "json"})
        assert (await silent[3].receive())["msg"] == "hello_reply"
        nursery.cancel_scope.cancel()


async def test_a_commit_larger_than_a_forwarder_slice_reaches_the_watch_whole_and_in_order() -> (
    None
):
    hub_tx, hub_rx = trio.open_memory_channel[HubMsg](math.inf)
    handles = Handles(
        store=trio.open_memory_channel[StoreMsg](1)[0],
        scheduler=trio.open_memory_channel[SchedulerMsg](1)[0],
        queue=trio.open_memory_channel[QueueMsg](1)[0],
        cache=trio.open_memory_channel[CacheMsg](1)[0],
    )
    gateway = Gateway(hub_rx, hub_tx, handles, server_version="test")
    listener = Streams()
    start = next(_revisions)
    changes = [_change(make_pod(f"p{i}").obj()) for i in range(2 * FORWARD_CHUNK + 5)]
    async with trio.open_nursery() as nursery:
        hub_tx.send_nowait(Recovered(revision=start, objects=[]))
        await nursery.start(gateway.run, [listener])
        peer = listener.connect()
        await peer.send({"msg": "hello", "protocol": 1, "encoding": "json"})
        assert (await peer.receive())["msg"] == "hello_reply"
        await peer.send({"msg": "watch", "id": 7, "kinds": ["Pod"]})
        assert await peer.receive() == {"msg": "watch_reply", "id": 7, "revision": start}
        hub_tx.send_nowait(_committed(changes))
        got = [await peer.receive() for _ in changes]
        nursery.cancel_scope.cancel()
    # One commit, handed to the watch as one message and written in slices: every event once,
    # in revision order, each with the watch's id.
    assert [(e["msg"], e["id"], e["revision"], e["name"]) for e in got] == [
        ("event", 7, c.revision, c.name) for c in changes
    ]


# --------------------------------------------------------------------------- old revisions


@dataclass
class PagedLog:
    """A store whose log of ``revision`` changes is on disk up to ``on_disk`` (answered in
    pages of the request's limit) and in the core's memory after it (answered whole)."""

    revision: int
    on_disk: int
    asked: list[tuple[int, int]] = field(default_factory=list)

    async def run(self, inbox: trio.MemoryReceiveChannel[StoreMsg]) -> None:
        log = [
            Change(revision=r, type="Added", kind="Node", namespace="", name=f"n{r}", object=None)
            for r in range(1, self.revision + 1)
        ]
        async for msg in inbox:
            assert isinstance(msg, ReadEvents), msg
            self.asked.append((msg.after, msg.limit))
            after = log[msg.after :]
            if msg.after < self.on_disk:
                page = after[: msg.limit]
                msg.reply.send_nowait(EventsResult(revision=self.revision, changes=page, more=True))
            else:
                msg.reply.send_nowait(EventsResult(revision=self.revision, changes=after))


async def test_a_watch_reads_the_log_on_disk_a_page_at_a_time_then_memory_whole() -> None:
    store = PagedLog(revision=12, on_disk=9)
    async with _gateway(store.run, watch_buffer=4) as (_, peer):
        await peer.send({"msg": "watch", "id": 1, "from_revision": 1})
        assert await peer.receive() == {"msg": "watch_reply", "id": 1, "revision": 1}
        got = [(await peer.receive())["revision"] for _ in range(11)]
    # Pages of watchBuffer (4) events while behind memory, each asked after the last one
    # sent; the core's memory answers the rest whole: every revision once, in order.
    assert got == list(range(2, 13))
    assert store.asked == [(1, 4), (5, 4), (9, 4)]


# --------------------------------------------------------------------------- simulate


def _pc(
    name: str, value: int, *, default: bool = False, policy: str = "PreemptLowerPriority"
) -> o.PriorityClass:
    return o.PriorityClass(
        metadata=o.ObjectMeta(name=name),
        value=value,
        global_default=default,
        preemption_policy=policy,
    )


@dataclass(frozen=True)
class SimulateCase:
    name: str
    classes: list[o.PriorityClass]
    pod: dict[str, Any]
    want: tuple[int, str | None] | None = None
    """The simulated pod's (priority, preemptionPolicy); None when it is refused."""
    path: str | None = None
    message: str | None = None


BATCH = _pc("batch", 5, policy="Never")
DEFAULT = _pc("default1", 1000, default=True)

# The store's admission (tests/unit/store/test_core.py holds Kubernetes' rows): simulate places a
# pod with the priority a put would give it, and refuses it where a put would be refused.
SIMULATE_CASES = [
    SimulateCase(
        "a class gives its value and preemption policy",
        [BATCH],
        make_pod("p").spec(priorityClassName="batch").dict(),
        want=(5, "Never"),
    ),
    SimulateCase(
        "a system class needs no stored class",
        [],
        make_pod("p").spec(priorityClassName="system-node-critical").dict(),
        want=(2000001000, "PreemptLowerPriority"),
    ),
    SimulateCase(
        "no class takes the global default",
        [BATCH, DEFAULT],
        make_pod("p").dict(),
        want=(1000, "PreemptLowerPriority"),
    ),
    SimulateCase(
        "no class and no default is priority 0", [BATCH], make_pod("p").dict(), want=(0, None)
    ),
    SimulateCase(
        "two global defaults (a race): the lowest value, then the first name",
        [
            _pc("b-default", 1000, default=True, policy="Never"),
            _pc("a-default", 1000, default=True),
        ],
        make_pod("p").dict(),
        want=(1000, "PreemptLowerPriority"),
    ),
    SimulateCase(
        "a priority equal to its class's still takes the class's preemption policy",
        [BATCH],
        make_pod("p").spec(priorityClassName="batch", priority=5).dict(),
        want=(5, "Never"),
    ),
    SimulateCase(
        "an unknown class is refused",
        [BATCH],
        make_pod("p").spec(priorityClassName="gold").dict(),
        path="$.pod.spec.priorityClassName",
        message="pod default/p: no PriorityClass with name gold was found",
    ),
    SimulateCase(
        "a priority other than its class's is refused",
        [BATCH],
        make_pod("p").spec(priorityClassName="batch", priority=7).dict(),
        path="$.pod.spec.priority",
        message=(
            "pod default/p: the integer value of priority (7) must not be provided in pod spec; "
            "priority admission controller computed 5 from the given PriorityClass name"
        ),
    ),
]


@dataclass
class Classes:
    """A store that holds ``classes`` and answers the read of every PriorityClass."""

    classes: list[o.PriorityClass]

    async def run(self, inbox: trio.MemoryReceiveChannel[StoreMsg]) -> None:
        async for msg in inbox:
            assert isinstance(msg, ReadObjects) and msg.kind == "PriorityClass", msg
            msg.reply.send_nowait(ReadResult(revision=1, items=list(self.classes)))


@dataclass
class Deciding:
    """A scheduler that places every pod it is asked about on n1, keeping the pods."""

    asked: list[o.Pod] = field(default_factory=list)

    async def run(self, inbox: trio.MemoryReceiveChannel[SchedulerMsg]) -> None:
        async for msg in inbox:
            assert isinstance(msg, ExplainPod), msg
            self.asked.append(msg.pod.pod)
            decision = Decision(
                pod=msg.pod, node="n1", result=ScheduleResult(node="n1"), generation=1
            )
            msg.reply.send_nowait(Explained(decision=decision, hints=[]))


@pytest.mark.parametrize("case", SIMULATE_CASES, ids=attrgetter("name"))
async def test_simulate_admits_the_pod_as_a_put_would(case: SimulateCase) -> None:
    scheduler = Deciding()
    async with _gateway(Classes(case.classes).run, scheduler.run) as (_, peer):
        await peer.send({"msg": "simulate", "id": 1, "pod": case.pod})
        answer = await peer.receive()
    if case.want is None:
        assert (answer["msg"], answer["code"], answer["path"], answer["message"]) == (
            "error",
            "invalid",
            case.path,
            case.message,
        )
        assert scheduler.asked == []
        return
    assert (answer["msg"], answer["placement"]["node"]) == ("simulate_reply", "n1")
    [pod] = scheduler.asked
    assert (pod.spec.priority, pod.spec.preemption_policy) == case.want


# --------------------------------------------------------------------------- a stopped store


async def _stopped_store(inbox: trio.MemoryReceiveChannel[StoreMsg]) -> None:
    """A store that has stopped (its mailbox closed), as after a fail-stop."""
    await inbox.aclose()


async def test_a_request_to_a_stopped_store_is_answered_unavailable() -> None:
    # Issue 16, point 4: after a fail-stop, a put racing the stop is told nothing was done,
    # without a traceback in the log.
    async with _gateway(_stopped_store) as (_gateway_actor, peer):
        await trio.testing.wait_all_tasks_blocked()
        await peer.send({"msg": "get", "id": 7, "kind": "Pod", "name": "p"})
        reply = await peer.receive()
    assert (reply["msg"], reply["id"], reply["code"]) == ("error", 7, "unavailable")
    assert reply["message"] == "the daemon is stopping; nothing was done"
