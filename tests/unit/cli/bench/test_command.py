"""``podium bench``'s report of the gang workloads (issue 24 point 8): their table, their JSON,
``--compare`` and the ratio to the same pods without groups; the other workloads' report stays
as it was (tests/unit/cli/bench/test_bench.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from podium.cli.bench.command import (
    _json_safe,
    add_baseline_ratios,
    compare,
    load_baseline,
    render_comparison,
    render_gang_comparison,
    render_gang_table,
    render_table,
    run_line,
)
from podium.cli.bench.scheduler_perf import GangReport, RunResult
from podium.cli.bench.workload import WORKLOADS
from podium.cli.benchmarks import GANG_WORKLOADS
from podium.cli.main import build_parser

SPEEDS = {"average": 2000.0, "p50": 1900.0, "p90": 2100.0, "p99": 2200.0}


def _gangs(**over: Any) -> dict[str, Any]:
    gangs: dict[str, Any] = {
        "gang_size": 32,
        "ask_percent": 150,
        "free_cpu": 2000,
        "groups": 93,
        "fully_bound": 62,
        "partly_bound": 0,
        "not_bound": 31,
        "pods_bound": 1984,
        "last_pod_to_bound_ms": {"p50": 12.34, "p99": 56.78},
    }
    gangs.update(over)
    return gangs


def _result(workload: str = "Gang32Overfull", gangs: dict[str, Any] | None = None,
            **over: Any) -> dict[str, Any]:  # fmt: skip
    result: dict[str, Any] = {
        "workload": workload,
        "nodes": 500,
        "pods": 2976,
        "throughput": dict(SPEEDS),
        "windowed": True,
        "window_count": 5,
        "attempt_latency_ms": {"p50": 0.8, "p90": 1.2, "p99": 2.5},
        "peak_rss_bytes": 100 * 2**20,
        "cpu_seconds": 3.25,
        "recovery_seconds": 0.12,
    }
    if gangs is not None:
        result["gangs"] = gangs
    result.update(over)
    return result


def test_the_gang_table_has_a_row_per_gang_result_and_none_for_the_others() -> None:
    results = [
        _result("OneCPUPods", pods=1600, throughput={**SPEEDS, "average": 2500.0}),
        _result(gangs=_gangs()),
    ]
    add_baseline_ratios(results)
    header, row = render_gang_table(results).splitlines()
    assert header.split() == [
        "GANGS", "NODES", "SIZE", "ASK", "%", "GROUPS", "FULL", "PARTLY", "NONE", "PODS",
        "BOUND", "GROUP", "P50", "MS", "GROUP", "P99", "MS", "VS", "OneCPUPods",
    ]  # fmt: skip
    assert row.split() == [
        "Gang32Overfull", "500", "32", "150", "93", "62", "0", "31", "1,984", "12.3", "56.8",
        "0.80x",
    ]  # fmt: skip


def test_without_a_gang_result_there_is_no_gang_table() -> None:
    assert render_gang_table([_result("OneCPUPods")]) == ""
    assert render_gang_comparison([_result("OneCPUPods")], "base.json") == ""


def test_the_main_table_is_the_same_for_a_gang_result() -> None:
    plain = render_table([_result("OneCPUPods")]).splitlines()
    gang = render_table([_result("OneCPUPods", gangs=_gangs())]).splitlines()
    assert plain == gang


@pytest.mark.parametrize(
    ("baseline", "want"),
    [("OneCPUPods", 0.8), ("SchedulingBasic", math.nan)],
    ids=["its baseline ran", "its baseline did not run"],
)
def test_the_gangs_pods_per_second_are_given_over_the_same_pods_without_groups(
    baseline: str, want: float
) -> None:
    other_size = _result("OneCPUPods", nodes=5000, throughput={**SPEEDS, "average": 1.0})
    results = [
        _result(baseline, throughput={**SPEEDS, "average": 2500.0}),
        other_size,
        _result(gangs=_gangs()),
    ]
    add_baseline_ratios(results)
    ratio = results[2]["gangs"]["throughput_vs_one_cpu_pods"]
    assert ratio == pytest.approx(want, nan_ok=True)
    assert "gangs" not in results[0] and "gangs" not in results[1]
    # NaN goes out as null.
    safe = _json_safe(results)[2]["gangs"]["throughput_vs_one_cpu_pods"]
    assert safe is None if math.isnan(want) else safe == pytest.approx(want)


def test_compare_gives_the_group_times_as_ratios_for_gang_results_only(tmp_path: Path) -> None:
    saved = _result(gangs=_gangs(last_pod_to_bound_ms={"p50": 24.68, "p99": 28.39}))
    path = tmp_path / "base.json"
    path.write_text(json.dumps({"results": [saved, _result("OneCPUPods")]}))
    base = load_baseline(path, [("Gang32Overfull", 500), ("OneCPUPods", 500)])
    new = _result(gangs=_gangs())
    ratios = compare(new, base[("Gang32Overfull", 500)])
    assert ratios["group_p50_ms"] == pytest.approx(0.5)
    assert ratios["group_p99_ms"] == pytest.approx(2.0)
    assert ratios["pods_per_second"] == pytest.approx(1.0)
    plain = compare(_result("OneCPUPods"), base[("OneCPUPods", 500)])
    assert set(plain) == {"pods_per_second", "attempt_p99_ms", "cpu_per_pod_ms", "peak_rss_bytes"}
    results = [{**new, "compare": ratios}, {**_result("OneCPUPods"), "compare": plain}]
    # The main comparison is unchanged, its gang row like any other...
    main_rows = render_comparison(results, "base.json").splitlines()
    assert main_rows[1].split()[:4] == ["Gang32Overfull", "500", "2,000", "1.00x"]
    # ... and the group times get their own.
    header, row = render_gang_comparison(results, "base.json").splitlines()
    assert header.split() == [
        "GANGS", "VS", "base.json", "NODES", "GROUP", "P50", "MS", "RATIO", "GROUP", "P99", "MS",
        "RATIO",
    ]  # fmt: skip
    assert row.split() == ["Gang32Overfull", "500", "12.3", "0.50x", "56.8", "2.00x"]


def test_a_saved_gang_run_without_group_times_has_no_ratio() -> None:
    saved = _result(gangs=_gangs(last_pod_to_bound_ms={"p50": None, "p99": None}))
    ratios = compare(_result(gangs=_gangs()), saved)
    assert math.isnan(ratios["group_p50_ms"]) and math.isnan(ratios["group_p99_ms"])
    ratios = compare(_result(gangs=_gangs()), _result())  # saved before the gangs were
    assert math.isnan(ratios["group_p99_ms"])


def _run(gangs: GangReport | None, pods: int) -> RunResult:
    return RunResult(
        "Gang32Overfull", 500, pods, dict(SPEEDS), {"p50": 1.0, "p90": 2.0, "p99": 3.0}, 0, 0.0,
        1.5, [2000.0] * 5, gangs=gangs,
    )  # fmt: skip


def test_a_gang_runs_line_says_how_many_pods_and_groups_bound() -> None:
    report = GangReport(**_gangs())
    assert run_line("Gang32Overfull 500 nodes", _run(report, 2976)) == (
        "Gang32Overfull 500 nodes: 1984 of 2976 pods bound in 1.5 s, 2,000 pods/s (5 windows); "
        "62 of 93 pod groups fully bound, 0 partly bound, 31 not bound"
    )
    all_bound = GangReport(**_gangs(ask_percent=80, groups=50, fully_bound=50, not_bound=0,
                                    pods_bound=1600))  # fmt: skip
    assert run_line("Gang32 500 nodes", _run(all_bound, 1600)).startswith(
        "Gang32 500 nodes: 1600 pods bound in 1.5 s"
    )
    assert (
        run_line("x", _run(None, 1600)) == "x: 1600 pods bound in 1.5 s, 2,000 pods/s (5 windows)"
    )


def test_help_gives_each_gang_workload_one_line() -> None:
    bench = build_parser()._subparsers._group_actions[0].choices["bench"]  # type: ignore[union-attr]
    lines = bench.format_help().splitlines()
    for name, text in GANG_WORKLOADS.items():
        assert [line for line in lines if line.split()[:1] == [name]] == [f"  {name:<18}{text}"]
    gang_names = [n for n, w in WORKLOADS.items() if w.gangs is not None]
    assert list(GANG_WORKLOADS) == ["OneCPUPods", *gang_names]
