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
"""

from __future__ import annotations

import collections
import cProfile
import gc
import json
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

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        chain: list[str] = []
        coro: Any = task.coro
        for _ in range(64):
            if coro is None:
                break
            code = getattr(coro, "cr_code", None) or getattr(coro, "ag_code", None)
            if code is not None and (label := self._label(code)) is not None:
                chain.append(label)
            coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
        self.counts[" < ".join(reversed(chain[-2:])) if chain else task.name] += 1


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
            # The function the task runs ("Connection._request"): trio's name without the
            # module, or, for an actor the supervisor runs, the actor's own ``run``.
            name = ".".join(task.name.rsplit(".", 2)[-2:])
            outer = task.coro
            inner = getattr(outer, "cr_await", None)
            if name == "Runtime._supervise" and inner is not None and hasattr(inner, "cr_code"):
                name = inner.cr_code.co_qualname
            self._names[task] = name
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


def serve_tasks(tasks_path: str, argv: list[str]) -> int:
    """``podium serve`` with :class:`_TaskCpu` installed; written when the daemon stops."""
    import podium.cli.serve as serve_cli
    from podium.cli.main import main

    tasks = _TaskCpu()
    run = trio.run

    def instrumented(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("instruments", []).append(tasks)
        return run(*args, **kwargs)

    def write() -> None:
        Path(tasks_path).write_text(json.dumps(tasks.written(), indent=1))

    exit_now = serve_cli._exit_now

    def exit_after_writing(code: int) -> Any:
        write()
        return exit_now(code)

    gc.callbacks.append(tasks.on_gc)
    trio.run = instrumented  # type: ignore[assignment] # the daemon's one trio.run
    serve_cli._exit_now = exit_after_writing  # type: ignore[assignment] # see serve()
    code = main(argv)
    write()
    return code


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
    if len(sys.argv) < 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    if sys.argv[1:2] == ["--report"]:
        report(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1:2] == ["--report-tasks"]:
        report_tasks(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["--tasks"]:
        sys.exit(serve_tasks(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit(serve(sys.argv[1], sys.argv[2], sys.argv[3:]))
