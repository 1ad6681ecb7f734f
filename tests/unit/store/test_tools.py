"""``podium db check`` and ``podium db backup`` over databases built here row by row.

:class:`Db` writes a file the way store/sqlite.py does (the schema's MIGRATIONS, WAL, one
revision per change, an objects row, an event and the meta revision per change, a bindings row per
binding Podium makes), so each test breaks exactly one rule by hand.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

import msgspec
import pytest
from builders import make_node, make_pod

from podium.cli.db import over_allocatable
from podium.protocol import objects as o
from podium.protocol.errors import StoreError
from podium.store import tools
from podium.store.mail import Change
from podium.store.schema import MIGRATIONS, SCHEMA_VERSION, encode_object, event_row
from podium.store.tools import (
    MAX_FINDINGS_PER_RULE,
    CheckReport,
    backup_database,
    check_database,
)

# --------------------------------------------------------------------------- a database by hand


def create_schema(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    for step, script in enumerate(MIGRATIONS):
        conn.executescript(f"BEGIN; {script} PRAGMA user_version = {step + 1}; COMMIT;")
    return conn


def _meta(obj: o.KubeObject, **fields: object) -> o.KubeObject:
    meta = msgspec.structs.replace(obj.metadata, **fields)
    return msgspec.structs.replace(obj, metadata=meta)


class Db:
    """A Podium database written change by change, as the daemon commits them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = create_schema(path)
        self.revision = 0

    def put(self, obj: o.KubeObject, *, type_: str = "Added", node: str = "") -> o.KubeObject:
        """Store ``obj`` with the next revision (uid ``uid-NAME`` unless it has one)."""
        self.revision += 1
        kind = type(obj).__name__
        namespace = (obj.metadata.namespace or "default") if kind in o.NAMESPACED_KINDS else ""
        obj = _meta(
            obj,
            namespace=namespace,
            uid=obj.metadata.uid or f"uid-{obj.metadata.name}",
            resource_version=str(self.revision),
        )
        change = Change(
            revision=self.revision,
            type=type_,  # type: ignore[arg-type]  # the tests pass EventType names
            kind=kind,
            namespace=namespace,
            name=obj.metadata.name,
            object=obj,
            node=node,
        )
        self.conn.execute("BEGIN")
        self.conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", event_row(change))
        self.conn.execute(
            "INSERT INTO objects VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, namespace, name) "
            "DO UPDATE SET revision = excluded.revision, data = excluded.data",
            (kind, namespace, obj.metadata.name, self.revision, encode_object(obj)),
        )
        self.conn.execute("UPDATE meta SET value = ? WHERE key = 'revision'", (str(self.revision),))
        self.conn.execute("COMMIT")
        return obj

    def bind(self, pod: o.Pod, node: str) -> o.Pod:
        """Podium's binding: the pod (put first if new) gets spec.nodeName and a bindings row."""
        if not pod.metadata.resource_version:
            pod = self.put(pod)  # type: ignore[assignment]
        bound = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))
        stored = self.put(bound, type_="Bound", node=node)
        meta = stored.metadata
        self.sql(
            "INSERT INTO bindings VALUES (?, ?, ?, ?, ?)",
            meta.uid,
            meta.namespace,
            meta.name,
            node,
            self.revision,
        )
        return stored  # type: ignore[return-value]

    def sql(self, statement: str, *params: object) -> None:
        self.conn.execute(statement, params)

    def close(self) -> None:
        self.conn.close()


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110) -> o.Node:
    return make_node(name).capacity(cpu=cpu, memory=memory, pods=pods).obj()


def pod(name: str, cpu: str = "1", on: str = "") -> o.Pod:
    b = make_pod(name).req(cpu=cpu, memory="1Gi")
    return (b.node(on) if on else b).obj()


def check(path: Path) -> CheckReport:
    return check_database(path, over_committed=over_allocatable)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Db]:
    d = Db(tmp_path / "podium.db")
    yield d
    d.close()


def clean_cluster(db: Db) -> None:
    """Two nodes; a Podium-bound pod, a client-bound pod, a pending pod, a PriorityClass."""
    db.put(node("n1"))
    db.put(node("n2"))
    db.put(make_pod("pending").req(cpu="100").obj())
    db.bind(pod("web-1"), "n1")
    db.put(pod("client-1", on="n2"))
    db.put(o.PriorityClass(metadata=o.ObjectMeta(name="high"), value=1000))


# --------------------------------------------------------------------------- check: clean


def test_clean_database_passes_with_its_counts(db: Db) -> None:
    clean_cluster(db)
    report = check(db.path)
    assert report.errors == []
    assert report.warnings == []
    assert report.ok and report.is_database
    assert report.schema_version == SCHEMA_VERSION
    assert report.revision == 7  # 6 puts and one Bound
    assert report.objects == {"Node": 2, "Pod": 3, "PriorityClass": 1}
    assert (report.bound_pods, report.bindings) == (2, 1)
    assert (report.events, report.oldest_event_revision) == (7, 1)


def test_empty_podium_database_passes(db: Db) -> None:
    report = check(db.path)
    assert report.ok
    assert (report.revision, report.events, report.oldest_event_revision) == (0, 0, None)
    assert report.objects == {}


def test_compacted_log_reports_its_oldest_revision(db: Db) -> None:
    clean_cluster(db)
    db.sql("DELETE FROM events WHERE revision <= 4")
    report = check(db.path)
    assert report.ok
    assert (report.events, report.oldest_event_revision) == (3, 5)


def test_terminated_and_terminating_pods_hold_nothing(db: Db) -> None:
    db.put(node("n1", cpu="2"))
    db.bind(pod("runs"), "n1")
    db.bind(make_pod("done").req(cpu="2").phase("Succeeded").obj(), "n1")
    db.bind(make_pod("failed").req(cpu="2").phase("Failed").obj(), "n1")
    going = make_pod("going").req(cpu="2").obj()
    db.bind(_meta(going, deletion_timestamp="2026-01-01T00:00:00Z"), "n1")  # type: ignore[arg-type]
    assert check(db.path).errors == []


# --------------------------------------------------------------------------- check: one rule each


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Db], None]
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _binding_without_pod(db: Db) -> None:
    clean_cluster(db)
    db.sql("INSERT INTO bindings VALUES ('uid-gone', 'default', 'gone', 'n1', 3)")


def _binding_other_uid(db: Db) -> None:
    clean_cluster(db)
    db.sql("UPDATE bindings SET uid = 'uid-old' WHERE name = 'web-1'")


def _binding_other_node(db: Db) -> None:
    clean_cluster(db)
    db.sql("UPDATE bindings SET node = 'n2' WHERE name = 'web-1'")


def _binding_of_pending_pod(db: Db) -> None:
    clean_cluster(db)
    db.sql("INSERT INTO bindings VALUES ('uid-pending', 'default', 'pending', 'n1', 3)")


def _two_bindings_one_pod(db: Db) -> None:
    clean_cluster(db)
    db.sql("INSERT INTO bindings VALUES ('uid-other', 'default', 'web-1', 'n2', 5)")


def _over_with_podium_binding(db: Db) -> None:
    db.put(node("n1", cpu="2"))
    db.put(pod("client-1", cpu="1500m", on="n1"))
    db.bind(pod("web-1", cpu="1"), "n1")


def _over_by_clients(db: Db) -> None:
    db.put(node("n1", cpu="2", memory="1Gi"))
    db.put(pod("client-1", cpu="1500m", on="n1"))
    db.put(pod("client-2", cpu="1", on="n1"))


def _over_pod_count(db: Db) -> None:
    db.put(node("n1", pods=1))
    db.bind(pod("web-1"), "n1")
    db.bind(pod("web-2"), "n1")


def _over_allocatable_not_capacity(db: Db) -> None:
    n = (
        make_node("n1")
        .capacity(cpu="4", memory="8Gi", pods=110)
        .allocatable({"cpu": "1", "memory": "8Gi", "pods": 10})
    )
    db.put(n.obj())
    db.bind(pod("web-1", cpu="1500m"), "n1")


def _over_extended_resource(db: Db) -> None:
    n = make_node("n1").capacity_map({"cpu": "4", "pods": 10, "example.com/gpu": 1})
    db.put(n.obj())
    db.bind(make_pod("train").req_map({"example.com/gpu": 2}).obj(), "n1")


def _binding_to_deleted_node(db: Db) -> None:
    clean_cluster(db)
    db.sql("DELETE FROM objects WHERE kind = 'Node' AND name = 'n1'")


def _client_pod_on_missing_node(db: Db) -> None:
    clean_cluster(db)
    db.put(pod("stray", on="n9"))


def _undecodable_row(db: Db) -> None:
    clean_cluster(db)
    db.sql("UPDATE objects SET data = x'c1ff00' WHERE name = 'client-1'")


def _row_holds_another_object(db: Db) -> None:
    clean_cluster(db)
    db.sql("UPDATE objects SET name = 'other' WHERE name = 'client-1'")


def _object_revision_ahead(db: Db) -> None:
    clean_cluster(db)
    db.sql("UPDATE meta SET value = '5' WHERE key = 'revision'")


def _resource_version_differs(db: Db) -> None:
    clean_cluster(db)
    db.sql("UPDATE objects SET revision = 2 WHERE name = 'client-1'")


def _cluster_kind_with_namespace(db: Db) -> None:
    db.put(node("n1"))
    row = db.conn.execute("SELECT data FROM objects").fetchone()
    nodeobj = msgspec.msgpack.decode(row[0])
    nodeobj["metadata"]["namespace"] = "default"
    db.sql("DELETE FROM objects")
    db.sql(
        "INSERT INTO objects VALUES ('Node', 'default', 'n1', 1, ?)",
        msgspec.msgpack.encode(nodeobj),
    )


def _event_revision_ahead(db: Db) -> None:
    clean_cluster(db)
    db.sql("UPDATE events SET revision = 99 WHERE revision = 7")


def _undecodable_event(db: Db) -> None:
    clean_cluster(db)
    db.sql("UPDATE events SET data = x'00' WHERE revision = 2")


def _no_meta_revision(db: Db) -> None:
    db.sql("DELETE FROM meta")


def _older_schema(db: Db) -> None:
    clean_cluster(db)
    db.sql(f"PRAGMA user_version = {SCHEMA_VERSION - 1 or 0}")


_BINDING_WEB = "binding uid-web-1 of pod default/web-1 to node"
CASES = [
    Case(
        "binding whose pod is missing",
        _binding_without_pod,
        errors=[
            "binding uid-gone of pod default/gone to node n1: the pod does not exist "
            "(a binding outlived its pod)"
        ],
    ),
    Case(
        "binding whose pod has another uid",
        _binding_other_uid,
        errors=[
            "binding uid-old of pod default/web-1 to node n1: the pod has uid uid-web-1 "
            "(a binding belongs to one pod)"
        ],
    ),
    Case(
        "binding naming another node than the pod's",
        _binding_other_node,
        errors=[
            f"{_BINDING_WEB} n2: the pod is bound to node n1 (a pod is bound once, to one node)"
        ],
    ),
    Case(
        "binding of a pod that is not bound",
        _binding_of_pending_pod,
        errors=[
            "binding uid-pending of pod default/pending to node n1: the pod is bound to no node "
            "(a pod is bound once, to one node)"
        ],
    ),
    Case(
        "two bindings of one pod",
        _two_bindings_one_pod,
        errors=[
            "binding uid-other of pod default/web-1 to node n2: the pod has uid uid-web-1 "
            "(a binding belongs to one pod)"
        ],
    ),
    Case(
        "node over allocatable through a Podium binding",
        _over_with_podium_binding,
        errors=[
            "node n1: over its allocatable (cpu 2500m requested of 2000m allocatable) with "
            "2 pods, 1 of them bound by Podium (default/web-1); Podium never binds past "
            "allocatable"
        ],
    ),
    Case(
        "node over allocatable by clients only",
        _over_by_clients,
        warnings=[
            "node n1: over its allocatable (cpu 2500m requested of 2000m allocatable; "
            "memory 2147483648 requested of 1073741824 allocatable) with 2 pods, all bound by "
            "clients (spec.nodeName given); Podium binds nothing more there until it fits"
        ],
    ),
    Case(
        "node over its pod count",
        _over_pod_count,
        errors=[
            "node n1: over its allocatable (pods 2 requested of 1 allocatable) with 2 pods, "
            "2 of them bound by Podium (default/web-1, default/web-2); Podium never binds past "
            "allocatable"
        ],
    ),
    Case(
        "allocatable, not capacity, is the limit",
        _over_allocatable_not_capacity,
        errors=[
            "node n1: over its allocatable (cpu 1500m requested of 1000m allocatable) with 1 pods, 1 of them bound by Podium "
            "(default/web-1); Podium never binds past allocatable"
        ],
    ),
    Case(
        "node over an extended resource",
        _over_extended_resource,
        errors=[
            "node n1: over its allocatable (example.com/gpu 2 requested of 1 allocatable) "
            "with 1 pods, 1 of them bound by Podium (default/train); Podium never binds past "
            "allocatable"
        ],
    ),
    Case(
        "binding to a node deleted since",
        _binding_to_deleted_node,
        warnings=[
            f"{_BINDING_WEB} n1: the node no longer exists (Kubernetes lets a node be deleted "
            "under its pods; they stay bound to it)"
        ],
    ),
    Case(
        "client pod on a node that does not exist",
        _client_pod_on_missing_node,
        warnings=[
            "pod default/stray is bound to node n9, which does not exist (bound by a client; "
            "Kubernetes keeps such pods)"
        ],
    ),
    Case(
        "undecodable objects row",
        _undecodable_row,
        errors=[
            "Pod default/client-1: the stored object does not decode: "
            "MessagePack data is malformed: invalid opcode '\\xc1' (byte 0)"
        ],
    ),
    Case(
        "row holding another object than its columns say",
        _row_holds_another_object,
        errors=[
            "Pod default/other: the row holds Pod default/client-1 (columns and object must agree)"
        ],
    ),
    Case(
        "objects after the database revision",
        _object_revision_ahead,
        errors=[
            "PriorityClass high: revision 7 is after the database revision 5",
            "Pod default/client-1: revision 6 is after the database revision 5",
            "event 6 (Pod default/client-1): after the database revision 5",
            "event 7 (PriorityClass high): after the database revision 5",
        ],
    ),
    Case(
        "resourceVersion differs from the row's revision",
        _resource_version_differs,
        errors=["Pod default/client-1: resourceVersion '6' differs from the row's revision 2"],
    ),
    Case(
        "cluster-scoped kind stored with a namespace",
        _cluster_kind_with_namespace,
        errors=["Node default/n1: a cluster-scoped kind stored with namespace 'default'"],
    ),
    Case(
        "event after the database revision",
        _event_revision_ahead,
        errors=["event 99 (PriorityClass high): after the database revision 7"],
    ),
    Case(
        "undecodable event",
        _undecodable_event,
        errors=[
            "event 2 (Node n2): the stored object does not decode: Expected `object`, got `int`"
        ],
    ),
    Case("no meta revision", _no_meta_revision, errors=["meta: no 'revision' row"]),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_check_reports_each_broken_rule(db: Db, case: Case) -> None:
    case.build(db)
    report = check(db.path)
    assert sorted(report.errors) == sorted(case.errors)
    assert report.warnings == case.warnings
    assert report.ok == (not case.errors)


def test_findings_per_rule_are_capped(db: Db) -> None:
    for i in range(MAX_FINDINGS_PER_RULE + 5):
        db.put(pod(f"p{i:02}", on="gone"))
    report = check(db.path)
    assert report.ok
    assert len(report.warnings) == MAX_FINDINGS_PER_RULE + 1
    assert report.warnings[-1] == "... and 5 more like the above (pods.missing_node)"


# --------------------------------------------------------------------------- check: the file


def test_newer_schema_is_refused(db: Db) -> None:
    db.sql(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    report = check(db.path)
    assert not report.ok and not report.is_database
    assert report.errors == [
        f"{db.path} has schema version {SCHEMA_VERSION + 1}, made by a newer Podium "
        f"(this one reads up to {SCHEMA_VERSION})"
    ]


def test_file_that_is_not_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database, " * 200)
    report = check(path)
    assert not report.is_database
    assert report.errors == [f"{path} is not a Podium database: file is not a database"]


def test_sqlite_file_without_podium_schema(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    report = check(path)
    assert report.errors == [f"{path} is not a Podium database (it has no Podium schema)"]


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nothing.db"
    report = check(path)
    assert report.errors == [f"{path}: no such file"]
    assert not path.exists()  # a read-only open must not create it


def test_check_does_not_write(db: Db) -> None:
    clean_cluster(db)
    db.close()
    before = db.path.read_bytes()
    assert check(db.path).ok
    assert db.path.read_bytes() == before


def test_check_reads_while_a_writer_holds_a_transaction(db: Db) -> None:
    clean_cluster(db)
    db.sql("BEGIN IMMEDIATE")
    db.sql("UPDATE meta SET value = '100' WHERE key = 'revision'")
    report = check(db.path)  # WAL: the last committed state, not the open transaction
    db.sql("ROLLBACK")
    assert report.ok and report.revision == 7


def test_report_as_json(db: Db) -> None:
    _client_pod_on_missing_node(db)
    doc = check(db.path).to_json()
    assert doc == {
        "path": str(db.path),
        "ok": True,
        "isDatabase": True,
        "schemaVersion": SCHEMA_VERSION,
        "revision": 8,
        "oldestEventRevision": 1,
        "objects": {"Node": 2, "Pod": 4, "PriorityClass": 1},
        "boundPods": 3,
        "bindings": 1,
        "events": 8,
        "errors": [],
        "warnings": [
            "pod default/stray is bound to node n9, which does not exist (bound by a client; "
            "Kubernetes keeps such pods)"
        ],
    }


# --------------------------------------------------------------------------- over_allocatable


@dataclass(frozen=True)
class FitCase:
    name: str
    node: o.Node
    pods: list[o.Pod]
    want: list[str]


FIT_CASES = [
    FitCase("empty node", node("n"), [], []),
    FitCase("exactly full is not over", node("n", cpu="2"), [pod("a"), pod("b")], []),
    FitCase(
        "init container counts when larger",
        node("n", cpu="2"),
        [make_pod("a").req(cpu="1").init_req({"cpu": "3"}).obj()],
        ["cpu 3000m requested of 2000m allocatable"],
    ),
    FitCase(
        "overhead counts",
        node("n", cpu="1"),
        [make_pod("a").req(cpu="1").overhead({"cpu": "100m"}).obj()],
        ["cpu 1100m requested of 1000m allocatable"],
    ),
    FitCase(
        "ephemeral storage",
        make_node("n").capacity(cpu="1", pods=10, ephemeral_storage="1Gi").obj(),
        [make_pod("a").req(ephemeral_storage="2Gi").obj()],
        ["ephemeral-storage 2147483648 requested of 1073741824 allocatable"],
    ),
]


@pytest.mark.parametrize("case", FIT_CASES, ids=attrgetter("name"))
def test_over_allocatable(case: FitCase) -> None:
    assert over_allocatable(case.node, case.pods) == case.want


# --------------------------------------------------------------------------- backup


def _consistent(path: Path) -> tuple[int, int]:
    """The copy's (revision, events) after asserting one transaction's state: every change
    1..revision is logged, and no object is newer than the revision."""
    report = check(path)
    assert report.errors == [], report.errors
    assert report.revision is not None
    assert report.events == report.revision
    return report.revision, report.events


def test_backup_copies_and_checks(db: Db, tmp_path: Path) -> None:
    clean_cluster(db)
    seen: list[tuple[int, int]] = []
    dest = tmp_path / "copy.db"
    result = backup_database(db.path, dest, progress=lambda d, t: seen.append((d, t)))
    assert result.revision == 7 and result.restarts == 0
    assert result.pages == seen[-1][1] and seen[-1][0] == seen[-1][1]
    assert check(dest).to_json() | {"path": ""} == check(db.path).to_json() | {"path": ""}
    assert not list(tmp_path.glob(".copy.db.*"))  # the temporary copy is gone


def test_backup_in_steps_reports_progress(db: Db, tmp_path: Path) -> None:
    clean_cluster(db)
    seen: list[int] = []
    result = backup_database(
        db.path, tmp_path / "copy.db", progress=lambda d, t: seen.append(d), pages_per_step=1
    )
    assert seen == list(range(1, result.pages + 1))


def test_backup_restarts_on_writes_between_steps(db: Db, tmp_path: Path) -> None:
    clean_cluster(db)
    steps = 0

    def write_between_steps(_done: int, _total: int) -> None:
        nonlocal steps
        steps += 1
        if steps in (2, 4):  # another connection commits while the copy is under way
            db.put(pod(f"late-{steps}", on="n2"))

    dest = tmp_path / "copy.db"
    result = backup_database(db.path, dest, progress=write_between_steps, pages_per_step=1)
    assert result.restarts == 2
    assert _consistent(dest) == (9, 9)
    assert result.revision == 9


def test_backup_of_a_busy_database_copies_in_one_step(db: Db, tmp_path: Path) -> None:
    clean_cluster(db)

    def write_every_step(done: int, _total: int) -> None:
        db.put(pod(f"late-{db.revision}", on="n2"))

    dest = tmp_path / "copy.db"
    result = backup_database(
        db.path, dest, progress=write_every_step, pages_per_step=1, max_restarts=2
    )
    assert result.restarts == 3
    revision, _ = _consistent(dest)
    assert revision == result.revision


def test_backup_while_another_thread_writes(db: Db, tmp_path: Path) -> None:
    """A writer thread on its own connection commits between the first steps (a handshake
    makes those restarts certain), then writes freely until the copy is done."""
    clean_cluster(db)
    go, done, stop = threading.Event(), threading.Event(), threading.Event()
    steps = 0

    def step(_done: int, _total: int) -> None:
        nonlocal steps
        steps += 1
        if steps <= 2:
            go.set()
            assert done.wait(5)
            done.clear()
        elif steps == 3:
            go.set()  # from here on the writer does not wait for us

    def writer() -> None:
        for _ in range(2):
            go.wait(5)
            go.clear()
            db.put(pod(f"w-{db.revision}", on="n2"))
            done.set()
        go.wait(5)
        while not stop.is_set():
            db.put(pod(f"w-{db.revision}", on="n2"))

    t = threading.Thread(target=writer)
    t.start()
    try:
        dest = tmp_path / "copy.db"
        result = backup_database(db.path, dest, progress=step, pages_per_step=1)
    finally:
        stop.set()
        go.set()
        t.join()
    assert result.restarts >= 2
    assert result.revision is not None and 9 <= result.revision <= db.revision
    assert _consistent(dest)[0] == result.revision


def test_backup_refuses_to_overwrite(db: Db, tmp_path: Path) -> None:
    dest = tmp_path / "copy.db"
    dest.write_text("keep me")
    with pytest.raises(StoreError, match=r"copy\.db already exists; not overwriting it"):
        backup_database(db.path, dest)
    assert dest.read_text() == "keep me"


def test_backup_force_replaces_and_drops_a_stale_wal(db: Db, tmp_path: Path) -> None:
    clean_cluster(db)
    dest = tmp_path / "copy.db"
    dest.write_text("old")
    stale = tmp_path / "copy.db-wal"
    stale.write_bytes(b"\x37\x7f\x06\x82" + bytes(28))
    backup_database(db.path, dest, force=True)
    assert not stale.exists()
    assert _consistent(dest) == (7, 7)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("self", "is the database itself; back it up to another file"),
        ("dir", "is a directory; give the backup's file name"),
        ("not-podium", "is not a Podium database (it has no Podium schema)"),
        ("missing", "no such database file"),
        ("no-dir", "cannot write the backup beside"),
    ],
)
def test_backup_refusals(tmp_path: Path, setup: str, message: str) -> None:
    source = tmp_path / "podium.db"
    dest = tmp_path / "copy.db"
    if setup == "not-podium":
        with sqlite3.connect(source) as conn:
            conn.execute("CREATE TABLE t (x)")
        conn.close()
    elif setup != "missing":
        create_schema(source).close()
    if setup == "self":
        dest = source
    elif setup == "dir":
        dest.mkdir()
    elif setup == "no-dir":
        dest = tmp_path / "nowhere" / "copy.db"
    with pytest.raises(StoreError, match=re.escape(message)):
        backup_database(source, dest, force=True)
    assert not list(tmp_path.glob(".copy.db.*"))


@dataclass(frozen=True)
class LogEndCase:
    name: str
    revisions: list[int]
    revision: int
    want: list[int]


LOG_END_CASES = [
    LogEndCase("a whole log is kept", [1, 2, 3], 3, [1, 2, 3]),
    LogEndCase("a compacted log is kept", [7, 8, 9], 9, [7, 8, 9]),
    LogEndCase("events before a gap are left out", [1, 2, 4, 5], 5, [4, 5]),
    LogEndCase("a lost end leaves the log empty", [1, 2, 3], 4, []),
    LogEndCase("an empty log stays empty", [], 0, []),
]


@pytest.mark.parametrize("case", LOG_END_CASES, ids=attrgetter("name"))
def test_recovery_keeps_the_log_end_without_a_gap(case: LogEndCase) -> None:
    rows = [(r, "Added") for r in case.revisions]
    assert [row[0] for row in tools._log_end(rows, case.revision)] == case.want
