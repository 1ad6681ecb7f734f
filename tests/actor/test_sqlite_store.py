"""The SQLite store actor: what only SQLite does (the schema, the bindings table, the lock, the
reader's own connection). What both backends do is in test_durable_store.py.

These run on the real clock (the database thread is a real thread; STYLE.md: keep threads out
of autojump tests), each under a ``fail_after`` guard.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, closing
from pathlib import Path

import pytest
import trio
from builders import make_node, make_pod

from podium.protocol import objects as o
from podium.protocol.errors import StoreError
from podium.protocol.wire import EventType, ObjectRef
from podium.store import sqlite as sqlite_module
from podium.store import tuning
from podium.store.actor import StoreActor
from podium.store.mail import (
    Binding,
    BindPods,
    BindResult,
    Change,
    Committed,
    EventsResult,
    Evict,
    EvictResult,
    ReadEvents,
    Recovered,
    StoreFailure,
    StoreMsg,
    Victim,
    WriteObjects,
    WriteResult,
)
from podium.store.schema import MIGRATIONS, SCHEMA_VERSION
from podium.store.sqlite import SqliteDurability, sqlite_store

Published = Recovered | Committed


class Running:
    def __init__(
        self,
        store: StoreActor,
        inbox: trio.MemorySendChannel[StoreMsg],
        published: trio.MemoryReceiveChannel[Published],
    ) -> None:
        self.store, self.inbox, self.published = store, inbox, published

    async def write(
        self, puts: Sequence[o.KubeObject] = (), deletes: Sequence[ObjectRef] = ()
    ) -> WriteResult | StoreFailure:
        tx, rx = trio.open_memory_channel[WriteResult | StoreFailure](1)
        await self.inbox.send(WriteObjects(puts=list(puts), deletes=list(deletes), reply=tx))
        return await rx.receive()

    async def bind(self, bindings: list[Binding]) -> BindResult | StoreFailure:
        tx, rx = trio.open_memory_channel[BindResult | StoreFailure](1)
        await self.inbox.send(BindPods(bindings=bindings, reply=tx))
        return await rx.receive()

    async def events(self, after: int, limit: int = 0) -> EventsResult | StoreFailure:
        tx, rx = trio.open_memory_channel[EventsResult | StoreFailure](1)
        await self.inbox.send(ReadEvents(after=after, limit=limit, reply=tx))
        return await rx.receive()


@asynccontextmanager
async def running(path: Path, retention: int = 1_000_000) -> AsyncIterator[Running]:
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](64)
    pub_tx, pub_rx = trio.open_memory_channel[Published](1024)
    store = sqlite_store(inbox_rx, [pub_tx], SqliteDurability(str(path), retention=retention))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            async with inbox_tx:
                yield Running(store, inbox_tx, pub_rx)


def _node(name: str) -> o.Node:
    return make_node(name).capacity(cpu="4", memory="8Gi", pods=110).obj()


async def test_a_fresh_file_gets_the_schema_and_recovers_empty(tmp_path: Path) -> None:
    db = tmp_path / "podium.db"
    async with running(db) as s:
        recovered = await s.published.receive()
        assert recovered == Recovered(revision=0, objects=[])
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_the_bindings_table_keeps_what_was_bound_across_a_restart(tmp_path: Path) -> None:
    # The same story on both backends is in test_durable_store.py; the bindings table is
    # SQLite's own guard against binding a pod twice (its primary key).
    db = tmp_path / "podium.db"
    async with running(db) as s:
        written = await s.write([_node("n1"), make_pod("web").req(cpu="1").obj()])
        assert isinstance(written, WriteResult)
        uid = written.objects[1].uid
        bound = await s.bind([Binding(namespace="default", name="web", uid=uid, node="n1")])
        assert isinstance(bound, BindResult) and not bound.failed
    async with running(db) as s:
        assert isinstance(await s.write([_node("n2")]), WriteResult)
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT uid, node FROM bindings").fetchall() == [(uid, "n1")]


async def test_a_deleted_pod_leaves_no_binding(tmp_path: Path) -> None:
    db = tmp_path / "podium.db"
    async with running(db) as s:
        written = await s.write([_node("n1"), make_pod("web").obj()])
        assert isinstance(written, WriteResult)
        uid = written.objects[1].uid
        await s.bind([Binding(namespace="default", name="web", uid=uid, node="n1")])
        await s.write(deletes=[_ref("Pod", "web", "default")])
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM bindings").fetchone() == (0,)
        assert conn.execute("SELECT COUNT(*) FROM objects").fetchone() == (1,)


async def test_a_second_store_on_the_same_file_names_the_holder(tmp_path: Path) -> None:
    db = tmp_path / "podium.db"
    async with running(db):
        with pytest.raises(StoreError, match=rf"in use by podium pid {os.getpid()} on "):
            sqlite_module.acquire_lock(str(db))
    os.close(sqlite_module.acquire_lock(str(db)))  # released when the first store stopped


async def test_a_file_from_a_newer_podium_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "podium.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.RaisesGroup(pytest.RaisesExc(StoreError, match="made by a newer Podium")):
        async with running(db):
            pass


def _ref(kind: str, name: str, namespace: str = "") -> ObjectRef:
    return ObjectRef(kind=kind, name=name, namespace=namespace)


def _committed(*batches: Sequence[Change]) -> sqlite3.Connection:
    """A new schema in memory with ``batches`` committed as the store commits them: each one's
    rows through the ``commit_rows`` trigger in one ``executemany``, the transaction opened by
    the connection's ``isolation_level`` as the store's is after its load."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(MIGRATIONS[0])
    conn.executescript(sqlite_module.COMMIT_ROWS)
    conn.isolation_level = "IMMEDIATE"
    for changes in batches:
        conn.executemany(
            sqlite_module._INSERT_COMMIT_ROWS, sqlite_module._batch_of(changes, None).rows
        )
        assert conn.in_transaction
        conn.commit()
    return conn


@pytest.fixture
def committed() -> Iterator[Callable[..., sqlite3.Connection]]:
    """:func:`_committed`, each connection closed after the test (an unclosed one is a
    ResourceWarning on Python 3.13, raised in whichever test the collector runs in)."""
    made: list[sqlite3.Connection] = []

    def commit(*batches: Sequence[Change]) -> sqlite3.Connection:
        made.append(_committed(*batches))
        return made[-1]

    yield commit
    for conn in made:
        conn.close()


def _tables(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    return {
        "meta": conn.execute("SELECT key, value FROM meta").fetchall(),
        "objects": conn.execute("SELECT kind, namespace, name, revision FROM objects").fetchall(),
        "bindings": conn.execute("SELECT * FROM bindings").fetchall(),
        "events": conn.execute("SELECT revision, type, name, node FROM events").fetchall(),
    }


def _change(revision: int, type_: EventType, obj: o.KubeObject, node: str = "") -> Change:
    return Change(
        revision=revision,
        type=type_,
        kind=str(type(obj).__struct_config__.tag),
        namespace=obj.metadata.namespace,
        name=obj.metadata.name,
        object=obj,
        node=node,
    )


def test_a_pod_bound_and_deleted_in_one_batch_leaves_no_binding(
    committed: Callable[..., sqlite3.Connection],
) -> None:
    pod = make_pod("web").uid("u1").node("n1").obj()
    conn = committed([_change(1, "Bound", pod, "n1"), _change(2, "Deleted", pod)])
    assert _tables(conn) == {
        "meta": [("revision", "2")],
        "objects": [],
        "bindings": [],
        "events": [(1, "Bound", "web", "n1"), (2, "Deleted", "web", "")],
    }


def test_a_batch_leaves_each_object_as_its_last_change_does(
    committed: Callable[..., sqlite3.Connection],
) -> None:
    node = make_node("n1").obj()
    web = make_pod("web").uid("u1").obj()
    gone = make_pod("gone").uid("u2").obj()
    conn = committed(
        [_change(1, "Added", node), _change(2, "Added", gone), _change(3, "Bound", gone, "n1")],
        [
            _change(4, "Added", web),
            _change(5, "Bound", web, "n1"),
            _change(6, "Modified", node),
            _change(7, "Preempted", gone),
            _change(8, "Unschedulable", web),
        ],
    )
    tables = _tables(conn)
    assert tables["meta"] == [("revision", "8")]
    assert sorted(tables["objects"]) == [("Node", "", "n1", 6), ("Pod", "default", "web", 8)]
    assert tables["bindings"] == [("u1", "default", "web", "n1", 5)]
    assert [row[0] for row in tables["events"]] == list(range(1, 9))


def test_a_second_binding_of_one_uid_fails_the_whole_batch(
    committed: Callable[..., sqlite3.Connection],
) -> None:
    """The bindings table's primary key refuses a pod bound twice (in one batch or across
    two); the transaction the batch opened is rolled back, so nothing of it stays."""
    pod = make_pod("web").uid("u1").obj()
    conn = committed([_change(1, "Added", pod)])
    before = _tables(conn)
    twice = [_change(2, "Bound", pod, "n1"), _change(3, "Bound", pod, "n2")]
    with pytest.raises(sqlite3.IntegrityError, match=r"bindings\.uid"):
        conn.executemany(
            sqlite_module._INSERT_COMMIT_ROWS, sqlite_module._batch_of(twice, None).rows
        )
    assert conn.in_transaction
    conn.rollback()
    assert _tables(conn) == before


async def test_an_eviction_and_the_nomination_survive_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "podium.db"
    async with running(db) as s:
        written = await s.write(
            [
                _node("n1"),
                make_pod("v1").obj(),
                make_pod("v2").obj(),
                make_pod("keep").obj(),
                make_pod("p").obj(),
            ]
        )
        assert isinstance(written, WriteResult)
        uid = {st.name: st.uid for st in written.objects}
        bound = await s.bind(
            [
                Binding(namespace="default", name=name, uid=uid[name], node="n1")
                for name in ("v1", "v2", "keep")
            ]
        )
        assert isinstance(bound, BindResult) and not bound.failed
        tx, rx = trio.open_memory_channel[EvictResult | StoreFailure](1)
        await s.inbox.send(
            Evict(
                namespace="default",
                name="p",
                uid=uid["p"],
                node="n1",
                victims=[
                    Victim(namespace="default", name="v1", uid=uid["v1"]),
                    Victim(namespace="default", name="v2", uid=uid["v2"]),
                ],
                reply=tx,
            )
        )
        assert await rx.receive() == EvictResult(
            revision=11, evicted=["default/v1", "default/v2"], nominated=True
        )
    async with running(db) as s:
        recovered = await s.published.receive()
        assert isinstance(recovered, Recovered)
        assert recovered.revision == 11
        pods = {p.metadata.name: p for p in recovered.objects if isinstance(p, o.Pod)}
        assert sorted(pods) == ["keep", "p"]
        assert (pods["p"].status.nominated_node_name, pods["p"].spec.node_name) == ("n1", "")
        assert pods["keep"].spec.node_name == "n1"
        # The event log on disk holds the Preempted changes (a watcher resuming sees them).
        events = await s.events(8)
        assert isinstance(events, EventsResult)
        by_p = "preempted by default/p (priority 0)"
        assert [(c.revision, c.type, c.name, c.node, c.message) for c in events.changes] == [
            (9, "Preempted", "v1", "n1", by_p),
            (10, "Preempted", "v2", "n1", by_p),
            (11, "Modified", "p", "", ""),
        ]
    with closing(sqlite3.connect(db)) as conn:
        # No binding row is left for an evicted pod.
        assert conn.execute("SELECT uid, name, node FROM bindings").fetchall() == [
            (uid["keep"], "keep", "n1")
        ]


@asynccontextmanager
async def _log_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writes: int
) -> AsyncIterator[Running]:
    """A store whose core keeps 2 changes in memory, after ``writes`` one-node writes."""
    monkeypatch.setattr(tuning, "MEMORY_LOG", 2)
    async with running(tmp_path / "podium.db") as s:
        for i in range(writes):
            await s.write([_node(f"n{i}")])
        yield s


async def test_a_read_of_the_log_on_disk_does_not_hold_up_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _log_on_disk(tmp_path, monkeypatch, 4) as s:
        # The disk's log is read by its own connection: hold it in the middle of a page.
        holding = trio.Event()
        release = threading.Event()
        reader = s.store._durability._reader  # type: ignore[attr-defined]
        read = reader._read

        def slow_read(after: int, limit: int) -> tuple[int | None, list[Change]]:
            trio.from_thread.run_sync(holding.set)
            release.wait(5)
            return read(after, limit)

        monkeypatch.setattr(reader, "_read", slow_read)
        tx, rx = trio.open_memory_channel[EventsResult | StoreFailure](1)
        await s.inbox.send(ReadEvents(after=0, limit=2, reply=tx))
        await holding.wait()
        # Writes commit while the read waits (before: it stalled every put).
        for i in range(4, 8):
            assert isinstance(await s.write([_node(f"n{i}")]), WriteResult)
        release.set()
        page = await rx.receive()
        assert isinstance(page, EventsResult)
        assert ([c.revision for c in page.changes], page.more) == ([1, 2], True)
