"""A leader change while gangs are being decided and bound (issue 24): three ``podium serve
--leader-elect`` replicas on one prefix of the session's etcd member (tests/support/replicas.py,
3 s lease), two writers creating gangs through whichever replica answers
(tests/support/gang_load.py: the three forms, 2 to 16 members, some above minCount, some that
never fit, some written in two puts; each writer deletes its oldest gang beyond 8), and a
watcher on the leader.

:data:`FAILOVERS` times, 0-20 ms after the watcher saw a gang member's Bound while another
gang is complete and not bound yet (in the queue, the scheduler's batch, the cache's
assumption or the binder's transaction), the leader is taken away: ``kill -9`` (restarted as a
follower, as systemd's ``Restart=`` would), or, every other time, SIGSTOP past its lease, the
new leader left to take over and bind a gang, then SIGCONT: the old leader wakes with what it
had in flight (perhaps a gang assumed and half way to etcd), its fence refuses any commit, and
it exits 4 (then restarted). Each time every gang that was complete, able to fit and not
reported bound when the leader went is bound, whole, within lease + 15 s (the writers do not
delete those meanwhile); the print says how many the new leader bound (its Bound revisions are
above the revision it took the prefix over at) and how many the old one had committed before
it went.

The cluster has room for every gang alive at once (8 nodes of 64 CPU), so once the writers
stop and the leader settles the outcome is exact: a gang is bound with every member that fits
when at least minCount fit (and exist), else not at all; a basic group's and a lone pod's
fitting pods are bound; pods of a group that does not exist are not. And gang_load's checks:
no gang partly bound, nothing acknowledged lost, every reported Bound standing, no pod bound
twice in the whole log (a deposed leader's bind would be a second Bound), no node
over-committed. ``PODIUM_GANG_FAILOVERS`` (2 by default, one of each way; 4 under
``PODIUM_SOAK=1``: tests/support/long_runs.py) and ``PODIUM_GANG_SEED`` make a longer or another
run.
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio
from daemon import Daemon, StartDaemon
from etcd_servers import EtcdCluster
from gang_load import (
    Gang,
    GangLedger,
    GangLoad,
    check_gangs,
    follow,
    key_of,
    nodes,
    read_state,
    resolve_unknown,
    write_gangs,
)
from long_runs import count
from replicas import LEASE, Replicas

from podium.actors.framework.nodeinfo import PodInfo
from podium.cli.bench.loadgen import settle
from podium.protocol import objects as o
from podium.protocol.client import ClientConnectionError, RemoteError, connect
from podium.protocol.gangs import min_count, pod_group_key
from podium.protocol.wire import Event

FAILOVERS = count("PODIUM_GANG_FAILOVERS", 2)
SEED = int(os.environ.get("PODIUM_GANG_SEED", "1"))
NODES, NODE_CPU = 8, 64
WRITERS = 2


@dataclass
class Round:
    how: str  # "kill -9" or "SIGSTOP"
    pending: int  # gangs complete, expected to bind, and unbound when the leader went
    finished: int = 0  # of which were bound after
    by_new: int = 0  # of which the new leader bound (the others the old one had committed)
    took: float = 0.0  # seconds from the leader's loss to the last of them bound


@dataclass
class Watcher:
    """Follows the log through the replicas a client may reach, the leader first (the one
    :meth:`point` names), resuming from the last revision recorded after a lost connection."""

    ledger: GangLedger
    reachable: Callable[[], list[str]]
    leader: str = ""
    armed: bool = False
    bound: trio.Event = field(default_factory=trio.Event)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)

    def point(self, address: str) -> None:
        if address != self.leader:
            self.leader = address
            self.scope.cancel()  # a follower's events come a poll later

    def seen(self, _: Event) -> None:
        if self.armed:
            self.bound.set()

    async def run(self) -> None:
        while True:
            with trio.CancelScope() as self.scope:
                reachable = self.reachable()
                first = [self.leader] if self.leader in reachable else []
                addresses = ",".join(first + [a for a in reachable if a != self.leader])
                try:
                    await follow(addresses, self.ledger, on_bound=self.seen)
                except* (ClientConnectionError, RemoteError):
                    pass
                await trio.sleep(0.05)


def _fitting(gang: Gang) -> list[str]:
    """Keys of the gang's members that fit a node."""
    return [
        key_of("Pod", obj.metadata.namespace, obj.metadata.name)
        for part in gang.parts
        for obj in part
        if isinstance(obj, o.Pod)
        and pod_group_key(obj) == gang.group
        and PodInfo(obj).request.milli_cpu <= NODE_CPU * 1000
    ]


def _expected_to_bind(gang: Gang, ledger: GangLedger) -> list[str]:
    """A gang every object of which was acknowledged, with minCount fitting members: those."""
    if not all(k in ledger.acked for k in gang.keys):
        return []
    fitting = _fitting(gang)
    return fitting if gang.min_count is None or len(fitting) >= gang.min_count else []


def _check_outcome(pods: list[o.Pod], groups: list[o.PodGroup]) -> tuple[int, int]:
    """With room for everything: the exact outcome of placing every group all or nothing.
    Returns (gangs bound, gangs not bound)."""
    by_key = {f"{g.metadata.namespace}/{g.metadata.name}": g for g in groups}
    members: dict[str | None, list[o.Pod]] = defaultdict(list)
    for pod in pods:
        members[pod_group_key(pod)].append(pod)
    bound_gangs = unbound_gangs = 0
    for key, mine in members.items():
        fits = {p.metadata.name for p in mine if PodInfo(p).request.milli_cpu <= NODE_CPU * 1000}
        bound = {p.metadata.name for p in mine if p.spec.node_name}
        group = by_key.get(key) if key is not None else None
        need = None if group is None else min_count(group)
        if key is not None and group is None:
            want: set[str] = set()  # a group that does not exist: its pods wait
        elif need is None:
            want = fits  # lone pods, basic groups: pod by pod
        else:
            want = fits if min(len(mine), len(fits)) >= need else set()
        assert bound == want, f"group {key}: bound {sorted(bound)}, expected {sorted(want)}"
        if need is not None:
            bound_gangs += bool(bound)
            unbound_gangs += not bound
    return bound_gangs, unbound_gangs


def test_a_leader_change_while_gangs_are_decided_and_bound_leaves_none_partly_bound_and_none_twice(
    etcd_member: EtcdCluster, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    url = etcd_member.url(f"gangf-{uuid.uuid4().hex[:12]}")
    replicas = Replicas(start_daemon, etcd_member, tmp_path, urls=[url] * 3).start_all()
    rng = random.Random(SEED)
    load = GangLoad(GangLedger(), random.Random(rng.random()), live=8)
    rounds: list[Round] = []
    outcome: tuple[int, int] = (0, 0)
    paused: list[Daemon] = []

    def reachable() -> list[str]:
        """The replicas a client may talk to: a paused one would take a connection and
        never answer."""
        return [d.address for d in replicas.running() if d not in paused]

    watcher = Watcher(load.ledger, reachable)

    async def leader() -> Daemon:
        index = await trio.to_thread.run_sync(replicas.leader)
        daemon = replicas.daemons[index]
        assert daemon is not None
        watcher.point(daemon.address)
        return daemon

    async def take_away(old: Daemon, how: str) -> None:
        index = replicas.daemons.index(old)
        if how == "kill -9":
            old.kill()
            await trio.to_thread.run_sync(replicas.start, index)
            return
        os.kill(old.pid, signal.SIGSTOP)
        paused.append(old)
        try:
            # A new leader (the paused one cannot answer /metrics) binds a gang of its own.
            new = await leader()
            assert new is not old
            watcher.bound = trio.Event()
            watcher.armed = True
            with trio.fail_after(LEASE + 15):
                await watcher.bound.wait()
            watcher.armed = False
        finally:
            os.kill(old.pid, signal.SIGCONT)
            paused.remove(old)
        code = await trio.to_thread.run_sync(lambda: old.proc.wait(20))
        old.killed = True  # it stopped itself; its exit code is checked here
        log = old.stderr_text()
        await trio.to_thread.run_sync(old.stop)  # its pipes
        assert code == 4, log
        await trio.to_thread.run_sync(replicas.start, index)

    async def one_round(n: int) -> None:
        old = await leader()
        await trio.sleep(rng.uniform(0.3, 1.0))  # load on this leader
        # Just after a gang member's Bound, when another gang is complete and not bound yet
        # (in the queue, the scheduler's batch, the cache or the binder).
        with trio.fail_after(30):
            while True:
                watcher.bound = trio.Event()
                watcher.armed = True
                await watcher.bound.wait()
                await trio.sleep(rng.uniform(0, 0.02))
                expected = {g.group: _expected_to_bind(g, load.ledger) for g in load.alive}
                pending = {
                    g: keys
                    for g, keys in expected.items()
                    if keys and not any(k in load.ledger.ever_bound for k in keys)
                }
                if pending:
                    break
        watcher.armed = False
        gone = time.monotonic()
        how = "SIGSTOP" if n % 2 else "kill -9"
        record = Round(how, len(pending))
        rounds.append(record)
        load.keep = set(pending)  # the writers delete other gangs meanwhile

        async def finished() -> None:
            # Every gang complete and unbound when the leader went is bound (or deleted).
            with trio.fail_after(LEASE + 15):
                while True:
                    left = [
                        g
                        for g, keys in pending.items()
                        if not all(k in load.ledger.ever_bound for k in keys)
                    ]
                    if not left:
                        break
                    await trio.sleep(0.02)
            record.took = time.monotonic() - gone

        async with trio.open_nursery() as nursery:
            nursery.start_soon(finished)
            await take_away(old, how)
        new = await leader()
        record.finished = sum(
            1 for keys in pending.values() if all(k in load.ledger.ever_bound for k in keys)
        )
        takeovers = re.findall(r"taken over at revision (\d+)", new.stderr_text())
        assert takeovers, new.stderr_text()
        record.by_new = sum(
            1
            for keys in pending.values()
            if min(load.ledger.ever_bound.get(k, 0) for k in keys) > int(takeovers[-1])
        )
        load.keep = set()

    async def run() -> None:
        nonlocal outcome
        async with connect(replicas.addresses) as client:
            reply = await client.put(nodes(NODES, NODE_CPU))
        for obj in reply.objects:
            load.ledger.acked[key_of("Node", "", obj.name)] = obj.uid
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watcher.run)
            for w in range(WRITERS):
                nursery.start_soon(
                    write_gangs, lambda: ",".join(reachable()), load, f"w{w}-g", stop
                )
            for n in range(FAILOVERS):
                await one_round(n)
            stop.set()
            await trio.sleep(0.5)  # writers leave
            nursery.cancel_scope.cancel()
        new = await leader()
        async with connect(new.address) as client:
            with trio.fail_after(60):
                await settle(client)
        revision, pods, groups, nodes_ = await read_state(new.address)
        with trio.fail_after(30):
            await follow(new.address, load.ledger, until=revision)
        resolve_unknown(load.ledger, [*pods, *groups, *nodes_])
        check_gangs(load.ledger, pods, groups, nodes_)
        outcome = _check_outcome(pods, groups)

    began = time.monotonic()
    try:
        trio.run(run)
    except BaseException:
        print(replicas.logs())
        raise
    ledger = load.ledger
    print(
        f"\ngang failover test (seed {SEED}, lease {LEASE:g} s): {len(rounds)} leader changes in "
        f"{time.monotonic() - began:.1f} s; gangs complete and not reported bound when the "
        f"leader went, then bound: "
        + ", ".join(
            f"{r.how} {r.finished}/{r.pending} ({r.by_new} by the new) in {r.took:.2f} s"
            for r in rounds
        )
        + f"; {ledger.gangs} gangs written, {ledger.gang_deletes} deleted whole, "
        f"{sum(ledger.bound_events.values())} Bound events, none twice; at the end "
        f"{outcome[0]} gangs bound, {outcome[1]} not (short of minCount); "
        f"refused while failing over: {dict(ledger.refused)}"
    )
    assert len(rounds) == FAILOVERS
    assert sum(r.pending for r in rounds), "no gang was in flight at a leader change"
    assert all(r.finished == r.pending for r in rounds), rounds
