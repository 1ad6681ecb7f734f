"""A sustained-load generator and its checks: many writing clients and watchers on one daemon
for minutes, then proof that nothing was lost, repeated or leaked (docs/reliability.md,
"Sustained load"; ``ops/sustained-load.py`` runs it, ``tests/e2e/test_sustained.py`` in short).

Kubernetes counterpart: none in the scheduler (scheduler_perf measures a burst, not a soak).
The watchers behave as client-go's reflector (tools/cache/reflector.go@v1.14 ``ListAndWatch``):
watch from a revision and, when the watch is ended, watch again from the last one seen.

The load is a closed loop: each writer sends its next request when the last one is answered,
and the writers wait while the slowest watcher is more than :attr:`LoadSpec.max_lag` revisions
behind. The rate is so the one the daemon and this process sustain with every watcher keeping
up, rather than a backlog that grows until watchers are cut off.

- each writer owns a namespace; it creates pods in batches (:attr:`LoadSpec.batch` per put),
  deletes its oldest ones beyond :attr:`LoadSpec.live`, and now and then re-puts a live pod
  with a new label, so the store holds a steady population and memory can level off;
- each watcher watches every kind from the start revision on its own connection; cut off with
  ``overloaded``, it watches again from the revision the daemon names.

The checks:

- per watcher, revisions are exactly start+1, start+2, ...: strictly increasing, none twice,
  none missing; a cut-off's resume revision is the last one the watcher saw;
- every observer agrees on every revision (:class:`Ledger`): each writer's acknowledgement
  (created → Added, replaced → Modified, deleted → Deleted, of that pod) and each watcher's
  event name the same change;
- after the load, once the daemon is quiet, every watcher reached the final revision, and a
  full ``get`` finds exactly each writer's acknowledged live pods, with their uids;
- no request failed, and the daemon logged no error;
- the daemon's RSS (``VmRSS``, sampled every :attr:`LoadSpec.sample_seconds`) at the end is
  within :data:`RSS_TOLERANCE` of the sample at minute 1 (checked for runs of 2 minutes or
  more; shorter runs compare the middle with the end and only report it).

Owns: the clients, their ledgers, and (unless a server is given) a ``podium serve`` child in
a temporary directory.
Emits: puts, deletes, watches, stats and one get; a progress line per sample through the
caller's ``progress``.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
import resource
import secrets
import tempfile
from array import array
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import msgspec
import trio

from podium.cli.bench.process import DaemonError, ServeProcess
from podium.cli.bench.workload import DEFAULT_POD, ZONES, make_node, put_all
from podium.protocol import objects as o
from podium.protocol.client import Client, RemoteError, connect
from podium.protocol.errors import PodiumError
from podium.protocol.wire import Event, ObjectRef, ObjectStatus

__all__ = [
    "RSS_TOLERANCE",
    "Ledger",
    "LoadReport",
    "LoadSpec",
    "WatchCheck",
    "daemon_rss_bytes",
    "run",
    "run_load",
    "settle",
]

RSS_TOLERANCE = 0.10
"""The daemon's RSS at the end may differ from minute 1's by this fraction."""
RSS_CHECK_SECONDS = 120.0
"""Runs at least this long check the RSS; shorter ones only report it."""
SETTLE_SECONDS = 120.0
"""After the load: how long the daemon may take to go quiet, and the watchers to catch up."""
MAX_MESSAGES = 20
"""Violations and errors kept word for word; the rest are only counted."""
STOP_SECONDS = 60.0
"""The longest the daemon this module starts may take to stop on SIGTERM."""

_ACTION_EVENT = {"created": "Added", "replaced": "Modified", "deleted": "Deleted"}
_MASK = (1 << 64) - 1
_ERROR_LINE = re.compile(r"^\S+ (ERROR|CRITICAL) ")


@dataclass(frozen=True)
class LoadSpec:
    """What to run.

    Attributes:
        seconds: how long the writers write, after the warm-up.
        writers: writing clients, each on its own connection and in its own namespace.
        watchers: watching clients, each on its own connection.
        nodes: nodes created before the load (scheduler_perf's node, 4 CPU, 110 pods).
        batch: pods per put, and at most this many per delete.
        live: pods each writer keeps; it deletes its oldest beyond this.
        update_every: every this many rounds a writer re-puts one live pod with a new label.
        max_lag: writers wait while the slowest watcher is more than this many revisions
            behind the newest acknowledged write, until it is within half of it (0: never
            wait; the watchers may then fall behind and be cut off).
        warmup_revisions: before the clock starts, write until this many revisions have been
            made (the daemon keeps its latest 65,536 changes in memory, so its RSS levels off
            only after as many); checked like the rest, but RSS and rates are from the clock on.
        sample_seconds: how often the daemon's RSS is read (and progress reported).
        seed: seeds which pod each update picks.
    """

    seconds: float
    writers: int = 50
    watchers: int = 20
    nodes: int = 500
    batch: int = 5
    live: int = 40
    update_every: int = 3
    max_lag: int = 2000
    warmup_revisions: int = 0
    sample_seconds: float = 10.0
    seed: int = 1


class _Problems:
    """Messages of one kind (violations or errors): the first :data:`MAX_MESSAGES` kept."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.count = 0

    def add(self, message: str) -> None:
        self.count += 1
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(message)

    def lines(self) -> list[str]:
        more = self.count - len(self.messages)
        return self.messages + ([f"... and {more} more"] if more else [])


class Ledger:
    """What each revision after ``start`` was, as its first observer (a writer's
    acknowledgement or a watcher's event) told it; every later observer must agree.

    One 8-byte digest per revision, so a run of millions of changes stays small here.

    Attributes:
        start: the revision the load began after.
        violations: disagreements and revisions before the start.
    """

    def __init__(self, start: int) -> None:
        self.start = start
        self.violations = _Problems()
        self._digests = array("Q")

    def observe(
        self, revision: int, type_: str, kind: str, namespace: str, name: str, who: str
    ) -> None:
        """Record that ``who`` was told revision ``revision`` is ``type_`` of the object."""
        index = revision - self.start - 1
        if index < 0:
            self.violations.add(
                f"{who}: revision {revision} is not after the start revision {self.start}"
            )
            return
        if index >= len(self._digests):
            grow = max(index + 1 - len(self._digests), 1 << 16)
            self._digests.frombytes(bytes(grow * self._digests.itemsize))
        digest = (hash((type_, kind, namespace, name)) & _MASK) | 1
        seen = self._digests[index]
        if seen == 0:
            self._digests[index] = digest
        elif seen != digest:
            self.violations.add(
                f"revision {revision}: {who} was told {type_} {kind} {namespace}/{name}; "
                "an earlier observer was told another change"
            )

    def unobserved(self, through: int) -> int:
        """How many revisions in (start, through] nobody observed."""
        count = through - self.start
        if count <= 0:
            return 0
        have = self._digests[:count]
        return have.count(0) + max(0, count - len(have))


@dataclass
class WatchCheck:
    """One watcher's view: every event must be the revision after the last one.

    Attributes:
        name: for messages (``watcher 3``).
        ledger: where events are cross-checked.
        position: the last revision seen (the start revision before any).
        events: events seen; cutoffs: ``overloaded`` cut-offs survived.
        types: events by type.
        ended: the watcher stopped for good (an error, recorded by the caller).
    """

    name: str
    ledger: Ledger
    position: int
    events: int = 0
    cutoffs: int = 0
    types: Counter[str] = field(default_factory=Counter)
    ended: bool = False

    def event(self, ev: Event) -> None:
        """Check and record one event."""
        if ev.revision <= self.position:
            self.ledger.violations.add(
                f"{self.name}: revision {ev.revision} after {self.position} (a repeat or out "
                "of order)"
            )
            return
        if ev.revision != self.position + 1:
            self.ledger.violations.add(
                f"{self.name}: revisions {self.position + 1}..{ev.revision - 1} missing"
            )
        self.position = ev.revision
        self.events += 1
        self.types[ev.type] += 1
        self.ledger.observe(ev.revision, ev.type, ev.kind, ev.namespace, ev.name, self.name)

    def cut_off(self, resume: int | None) -> int:
        """An ``overloaded`` end naming ``resume``: the revision to watch again from."""
        self.cutoffs += 1
        if resume != self.position:
            self.ledger.violations.add(
                f"{self.name}: cut off with resume revision {resume}, but it saw up to "
                f"{self.position}"
            )
        return self.position if resume is None else resume


@dataclass
class LoadReport:
    """What a run did and found.

    Attributes:
        spec: what was asked.
        seconds: how long the writers wrote after the warm-up (measured).
        warmup_seconds: how long the warm-up took.
        start_revision, final_revision: the load's revisions are (start, final].
        puts, deletes, updates: acknowledged requests by sort.
        changes: object changes those requests acknowledged.
        events: events delivered, over every watcher.
        cutoffs: watches cut off with ``overloaded`` (and resumed).
        held, held_seconds: how often and how long the writers waited for the watchers.
        daemon_cpu, client_cpu: CPU seconds the daemon (None: unknown) and this process
            spent while the writers wrote.
        types: the events one watcher saw, by type.
        live_pods: pods the writers held at the end.
        rss: ``(seconds since the load began, bytes)`` samples of the daemon's VmRSS.
        rss_revisions: changes the load had made by each sample.
        errors: failed requests and daemon errors (must be none).
        violations: broken promises (must be none).
    """

    spec: LoadSpec
    seconds: float = 0.0
    warmup_seconds: float = 0.0
    start_revision: int = 0
    final_revision: int = 0
    puts: int = 0
    deletes: int = 0
    updates: int = 0
    changes: int = 0
    events: int = 0
    cutoffs: int = 0
    held: int = 0
    held_seconds: float = 0.0
    daemon_cpu: float | None = None
    client_cpu: float = 0.0
    types: Counter[str] = field(default_factory=Counter)
    live_pods: int = 0
    rss: list[tuple[float, int]] = field(default_factory=list)
    rss_revisions: list[int] = field(default_factory=list)
    errors: _Problems = field(default_factory=_Problems)
    violations: _Problems = field(default_factory=_Problems)

    @property
    def ok(self) -> bool:
        """No error and no violation."""
        return not self.errors.count and not self.violations.count

    def rss_pair(self) -> tuple[tuple[float, int], tuple[float, int]] | None:
        """The samples compared: at minute 1 (the middle of a shorter run) and the last."""
        if len(self.rss) < 2:
            return None
        last = self.rss[-1]
        at = min(60.0, last[0] / 2)
        first = min(self.rss[:-1], key=lambda s: abs(s[0] - at))
        return first, last

    def rss_violation(self) -> str | None:
        """Why the RSS did not hold level, for a run long enough to check it; else None."""
        pair = self.rss_pair()
        if pair is None or self.seconds < RSS_CHECK_SECONDS:
            return None
        (t0, r0), (t1, r1) = pair
        if not r0 or abs(r1 - r0) / r0 <= RSS_TOLERANCE:
            return None
        return (
            f"daemon RSS went from {r0 / 2**20:.1f} MiB at {t0:.0f} s to "
            f"{r1 / 2**20:.1f} MiB at {t1:.0f} s, more than {RSS_TOLERANCE:.0%}"
        )

    def lines(self) -> list[str]:
        """A summary for people."""
        s, secs = self.spec, max(self.seconds + self.warmup_seconds, 1e-9)
        clock = max(self.seconds, 1e-9)
        requests = self.puts + self.deletes + self.updates
        revisions = self.final_revision - self.start_revision
        warmup = (
            f" after a warm-up of {self.warmup_seconds:.1f} s ({s.warmup_revisions} revisions)"
            if s.warmup_revisions
            else ""
        )
        out = [
            f"load: {s.writers} writers, {s.watchers} watchers, {s.nodes} nodes, "
            f"{self.seconds:.1f} s{warmup} (batch {s.batch}, {s.live} live pods per writer)",
            f"writes: {requests} requests acknowledged ({requests / secs:.0f}/s): "
            f"{self.puts} puts, {self.deletes} deletes, {self.updates} updates; "
            f"{self.changes} object changes ({self.changes / secs:.0f}/s)",
            f"revisions: {revisions} ({self.start_revision + 1}..{self.final_revision}), "
            f"of which "
            + ", ".join(f"{t} {n}" for t, n in sorted(self.types.items()))
            + f"; {self.live_pods} live pods at the end",
            f"events delivered: {self.events} over {s.watchers} watchers "
            f"({self.events / secs:.0f}/s); cut-offs (overloaded, resumed): {self.cutoffs}",
            f"writers held for the watchers (lag over {s.max_lag} revisions): {self.held} "
            f"times, {self.held_seconds:.1f} s in all",
            f"CPU after the warm-up: load generator {self.client_cpu:.1f} s "
            f"({self.client_cpu / clock:.0%} of a core), daemon "
            + (
                "unknown"
                if self.daemon_cpu is None
                else f"{self.daemon_cpu:.1f} s ({self.daemon_cpu / clock:.0%} of a core)"
            ),
        ]
        pair = self.rss_pair()
        if pair is None:
            out.append("daemon RSS: not sampled")
        else:
            (t0, r0), (t1, r1) = pair
            change = (r1 - r0) / r0 if r0 else 0.0
            made = dict(zip((t for t, _ in self.rss), self.rss_revisions, strict=False))
            checked = (
                "checked" if self.seconds >= RSS_CHECK_SECONDS else "not checked: under 2 minutes"
            )
            out.append(
                f"daemon RSS: {r0 / 2**20:.1f} MiB at {t0:.0f} s (after {made.get(t0, 0)} "
                f"revisions), {r1 / 2**20:.1f} MiB at {t1:.0f} s (after {made.get(t1, 0)}): "
                f"{change:+.1%} (limit ±{RSS_TOLERANCE:.0%}, {checked}); MiB every "
                f"{s.sample_seconds:.0f} s: " + " ".join(f"{r / 2**20:.0f}" for _, r in self.rss)
            )
        out.append(f"errors: {self.errors.count}")
        out += [f"  {m}" for m in self.errors.lines()]
        out.append(f"violations: {self.violations.count}")
        out += [f"  {m}" for m in self.violations.lines()]
        return out


def _cpu_seconds(pid: int | None) -> float:
    """User and system CPU time of process ``pid`` (None: this one)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def daemon_rss_bytes(pid: int) -> int:
    """The resident memory of process ``pid`` (``VmRSS`` from /proc), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise ValueError(f"/proc/{pid}/status has no VmRSS line")


# --------------------------------------------------------------------------- pacing


class _Deadline:
    """When the writers stop: unknown (infinite) until the warm-up is over."""

    def __init__(self) -> None:
        self.at = math.inf


class _Gate:
    """Holds the writers while the slowest watcher lags too far behind (:attr:`LoadSpec.max_lag`):
    the load is then what the daemon and the watchers sustain together, not a backlog that
    grows until watchers are cut off. With ``max_lag`` 0 it never closes."""

    def __init__(self, checks: list[WatchCheck], max_lag: int) -> None:
        self.checks = checks
        self.max_lag = max_lag
        self.head = 0
        self.closures = 0
        self.held_seconds = 0.0
        self._closed: trio.Event | None = None
        self._reopen_at = 0

    def _slowest(self) -> int:
        return min((c.position for c in self.checks if not c.ended), default=self.head)

    def acknowledged(self, revision: int) -> None:
        self.head = max(self.head, revision)

    def lag(self) -> int:
        """How far the slowest watcher is behind the newest acknowledged write."""
        return self.head - self._slowest()

    def progressed(self, revision: int | None) -> None:
        """A watcher reached ``revision`` (None: it ended): open once all are close enough."""
        if (
            self._closed is not None
            and (revision is None or revision >= self._reopen_at)
            and self._slowest() >= self._reopen_at
        ):
            self._closed.set()
            self._closed = None

    async def wait(self, deadline: float) -> None:
        """Return at once, or when the watchers caught up, or at ``deadline``."""
        if self._closed is None:
            if not self.max_lag or self.lag() <= self.max_lag:
                return
            self._closed = trio.Event()
            self._reopen_at = self.head - self.max_lag // 2
            self.closures += 1
            began = trio.current_time()
            with trio.move_on_at(deadline):
                await self._closed.wait()
            self.held_seconds += trio.current_time() - began
            return
        with trio.move_on_at(deadline):
            await self._closed.wait()


# --------------------------------------------------------------------------- writers


class _Writer:
    """One writing client: its namespace, its live pods (oldest first) and its counts."""

    def __init__(
        self, index: int, namespace: str, spec: LoadSpec, ledger: Ledger, gate: _Gate
    ) -> None:
        self.name = f"writer {index}"
        self.namespace = namespace
        self.spec = spec
        self.ledger = ledger
        self.gate = gate
        self.live: deque[tuple[str, str]] = deque()  # (name, uid)
        self.created = 0
        self.generation = 0
        self.puts = self.deletes = self.updates = self.changes = 0
        self.failed = False
        self._rng = random.Random(f"{spec.seed}-{index}")

    def _pod(self, name: str, labels: dict[str, str]) -> o.Pod:
        meta = msgspec.structs.replace(
            DEFAULT_POD.metadata, name=name, namespace=self.namespace, labels=labels
        )
        return msgspec.structs.replace(DEFAULT_POD, metadata=meta)

    def _acknowledged(
        self, statuses: list[ObjectStatus], names: list[str], action: str
    ) -> list[ObjectStatus]:
        if [s.name for s in statuses] != names:
            self.ledger.violations.add(
                f"{self.name}: acknowledged {[s.name for s in statuses]} for {names}"
            )
        for s in statuses:
            if s.action != action:
                self.ledger.violations.add(
                    f"{self.name}: pod {s.namespace}/{s.name} was {s.action}, expected {action}"
                )
                continue
            self.changes += 1
            self.gate.acknowledged(int(s.resource_version))
            self.ledger.observe(
                int(s.resource_version),
                _ACTION_EVENT[action],
                "Pod",
                s.namespace,
                s.name,
                self.name,
            )
        return statuses

    async def run(self, server: str, deadline: _Deadline, errors: _Problems) -> None:
        try:
            async with connect(server) as client:
                rounds = 0
                while True:
                    await self.gate.wait(deadline.at)
                    if trio.current_time() >= deadline.at:
                        break
                    await self._create(client)
                    if len(self.live) > self.spec.live:
                        await self._delete(
                            client, min(self.spec.batch, len(self.live) - self.spec.live)
                        )
                    rounds += 1
                    if rounds % self.spec.update_every == 0 and self.live:
                        await self._update(client)
        except PodiumError as exc:
            # The request in flight may have landed or not: this writer's pods are not checked.
            self.failed = True
            errors.add(f"{self.name}: {type(exc).__name__}: {exc}")

    async def _create(self, client: Client) -> None:
        names = [f"p{self.created + i}" for i in range(self.spec.batch)]
        self.created += len(names)
        reply = await client.put([self._pod(n, {"app": "load"}) for n in names])
        self.puts += 1
        for s in self._acknowledged(reply.objects, names, "created"):
            self.live.append((s.name, s.uid))

    async def _delete(self, client: Client, count: int) -> None:
        victims = [self.live.popleft() for _ in range(count)]
        names = [n for n, _ in victims]
        refs = [ObjectRef(kind="Pod", name=n, namespace=self.namespace) for n in names]
        reply = await client.delete(refs)
        self.deletes += 1
        self._acknowledged(reply.objects, names, "deleted")

    async def _update(self, client: Client) -> None:
        index = self._rng.randrange(len(self.live))
        name, uid = self.live[index]
        self.generation += 1
        pod = self._pod(name, {"app": "load", "generation": str(self.generation)})
        reply = await client.put([pod])
        self.updates += 1
        for s in self._acknowledged(reply.objects, [name], "replaced"):
            if s.uid != uid:
                self.ledger.violations.add(
                    f"{self.name}: re-put of {s.namespace}/{name} changed its uid {uid} to {s.uid}"
                )

    def verify(self, present: dict[str, str]) -> None:
        """``present``: this namespace's pods in the daemon (name -> uid) after the load."""
        want = dict(self.live)
        for name, uid in want.items():
            if name not in present:
                self.ledger.violations.add(f"{self.name}: acknowledged pod {name} is missing")
            elif present[name] != uid:
                self.ledger.violations.add(
                    f"{self.name}: pod {name} has uid {present[name]}, acknowledged {uid}"
                )
        for name in present.keys() - want.keys():
            self.ledger.violations.add(
                f"{self.name}: pod {name} is present, yet its delete was acknowledged"
            )


# --------------------------------------------------------------------------- watchers


async def _watch(
    server: str,
    check: WatchCheck,
    gate: _Gate,
    errors: _Problems,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Watch every kind from the check's position until cancelled, resuming after cut-offs."""
    started = False
    resume = check.position
    try:
        async with connect(server) as client:
            while True:
                try:
                    async with client.watch(from_revision=resume) as events:
                        if not started:
                            started = True
                            task_status.started()
                        async for ev in events:
                            check.event(ev)
                            gate.progressed(ev.revision)
                    raise PodiumError(f"{check.name}: the watch ended without an error")
                except RemoteError as exc:
                    if exc.code != "overloaded" or exc.revision is None:
                        raise
                    resume = check.cut_off(exc.revision)
    except PodiumError as exc:
        check.ended = True
        gate.progressed(None)  # the gate no longer waits for this watcher
        errors.add(f"{check.name}: {type(exc).__name__}: {exc}")
        if not started:
            task_status.started()


# --------------------------------------------------------------------------- the run


async def settle(client: Client) -> int:
    """Wait until nothing is active, backing off or assumed and the revision holds still;
    that revision. (Bound it with a cancel scope.)"""
    while True:
        stats = await client.stats()
        if not (stats.pending.active or stats.pending.backoff or stats.assumed):
            await trio.sleep(0.3)
            again = await client.stats()
            if again.revision == stats.revision:
                return stats.revision
        await trio.sleep(0.1)


async def run_load(
    server: str,
    spec: LoadSpec,
    *,
    pid: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> LoadReport:
    """Run the load against the daemon at ``server`` and check it (see the module docstring).

    Args:
        server: the daemon's address.
        spec: what to run.
        pid: the daemon's process id, to sample its RSS (None: not sampled).
        progress: called with a line at each sample.
    """
    report = LoadReport(spec)
    run_id = secrets.token_hex(3)
    async with connect(server) as admin:
        await put_all(admin, [make_node(i, ZONES[i % len(ZONES)]) for i in range(spec.nodes)])
        start = (await admin.stats()).revision
        ledger = Ledger(start)
        report.violations = ledger.violations
        report.start_revision = start
        checks = [WatchCheck(f"watcher {i}", ledger, start) for i in range(spec.watchers)]
        gate = _Gate(checks, spec.max_lag)
        gate.acknowledged(start)
        writers = [
            _Writer(w, f"load-{run_id}-{w}", spec, ledger, gate) for w in range(spec.writers)
        ]

        def changes() -> int:
            return sum(w.changes for w in writers)

        async def sample(began: float, deadline: float) -> None:
            k, base = 0, changes()
            while True:
                at = min(began + k * spec.sample_seconds, deadline)
                await trio.sleep_until(at)
                t = at - began
                rss = daemon_rss_bytes(pid) if pid is not None else None
                if rss is not None:
                    report.rss.append((t, rss))
                    report.rss_revisions.append(gate.head - start)
                if progress is not None and t > 0:
                    events = sum(c.events for c in checks)
                    cutoffs = sum(c.cutoffs for c in checks)
                    mib = f"{rss / 2**20:.1f} MiB" if rss is not None else "n/a"
                    progress(
                        f"{t:6.0f} s  {changes()} changes ({(changes() - base) / t:.0f}/s)  "
                        f"{events} events delivered  lag {gate.lag()}  {cutoffs} cut-offs  "
                        f"errors {report.errors.count}  RSS {mib}"
                    )
                if at >= deadline:
                    return
                k += 1

        async with trio.open_nursery() as watching:
            for check in checks:
                await watching.start(_watch, server, check, gate, report.errors)
            deadline = _Deadline()
            async with trio.open_nursery() as load:
                warming = trio.current_time()
                for writer in writers:
                    load.start_soon(writer.run, server, deadline, report.errors)
                while gate.head - start < spec.warmup_revisions:
                    if all(w.failed for w in writers):
                        break
                    await trio.sleep(0.1)
                began = trio.current_time()
                report.warmup_seconds = began - warming
                deadline.at = began + spec.seconds
                cpu = _cpu_seconds(None), _cpu_seconds(pid) if pid is not None else 0.0
                load.start_soon(sample, began, deadline.at)
            report.seconds = trio.current_time() - began
            report.client_cpu = _cpu_seconds(None) - cpu[0]
            if pid is not None:
                report.daemon_cpu = _cpu_seconds(pid) - cpu[1]
            final: int | None = None
            with trio.move_on_after(SETTLE_SECONDS):
                final = await settle(admin)
            if final is None:
                report.errors.add(f"the daemon did not go quiet within {SETTLE_SECONDS:.0f} s")
                final = (await admin.stats()).revision
            with trio.move_on_after(SETTLE_SECONDS):
                while True:  # polled: the watchers are busy enough without a wake-up
                    if all(c.position >= final or c.ended for c in checks):
                        break
                    await trio.sleep(0.05)
            watching.cancel_scope.cancel()

        report.final_revision = final
        for check in checks:
            if check.position < final:
                ledger.violations.add(
                    f"{check.name}: saw up to revision {check.position} of {final}"
                )
        missed = ledger.unobserved(final)
        if missed:
            ledger.violations.add(f"{missed} revisions up to {final} were seen by nobody")
        pods = (await admin.get("Pod", namespace=None)).items
        present: dict[str, dict[str, str]] = {}
        for pod in pods:
            present.setdefault(pod.metadata.namespace, {})[pod.metadata.name] = pod.metadata.uid
        for writer in writers:
            if not writer.failed:
                writer.verify(present.get(writer.namespace, {}))

    report.puts = sum(w.puts for w in writers)
    report.deletes = sum(w.deletes for w in writers)
    report.updates = sum(w.updates for w in writers)
    report.changes = changes()
    report.live_pods = sum(len(w.live) for w in writers)
    report.events = sum(c.events for c in checks)
    report.cutoffs = sum(c.cutoffs for c in checks)
    report.held, report.held_seconds = gate.closures, gate.held_seconds
    if checks:
        report.types = checks[0].types
    if (leak := report.rss_violation()) is not None:
        ledger.violations.add(leak)
    return report


def run(
    spec: LoadSpec,
    *,
    server: str | None = None,
    pid: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> LoadReport:
    """Run :func:`run_load`; without ``server``, on a fresh ``podium serve`` (SQLite, in a
    temporary directory) that is stopped afterwards (an unclean exit, or an error in its log,
    is counted as an error)."""
    if server is not None:
        return trio.run(partial(run_load, server, spec, pid=pid, progress=progress))
    with tempfile.TemporaryDirectory(prefix="podium-load-") as tmp:
        daemon = ServeProcess.start_in(Path(tmp))
        try:
            report = trio.run(
                partial(run_load, daemon.address, spec, pid=daemon.pid, progress=progress)
            )
        except BaseException:
            with contextlib.suppress(DaemonError):
                daemon.stop_cleanly(STOP_SECONDS)
            raise
        try:
            daemon.stop_cleanly(STOP_SECONDS)
        except DaemonError as exc:
            report.errors.add(str(exc))
        for line in daemon.stderr_text().splitlines():
            if _ERROR_LINE.match(line):
                report.errors.add(f"daemon log: {line}")
    return report
