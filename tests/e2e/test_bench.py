"""``podium bench`` end to end: every workload on a real daemon, at a tiny size.

The numbers are not checked (speed is recorded in docs/benchmarks.md, never asserted); the
runs must complete, bind every measured pod, and report every figure in the documented shape.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from daemon import PODIUM

from podium.cli.bench.workload import WORKLOADS


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PODIUM, "bench", *args], capture_output=True, text=True, timeout=300, check=False
    )


def test_every_workload_runs_and_reports_the_documented_json() -> None:
    # The gang workloads have a test of their own (below): their sizes are whole gangs.
    names = [
        n for n, w in WORKLOADS.items() if n != "SchedulingPodAntiAffinity" and w.gangs is None
    ]
    args = [a for n in names for a in ("--workload", n)]
    done = _bench(*args, "--nodes", "30", "--pods", "60", "-o", "json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert [r["workload"] for r in results] == names
    for r in results:
        assert (r["nodes"], r["pods"]) == (30, 60)
        assert set(r["throughput"]) == {"average", "p50", "p90", "p99"}
        assert all(v > 0 for v in r["throughput"].values()), r
        assert set(r["attempt_latency_ms"]) == {"p50", "p90", "p99"}
        assert all(v is not None and v > 0 for v in r["attempt_latency_ms"].values()), r
        assert r["peak_rss_bytes"] > 10 * 2**20
        assert r["cpu_seconds"] > 0
        assert r["recovery_seconds"] >= 0
        (run,) = r["runs"]
        assert run["duration_seconds"] > 0 and run["restart_seconds"] > 0


def test_gang_workloads_bind_whole_groups_or_none() -> None:
    # 40 nodes hold 160 one-CPU pods: Gang8 asks 0.8x (16 gangs, all of them bound), Gang8Overfull
    # 1.5x (30 gangs, of which 20 fit); a group partly bound would fail the run.
    args = ["--workload", "Gang8", "--workload", "Gang8Overfull", "--workload", "OneCPUPods"]
    done = _bench(*args, "--nodes", "40", "-o", "json")
    assert done.returncode == 0, done.stderr
    gangs = {r["workload"]: r.get("gangs") for r in json.loads(done.stdout)["results"]}
    fit, overfull = gangs["Gang8"], gangs["Gang8Overfull"]
    assert gangs["OneCPUPods"] is None
    assert (fit["groups"], fit["fully_bound"], fit["partly_bound"], fit["not_bound"]) == (
        16,
        16,
        0,
        0,
    )
    assert (overfull["groups"], overfull["fully_bound"], overfull["partly_bound"]) == (30, 20, 0)
    assert overfull["not_bound"] == 10 and overfull["pods_bound"] == 160
    assert 0 < fit["last_pod_to_bound_ms"]["p50"] <= fit["last_pod_to_bound_ms"]["p99"]
    assert fit["throughput_vs_one_cpu_pods"] > 0


def test_a_table_for_people_with_repeated_runs() -> None:
    done = _bench(
        "--workload", "SchedulingPodAntiAffinity", "--nodes", "20", "--pods", "10", "--runs", "2"
    )
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split()[:5] == ["WORKLOAD", "NODES", "PODS", "AVG/S", "P50/S"]
    assert row.split()[:3] == ["SchedulingPodAntiAffinity", "20", "10"]


def test_compare_prints_ratios_against_a_saved_json_run(tmp_path: Path) -> None:
    args = ("--workload", "SchedulingBasic", "--nodes", "30", "--pods", "40")
    saved = _bench(*args, "-o", "json")
    assert saved.returncode == 0, saved.stderr
    # stdout is the JSON document alone; the line per finished run went to stderr.
    json.loads(saved.stdout)
    assert saved.stderr.startswith("SchedulingBasic 30 nodes: 40 pods bound in ")
    base = tmp_path / "base.json"
    base.write_text(saved.stdout)
    done = _bench(*args, "--compare", str(base))
    assert done.returncode == 0, done.stderr
    table, comparison = done.stdout.split("\n\n")
    assert table.splitlines()[1].split()[:3] == ["SchedulingBasic", "30", "40"]
    header, row = comparison.splitlines()
    assert header.split()[:4] == ["VS", str(base), "NODES", "PODS/S"]
    cells = row.split()
    assert cells[:2] == ["SchedulingBasic", "30"]
    assert all(c.endswith("x") and float(c[:-1]) > 0 for c in cells[3::2]), row
    missing = _bench(*args[:2], "--nodes", "40", "--pods", "40", "--compare", str(base))
    assert missing.returncode == 1
    assert f"--compare {base} has no SchedulingBasic at 40 nodes" in missing.stderr
