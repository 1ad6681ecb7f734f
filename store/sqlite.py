"""The durable store: the store actor over SQLite, written from its own thread.

Kubernetes counterpart: etcd behind the API server — a write is acknowledged once it is
durable, watchers resume from a revision, and a compacted revision answers ``410 Gone``.

:class:`SqliteDurability` is the :class:`~podium.store.actor.Durability` the daemon's store
actor holds: the actor applies each batch to the :class:`~podium.store.core.StoreCore`, then
**commits** it here — every change of the batch in one SQLite transaction (group commit: many
client writes and bindings per transaction, one hand-over to the database thread; a pod
group's bindings, all or none, among them; two aiosqlite calls, :func:`_commit_job`) — then
publishes and releases the replies. So no acknowledgement and no published change (a Bound
event included) ever precedes the durability of what it reports. A commit that fails stops the
daemon (fail-stop): the core is ahead of the disk, and the only truthful state is the one a
restart recovers.

aiosqlite is an asyncio library; trio-asyncio fails on Python 3.14 and once let a cancelled
write leak into the next commit (STYLE.md). So aiosqlite runs on **its own asyncio loop in its
own thread** (:class:`_Database`): the trio side hands it a job with
``loop.call_soon_threadsafe(queue.put_nowait, job)`` and gets the answer through
``trio_token.run_sync_soon(reply, channel, answer)``; neither side ever blocks the other,
and a job once handed over always runs to its end (commit or rollback), whatever the trio side
does meanwhile. asyncio and aiosqlite appear nowhere outside store/.

Recovery at start: the schema is migrated, every object is loaded into the core with the
revision (the event log stays on disk, read when a watcher resumes from before the restart),
and the store publishes Recovered as usual,
so the cache and the queue are rebuilt from the same stream as ever. Assumed pods were never
written, so a binding that did not commit is simply not there: its pod is pending again.

A watcher behind the core's memory reads the event log on disk in pages, on a read-only
connection of its own in a worker thread (:class:`_LogReader`), neither in the store actor's
loop nor in the database thread: commits go on while it reads (WAL).

Refused at start (:class:`~podium.protocol.errors.DatabaseDamaged`, ``podium serve`` exits
3), never served as it reads: a file that is 0 bytes (with no WAL to replay) or has no SQLite
header, a file without Podium's tables, a main file gone while its WAL remains, a failing
``PRAGMA quick_check``, a meta revision the event log does not end at, an object row or one of
the newest :data:`~podium.store.tuning.EVENTS_CHECKED_AT_START` event rows that does not
decode. A new database is built beside its path (0600 whatever the umask; SQLite gives the
WAL and shm files the database's mode), migrated, and linked into place, so a path either
holds no file or a database with Podium's tables: an emptied file is always a loss, never a
new database.

Each commit checks, before its COMMIT, that the database and its WAL are still the ones
opened (device and inode of the path against the open file, which must still have a link): a
database deleted or replaced under the daemon fails the commit, and the daemon stops without
acknowledging it (fail-stop) instead of acknowledging writes no restart will find.

One daemon per database *file*: an exclusive ``flock`` on a descriptor of the database file
itself (:func:`acquire_lock`; released by the kernel when the process dies, ``kill -9``
included), so a second daemon through another path — a symlink, a hard link — is refused as
one through the same path is. SQLite names the WAL after the path, so two daemons through two
paths would each have a WAL of their own over one file, both acknowledging writes that the
other's checkpoints overwrite. The refusal names the holder: its pid from Linux's lock table,
its host, start and path from ``<database>.lock`` (beside the resolved path; only a name tag
now, the lock is the database's). Readers in other processes (``podium db check``, ``podium db
backup``) may open the database at any time (WAL).

Owns: the database connection (through its thread), the lock, the compaction mark.
Mailbox and emits: as :class:`~podium.store.actor.StoreActor`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import socket
import sqlite3
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import aiosqlite
import msgspec
import trio

from podium.actors.runtime.mailbox import reply
from podium.protocol.config import PodiumSettings
from podium.protocol.errors import DatabaseDamaged, StoreError
from podium.protocol.objects import Pod
from podium.store import tuning
from podium.store.actor import Recovery, StoreActor, Subscriber
from podium.store.core import StoreCore
from podium.store.location import SqliteLocation
from podium.store.mail import Change, StoreMsg
from podium.store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    decode_change,
    decode_object,
    event_row,
)

__all__ = ["SqliteDurability", "acquire_lock", "sqlite_durability", "sqlite_store"]

log = logging.getLogger("podium.store")

Job = Callable[[aiosqlite.Connection], Awaitable[Any]]

SWITCH_INTERVAL_SECONDS = 0.0002
"""The interpreter's GIL switch interval while a database thread runs (default 0.005)."""

SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file (sqlite.org/fileformat.html, 1.3)."""

QUICK_CHECK_PROBLEMS = 10
"""``PRAGMA quick_check(N)`` stops after N problems; the refusal names the first few."""


# --------------------------------------------------------------------------- the lock

LOCKS = "/proc/locks"
"""Linux's table of every file lock held on this host (proc(5)): who holds a ``flock``."""


def acquire_lock(database: str) -> int:
    """Create ``database`` when there is none, then take its exclusive lock: a ``flock`` on a
    descriptor of the database file itself, so the lock is the file's (device and inode) and
    not its path's. A second daemon through a symlink or a hard link meets it: SQLite keeps one
    WAL per *path*, so two daemons through two paths would each acknowledge writes the other's
    checkpoints then overwrite.

    Linux keeps ``flock`` locks apart from the POSIX record locks SQLite takes on the same file
    (not on NFS, which emulates one with the other: keep the database on a local disk). The
    descriptor must stay open until SQLite's connection is closed, and no other descriptor of
    the file may be closed meanwhile: closing *any* descriptor of a file drops every POSIX
    lock the process holds on it, SQLite's included. So a refused call in a process that has
    the database open through SQLite drops that connection's locks: one store per process.

    Returns:
        The database file's descriptor; the lock lasts until it is closed or the process ends
        (``kill -9`` included). ``<database>.lock`` beside the resolved path names the holder
        for the next daemon's message.

    Raises:
        StoreError: another process holds it (named with its pid, host, start time and path
            where they can be found), or the database cannot be created.
        DatabaseDamaged: as :func:`prepare_file`.
    """
    while True:
        try:
            prepare_file(database)
            fd = os.open(database, os.O_RDONLY)
        except FileNotFoundError:
            continue  # deleted between the two: made anew on the next turn
        except OSError as exc:
            raise StoreError(f"cannot create database {database}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held = os.fstat(fd)
            os.close(fd)
            raise StoreError(
                f"database {database} is in use by {_holder(database, held)}; stop that "
                "daemon first"
            ) from None
        try:
            now = os.stat(database)
        except FileNotFoundError:
            now = None
        locked = os.fstat(fd)
        if now is not None and (now.st_dev, now.st_ino) == (locked.st_dev, locked.st_ino):
            break
        os.close(fd)  # the path was replaced before the lock was taken: lock the new file
    real = os.path.realpath(database)
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "path": real,
        "device": locked.st_dev,
        "inode": locked.st_ino,
    }
    try:
        info = os.open(f"{real}.lock", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(info, json.dumps(holder).encode())
        finally:
            os.close(info)
    except OSError:
        os.close(fd)
        raise
    return fd


def _holder(database: str, held: os.stat_result) -> str:
    """Who holds the lock of the file ``held``: from Linux's lock table (the pid, and the path
    through which it holds the file) and the holder's ``.lock`` file (its host and start)."""
    pid = _flock_holder(held)
    paths = [os.path.realpath(database)]
    if pid is not None:
        paths += _paths_of(pid, held)
    for path in paths:
        try:
            with open(f"{path}.lock", "rb") as f:
                info = json.loads(f.read(4096) or b"{}")
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict) or (info.get("device"), info.get("inode")) != (
            held.st_dev,
            held.st_ino,
        ):
            continue  # another file's, or one left by a podium before this lock
        if pid is not None and info.get("pid") != pid:
            continue  # a dead holder's: the lock is another process's now
        as_given = os.path.abspath(database)
        through = "" if info.get("path") == as_given else f", as {info.get('path')}"
        return (
            f"podium pid {info.get('pid')} on {info.get('host')} (since "
            f"{info.get('since')}{through})"
        )
    if pid is not None:
        return f"pid {pid} on this host"
    return "another podium"


def _flock_holder(held: os.stat_result) -> int | None:
    """The pid holding a ``flock`` on the file ``held`` (from :data:`LOCKS`), or None."""
    device = f"{os.major(held.st_dev):02x}:{os.minor(held.st_dev):02x}:{held.st_ino}"
    try:
        with open(LOCKS) as f:
            table = f.read()
    except OSError:
        return None  # not Linux
    for line in table.splitlines():
        # "3: FLOCK  ADVISORY  WRITE 17198 fe:00:2154831 0 EOF" (proc(5))
        fields = line.split()
        if fields[1:2] == ["FLOCK"] and len(fields) > 5 and fields[5] == device:
            pid = int(fields[4]) if fields[4].isdigit() else 0
            return pid or None  # 0: a process outside this pid namespace
    return None


def _paths_of(pid: int, held: os.stat_result) -> list[str]:
    """The paths through which process ``pid`` has the file ``held`` open (its descriptors)."""
    paths = []
    with contextlib.suppress(OSError):
        for name in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                st = os.stat(f"/proc/{pid}/fd/{name}")
                if (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
                    paths.append(os.readlink(f"/proc/{pid}/fd/{name}"))
    return paths


# --------------------------------------------------------------------------- the file


def _damaged(path: str, what: str) -> DatabaseDamaged:
    return DatabaseDamaged(
        f"database {path} {what}; refusing to serve it (podium db check {path} lists the "
        f"damage; restore a backup, or podium db recover {path} NEW copies out what remains)"
    )


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


def prepare_file(path: str) -> None:
    """Create a new database at ``path`` when there is none; refuse one that was emptied.

    A new database is built in a temporary file beside ``path`` (mode 0600 whatever the
    umask), given Podium's schema, and linked into place (never over a file another daemon
    put there meanwhile): ``path`` never holds a file without
    Podium's tables unless something emptied it.

    Raises:
        DatabaseDamaged: ``path`` is missing while its WAL holds data, is not a regular file, is
            0 bytes with no WAL to replay, or does not start with SQLite's header.
        OSError: the directory cannot be written.
    """
    wal = _size(f"{path}-wal")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if wal:
            raise _damaged(
                path,
                f"is missing but its WAL {path}-wal holds {wal} bytes (the database file was "
                "deleted)",
            ) from None
        _create(path)
        return
    if not stat.S_ISREG(st.st_mode):
        raise _damaged(path, "is not a regular file")
    if st.st_size == 0:
        if wal:  # never checkpointed: every page is in the WAL, which SQLite replays
            return
        raise _damaged(
            path,
            "is empty (0 bytes): a database that held data was truncated, and serving it "
            "would start over at revision 0",
        )
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_HEADER))
    if head != SQLITE_HEADER:
        raise _damaged(path, f"is not a SQLite database (it starts with {head!r})")


def _create(path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".new")
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            for step, script in enumerate(MIGRATIONS):
                conn.executescript(f"BEGIN; {script} PRAGMA user_version = {step + 1}; COMMIT;")
        finally:
            conn.close()  # the last connection: SQLite checkpoints and removes the WAL
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never over a database another daemon made meanwhile
        except FileExistsError:
            pass  # it did: that one is served, under its lock (acquire_lock)
        except OSError:  # a file system without hard links
            os.rename(tmp, path)
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
    except BaseException:
        for leftover in (tmp, f"{tmp}-wal", f"{tmp}-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(leftover)
        raise
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class _Opened:
    """A file the daemon opened: the path, and the device and inode it had then."""

    path: str
    fd: int
    device: int
    inode: int

    @classmethod
    def of(cls, path: str, fd: int | None = None) -> _Opened:
        if fd is None:
            fd = os.open(path, os.O_RDONLY)
        st = os.fstat(fd)
        return cls(path, fd, st.st_dev, st.st_ino)

    def problem(self) -> str | None:
        """Why the path is no longer this file (deleted or replaced), or None."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return f"{self.path} was deleted while the daemon ran"
        if (st.st_dev, st.st_ino) != (self.device, self.inode):
            return f"{self.path} was replaced by another file while the daemon ran"
        if os.fstat(self.fd).st_nlink == 0:  # the path's entry went while this one was read
            return f"{self.path} was deleted while the daemon ran"
        return None


class _Identity:
    """The database (through the lock's descriptor) and its WAL as opened; checked before
    every COMMIT."""

    def __init__(self, database: str, lock: int) -> None:
        self.database = database
        self._lock = _Opened.of(database, lock)
        self._files: list[_Opened] = []
        with contextlib.suppress(FileNotFoundError):
            self._files.append(_Opened.of(f"{database}-wal"))

    def check(self) -> None:
        """Raises DatabaseDamaged when a file was deleted or replaced."""
        for opened in (self._lock, *self._files):
            if (problem := opened.problem()) is not None:
                raise DatabaseDamaged(
                    f"{problem}; stopping without acknowledging this commit (its writes would "
                    f"be lost at the next start). Restore {self.database} from a backup"
                )

    def close(self) -> None:
        for opened in self._files:  # the database's descriptor is the lock's to close
            os.close(opened.fd)


# --------------------------------------------------------------------------- the thread


class _Database:
    """aiosqlite on its own asyncio loop in its own thread, fed jobs from trio."""

    def __init__(self, path: str, synchronous: Literal["normal", "full"]) -> None:
        self._path = path
        self._synchronous = synchronous
        self._loop: asyncio.AbstractEventLoop | None = None
        self._jobs: asyncio.Queue[tuple[Job, trio.MemorySendChannel[Any]] | None] | None = None
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._done = trio.Event()

    async def open(self) -> None:
        """Start the thread and open the connection (WAL, synchronous, busy timeout)."""
        self._token = trio.lowlevel.current_trio_token()
        # Every hand-over to this thread is a syscall that releases the GIL; with the default
        # 5 ms switch interval the scheduler's thread then waits up to 5 ms to get it back from
        # the database thread (measured: a third of the main thread's time under load).
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        opened_to, opened = trio.open_memory_channel[BaseException | None](1)
        self._thread = threading.Thread(
            target=self._main, args=(opened_to,), name="podium-sqlite", daemon=True
        )
        self._thread.start()
        error = await opened.receive()
        if error is not None:
            raise _store_error(error)

    def _main(self, opened: trio.MemorySendChannel[BaseException | None]) -> None:
        try:
            asyncio.run(self._serve(opened))
        finally:
            assert self._token is not None
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._done.set)

    async def _serve(self, opened: trio.MemorySendChannel[BaseException | None]) -> None:
        token = self._token
        assert token is not None
        try:
            conn = await aiosqlite.connect(self._path, isolation_level=None)
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute(f"PRAGMA synchronous={self._synchronous.upper()}")
            await conn.execute("PRAGMA busy_timeout=5000")
        except BaseException as exc:  # handed to the trio side, which raises it
            token.run_sync_soon(opened.send_nowait, exc)
            return
        self._loop = asyncio.get_running_loop()
        self._jobs = asyncio.Queue()
        token.run_sync_soon(opened.send_nowait, None)
        try:
            while (item := await self._jobs.get()) is not None:
                job, answer = item
                try:
                    result: tuple[bool, Any] = (True, await job(conn))
                except Exception as exc:  # every job's failure goes back to its caller
                    result = (False, exc)
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(reply, answer, result)
        finally:
            await conn.close()

    async def call(self, job: Job) -> Any:
        """Run ``job`` on the connection and return its result (or raise its error).

        Cancellation: the job runs to its end in the database thread either way; only the
        wait for its answer is cancelled.
        """
        assert self._loop is not None and self._jobs is not None
        answer_to, answer = trio.open_memory_channel[tuple[bool, Any]](1)
        self._loop.call_soon_threadsafe(self._jobs.put_nowait, (job, answer_to))
        ok, value = await answer.receive()
        if not ok:
            raise _store_error(value)
        return value

    async def close(self) -> None:
        """Finish the jobs handed over, close the connection, end the thread."""
        if self._loop is None or self._jobs is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop already ended
            self._loop.call_soon_threadsafe(self._jobs.put_nowait, None)
        await self._done.wait()


_CORRUPT_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def _store_error(exc: BaseException) -> BaseException:
    if isinstance(exc, sqlite3.Error) and exc.sqlite_errorcode in _CORRUPT_CODES:
        return DatabaseDamaged(f"sqlite: {exc}")
    if isinstance(exc, sqlite3.Error):
        return StoreError(f"sqlite: {exc}")
    return exc


# --------------------------------------------------------------------------- jobs


def _load_job(path: str) -> Job:
    async def load(conn: aiosqlite.Connection) -> Recovery:
        try:
            loaded = await _load(conn, path)
        except sqlite3.Error as exc:
            if exc.sqlite_errorcode in _CORRUPT_CODES:
                raise _damaged(path, f"cannot be read ({exc})") from exc
            raise
        # Ready for commits (_commit_job): the view they write through, and each commit's
        # first write opening its transaction (BEGIN IMMEDIATE) in the same call.
        await conn.executescript(COMMIT_ROWS)
        conn.isolation_level = "IMMEDIATE"
        return loaded

    return load


async def _load(conn: aiosqlite.Connection, path: str) -> Recovery:
    """Check the file (the module docstring lists what is refused), migrate it, read it."""
    (version,) = (await (await conn.execute("PRAGMA user_version")).fetchone()) or (0,)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"database {path} has schema version {version}, made by a newer Podium "
            f"(this one knows up to {SCHEMA_VERSION})"
        )
    if version == 0:
        # prepare_file creates every new database with its tables: this one lost them.
        raise _damaged(path, "has no Podium tables (schema version 0)")
    problems = [
        r[0]
        for r in await conn.execute_fetchall(f"PRAGMA quick_check({QUICK_CHECK_PROBLEMS})")
        if r[0] != "ok"
    ]
    if problems:
        found = "; ".join(" ".join(p.split()) for p in problems[:3])
        raise _damaged(path, f"fails SQLite's quick_check: {found}")
    for step in range(version, SCHEMA_VERSION):
        log.info("migrating %s from schema %d to %d", path, step, step + 1)
        await conn.executescript(
            f"BEGIN; {MIGRATIONS[step]} PRAGMA user_version = {step + 1}; COMMIT;"
        )
    # One read transaction: the checks and the objects are one state.
    await conn.execute("BEGIN")
    try:
        revision = await _checked_revision(conn, path)
        objects = []
        for kind, namespace, name, data in await conn.execute_fetchall(
            "SELECT kind, namespace, name, data FROM objects"
        ):
            try:
                objects.append(decode_object(data))
            except msgspec.DecodeError as exc:
                ref = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
                raise _damaged(
                    path, f"holds an objects row that does not decode ({ref}: {exc})"
                ) from None
        for row in await conn.execute_fetchall(
            "SELECT revision, type, kind, namespace, name, node, message, data FROM events "
            "ORDER BY revision DESC LIMIT ?",
            (tuning.EVENTS_CHECKED_AT_START,),
        ):
            try:
                decode_change(tuple(row))
            except DatabaseDamaged as exc:
                raise _damaged(path, f"holds {exc}") from exc
    finally:
        await conn.execute("COMMIT")
    return Recovery(path, revision, objects)


async def _checked_revision(conn: aiosqlite.Connection, path: str) -> int:
    """The meta revision, checked against the event log and the objects."""
    row = await (await conn.execute("SELECT value FROM meta WHERE key = 'revision'")).fetchone()
    if row is None:
        raise _damaged(path, "has no revision in its meta table")
    try:
        revision = int(row[0])
    except ValueError:
        raise _damaged(path, f"has a meta revision {row[0]!r} that is not a number") from None
    (newest_event,) = await (await conn.execute("SELECT MAX(revision) FROM events")).fetchone() or (
        None,
    )
    (newest_object,) = await (
        await conn.execute("SELECT MAX(revision) FROM objects")
    ).fetchone() or (None,)
    # Every commit writes its events and the meta revision of its last one together, and
    # compaction always keeps at least the newest event. A database `podium db recover` made
    # after the log's end was lost starts with an empty log at its revision (meta recovered).
    recovered = await (
        await conn.execute("SELECT value FROM meta WHERE key = 'recovered'")
    ).fetchone()
    if newest_event is None and recovered is not None and recovered[0] == str(revision):
        newest_event = revision
    if (newest_event or 0) != revision:
        log_end = "is empty" if newest_event is None else f"ends at revision {newest_event}"
        raise _damaged(path, f"has meta revision {revision} but its event log {log_end}")
    if newest_object is not None and newest_object > revision:
        raise _damaged(
            path, f"holds an object of revision {newest_object}, after its revision {revision}"
        )
    return revision


class _LogReader:
    """Reads the event log in pages on a read-only connection of its own, in a worker thread:
    never in the store actor's loop nor in the database thread, so commits go on meanwhile
    (WAL: a reader sees the last commit before its transaction and never blocks the writer).

    One page at a time (a :class:`trio.CapacityLimiter` of one): watchers reading old
    revisions share the connection, and one decoded page of each is all they hold.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._limiter = trio.CapacityLimiter(1)

    async def read(self, after: int, limit: int) -> tuple[int | None, list[Change]]:
        """The oldest revision kept and the first ``limit`` changes after ``after`` (0: all),
        read in one transaction."""
        page: tuple[int | None, list[Change]] = await trio.to_thread.run_sync(
            self._read, after, limit, limiter=self._limiter
        )
        return page

    def _read(self, after: int, limit: int) -> tuple[int | None, list[Change]]:
        if self._conn is None:
            self._conn = sqlite3.connect(
                f"file:{self._path}?mode=ro",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
            )
            self._conn.execute("PRAGMA busy_timeout=5000")
        conn = self._conn
        conn.execute("BEGIN")
        try:
            row = conn.execute("SELECT MIN(revision) FROM events").fetchone()
            oldest: int | None = row[0] if row else None
            if oldest is None or after + 1 < oldest:
                return oldest, []
            rows = conn.execute(
                "SELECT revision, type, kind, namespace, name, node, message, data FROM events "
                "WHERE revision > ? ORDER BY revision LIMIT ?",
                (after, limit if limit > 0 else -1),
            ).fetchall()
        finally:
            conn.execute("COMMIT")
        return oldest, [decode_change(tuple(r)) for r in rows]

    def close(self) -> None:
        """Close the connection (no read is running: the store's readers have ended)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


COMMIT_ROWS = """
CREATE TEMP VIEW commit_rows (revision, type, kind, namespace, name, node, message, data, uid)
AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE 0;
CREATE TEMP TRIGGER commit_row INSTEAD OF INSERT ON commit_rows BEGIN
    INSERT INTO events (revision, type, kind, namespace, name, node, message, data)
    VALUES (NEW.revision, NEW.type, NEW.kind, NEW.namespace, NEW.name, NEW.node, NEW.message,
            NEW.data);
    INSERT INTO objects (kind, namespace, name, revision, data)
    SELECT NEW.kind, NEW.namespace, NEW.name, NEW.revision, NEW.data
    WHERE NEW.type NOT IN ('Deleted', 'Preempted')
    ON CONFLICT (kind, namespace, name)
    DO UPDATE SET revision = excluded.revision, data = excluded.data;
    DELETE FROM objects WHERE NEW.type IN ('Deleted', 'Preempted')
    AND kind = NEW.kind AND namespace = NEW.namespace AND name = NEW.name;
    DELETE FROM bindings WHERE NEW.type IN ('Deleted', 'Preempted') AND uid = NEW.uid;
    INSERT INTO bindings (uid, namespace, name, node, revision)
    SELECT NEW.uid, NEW.namespace, NEW.name, NEW.node, NEW.revision
    WHERE NEW.type = 'Bound' AND NEW.uid IS NOT NULL;
    UPDATE meta SET value = CAST(NEW.revision AS TEXT) WHERE key = 'revision';
END;
"""
"""How a commit writes, in the connection's temporary schema (nothing of it is on disk): one
row of the ``commit_rows`` view a change, which its trigger turns into the change's event
row, its object's upsert or delete, its pod's binding made (``Bound``: a second binding of
one uid breaks the primary key, and the commit fails rather than bind a pod twice) or dropped
(``Deleted``, ``Preempted``), and the meta revision. Applied in revision order, so the tables
end as the batch's last change of each object leaves them."""

_INSERT_COMMIT_ROWS = "INSERT INTO commit_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"

CommitRow = tuple[int, str, str, str, str, str, str, bytes, str | None]
"""A change's event row and its pod's uid (None for other kinds)."""


@dataclass(frozen=True, slots=True)
class _Batch:
    rows: list[CommitRow]
    compact_through: int | None


def _commit_job(batch: _Batch, check: Callable[[], None]) -> Job:
    """One transaction in two aiosqlite calls (each a round trip to aiosqlite's thread): the
    rows in one ``executemany`` (the connection's ``isolation_level`` opens the transaction,
    ``BEGIN IMMEDIATE``, inside that call), then COMMIT. The compaction, when due, is a third
    statement in the same transaction."""

    async def commit(conn: aiosqlite.Connection) -> None:
        try:
            await conn.executemany(_INSERT_COMMIT_ROWS, batch.rows)
            if not conn.in_transaction:  # rows written outside a transaction: never ack them
                raise StoreError(f"isolation_level {conn.isolation_level!r} opened no transaction")
            if batch.compact_through is not None:
                await conn.execute(
                    "DELETE FROM events WHERE revision <= ?", (batch.compact_through,)
                )
            check()  # the files are still the ones opened, or nothing is committed
            await conn.commit()
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                await conn.rollback()
            raise

    return commit


def _batch_of(changes: Sequence[Change], compact_through: int | None) -> _Batch:
    return _Batch(
        rows=[
            (
                *event_row(change),
                change.object.metadata.uid if isinstance(change.object, Pod) else None,
            )
            for change in changes
        ],
        compact_through=compact_through,
    )


# --------------------------------------------------------------------------- the component


class SqliteDurability:
    """The store's :class:`~podium.store.actor.Durability` in a SQLite file (see the module
    docstring).

    Args:
        path: the database file (created when missing).
        synchronous: ``normal`` survives ``kill -9``; ``full`` also survives power loss.
        retention: how many changes the event log keeps.
    """

    keeps_log = True

    def __init__(
        self,
        path: str,
        *,
        synchronous: Literal["normal", "full"] = "normal",
        retention: int = tuning.EVENT_RETENTION_REVISIONS,
    ) -> None:
        self.path = path
        self.retention = retention
        self._db = _Database(path, synchronous)
        self._reader = _LogReader(path)
        self._lock: int | None = None
        self._identity: _Identity | None = None
        self._compacted_through = 0

    async def load(self) -> Recovery:
        """Take the lock, start the database thread, migrate the schema and read every object.

        Raises:
            DatabaseDamaged: the database fails the check at start (module docstring).
            StoreError: the database is locked by another daemon, unreadable, or made by a
                newer Podium.
        """
        # Before the connection opens: the lock's descriptor is the first one of the file.
        self._lock = await trio.to_thread.run_sync(acquire_lock, self.path)
        await self._db.open()
        loaded: Recovery = await self._db.call(_load_job(self.path))
        self._identity = _Identity(self.path, self._lock)
        self._compacted_through = max(0, loaded.revision - self.retention)
        return loaded

    async def commit(self, changes: list[Change]) -> None:
        """Write the batch in one transaction, compacting the log when it has grown
        :data:`~podium.store.tuning.COMPACT_EVERY` past the retention.

        Raises:
            DatabaseDamaged: the database, its WAL or the lock file was deleted or replaced;
                nothing of the batch was written.
            StoreError: SQLite failed; nothing of the batch was written.
        """
        assert self._identity is not None, "commit before load"
        revision = changes[-1].revision
        compact = None
        if revision - self.retention - self._compacted_through >= tuning.COMPACT_EVERY:
            compact = revision - self.retention
            self._compacted_through = compact
        await self._db.call(_commit_job(_batch_of(changes, compact), self._identity.check))

    async def read_events(self, after: int, limit: int = 0) -> tuple[int | None, list[Change]]:
        """The log on disk after ``after`` (the first ``limit`` changes; 0: all), and its
        oldest revision (None: empty), read on the reader's own connection (:class:`_LogReader`)
        while commits go on."""
        return await self._reader.read(after, limit)

    async def close(self) -> None:
        """Finish the jobs handed over, end the thread, release the lock."""
        try:
            self._reader.close()
            await self._db.close()
        finally:
            if self._identity is not None:
                self._identity.close()
                self._identity = None
            if self._lock is not None:
                os.close(self._lock)
                self._lock = None


def sqlite_durability(location: SqliteLocation, settings: PodiumSettings) -> SqliteDurability:
    """The durability ``podium`` describes: the file at ``location``, ``synchronous`` and
    ``eventRetentionRevisions`` (as :func:`~podium.store.etcd.durability.etcd_durability`)."""
    return SqliteDurability(
        location.path,
        synchronous=settings.synchronous,
        retention=settings.event_retention_revisions,
    )


def sqlite_store(
    inbox: trio.MemoryReceiveChannel[StoreMsg],
    subscribers: Sequence[Subscriber],
    durability: SqliteDurability,
) -> StoreActor:
    """The daemon's store actor on SQLite: ``durability`` (:func:`sqlite_durability`), a core
    keeping the recent part of the log in memory, and the group commit window (as
    :func:`~podium.store.etcd.durability.etcd_store`, with the same :mod:`~podium.store.tuning`).

    Args:
        inbox: its mailbox; the store stops when every sender has closed it.
        subscribers: who receives Recovered and every Committed.
        durability: where the store lives.
    """
    return StoreActor(
        inbox,
        subscribers,
        durability,
        core=StoreCore(retention=min(durability.retention, tuning.MEMORY_LOG)),
        commit_window=tuning.COMMIT_WINDOW_SECONDS,
    )
