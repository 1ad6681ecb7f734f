"""Profile ``podium serve``: run it under cProfile and a trio instrument that counts task steps
(each a task switch) by where the task was suspended; both are written when the daemon stops.

cProfile sees the main (trio) thread only, which is the one that limits throughput
(docs/benchmarks.md "Where the time goes"); SQLite's thread is not in the profile.

Usage (docs/benchmarks.md)::

    python ops/profile-serve.py /tmp/serve.prof /tmp/steps.json \\
        serve --db /tmp/p.db --listen 127.0.0.1:7070 --metrics 127.0.0.1:0 &
    podium bench --server 127.0.0.1:7070 --workload SchedulingBasic --nodes 500 --pods 5000
    kill -TERM %1; wait
    python ops/profile-serve.py --report /tmp/serve.prof /tmp/steps.json PODS

``--report`` prints the main thread's time by part of the daemon, the top functions by own
time, the task steps per pod (``PODS``: every pod the daemon scheduled, setup included), and,
with the steps, the SQLite store's hand-overs counted per pod and per commit (machine
independent): the commits, the jobs handed from trio to the database thread, the aiosqlite
calls (each one statement, or a COMMIT, run on aiosqlite's own thread) by their SQL, and the
thread crossings they make: two a hand-over (there and back) and two an aiosqlite call.
A path given as ``-`` is not taken (the instrument costs time of its own: profile and count
steps in separate runs). cProfile times wall clock: time the thread spends idle in epoll,
or waiting for the GIL inside a function, counts as that function's.

The daemon's CPU by task, without cProfile (docs/benchmarks.md, "per-task CPU")::

    python ops/profile-serve.py --tasks /tmp/tasks.json serve --db /tmp/p.db ... &
    podium bench --server 127.0.0.1:7070 --workload SchedulingBasic --nodes 500
    kill -TERM %1; wait
    python ops/profile-serve.py --report-tasks /tmp/tasks.json PODS

measures each trio task's steps with ``time.thread_time`` (the CPU of the daemon's thread
only, so it is exact under load, unlike wall clock) and the garbage collector's passes by
generation with ``gc.callbacks``; a collection's time also falls in the task that allocated.
The report gives the CPU a pod by task (named by its function: every connection's request
tasks add up under one name), the steps a pod, and the collections.

What the slow attempts hold (docs/benchmarks.md, "what the slow attempts held")::

    python ops/profile-serve.py --tail /tmp/tail.json serve --db /tmp/p.db ... &
    podium bench --server 127.0.0.1:7070 --workload SchedulingBasic --nodes 5000
    kill -TERM %1; wait
    python ops/profile-serve.py --report-tail /tmp/tail.json

(``--tail PATH --over MS serve ...``: another threshold) keeps every task step's wall
interval and CPU, and for each scheduled attempt slower than 2 ms (as the scheduler times it: its share of the batch's refresh, its decision's round trip,
its share of the assume) the steps that ran inside each part by task, trio's own time between
steps, and the collections. The report gives the slow attempts' share and p99 (the
instrument's own cost included: slower than ``podium bench``'s), each part's wall and CPU
by task (a batch-level part at the attempt's share), the decision's longest step by task, the
same decision breakdown over every attempt, and, for the whole run, the steps of more than
0.3 ms CPU by task and where each resumed.
"""

from __future__ import annotations

import bisect
import collections
import cProfile
import gc
import json
import math
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import trio

_ROOT = str(Path(__file__).resolve().parent.parent)


def _where(filename: str) -> str:
    """The part of the program a function's file belongs to."""
    if filename.startswith(_ROOT) and "site-packages" not in filename:
        parts = Path(filename).relative_to(_ROOT).parts
        return "/".join(parts[:2]) if parts[0] == "actors" and len(parts) > 2 else "/".join(parts)
    for package in ("trio", "msgspec", "prometheus_client", "opentelemetry", "numpy", "sqlite3"):
        if f"/{package}/" in filename:
            return package
    if filename == "~":
        return "builtins (C: encode/decode, numpy, dict/list)"
    return "python stdlib and other"


class _Steps(trio.abc.Instrument):
    """Counts task steps by the innermost two podium coroutines the task was suspended in."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self._labels: dict[Any, str | None] = {}

    def _label(self, code: Any) -> str | None:
        label = self._labels.get(code, "")
        if label == "":
            filename = code.co_filename
            mine = filename.startswith(_ROOT) and "site-packages" not in filename
            label = f"{filename.rsplit('/', 1)[-1]}:{code.co_qualname}" if mine else None
            self._labels[code] = label
        return label

    def label(self, task: trio.lowlevel.Task) -> str:
        """Where ``task`` is suspended: its innermost two podium coroutines."""
        chain: list[str] = []
        coro: Any = task.coro
        for _ in range(64):
            if coro is None:
                break
            code = getattr(coro, "cr_code", None) or getattr(coro, "ag_code", None)
            if code is not None and (label := self._label(code)) is not None:
                chain.append(label)
            coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
        return " < ".join(reversed(chain[-2:])) if chain else task.name

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.counts[self.label(task)] += 1


class _StoreCalls:
    """Counts the SQLite store's commits, its hand-overs to the database thread
    (``_Database.call``) and the aiosqlite calls (``Connection._execute``: one job on
    aiosqlite's thread each) by what they run. Each counter is bumped from one thread only
    (commits and hand-overs on trio's, aiosqlite calls on the database thread's loop)."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()

    def install(self) -> None:
        # Counting the store's calls needs aiosqlite's class; nothing here runs on it.
        import aiosqlite.core  # noqa: TID251

        from podium.store import sqlite as store_sqlite

        counts = self.counts
        execute = aiosqlite.core.Connection._execute
        call = store_sqlite._Database.call
        commit = store_sqlite.SqliteDurability.commit

        async def counted_execute(conn: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
            name = getattr(fn, "__name__", "?")
            if args and isinstance(args[0], str):  # execute/executemany: name the statement
                name = f"{name} {' '.join(args[0].split()[:3])}"
            counts[f"aiosqlite {name}"] += 1
            return await execute(conn, fn, *args, **kwargs)

        async def counted_call(db: Any, job: Any) -> Any:
            counts["hand-overs"] += 1
            return await call(db, job)

        async def counted_commit(durability: Any, changes: list[Any]) -> None:
            counts["commits"] += 1
            counts["changes committed"] += len(changes)
            await commit(durability, changes)

        setattr(aiosqlite.core.Connection, "_execute", counted_execute)  # noqa: B010
        setattr(store_sqlite._Database, "call", counted_call)  # noqa: B010
        setattr(store_sqlite.SqliteDurability, "commit", counted_commit)  # noqa: B010


class _TaskCpu(trio.abc.Instrument):
    """CPU seconds of the daemon's thread (``time.thread_time``) and steps, by task name."""

    def __init__(self) -> None:
        self.cpu: collections.Counter[str] = collections.Counter()
        self.steps: collections.Counter[str] = collections.Counter()
        self.gc_seconds: collections.Counter[str] = collections.Counter()
        self.gc_passes: collections.Counter[str] = collections.Counter()
        self._names: dict[trio.lowlevel.Task, str] = {}
        self._started = 0.0
        self._gc_started = 0.0
        self._outside = time.thread_time()

    def _name(self, task: trio.lowlevel.Task) -> str:
        name = self._names.get(task)
        if name is None:
            name = self._names[task] = self._task_name(task)
        return name

    @staticmethod
    def _task_name(task: trio.lowlevel.Task) -> str:
        """The function the task runs ("Connection._request"): trio's name without the
        module, or, for an actor the supervisor runs, the actor's own ``run``."""
        name = ".".join(task.name.rsplit(".", 2)[-2:])
        inner = getattr(task.coro, "cr_await", None)
        if name == "Runtime._supervise" and inner is not None and hasattr(inner, "cr_code"):
            name = str(inner.cr_code.co_qualname)
        return name

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        now = time.thread_time()
        self.cpu["(trio's own: scheduling, epoll, between steps)"] += now - self._outside
        self._started = now

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        now = time.thread_time()
        name = self._name(task)
        self.cpu[name] += now - self._started
        self.steps[name] += 1
        self._outside = now

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.thread_time()
        else:
            generation = f"generation {info['generation']}"
            self.gc_seconds[generation] += time.thread_time() - self._gc_started
            self.gc_passes[generation] += 1

    def written(self) -> dict[str, Any]:
        return {
            "cpu": dict(self.cpu),
            "steps": dict(self.steps),
            "gc_seconds": dict(self.gc_seconds),
            "gc_passes": dict(self.gc_passes),
        }


def _serve_instrumented(instrument: Any, path: str, indent: int | None, argv: list[str]) -> int:
    """``podium serve`` with ``instrument`` (a trio Instrument with ``on_gc`` and
    ``written``) installed; what it has written to ``path`` when the daemon stops."""
    import podium.cli.serve as serve_cli
    from podium.cli.main import main

    run = trio.run

    def instrumented(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("instruments", []).append(instrument)
        return run(*args, **kwargs)

    def write() -> None:
        Path(path).write_text(json.dumps(instrument.written(), indent=indent))

    exit_now = serve_cli._exit_now

    def exit_after_writing(code: int) -> Any:
        write()
        return exit_now(code)

    gc.callbacks.append(instrument.on_gc)
    trio.run = instrumented  # type: ignore[assignment] # the daemon's one trio.run
    serve_cli._exit_now = exit_after_writing  # type: ignore[assignment] # see serve()
    code = main(argv)
    write()
    return code


def serve_tasks(tasks_path: str, argv: list[str]) -> int:
    """``podium serve`` with :class:`_TaskCpu` installed; written when the daemon stops."""
    return _serve_instrumented(_TaskCpu(), tasks_path, 1, argv)


def report_tasks(tasks_path: str, pods: int) -> None:
    written = json.loads(Path(tasks_path).read_text())
    cpu: dict[str, float] = written["cpu"]
    steps: dict[str, int] = written["steps"]
    total = sum(cpu.values())
    print(f"daemon thread: {total:.2f} CPU s, {total / pods * 1000:.3f} ms a pod")
    print("  CPU us a pod   share   steps a pod  task")
    for name, seconds in sorted(cpu.items(), key=lambda kv: -kv[1])[:20]:
        print(
            f"  {seconds / pods * 1e6:12.1f}  {seconds / total:6.1%}  "
            f"{steps.get(name, 0) / pods:11.2f}  {name}"
        )
    print(f"  steps a pod: {sum(steps.values()) / pods:.2f}")
    for generation, seconds in sorted(written["gc_seconds"].items()):
        passes = written["gc_passes"][generation]
        print(
            f"  collections, {generation}: {passes} passes, {seconds:.2f} CPU s "
            f"({seconds / pods * 1e6:.1f} us a pod, within the tasks above)"
        )


class _Tail(trio.abc.Instrument):
    """What ran inside each slow scheduled attempt: every task step's wall interval, its CPU
    (``time.thread_time``) and task, trio's own time between steps, and the garbage
    collector's passes, kept in a window of the most recent steps; the scheduler's methods,
    wrapped by :meth:`install`, say where each attempt's parts lie.

    An attempt (actors/cycle/scheduler.py's module docstring) is its share of the batch's
    snapshot refresh (the pop answered to the refresh's end), its decision (the FilterRequest
    round trip: scheduler -> filter actor -> score actor -> scheduler) and its share of the
    batch's assume round trip. For an attempt slower than ``threshold`` seconds the decision's
    interval is broken down by task, and each batch-level part is counted at its share.
    """

    _KEEP = 400_000  # steps kept: far more than a batch's (32 pods, ~10 steps a pod)
    _LONG = 0.0003  # a step of more CPU seconds than this is counted by where it resumed

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self._names: dict[trio.lowlevel.Task, str] = {}
        # One row per step, in order (a step starts after the previous one ended):
        # wall start, wall end, CPU seconds, task name.
        self._starts: list[float] = []
        self._ends: list[float] = []
        self._cpus: list[float] = []
        self._tasks: list[str] = []
        self._gcs: list[tuple[float, float, int]] = []  # wall start, wall seconds, generation
        self._offset: float | None = None  # trio's clock minus perf_counter
        self._wall = 0.0
        self._cpu = 0.0
        self._gc_wall = 0.0
        self.attempts = 0
        self.slow: list[dict[str, Any]] = []
        self.all_parts: collections.Counter[str] = collections.Counter()
        self._decisions: dict[str, tuple[float, float]] = {}
        self.cpu_ms: list[float] = []
        self._batch: dict[str, float] = {}
        self._labels = _Steps()
        self._resumed = ""
        self.long_steps: collections.Counter[str] = collections.Counter()
        self.long_cpu: collections.Counter[str] = collections.Counter()
        self.long_wall: collections.Counter[str] = collections.Counter()
        self.all_decisions: collections.Counter[str] = collections.Counter()

    # -- the instrument

    def _now(self) -> float:
        if self._offset is None:
            self._offset = trio.current_time() - time.perf_counter()
        return self._offset + time.perf_counter()

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._resumed = self._labels.label(task)
        self._wall = self._now()
        self._cpu = time.thread_time()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        cpu = time.thread_time() - self._cpu
        end = self._now()
        name = self._names.get(task)
        if name is None:
            name = _TaskCpu._task_name(task)
            self._names[task] = name
        if cpu > self._LONG:
            where = f"{name}: {self._resumed}"
            self.long_steps[where] += 1
            self.long_cpu[where] += cpu * 1000
            self.long_wall[where] += (end - self._wall) * 1000
        self._starts.append(self._wall)
        self._ends.append(end)
        self._cpus.append(cpu)
        self._tasks.append(name)
        if len(self._starts) > 2 * self._KEEP:
            for rows in (self._starts, self._ends, self._cpus, self._tasks):
                del rows[: self._KEEP]
            cut = self._starts[0]
            self._gcs = [g for g in self._gcs if g[0] >= cut]

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        if self._offset is None:
            return
        if phase == "start":
            self._gc_wall = self._now()
        else:
            now = self._now()
            self._gcs.append((self._gc_wall, now - self._gc_wall, info["generation"]))

    # -- what ran inside an interval

    def _inside(self, start: float, end: float) -> dict[str, Any]:
        """The steps that ran within ``[start, end]`` by task (wall and CPU ms, steps), trio's
        own time between them (epoll, run_sync_soon callbacks, the scheduler), and the
        collections."""
        first = bisect.bisect_left(self._ends, start)
        wall: collections.Counter[str] = collections.Counter()
        cpu: collections.Counter[str] = collections.Counter()
        steps: collections.Counter[str] = collections.Counter()
        longest = (0.0, "")
        covered = 0.0
        for i in range(first, len(self._starts)):
            s, e = self._starts[i], self._ends[i]
            if s >= end:
                break
            seconds = min(e, end) - max(s, start)
            name = self._tasks[i]
            wall[name] += seconds * 1000
            cpu[name] += self._cpus[i] * 1000 * seconds / max(e - s, 1e-9)
            steps[name] += 1
            covered += seconds
            longest = max(longest, (seconds * 1000, name))
        gcs = [(w * 1000, g) for s, w, g in self._gcs if start <= s < end]
        return {
            "ms": (end - start) * 1000,
            "between_steps_ms": (end - start - covered) * 1000,
            "wall_ms": dict(wall),
            "cpu_ms": dict(cpu),
            "steps": dict(steps),
            "longest_step": list(longest),
            "gc": gcs,
        }

    # -- the scheduler's parts

    def install(self) -> None:
        from podium.actors.cycle.scheduler import Outcome, Scheduler

        tail = self
        batch, attempt, refresh = Scheduler._batch, Scheduler._attempt, Scheduler._refresh
        commit, report = Scheduler._commit, Scheduler._report

        async def timed_batch(sched: Any, pods: Any, popped_at: float, traces: Any) -> None:
            tail._batch = {"popped_at": popped_at, "popped_cpu": time.thread_time()}
            await batch(sched, pods, popped_at, traces)

        async def timed_refresh(sched: Any) -> Any:
            snapshot = await refresh(sched)
            tail._batch["refreshed"] = trio.current_time()
            tail._batch["refreshed_cpu"] = time.thread_time()
            return snapshot

        async def timed_attempt(
            sched: Any, popped: Any, snapshot: Any, started: float, trace: Any, *decided: Any
        ) -> Any:
            # The pod's decision (from ``started`` to ``decided``) is already made: by the run
            # of the batch it came in (filter actor -> score actor, folded there), or alone.
            outcome = await attempt(sched, popped, snapshot, started, trace, *decided)
            if isinstance(outcome, Outcome) and outcome.status is None:
                tail._decisions[popped.pod.key] = (started, outcome.finished)
            return outcome

        async def timed_commit(sched: Any, outcomes: Any, *args: Any) -> None:
            tail._batch["committing"] = trio.current_time()
            tail._batch["committing_cpu"] = time.thread_time()
            await commit(sched, outcomes, *args)

        async def timed_report(sched: Any, o: Any, **kwargs: Any) -> None:
            if "committed" not in tail._batch:
                tail._batch["committed"] = trio.current_time()
                tail._batch["committed_cpu"] = time.thread_time()
            if o.status == "scheduled" and kwargs.get("group") is None:
                tail.attempted(o)
            await report(sched, o, **kwargs)

        for name, fn in (
            ("_batch", timed_batch),
            ("_refresh", timed_refresh),
            ("_attempt", timed_attempt),
            ("_commit", timed_commit),
            ("_report", timed_report),
        ):
            setattr(Scheduler, name, fn)

    def attempted(self, o: Any) -> None:
        decision = self._decisions.pop(o.popped.pod.key, None)
        b = self._batch
        if decision is None or not {"popped_at", "refreshed", "committing"} <= b.keys():
            return
        deciding, decided = decision
        self.attempts += 1
        total = o.finished - o.started
        # The attempt in the daemon thread's CPU (``time.thread_time``): its decision's, and
        # its share of the refresh's and the assume's, each the thread's CPU over the part,
        # whatever task ran it. Unlike the wall clock it does not count the time the thread
        # waited for a CPU on a loaded machine (the round trips never wait for anything else).
        n = (b["refreshed"] - b["popped_at"]) / max(deciding - o.started, 1e-12)
        share = (o.finished - decided) / max(b["committed"] - b["committing"], 1e-12)
        self.cpu_ms.append(
            1000
            * (
                sum(self._inside(deciding, decided)["cpu_ms"].values()) / 1000
                + (b["refreshed_cpu"] - b["popped_cpu"]) / max(n, 1.0)
                + (b["committed_cpu"] - b["committing_cpu"]) * min(share, 1.0)
            )
        )
        parts = {
            "refresh share": deciding - o.started,
            "decision": decided - deciding,
            "assume share": o.finished - decided,
        }
        for part, seconds in parts.items():
            self.all_parts[part] += seconds * 1000
        inside = self._inside(deciding, decided)
        for task, ms in inside["wall_ms"].items():
            self.all_decisions[task] += ms
        self.all_decisions["(between steps: trio, epoll, callbacks)"] += inside["between_steps_ms"]
        if total <= self.threshold:
            return
        pods = round((b["refreshed"] - b["popped_at"]) / max(deciding - o.started, 1e-12))
        self.slow.append(
            {
                "ms": total * 1000,
                "parts_ms": {k: v * 1000 for k, v in parts.items()},
                "batch_pods": pods,
                "decision": self._inside(deciding, decided),
                "refresh": self._inside(b["popped_at"], b["refreshed"]),
                "assume": self._inside(b["committing"], b["committed"]),
            }
        )

    def written(self) -> dict[str, Any]:
        return {
            "threshold_ms": self.threshold * 1000,
            "attempts": self.attempts,
            "cpu_ms": sorted(self.cpu_ms),
            "parts_ms": dict(self.all_parts),
            "decision_wall_ms": dict(self.all_decisions),
            "long_steps": {
                where: [n, self.long_cpu[where], self.long_wall[where]]
                for where, n in self.long_steps.items()
            },
            "long_step_cpu_ms": self._LONG * 1000,
            "slow": self.slow,
        }


def serve_tail(tail_path: str, argv: list[str]) -> int:
    """``podium serve`` with :class:`_Tail` installed; written when the daemon stops.
    ``argv`` may start with ``--over MS``: the threshold (2 ms unless given)."""
    threshold_ms = 2.0
    if argv[:1] == ["--over"]:
        threshold_ms, argv = float(argv[1]), argv[2:]
    tail = _Tail(threshold=threshold_ms / 1000)
    tail.install()
    return _serve_instrumented(tail, tail_path, None, argv)


def report_tail(tail_path: str) -> None:
    written = json.loads(Path(tail_path).read_text())
    slow: list[dict[str, Any]] = written["slow"]
    attempts = written["attempts"]
    threshold = written["threshold_ms"]
    print(
        f"scheduled attempts: {attempts}, slower than {threshold:g} ms: {len(slow)} "
        f"({len(slow) / max(attempts, 1):.2%})"
    )
    cpu_ms: list[float] = written.get("cpu_ms", [])
    if cpu_ms:
        quantiles = [
            cpu_ms[min(len(cpu_ms) - 1, math.ceil(len(cpu_ms) * p / 100) - 1)]
            for p in (50, 90, 99, 99.9)
        ]
        print(
            "  in the daemon thread's CPU (no wait for a CPU): p50 {:.2f}, p90 {:.2f}, "
            "p99 {:.2f}, p99.9 {:.2f} ms; over 2 ms: {:.2%}".format(
                *quantiles, sum(1 for ms in cpu_ms if ms > threshold) / len(cpu_ms)
            )
        )
    if not slow:
        return
    n = len(slow)
    slowest = sorted((a["ms"] for a in slow), reverse=True)
    for p in (99, 99.9):
        rank = math.ceil(attempts * (100 - p) / 100)  # the p-th percentile, counted from the top
        if 0 < rank <= n:
            print(f"  p{p:g}: {slowest[rank - 1]:.2f} ms (instrumented: slower than bench's)")
    print("  ms an attempt:       all   slow")
    for part, ms in written["parts_ms"].items():
        mine = sum(a["parts_ms"][part] for a in slow) / n
        print(f"  {part:16} {ms / max(attempts, 1):7.3f} {mine:6.3f}")
    print(f"  {'total':16} {'':7} {sum(a['ms'] for a in slow) / n:6.3f}")
    # Each part's wall time by what ran in it, at the attempt's share (a batch-level part
    # counts the fraction of it that is the attempt's).
    wall: collections.Counter[str] = collections.Counter()
    cpu: collections.Counter[str] = collections.Counter()
    steps: collections.Counter[str] = collections.Counter()
    longest: collections.Counter[str] = collections.Counter()
    gc_ms: collections.Counter[str] = collections.Counter()
    for a in slow:
        parts = {"decision": "decision", "refresh": "refresh share", "assume": "assume share"}
        for interval, part in parts.items():
            inside = a[interval]
            share = a["parts_ms"][part] / inside["ms"] if inside["ms"] > 0 else 0.0
            for task, ms in inside["wall_ms"].items():
                wall[f"{interval:8} {task}"] += ms * share
                cpu[f"{interval:8} {task}"] += inside["cpu_ms"][task] * share
                steps[f"{interval:8} {task}"] += inside["steps"][task] * share
            wall[f"{interval:8} (between steps: trio, epoll, callbacks)"] += (
                inside["between_steps_ms"] * share
            )
            for ms, generation in inside["gc"]:
                gc_ms[f"{interval:8} generation {generation}"] += ms * share
        ms, task = a["decision"]["longest_step"]
        longest[task if ms > threshold / 2 else "(no step over half the threshold)"] += 1
    print("  where a slow attempt's time went (ms an attempt, its share of batch parts):")
    print("     wall     CPU  steps  part     task")
    for key, ms in wall.most_common(25):
        print(f"  {ms / n:7.3f} {cpu.get(key, 0) / n:7.3f} {steps.get(key, 0) / n:6.2f}  {key}")
    for key, ms in sorted(gc_ms.items()):
        print(f"  collections in {key}: {ms / n:.3f} ms an attempt (within the steps above)")
    print("  the decision's longest step, by task (slow attempts):")
    for task, count in longest.most_common(12):
        print(f"  {count:6}  {task}")
    print("  a decision's wall time by task, every scheduled attempt (ms an attempt):")
    for task, ms in sorted(written["decision_wall_ms"].items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {ms / max(attempts, 1):7.3f}  {task}")
    long_steps: dict[str, list[float]] = written["long_steps"]
    print(
        f"  steps of more than {written['long_step_cpu_ms']:g} ms CPU, the whole run, by task "
        "and where it resumed:"
    )
    print("   steps  CPU ms a step  wall ms a step  where")
    for where, (steps_n, cpu_ms, wall_ms) in sorted(long_steps.items(), key=lambda kv: -kv[1][1])[
        :20
    ]:
        print(f"  {steps_n:6.0f}  {cpu_ms / steps_n:13.3f}  {wall_ms / steps_n:14.3f}  {where}")


def serve(profile_path: str, steps_path: str, argv: list[str]) -> int:
    import podium.cli.serve as serve_cli
    from podium.cli.main import main

    profiler = cProfile.Profile()
    steps = _Steps()
    store = _StoreCalls()
    if steps_path != "-":
        store.install()
    run = trio.run

    def instrumented(*args: Any, **kwargs: Any) -> Any:
        if steps_path != "-":
            kwargs.setdefault("instruments", []).append(steps)
        return run(*args, **kwargs)

    def write() -> None:
        profiler.disable()
        if profile_path != "-":
            profiler.dump_stats(profile_path)
        if steps_path != "-":
            Path(steps_path).write_text(
                json.dumps({"steps": dict(steps.counts), "store": dict(store.counts)}, indent=1)
            )

    exit_now = serve_cli._exit_now

    def exit_after_writing(code: int) -> Any:
        # `podium serve` leaves with os._exit (no atexit): write first.
        write()
        return exit_now(code)

    trio.run = instrumented  # type: ignore[assignment] # the daemon's one trio.run
    serve_cli._exit_now = exit_after_writing  # type: ignore[assignment] # see above
    if profile_path != "-":
        profiler.enable()
    code = main(argv)
    write()
    return code


def report(profile_path: str, steps_path: str, pods: int) -> None:
    if profile_path != "-":
        _report_profile(profile_path, pods)
    if steps_path != "-":
        _report_steps(steps_path, pods)


def _report_profile(profile_path: str, pods: int) -> None:
    stats = pstats.Stats(profile_path)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined] # pstats' own table
    total = sum(tt for _, _, tt, _, _ in raw.values())
    parts: collections.Counter[str] = collections.Counter()
    for (filename, _, _), (_, _, tt, _, _) in raw.items():
        parts[_where(filename)] += tt
    print(f"main thread: {total:.1f} s of own time, {total / pods * 1000:.3f} ms a pod")
    for part, seconds in parts.most_common(20):
        print(f"  {seconds / total:6.1%}  {seconds / pods * 1e6:7.1f} us/pod  {part}")
    print("top functions by own time:")
    top = sorted(raw.items(), key=lambda kv: -kv[1][2])[:25]
    for (filename, line, name), (_, calls, tt, ct, _) in top:
        short = filename.replace(_ROOT + "/", "")
        if "site-packages/" in short:
            short = short.split("site-packages/", 1)[1]
        print(
            f"  {tt / total:6.1%}  {calls / pods:6.2f} calls/pod  {ct / total:6.1%} cum  "
            f"{short}:{line}({name})"
        )


def _report_steps(steps_path: str, pods: int) -> None:
    written = json.loads(Path(steps_path).read_text())
    counts = written.get("steps", written)  # a file from before the store's counts
    print(f"task steps: {sum(counts.values()) / pods:.2f} a pod")
    for where, n in sorted(counts.items(), key=lambda kv: -kv[1])[:20]:
        print(f"  {n / pods:6.2f}  {where}")
    store = written.get("store")
    if store:
        _report_store(store, pods)


def _report_store(store: dict[str, int], pods: int) -> None:
    commits = store.get("commits", 0)
    per_commit = max(commits, 1)
    calls = {k: n for k, n in store.items() if k.startswith("aiosqlite ")}
    handovers = store.get("hand-overs", 0)
    changes = store.get("changes committed", 0)
    rows = [
        ("aiosqlite calls", sum(calls.values())),
        ("thread crossings", 2 * (handovers + sum(calls.values()))),
        ("hand-overs to the database thread", handovers),
        *sorted(calls.items(), key=lambda kv: -kv[1]),
    ]
    print(f"store: {commits / pods:.3f} commits a pod, {changes / per_commit:.1f} changes a commit")
    print("  a pod / a commit")
    for what, n in rows:
        print(f"  {n / pods:6.2f} / {n / per_commit:5.2f}  {what}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    if sys.argv[1:2] == ["--report"]:
        report(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1:2] == ["--report-tasks"]:
        report_tasks(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["--report-tail"]:
        report_tail(sys.argv[2])
    elif sys.argv[1:2] == ["--tail"]:
        sys.exit(serve_tail(sys.argv[2], sys.argv[3:]))
    elif sys.argv[1:2] == ["--tasks"]:
        sys.exit(serve_tasks(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit(serve(sys.argv[1], sys.argv[2], sys.argv[3:]))
