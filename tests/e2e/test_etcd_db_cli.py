"""``podium db check`` and ``podium db backup`` on an etcd store: the backup is a SQLite database
holding what the prefix holds (``podium serve --db`` serves it), and check runs every invariant
of the SQLite check on such a copy."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import trio
from builders import make_node, make_pod
from daemon import PODIUM, StartDaemon
from etcd_servers import EtcdCluster

from podium.cli.bench.loadgen import settle
from podium.protocol import objects as o
from podium.protocol.client import connect


def _podium(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PODIUM, *args], capture_output=True, text=True, timeout=60, check=False)


def test_an_etcd_store_is_checked_and_backed_up_into_sqlite(
    etcd_member: EtcdCluster, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    url = etcd_member.url(f"cli-{uuid.uuid4().hex[:12]}")
    daemon = start_daemon("--store", url)

    async def load() -> dict[str, str]:
        async with connect(daemon.address) as client:
            await client.put([make_node("n1").capacity(cpu="4", pods=10).obj()])
            await client.put([make_pod(f"web-{i}").req(cpu="1").obj() for i in range(3)])
            await settle(client)
            pods = (await client.get("Pod")).items
            return {p.metadata.name: p.spec.node_name for p in pods if isinstance(p, o.Pod)}

    placed = trio.run(load)
    assert placed == {"web-0": "n1", "web-1": "n1", "web-2": "n1"}

    check = _podium("db", "check", url)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"database  {url}/" in check.stdout
    assert "objects   Node 1, Pod 3" in check.stdout
    assert "pods      3 bound" in check.stdout
    assert "0 errors" in check.stdout

    copy = tmp_path / "copy.db"
    backup = _podium("db", "backup", url, str(copy))
    assert backup.returncode == 0, backup.stdout + backup.stderr
    assert _podium("db", "check", str(copy)).returncode == 0
    again = _podium("db", "backup", url, str(copy))
    assert again.returncode == 1 and "exists" in again.stderr

    # The copy serves: the same pods on the same node.
    other = tmp_path / "other"
    other.mkdir()
    restored = start_daemon("--db", str(copy), cwd=other)

    async def read() -> dict[str, str]:
        async with connect(restored.address) as client:
            pods = (await client.get("Pod")).items
            return {p.metadata.name: p.spec.node_name for p in pods if isinstance(p, o.Pod)}

    assert trio.run(read) == placed


def test_checking_a_prefix_without_a_store_fails(etcd_member: EtcdCluster) -> None:
    check = _podium("db", "check", etcd_member.url(f"none-{uuid.uuid4().hex[:12]}"))
    assert check.returncode == 1
    assert "holds no Podium store" in check.stderr


def test_bad_store_flags_fail_before_serving(tmp_path: Path) -> None:
    for args, problem in (
        (("--store", "etcd://localhost/podium"), "endpoint 'localhost' is not HOST:PORT"),
        (("--store", "redis://h:1/p"), "the store is sqlite://PATH or etcd://HOST:PORT/PREFIX"),
        (("--db", "x.db", "--store", "etcd://h:1/p"), "give --db PATH or --store URL, not both"),
        (("--leader-elect",), "leader election needs an etcd store"),
        (
            ("--store", "etcd://h:1/p", "--leader-elect", "--leader-elect-renew-deadline", "20"),
            "the renew deadline must be shorter than the lease duration",
        ),
    ):
        bad = subprocess.run(
            [PODIUM, "serve", "--listen", "127.0.0.1:0", *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            cwd=tmp_path,
        )
        assert (bad.returncode, problem in bad.stderr) == (2, True), bad.stderr
