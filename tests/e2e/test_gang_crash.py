"""kill -9 during pod groups' binds (issue 24): every group whole or not bound at all.

A child process (tests/support/gang_binder.py) opens a real store, a SQLite file or a prefix
of the session's etcd member (tests/support/etcd_servers.py), as the daemon builds it, and
binds random pod groups (1 to 256 members, half of them with a claim and a volume a member;
some with a member deleted, so their bind is refused whole) through the store actor, two
binders at once, printing each group it hands over and each answer. The test kills it with
SIGKILL at a random moment (during its start and recovery now and then, else while it binds),
:data:`KILLS` times; after each kill it opens the store as a restart does and checks:

1. every group is bound whole or not at all: all its members on a node and every member's
   claim bound to its volume, or no member bound and no claim or volume of it bound;
2. nothing acknowledged is lost: every group the child was told is bound (across every run
   so far) is there whole;
3. a group the child was told is refused has no member bound, and the child saw no answer
   that split a group (``VIOLATION``).

A group handed over but not answered at the kill may be either; the counts are printed
(``-s``). ``PODIUM_GANG_KILLS`` (6 by default, 20 under ``PODIUM_SOAK=1``:
tests/support/long_runs.py) and ``PODIUM_GANG_SEED`` make a longer or another run.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio
from etcd_servers import EtcdCluster
from long_runs import count

from podium.protocol import objects as o
from podium.store.etcd.durability import EtcdDurability
from podium.store.location import EtcdLocation, SqliteLocation, parse_store_url
from podium.store.sqlite import SqliteDurability

KILLS = count("PODIUM_GANG_KILLS", 6)
SEED = int(os.environ.get("PODIUM_GANG_SEED", "1"))
CHILD = Path(__file__).resolve().parent.parent / "support" / "gang_binder.py"
NAMESPACE = "g"
LARGE = 128
"""A group this large is past etcd's --max-txn-ops (128) with its event keys."""


@dataclass
class Ledger:
    """What the child was told, over every run."""

    sizes: dict[str, int] = field(default_factory=dict)  # group -> members handed over
    bound: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    in_flight: list[str] = field(default_factory=list)  # handed over, unanswered at a kill
    kills_in_bind: int = 0
    large_in_flight: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: {"whole": 0, "none": 0})


def _read(ledger: Ledger, lines: list[str]) -> None:
    """Take one run's output in: its complete lines (a line cut by the kill is dropped)."""
    pending: set[str] = set()
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == "binding":
            group, size = rest.split()
            ledger.sizes[group] = int(size)
            pending.add(group)
        elif word == "bound":
            ledger.bound.add(rest)
            pending.discard(rest)
        elif word == "refused":
            ledger.refused.add(rest)
            pending.discard(rest)
        else:
            assert word in ("ready", "VIOLATION"), line
            assert word != "VIOLATION", line
    ledger.in_flight = sorted(pending)
    ledger.kills_in_bind += bool(pending)
    ledger.large_in_flight += sum(1 for g in pending if ledger.sizes[g] >= LARGE)


async def _recover(url: str) -> list[o.KubeObject]:
    """Open the store as a restart does (load: etcd replays or drops what a cut commit
    left) and close it again."""
    location = parse_store_url(url)
    if isinstance(location, SqliteLocation):
        durability: SqliteDurability | EtcdDurability = SqliteDurability(location.path)
    else:
        assert isinstance(location, EtcdLocation)
        durability = EtcdDurability(location)
    try:
        recovery = await durability.load()
    finally:
        await durability.close()
    return recovery.objects if recovery is not None else []


def _check(ledger: Ledger, objects: list[o.KubeObject]) -> None:
    pods: dict[str, list[o.Pod]] = defaultdict(list)
    claims: dict[str, o.PersistentVolumeClaim] = {}
    volumes: dict[str, o.PersistentVolume] = {}
    for obj in objects:
        if isinstance(obj, o.Pod) and "gang" in obj.metadata.labels:
            pods[obj.metadata.labels["gang"]].append(obj)
        elif isinstance(obj, o.PersistentVolumeClaim):
            claims[obj.metadata.name] = obj
        elif isinstance(obj, o.PersistentVolume):
            volumes[obj.metadata.name] = obj
    for group, members in pods.items():
        bound = [p for p in members if p.spec.node_name]
        assert len(bound) in (0, len(members)), (
            f"group {group} is partly bound: {len(bound)} of {len(members)}"
        )
        if bound:
            assert len(members) == ledger.sizes.get(group), (
                f"group {group} is bound with {len(members)} members, handed over with "
                f"{ledger.sizes.get(group)}"
            )
        for pod in members:
            for volume in pod.spec.volumes:
                if volume.persistent_volume_claim is None:
                    continue
                name = volume.persistent_volume_claim.claim_name
                claim, pv = claims[name], volumes[name]
                claimed = (bool(claim.spec.volume_name), pv.spec.claim_ref is not None)
                assert claimed == (bool(bound),) * 2, (
                    f"group {group}: pod {pod.metadata.name} bound={bool(bound)}, its claim and "
                    f"volume bound={claimed}"
                )
    for group in ledger.bound:
        members = pods.get(group, [])
        assert len(members) == ledger.sizes[group] and all(p.spec.node_name for p in members), (
            f"group {group} was acknowledged bound; the store has "
            f"{sum(1 for p in members if p.spec.node_name)} of {ledger.sizes[group]} bound"
        )
    for group in ledger.refused:
        assert not any(p.spec.node_name for p in pods.get(group, [])), group
    for group in ledger.in_flight:
        whole = bool(pods.get(group)) and all(p.spec.node_name for p in pods[group])
        ledger.outcomes["whole" if whole else "none"] += 1


class _Lines:
    """Lines read from a process's stdout."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""

    async def line(self) -> str:
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some()
            assert chunk, "the binders' fork server ended"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()


class Forks:
    """The fork server (tests/support/gang_binder.py ``--fork-server``): a binder a fork."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._lines = _Lines(process.stdout)

    async def started(self) -> None:
        """Once the server has imported everything and reads commands."""
        assert await self._lines.line() == "forks"

    async def ask(self, command: str, answer: str) -> str:
        await self._stdin.send_all(f"{command}\n".encode())
        word, _, rest = (await self._lines.line()).partition(" ")
        assert word == answer, (word, rest)
        return rest


async def _run_once(
    forks: Forks, url: str, run: int, rng: random.Random, ledger: Ledger, out: Path
) -> None:
    """Fork a binder, kill it at a random moment, read what it printed."""
    early = rng.random() < 0.2  # kill during its start and recovery, ready or not
    seed = rng.randrange(2**32)
    err = Path(f"{out}.err")
    out.touch()  # noqa: ASYNC240  # a binder killed before it opens them printed nothing
    err.touch()  # noqa: ASYNC240
    pid = int(await forks.ask(f"run {url} {run} {seed} {out}", "pid"))
    try:
        if early:
            await trio.sleep(rng.uniform(0.0, 0.2))
        else:
            with trio.fail_after(30):
                # A file polls where a pipe would need the binder's own fd: it is a fork of
                # the server, not of this process.
                while not out.read_bytes().startswith(b"ready\n"):  # noqa: ASYNC110, ASYNC240  # a few bytes
                    await trio.sleep(0.005)
            await trio.sleep(rng.uniform(0.02, 0.35))
    finally:
        status = int(await forks.ask(f"kill {pid}", "dead"))
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
        f"binder {run} ended on its own ({status}): {err.read_text()[-3000:]}"  # noqa: ASYNC240  # a failure's
    )
    # A kill may cut the last line. Read blocking: the binder is dead, the file small.
    *lines, _cut = out.read_text().split("\n")  # noqa: ASYNC240
    _read(ledger, lines)


@pytest.mark.parametrize("backend", ["sqlite", "etcd"])
def test_kill_9_during_gang_binds_leaves_every_group_whole_or_unbound(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        url = f"sqlite://{tmp_path / 'podium.db'}"
    else:
        member: EtcdCluster = request.getfixturevalue("etcd_member")
        url = member.url(f"gangs-{uuid.uuid4().hex[:12]}")
    rng = random.Random(SEED)
    ledger = Ledger()

    async def main() -> None:
        with (tmp_path / "forks.err").open("wb") as err:
            process = await trio.lowlevel.open_process(
                [sys.executable, str(CHILD), "--fork-server"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        try:
            forks = Forks(process)
            with trio.fail_after(30):
                await forks.started()
            for run in range(KILLS):
                await _run_once(forks, url, run, rng, ledger, tmp_path / f"binder-{run}.out")
                _check(ledger, await _recover(url))
        finally:
            process.kill()
            await process.wait()

    trio.run(main)
    large = sum(1 for g in ledger.bound if ledger.sizes[g] >= LARGE)
    print(
        f"\ngang crash test ({backend}): {KILLS} kills, {ledger.kills_in_bind} with a bind in "
        f"flight ({ledger.outcomes['whole']} groups then bound whole, {ledger.outcomes['none']} "
        f"not at all; {ledger.large_in_flight} of them of {LARGE}+ members), "
        f"{len(ledger.bound)} groups acknowledged bound ({large} of {LARGE}+ members; "
        f"{sum(ledger.sizes[g] for g in ledger.bound)} pods), {len(ledger.refused)} refused"
    )
    assert ledger.bound, "the child never bound a group: the test proved nothing"
    assert ledger.kills_in_bind, "no kill came during a bind: the test proved nothing"
