"""``ops/profile-serve.py`` end to end: a real daemon under cProfile, the task-step
instrument, the CPU by task and the slow attempts' breakdown, a tiny bench against it, then
the report (docs/benchmarks.md "Where the time
goes" is made with it)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from daemon import PODIUM

SCRIPT = Path(__file__).resolve().parents[2] / "ops" / "profile-serve.py"


def _serve_a_small_bench(tmp_path: Path, *mode: str) -> None:
    """``podium serve`` under the script in ``mode``, a 1050-pod bench against it, then stop
    it as an operator would (SIGTERM): the script writes its files as the daemon stops."""
    with subprocess.Popen(
        [sys.executable, str(SCRIPT), *mode, "serve", "--db",
         str(tmp_path / "p.db"), "--listen", "127.0.0.1:0", "--metrics", "none"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    ) as daemon:  # fmt: skip
        try:
            assert daemon.stdout is not None
            ready = json.loads(daemon.stdout.readline())
            bench = subprocess.run(
                [PODIUM, "bench", "--server", ready["listen"], "--workload", "SchedulingBasic",
                 "--nodes", "30", "--pods", "50"],
                capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert bench.returncode == 0, bench.stderr
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=60)
    assert daemon.returncode == 0


def test_the_profile_and_the_task_steps_are_written_when_the_daemon_stops(tmp_path: Path) -> None:
    prof, steps = tmp_path / "serve.prof", tmp_path / "steps.json"
    _serve_a_small_bench(tmp_path, str(prof), str(steps))
    report = subprocess.run(
        [sys.executable, str(SCRIPT), "--report", str(prof), str(steps), "1050"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    assert lines[0].startswith("main thread: ")
    assert "top functions by own time:" in lines
    # The scheduling cycle's asks are among the counted steps.
    assert any("Scheduler._schedule_batch" in line for line in lines), report.stdout
    counts = json.loads(steps.read_text())
    assert sum(counts["steps"].values()) > 1050
    # The store's calls, counted in the same run: each commit one hand-over to the database
    # thread and two aiosqlite calls (the rows, COMMIT), as store/sqlite.py's _commit_job.
    store = counts["store"]
    assert store["commits"] > 0
    assert store["aiosqlite commit"] == store["commits"]
    assert store["aiosqlite executemany INSERT INTO commit_rows"] == store["commits"]
    assert store["hand-overs"] == store["commits"] + 1  # and the load at start
    assert any(line.strip().endswith("thread crossings") for line in lines), report.stdout


def test_the_cpu_by_task_is_written_when_the_daemon_stops(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.json"
    _serve_a_small_bench(tmp_path, "--tasks", str(tasks))
    written = json.loads(tasks.read_text())
    # Each actor the supervisor runs is named by its own run, not by the supervisor's wrapper.
    for actor in ("Scheduler.run", "QueueActor.run", "CacheActor.run", "StoreActor.run"):
        assert written["cpu"][actor] > 0 and written["steps"][actor] > 0, actor
    assert "Runtime._supervise" not in written["cpu"]
    report = subprocess.run(
        [sys.executable, str(SCRIPT), "--report-tasks", str(tasks), "1050"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    assert lines[0].startswith("daemon thread: ")
    assert any(line.endswith("  QueueActor.run") for line in lines), report.stdout
    assert any("steps a pod:" in line for line in lines), report.stdout


def test_what_ran_inside_each_slow_attempt_is_written_when_the_daemon_stops(
    tmp_path: Path,
) -> None:
    tail = tmp_path / "tail.json"
    # Over 0 ms: every attempt is broken down.
    _serve_a_small_bench(tmp_path, "--tail", str(tail), "--over", "0")
    written = json.loads(tail.read_text())
    assert written["attempts"] == 1050 == len(written["slow"]) == len(written["cpu_ms"])
    for attempt in written["slow"]:
        parts = attempt["parts_ms"]
        assert abs(sum(parts.values()) - attempt["ms"]) < 1e-6, attempt
        # The decision is the FilterRequest's round trip: the filter actor's and the score
        # actor's steps ran inside it, and no step ran longer than the decision.
        inside = attempt["decision"]
        assert {"FilterActor.run", "ScoreActor.run"} <= inside["wall_ms"].keys(), inside
        assert inside["longest_step"][0] <= inside["ms"] + 1e-6
    report = subprocess.run(
        [sys.executable, str(SCRIPT), "--report-tail", str(tail)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    assert lines[0] == "scheduled attempts: 1050, slower than 0 ms: 1050 (100.00%)"
    assert any(line.endswith("decision FilterActor.run") for line in lines), report.stdout


def test_help_shows_how_to_run_it() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "--report" in done.stdout and "podium bench --server" in done.stdout
    assert "--tasks" in done.stdout and "--report-tasks" in done.stdout
    assert "--tail" in done.stdout and "--report-tail" in done.stdout
