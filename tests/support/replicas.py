"""Podium replicas under leader election for the tests: three ``podium serve --leader-elect`` on
one etcd prefix, each in a work folder of its own, with a short lease (so that a failover takes
seconds, not Kubernetes' 15 s), and what the tests ask of them: who leads (``podium_leader`` on
``/metrics``), writers that go on through failovers keeping a ledger of what was acknowledged,
and the final checks (nothing acknowledged lost, no pod bound twice, no node over-committed).
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio
from builders import make_node, make_pod
from daemon import Daemon, StartDaemon
from etcd_servers import EtcdCluster

from podium.protocol import objects as o
from podium.protocol.client import ClientConnectionError, RemoteError, connect

__all__ = [
    "LEASE",
    "Ledger",
    "Replicas",
    "check_cluster",
    "leader_of",
    "seed_nodes",
    "write_until",
]

LEASE = 3.0
"""The tests' lease duration (seconds); the renew deadline is three quarters of it, the retry
period 0.25 s. (2 s, with a 1.5 s renew deadline, left a leader recovering under load on a slow
machine too little room since every etcd call has a deadline: issue 25 point 2.)"""

LEADER_SECONDS = LEASE + 15
"""How long the final check waits for a replica to name the leader (a failover's bound)."""

# What a writer meets while no replica leads or the leader is being replaced.
RETRIED = ("not_leader", "unavailable")


@dataclass
class Ledger:
    """What the writers had acknowledged: pod name -> uid."""

    acked: dict[str, str] = field(default_factory=dict)
    refused: Counter[str] = field(default_factory=Counter)


class Replicas:
    """``size`` replicas on ``cluster``'s prefix ``podium``, in ``folder/r<i>``."""

    def __init__(
        self,
        start_daemon: StartDaemon,
        cluster: EtcdCluster,
        folder: Path,
        size: int = 3,
        *,
        hosts: list[str] | None = None,
        wrappers: list[list[str]] | None = None,
        token: str | None = None,
        lease: float = LEASE,
        urls: list[str] | None = None,
    ) -> None:
        # Replicas on hosts of their own (network namespaces) listen beyond loopback: with a
        # token (clients present ``token``) and without TLS.
        self.hosts = hosts
        self.wrappers = wrappers or [[] for _ in range(size)]
        self.token = token
        self.lease = lease
        # Each replica's ``--store`` URL (a path to etcd of its own, through a proxy);
        # None: every replica straight to the cluster's members.
        self.urls = urls
        self._start_daemon = start_daemon
        self.cluster = cluster
        self.folder = folder
        self.config = folder / "config.yaml"
        self.config.write_text(
            "podium:\n  etcd:\n    unavailableSeconds: 3\n    requestTimeoutSeconds: 1\n"
        )
        self.daemons: list[Daemon | None] = [None] * size
        self.restarts = 0
        self.started: list[Daemon] = []

    def start(self, index: int) -> Daemon:
        work = self.folder / f"r{index}"
        work.mkdir(exist_ok=True)
        network: list[str] = []
        if self.hosts is not None:
            tokens = self.folder / "tokens"
            tokens.write_text(f"{self.token} read-write test\n")
            host = self.hosts[index]
            network = ["--listen", f"{host}:7070", "--metrics", f"{host}:7071"]
            network += ["--token-file", str(tokens), "--insecure-plaintext", "--insecure-metrics"]
        daemon = self._start_daemon(
            *network,
            "--store",
            self.cluster.url("podium") if self.urls is None else self.urls[index],
            "--config",
            str(self.config),
            "--leader-elect",
            "--leader-elect-lease-duration",
            str(self.lease),
            "--leader-elect-renew-deadline",
            f"{self.lease * 0.75:g}",
            "--leader-elect-retry-period",
            "0.25",
            "--leader-elect-identity",
            f"r{index}-{self.restarts}",
            cwd=work,
            wrapper=self.wrappers[index],
        )
        self.restarts += 1
        self.daemons[index] = daemon
        self.started.append(daemon)
        return daemon

    def logs(self) -> str:
        """Every replica's log (for a failing test's report)."""
        return "\n".join(
            f"--- replica {n} (pid {d.pid}):\n{d.stderr_text()[-4000:]}"
            for n, d in enumerate(self.started)
        )

    def start_all(self) -> Replicas:
        for index in range(len(self.daemons)):
            self.start(index)
        return self

    @property
    def addresses(self) -> str:
        """Every running replica's address, comma-separated (the client's ``--server``)."""
        return ",".join(d.address for d in self.daemons if d is not None and d.proc.poll() is None)

    def running(self) -> list[Daemon]:
        return [d for d in self.daemons if d is not None and d.proc.poll() is None]

    def leader(self, timeout: float = 15) -> int:
        """The index of the replica that leads (waits for one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for index, daemon in enumerate(self.daemons):
                if daemon is not None and daemon.proc.poll() is None and leader_of(daemon):
                    return index
            time.sleep(0.05)
        raise TimeoutError(f"no replica led within {timeout} s")


def leader_of(daemon: Daemon) -> bool:
    """Whether ``daemon`` says (``podium_leader`` on /metrics) that it leads."""
    try:
        with urllib.request.urlopen(f"http://{daemon.metrics}/metrics", timeout=2) as answer:
            text = answer.read().decode()
    except urllib.error.HTTPError as exc:
        exc.close()  # it holds the response's socket
        return False
    except (urllib.error.URLError, OSError):
        return False
    return "\npodium_leader 1.0\n" in text


async def write_until(
    addresses: Callable[[], str],
    ledger: Ledger,
    prefix: str,
    stop: trio.Event,
    token: str | None = None,
) -> None:
    """Create pods ``prefix-N`` until ``stop``, through whichever replica answers (writes
    follow the leader), reconnecting on a lost connection; a refused or unanswered write is
    given up (its name is never reused), an acknowledged one goes in the ledger."""
    i = 0
    while not stop.is_set():
        try:
            async with connect(addresses(), token=token) as client:
                while not stop.is_set():
                    name = f"{prefix}-{i}"
                    i += 1
                    # Bounded: a replica cut off (or paused) may accept and never answer.
                    with trio.fail_after(5):
                        reply = await client.put([make_pod(name).req(cpu="100m").obj()])
                    ledger.acked[name] = reply.objects[0].uid
                    await trio.sleep(0.01)
        except RemoteError as exc:
            if exc.code not in RETRIED:
                raise
            ledger.refused[exc.code] += 1
            await trio.sleep(0.05)
        except (ClientConnectionError, trio.TooSlowError) as exc:
            ledger.refused[type(exc).__name__] += 1
            await trio.sleep(0.05)


async def seed_nodes(address: str, count: int, cpu: str, token: str | None = None) -> None:
    async with connect(address, token=token) as client:
        await client.put(
            [make_node(f"n{i}").capacity(cpu=cpu, pods=1000).obj() for i in range(count)]
        )


async def check_cluster(address: str, ledger: Ledger, token: str | None = None) -> tuple[int, int]:
    """The final checks on the state ``address`` serves: every acknowledged pod is there with
    its uid, no pod was bound twice (the Bound events of the whole log), no node holds more
    CPU than it has, read from the replica that leads (a follower's reads lag by its poll).
    Returns (pods, bound)."""
    # A replica restarted just before (the last kill's) may not know the leader yet: a read
    # from it would be a follower's, behind by its poll. Wait until one names the leader.
    with trio.fail_after(LEADER_SECONDS):
        while True:
            async with connect(address, token=token) as client:
                stats = await client.stats()
            if stats.leading or stats.leader is not None:
                break
            await trio.sleep(0.1)
    if not stats.leading and stats.leader is not None:
        address = stats.leader
    async with connect(address, token=token) as client:
        read_from = await client.stats()
        pods = [p for p in (await client.get("Pod")).items if isinstance(p, o.Pod)]
        nodes = [n for n in (await client.get("Node")).items if isinstance(n, o.Node)]
        revision = (await client.stats()).revision
        bound_events: Counter[str] = Counter()
        async with client.watch(0) as events:
            async for event in events:
                if event.type == "Bound":
                    assert isinstance(event.object, o.Pod)
                    bound_events[event.object.metadata.uid] += 1
                if event.revision >= revision:
                    break
    have = {p.metadata.name: p.metadata.uid for p in pods}
    lost = {name for name, uid in ledger.acked.items() if have.get(name) != uid}
    assert not lost, (
        f"acknowledged pods lost: {sorted(lost)[:5]} of {len(lost)} "
        f"(read from {address}: leading {read_from.leading}, revision {read_from.revision})"
    )
    twice = [uid for uid, n in bound_events.items() if n > 1]
    assert not twice, f"pods bound twice: {twice[:5]}"
    used: Counter[str] = Counter()
    for pod in pods:
        if pod.spec.node_name:
            for c in pod.spec.containers:
                cpu = c.resources.requests.get("cpu")
                used[pod.spec.node_name] += cpu.milli_value() if cpu is not None else 0
    for node in nodes:
        capacity = (node.status.allocatable or node.status.capacity)["cpu"].milli_value()
        assert used[node.metadata.name] <= capacity, f"{node.metadata.name} over-committed"
    bound = sum(1 for p in pods if p.spec.node_name)
    return len(pods), bound
