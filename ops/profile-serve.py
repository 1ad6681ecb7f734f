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
time, and the task steps per pod (``PODS``: every pod the daemon scheduled, setup included).
A path given as ``-`` is not taken (the instrument costs time of its own: profile and count
steps in separate runs). cProfile times wall clock: time the thread spends idle in epoll,
or waiting for the GIL inside a function, counts as that function's.
"""

from __future__ import annotations

import collections
import cProfile
import json
import pstats
import sys
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


def serve(profile_path: str, steps_path: str, argv: list[str]) -> int:
    import podium.cli.serve as serve_cli
    from podium.cli.main import main

    profiler = cProfile.Profile()
    steps = _Steps()
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
            Path(steps_path).write_text(json.dumps(dict(steps.counts), indent=1))

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
    counts = json.loads(Path(steps_path).read_text())
    print(f"task steps: {sum(counts.values()) / pods:.2f} a pod")
    for where, n in sorted(counts.items(), key=lambda kv: -kv[1])[:20]:
        print(f"  {n / pods:6.2f}  {where}")


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    if sys.argv[1:2] == ["--report"]:
        report(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(serve(sys.argv[1], sys.argv[2], sys.argv[3:]))
