"""End to end: a real ``podium serve`` with its HTTP endpoint on port 0.

The daemon is the module's ``shared_daemon`` (tests/conftest.py): the three tests of the
default daemon only read its endpoints and count at least what they applied. The ready line names the
endpoint's real address; after ``podium apply -f examples/cluster.yaml`` ``/metrics`` carries
the scheduler's metrics under the Kubernetes names; ``/healthz`` and ``/readyz`` answer 200, an
unknown path 404. Only the standard library speaks HTTP here.
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from daemon import PODIUM, Daemon, StartDaemon

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def get(daemon: Daemon, path: str, method: str = "GET") -> tuple[int, str, bytes]:
    """Status, Content-Type and body of one request (error statuses included)."""
    request = urllib.request.Request(f"http://{daemon.metrics}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers["Content-Type"], exc.read()


def sample(text: str, series: str) -> float:
    """The value of one exact series line of the text exposition (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_ready_line_names_the_metrics_address(shared_daemon: Daemon) -> None:
    daemon = shared_daemon
    assert daemon.metrics.startswith("127.0.0.1:")
    assert not daemon.metrics.endswith(":0")
    assert daemon.metrics != daemon.address


def test_health_endpoints(shared_daemon: Daemon) -> None:
    daemon = shared_daemon
    assert get(daemon, "/healthz")[::2] == (200, b"ok")
    assert get(daemon, "/livez")[::2] == (200, b"ok")
    assert get(daemon, "/readyz")[::2] == (200, b"ok")
    assert get(daemon, "/nope")[0] == 404
    assert get(daemon, "/healthz", method="POST")[0] == 405
    status, _, body = get(daemon, "/metrics", method="HEAD")
    assert (status, body) == (200, b"")


def test_metrics_after_applying_the_example_cluster(shared_daemon: Daemon) -> None:
    daemon = shared_daemon
    applied = subprocess.run(
        [PODIUM, "apply", "-f", str(EXAMPLES / "cluster.yaml"), "--server", daemon.address],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr
    scheduled = 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}'
    deadline = time.monotonic() + 30
    while True:
        status, content_type, body = get(daemon, "/metrics")
        assert status == 200
        text = body.decode()
        if sample(text, scheduled) > 0 and sample(text, "scheduler_pod_scheduling_attempts_count"):
            break
        assert time.monotonic() < deadline, "no pod was scheduled within 30 s"
        time.sleep(0.1)
    assert content_type.startswith("text/plain; version=")
    for name in (
        "scheduler_schedule_attempts_total",
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        "scheduler_pod_scheduling_sli_duration_seconds_bucket",
        "scheduler_pending_pods",
        "scheduler_queue_incoming_pods_total",
        "scheduler_framework_extension_point_duration_seconds_bucket",
        "scheduler_cache_size",
        "scheduler_scheduler_cache_size",
        "podium_store_commit_duration_seconds_bucket",
        "podium_store_revision",
        "podium_protocol_requests_total",
        "podium_recovery_duration_seconds",
        "process_resident_memory_bytes",
    ):
        assert f"\n{name}" in text, name
    assert sample(text, 'podium_protocol_requests_total{type="put"}') >= 1
    assert sample(text, 'scheduler_cache_size{type="nodes"}') >= 1
    assert sample(text, 'scheduler_scheduler_cache_size{type="nodes"}') >= 1
    assert sample(text, "podium_store_revision") >= 1
    assert sample(text, 'scheduler_queue_incoming_pods_total{event="PodAdd",queue="active"}') >= 1


def test_metrics_beyond_loopback_is_refused_unless_the_operator_accepts_it(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    """Issue 16 point 7: ``--metrics`` bound beyond loopback with no token or TLS. Now the
    protocol listener's rule (docs/protocol.md "Access", the same ``is_loopback``): refused at
    start with exit 2 unless ``--insecure-metrics`` says the operator accepts an open port."""
    refused = subprocess.run(
        [PODIUM, "serve", "--listen", "127.0.0.1:0", "--metrics", "0.0.0.0:0", "--db", "r.db"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2, refused.stderr
    assert (
        "error: serving metrics on 0.0.0.0:0 (beyond loopback) would let anyone read /metrics "
        "and the health endpoints: they ask for no token and speak no TLS. Serve them on "
        "loopback (--metrics 127.0.0.1:7071) behind a proxy that does, or give "
        "--insecure-metrics (podium.insecureMetrics) to accept that"
    ) in refused.stderr
    assert not refused.stdout  # no ready line: nothing was bound
    assert not (tmp_path / "r.db").exists()
    # A second loopback address is loopback, as for the protocol listener.
    second = start_daemon(
        "--metrics", "127.0.0.2:0", "--db", "second.db", "--unix", str(tmp_path / "second.sock")
    )
    assert second.metrics.startswith("127.0.0.2:")
    assert get(second, "/healthz")[::2] == (200, b"ok")
    # Accepted on purpose: served on every address, with a warning in the log.
    open_port = start_daemon(
        "--metrics", "0.0.0.0:0", "--insecure-metrics", "--db", "open.db",
        "--unix", str(tmp_path / "open.sock"),
    )  # fmt: skip
    assert open_port.metrics.startswith("0.0.0.0:")
    port = open_port.metrics.rsplit(":", 1)[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert b"scheduler_pending_pods" in response.read()
    code, err = open_port.stop()
    assert code == 0, err
    assert (
        "serving metrics on 0.0.0.0:0 beyond loopback (--insecure-metrics): anyone who "
        "reaches the port reads /metrics, without a token or TLS"
    ) in err
