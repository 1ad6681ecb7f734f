"""``podium bench``: the Kubernetes scheduler's benchmark workloads, end to end through the protocol.

Kubernetes counterpart: ``test/integration/scheduler_perf`` (``config/performance-config.yaml``
and its pod templates; ``util.go``'s ``throughputCollector`` for the 1 s-window metric).

Each workload at each size starts a fresh ``podium serve`` (or uses ``--server``), creates the
nodes and the pods already running, then creates the measured pods the way a client would (Put
requests of :data:`PUT_BATCH` pods) while a watch counts their bindings. Reported per workload
and size:

- throughput: pods bound per second in 1 s windows, sampled as scheduler_perf's
  ``throughputCollector`` samples them (:func:`throughput_windows`: the first window with a pod
  bound is skipped, a window with none is folded into the next, the last partial one is
  dropped); average and p50/p90/p99 of the windows, exactly as scheduler_perf computes them
  (the mean of the windows; percentile ``p`` is the window at index ``ceil(len * p / 100) - 1``
  of the sorted list). A run too short for one window reports its overall rate (measured pods
  over the measured wall time) instead, and says so (``windowed: false``);
- attempt latency: p50/p90/p99 of ``scheduler_scheduling_attempt_duration_seconds{result=
  "scheduled"}`` over the measured phase, interpolated inside buckets as Prometheus'
  ``histogram_quantile`` does;
- the daemon's peak RSS (``VmHWM``) and the CPU seconds it spent in the measured phase;
- after the run, a restart on the same database: ``recovery_seconds`` (the daemon's own
  ``podium_recovery_duration_seconds``) and ``restart_seconds`` (start to ready line).

A gang workload (issue 24: each gang a PodGroup whose pods must be placed all or nothing)
reports besides, under ``gangs`` (:class:`GangTracker`, :class:`GangReport`): how many groups
ended fully bound, partly bound and not bound, and the p50/p99 of a group's time from its last
pod's creation to its last member's bind. A group left partly bound fails the run
(:class:`PartlyBoundError`); where its run ends is :meth:`GangTracker.ended`'s rule, as the
gangs may ask more than the cluster holds.

The workloads and their objects are :mod:`podium.cli.bench.workload`'s; the command line,
progress bar and table are ``podium bench``'s (:mod:`podium.cli.bench.command`).

Owns: nothing shared; each run's daemon is a child process in a temporary directory
(:class:`~podium.cli.bench.process.ServeProcess`).
Emits: puts, deletes, watches and stats through the client; progress through the caller's
callback.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
import tempfile
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import trio
from prometheus_client.parser import text_string_to_metric_families

from podium.cli.bench.process import DaemonError, ServeProcess
from podium.cli.bench.workload import (
    CHURN_POD,
    PODS_PER_NODE,
    WORKLOADS,
    ZONES,
    Gangs,
    Workload,
    free_cpu,
    make_node,
    make_pods,
    put_all,
)
from podium.protocol import objects as o
from podium.protocol.client import Client, RemoteError, connect
from podium.protocol.errors import PodiumError
from podium.protocol.gangs import pod_group_key
from podium.protocol.wire import ObjectRef

__all__ = [
    "SETTLE_SECONDS",
    "BenchError",
    "GangReport",
    "GangTracker",
    "PartlyBoundError",
    "RunResult",
    "check_gangs",
    "histogram_quantile",
    "nearest_rank",
    "plan",
    "run_one",
    "summarize",
    "throughput_windows",
    "window_stats",
]

WINDOW_SECONDS = 1.0
"""scheduler_perf's ``throughputSampleInterval``."""

STALL_SECONDS = 60.0
"""A run with no measured pod bound for this long fails (a scheduler that stopped)."""

SETTLE_SECONDS = 3.0
"""A gang run whose remaining gangs no longer fit ends after this long without a bind
(:meth:`GangTracker.ended`)."""

START_SECONDS = 300.0
"""The longest a daemon may take to print its ready line (a restart first recovers the whole
cluster from its database)."""

STOP_SECONDS = 60.0
"""The longest a daemon may take to stop on SIGTERM."""


class BenchError(PodiumError):
    """A benchmark run could not complete: its setup took too long, its pods stopped binding,
    or it asks for more pods than its cluster can place. (A daemon that does not start or stop
    raises :class:`~podium.cli.bench.process.DaemonError`.)"""


class PartlyBoundError(BenchError):
    """A gang workload's run ended with a pod group partly bound: some of its members bound
    and the others not, which all-or-nothing forbids (the run's figures are not reported)."""


# --------------------------------------------------------------------------- statistics


def throughput_windows(samples: Sequence[tuple[float, int]]) -> list[float]:
    """The 1 s throughput windows of a run, as scheduler_perf's ``throughputCollector.run``
    computes them (test/integration/scheduler_perf/util.go, kubernetes/kubernetes@0c5e832a):

    - a sample is taken every :data:`WINDOW_SECONDS`; samples before the first pod is bound
      are ignored;
    - the first sample with a pod bound only starts the clock: "It's likely to be an outlier
      because sampling and creating pods get started independently";
    - a sample with no new pod bound records nothing yet; the next one that has some records
      its rate (pods over the time since the last recorded sample) once for each window it
      spans, "to keep percentiles accurate";
    - what is bound after the last sample (the last, partial window) is not recorded.

    Args:
        samples: (time in seconds, measured pods bound so far) at each tick, in order.

    Returns:
        Pods per second, one entry per window.
    """
    windows: list[float] = []
    started = False
    last_count, last_time, skipped = 0, 0.0, 0
    for now, bound in samples:
        if bound == 0:
            continue
        if not started:
            started = True
            last_count, last_time = bound, now
            continue
        new = bound - last_count
        if new == 0:
            skipped += 1
            continue
        rate = new / (now - last_time)
        windows.extend([rate] * (skipped + 1))
        last_count, last_time, skipped = bound, now, 0
    return windows


def window_stats(windows: Sequence[float]) -> dict[str, float]:
    """scheduler_perf's SchedulingThroughput summary of 1 s windows (pods/s)."""
    if not windows:
        return {"average": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}
    ordered = sorted(windows)
    n = len(ordered)

    def perc(p: int) -> float:
        return ordered[math.ceil(n * p / 100) - 1]

    return {"average": sum(ordered) / n, "p50": perc(50), "p90": perc(90), "p99": perc(99)}


def _throughput(windows: Sequence[float], pods: int, seconds: float) -> dict[str, float]:
    """The windows' summary; for a run too short for one window, its overall rate in every
    figure (what the issue's table calls "overall")."""
    if windows:
        return window_stats(windows)
    overall = pods / seconds if seconds > 0 else 0.0
    return dict.fromkeys(("average", "p50", "p90", "p99"), overall)


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float:
    """Prometheus' ``histogram_quantile``: ``buckets`` are (upper bound, cumulative count),
    sorted, ending with +Inf. Linear inside a bucket; the +Inf bucket answers its lower bound.
    Returns NaN for an empty histogram."""
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if math.isinf(upper):
                return lower
            if count == below:
                return upper
            return lower + (upper - lower) * (rank - below) / (count - below)
        lower, below = upper, count
    return lower


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


# --------------------------------------------------------------------------- gangs


def nearest_rank(values: Sequence[float], p: int) -> float:
    """Percentile ``p`` of ``values`` as scheduler_perf takes it from its windows: the value at
    index ``ceil(len * p / 100) - 1`` of the sorted list (NaN when there is none)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(math.ceil(len(ordered) * p / 100) - 1, 0)]


@dataclass
class GangReport:
    """A gang workload's groups at the end of a run.

    Attributes:
        gang_size: pods per gang (each group's ``minCount``).
        ask_percent: what the gangs ask, in percent of the free CPU (before rounding down to
            whole gangs).
        free_cpu: the CPUs free for the measured pods when they were created.
        groups: the groups created.
        fully_bound, partly_bound, not_bound: the groups with every member bound, with some
            but not all, with none (``partly_bound`` is 0 in any reported run).
        pods_bound: measured pods bound.
        last_pod_to_bound_ms: p50 and p99 (:func:`nearest_rank`) over the fully bound groups
            of the time from the reply to the Put that carried a group's last pod to the Bound
            event of its last member to bind (NaN when no group was fully bound).
        partly: ``namespace/name (bound of members)`` of each partly bound group, for the
            error that fails the run (not in the JSON).
    """

    gang_size: int
    ask_percent: int
    free_cpu: int
    groups: int
    fully_bound: int
    partly_bound: int
    not_bound: int
    pods_bound: int
    last_pod_to_bound_ms: dict[str, float]
    partly: list[str] = field(default_factory=list)

    def counts(self) -> str:
        """The groups by outcome, for people."""
        return (
            f"{self.fully_bound} of {self.groups} pod groups fully bound, "
            f"{self.partly_bound} partly bound, {self.not_bound} not bound"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "gang_size": self.gang_size,
            "ask_percent": self.ask_percent,
            "free_cpu": self.free_cpu,
            "groups": self.groups,
            "fully_bound": self.fully_bound,
            "partly_bound": self.partly_bound,
            "not_bound": self.not_bound,
            "pods_bound": self.pods_bound,
            "last_pod_to_bound_ms": self.last_pod_to_bound_ms,
        }


class GangTracker:
    """A gang workload's groups as their pods are created and bound, and where its run ends.

    Sans-IO: the measurement tells it each Put reply (:meth:`created`), the end of the Puts
    (:meth:`all_created`) and each measured pod's Bound event (:meth:`bound`), each with the
    time it saw it; :meth:`ended` and :meth:`report` answer from that alone. A pod's group is
    the one it names (``spec.schedulingGroup``, :func:`~podium.protocol.gangs.pod_group_key`).

    The end of a run. A workload whose gangs all fit ends, as any other, when every measured
    pod is bound: here when every group is fully bound. One that asks more than the cluster
    holds never gets there, so its run ends once both

    - the cluster has no room left for the smallest remaining gang: the free CPU when the
      pods were created, less one CPU per measured pod bound, is below the fewest members any
      group not fully bound still lacks (every pod asks 1 CPU and a node holds whole CPUs, so
      that many free CPUs are that many places, wherever they are); and
    - no measured pod was bound for :data:`SETTLE_SECONDS` (counted from the last Put's reply
      if it came later).

    The settle time lets the binds already on their way arrive before the groups are counted.
    A gang's members are bound in one store transaction, but their Bound events reach this
    watch a little after the daemon decided, and perhaps over more than one frame: counted at
    once, a gang bound at the last moment would show as not bound, or as partly bound when
    only some of its events had come. A few seconds is far above that delay (milliseconds)
    and short beside a run. Until both hold the run goes on, and :data:`STALL_SECONDS` without
    a bind while a gang still has room fails it as a stall, as it fails any other workload.
    Neither rule waits for a gang that cannot fit to be retried: nothing is deleted in these
    runs, so its room never comes.

    Args:
        pods: the measured pods (each naming its group).
        free: the CPUs free for them, one CPU a pod (the room of :meth:`ended`).
        settle: the quiet time of :meth:`ended`.
    """

    def __init__(self, pods: Iterable[o.Pod], free: int, settle: float = SETTLE_SECONDS) -> None:
        self.free = free
        self.settle = settle
        self.group_of: dict[tuple[str, str], str] = {}
        self.members: dict[str, int] = {}
        for pod in pods:
            group = pod_group_key(pod)
            if group is not None:
                self.group_of[(pod.metadata.namespace, pod.metadata.name)] = group
                self.members[group] = self.members.get(group, 0) + 1
        self.bound_members: dict[str, int] = {}
        self.last_created: dict[str, float] = {}
        self.completed: dict[str, float] = {}
        self.pods_bound = 0
        self.last_bind: float | None = None
        self.created_all: float | None = None

    def created(self, objects: Iterable[o.KubeObject], now: float) -> None:
        """A Put reply at ``now`` said ``objects`` exist: a group whose pod is among them had
        its last pod created so far at ``now`` (the Puts go one after the other)."""
        for obj in objects:
            if isinstance(obj, o.Pod):
                group = self.group_of.get((obj.metadata.namespace, obj.metadata.name))
                if group is not None:
                    self.last_created[group] = now

    def all_created(self, now: float) -> None:
        """The last Put was answered at ``now``."""
        self.created_all = now

    def bound(self, key: tuple[str, str], now: float) -> None:
        """Pod ``(namespace, name)`` was seen bound at ``now`` (once per pod)."""
        group = self.group_of.get(key)
        if group is None:
            return
        self.pods_bound += 1
        self.last_bind = now
        count = self.bound_members.get(group, 0) + 1
        self.bound_members[group] = count
        if count == self.members[group]:
            self.completed[group] = now

    def room(self) -> int:
        """Free CPUs left: places for that many more measured pods."""
        return self.free - self.pods_bound

    def smallest_need(self) -> int | None:
        """The fewest members a group not fully bound still lacks; None when every group is."""
        needs = [
            size - self.bound_members.get(group, 0)
            for group, size in self.members.items()
            if group not in self.completed
        ]
        return min(needs) if needs else None

    def ended(self, now: float) -> bool:
        """Whether the run ends at ``now`` (the class's rule)."""
        if self.created_all is None:
            return False
        need = self.smallest_need()
        if need is None:
            return True
        quiet_since = max(self.created_all, self.last_bind or self.created_all)
        return self.room() < need and now - quiet_since >= self.settle

    def report(self, gangs: Gangs) -> GangReport:
        """The groups as they stand (``gangs``: what the workload asked)."""
        partly = sorted(
            f"{group} ({self.bound_members[group]} of {size})"
            for group, size in self.members.items()
            if 0 < self.bound_members.get(group, 0) < size
        )
        # A Bound event can reach the watch's connection before the Put's reply reaches the
        # putter's: such a group counts as bound when its last pod was created (0 ms).
        waits = [
            max(done - self.last_created[group], 0.0) * 1000
            for group, done in self.completed.items()
            if group in self.last_created
        ]
        full = len(self.completed)
        return GangReport(
            gang_size=gangs.size,
            ask_percent=gangs.ask_percent,
            free_cpu=self.free,
            groups=len(self.members),
            fully_bound=full,
            partly_bound=len(partly),
            not_bound=len(self.members) - full - len(partly),
            pods_bound=self.pods_bound,
            last_pod_to_bound_ms={"p50": nearest_rank(waits, 50), "p99": nearest_rank(waits, 99)},
            partly=partly,
        )


def check_gangs(name: str, nodes: int, report: GangReport, gangs: Gangs) -> None:
    """Fail a gang run that broke all-or-nothing, or whose gangs all fit and did not all bind.

    Raises:
        PartlyBoundError: a group ended partly bound (the first ten are named).
        BenchError: the gangs fit the cluster and not every group ended fully bound.
    """
    if report.partly_bound:
        named = ", ".join(report.partly[:10]) + (" ..." if len(report.partly) > 10 else "")
        groups = "pod group" if report.partly_bound == 1 else "pod groups"
        raise PartlyBoundError(
            f"{name} at {nodes} nodes: {report.partly_bound} {groups} ended PARTLY BOUND, "
            f"which all-or-nothing forbids: {named} ({report.counts()})"
        )
    if not gangs.overfull and report.fully_bound != report.groups:
        raise BenchError(
            f"{name} at {nodes} nodes: its gangs fit the cluster, yet {report.counts()}"
        )


# --------------------------------------------------------------------------- metrics


@dataclass
class _Metrics:
    """What the bench reads from one /metrics scrape."""

    attempt_buckets: list[tuple[float, float]]
    cpu_seconds: float
    recovery_seconds: float


def _scrape(address: str) -> _Metrics:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        text = response.read().decode()
    buckets: dict[float, float] = {}
    cpu = recovery = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (
                sample.name == "scheduler_scheduling_attempt_duration_seconds_bucket"
                and sample.labels.get("result") == "scheduled"
            ):
                le = float(sample.labels["le"])
                buckets[le] = buckets.get(le, 0.0) + sample.value
            elif sample.name == "process_cpu_seconds_total":
                cpu = sample.value
            elif sample.name == "podium_recovery_duration_seconds":
                recovery = sample.value
    return _Metrics(sorted(buckets.items()), cpu, recovery)


def _bucket_delta(
    before: list[tuple[float, float]], after: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    old = dict(before)
    return [(le, count - old.get(le, 0.0)) for le, count in after]


# --------------------------------------------------------------------------- one run


@dataclass
class RunResult:
    """One run of one workload at one size."""

    workload: str
    nodes: int
    pods: int
    throughput: dict[str, float]
    attempt_latency_ms: dict[str, float]
    peak_rss_bytes: int
    cpu_seconds: float
    duration_seconds: float
    windows: list[float] = field(default_factory=list)
    recovery_seconds: float | None = None
    restart_seconds: float | None = None
    gangs: GangReport | None = None

    @property
    def windowed(self) -> bool:
        """Whether the throughput is of 1 s windows (else the run's overall rate)."""
        return bool(self.windows)

    @property
    def pods_bound(self) -> int:
        """Measured pods bound: all of them, but in a gang run whose gangs do not all fit."""
        return self.gangs.pods_bound if self.gangs is not None else self.pods

    @property
    def overall(self) -> float:
        """Measured pods bound over the measured wall time."""
        return self.pods_bound / self.duration_seconds if self.duration_seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "workload": self.workload,
            "nodes": self.nodes,
            "pods": self.pods,
            "throughput": self.throughput,
            "windowed": self.windowed,
            "overall_pods_per_second": self.overall,
            "attempt_latency_ms": self.attempt_latency_ms,
            "peak_rss_bytes": self.peak_rss_bytes,
            "cpu_seconds": self.cpu_seconds,
            "duration_seconds": self.duration_seconds,
            "windows": self.windows,
        }
        if self.recovery_seconds is not None:
            out["recovery_seconds"] = self.recovery_seconds
            out["restart_seconds"] = self.restart_seconds
        if self.gangs is not None:
            out["gangs"] = self.gangs.as_json()
        return out


SETUP_SECONDS = 600.0
"""The longest the setup of one run (nodes and initial pods) may take."""


async def _wait_for(client: Client, done: Callable[[Any], bool], what: str) -> None:
    """Poll the daemon's stats until ``done(stats)`` (setup only; the measured phase watches)."""
    with trio.move_on_after(SETUP_SECONDS) as scope:
        while not done(await client.stats()):  # noqa: ASYNC110 - the state is the daemon's
            await trio.sleep(0.05)
    if scope.cancelled_caught:
        raise BenchError(f"{what} did not finish within {SETUP_SECONDS:.0f} s")


class _Churn:
    """scheduler_perf's ``churn`` op, mode recreate: every second, delete what the last tick
    made, then create a node, a high-priority pod that fits nowhere, and a Service."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.tick = 0

    async def run(self, client: Client) -> None:
        previous: list[ObjectRef] = []
        while True:
            if previous:
                await client.delete(previous)
            i = self.tick
            self.tick += 1
            node = make_node(1_000_000 + i, ZONES[i % len(ZONES)])
            pod = make_pods(CHURN_POD, f"churn-{i}", self.namespace, 1)[0]
            service = msgspec.convert(
                {
                    "kind": "Service",
                    "metadata": {"name": f"churn-{i}", "namespace": self.namespace},
                    "spec": {"selector": {"app": f"churn-{i}"}},
                },
                o.Service,
                dec_hook=o.dec_hook,
            )
            await client.put([node, pod, service])
            previous = [
                ObjectRef(kind="Node", name=node.metadata.name),
                ObjectRef(kind="Pod", name=pod.metadata.name, namespace=self.namespace),
                ObjectRef(kind="Service", name=service.metadata.name, namespace=self.namespace),
            ]
            await trio.sleep(1.0)


class _BindingCounter:
    """Counts the measured pods' Bound events on a watch, resuming where the daemon says when
    it cuts the watch off for falling behind (as any client must); in a gang run, tells
    ``gangs`` each bind too."""

    def __init__(
        self,
        wanted: set[tuple[str, str]],
        progress: Callable[[int], None],
        gangs: GangTracker | None = None,
    ) -> None:
        self.wanted = wanted
        self.progress = progress
        self.gangs = gangs
        self.bound = 0
        self.ended = False

    async def run(self, client: Client, from_revision: int) -> None:
        """Return when every wanted pod is bound, or after :data:`STALL_SECONDS` without one;
        in a gang run also when :meth:`GangTracker.ended` says so (then :attr:`ended`)."""
        gangs = self.gangs
        if gangs is None:
            await self._count(client, from_revision)
            return
        async with trio.open_nursery() as nursery:

            async def end_when_settled() -> None:
                # Polled: the rule turns on the clock (the settle time), not on an event.
                while not gangs.ended(trio.current_time()):  # noqa: ASYNC110
                    await trio.sleep(0.05)
                self.ended = True
                nursery.cancel_scope.cancel()

            nursery.start_soon(end_when_settled)
            await self._count(client, from_revision)
            # Returned: every measured pod bound (the run's end), or stalled.
            self.ended = self.ended or not self.wanted or gangs.ended(trio.current_time())
            nursery.cancel_scope.cancel()

    async def _count(self, client: Client, from_revision: int) -> None:
        revision = from_revision
        with trio.CancelScope(deadline=trio.current_time() + STALL_SECONDS) as stall:
            while self.wanted:
                try:
                    async with client.watch(from_revision=revision, kinds=["Pod"]) as events:
                        async for event in events:
                            revision = event.revision
                            key = (event.namespace, event.name)
                            if event.type == "Bound" and key in self.wanted:
                                self.wanted.discard(key)
                                self.bound += 1
                                if self.gangs is not None:
                                    self.gangs.bound(key, trio.current_time())
                                stall.deadline = trio.current_time() + STALL_SECONDS
                                self.progress(self.bound)
                                if not self.wanted:
                                    return
                except RemoteError as exc:
                    if exc.code != "overloaded" or exc.revision is None:
                        raise
                    revision = exc.revision


async def _measure(
    server: str,
    metrics: str | None,
    workload: Workload,
    nodes: int,
    measured: int,
    progress: Callable[[int], None],
) -> _Measured:
    """Load the cluster, then measure."""
    init_ns, measured_ns = workload.namespaces
    async with connect(server) as client:
        base = await client.stats()
        await put_all(client, [make_node(i, ZONES[i % len(ZONES)]) for i in range(nodes)])
        init = workload.init(nodes)
        await put_all(client, make_pods(workload.init_pod, "init", init_ns, init))
        if workload.init_binds:
            await _wait_for(
                client, lambda s: s.bound >= base.bound + init, f"binding {init} initial pods"
            )
        else:
            await _wait_for(
                client,
                lambda s: s.unschedulable >= base.unschedulable + init,
                f"trying {init} initial pods",
            )
        before = await trio.to_thread.run_sync(_scrape, metrics) if metrics else None
        pods = workload.measured_pods(nodes, measured)
        gangs = None if workload.gangs is None else GangTracker(pods, free_cpu(nodes))
        counter = _BindingCounter(
            {(p.metadata.namespace, p.metadata.name) for p in pods}, progress, gangs
        )
        samples: list[tuple[float, int]] = []
        from_revision = (await client.stats()).revision
        created = trio.Event()
        async with connect(server) as watcher, trio.open_nursery() as nursery:
            began = trio.current_time()
            if workload.churn:
                nursery.start_soon(_Churn(measured_ns).run, client)
            if gangs is None:
                nursery.start_soon(put_all, client, pods)
            else:
                tracker = gangs

                async def create() -> None:
                    # Each group before its members; each reply timed as it arrives.
                    objects = workload.measured_objects(nodes, measured)
                    await put_all(
                        client, objects, lambda b: tracker.created(b, trio.current_time())
                    )
                    tracker.all_created(trio.current_time())
                    created.set()

                nursery.start_soon(create)

            async def sample() -> None:
                # A ticker, as scheduler_perf's: ticks at fixed times, each sample timed when
                # it is actually taken.
                tick = 0
                while True:
                    tick += 1
                    await trio.sleep_until(began + tick * WINDOW_SECONDS)
                    samples.append((trio.current_time() - began, counter.bound))

            nursery.start_soon(sample)
            await counter.run(watcher, from_revision)
            seconds = trio.current_time() - began
            if gangs is not None:
                # Every reply in (the last binds may come before the last reply), and the
                # time to the last bind: the settle time after it is no scheduling.
                with trio.move_on_after(STALL_SECONDS):
                    await created.wait()
                if gangs.last_bind is not None:
                    seconds = gangs.last_bind - began
            nursery.cancel_scope.cancel()
        report = None
        if gangs is not None:
            assert workload.gangs is not None
            report = gangs.report(workload.gangs)
            if not counter.ended:
                raise BenchError(
                    f"{workload.name} at {nodes} nodes stalled: {report.counts()}; none bound "
                    f"in the last {STALL_SECONDS:.0f} s while the cluster has room for "
                    f"{gangs.room()} pods and the smallest remaining gang lacks "
                    f"{gangs.smallest_need()}"
                )
            check_gangs(workload.name, nodes, report, workload.gangs)
        elif counter.wanted:
            raise BenchError(
                f"{workload.name} at {nodes} nodes stalled: {counter.bound} of {measured} pods "
                f"bound, none in the last {STALL_SECONDS:.0f} s"
            )
        after = await trio.to_thread.run_sync(_scrape, metrics) if metrics else None
        return _Measured(throughput_windows(samples), seconds, before, after, report)


@dataclass
class _Measured:
    """What :func:`_measure` returns: the 1 s windows, the measured seconds, the metrics before
    and after (None with ``--server``), and a gang workload's groups."""

    windows: list[float]
    seconds: float
    before: _Metrics | None
    after: _Metrics | None
    gangs: GangReport | None

    def throughput(self, measured: int) -> dict[str, float]:
        bound = measured if self.gangs is None else self.gangs.pods_bound
        return _throughput(self.windows, bound, self.seconds)


def _latency(before: _Metrics | None, after: _Metrics | None) -> dict[str, float]:
    if before is None or after is None:
        return {"p50": math.nan, "p90": math.nan, "p99": math.nan}
    delta = _bucket_delta(before.attempt_buckets, after.attempt_buckets)
    return {f"p{q}": histogram_quantile(q / 100, delta) * 1000 for q in (50, 90, 99)}


def run_one(
    workload: Workload,
    nodes: int,
    measured: int,
    *,
    server: str | None,
    progress: Callable[[int], None],
    serve_args: Sequence[str] = (),
) -> RunResult:
    """Run ``workload`` at ``nodes`` once, on a fresh daemon unless ``server`` is given;
    ``progress`` is told how many measured pods are bound so far; ``serve_args`` go to the
    daemon after the workload's own flags."""
    if server is not None:
        got = trio.run(_measure, server, None, workload, nodes, measured, progress)
        return RunResult(
            workload.name,
            nodes,
            measured,
            got.throughput(measured),
            _latency(got.before, got.after),
            0,
            0.0,
            got.seconds,
            got.windows,
            gangs=got.gangs,
        )
    with tempfile.TemporaryDirectory(prefix="podium-bench-") as tmp:
        directory = Path(tmp)
        flags: list[str] = []
        if workload.policy is not None:
            policy_path = directory / "policy.json"
            policy_path.write_text(json.dumps(workload.policy()))
            flags = ["--policy", str(policy_path)]
        flags += serve_args
        daemon = ServeProcess.start_in(directory, *flags, ready_timeout=START_SECONDS)
        try:
            got = trio.run(
                _measure, daemon.address, daemon.metrics, workload, nodes, measured, progress
            )
            peak = daemon.peak_rss_bytes()
        except BaseException:
            with contextlib.suppress(DaemonError):
                daemon.stop_cleanly(STOP_SECONDS)
            raise
        daemon.stop_cleanly(STOP_SECONDS)
        restarted = ServeProcess.start_in(directory, *flags, ready_timeout=START_SECONDS)
        restart = restarted.started_seconds
        try:
            recovery = _scrape(restarted.metrics).recovery_seconds
        except OSError as exc:
            # Ready, then gone: it died recovering the run's cluster. Say so, with its log.
            with contextlib.suppress(DaemonError):
                restarted.stop(STOP_SECONDS)
            raise DaemonError(
                f"podium serve, restarted on the run's database, did not answer /metrics "
                f"({exc}):\n{restarted.log_tail()}"
            ) from exc
        restarted.stop_cleanly(STOP_SECONDS)
    before, after = got.before, got.after
    assert before is not None and after is not None
    return RunResult(
        workload.name,
        nodes,
        measured,
        got.throughput(measured),
        _latency(before, after),
        peak,
        after.cpu_seconds - before.cpu_seconds,
        got.seconds,
        got.windows,
        recovery,
        restart,
        got.gangs,
    )


def summarize(runs: Sequence[RunResult]) -> dict[str, Any]:
    """One workload and size over its runs: the median of each figure, the peak of the peaks,
    and every run under ``runs``."""
    first = runs[0]
    out: dict[str, Any] = {
        "workload": first.workload,
        "nodes": first.nodes,
        "pods": first.pods,
        "throughput": {k: _median([r.throughput[k] for r in runs]) for k in first.throughput},
        "windowed": all(r.windowed for r in runs),
        "window_count": _median([len(r.windows) for r in runs]),
        "overall_pods_per_second": _median([r.overall for r in runs]),
        "attempt_latency_ms": {
            k: _median([r.attempt_latency_ms[k] for r in runs]) for k in first.attempt_latency_ms
        },
        "peak_rss_bytes": max(r.peak_rss_bytes for r in runs),
        "cpu_seconds": _median([r.cpu_seconds for r in runs]),
        "runs": [r.as_json() for r in runs],
    }
    recoveries = [r.recovery_seconds for r in runs if r.recovery_seconds is not None]
    if recoveries:
        out["recovery_seconds"] = _median(recoveries)
    gangs = [r.gangs for r in runs if r.gangs is not None]
    if gangs:
        out["gangs"] = _summarize_gangs(gangs)
    return out


def _summarize_gangs(reports: Sequence[GangReport]) -> dict[str, Any]:
    """A gang workload's groups over its runs: the median of each count and time (the most
    partly bound groups of any run, which is 0: a run with one fails)."""
    first = reports[0]

    def count(values: Sequence[int]) -> float:
        middle = _median(values)
        return int(middle) if middle.is_integer() else middle

    return {
        **first.as_json(),
        "fully_bound": count([r.fully_bound for r in reports]),
        "partly_bound": max(r.partly_bound for r in reports),
        "not_bound": count([r.not_bound for r in reports]),
        "pods_bound": count([r.pods_bound for r in reports]),
        "last_pod_to_bound_ms": {
            k: _median([r.last_pod_to_bound_ms[k] for r in reports])
            for k in first.last_pod_to_bound_ms
        },
    }


def plan(
    workload_names: Sequence[str], nodes: int | None, pods: int | None
) -> Iterator[tuple[Workload, int, int]]:
    """The runs asked for, as (workload, nodes, pods): each of ``workload_names`` (else every
    workload) at ``nodes`` (else each of its sizes) with ``pods`` measured pods (else its own
    count).

    A gang workload's measured pods are whole gangs; one whose gangs ask more than the
    cluster holds (:attr:`~podium.cli.bench.workload.Gangs.overfull`) is not held to its
    capacity.

    Raises:
        BenchError: a run asks for more measured pods than its cluster can place, or for more
            pods (initial and measured) than its nodes hold, or (a gang workload) for no whole
            gang or a ``pods`` that is not whole gangs (raised as the plan reaches it: list the
            plan to check every run before the first).
    """
    for name in workload_names or list(WORKLOADS):
        workload = WORKLOADS[name]
        sizes = (nodes,) if nodes else workload.sizes
        for size in sizes:
            measured = pods or workload.measured(size)
            if workload.gangs is not None:
                _check_gangs_plan(workload, workload.gangs, size, measured, given=bool(pods))
                if workload.gangs.overfull:
                    yield workload, size, measured  # more than the cluster holds, on purpose
                    continue
            if measured > workload.capacity(size):
                most = workload.capacity(size)
                if workload.gangs is not None:
                    most -= most % workload.gangs.size  # whole gangs
                raise BenchError(
                    f"{name} at {size} nodes can place at most {most} "
                    f"measured pods; use --pods {most} or fewer, or more nodes"
                )
            init = workload.init(size) if workload.init_binds else 0
            if init + measured > size * PODS_PER_NODE:
                # Else the setup would wait SETUP_SECONDS for initial pods that cannot bind.
                raise BenchError(
                    f"{name} at {size} nodes cannot place its {init} initial and {measured} "
                    f"measured pods (at most {size * PODS_PER_NODE} pods of 100m CPU on "
                    f"{size} nodes); use more nodes"
                )
            yield workload, size, measured


def _check_gangs_plan(
    workload: Workload, gangs: Gangs, nodes: int, measured: int, *, given: bool
) -> None:
    """Refuse a gang run of no whole gang: too few nodes for one, or ``--pods`` that is not a
    whole number of gangs."""
    name, size = workload.name, gangs.size
    if given and measured % size:
        whole = max(measured // size, 1) * size
        raise BenchError(
            f"{name} creates whole gangs of {size} pods: use --pods {whole} (a multiple of "
            f"{size}), not {measured}"
        )
    if measured < size:
        fewest = 1
        while gangs.groups(fewest) < 1:
            fewest += 1
        raise BenchError(
            f"{name} at {nodes} nodes asks for no gang: {gangs.ask_percent} % of its "
            f"{free_cpu(nodes)} free CPUs is less than one gang of {size} pods of 1 CPU; use "
            f"--nodes {fewest} or more"
        )
