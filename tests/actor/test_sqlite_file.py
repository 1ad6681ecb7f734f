"""The database file checked at start and at every commit (store/sqlite.py, issue 16): each
way a file can be damaged, emptied or replaced, and what the store says about it.

Real clock and a real database thread (STYLE.md), each store under a ``fail_after`` guard.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import pytest
import trio
from builders import make_node

from podium.protocol.errors import DatabaseDamaged
from podium.store import sqlite as sqlite_module
from podium.store.mail import StoreMsg, WriteObjects, WriteResult
from podium.store.schema import SCHEMA_VERSION, decode_change
from podium.store.sqlite import SqliteDurability, prepare_file, sqlite_store


@asynccontextmanager
async def running(path: Path) -> AsyncIterator[trio.MemorySendChannel[StoreMsg]]:
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](64)
    pub_tx, pub_rx = trio.open_memory_channel[object](1024)
    store = sqlite_store(inbox_rx, [pub_tx], SqliteDurability(str(path)))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            async with inbox_tx, pub_rx:
                yield inbox_tx


async def _write_nodes(path: Path, count: int, prefix: str = "n") -> None:
    async with running(path) as inbox:
        for i in range(count):
            tx, rx = trio.open_memory_channel[object](1)
            nodes = [make_node(f"{prefix}{i}").capacity(cpu="4").obj()]
            await inbox.send(WriteObjects(puts=nodes, deletes=[], reply=tx))  # type: ignore[arg-type]  # a sink
            assert isinstance(await rx.receive(), WriteResult)


def _sql(path: Path, statement: str) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(statement)


@dataclass(frozen=True)
class Case:
    name: str
    damage: Callable[[Path], None]
    want: str


CASES = [
    Case("truncated to 0 bytes", lambda p: os.truncate(p, 0), r"is empty \(0 bytes\)"),
    Case(
        "not SQLite",
        lambda p: p.write_bytes(b"not a database at all" * 100),
        r"is not a SQLite database \(it starts with b'not a database a'\)",
    ),
    Case(
        "its tables gone",
        lambda p: (p.unlink(), _sql(p, "CREATE TABLE other (x)")),
        r"has no Podium tables \(schema version 0\)",
    ),
    Case(
        "meta revision behind the log",
        lambda p: _sql(p, "UPDATE meta SET value = '2' WHERE key = 'revision'"),
        "has meta revision 2 but its event log ends at revision 3",
    ),
    Case(
        "event log emptied",
        lambda p: _sql(p, "DELETE FROM events"),
        "has meta revision 3 but its event log is empty",
    ),
    Case(
        "no meta revision",
        lambda p: _sql(p, "DELETE FROM meta"),
        "has no revision in its meta table",
    ),
    Case(
        "an object row damaged",
        lambda p: _sql(p, "UPDATE objects SET data = x'c1c1' WHERE name = 'n1'"),
        r"holds an objects row that does not decode \(Node n1: ",
    ),
    Case(
        "a recent event row damaged",
        lambda p: _sql(p, "UPDATE events SET data = x'c1' WHERE revision = 2"),
        r"holds the event row of revision 2 \(Node n1\) does not decode",
    ),
    Case(
        "a b-tree page overwritten",
        lambda p: _overwrite_page(p, 2),
        "fails SQLite's quick_check|cannot be read",
    ),
]


def _overwrite_page(path: Path, page: int) -> None:
    with path.open("r+b") as f:
        f.seek((page - 1) * 4096)
        f.write(b"\xff" * 64)


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
async def test_a_damaged_database_is_refused_naming_the_file(tmp_path: Path, case: Case) -> None:
    db = tmp_path / "podium.db"
    await _write_nodes(db, 3)
    case.damage(db)
    with pytest.RaisesGroup(
        pytest.RaisesExc(DatabaseDamaged, match=rf"^database {db} ({case.want}).*refusing")
    ):
        async with running(db):
            pass


def test_a_new_path_is_created_private_with_its_tables(tmp_path: Path) -> None:
    db = tmp_path / "podium.db"
    old = os.umask(0o022)
    try:
        prepare_file(str(db))
    finally:
        os.umask(old)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["podium.db"]  # no temporary left
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert conn.execute("SELECT value FROM meta").fetchall() == [("0",)]


def test_a_missing_file_whose_wal_remains_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "podium.db"
    (tmp_path / "podium.db-wal").write_bytes(b"\0" * 32)
    with pytest.raises(DatabaseDamaged, match=r"is missing but its WAL .* holds 32 bytes"):
        prepare_file(str(db))
    assert not db.exists()


def test_an_empty_file_with_a_wal_to_replay_is_left_to_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "podium.db"
    db.touch()
    (tmp_path / "podium.db-wal").write_bytes(b"\0" * 32)
    prepare_file(str(db))  # no error: SQLite replays the WAL, and the schema check follows


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "podium.db").mkdir()
    with pytest.raises(DatabaseDamaged, match="is not a regular file"):
        prepare_file(str(tmp_path / "podium.db"))


@pytest.mark.parametrize(
    ("attack", "want"),
    [
        ("delete", "was deleted while the daemon ran"),
        ("replace", "was replaced by another file while the daemon ran"),
    ],
)
def test_an_opened_file_knows_it_was_deleted_or_replaced(
    tmp_path: Path, attack: str, want: str
) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    opened = sqlite_module._Opened.of(str(path))
    try:
        assert opened.problem() is None
        path.unlink()
        if attack == "replace":
            path.write_bytes(b"y")
        assert opened.problem() == f"{path} {want}"
    finally:
        os.close(opened.fd)


async def test_a_commit_after_the_database_was_deleted_is_not_made(tmp_path: Path) -> None:
    db = tmp_path / "podium.db"
    with pytest.RaisesGroup(
        pytest.RaisesExc(DatabaseDamaged, match=rf"^{db} was deleted while the daemon ran; ")
    ):
        async with running(db) as inbox:
            db.unlink()
            tx, rx = trio.open_memory_channel[object](1)
            node = make_node("n").obj()
            await inbox.send(WriteObjects(puts=[node], deletes=[], reply=tx))  # type: ignore[arg-type]  # a sink
            await rx.receive()  # never answered: the store stops first


def test_an_event_row_that_does_not_decode_names_its_revision() -> None:
    row = (7, "Added", "Pod", "default", "web", "", "", b"\xc1")
    with pytest.raises(
        DatabaseDamaged, match=r"^the event row of revision 7 \(Pod default/web\) does not decode"
    ):
        decode_change(row)


async def test_a_recovered_database_may_start_its_log_empty_at_its_revision(
    tmp_path: Path,
) -> None:
    """``podium db recover`` writes meta ``recovered`` when the log's end was lost; only then
    is an empty log at a revision above 0 served."""
    db = tmp_path / "podium.db"
    await _write_nodes(db, 3)
    _sql(db, "DELETE FROM events")
    _sql(db, "INSERT INTO meta (key, value) VALUES ('recovered', '3')")
    await _write_nodes(db, 1, "later-")  # starts, and its next commit continues the log at 4
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT revision FROM events").fetchall() == [(4,)]


def _ignored_by_git(names: list[str]) -> list[str]:
    """The ``names`` that the checkout's .gitignore ignores at its root."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=root,
        input="\n".join(names),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: none ignored; 128: not a checkout
    return done.stdout.split()


async def test_every_file_the_daemon_writes_beside_its_database_is_ignored_by_git(
    tmp_path: Path,
) -> None:
    database = tmp_path / "podium.db"
    async with running(database) as inbox:
        tx, rx = trio.open_memory_channel[object](1)
        nodes = [make_node("n1").capacity(cpu="4").obj()]
        await inbox.send(WriteObjects(puts=nodes, deletes=[], reply=tx))  # type: ignore[arg-type]  # a sink
        assert isinstance(await rx.receive(), WriteResult)
        written = sorted(os.listdir(tmp_path))  # (a listing, not a blocking file read)
    assert "podium.db.lock" in written
    # A backup or recovery writes a temporary copy beside its target (store/tools.py _beside).
    copies = [".podium.db.k2x9_q.tmp", ".podium.db.k2x9_q.tmp-wal", ".podium.db.k2x9_q.tmp-shm"]
    names = [*written, "podium.db-journal", *copies]
    assert _ignored_by_git(names) == names
