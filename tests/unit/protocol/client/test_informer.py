"""protocol/client/informer.py and backoff.py: the cache's rules of list and watch (table
tests), the backoff's delays, and the informer's resume, relist and backoff against an
in-memory fake daemon under trio's autojump clock (virtual times compared exactly).

The same informer against real daemons (kill -9, compaction, leader change) is in
tests/e2e/test_informer.py.
"""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from operator import attrgetter

import msgspec
import pytest
import trio
import trio.lowlevel
import trio.testing
from builders import make_node, make_pod

from podium.protocol.client import (
    Backoff,
    ConnectionLost,
    Informer,
    InformerCache,
    Notification,
    RemoteError,
    ServerUnreachable,
)
from podium.protocol.client.informer import Source
from podium.protocol.objects import KubeObject, Pod
from podium.protocol.wire import ErrorReply, Event, EventType, GetReply


def _at(obj: KubeObject, revision: int) -> KubeObject:
    meta = msgspec.structs.replace(obj.metadata, resource_version=str(revision))
    return msgspec.structs.replace(obj, metadata=meta)


def _event(revision: int, type_: EventType, obj: KubeObject) -> Event:
    node = obj.spec.node_name if isinstance(obj, Pod) else ""
    return Event(
        id=1,
        revision=revision,
        type=type_,
        kind=type(obj).__name__,
        namespace=obj.metadata.namespace,
        name=obj.metadata.name,
        object=_at(obj, revision),
        node=node if type_ == "Bound" else "",
    )


def _said(notes: Sequence[Notification]) -> list[tuple[str, str, int, bool]]:
    """(type, name, revision, from an event) per notification."""
    return [(n.type, n.object.metadata.name, n.revision, n.event is not None) for n in notes]


# ------------------------------------------------------------------ the cache's rules


def _listed_cache(*objs: KubeObject, revision: int = 10, **kw: str) -> InformerCache:
    cache = InformerCache(["Pod", "Node"], **kw)
    pods = [_at(o, revision) for o in objs if isinstance(o, Pod)]
    nodes = [_at(o, revision) for o in objs if not isinstance(o, Pod)]
    cache.replace(
        {
            "Pod": GetReply(id=1, revision=revision, items=pods),
            "Node": GetReply(id=2, revision=revision, items=nodes),
        }
    )
    return cache


@dataclass(frozen=True)
class ObserveCase:
    name: str
    event: Event
    want: tuple[str, str] | None  # (notification type, object name), or nothing
    cached: tuple[KubeObject, ...] = (make_pod("a").obj(),)
    namespace: str | None = None
    selector: str = ""


OBSERVE_CASES = [
    ObserveCase("Added of a new pod adds it", _event(11, "Added", make_pod("b").obj()), ("added", "b")),
    ObserveCase("Modified of a cached pod modifies it", _event(11, "Modified", make_pod("a").label("x", "y").obj()), ("modified", "a")),
    ObserveCase("Bound modifies the pod", _event(11, "Bound", make_pod("a").node("n1").obj()), ("modified", "a")),
    ObserveCase("Unschedulable modifies the pod", _event(11, "Unschedulable", make_pod("a").label("u", "1").obj()), ("modified", "a")),
    ObserveCase("Deleted deletes", _event(11, "Deleted", make_pod("a").obj()), ("deleted", "a")),
    ObserveCase("Preempted deletes (the victim is gone)", _event(11, "Preempted", make_pod("a").obj()), ("deleted", "a")),
    ObserveCase("Deleted of an object never seen says nothing", _event(11, "Deleted", make_pod("z").obj()), None),
    ObserveCase("an event at the list's revision is already in the list", _event(10, "Added", make_pod("b").obj()), None),
    ObserveCase("an event of a kind not kept is skipped", _event(11, "Added", make_node("n").obj()), None, cached=()),
    ObserveCase("a pod outside the namespace is not kept", _event(11, "Added", make_pod("b").ns("other").obj()), None, namespace="default"),
    ObserveCase("a pod that leaves the selection is deleted", _event(11, "Modified", make_pod("a").obj()), ("deleted", "a"), cached=(make_pod("a").label("app", "web").obj(),), selector="app=web"),
    ObserveCase("a pod that enters the selection is added", _event(11, "Modified", make_pod("b").label("app", "web").obj()), ("added", "b"), selector="app=web"),
]  # fmt: skip


@pytest.mark.parametrize("case", OBSERVE_CASES, ids=attrgetter("name"))
def test_observe(case: ObserveCase) -> None:
    cache = InformerCache(["Pod"], namespace=case.namespace, label_selector=case.selector)
    cache.replace({"Pod": GetReply(id=1, revision=10, items=[_at(o, 10) for o in case.cached])})
    note = cache.observe(case.event)
    got = None if note is None else (note.type, note.object.metadata.name)
    assert got == case.want
    assert cache.position == case.event.revision


def test_an_event_seen_twice_is_delivered_once() -> None:
    cache = _listed_cache()
    event = _event(11, "Added", make_pod("b").obj())
    assert cache.observe(event) is not None
    assert cache.observe(event) is None
    assert cache.observe(_event(11, "Deleted", make_pod("b").obj())) is None  # same revision
    assert [p.metadata.name for p in cache.objects("Pod")] == ["b"]


def test_a_relist_delivers_the_difference_at_the_lists_revision() -> None:
    cache = _listed_cache(make_pod("a").obj(), make_pod("b").obj(), make_pod("c").obj())
    pods = [_at(make_pod("b").node("n1").obj(), 14), _at(make_pod("c").obj(), 10)]
    pods.append(_at(make_pod("d").obj(), 13))
    notes = cache.replace(
        {
            "Pod": GetReply(id=3, revision=20, items=pods),
            "Node": GetReply(id=4, revision=21, items=[]),
        }
    )
    assert _said(notes) == [
        ("modified", "b", 20, False),
        ("added", "d", 20, False),
        ("deleted", "a", 20, False),
    ]
    assert notes[0].old is not None and notes[0].old.metadata.resource_version == "10"
    assert cache.position == 20  # the lowest list revision
    assert cache.floors == {"Pod": 20, "Node": 21}
    # A node event at 21 is already in the node list; at 22 it is new.
    assert cache.observe(_event(21, "Added", make_node("n1").obj())) is None
    assert cache.observe(_event(22, "Added", make_node("n2").obj())) is not None


def test_the_indexes_follow_namespace_and_node() -> None:
    cache = _listed_cache(make_pod("a").obj(), make_pod("b").ns("kube-system").obj())
    cache.observe(_event(11, "Bound", make_pod("a").node("n1").obj()))
    cache.observe(_event(12, "Added", make_pod("c").ns("kube-system").node("n1").obj()))
    assert [p.metadata.name for p in cache.by_node("n1")] == ["a", "c"]
    assert [p.metadata.name for p in cache.by_namespace("kube-system")] == ["b", "c"]
    cache.observe(_event(13, "Deleted", make_pod("c").ns("kube-system").obj()))
    assert [p.metadata.name for p in cache.by_node("n1")] == ["a"]
    assert [p.metadata.name for p in cache.by_namespace("kube-system")] == ["b"]
    cache.observe(_event(14, "Preempted", make_pod("a").obj()))
    assert cache.by_node("n1") == []
    assert len(cache) == 1


def test_an_unknown_kind_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="unknown kind\\(s\\) Deployment; known: Node, Pod"):
        InformerCache(["Deployment"])


def test_a_relisted_notification_reads_as_an_event() -> None:
    pod = _at(make_pod("a").node("n1").obj(), 5)
    event = Notification(type="deleted", object=pod, revision=9).as_event()
    assert (event.revision, event.type, event.kind, event.namespace, event.name) == (
        9,
        "Deleted",
        "Pod",
        "default",
        "a",
    )
    assert event.node == "n1"


# ------------------------------------------------------------------ backoff


def test_backoff_doubles_up_to_its_bound_and_resets() -> None:
    backoff = Backoff(initial=0.8, maximum=5, jitter=0)
    assert [backoff.next_delay() for _ in range(5)] == [0.8, 1.6, 3.2, 5, 5]
    backoff.reset()
    assert backoff.next_delay() == 0.8


def test_backoff_jitter_stretches_each_delay_within_its_bound() -> None:
    backoff = Backoff(initial=1, maximum=6, jitter=1.0, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(6)]
    for delay, base in zip(delays, [1, 2, 4, 6, 6, 6], strict=True):
        assert base <= delay <= min(2 * base, 6)
    assert len(set(delays[:3])) == 3  # jittered: not the bare doubling
    assert delays[3:] == [6, 6, 6]  # never past the bound


@pytest.mark.parametrize(
    ("initial", "maximum", "factor", "jitter"),
    [(0, 1, 2, 0), (2, 1, 2, 0), (1, 2, 0.5, 0), (1, 2, 2, -1)],
)
def test_backoff_refuses_a_shape_that_is_not_bounded(
    initial: float, maximum: float, factor: float, jitter: float
) -> None:
    with pytest.raises(ValueError, match="backoff needs"):
        Backoff(initial, maximum, factor, jitter)


# ------------------------------------------------------------------ the informer, on a fake


@dataclass
class FakeDaemon:
    """A store in memory that serves list and watch, and what a test does to it: drop every
    watch (a lost connection), refuse connections (down), compact its log."""

    revision: int = 100
    objects: dict[tuple[str, str, str], KubeObject] = field(default_factory=dict)
    log: list[Event] = field(default_factory=list)
    compacted: int = 0
    down: bool = False
    refuse_watch: ErrorReply | None = None
    connects: list[float] = field(default_factory=list)
    watches: list[int | None] = field(default_factory=list)
    lists: int = 0
    _streams: list[trio.MemorySendChannel[Event | Exception]] = field(default_factory=list)

    def change(self, type_: EventType, obj: KubeObject) -> None:
        self.revision += 1
        event = _event(self.revision, type_, obj)
        key = (event.kind, event.namespace, event.name)
        if type_ in ("Deleted", "Preempted"):
            del self.objects[key]
        else:
            assert event.object is not None
            self.objects[key] = event.object
        self.log.append(event)
        for stream in self._streams:
            stream.send_nowait(event)

    def drop(self, error: Exception | None = None) -> None:
        for stream in self._streams:
            stream.send_nowait(error or ConnectionLost("connection to the fake was lost"))
        self._streams.clear()

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Source]:
        self.connects.append(trio.current_time())
        await trio.lowlevel.checkpoint()
        if self.down:
            raise ServerUnreachable("fake", "connection refused")
        yield _FakeSource(self)


class _FakeSource:
    def __init__(self, daemon: FakeDaemon) -> None:
        self.daemon = daemon

    async def get(
        self,
        kind: str,
        name: str = "",
        namespace: str | None = None,
        label_selector: str = "",
        *,
        chunk_size: int = 0,
    ) -> GetReply:
        await trio.lowlevel.checkpoint()
        self.daemon.lists += 1
        items = [o for k, o in sorted(self.daemon.objects.items()) if k[0] == kind]
        return GetReply(id=1, revision=self.daemon.revision, items=items)

    @asynccontextmanager
    async def watch(
        self, from_revision: int | None = None, kinds: Sequence[str] = ()
    ) -> AsyncIterator[AsyncIterator[Event]]:
        daemon = self.daemon
        daemon.watches.append(from_revision)
        await trio.lowlevel.checkpoint()
        if daemon.refuse_watch is not None:
            refusal, daemon.refuse_watch = daemon.refuse_watch, None
            raise RemoteError(refusal)
        after = daemon.revision if from_revision is None else from_revision
        if after < daemon.compacted:
            raise RemoteError(
                ErrorReply(id=1, code="gone", message="compacted", revision=daemon.compacted + 1)
            )
        send, receive = trio.open_memory_channel[Event | Exception](math.inf)
        for event in daemon.log:
            if event.revision > after:
                send.send_nowait(event)
        daemon._streams.append(send)
        yield _Events(receive)


class _Events:
    def __init__(self, receive: trio.MemoryReceiveChannel[Event | Exception]) -> None:
        self._receive = receive

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> Event:
        item = await self._receive.receive()
        if isinstance(item, Exception):
            raise item
        return item


def _seeded() -> FakeDaemon:
    daemon = FakeDaemon()
    for name in ("a", "b", "c"):
        daemon.change("Added", make_pod(name).obj())
    return daemon


async def _start(
    nursery: trio.Nursery,
    daemon: FakeDaemon,
    notes: list[Notification],
    from_revision: int | None = None,
) -> Informer:
    informer = Informer(
        kinds=["Pod"],
        connector=daemon.connect,
        backoff=Backoff(initial=1, maximum=4, jitter=0),
        from_revision=from_revision,
    )
    informer.add_notification_handler(notes.append)
    await nursery.start(informer.run)
    return informer


async def test_it_resumes_after_a_lost_connection_from_the_last_revision(
    autojump_clock: trio.testing.MockClock,
) -> None:
    daemon = _seeded()
    notes: list[Notification] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            informer = await _start(nursery, daemon, notes)
            daemon.change("Added", make_pod("d").obj())
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            daemon.down = True
            daemon.drop()
            daemon.change("Bound", make_pod("a").node("n1").obj())
            daemon.change("Deleted", make_pod("b").obj())
            await trio.sleep(3.5)  # two refused tries: at +1 and +1+2
            daemon.down = False
            await trio.sleep(4)  # the next try, at +1+2+4, gets through
            nursery.cancel_scope.cancel()
    assert _said(notes) == [
        ("added", "a", 103, False),
        ("added", "b", 103, False),
        ("added", "c", 103, False),
        ("added", "d", 104, True),
        ("modified", "a", 105, True),
        ("deleted", "b", 106, True),
    ]
    assert [t - start for t in daemon.connects[1:]] == [1, 3, 7]
    assert daemon.watches == [103, 104]
    assert informer.lists == 1
    assert [p.metadata.name for p in informer.cache.by_node("n1")] == ["a"]


async def test_gone_relists_and_delivers_only_the_difference(
    autojump_clock: trio.testing.MockClock,
) -> None:
    daemon = _seeded()
    notes: list[Notification] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            informer = await _start(nursery, daemon, notes)
            await trio.testing.wait_all_tasks_blocked()  # its watch is established
            daemon.down = True
            daemon.drop()
            daemon.change("Deleted", make_pod("a").obj())
            daemon.change("Bound", make_pod("b").node("n1").obj())
            daemon.change("Added", make_pod("d").obj())
            daemon.change("Added", make_pod("e").obj())
            daemon.change("Deleted", make_pod("e").obj())
            daemon.compacted = daemon.revision
            daemon.down = False
            await trio.sleep(3.5)  # a watch answered gone at +1, the relist at +1+2
            daemon.change("Added", make_pod("f").obj())
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert _said(notes[3:]) == [
        ("modified", "b", 108, False),
        ("added", "d", 108, False),
        ("deleted", "a", 108, False),
        ("added", "f", 109, True),
    ]
    assert daemon.watches == [103, 103, 108]
    assert informer.lists == 2
    assert informer.retries == 2


async def test_overloaded_resumes_from_its_revision_without_a_relist(
    autojump_clock: trio.testing.MockClock,
) -> None:
    daemon = _seeded()
    notes: list[Notification] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            informer = await _start(nursery, daemon, notes)
            daemon.change("Added", make_pod("d").obj())
            await trio.testing.wait_all_tasks_blocked()
            cut = ErrorReply(id=1, code="overloaded", message="fell behind", revision=104)
            daemon.drop(RemoteError(cut))
            daemon.change("Added", make_pod("e").obj())
            await trio.sleep(1.5)
            nursery.cancel_scope.cancel()
    assert [n.object.metadata.name for n in notes[3:]] == ["d", "e"]
    assert daemon.watches == [103, 104]
    assert informer.lists == 1


async def test_a_watch_from_a_revision_given_starts_without_a_list(
    autojump_clock: trio.testing.MockClock,
) -> None:
    daemon = _seeded()
    notes: list[Notification] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            informer = await _start(nursery, daemon, notes, from_revision=101)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert _said(notes) == [("added", "b", 102, True), ("added", "c", 103, True)]
    assert informer.lists == 0


async def test_unauthorized_ends_the_informer(autojump_clock: trio.testing.MockClock) -> None:
    daemon = _seeded()
    daemon.refuse_watch = ErrorReply(id=1, code="unauthorized", message="no valid token")
    informer = Informer(kinds=["Pod"], connector=daemon.connect)
    with trio.fail_after(60), pytest.RaisesGroup(pytest.RaisesExc(RemoteError, match="token")):
        async with trio.open_nursery() as nursery:
            await nursery.start(informer.run)


async def test_handlers_hear_add_update_and_delete_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    daemon = _seeded()
    heard: list[str] = []
    informer = Informer(kinds=["Pod"], connector=daemon.connect)
    informer.add_handler(
        on_add=lambda obj: heard.append(f"add {obj.metadata.name}"),
        on_update=lambda old, new: heard.append(
            f"update {old.metadata.resource_version}->{new.metadata.resource_version}"
        ),
        on_delete=lambda obj: heard.append(f"delete {obj.metadata.name}"),
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(informer.run)
            daemon.change("Bound", make_pod("a").node("n").obj())
            daemon.change("Deleted", make_pod("c").obj())
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert heard == ["add a", "add b", "add c", "update 101->104", "delete c"]
