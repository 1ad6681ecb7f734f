"""The informer (protocol/client/informer.py) against real daemons (issue 26 point 7): kill -9
and a restart on the same SQLite file, a log compacted past it while it was away (``gone``:
it relists), and a leader killed under three replicas; and ``podium apply`` to the surviving
replica right after the leader is killed.

What is checked each time, from the client's view: the events the informer delivered are the
store's changes after its first list, each once, in order (a fresh watch of the log says
which); after a relist, replaying every notification from nothing gives the daemon's state,
and no notification repeats what the informer already had.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from builders import make_node, make_pod
from daemon import PODIUM, Daemon, StartDaemon
from etcd_servers import EtcdCluster
from replicas import Replicas

from podium.protocol.client import (
    Backoff,
    BlockingClient,
    BlockingInformer,
    Informer,
    Notification,
    RemoteError,
    connect,
)
from podium.protocol.client.informer import Source
from podium.protocol.objects import KubeObject
from podium.protocol.wire import ObjectRef

KINDS = ("Node", "Pod")
FAST = Backoff(initial=0.05, maximum=0.5)
LEASE_HERE = 6.0
"""The replicas' lease in the leader test: long enough that writes sent right after the
leader's kill meet a time without a leader (and well under the client's 20 s leader wait)."""

Key = tuple[str, str, str]


def _key(obj: KubeObject) -> Key:
    return (type(obj).__name__, obj.metadata.namespace, obj.metadata.name)


async def _store_state(address: str) -> tuple[int, dict[Key, str]]:
    """The daemon's revision and every object's resourceVersion (of KINDS)."""
    async with connect(address) as client:
        state: dict[Key, str] = {}
        revision = 0
        for kind in KINDS:
            reply = await client.get(kind)
            revision = max(revision, reply.revision)
            state.update({_key(o): o.metadata.resource_version for o in reply.items})
    return revision, state


async def _log(
    address: str, floors: dict[str, int], through: int
) -> list[tuple[int, str, str, str]]:
    """The store's changes of KINDS after each kind's list (``floors``) through ``through``,
    from a fresh watch."""
    out: list[tuple[int, str, str, str]] = []
    after = min(floors.values())
    if through <= after:
        return out
    async with connect(address) as client, client.watch(after, KINDS) as events:
        async for event in events:
            if event.revision > floors[event.kind]:
                out.append((event.revision, event.type, event.kind, event.name))
            if event.revision >= through:
                return out
    raise AssertionError("the watch ended")


def _delivered(notes: list[Notification]) -> list[tuple[int, str, str, str]]:
    return [
        (n.event.revision, n.event.type, n.event.kind, n.event.name)
        for n in notes
        if n.event is not None
    ]


async def _caught_up(informer: Informer, address: str) -> tuple[int, dict[Key, str]]:
    """Wait until the informer's cache equals the daemon's state (which must hold still: the
    scheduler binds pods a moment after their put)."""
    with trio.fail_after(30):
        while True:
            revision, state = await _store_state(address)
            cached = {_key(o): o.metadata.resource_version for o in informer.cache.objects()}
            if informer.cache.position == revision and cached == state:
                return revision, state
            await trio.sleep(0.05)


def _replay(notes: list[Notification]) -> dict[Key, str]:
    """Every notification applied to nothing, each checked to change something."""
    state: dict[Key, str] = {}
    for note in notes:
        key, version = _key(note.object), note.object.metadata.resource_version
        match note.type:
            case "added":
                assert key not in state, note
                state[key] = version
            case "modified":
                assert state.get(key) not in (None, version), note
                state[key] = version
            case "deleted":
                assert key in state, note
                del state[key]
    return state


class Gate:
    """Holds the informer's next connections back while closed (to make it miss a lot)."""

    def __init__(self, address: Callable[[], str]) -> None:
        self.address = address
        self.open = trio.Event()
        self.open.set()

    def close(self) -> None:
        self.open = trio.Event()

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Source]:
        await self.open.wait()
        async with connect(self.address()) as client:
            yield client


async def _put_pods(address: str, names: list[str]) -> None:
    async with connect(address) as client:
        await client.put([make_pod(n).req(cpu="10m").obj() for n in names])


def test_kill_9_restart_and_compaction_lose_and_double_nothing(
    start_daemon: StartDaemon, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    # A short log: 1100 changes while the informer is away compact it past its position.
    config.write_text("podium:\n  eventRetentionRevisions: 10\n")
    daemons: list[Daemon] = [start_daemon("--config", str(config))]
    address = f"unix:{daemons[0].unix}"  # the same socket path after each restart
    gate = Gate(lambda: address)
    notes: list[Notification] = []

    def restart() -> None:
        daemons[-1].kill()
        daemons.append(start_daemon("--config", str(config)))

    async def run() -> None:
        with trio.fail_after(180):
            await scenario()

    async def scenario() -> None:
        async with connect(address) as client:
            await client.put(
                [make_node(f"n{i}").capacity(cpu="64", pods=2000).obj() for i in range(2)]
            )
        await _put_pods(address, [f"a{i}" for i in range(5)])
        informer = Informer(kinds=KINDS, connector=gate.connect, backoff=FAST)
        informer.add_notification_handler(notes.append)
        async with trio.open_nursery() as nursery:
            await nursery.start(informer.run)
            floors = dict(informer.cache.floors)
            synced = len(notes)
            # Live changes, then a kill -9 in the middle of more, a restart, and more.
            await _put_pods(address, [f"b{i}" for i in range(5)])
            async with connect(address) as client:
                await client.delete([ObjectRef(kind="Pod", namespace="default", name="a0")])
            await _caught_up(informer, address)
            await trio.to_thread.run_sync(restart)
            await _put_pods(address, [f"c{i}" for i in range(5)])
            async with connect(address) as client:
                await client.delete([ObjectRef(kind="Pod", namespace="default", name="b0")])
            last, state = await _caught_up(informer, address)
            assert informer.lists == 1
            assert informer.retries >= 1
            assert _delivered(notes[synced:]) == await _log(address, floors, last)
            assert _replay(notes) == state

            # Away (its connections held back) while the log is compacted past it.
            gate.close()
            await trio.to_thread.run_sync(restart)
            await _put_pods(address, [f"d{i}" for i in range(1100)])
            async with connect(address) as client:
                await client.delete([ObjectRef(kind="Pod", namespace="default", name="a1")])
                with pytest.raises(RemoteError) as gone:
                    async with client.watch(last, KINDS):
                        pass
            assert gone.value.code == "gone"
            gate.open.set()
            last, state = await _caught_up(informer, address)
            # At least one relist: on a slow machine the log can be compacted past the relist's
            # own revision while the scheduler binds the 1100 pods, and the informer lists again.
            assert informer.lists >= 2
            assert _replay(notes) == state
            relisted = [n for n in notes if n.event is None][synced:]
            assert any(n.type == "deleted" and n.object.metadata.name == "a1" for n in relisted)
            assert sum(n.type == "added" for n in relisted) >= 1100
            nursery.cancel_scope.cancel()

    trio.run(run)


def test_the_blocking_informer_reads_the_cache_and_takes_notifications(
    daemon: Daemon,
) -> None:
    with BlockingInformer(daemon.address, kinds=["Pod"]) as pods:
        assert pods.objects() == []
        with BlockingClient(daemon.address) as client:
            client.put([make_pod("web").obj()])
        notes = pods.notifications(timeout=10)
        first = next(notes)
        assert (first.type, first.object.metadata.name) == ("added", "web")
        assert [p.metadata.name for p in pods.by_namespace("default")] == ["web"]


def test_a_leader_change_loses_and_doubles_nothing_and_apply_waits_for_the_new_leader(
    etcd_cluster: EtcdCluster, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    # A longer lease than the other replica tests' (2 s): the CLI's start-up must not
    # outlast the time without a leader.
    replicas = Replicas(start_daemon, etcd_cluster, tmp_path, lease=LEASE_HERE).start_all()
    leader = replicas.leader()
    leading = replicas.daemons[leader]
    assert leading is not None
    survivor = next(d for d in replicas.running() if d is not leading)
    # The leader first: the informer's connection goes there, and breaks with it.
    addresses = ",".join(
        [leading.address, *(d.address for d in replicas.running() if d is not leading)]
    )
    notes: list[Notification] = []
    manifest = tmp_path / "after.yaml"
    manifest.write_text(
        "".join(
            f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: after-{i}}}\nspec: {{containers: []}}\n"
            for i in range(3)
        )
    )

    async def run() -> None:
        with trio.fail_after(LEASE_HERE * 5 + 60):
            await scenario()

    async def scenario() -> None:
        async with connect(addresses) as client:
            await client.put(
                [make_node(f"n{i}").capacity(cpu="8", pods=100).obj() for i in range(2)]
            )
        await _put_pods(addresses, [f"a{i}" for i in range(5)])
        informer = Informer(addresses, kinds=KINDS, backoff=FAST)
        informer.add_notification_handler(notes.append)
        async with trio.open_nursery() as nursery:
            await nursery.start(informer.run)
            floors = dict(informer.cache.floors)
            synced = len(notes)
            await _caught_up(informer, survivor.address)
            await trio.to_thread.run_sync(leading.kill)
            # Right after the kill, through the surviving replica only, while no replica
            # leads (the dead leader's lease runs a while yet): `podium apply` and a put of
            # this process wait for the new leader instead of failing.
            async with trio.open_nursery() as writers:

                async def apply() -> None:
                    done = await trio.to_thread.run_sync(
                        lambda: survivor.cli("apply", "-f", str(manifest))
                    )
                    assert done.returncode == 0, done.stderr

                writers.start_soon(apply)
                async with connect(survivor.address) as client:
                    await client.put([make_pod("right-after").obj()])
            await _put_pods(survivor.address, [f"b{i}" for i in range(5)])
            new_leader = await trio.to_thread.run_sync(replicas.leader)
            at = replicas.daemons[new_leader]
            assert at is not None and at is not leading
            last, state = await _caught_up(informer, at.address)
            assert informer.lists == 1
            assert informer.retries >= 1  # its connection went down with the leader
            assert _delivered(notes[synced:]) == await _log(at.address, floors, last)
            assert {"after-0", "after-1", "after-2", "right-after", "b4"} <= {k[2] for k in state}
            assert _replay(notes) == state
            nursery.cancel_scope.cancel()

    trio.run(run)


def test_podium_watch_prints_every_change_once_across_a_kill_9_and_restart(
    start_daemon: StartDaemon, tmp_path: Path
) -> None:
    daemons: list[Daemon] = [start_daemon()]
    address = f"unix:{daemons[0].unix}"
    watch = subprocess.Popen(
        [PODIUM, "watch", "-o", "json", "--kind", "pods", "--server", address],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    printed: list[dict[str, object]] = []
    reader = threading.Thread(
        target=lambda: printed.extend(json.loads(line) for line in watch.stdout or ()),
        daemon=True,
    )
    reader.start()

    async def watchers() -> int:
        async with connect(address) as client:
            return (await client.stats()).watchers

    async def run() -> tuple[int, int]:
        with trio.fail_after(120):
            while True:  # `podium watch` lists, then watches
                if await watchers():
                    break
                await trio.sleep(0.1)
            start, _ = await _store_state(address)
            await _put_pods(address, [f"a{i}" for i in range(5)])
            daemons[-1].kill()
            daemons.append(await trio.to_thread.run_sync(start_daemon))
            await _put_pods(address, [f"b{i}" for i in range(5)])
            async with connect(address) as client:
                await client.delete([ObjectRef(kind="Pod", namespace="default", name="a0")])
            while True:  # until the scheduler is done binding and the watch printed it all
                last, _ = await _store_state(address)
                await trio.sleep(0.5)
                if (await _store_state(address))[0] == last and any(
                    d["revision"] == last for d in list(printed)
                ):
                    return start, last

    try:
        start, last = trio.run(run)
    finally:
        watch.send_signal(signal.SIGINT)
        _, err = watch.communicate(timeout=30)
        reader.join(timeout=10)
    assert watch.returncode == 130, err  # stopped by Ctrl-C (cli/main.py EXIT_INTERRUPTED)
    seen = [(d["revision"], d["type"], d["kind"], d["name"]) for d in printed]
    want = trio.run(_log, address, {"Node": start, "Pod": start}, last)
    assert seen == [w for w in want if w[2] == "Pod"]
    assert "trying again" in err
