"""``podium db check`` and ``podium db backup`` as an operator runs them.

The first tests drive the commands in-process through a parser built with
:func:`podium.cli.db.register`; the last ones run the real ``podium`` executable,
on a file built here and on the database of a running ``podium serve``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import trio
from builders import make_node, make_pod
from daemon import PODIUM, StartDaemon

from podium.cli import db as db_commands
from podium.protocol import objects as o
from podium.protocol.client import connect
from podium.store.mail import Change
from podium.store.schema import MIGRATIONS, encode_object, event_row


class Db:
    """A database as the daemon writes it: one revision, objects row and event per change,
    a bindings row per binding Podium made (tests/unit/store/test_tools.py breaks its rules)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        for step, script in enumerate(MIGRATIONS):
            self.conn.executescript(f"BEGIN; {script} PRAGMA user_version = {step + 1}; COMMIT;")
        self.revision = 0

    def put(self, obj: o.Node | o.Pod, *, podium_binds: bool = False) -> None:
        self.revision += 1
        kind = type(obj).__name__
        meta = msgspec.structs.replace(
            obj.metadata, uid=f"uid-{obj.metadata.name}", resource_version=str(self.revision)
        )
        obj = msgspec.structs.replace(obj, metadata=meta)
        ns, name = meta.namespace, meta.name
        change = Change(
            revision=self.revision, type="Added", kind=kind, namespace=ns, name=name, object=obj
        )
        self.conn.execute("BEGIN")
        self.conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", event_row(change))
        self.conn.execute(
            "INSERT INTO objects VALUES (?, ?, ?, ?, ?)",
            (kind, ns, name, self.revision, encode_object(obj)),
        )
        if podium_binds and isinstance(obj, o.Pod):
            self.conn.execute(
                "INSERT INTO bindings VALUES (?, ?, ?, ?, ?)",
                (meta.uid, ns, name, obj.spec.node_name, self.revision),
            )
        self.conn.execute("UPDATE meta SET value = ? WHERE key = 'revision'", (str(self.revision),))
        self.conn.execute("COMMIT")


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="podium")
    db_commands.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


def node(name: str, cpu: str = "4") -> o.Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()


def pod(name: str, on: str, cpu: str = "1") -> o.Pod:
    return make_pod(name).req(cpu=cpu, memory="1Gi").node(on).obj()


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Db]:
    """Two nodes, a pod Podium bound and a pod a client bound; revision 4."""
    d = Db(tmp_path / "podium.db")
    d.put(node("n1"))
    d.put(node("n2"))
    d.put(pod("web-1", "n1"), podium_binds=True)
    d.put(pod("client-1", "n2"))
    yield d
    d.conn.close()


# --------------------------------------------------------------------------- in-process


def test_check_prints_counts(db: Db, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("db", "check", str(db.path)) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"database  {db.path}",
        "schema    1",
        "revision  4",
        "objects   Node 2, Pod 2",
        "pods      2 bound, 1 bindings made by Podium",
        "events    4 kept, from revision 1",
        "0 errors, 0 warnings",
    ]
    assert err == ""


def test_check_warnings_alone_exit_zero(db: Db, capsys: pytest.CaptureFixture[str]) -> None:
    db.put(pod("stray", "n9"))
    assert run("db", "check", str(db.path)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "warning: pod default/stray is bound to node n9, which does not exist (bound by a "
        "client; Kubernetes keeps such pods)",
        "0 errors, 1 warnings",
    ]


def test_check_errors_exit_one(db: Db, capsys: pytest.CaptureFixture[str]) -> None:
    db.put(node("small", cpu="1"))
    db.put(pod("big", "small", cpu="2"), podium_binds=True)
    assert run("db", "check", str(db.path)) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [
        "error: node small: over its allocatable (cpu 2000m requested of 1000m allocatable) "
        "with 1 pods, 1 of them bound by Podium (default/big); Podium never binds past "
        "allocatable",
        "1 errors, 0 warnings",
    ]


def test_check_json(db: Db, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("db", "check", str(db.path), "-o", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True
    assert (doc["revision"], doc["bindings"], doc["boundPods"]) == (4, 1, 2)


def test_check_of_a_file_that_is_not_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello " * 300)
    assert run("db", "check", str(path)) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"error: {path} is not a Podium database: file is not a database\n"


def test_backup_prints_what_it_did(
    db: Db, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "copy.db"
    assert run("db", "backup", str(db.path), str(dest)) == 0
    out, err = capsys.readouterr()
    pages = db.conn.execute("PRAGMA page_count").fetchone()[0]
    assert out == f"backed up {db.path} to {dest} ({pages} pages, revision 4)\n"
    assert err == ""  # no progress bar off a terminal
    assert run("db", "check", str(dest)) == 0


def test_backup_refuses_an_existing_dest(
    db: Db, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "copy.db"
    dest.write_text("keep")
    assert run("db", "backup", str(db.path), str(dest)) == 1
    assert capsys.readouterr().err == (
        f"error: {dest} already exists; not overwriting it without --force\n"
    )
    assert dest.read_text() == "keep"
    assert run("db", "backup", str(db.path), str(dest), "--force") == 0


def test_db_needs_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        run("db")
    assert exc.value.code == 2
    assert "the following arguments are required: COMMAND" in capsys.readouterr().err


# --------------------------------------------------------------------------- the real executable


def podium(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PODIUM, *args], capture_output=True, text=True, timeout=60, check=False, cwd=cwd
    )


def test_help_teaches_by_example() -> None:
    proc = podium("db", "check", "--help")
    assert proc.returncode == 0
    assert "podium db check podium.db -o json" in proc.stdout
    proc = podium("db", "backup", "--help")
    assert "podium db backup podium.db podium-backup.db" in proc.stdout


def test_executable_check_and_backup(db: Db, tmp_path: Path) -> None:
    dest = tmp_path / "copy.db"
    proc = podium("db", "backup", str(db.path), str(dest))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"backed up {db.path} to {dest} (")
    proc = podium("db", "check", str(dest), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["revision"] == 4
    db.conn.execute("PRAGMA user_version = 99")
    proc = podium("db", "check", str(db.path))
    assert proc.returncode == 1
    assert "made by a newer Podium" in proc.stderr


CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def _pods_yaml(count: int) -> str:
    docs = [
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}}}\n"
        'spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}\n'
        for i in range(count)
    ]
    return "---\n".join(docs)


async def _until_bound(server: str, count: int) -> None:
    bound: set[str] = set()
    with trio.fail_after(30):
        async with connect(server) as client, client.watch(0, kinds=["Pod"]) as events:
            async for ev in events:
                if ev.type == "Bound":
                    bound.add(ev.name)
                    if len(bound) == count:
                        return


def test_check_and_backup_while_the_daemon_runs(tmp_path: Path, start_daemon: StartDaemon) -> None:
    database = tmp_path / "podium.db"
    daemon = start_daemon("--metrics", "none", "--db", str(database))
    try:
        server = daemon.address
        (tmp_path / "cluster.yaml").write_text(CLUSTER + "---\n" + _pods_yaml(6))
        applied = podium("apply", "-f", str(tmp_path / "cluster.yaml"), "--server", server)
        assert applied.returncode == 0, applied.stderr
        trio.run(_until_bound, server, 6)
        # A Bound event is published only once its binding is durable: the file has all six.
        checked = podium("db", "check", str(database), "-o", "json")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        report = json.loads(checked.stdout)
        assert report["bindings"] == 6, report
        assert report["warnings"] == [] and report["boundPods"] == 6
        copy = tmp_path / "backup.db"
        backup = podium("db", "backup", str(database), str(copy))
        assert backup.returncode == 0, backup.stderr
        copied = json.loads(podium("db", "check", str(copy), "-o", "json").stdout)
        assert copied["ok"] and copied["bindings"] == 6
    finally:
        code, err = daemon.stop(timeout=30)
    assert code == 0, err
    final = podium("db", "check", str(database))
    assert final.returncode == 0, final.stdout + final.stderr
