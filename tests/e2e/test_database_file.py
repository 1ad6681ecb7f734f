"""The database file attacked as an unlucky operator would (issue 16, items 3, 4, 6 and 7):
bytes flipped, the file truncated or deleted under a running daemon, ``db check`` beside a
writer, the files' modes. Each runs the real ``podium serve`` on a file it wrote itself.

Refusals exit 3 (README, "State and restarts"); docs/reliability.md records each attack.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import subprocess
from contextlib import closing
from pathlib import Path

import pytest
import trio
from builders import make_node, make_pod
from daemon import PODIUM, Daemon, StartDaemon, start_daemon

from podium.cli.common.output import EXIT_DAMAGED
from podium.cli.db import over_allocatable
from podium.protocol.client import connect
from podium.protocol.errors import PodiumError
from podium.store.tools import check_database

MARKER = "m" * 40
"""An annotation value found once in the file, so a test can damage that very row."""

PAGE = 4096


async def _put_pods(address: str, count: int, prefix: str = "web") -> None:
    async with connect(address) as client:
        for start in range(0, count, 50):
            await client.put(
                make_pod(f"{prefix}-{i}").req(cpu="100m").obj()
                for i in range(start, min(count, start + 50))
            )


def _written(tmp_path: Path, start: StartDaemon, pods: int = 300) -> Path:
    """A database the daemon wrote (``pods`` pending pods, one carrying :data:`MARKER`), the
    daemon stopped (its WAL checkpointed into the file)."""
    database = tmp_path / "podium.db"
    daemon = start("--metrics", "none", "--db", str(database))

    async def fill() -> None:
        await _put_pods(daemon.address, pods)
        async with connect(daemon.address) as client:
            put = await client.put([make_pod("marked").annotation("note", MARKER).obj()])
            # Its Unschedulable record (which carries the pod, marker and all) is committed,
            # then one more pod: the log always goes on after the marked pod's events.
            with trio.fail_after(30):
                async with client.watch(put.revision - 1, kinds=["Pod"]) as events:
                    async for event in events:
                        if event.name == "marked" and event.type == "Unschedulable":
                            break
            await client.put([make_pod("after-marked").obj()])

    trio.run(fill)
    code, err = daemon.stop()
    assert code == 0, err
    return database


def _serve(tmp_path: Path, database: Path) -> subprocess.CompletedProcess[str]:
    """``podium serve`` expected to refuse ``database`` (it would otherwise print its ready
    line and run until the timeout)."""
    return subprocess.run(
        [PODIUM, "serve", "--listen", "127.0.0.1:0", "--metrics", "none", "--db", str(database)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )


def _flip(path: Path, offset: int, count: int = 64) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        data = f.read(count)
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in data))


def test_64_bytes_flipped_mid_file_are_refused_at_every_start(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    database = _written(tmp_path, start_daemon)
    size = database.stat().st_size
    assert size >= 20 * PAGE, size
    _flip(database, size // PAGE // 2 * PAGE)  # the header of the middle page
    for _ in range(2):  # refused again, the same way: no crash loop, no silent start
        proc = _serve(tmp_path, database)
        assert proc.returncode == EXIT_DAMAGED, proc.stderr
        assert f"error: database {database} " in proc.stderr, proc.stderr
        assert "refusing to serve it" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr


def test_a_row_damaged_inside_its_data_is_refused_naming_it(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    database = _written(tmp_path, start_daemon)
    data = database.read_bytes()
    assert data.count(MARKER.encode()) >= 1
    # The marker's bytes only: the page structure is intact (quick_check passes), the stored
    # object is not (its string is no longer UTF-8).
    _flip(database, data.index(MARKER.encode()), len(MARKER))
    proc = _serve(tmp_path, database)
    assert proc.returncode == EXIT_DAMAGED, proc.stderr
    assert "Pod default/marked" in proc.stderr, proc.stderr
    assert "does not decode" in proc.stderr, proc.stderr
    checked = subprocess.run(
        [PODIUM, "db", "check", str(database)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 1
    assert "default/marked" in checked.stdout, checked.stdout


def test_a_database_truncated_to_0_bytes_is_refused_not_served_empty(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    database = _written(tmp_path, start_daemon, pods=10)
    os.truncate(database, 0)
    proc = _serve(tmp_path, database)
    assert proc.returncode == EXIT_DAMAGED, proc.stderr
    assert f"database {database} is empty (0 bytes)" in proc.stderr, proc.stderr
    assert database.stat().st_size == 0  # left as found, for the operator


def test_files_deleted_while_running_stop_the_daemon_and_nothing_more_is_acknowledged(
    tmp_path: Path,
) -> None:
    database = tmp_path / "podium.db"
    daemon: Daemon = start_daemon(tmp_path, "--metrics", "none", "--db", str(database))
    acknowledged_after: list[str] = []

    async def attack() -> None:
        with trio.fail_after(60):
            await _put_pods(daemon.address, 20, prefix="before")
            for name in ("podium.db", "podium.db-wal", "podium.db-shm"):
                (tmp_path / name).unlink()
            for i in range(5):
                try:
                    async with connect(daemon.address) as client:
                        await client.put([make_pod(f"after-{i}").obj()])
                except (PodiumError, OSError):
                    continue
                acknowledged_after.append(f"after-{i}")

    try:
        trio.run(attack)
        daemon.proc.wait(timeout=30)  # it stops by itself
    finally:
        code, err = daemon.stop()
    assert acknowledged_after == []
    assert code == EXIT_DAMAGED, err
    # The last line: the store's error. (Puts racing the stop may log the gateway's
    # BrokenResourceError on the store's closed mailbox: answered `internal`, never acknowledged.)
    assert err.splitlines()[-1].startswith(
        f"error: {database} was deleted while the daemon ran; stopping without acknowledging"
    ), err


async def _writer(address: str, stop: trio.Event, written: list[int]) -> None:
    async with connect(address) as client:
        while not stop.is_set():
            await client.put([make_node(f"n-{len(written)}").capacity(cpu="4").obj()])
            written.append(1)


def test_db_check_beside_a_writer_reports_no_false_error(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    """Before the check read in one transaction, about one run in ten reported "event N: after
    the database revision N-1" here."""
    database = tmp_path / "podium.db"
    daemon = start_daemon("--metrics", "none", "--db", str(database))
    reports = []
    written: list[int] = []

    async def race() -> None:
        stop = trio.Event()
        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_writer, daemon.address, stop, written)
                while len(reports) < 60 or len(written) < 300:
                    reports.append(
                        await trio.to_thread.run_sync(
                            lambda: check_database(database, over_committed=over_allocatable)
                        )
                    )
                stop.set()

    trio.run(race)
    assert [r.errors for r in reports if r.errors] == []
    revisions = [r.revision or 0 for r in reports]
    assert revisions == sorted(revisions) and revisions[-1] > revisions[0]  # commits landed


def test_every_file_the_daemon_creates_is_0600_under_umask_022(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    daemon = start_daemon(cwd=work, wrapper=("sh", "-c", 'umask 022; exec "$@"', "sh"))
    trio.run(_put_pods, daemon.address, 5)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in work.iterdir()}
    assert {"podium.db", "podium.db-wal", "podium.db-shm", "podium.db.lock"} <= set(modes)
    assert modes == dict.fromkeys(modes, 0o600)


@pytest.mark.parametrize("name", ["podium.db", "podium.db.lock"])
def test_an_existing_file_keeps_its_mode(tmp_path: Path, name: str) -> None:
    """Podium creates its files private; one an operator made keeps the mode they gave it."""
    work = tmp_path / "work"
    work.mkdir()
    daemon = start_daemon(work, "--metrics", "none")
    daemon.stop_cleanly()
    (work / name).chmod(0o640)
    again = start_daemon(work, "--metrics", "none")
    again.stop_cleanly()
    assert stat.S_IMODE((work / name).stat().st_mode) == 0o640


def test_an_old_event_row_damaged_fails_the_watch_not_the_daemon(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    """Older than the rows checked at start, a damaged event is found by the watch that reads
    it: that watch gets an error naming the row; the daemon and every other client go on."""
    database = _written(tmp_path, start_daemon, pods=1100)
    with closing(sqlite3.connect(database)) as conn:
        conn.execute("UPDATE events SET data = x'c1c1' WHERE revision = 1")
        conn.commit()
    daemon = start_daemon("--metrics", "none", "--db", str(database))
    for _ in range(2):  # and again: nothing was crashed, nothing loops
        watch = daemon.cli("watch", "--from-revision", "0")
        assert watch.returncode == 1, watch.stdout + watch.stderr
        assert "the event row of revision 1 (Pod default/web-0) does not decode" in watch.stderr
    trio.run(_put_pods, daemon.address, 1, "later")


def _recover(database: Path, dest: Path) -> dict[str, object]:
    proc = subprocess.run(
        [PODIUM, "db", "recover", str(database), str(dest), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, object] = json.loads(proc.stdout)
    checked = subprocess.run(
        [PODIUM, "db", "check", str(dest)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return report


def _served_pods(start: StartDaemon, database: Path) -> int:
    daemon = start("--metrics", "none", "--db", str(database))
    got = daemon.cli("get", "pods", "-o", "json")
    assert got.returncode == 0, got.stderr
    return len(json.loads(got.stdout)["items"])


def test_a_damaged_page_is_recovered_into_a_database_the_daemon_serves(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    database = _written(tmp_path, start_daemon)
    with closing(sqlite3.connect(database)) as conn:
        leaves = [
            page
            for (page,) in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'objects' AND pagetype = 'leaf' "
                "ORDER BY pageno"
            )
        ]
    assert len(leaves) >= 10, leaves
    _flip(database, (leaves[len(leaves) // 2] - 1) * PAGE)  # a leaf's header, mid-table
    report = _recover(database, tmp_path / "recovered.db")
    lost = report["lost"]
    assert isinstance(lost, list) and len(lost) == 1, lost
    assert lost[0].startswith("objects: the rows between ('Pod', 'default', 'web-"), lost
    # One page's rows lost (a few pods), the rows on either side of it read.
    objects = report["objects"]
    assert isinstance(objects, int) and 301 - 20 <= objects < 301, report
    assert _served_pods(start_daemon, tmp_path / "recovered.db") == objects


def test_rows_that_do_not_decode_are_named_lost_by_a_recovery(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    database = _written(tmp_path, start_daemon, pods=50)
    data = database.read_bytes()
    at = data.find(MARKER.encode())
    while at >= 0:  # the pod's row and its Added event
        _flip(database, at, len(MARKER))
        at = data.find(MARKER.encode(), at + 1)
    report = _recover(database, tmp_path / "recovered.db")
    lost = report["lost"]
    assert isinstance(lost, list), lost
    shown = "\n".join(lost)
    assert lost[0].startswith("Pod default/marked: does not decode"), shown
    # Its events (Added, then its Unschedulable status) are lost too, each named.
    events = [
        re.match(r"event (\d+) \(Pod default/marked\): does not decode", x) for x in lost[1:-1]
    ]
    assert events and all(events), shown
    at = max(int(m[1]) for m in events if m)
    # The log keeps its end after the newest damaged event; the events before it are left
    # out, so a watcher from before gets gone and lists again rather than miss a lost one.
    assert lost[-1].startswith(f"events: {at - len(events)} readable events older than a gap")
    assert report["objects"] == 51  # the 50 pods and after-marked; the marked one is lost
    assert report["oldestEventRevision"] == at + 1
    assert report["events"] == report["revision"] - at  # type: ignore[operator]  # JSON int
    assert _served_pods(start_daemon, tmp_path / "recovered.db") == 51


def test_check_finds_the_writes_a_hard_link_hides(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    """Issue 25 point 3: a daemon through a hard link writes its own WAL over the same file.
    Killed, its acknowledged writes sit in ``link.db-wal``, which a reader of ``podium.db``
    never reads: today's check read 12 pods and said the database was sound."""
    database = _written(tmp_path, start_daemon, pods=10)
    link = tmp_path / "link.db"
    os.link(database, link)
    daemon = start_daemon("--metrics", "none", "--db", str(link))
    trio.run(_put_pods, daemon.address, 5, "acked")
    daemon.kill()
    wal = tmp_path / "link.db-wal"
    assert wal.stat().st_size > 0
    report = check_database(database, over_committed=over_allocatable)
    assert report.objects["Pod"] == 12  # the 5 acknowledged pods are not in this path's view
    assert report.errors == [
        f"{database}: the file has 2 hard links ({link}); SQLite keeps one WAL per path, so "
        "writes through two paths are two WALs over one file and acknowledged writes may be "
        "gone, which this check cannot see; keep one path (remove the other links) and "
        "restore a backup if a daemon ran through another one",
        f"{wal}: a WAL of {wal.stat().st_size} bytes written through {link}, another path to "
        f"this file; reading {database} never sees those writes, and opening {link} would "
        "replay them over pages this path's checkpoints changed",
    ]
    checked = subprocess.run(
        [PODIUM, "db", "check", str(database)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 1, checked.stdout + checked.stderr
