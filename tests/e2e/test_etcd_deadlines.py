"""A leader whose write path to etcd is black-holed (issue 25, point 2): a small proxy
(tests/support/etcd_proxy.py) between one ``podium serve --leader-elect`` and the session's
etcd member swallows only the transactions that write, while reads and the lease's renewals
pass. The commit has an overall deadline (``unavailableSeconds``): the leader gives up its
lease and exits 4 (lost leadership), and SIGTERM ends it within the shutdown grace even while
a commit is unanswered. Before issue 25 the Put waited for ever and only SIGKILL ended it.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest
from daemon import PODIUM, Daemon, StartDaemon
from etcd_proxy import BLACK_HOLE, PASS, EtcdProxy, writes
from etcd_servers import EtcdCluster
from replicas import leader_of

from podium.store.etcd.client import b64
from podium.store.etcd.keys import KeyLayout
from podium.store.location import EtcdLocation, parse_store_url

EXIT_DEPOSED = 4
POD = """{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "web", "namespace": "default"},
 "spec": {"containers": [{"name": "c"}]}}"""


def _leader(
    start_daemon: StartDaemon, proxy: EtcdProxy, folder: Path, config: str
) -> tuple[Daemon, EtcdLocation]:
    (folder / "config.yaml").write_text(config)
    url = f"etcd://{proxy.address}/deadline-{uuid.uuid4().hex[:12]}"
    location = parse_store_url(url)
    assert isinstance(location, EtcdLocation)
    daemon = start_daemon(
        "--store",
        url,
        "--config",
        str(folder / "config.yaml"),
        "--leader-elect",
        "--leader-elect-lease-duration",
        "4",
        "--leader-elect-renew-deadline",
        "3",
        "--leader-elect-retry-period",
        "0.25",
        cwd=folder,
    )
    deadline = time.monotonic() + 15
    while not leader_of(daemon):
        assert time.monotonic() < deadline, daemon.log_tail()
        time.sleep(0.05)
    return daemon, location


def _apply(daemon: Daemon) -> subprocess.Popen[str]:
    """``podium apply`` of one pod, left running (its commit may never be answered)."""
    return subprocess.Popen(
        [PODIUM, "apply", "-f", "-", "--server", daemon.address],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_swallowed(proxy: EtcdProxy, daemon: Daemon) -> None:
    deadline = time.monotonic() + 10
    while not proxy.swallowed:
        assert time.monotonic() < deadline, daemon.log_tail()
        time.sleep(0.02)


def test_a_leader_whose_commits_go_unanswered_gives_up_its_lease_and_exits(
    start_daemon: StartDaemon, etcd_member: EtcdCluster, tmp_path: Path
) -> None:
    with EtcdProxy(etcd_member.endpoints[0]) as proxy:
        config = "podium:\n  etcd:\n    unavailableSeconds: 3\n    requestTimeoutSeconds: 1\n"
        daemon, location = _leader(start_daemon, proxy, tmp_path, config)
        proxy.rule = lambda request: BLACK_HOLE if writes(request) else PASS
        client = _apply(daemon)
        _, err = client.communicate(POD, timeout=30)
        _wait_swallowed(proxy, daemon)
        try:
            daemon.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the leader kept leading with an unanswered commit:\n{daemon.log_tail()}")
        log = daemon.stderr_text()
        code = daemon.kill()  # it has exited: its code, checked here
        assert code == EXIT_DEPOSED, log
        assert "not answered within unavailableSeconds (3 s)" in log, log
        # Not acknowledged to the client.
        assert client.returncode != 0, err
        # The lease was revoked on the way out: the key is gone at once, not a lease later.
        key = KeyLayout(location.prefix.encode()).leader
        answer = etcd_member.post(0, "/v3/kv/range", {"key": b64(key)})
        assert not answer.get("kvs"), answer


def test_sigterm_stops_a_leader_within_the_grace_while_a_commit_is_unanswered(
    start_daemon: StartDaemon, etcd_member: EtcdCluster, tmp_path: Path
) -> None:
    with EtcdProxy(etcd_member.endpoints[0]) as proxy:
        config = (
            "podium:\n  shutdownGracePeriodSeconds: 2\n"
            "  etcd:\n    unavailableSeconds: 600\n    requestTimeoutSeconds: 1\n"
        )
        daemon, _ = _leader(start_daemon, proxy, tmp_path, config)
        proxy.rule = lambda request: BLACK_HOLE if writes(request) else PASS
        client = _apply(daemon)
        assert client.stdin is not None
        client.stdin.write(POD)
        client.stdin.close()
        _wait_swallowed(proxy, daemon)
        code, err = daemon.stop(timeout=20)  # raises when it did not stop
        daemon.killed = True
        assert code == 0, err
        assert "shutdown did not finish within the grace period" in err
        client.kill()
        client.wait()
        for pipe in (client.stdout, client.stderr):
            assert pipe is not None
            pipe.close()
