"""Offline tools over a Podium database: ``podium db check``, ``podium db backup`` and
``podium db recover``.

Kubernetes counterpart: none in the scheduler; etcd's operator tools are the model —
``etcdctl snapshot save`` (an online, consistent copy of a live member: etcdctl/ctlv3/command/
snapshot_command.go@v3.3) and ``etcdctl snapshot status`` / etcd's corruption check (read a copy
and verify its hashes and revisions).

Not an actor: sync functions on the stdlib ``sqlite3`` driver, run by the CLI. The daemon keeps
its database in WAL mode and holds an ``flock`` on the file (apart from SQLite's POSIX locks),
so both tools work while it runs: a reader in another process sees the last committed
transaction, and the check reads every table in one read transaction (one commit's state).

What :func:`check_database` verifies (an *error* breaks a promise of docs/reliability.md; a
*warning* is a state Kubernetes allows but an operator should know about)::

    the file           exists, is SQLite, carries a Podium schema no newer than this Podium's;
                       PRAGMA integrity_check and foreign_key_check are clean; has one path
                       (no hard link: each path has its own WAL), and no WAL beside another
    objects rows       decode; kind/namespace/name columns match the object; the revision column
                       equals its resourceVersion and is <= the database revision
    events rows        decode, revision <= the database revision
    bindings rows      the pod exists with that uid and is bound to that node (no pod bound twice
                       or to two nodes); the node exists (a warning: nodes may be deleted under
                       their pods)
    nodes              the pods bound to a node that hold resources fit its allocatable: an
                       error when Podium made one of those bindings, a warning when clients made
                       them all (a pod put with spec.nodeName is bound as given)
    pods               bound to a node that does not exist (a warning)

The capacity rule needs the scheduler's resource arithmetic (``PodInfo``/``NodeInfo`` in
podium.actors.framework.nodeinfo); store/ imports no actor, so the caller passes it in as an
:data:`OverCommitted` function (podium.actors.db_commands.over_allocatable).

:func:`backup_database` copies with SQLite's online backup API, a step of pages at a time
(progress for a bar), into a temporary file beside the destination, checks the copy and only
then renames it into place: the destination is either the old file or a whole, checked copy.

:func:`recover_database` copies what can still be read and decoded out of a damaged database
(the daemon refuses it at start) into a new one, and lists what was lost.
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec

from podium.protocol.errors import StoreError
from podium.protocol.objects import KINDS, NAMESPACED_KINDS, Node, Pod, holds_resources
from podium.store.schema import MIGRATIONS, SCHEMA_VERSION, decode_object

__all__ = [
    "MAX_FINDINGS_PER_RULE",
    "BackupProgress",
    "BackupResult",
    "CheckReport",
    "OverCommitted",
    "RecoverReport",
    "backup_database",
    "check_database",
    "recover_database",
    "write_database",
]

OverCommitted = Callable[[Node, Sequence[Pod]], list[str]]
"""``(node, pods) -> problems``: given a node and the pods bound to it that hold resources, one
short text per resource they over-commit (``"cpu 5000m requested of 4000m allocatable"``),
none when they fit."""

BackupProgress = Callable[[int, int], None]
"""``(pages_done, pages_total)``, called after each backup step."""

MAX_FINDINGS_PER_RULE: Final = 20
"""A damaged file can break one rule a million times; each rule lists at most this many."""

# --------------------------------------------------------------------------- check


@dataclass
class CheckReport:
    """What :func:`check_database` found.

    Attributes:
        path: the database checked.
        is_database: False when the file is missing, not SQLite, or not a Podium database of a
            schema this Podium reads (the other counts are then empty).
        schema_version: ``PRAGMA user_version`` (None when unreadable).
        revision: the last committed revision (meta ``revision``).
        oldest_event_revision: the oldest revision the event log keeps (None when empty).
        objects: rows per kind.
        bound_pods: pods with ``spec.nodeName`` set.
        bindings: bindings rows (the bindings Podium made, for pods that still exist).
        events: rows of the event log.
        errors: broken invariants, one short line each naming the object and the rule.
        warnings: states Kubernetes allows that an operator should know about.
    """

    path: str
    is_database: bool = False
    schema_version: int | None = None
    revision: int | None = None
    oldest_event_revision: int | None = None
    objects: dict[str, int] = field(default_factory=dict)
    bound_pods: int = 0
    bindings: int = 0
    events: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed)."""
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "isDatabase": self.is_database,
            "schemaVersion": self.schema_version,
            "revision": self.revision,
            "oldestEventRevision": self.oldest_event_revision,
            "objects": dict(self.objects),
            "boundPods": self.bound_pods,
            "bindings": self.bindings,
            "events": self.events,
            "errors": list(self.errors),
            "warnings": list(self.warnings),
        }


class _Findings:
    """Errors and warnings, at most MAX_FINDINGS_PER_RULE listed per rule."""

    def __init__(self, report: CheckReport) -> None:
        self._report = report
        self._seen: dict[str, int] = {}
        self._into: dict[str, list[str]] = {}

    def error(self, rule: str, message: str) -> None:
        self._add(rule, message, self._report.errors)

    def warning(self, rule: str, message: str) -> None:
        self._add(rule, message, self._report.warnings)

    def _add(self, rule: str, message: str, into: list[str]) -> None:
        n = self._seen[rule] = self._seen.get(rule, 0) + 1
        self._into[rule] = into
        if n <= MAX_FINDINGS_PER_RULE:
            into.append(message)

    def close(self) -> None:
        """Append one "... and N more" line per rule that was cut short."""
        for rule, n in self._seen.items():
            if n > MAX_FINDINGS_PER_RULE:
                self._into[rule].append(
                    f"... and {n - MAX_FINDINGS_PER_RULE} more like the above ({rule})"
                )


def _uri(path: Path) -> str:
    # as_uri() percent-escapes '?', '#' and spaces, which a bare "file:" URI would misread.
    return f"{path.resolve().as_uri()}?mode=ro"


def _open_read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(_uri(path), uri=True)


def _object_ref(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def check_database(path: str | os.PathLike[str], *, over_committed: OverCommitted) -> CheckReport:
    """Check a Podium database (the daemon may be running; it is opened read-only).

    Args:
        path: the database file.
        over_committed: the capacity rule (see :data:`OverCommitted`).

    Returns:
        The report; ``report.ok`` is False when an invariant is broken or the file is not a
        Podium database this Podium reads.
    """
    p = Path(path)
    report = CheckReport(path=str(path))
    findings = _Findings(report)
    if not p.exists():
        findings.error("file", f"{path}: no such file")
    elif not p.is_file():
        findings.error("file", f"{path}: not a file")
    else:
        _check_links(p, findings)
        try:
            conn = _open_read_only(p)
        except sqlite3.Error as exc:
            findings.error("file", f"{path}: cannot open it: {exc}")
        else:
            try:
                # One read transaction for the whole check: in WAL mode its snapshot is the
                # state of one commit, whatever the daemon commits meanwhile (two autocommit
                # reads could see an event newer than the meta revision read before it).
                conn.execute("BEGIN")
                _check(conn, report, findings, over_committed)
            except sqlite3.Error as exc:
                # A damaged page can fail any query; what was found so far still stands.
                findings.error("sqlite", f"{path}: reading it failed: {exc}")
            finally:
                conn.close()
    findings.close()
    return report


def _check_links(path: Path, findings: _Findings) -> None:
    """One database file, one path: SQLite names the WAL after the path, so through two hard
    links two daemons each had a WAL of their own over one file (before Podium locked the
    file itself), each acknowledging writes the other's checkpoints overwrote; and a reader
    through one link never sees what a daemon through the other has in its WAL. The loss
    itself leaves no trace in the file: the links are what can be found, and a WAL beside
    another link, whose writes this path never reads."""
    real = path.resolve()
    held = real.stat()
    if held.st_nlink < 2:
        return
    others: list[Path] = []
    for folder in dict.fromkeys((real.parent, path.absolute().parent)):
        with contextlib.suppress(OSError):
            for entry in folder.iterdir():
                with contextlib.suppress(OSError):
                    st = entry.lstat()
                    if entry != real and (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino):
                        others.append(entry)
    named = ", ".join(str(o) for o in others) or "not in this folder"
    findings.error(
        "file.links",
        f"{path}: the file has {held.st_nlink} hard links ({named}); SQLite keeps one WAL per "
        "path, so writes through two paths are two WALs over one file and acknowledged writes "
        "may be gone, which this check cannot see; keep one path (remove the other links) and "
        "restore a backup if a daemon ran through another one",
    )
    for other in others:
        wal = Path(f"{other}-wal")
        with contextlib.suppress(OSError):
            if (size := wal.stat().st_size) > 0:
                findings.error(
                    "file.wal",
                    f"{wal}: a WAL of {size} bytes written through {other}, another path to "
                    f"this file; reading {path} never sees those writes, and opening {other} "
                    "would replay them over pages this path's checkpoints changed",
                )


def _check(
    conn: sqlite3.Connection,
    report: CheckReport,
    findings: _Findings,
    over_committed: OverCommitted,
) -> None:
    path = report.path
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.DatabaseError as exc:
        findings.error("file", f"{path} is not a Podium database: {exc}")
        return
    report.schema_version = version
    if version == 0:
        findings.error("file", f"{path} is not a Podium database (it has no Podium schema)")
        return
    if version > SCHEMA_VERSION:
        findings.error(
            "file",
            f"{path} has schema version {version}, made by a newer Podium "
            f"(this one reads up to {SCHEMA_VERSION})",
        )
        return
    report.is_database = True
    if version < SCHEMA_VERSION:
        findings.warning(
            "schema",
            f"{path} has schema version {version}, older than {SCHEMA_VERSION}; "
            "podium serve migrates it when it opens it",
        )

    for (row,) in conn.execute("PRAGMA integrity_check"):
        if row != "ok":
            findings.error("integrity_check", f"integrity_check: {row}")
    for table, rowid, parent, fkid in conn.execute("PRAGMA foreign_key_check"):
        findings.error(
            "foreign_key_check",
            f"foreign_key_check: {table} row {rowid} refers to a missing {parent} row "
            f"(foreign key {fkid})",
        )

    row = conn.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
    revision = -1
    if row is None:
        findings.error("meta", "meta: no 'revision' row")
    else:
        try:
            revision = int(row[0])
        except ValueError:
            findings.error("meta", f"meta: revision {row[0]!r} is not an integer")
        else:
            report.revision = revision

    nodes, pods = _check_objects(conn, report, findings, revision)
    _check_events(conn, report, findings, revision)
    podium_bound = _check_bindings(conn, report, findings, revision, nodes, pods)
    _check_nodes(findings, nodes, pods, podium_bound, over_committed)


def _check_objects(
    conn: sqlite3.Connection, report: CheckReport, findings: _Findings, revision: int
) -> tuple[dict[str, Node], dict[tuple[str, str], Pod]]:
    nodes: dict[str, Node] = {}
    pods: dict[tuple[str, str], Pod] = {}
    rows: Iterator[tuple[str, str, str, int, bytes]] = conn.execute(
        "SELECT kind, namespace, name, revision, data FROM objects ORDER BY kind, namespace, name"
    )
    for kind, namespace, name, row_revision, data in rows:
        ref = _object_ref(kind, namespace, name)
        report.objects[kind] = report.objects.get(kind, 0) + 1
        if kind not in KINDS:
            findings.error("objects.kind", f"{ref}: unknown kind {kind!r}")
        if revision >= 0 and row_revision > revision:
            findings.error(
                "objects.revision",
                f"{ref}: revision {row_revision} is after the database revision {revision}",
            )
        try:
            obj = decode_object(data)
        except msgspec.DecodeError as exc:
            findings.error("objects.decode", f"{ref}: the stored object does not decode: {exc}")
            continue
        meta = obj.metadata
        got = (type(obj).__name__, meta.namespace, meta.name)
        if got != (kind, namespace, name):
            findings.error(
                "objects.key",
                f"{ref}: the row holds {_object_ref(*got)} (columns and object must agree)",
            )
            continue
        if (kind in NAMESPACED_KINDS) != bool(namespace):
            findings.error(
                "objects.namespace",
                f"{ref}: a {'namespaced' if kind in NAMESPACED_KINDS else 'cluster-scoped'} kind "
                f"stored with namespace {namespace!r}",
            )
        if meta.resource_version != str(row_revision):
            findings.error(
                "objects.resourceVersion",
                f"{ref}: resourceVersion {meta.resource_version!r} differs from the row's "
                f"revision {row_revision}",
            )
        if isinstance(obj, Node):
            nodes[name] = obj
        elif isinstance(obj, Pod):
            pods[(namespace, name)] = obj
            if obj.spec.node_name:
                report.bound_pods += 1
    return nodes, pods


def _check_events(
    conn: sqlite3.Connection, report: CheckReport, findings: _Findings, revision: int
) -> None:
    rows: Iterator[tuple[int, str, str, str, bytes]] = conn.execute(
        "SELECT revision, kind, namespace, name, data FROM events ORDER BY revision"
    )
    for event_revision, kind, namespace, name, data in rows:
        report.events += 1
        if report.oldest_event_revision is None:
            report.oldest_event_revision = event_revision
        ref = f"event {event_revision} ({_object_ref(kind, namespace, name)})"
        if revision >= 0 and event_revision > revision:
            findings.error("events.revision", f"{ref}: after the database revision {revision}")
        try:
            decode_object(data)
        except msgspec.DecodeError as exc:
            findings.error("events.decode", f"{ref}: the stored object does not decode: {exc}")


def _check_bindings(
    conn: sqlite3.Connection,
    report: CheckReport,
    findings: _Findings,
    revision: int,
    nodes: dict[str, Node],
    pods: dict[tuple[str, str], Pod],
) -> set[tuple[str, str]]:
    """Check every bindings row; returns the pods whose binding row matches them."""
    podium_bound: set[tuple[str, str]] = set()
    rows: Iterator[tuple[str, str, str, str, int]] = conn.execute(
        "SELECT uid, namespace, name, node, revision FROM bindings ORDER BY namespace, name, uid"
    )
    for uid, namespace, name, node, binding_revision in rows:
        report.bindings += 1
        ref = f"binding {uid} of pod {namespace}/{name} to node {node}"
        if revision >= 0 and binding_revision > revision:
            findings.error(
                "bindings.revision",
                f"{ref}: revision {binding_revision} is after the database revision {revision}",
            )
        pod = pods.get((namespace, name))
        if pod is None:
            findings.error(
                "bindings.pod", f"{ref}: the pod does not exist (a binding outlived its pod)"
            )
            continue
        if pod.metadata.uid != uid:
            findings.error(
                "bindings.uid",
                f"{ref}: the pod has uid {pod.metadata.uid} (a binding belongs to one pod)",
            )
            continue
        if pod.spec.node_name != node:
            where = f"node {pod.spec.node_name}" if pod.spec.node_name else "no node"
            findings.error(
                "bindings.node",
                f"{ref}: the pod is bound to {where} (a pod is bound once, to one node)",
            )
            continue
        podium_bound.add((namespace, name))
        if node not in nodes:
            findings.warning(
                "bindings.deleted_node",
                f"{ref}: the node no longer exists (Kubernetes lets a node be deleted under its "
                "pods; they stay bound to it)",
            )
    return podium_bound


def _check_nodes(
    findings: _Findings,
    nodes: dict[str, Node],
    pods: dict[tuple[str, str], Pod],
    podium_bound: set[tuple[str, str]],
    over_committed: OverCommitted,
) -> None:
    on_node: dict[str, list[tuple[tuple[str, str], Pod]]] = {}
    for key, pod in pods.items():
        node = pod.spec.node_name
        if not node:
            continue
        if node not in nodes:
            if key not in podium_bound:  # Podium's own were reported with their binding
                findings.warning(
                    "pods.missing_node",
                    f"pod {key[0]}/{key[1]} is bound to node {node}, which does not exist "
                    "(bound by a client; Kubernetes keeps such pods)",
                )
            continue
        if holds_resources(pod):
            on_node.setdefault(node, []).append((key, pod))
    for name in sorted(on_node):
        bound = on_node[name]
        problems = over_committed(nodes[name], [pod for _, pod in bound])
        if not problems:
            continue
        ours = [f"{ns}/{n}" for (ns, n), _ in bound if (ns, n) in podium_bound]
        over = "; ".join(problems)
        if ours:
            shown = ", ".join(ours[:5]) + (", ..." if len(ours) > 5 else "")
            findings.error(
                "nodes.over_allocatable",
                f"node {name}: over its allocatable ({over}) with {len(bound)} pods, "
                f"{len(ours)} of them bound by Podium ({shown}); Podium never binds past "
                "allocatable",
            )
        else:
            findings.warning(
                "nodes.client_over_allocatable",
                f"node {name}: over its allocatable ({over}) with {len(bound)} pods, all bound "
                "by clients (spec.nodeName given); Podium binds nothing more there until it fits",
            )


# --------------------------------------------------------------------------- backup


@dataclass(frozen=True, slots=True)
class BackupResult:
    """A finished backup.

    Attributes:
        path, dest: the database copied and the copy.
        pages: pages in the copy.
        revision: the copy's revision (the last transaction it holds).
        restarts: how often a write by the daemon restarted the copy.
    """

    path: str
    dest: str
    pages: int
    revision: int | None
    restarts: int


class _TooManyRestarts(Exception):
    """Raised from the progress callback to abandon a stepwise copy the writer keeps restarting."""


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _sidecars(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def backup_database(
    path: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    progress: BackupProgress | None = None,
    force: bool = False,
    pages_per_step: int | None = None,
    max_restarts: int = 3,
) -> BackupResult:
    """Copy a Podium database, consistently, while the daemon may be writing it.

    SQLite's backup API copies ``pages_per_step`` pages per step and releases the source between
    steps; a commit by another connection in between restarts the copy from the first page, so
    the result is always one transaction's state. After ``max_restarts`` restarts the copy is
    done in one step (one read transaction: WAL lets the daemon keep committing meanwhile), so a
    busy daemon cannot starve it. The copy is written beside ``dest``, checked with
    ``PRAGMA quick_check`` (integrity_check without the index cross-checks), then renamed onto
    ``dest``.

    Args:
        path: the database to copy.
        dest: the copy's path.
        progress: called with ``(pages_done, pages_total)`` after each step.
        force: replace an existing ``dest``.
        pages_per_step: pages per step; default 1/100 of the database (at least 256 pages).
        max_restarts: restarts tolerated before copying in one step.

    Returns:
        The copy's size in pages and its revision.

    Raises:
        StoreError: ``path`` is not a Podium database, ``dest`` exists (without ``force``) or
            is ``path`` itself, or SQLite failed (the partial copy is removed).
    """
    src, target = Path(path), Path(dest)
    if not src.is_file():
        raise StoreError(f"{path}: no such database file")
    if target.exists():
        if target.is_dir():
            raise StoreError(f"{dest} is a directory; give the backup's file name")
        if src.samefile(target):
            raise StoreError(f"{dest} is the database itself; back it up to another file")
        if not force:
            raise StoreError(f"{dest} already exists; not overwriting it without --force")
    try:
        source = _open_read_only(src)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open it: {exc}") from exc
    try:
        try:
            (version,) = source.execute("PRAGMA user_version").fetchone()
            (page_count,) = source.execute("PRAGMA page_count").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path} is not a Podium database: {exc}") from exc
        if version == 0:
            raise StoreError(f"{path} is not a Podium database (it has no Podium schema)")
        step = pages_per_step or max(256, math.ceil(page_count / 100))
        with _beside(target, "the backup", f"backing up {path} to {dest}") as tmp:
            result = _copy(source, tmp, step, progress, max_restarts)
    finally:
        source.close()
    pages, revision, restarts = result
    return BackupResult(str(path), str(dest), pages, revision, restarts)


@contextlib.contextmanager
def _beside(target: Path, what: str, doing: str) -> Iterator[Path]:
    """A temporary file beside ``target`` for ``what``, renamed onto ``target`` when the block
    succeeds; removed with its side files otherwise.

    Raises:
        StoreError: the folder cannot be written, or SQLite or the OS failed while ``doing``.
    """
    try:
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise StoreError(f"cannot write {what} beside {target}: {exc}") from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        for stale in _sidecars(target):
            # A -wal left by an older file at target would be replayed into the new one.
            _remove_quietly(stale)
        tmp.replace(target)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"{doing} failed: {exc}") from exc
    finally:
        for leftover in (tmp, *_sidecars(tmp)):
            _remove_quietly(leftover)


def _copy(
    source: sqlite3.Connection,
    tmp: Path,
    pages_per_step: int,
    progress: BackupProgress | None,
    max_restarts: int,
) -> tuple[int, int | None, int]:
    """Back ``source`` up into ``tmp`` and check it; returns (pages, revision, restarts)."""
    restarts = 0
    last_remaining: int | None = None

    def on_step(status: int, remaining: int, total: int) -> None:
        nonlocal restarts, last_remaining
        # A step that copied (OK or DONE, not BUSY/LOCKED) lowers `remaining`; one that does not
        # began again from the first page because another connection committed.
        copied = status in (sqlite3.SQLITE_OK, sqlite3.SQLITE_DONE)
        if copied and last_remaining is not None and remaining >= last_remaining:
            restarts += 1
            if restarts > max_restarts:
                raise _TooManyRestarts
        last_remaining = remaining
        if progress is not None:
            progress(total - remaining, total)

    target = sqlite3.connect(tmp)
    try:
        try:
            source.backup(target, pages=pages_per_step, progress=on_step)
        except _TooManyRestarts:
            source.backup(target, pages=-1, progress=on_step)
        problems = [row for (row,) in target.execute("PRAGMA quick_check") if row != "ok"]
        if problems:
            raise StoreError(f"the copy failed its check: {'; '.join(problems[:5])}")
        (pages,) = target.execute("PRAGMA page_count").fetchone()
        revision: int | None = None
        with contextlib.suppress(sqlite3.Error, ValueError):
            row = target.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
            revision = int(row[0]) if row else None
    finally:
        target.close()
    return pages, revision, restarts


# --------------------------------------------------------------------------- recover

RECOVER_PAGE: Final = 256
"""Rows read per query while recovering: a damaged page fails one query, and the scan goes on
from the other end."""


@dataclass
class RecoverReport:
    """What :func:`recover_database` copied and what it lost.

    Attributes:
        path, dest: the damaged database and the new one.
        revision: the new database's revision (the newest revision found anywhere).
        objects, events, bindings: rows copied.
        oldest_event_revision: the oldest event kept (None: the log starts empty).
        lost: one line per row or range that could not be copied, naming it.
    """

    path: str
    dest: str
    revision: int = 0
    objects: int = 0
    events: int = 0
    bindings: int = 0
    oldest_event_revision: int | None = None
    lost: list[str] = field(default_factory=list)


_Row = tuple[Any, ...]


def _scan(
    conn: sqlite3.Connection, table: str, key: tuple[str, ...], columns: str, lost: list[str]
) -> list[_Row]:
    """Every readable row of ``table`` in key order: read forward; where a read fails on a
    damaged page, read backward from the end down to the last row read."""
    forward, broke = _walk(conn, table, key, columns, after=None)
    if broke is None:
        return forward
    last = tuple(forward[-1][: len(key)]) if forward else None
    backward, _ = _walk(conn, table, key, columns, after=last, descending=True)
    first = tuple(backward[-1][: len(key)]) if backward else None
    after = "the first row" if last is None else f"{last}"
    before = "the end" if first is None else f"{first}"
    lost.append(f"{table}: the rows between {after} and {before} could not be read ({broke})")
    return forward + backward[::-1]


def _walk(
    conn: sqlite3.Connection,
    table: str,
    key: tuple[str, ...],
    columns: str,
    *,
    after: _Row | None,
    descending: bool = False,
) -> tuple[list[_Row], str | None]:
    """Rows after ``after`` (ascending, or from the end down to it), a page a query and one
    row a query once a page fails; returns them and the error that stopped the walk."""
    keys = ", ".join(key)
    marks = ", ".join("?" * len(key))
    rows: list[_Row] = []
    low, high = after, None
    limit = RECOVER_PAGE
    while True:
        bounds: list[str] = []
        params: list[Any] = []
        if low is not None:
            bounds.append(f"({keys}) > ({marks})")
            params += low
        if high is not None:
            bounds.append(f"({keys}) < ({marks})")
            params += high
        where = f"WHERE {' AND '.join(bounds)} " if bounds else ""
        order = ", ".join(f"{k} DESC" for k in key) if descending else keys
        try:
            page = conn.execute(
                f"SELECT {keys}, {columns} FROM {table} {where}ORDER BY {order} LIMIT ?",
                (*params, limit),
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            if limit > 1:  # read up to the damage one row at a time
                limit = 1
                continue
            return rows, str(exc)
        if not page:
            return rows, None
        rows += page
        edge = tuple(page[-1][: len(key)])
        if descending:
            high = edge
        else:
            low = edge


def recover_database(
    path: str | os.PathLike[str], dest: str | os.PathLike[str], *, force: bool = False
) -> RecoverReport:
    """Copy every row of a damaged database that can still be read and decoded into a new one.

    Each table is read in key order, a page of rows at a time, forward and then backward from
    its end, so one damaged page loses the rows it held and not the rest. The new database
    holds the objects that decode, the bindings whose pod was recovered bound to that node,
    and the end of the event log back to its first gap (a watcher from before it gets
    ``gone`` and lists again); its revision is the newest found anywhere. When the log's end
    itself was lost, the new log starts empty at that revision (meta ``recovered``), which
    ``podium serve`` accepts. The copy is written beside ``dest``, checked (quick_check), and
    renamed onto it.

    Raises:
        StoreError: ``path`` is missing or SQLite cannot open it at all, ``dest`` exists
            (without ``force``) or is ``path``, or the copy could not be written.
    """
    src, target = Path(path), Path(dest)
    if not src.is_file():
        raise StoreError(f"{path}: no such database file")
    if target.exists():
        if src.samefile(target):
            raise StoreError(f"{dest} is the damaged database itself; recover into a new file")
        if not force:
            raise StoreError(f"{dest} already exists; not overwriting it without --force")
    report = RecoverReport(path=str(path), dest=str(dest))
    try:
        conn = _open_read_only(src)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: SQLite cannot read it ({exc}); nothing to recover") from exc
    try:
        meta, objects, events, bindings = _salvage(conn, report.lost)
    finally:
        conn.close()
    revision = max(
        [meta or 0, *(row[3] for row in objects), *(row[0] for row in events)], default=0
    )
    log = _log_end(events, revision)
    if len(log) < len(events):
        report.lost.append(
            f"events: {len(events) - len(log)} readable events older than a gap in the log "
            "were left out (a watcher from before the oldest kept gets gone and lists again)"
        )
    pods = {(row[1], row[2]): row[5] for row in objects if isinstance(row[5], Pod)}
    kept_bindings = []
    for uid, namespace, name, node, binding_revision in bindings:
        pod = pods.get((namespace, name))
        if pod is None or pod.metadata.uid != uid or pod.spec.node_name != node:
            report.lost.append(
                f"binding {uid} of pod {namespace}/{name} to node {node}: its pod was not "
                "recovered bound there"
            )
            continue
        kept_bindings.append((uid, namespace, name, node, binding_revision))
    _write_recovered(target, revision, objects, log, kept_bindings)
    report.revision = revision
    report.objects, report.events, report.bindings = len(objects), len(log), len(kept_bindings)
    report.oldest_event_revision = log[0][0] if log else None
    return report


def _salvage(
    conn: sqlite3.Connection, lost: list[str]
) -> tuple[int | None, list[_Row], list[_Row], list[_Row]]:
    """(meta revision, objects + decoded object, events, bindings) that could be read."""
    meta: int | None = None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
        meta = int(row[0]) if row else None
    except (sqlite3.Error, ValueError) as exc:
        lost.append(f"meta: the revision could not be read ({exc})")
    objects: list[_Row] = []
    for kind, namespace, name, revision, data in _scan(
        conn, "objects", ("kind", "namespace", "name"), "revision, data", lost
    ):
        try:
            obj = decode_object(data)
        except msgspec.DecodeError as exc:
            lost.append(f"{_object_ref(kind, namespace, name)}: does not decode ({exc})")
            continue
        objects.append((kind, namespace, name, revision, data, obj))
    events: list[_Row] = []
    for row in _scan(
        conn, "events", ("revision",), "type, kind, namespace, name, node, message, data", lost
    ):
        try:
            decode_object(row[7])
        except msgspec.DecodeError as exc:
            ref = _object_ref(row[2], row[3], row[4])
            lost.append(f"event {row[0]} ({ref}): does not decode ({exc})")
            continue
        events.append(row)
    bindings = _scan(conn, "bindings", ("uid",), "namespace, name, node, revision", lost)
    return meta, objects, events, bindings


def _log_end(events: list[_Row], revision: int) -> list[_Row]:
    """The events that run without a gap up to ``revision`` (one event per revision)."""
    end: list[_Row] = []
    for row in reversed(events):
        if row[0] != revision - len(end):
            break
        end.append(row)
    return end[::-1]


def write_database(
    target: str | os.PathLike[str],
    revision: int,
    objects: list[_Row],
    events: list[_Row],
    bindings: list[_Row],
    *,
    force: bool = False,
) -> None:
    """A new Podium database at ``target`` holding these rows (the etcd store's backup).

    Raises:
        StoreError: ``target`` exists (without ``force``), or writing it failed.
    """
    path = Path(target)
    if path.exists() and not force:
        raise StoreError(f"{path} exists; give --force to replace it")
    _write_recovered(path, revision, objects, events, bindings)


def _write_recovered(
    target: Path, revision: int, objects: list[_Row], events: list[_Row], bindings: list[_Row]
) -> None:
    with _beside(target, "the recovered database", f"writing {target}") as tmp:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            for step, script in enumerate(MIGRATIONS):
                conn.executescript(f"BEGIN; {script} PRAGMA user_version = {step + 1}; COMMIT;")
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT INTO objects VALUES (?, ?, ?, ?, ?)", [row[:5] for row in objects]
            )
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", events)
            conn.executemany("INSERT INTO bindings VALUES (?, ?, ?, ?, ?)", bindings)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'revision'", (str(revision),))
            if revision and not events:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('recovered', ?)", (str(revision),)
                )
            conn.execute("COMMIT")
            problems = [r for (r,) in conn.execute("PRAGMA quick_check") if r != "ok"]
            if problems:
                raise StoreError(f"the recovered copy failed its check: {problems[0]}")
        finally:
            conn.close()
