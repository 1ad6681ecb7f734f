"""kill -9 of a real ``podium serve`` while it binds gangs (issue 24), :data:`KILLS` times a
backend, on SQLite (a file in the test's folder) and on etcd (a prefix of the session's etcd
member, tests/support/etcd_servers.py); each time the daemon is restarted on the same store.

tests/e2e/test_gang_crash.py kills a process that binds groups through the store actor alone;
this one kills the whole daemon, so the kill lands anywhere on a gang's path: the queue holding
it for its quorum, the scheduler deciding it, the cache's assumption, the binder's one
transaction, the commit, the Bound events going out.

Two writers create gangs against 6 nodes of 8 CPU (tests/support/gang_load.py: the three
forms, 2 to 16 members, some above minCount, some that never fit, some written in two puts)
and delete their oldest gang beyond 8 alive, so gangs keep being placed as others leave and
the cluster stays short of room (about half of the gangs wait at any moment); a watcher
follows the log, resuming after each restart from the last revision it saw. The daemon is
killed with SIGKILL half of the time at a random moment 0.3-1.0 s into a phase, half of the
time 0-20 ms after the watcher saw a gang member's Bound (while the next gangs are being
decided and bound). After each kill the store is read as the restart finds it, while no
daemon runs (a restarted daemon completes a cut gang within milliseconds, so a check made
through it would miss one: a binder mutated to bind member by member passes such a check and
fails this one), the daemon restarted on it, the watcher caught up to the recovered revision,
and that state checked (gang_load.check_gangs): every gang's bound members are none or at
least minCount, nothing acknowledged lost, every reported Bound still bound to its node,
nothing bound twice, no node over-committed. At the end the daemon settles (every gang that
fits is placed) and its state is checked again; a SQLite file also passes ``podium db check``.

The counts are printed (``-s``; docs/reliability.md records a run): kills, Bound events that
committed before a kill but had not been reported to the watcher yet (the kill came between a
bind's commit and its events), and the gangs bound whole and not bound in the states the
kills left. ``PODIUM_GANG_KILLS`` (4 by default, 20 under ``PODIUM_SOAK=1``:
tests/support/long_runs.py) and ``PODIUM_GANG_SEED`` (those of test_gang_crash.py) make a
longer run or another one::

    PODIUM_GANG_KILLS=100 PODIUM_GANG_SEED=7 pytest tests/e2e/test_gang_daemon_crash.py -s
"""

from __future__ import annotations

import os
import random
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio
from daemon import PODIUM, Daemon, StartDaemon
from etcd_servers import EtcdCluster
from gang_load import (
    GangLedger,
    GangLoad,
    Verdict,
    check_gangs,
    follow,
    key_of,
    nodes,
    read_state,
    recover,
    resolve_unknown,
    split,
    write_gangs,
)
from long_runs import count

from podium.cli.bench.loadgen import settle
from podium.protocol.client import ClientConnectionError, RemoteError, connect
from podium.protocol.wire import Event

KILLS = count("PODIUM_GANG_KILLS", 4)
SEED = int(os.environ.get("PODIUM_GANG_SEED", "1"))
NODES = 6
WRITERS = 2


@dataclass
class Counts:
    kills: int = 0
    after_bound: int = 0  # kills timed on a gang member's Bound
    unreported: int = 0  # Bound events committed before a kill, read only after the restart
    kills_with_unreported: int = 0
    unanswered: int = 0  # objects put or deleted, unanswered at a kill
    landed: int = 0  # of which the write had landed
    gangs_bound: int = 0  # gangs bound (at or above minCount) in the states the kills left
    gangs_waiting: int = 0  # gangs with no member bound in those states
    starts: float = 0.0  # seconds spent starting daemons
    settled: float = 0.0  # seconds the last daemon took to settle
    last: Verdict | None = None


async def _restart_and_check(
    url: str, start: Callable[[], Daemon], load: GangLoad, counts: Counts
) -> Daemon:
    """Read the store as the restart will find it (the daemon is dead), restart the daemon,
    catch the watcher up to the recovered revision, settle the writes left unanswered and
    check that state: exactly what the kill left, before the new daemon changes anything."""
    ledger = load.ledger
    revision, objects = await recover(url)
    # Events go out only after their commit: everything the watcher was sent is recovered.
    assert revision >= ledger.last_revision, (revision, ledger.last_revision)
    daemon = start()
    assert int(daemon.ready["revision"]) == revision, (daemon.ready, revision)
    late = 0

    def count(_: Event) -> None:
        # A gang member's Bound the daemon had committed before it died, which the watcher
        # had not received: the kill came between a bind's commit and its events.
        nonlocal late
        late += 1

    with trio.fail_after(30):
        await follow(daemon.address, ledger, until=revision, on_bound=count)
    assert ledger.last_revision == revision
    counts.unreported += late
    counts.kills_with_unreported += bool(late)
    unanswered, landed = resolve_unknown(ledger, objects)
    counts.unanswered += unanswered
    counts.landed += landed
    load.release()
    counts.last = check_gangs(ledger, *split(objects))
    counts.gangs_bound += counts.last.bound_gangs
    counts.gangs_waiting += counts.last.waiting_gangs
    return daemon


async def _check_live(daemon: Daemon, load: GangLoad, counts: Counts) -> None:
    """The checks on the state a running daemon serves (the writers stopped)."""
    revision, pods, groups, nodes_ = await read_state(daemon.address)
    with trio.fail_after(30):
        await follow(daemon.address, load.ledger, until=revision)
    counts.last = check_gangs(load.ledger, pods, groups, nodes_)


async def _phase(daemon: Daemon, load: GangLoad, rng: random.Random, counts: Counts) -> None:
    """Load the daemon, then kill it: at a random moment, or just after a gang's Bound."""
    stop = trio.Event()
    bound = trio.Event()
    armed = False
    on_bound = rng.random() < 0.5

    def seen(_: Event) -> None:
        if armed:
            bound.set()

    async def guarded_follow() -> None:
        try:
            await follow(daemon.address, load.ledger, on_bound=seen)
        except* (ClientConnectionError, RemoteError) as group:
            for exc in group.exceptions:
                assert not isinstance(exc, RemoteError) or exc.code == "unavailable", exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(guarded_follow)
        for w in range(WRITERS):
            nursery.start_soon(write_gangs, lambda: daemon.address, load, f"w{w}-g", stop)
        if on_bound:
            await trio.sleep(0.3)
            armed = True  # a Bound from now on
            with trio.move_on_after(3):
                await bound.wait()
                await trio.sleep(rng.uniform(0, 0.02))
                counts.after_bound += 1
        else:
            await trio.sleep(rng.uniform(0.3, 1.0))
        daemon.kill()
        counts.kills += 1
        stop.set()
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("backend", ["sqlite", "etcd"])
def test_kill_9_of_the_daemon_during_gang_binds_never_leaves_a_gang_partly_bound(
    tmp_path: Path, start_daemon: StartDaemon, backend: str, request: pytest.FixtureRequest
) -> None:
    rng = random.Random(SEED)
    load = GangLoad(GangLedger(), random.Random(rng.random()), live=8)
    counts = Counts()
    url = f"sqlite://{tmp_path / 'podium.db'}"
    if backend == "etcd":
        member: EtcdCluster = request.getfixturevalue("etcd_member")
        url = member.url(f"gangd-{uuid.uuid4().hex[:12]}")
    began = time.monotonic()

    def start() -> Daemon:
        began = time.monotonic()
        try:
            return start_daemon("--metrics", "none", "--store", url)
        finally:
            counts.starts += time.monotonic() - began

    async def main() -> None:
        daemon = start()
        async with connect(daemon.address) as client:
            reply = await client.put(nodes(NODES))
        for obj in reply.objects:
            load.ledger.acked[key_of("Node", "", obj.name)] = obj.uid
        for _ in range(KILLS):
            try:
                await _phase(daemon, load, rng, counts)
            finally:
                if not daemon.killed:
                    daemon.kill()
            daemon = await _restart_and_check(url, start, load, counts)
        # The end: the daemon settles (every gang that fits is placed), and the state holds.
        try:
            settling = time.monotonic()
            async with connect(daemon.address) as client:
                with trio.fail_after(60):
                    await settle(client)
            counts.settled = time.monotonic() - settling
            await _check_live(daemon, load, counts)
        finally:
            code, err = daemon.stop()
            assert code == 0, err

    trio.run(main)
    ledger, last = load.ledger, counts.last
    assert last is not None
    print(
        f"\ngang daemon crash test ({backend}, seed {SEED}): {counts.kills} kills in "
        f"{time.monotonic() - began:.1f} s ({counts.starts:.1f} s starting daemons, "
        f"{counts.settled:.1f} s settling at the end; {counts.after_bound} timed on a gang's "
        f"Bound); "
        f"{counts.unreported} Bound events committed before a kill and reported only after "
        f"the restart (at {counts.kills_with_unreported} kills); in the states the kills left, "
        f"{counts.gangs_bound} gangs bound whole, {counts.gangs_waiting} with none bound, 0 "
        f"between; {ledger.gangs} gangs written, "
        f"{ledger.gang_deletes} deleted whole, {sum(ledger.bound_events.values())} Bound events; "
        f"at the end {last.bound_gangs} gangs bound ({last.above_min} above minCount), "
        f"{last.waiting_gangs} waiting, {last.bound_pods} of {last.pods} pods bound; "
        f"{counts.unanswered} objects written unanswered at a kill, {counts.landed} of them "
        f"landed; violations: 0"
    )
    assert counts.kills == KILLS
    assert ledger.bound_events, "nothing was bound: the test proved nothing"
    assert last.bound_gangs, "no gang bound at the end: the test proved nothing"
    # Gangs held whole without room, in a state a kill left or at the end: with the default 4
    # kills the writers' last gangs sometimes all fit by the end (once in the three runs seen).
    assert counts.gangs_waiting or last.waiting_gangs, "no gang ever waited for room"
    if backend == "sqlite":
        check = subprocess.run(
            [PODIUM, "db", "check", str(tmp_path / "podium.db")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert check.returncode == 0, check.stdout + check.stderr
