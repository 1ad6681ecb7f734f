"""ops/ checked against the real tools: Prometheus, promtool, systemd-analyze, and a live daemon.

The static tests read the dashboard, rules and unit; the promtool tests run Debian's promtool
on them; the integration test starts a real ``podium serve`` and a real ``prometheus`` on
loopback, loads the daemon so every panel has something to show, and evaluates every dashboard
expression through Prometheus' query API. Prometheus and promtool come from Debian's
``prometheus`` package: without them their tests skip, naming the command that installs them
(tests/support/servers.py); CI installs them in .ci/run and makes such a skip a failure.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import trio
import yaml
from builders import make_node, make_pod
from daemon import PODIUM, Daemon, DaemonError, StartDaemon
from gangs import member, pod_group
from servers import require_server

from podium.protocol import objects as o
from podium.protocol.client import Client, RemoteError, connect
from podium.protocol.config import PodiumSettings
from podium.protocol.wire import ObjectRef

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "ops"
EXAMPLES = ROOT / "examples"
# Every rate window of the dashboard is evaluated over this range: longer than the whole
# test, so each rate sees every sample since Prometheus started.
RATE_WINDOW = "5m"
# Metrics Prometheus itself attaches to every target.
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
PROMQL_KEYWORDS = {
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "inf",
    "nan",
}


def _tool(name: str) -> str:
    return require_server(name, install="apt-get install prometheus")


@pytest.fixture
def prometheus_tool() -> str:
    """``_tool("prometheus")`` before an async test starts: a skip raised inside one reaches
    pytest-trio 0.8 in an exception group, and it skips again without the reason."""
    return _tool("prometheus")


# --------------------------------------------------------------------------- the ops files


def _dashboard() -> dict[str, Any]:
    return json.loads((OPS / "grafana-dashboard.json").read_text())  # type: ignore[no-any-return]


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def dashboard_exprs() -> list[tuple[str, str]]:
    """(panel title, expression) for every query target of the dashboard."""
    return [
        (panel["title"], target["expr"])
        for panel in _panels(_dashboard()["panels"])
        for target in panel.get("targets", [])
    ]


def alert_rules() -> list[dict[str, Any]]:
    rules = yaml.safe_load((OPS / "alerts.yml").read_text())
    return [rule for group in rules["groups"] for rule in group["rules"]]


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL (or Grafana-templated PromQL) expression selects."""
    text = re.sub(r"\$\{?\w+\}?", "", expr)  # Grafana variables
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', text)
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries
    text = re.sub(r"\boffset\s+-?\w+|@\s*[\w.()]+", " ", text)  # offset and @ modifiers
    text = re.sub(
        r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text
    )  # grouping label lists
    text = re.sub(r"(?<![\w:])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", " ", text)  # numbers
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word = match.group()
        if word.lower() in PROMQL_KEYWORDS or text[match.end() :].lstrip().startswith("("):
            continue  # a keyword or a function call
        names.add(word)
    return names


def exported_metric_names() -> set[str]:
    """Every series name Podium's /metrics can expose, from protocol/metrics.py's REGISTRY.

    Falls back to tests/fixtures/metrics.tsv (name, type, labels, buckets) where the module
    is not there.
    """
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_sum", "_count", "_created"),
        "summary": ("", "_sum", "_count", "_created"),
    }
    families: list[tuple[str, str]] = []
    try:
        from podium.protocol.metrics import REGISTRY
    except ModuleNotFoundError:
        table = ROOT / "tests" / "fixtures" / "metrics.tsv"
        for line in table.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name, kind, *_ = line.split("\t")
            if name == "name":
                continue  # a header row
            if kind == "counter":
                name = name.removesuffix("_total")
            families.append((name, kind))
    else:
        families = [(family.name, family.type) for family in REGISTRY.collect()]
    return {name + suffix for name, kind in families for suffix in suffixes.get(kind, ("",))}


# --------------------------------------------------------------------------- static checks


def _pip_install_arguments(text: str) -> list[str]:
    """What each ``pip install`` of a Markdown text installs (its options left out)."""
    found: list[str] = []
    for command in re.findall(r"pip install ([^`\n&|;#]*)", text):
        found += [arg for arg in shlex.split(command) if not arg.startswith("-")]
    return found


def test_the_pip_install_arguments_are_read_from_markdown() -> None:
    text = (
        "`pip install 'podium[otlp]'`\n"
        "python3 -m venv v && v/bin/pip install -e '.[test]' && pytest\n"
        "pip install ./dist/podium-0.1.0-py3-none-any.whl   # a wheel\n"
    )
    assert _pip_install_arguments(text) == [
        "podium[otlp]",
        ".[test]",
        "./dist/podium-0.1.0-py3-none-any.whl",
    ]


def test_no_document_installs_podium_from_a_package_index() -> None:
    # Podium is on no index: `pip install podium` fails (issue 26); a checkout or a wheel does.
    documents = [ROOT / "README.md", OPS / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    from_an_index = {
        f"{doc.relative_to(ROOT)}: pip install {arg}"
        for doc in documents
        for arg in _pip_install_arguments(doc.read_text())
        if re.fullmatch(r"podium(\[[\w,]+\])?", arg)
    }
    assert not from_an_index
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _pip_install_arguments((OPS / "README.md").read_text()) == [
        ".",
        f"./podium-{version}-py3-none-any.whl",  # the name `pip wheel .` gives it
    ]


def test_metric_names_are_extracted_from_promql() -> None:
    assert metric_names(
        'histogram_quantile(0.99, sum by (instance, le) (rate(a_bucket{job="x", le!="1"}'
        "[$__rate_interval]))) > 0.05 unless on (instance) b_total offset 5m"
    ) == {"a_bucket", "b_total"}
    assert metric_names('sum(c{x=~"$instance"}) / ignoring(y) group_left count(d:e) > 1e3') == {
        "c",
        "d:e",
    }


def test_the_dashboard_has_the_variables_and_panels_an_operator_needs() -> None:
    dashboard = _dashboard()
    assert 36 <= dashboard["schemaVersion"] <= 41
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert (variables["datasource"]["type"], variables["datasource"]["query"]) == (
        "datasource",
        "prometheus",
    )
    assert variables["instance"]["query"]["query"] == (
        "label_values(scheduler_schedule_attempts_total, instance)"
    )
    exprs = dashboard_exprs()
    titles = {title for title, _ in exprs}
    for title in (
        "Throughput",
        "Scheduling attempt latency",
        "Queue depth by queue",
        "Failed attempts by result",
        "Unschedulable pods by plugin",
        "Incoming pods by event",
        "Bind latency",
        "Commit latency",
        "Commit batch size",
        "Connections",
        "Requests by type",
        "Errors by type and code",
        "Watchers and watcher lag",
        "Cache size",
        "Memory",
        "Leader (1: leads)",
        "Leader transitions",
        "Pod groups waiting for quorum",
        "Pod group attempts by result",
        "Pod group scheduling duration",
    ):
        assert title in titles, title
    for panel in _panels(dashboard["panels"]):
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert panel["targets"], panel["title"]
    # Every selector is scoped to the chosen instances.
    for title, expr in exprs:
        selectors_ = re.findall(r"[A-Za-z_:][\w:]*\{[^}]*\}", expr)
        assert selectors_ and all('instance=~"$instance"' in s for s in selectors_), (title, expr)
    assert len({p["id"] for p in _panels(dashboard["panels"])}) == sum(
        1 for _ in _panels(dashboard["panels"])
    )


def test_every_dashboard_and_alert_expression_uses_only_exported_metrics() -> None:
    exported = exported_metric_names() | SYNTHETIC
    assert "scheduler_schedule_attempts_total" in exported
    assert "process_resident_memory_bytes" in exported
    used: dict[str, set[str]] = {}
    for title, expr in dashboard_exprs():
        names = metric_names(expr)
        assert names, f"no metric found in {title}: {expr}"
        used[f"dashboard panel {title!r}"] = names
    rules = alert_rules()
    for rule in rules:
        names = metric_names(rule["expr"])
        assert names, f"no metric found in {rule['alert']}: {rule['expr']}"
        used[f"alert {rule['alert']}"] = names
    unknown = {where: sorted(names - exported) for where, names in used.items() if names - exported}
    assert not unknown, f"metrics Podium does not export: {unknown}"
    assert {r["alert"] for r in rules} == {
        "PodiumPodsPendingWithoutProgress",
        "PodiumSchedulingLatencyHigh",
        "PodiumStoreCommitErrors",
        "PodiumEtcdErrors",
        "PodiumNoLeader",
        "PodiumWatcherLag",
        "PodiumPodGroupsUnschedulable",
        "PodiumDown",
    }


def test_every_alert_has_cases_that_fire_and_cases_that_do_not() -> None:
    tests = yaml.safe_load((OPS / "alerts_test.yml").read_text())["tests"]
    fired: set[str] = set()
    quiet: set[str] = set()
    for case in tests:
        for check in case["alert_rule_test"]:
            (fired if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {r["alert"] for r in alert_rules()}
    assert fired == names
    assert quiet == names


def test_the_scrape_config_targets_the_default_metrics_address() -> None:
    config = yaml.safe_load((OPS / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]
    (job,) = config["scrape_configs"]
    assert job["job_name"] == "podium"
    assert job["static_configs"][0]["targets"] == [PodiumSettings().metrics]


# --------------------------------------------------------------------------- promtool


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False, cwd=cwd)


def test_promtool_checks_the_rules() -> None:
    proc = _run(_tool("promtool"), "check", "rules", str(OPS / "alerts.yml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 8 rules found" in proc.stdout + proc.stderr


def test_promtool_unit_tests_the_alerts() -> None:
    proc = _run(_tool("promtool"), "test", "rules", "alerts_test.yml", cwd=OPS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout + proc.stderr


def test_promtool_checks_the_scrape_config(tmp_path: Path) -> None:
    # A copy: check config resolves rule_files next to the config it reads.
    shutil.copy(OPS / "prometheus.yml", tmp_path / "prometheus.yml")
    shutil.copy(OPS / "alerts.yml", tmp_path / "alerts.yml")
    proc = _run(_tool("promtool"), "check", "config", str(tmp_path / "prometheus.yml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 8 rules found" in proc.stdout + proc.stderr


# --------------------------------------------------------------------------- systemd


def _unit(name: str = "podium.service") -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in (OPS / name).read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            settings.setdefault(key, []).append(value)
    return settings


def test_the_unit_is_hardened_and_outlasts_the_grace_period() -> None:
    unit = _unit()
    assert unit["ExecStart"] == [
        "/usr/bin/podium serve --config /etc/podium/scheduler-config.yaml"
        " --db /var/lib/podium/podium.db"
    ]
    for key, value in {
        "StateDirectory": "podium",
        "WorkingDirectory": "/var/lib/podium",
        "DynamicUser": "yes",
        "KillSignal": "SIGTERM",
        "Restart": "on-failure",
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "ProtectKernelTunables": "yes",
        "ProtectKernelModules": "yes",
        "ProtectKernelLogs": "yes",
        "ProtectControlGroups": "yes",
        "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
        "CapabilityBoundingSet": "",
        "LockPersonality": "yes",
        "MemoryDenyWriteExecute": "yes",
    }.items():
        assert unit[key] == [value], key
    assert "@system-service" in unit["SystemCallFilter"]
    stop = unit["TimeoutStopSec"][0]
    assert stop.endswith("s")
    grace = PodiumSettings().shutdown_grace_period_seconds
    assert grace < float(stop[:-1]) <= grace + 10


def test_the_etcd_unit_differs_only_in_the_store_and_the_restarts() -> None:
    sqlite, etcd = _unit(), _unit("podium-etcd.service")
    assert etcd["ExecStart"] == ["/usr/bin/podium serve --config /etc/podium/scheduler-config.yaml"]
    # Losing etcd's quorum stops the daemon: it keeps restarting until the quorum is back.
    assert (etcd["StartLimitIntervalSec"], etcd["RestartSec"]) == (["0"], ["5s"])
    changed = {"ExecStart", "StartLimitIntervalSec", "StartLimitBurst", "RestartSec"}
    assert {k: v for k, v in etcd.items() if k not in changed} == {
        k: v for k, v in sqlite.items() if k not in changed
    }


def test_the_replica_unit_differs_only_in_leader_election() -> None:
    etcd, replica = _unit("podium-etcd.service"), _unit("podium-replica.service")
    assert replica["ExecStart"] == [
        "/usr/bin/podium serve --config /etc/podium/scheduler-config.yaml --leader-elect"
    ]
    assert {k: v for k, v in replica.items() if k != "ExecStart"} == {
        k: v for k, v in etcd.items() if k != "ExecStart"
    }


@pytest.mark.parametrize(
    "name", ["podium.service", "podium-etcd.service", "podium-replica.service"]
)
def test_systemd_analyze_verifies_the_unit(tmp_path: Path, name: str) -> None:
    analyze = require_server("systemd-analyze", install="apt-get install systemd")
    # verify checks that ExecStart's binary exists: point a copy at this venv's podium.
    text = (OPS / name).read_text()
    assert "ExecStart=/usr/bin/podium " in text
    unit = tmp_path / "podium.service"
    unit.write_text(text.replace("ExecStart=/usr/bin/podium ", f"ExecStart={PODIUM} "))
    proc = _run(analyze, "verify", str(unit))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    # Unknown keys and misplaced settings are warnings with exit status 0.
    assert "podium.service" not in output, output


MDWE_WRAPPER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
# PR_SET_MDWE (65), PR_MDWE_REFUSE_EXEC_GAIN (1): the kernel's MemoryDenyWriteExecute.
if libc.prctl(65, 1, 0, 0, 0) != 0:
    sys.exit(77)
os.execv(sys.argv[1], sys.argv[1:])
"""


@pytest.fixture
def mdwe_daemon(start_daemon: StartDaemon) -> Daemon:
    """The default daemon under PR_SET_MDWE; started before the async test, so that its skip
    keeps its reason (see prometheus_tool)."""
    try:
        return _start_daemon(start_daemon, wrapper=[sys.executable, "-c", MDWE_WRAPPER])
    except DaemonError as exc:
        if exc.exit_code == 77:
            pytest.skip("this kernel has no PR_SET_MDWE (Linux < 6.3)")
        raise


async def test_the_daemon_runs_with_memory_deny_write_execute(mdwe_daemon: Daemon) -> None:
    """What the unit's MemoryDenyWriteExecute=yes does, through the kernel's own switch."""
    daemon = mdwe_daemon
    with trio.fail_after(60):
        await _apply(daemon.address, EXAMPLES / "cluster.yaml")
        async with connect(daemon.address) as cl, cl.watch(0, kinds=["Pod"]) as events:
            async for ev in events:
                if ev.type == "Bound" and ev.name == "web-7d9f-0":
                    break
        body = await _fetch(f"http://{daemon.metrics}/metrics")
        assert b"scheduler_schedule_attempts_total" in body


# --------------------------------------------------------------------------- the live test


def _start_daemon(start_daemon: StartDaemon, wrapper: Sequence[str] = ()) -> Daemon:
    """The default daemon (the fixture stops it and checks its exit code and log), whose ready
    line must name its metrics address."""
    daemon = start_daemon(wrapper=wrapper)
    assert daemon.metrics and not daemon.metrics.endswith(":0"), (
        f"the ready line names no metrics address: {daemon.ready}"
    )
    return daemon


# urllib without the environment's proxies: everything here is on loopback.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


async def _fetch(url: str, socket_timeout: float = 5.0) -> bytes:
    def get() -> bytes:
        try:
            with _OPENER.open(url, timeout=socket_timeout) as response:
                return response.read()  # type: ignore[no-any-return]
        except urllib.error.HTTPError as exc:
            # It holds the response's socket (Prometheus answers 503 while it starts): closed
            # here, or it warns as unclosed whenever it is collected, in whatever test runs then.
            exc.close()
            raise

    return await trio.to_thread.run_sync(get, abandon_on_cancel=True)


async def _apply(address: str, path: Path) -> None:
    proc = await trio.run_process(
        [PODIUM, "apply", "-f", str(path), "--server", address],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


class Prometheus:
    """A ``prometheus`` process on loopback and its HTTP API."""

    def __init__(self, tmp_path: Path, target: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.target = target
        self.log = tmp_path / "prometheus.log"
        config = tmp_path / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(OPS / "alerts.yml")],
                    "scrape_configs": [
                        {
                            # The job name the alert rules select.
                            "job_name": "podium",
                            "scrape_interval": "1s",
                            "scrape_timeout": "1s",
                            "static_configs": [{"targets": [target]}],
                        }
                    ],
                }
            )
        )
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [
                    _tool("prometheus"),
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=tmp_path,
            )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    async def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        body = json.loads(await _fetch(f"{self.url}/api/v1/{path}?{query}"))
        assert body["status"] == "success", body
        return body["data"]

    async def query(self, expr: str) -> list[dict[str, Any]]:
        data = await self.api("query", query=expr)
        assert data["resultType"] == "vector", (expr, data)
        return data["result"]  # type: ignore[no-any-return]

    async def ready(self) -> None:
        while True:
            assert self.proc.poll() is None, f"prometheus exited: {self.log.read_text()}"
            try:
                if await _fetch(f"{self.url}/-/ready", socket_timeout=1):
                    return
            except OSError:
                pass
            await trio.sleep(0.2)

    async def scrapes(self) -> int:
        """How many scrapes of the daemon Prometheus has stored."""
        result = await self.query(f'count_over_time(up{{instance="{self.target}"}}[1h])')
        return int(float(result[0]["value"][1])) if result else 0

    async def wait_scrapes(self, n: int) -> None:
        """Until ``n`` more successful scrapes of the daemon are stored."""
        start = await self.scrapes()
        while True:
            if await self.scrapes() >= start + n:
                break
            await trio.sleep(0.2)
        up = await self.query(f'up{{instance="{self.target}"}}')
        assert [s["value"][1] for s in up] == ["1"], (up, self.log.read_text())


def _free_port() -> int:
    # Prometheus cannot listen on port 0 and tell which port it got.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _node(name: str) -> o.Node:
    return (
        make_node(name)
        .capacity(cpu="8", memory="32Gi", pods=110)
        .label("kubernetes.io/hostname", name)
        .label("topology.kubernetes.io/zone", "load")
        .condition("Ready", "True")
        .obj()
    )


async def _load_wave(cl: Client, events: Any, wave: int) -> None:
    """Work that moves every panel: node adds, bound and unschedulable pods, gangs placed and
    gangs that cannot be, errors, deletes.

    Each wave does all of it again, so every series that appeared in the first wave grows
    during the second and each rate and quantile has data.
    """
    await cl.put([_node(f"load-{wave}-{i}") for i in range(3)])
    want = set()
    for batch in range(5):
        pods = [
            make_pod(f"w{wave}-p{batch * 25 + i}").ns("load").req(cpu="50m").obj()
            for i in range(25)
        ]
        await cl.put(pods)
        want |= {f"load/{p.metadata.name}" for p in pods}
    # Pods that fit nowhere: unschedulable attempts, the unschedulable set.
    await cl.put([make_pod(f"w{wave}-huge-{i}").ns("load").req(cpu="256").obj() for i in range(3)])
    # A gang that fits (a scheduled group attempt, a group scheduling duration) and one that
    # does not (unschedulable group attempts, retried on the next wave's nodes).
    gang = [member(f"w{wave}-gang-{i}", f"gang-{wave}", ns="load", cpu="100m") for i in range(3)]
    await cl.put([pod_group(f"gang-{wave}", 3, ns="load"), *gang])
    want |= {f"load/{p.metadata.name}" for p in gang}
    await cl.put(
        [
            pod_group(f"big-{wave}", 2, ns="load"),
            *(member(f"w{wave}-big-{i}", f"big-{wave}", ns="load", cpu="256") for i in range(2)),
        ]
    )
    # Protocol errors of two codes, and the other request types.
    with pytest.raises(RemoteError):
        await cl.get("Node", label_selector="a in (")
    with pytest.raises(RemoteError):
        await cl.get("Pod", name="nope", namespace="load")
    await cl.explain("load", f"w{wave}-huge-0")
    await cl.simulate(make_pod("what-if").req(cpu="100m").obj())
    await cl.stats()
    bound: set[str] = set()
    async for ev in events:
        if ev.type == "Bound":
            bound.add(f"{ev.namespace}/{ev.name}")
            if want <= bound:
                break
    # Deleting bound pods: AssignedPodDelete moves the unschedulable ones back.
    await cl.delete(
        [ObjectRef(kind="Pod", name=f"w{wave}-p{i}", namespace="load") for i in range(5)]
    )


async def test_every_dashboard_expression_returns_data_from_a_live_daemon(
    tmp_path: Path, start_daemon: StartDaemon, prometheus_tool: str
) -> None:
    daemon = _start_daemon(start_daemon)
    prometheus: Prometheus | None = None
    try:
        with trio.fail_after(180):
            prometheus = Prometheus(tmp_path, daemon.metrics)
            await prometheus.ready()
            await prometheus.wait_scrapes(2)
            # Scraped before any load: the first increments of every counter count.
            async with connect(daemon.address) as cl, cl.watch(kinds=["Pod"]) as events:
                await _apply(daemon.address, EXAMPLES / "cluster.yaml")
                await _load_wave(cl, events, 1)
                await prometheus.wait_scrapes(2)
                await _load_wave(cl, events, 2)
                await prometheus.wait_scrapes(3)

                # The instance variable's query, as Grafana's label_values() asks it.
                instances = await prometheus.api(
                    "label/instance/values", **{"match[]": "scheduler_schedule_attempts_total"}
                )
                assert instances == [daemon.metrics]

                empty: list[str] = []
                for title, expr in dashboard_exprs():
                    query = (
                        expr.replace("$__rate_interval", RATE_WINDOW)
                        .replace("$__interval", "1s")
                        .replace("$instance", daemon.metrics)
                    )
                    assert "$" not in query, query
                    result = await prometheus.query(query)
                    values = [float(sample["value"][1]) for sample in result]
                    if not any(math.isfinite(v) for v in values):
                        empty.append(f"{title}: {query} -> {values}")
                assert not empty, "dashboard expressions without data:\n" + "\n".join(empty)

            # Prometheus evaluated every alert rule against the live series without error.
            groups = (await prometheus.api("rules"))["groups"]
            rules = [rule for group in groups for rule in group["rules"]]
            assert {r["name"] for r in rules} == {r["alert"] for r in alert_rules()}
            assert all(r["health"] == "ok" for r in rules), rules
            firing = [r["name"] for r in rules if r["state"] == "firing"]
            assert firing == [], firing
    finally:
        if prometheus is not None:
            prometheus.stop()
