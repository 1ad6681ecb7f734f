"""The gateway's limits at the actor level: the hub's per-watch buffer accounting, and the
in-flight bound of one connection (over an in-memory stream, with a fake store that holds each
read until the test lets it go)."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
import trio.testing
from builders import make_node, make_pod

from podium.actors.gateway.gateway import AddWatch, Gateway, HubMsg, _Hub
from podium.actors.mail import CacheMsg, Handles, QueueMsg, SchedulerMsg
from podium.protocol import objects as o
from podium.protocol.framing import FrameReader, frame
from podium.store.mail import Change, Committed, ReadObjects, ReadResult, Recovered, StoreMsg

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
    hub = _Hub(watch_buffer=8)
    hub.revision = next(_revisions)
    tx, rx = trio.open_memory_channel[Change](math.inf)
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
    taken = []
    while True:
        try:
            taken.append(rx.receive_nowait().name)
        except (trio.WouldBlock, trio.EndOfChannel):
            break
    expected = [f"w{i}" for i in range(case.waiting)]
    if case.kept:
        expected += [f"p{i}" for i in range(case.pods)]
    # A watch cut off keeps what it had: its forwarder sends that, then where to resume.
    assert taken == expected


async def test_a_new_watch_takes_the_whole_gap_from_the_ring() -> None:
    hub = _Hub(watch_buffer=4)
    start = next(_revisions)  # the changes below come right after it
    hub.revision = start
    hub.committed(_committed([_change(make_pod(f"p{i}").obj()) for i in range(10)]))
    tx, rx = trio.open_memory_channel[Change](math.inf)
    reply_to, _reply = trio.open_memory_channel[int | None](1)
    joined = hub.add(
        AddWatch(key=(1, 1), position=start, kinds=frozenset(), channel=tx, reply=reply_to)
    )
    assert joined == start
    assert rx.statistics().current_buffer_used == 10


# --------------------------------------------------------------------------- in flight


@dataclass
class FakeStore:
    """Answers each ReadObjects with an empty list, once the test releases it."""

    inbox: trio.MemoryReceiveChannel[StoreMsg]
    held: list[ReadObjects] = field(default_factory=list)
    most: int = 0

    async def run(self) -> None:
        async for msg in self.inbox:
            assert isinstance(msg, ReadObjects), msg
            self.held.append(msg)
            self.most = max(self.most, len(self.held))

    def release(self, n: int) -> None:
        for msg in self.held[:n]:
            msg.reply.send_nowait(ReadResult(revision=1, items=[]))
        del self.held[:n]


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


@asynccontextmanager
async def _gateway(**limits: int) -> AsyncIterator[tuple[Gateway, FakeStore, Peer]]:
    store_tx, store_rx = trio.open_memory_channel[StoreMsg](math.inf)
    hub_tx, hub_rx = trio.open_memory_channel[HubMsg](math.inf)
    handles = Handles(
        store=store_tx,
        scheduler=trio.open_memory_channel[SchedulerMsg](1)[0],
        queue=trio.open_memory_channel[QueueMsg](1)[0],
        cache=trio.open_memory_channel[CacheMsg](1)[0],
    )
    gateway = Gateway(hub_rx, hub_tx, handles, server_version="test", **limits)
    store = FakeStore(store_rx)
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(store.run)
        nursery.start_soon(gateway._run_hub)
        hub_tx.send_nowait(Recovered(revision=1, objects=[]))
        nursery.start_soon(gateway._connection, gateway._open(server))
        peer = Peer(client)
        await peer.send({"msg": "hello", "protocol": 1, "encoding": "json"})
        assert (await peer.receive())["msg"] == "hello_reply"
        yield gateway, store, peer
        nursery.cancel_scope.cancel()


async def test_a_connection_has_at_most_max_in_flight_requests_at_once() -> None:
    async with _gateway(max_in_flight=3) as (_, store, peer):
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
    async with _gateway(max_in_flight=1) as (gateway, store, peer):
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
