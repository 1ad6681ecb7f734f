"""The crash test: concurrent clients write and watch while the daemon is killed with SIGKILL
at random moments, restarted, and killed again; then every promise is checked.

It runs on each store backend: SQLite (4 kills in the default, short form) and etcd (the
session's etcd member, tests/support/etcd_servers.py; 6 kills, with shorter phases). The long
form is the same test with more kills on both: ``PODIUM_CRASH_KILLS`` (20 under
``PODIUM_SOAK=1``, the issue's minimum for etcd; tests/support/long_runs.py), e.g.::

    PODIUM_CRASH_KILLS=50 PODIUM_CRASH_SEED=7 pytest tests/e2e/test_crash.py -s

which prints its counts (docs/reliability.md records a run). Checked at the end:

1. every acknowledged write is there (an acknowledged put present with its uid, an
   acknowledged delete absent); a write in flight at a kill may have landed or not;
2. no pod was ever bound twice or to two nodes (one Bound per pod uid in the whole log);
3. no node is over-committed by Podium's bindings (``podium db check``, and the sums here);
4. every pending pod ends bound or reported unschedulable (its PodScheduled condition);
5. the watcher, resuming after each kill from the last revision it saw, saw every event of
   the log exactly once, in order.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio
from builders import make_node, make_pod
from daemon import PODIUM, StartDaemon
from etcd_servers import EtcdCluster
from long_runs import count

from podium.actors.framework.nodeinfo import PodInfo, Resource
from podium.cli.bench.loadgen import settle
from podium.protocol import objects as o
from podium.protocol.client import ClientConnectionError, RemoteError, connect
from podium.protocol.wire import Event, ObjectRef

KILLS = count("PODIUM_CRASH_KILLS", 4)
ETCD_KILLS = count("PODIUM_CRASH_KILLS", 6)
SEED = int(os.environ.get("PODIUM_CRASH_SEED", "1"))
WRITERS = 4


@dataclass
class Ledger:
    """What the clients were told, and what they saw."""

    acked: dict[str, str] = field(default_factory=dict)  # "Kind/ns/name" -> uid, acked puts
    deleted: set[str] = field(default_factory=set)  # acked deletes
    unknown: set[str] = field(default_factory=set)  # a put or delete in flight at a kill
    seen: list[tuple[int, str, str]] = field(default_factory=list)  # (revision, type, key)
    last_revision: int = 0
    acked_writes: int = 0
    kills: int = 0


def _key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


async def _watch(address: str, ledger: Ledger, *, until: int | None = None) -> None:
    """Resume from the last revision seen; record every event; each revision exactly once."""
    async with connect(address) as client, client.watch(ledger.last_revision) as events:
        async for ev in events:
            _record(ledger, ev)
            if until is not None and ev.revision >= until:
                return


def _record(ledger: Ledger, ev: Event) -> None:
    assert ev.revision == ledger.last_revision + 1, (
        f"watch went from revision {ledger.last_revision} to {ev.revision}"
    )
    ledger.seen.append((ev.revision, ev.type, _key(ev.kind, ev.namespace, ev.name)))
    ledger.last_revision = ev.revision


async def _writer(address: str, ledger: Ledger, w: int, phase: int, rng: random.Random) -> None:
    mine: list[str] = []
    async with connect(address) as client:
        for i in range(10_000):
            roll = rng.random()
            if roll < 0.1:
                obj: o.KubeObject = (
                    make_node(f"n-{w}-{phase}-{i}")
                    .capacity(cpu="2", memory="4Gi", pods=20)
                    .label("topology.kubernetes.io/zone", f"z{i % 3}")
                    .condition("Ready", "True")
                    .obj()
                )
                key = _key("Node", "", obj.metadata.name)
            elif roll < 0.85 or not mine:
                obj = make_pod(f"p-{w}-{phase}-{i}").ns(f"w{w}").req(cpu="300m").obj()
                key = _key("Pod", f"w{w}", obj.metadata.name)
            else:
                victim = mine.pop(rng.randrange(len(mine)))
                ledger.unknown.add(victim)
                _, ns, name = victim.split("/")
                await client.delete([ObjectRef(kind="Pod", name=name, namespace=ns)])
                ledger.unknown.discard(victim)
                ledger.deleted.add(victim)
                ledger.acked_writes += 1
                continue
            ledger.unknown.add(key)
            reply = await client.put([obj])
            ledger.unknown.discard(key)
            ledger.acked[key] = reply.objects[0].uid
            ledger.acked_writes += 1
            if key.startswith("Pod/"):
                mine.append(key)


async def _phase(address: str, ledger: Ledger, phase: int, rng: random.Random) -> None:
    """Load the daemon until it dies under us."""

    async def guarded(fn, *args) -> None:  # type: ignore[no-untyped-def]
        try:
            await fn(*args)
        except* (ClientConnectionError, RemoteError) as group:
            for exc in group.exceptions:
                if isinstance(exc, RemoteError):
                    assert exc.code == "unavailable", exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(guarded, _watch, address, ledger)
        for w in range(WRITERS):
            nursery.start_soon(
                guarded, _writer, address, ledger, w, phase, random.Random(rng.random())
            )


async def _quiet(address: str) -> int:
    """Wait until nothing is active, backing off, in flight or assumed; the revision then."""
    async with connect(address) as client:
        with trio.fail_after(60):
            return await settle(client)


async def _final_state(
    address: str,
) -> tuple[list[o.Pod], list[o.Node], list[tuple[int, str, str, str]]]:
    async with connect(address) as client:
        pods = [p for p in (await client.get("Pod")).items if isinstance(p, o.Pod)]
        nodes = [n for n in (await client.get("Node")).items if isinstance(n, o.Node)]
        log: list[tuple[int, str, str, str]] = []
        revision = (await client.stats()).revision
        if revision:
            async with client.watch(0) as events:
                async for ev in events:
                    uid = ev.object.metadata.uid if ev.object is not None else ""
                    log.append((ev.revision, ev.type, _key(ev.kind, ev.namespace, ev.name), uid))
                    if ev.revision >= revision:
                        break
    return pods, nodes, log


@pytest.mark.parametrize("backend", ["sqlite", "etcd"])
def test_kill_9_at_random_moments_loses_and_duplicates_nothing(
    tmp_path: Path, start_daemon: StartDaemon, backend: str, request: pytest.FixtureRequest
) -> None:
    rng = random.Random(SEED)
    ledger = Ledger()
    store: tuple[str, ...] = ()
    kills, longest = KILLS, 1.2
    if backend == "etcd":
        member: EtcdCluster = request.getfixturevalue("etcd_member")
        store = ("--store", member.url(f"crash-{os.getpid()}-{SEED}"))
        kills, longest = ETCD_KILLS, 0.6

    async def main() -> None:
        for phase in range(kills):
            daemon = start_daemon("--metrics", "none", *store)
            try:
                with trio.move_on_after(rng.uniform(0.2, longest)):
                    await _phase(daemon.address, ledger, phase, rng)
            finally:
                daemon.kill()  # also when the phase failed: never leave a daemon behind
            ledger.kills += 1
        daemon = start_daemon("--metrics", "none", *store)
        try:
            revision = await _quiet(daemon.address)
            if ledger.last_revision < revision:
                await _watch(daemon.address, ledger, until=revision)
            pods, nodes, log = await _final_state(daemon.address)
        finally:
            code, err = daemon.stop()
            assert code == 0, err
        _verify(ledger, pods, nodes, log)

    async def guarded() -> None:
        with trio.fail_after(60 + 10 * kills):
            await main()

    trio.run(guarded)
    print(
        f"\ncrash test ({backend}): {ledger.kills} kills, {ledger.acked_writes} writes "
        f"acknowledged, {len(ledger.unknown)} in flight at a kill, {len(ledger.seen)} events "
        f"watched (seed {SEED}); violations: 0"
    )
    if backend == "etcd":
        return
    check = subprocess.run(
        [PODIUM, "db", "check", str(tmp_path / "podium.db")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def _verify(
    ledger: Ledger,
    pods: list[o.Pod],
    nodes: list[o.Node],
    log: list[tuple[int, str, str, str]],
) -> None:
    present = {_key("Pod", p.metadata.namespace, p.metadata.name): p.metadata.uid for p in pods}
    present.update({_key("Node", "", n.metadata.name): n.metadata.uid for n in nodes})
    # 1. Acknowledged writes.
    for key, uid in ledger.acked.items():
        if key in ledger.unknown:
            continue
        if key in ledger.deleted:
            assert key not in present, f"{key}: deleted with an acknowledgement, yet present"
        else:
            assert present.get(key) == uid, f"{key}: acknowledged put lost"
    # 2. One binding per pod, ever.
    bound = Counter(uid for _, type_, _, uid in log if type_ == "Bound")
    assert not [uid for uid, n in bound.items() if n > 1], "a pod was bound twice"
    # 3. No node over-committed (cpu and pod count; Podium binds every pod here).
    allocatable = {n.metadata.name: Resource.from_list(n.status.allocatable) for n in nodes}
    used: dict[str, Resource] = {}
    count: Counter[str] = Counter()
    for p in pods:
        if p.spec.node_name in allocatable:
            used.setdefault(p.spec.node_name, Resource()).add(PodInfo(p).request)
            count[p.spec.node_name] += 1
    for name, r in used.items():
        assert r.milli_cpu <= allocatable[name].milli_cpu, f"node {name} over-committed"
        assert count[name] <= allocatable[name].allowed_pod_number, f"node {name} over pods"
    # 4. Every pending pod is bound or reported unschedulable.
    for p in pods:
        if not p.spec.node_name:
            reasons = [c.reason for c in p.status.conditions if c.type == "PodScheduled"]
            assert reasons == ["Unschedulable"], f"pod {p.metadata.name} pending, not reported"
    # 5. The watcher saw the whole log, exactly once and in order.
    assert [(r, t, k) for r, t, k, _ in log] == ledger.seen
