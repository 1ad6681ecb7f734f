"""``podium bench``: the run, the progress bar and the report (a table or JSON) of the
benchmark :mod:`podium.cli.bench.scheduler_perf` runs.

Kubernetes counterpart: ``test/integration/scheduler_perf``'s command line (``-perf-scheduling-
label-filter`` and friends) and its ``dataItems`` JSON.

Owns: nothing.
Emits: a progress bar (pods bound, the rate over the last second) on stderr when it is a
terminal, and one line per finished run on stderr; a table or JSON on stdout, with ratios
against a saved JSON run (``--compare``). Gang workloads (issue 24) add a second table of their
groups (:func:`render_gang_table`) and, in the JSON, a ``gangs`` object per result; the other
workloads' output is as it was.

The flags are :mod:`podium.cli.benchmarks`', which imports this module only when the command
runs (the benchmarks import the actors' plugin names and the bench's daemons).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from podium.cli.bench.scheduler_perf import BenchError, RunResult, plan, run_one, summarize
from podium.cli.bench.workload import BASELINE_WORKLOAD
from podium.cli.common.output import (
    EXIT_FAILED,
    EXIT_OK,
    Progress,
    dump_json,
    err,
    out,
)
from podium.protocol.errors import ErrorCode

__all__ = [
    "COMPARED",
    "COMPARED_GANGS",
    "BaselineError",
    "add_baseline_ratios",
    "cmd_bench",
    "compare",
    "cpu_per_pod_ms",
    "load_baseline",
    "render_comparison",
    "render_gang_comparison",
    "render_gang_table",
    "render_table",
    "run_line",
]


def cmd_bench(args: argparse.Namespace) -> int:
    """``podium bench``: run the plan, each run ``--runs`` times, and print the medians
    (beside the ratios against ``--compare``'s run, when given)."""
    as_json = args.output == "json"
    runs_planned = list(plan(args.workload or (), args.nodes, args.pods))
    base: dict[tuple[str, int], dict[str, Any]] | None = None
    if args.compare is not None:
        try:
            base = load_baseline(args.compare, [(w.name, n) for w, n, _ in runs_planned])
        except BaselineError as exc:
            err(f"error: {exc}")
            return EXIT_FAILED
    results: list[dict[str, Any]] = []
    for workload, nodes, measured in runs_planned:
        runs = []
        for run in range(args.runs):
            label = f"{workload.name} {nodes} nodes" + (f" run {run + 1}" if args.runs > 1 else "")
            # On stderr: shown on a terminal even with -o json, which goes to stdout.
            bar = Progress(label, measured, enabled=True, rate="pods/s")
            try:
                result = run_one(
                    workload,
                    nodes,
                    measured,
                    server=args.server,
                    progress=bar.update,
                    serve_args=args.serve_arg or (),
                )
            finally:
                bar.close()
            runs.append(result)
            # One line per finished run, on stderr in either format and on a terminal or not:
            # a long machine-read run still shows that it moves.
            err(run_line(label, result))
        results.append(summarize(runs))
    add_baseline_ratios(results)
    if base is not None:
        for summary in results:
            saved = base[(summary["workload"], summary["nodes"])]
            summary["compare"] = {"file": str(args.compare), **compare(summary, saved)}
    if as_json:
        dump_json({"results": _json_safe(results)})
    else:
        out(render_table(results))
        if gangs := render_gang_table(results):
            out()
            out(gangs)
        if base is not None:
            out()
            out(render_comparison(results, str(args.compare)))
            if gangs := render_gang_comparison(results, str(args.compare)):
                out()
                out(gangs)
    return EXIT_OK


def run_line(label: str, result: RunResult) -> str:
    """What a finished run prints on stderr (a gang run: how many of its pods bound, and its
    groups by outcome)."""
    how = (
        f"{len(result.windows)} windows"
        if result.windowed
        else "too short for a 1 s window: overall rate"
    )
    bound = result.pods_bound
    pods = f"{bound}" if bound == result.pods else f"{bound} of {result.pods}"
    line = (
        f"{label}: {pods} pods bound in {result.duration_seconds:.1f} s, "
        f"{result.throughput['average']:,.0f} pods/s ({how})"
    )
    return line if result.gangs is None else f"{line}; {result.gangs.counts()}"


def _fmt(value: float, digits: int = 0) -> str:
    return "-" if math.isnan(value) else f"{value:,.{digits}f}"


def cpu_per_pod_ms(result: dict[str, Any]) -> float:
    """The daemon's CPU milliseconds per measured pod (NaN when not measured)."""
    cpu = result.get("cpu_seconds")
    if not cpu or not result.get("pods"):
        return math.nan
    return float(cpu) * 1000 / int(result["pods"])


def render_table(results: Sequence[dict[str, Any]]) -> str:
    """The summaries for people: a row per workload and size, the figures right-aligned. A
    throughput marked ``*`` is the run's overall rate (too short for a 1 s window)."""
    header = (
        "WORKLOAD",
        "NODES",
        "PODS",
        "AVG/S",
        "P50/S",
        "P90/S",
        "P99/S",
        "WINDOWS",
        "LAT P50 MS",
        "LAT P99 MS",
        "PEAK RSS MIB",
        "CPU S",
        "CPU/POD MS",
        "RECOVERY S",
    )
    rows = [header]
    for r in results:
        t, lat = r["throughput"], r["attempt_latency_ms"]
        mark = "" if r.get("windowed", True) else "*"
        rows.append(
            (
                r["workload"],
                str(r["nodes"]),
                str(r["pods"]),
                _fmt(t["average"]) + mark,
                _fmt(t["p50"]) + mark,
                _fmt(t["p90"]) + mark,
                _fmt(t["p99"]) + mark,
                _fmt(r.get("window_count", math.nan)),
                _fmt(lat["p50"], 2),
                _fmt(lat["p99"], 2),
                _fmt(r["peak_rss_bytes"] / 2**20) if r["peak_rss_bytes"] else "-",
                _fmt(r["cpu_seconds"], 1),
                _fmt(cpu_per_pod_ms(r), 3),
                _fmt(r["recovery_seconds"], 2) if "recovery_seconds" in r else "-",
            )
        )
    return _columns(rows)


def add_baseline_ratios(results: Sequence[dict[str, Any]]) -> None:
    """Give each gang result ``gangs.throughput_vs_one_cpu_pods``: its pods/s (window average)
    over :data:`~podium.cli.bench.workload.BASELINE_WORKLOAD`'s at the same size in the same
    invocation (the same pods without groups; NaN when that was not run)."""
    base = {
        r["nodes"]: r["throughput"]["average"]
        for r in results
        if r["workload"] == BASELINE_WORKLOAD
    }
    for r in results:
        if "gangs" in r:
            saved = base.get(r["nodes"])
            r["gangs"]["throughput_vs_one_cpu_pods"] = (
                r["throughput"]["average"] / saved if saved else math.nan
            )


def render_gang_table(results: Sequence[dict[str, Any]]) -> str:
    """The gang workloads' groups, a row per workload and size; ``""`` when none ran. ``ASK
    %`` is what the gangs ask of the free CPU, ``FULL``, ``PARTLY`` and ``NONE`` the groups
    fully, partly (never: the run fails) and not bound, ``GROUP P50/P99 MS`` the time from a
    group's last pod's creation to its last member's bind, ``VS OneCPUPods`` the pods/s over
    the same pods' without groups (run in the same invocation)."""
    rows: list[Sequence[str]] = [
        ("GANGS", "NODES", "SIZE", "ASK %", "GROUPS", "FULL", "PARTLY", "NONE", "PODS BOUND",
         "GROUP P50 MS", "GROUP P99 MS", f"VS {BASELINE_WORKLOAD}"),
    ]  # fmt: skip
    for r in results:
        g = r.get("gangs")
        if g is None:
            continue
        wait = g["last_pod_to_bound_ms"]
        rows.append(
            (
                r["workload"],
                str(r["nodes"]),
                str(g["gang_size"]),
                str(g["ask_percent"]),
                str(g["groups"]),
                _fmt(g["fully_bound"]),
                _fmt(g["partly_bound"]),
                _fmt(g["not_bound"]),
                _fmt(g["pods_bound"]),
                _fmt(wait["p50"], 1),
                _fmt(wait["p99"], 1),
                _ratio(g.get("throughput_vs_one_cpu_pods", math.nan)),
            )
        )
    return _columns(rows) if len(rows) > 1 else ""


def _columns(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "   ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )


# --------------------------------------------------------------------------- --compare


class BaselineError(BenchError):
    """``--compare``'s file cannot be read, is not ``podium bench -o json`` output, or lacks
    a workload and size this run measures."""

    code: ErrorCode = "invalid"


COMPARED = ("pods_per_second", "attempt_p99_ms", "cpu_per_pod_ms", "peak_rss_bytes")
"""The figures ``--compare`` puts beside the saved run's, as ratios new / saved."""
COMPARED_GANGS = ("group_p50_ms", "group_p99_ms")
"""And for a gang workload: the p50 and p99 of a group's time from its last pod to its last
bind."""


def load_baseline(
    path: Path, wanted: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], dict[str, Any]]:
    """The results of a saved ``podium bench -o json`` run, by (workload, nodes).

    Args:
        path: the file.
        wanted: the (workload, nodes) this run measures; each must be in the file.

    Raises:
        BaselineError: the file cannot be read or decoded, is not a bench run, or lacks one of
            ``wanted`` (every missing one is named, with what the file has).
    """
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise BaselineError(f"--compare {path}: cannot read it: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise BaselineError(f"--compare {path}: not JSON: {exc}") from exc
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list) or not all(
        isinstance(r, dict)
        and isinstance(r.get("workload"), str)
        and isinstance(r.get("nodes"), int)
        for r in results
    ):
        raise BaselineError(
            f"--compare {path}: not the output of `podium bench -o json` "
            '(a "results" list of workloads)'
        )
    saved = {(r["workload"], r["nodes"]): r for r in results}
    missing = [f"{w} at {n} nodes" for w, n in wanted if (w, n) not in saved]
    if missing:
        have = ", ".join(f"{w} at {n} nodes" for w, n in saved) or "nothing"
        raise BaselineError(f"--compare {path} has no {'; no '.join(missing)} (it has: {have})")
    return saved


def _figures(result: dict[str, Any]) -> dict[str, float]:
    def number(value: Any) -> float:
        return float(value) if isinstance(value, int | float) else math.nan

    rss = number(result.get("peak_rss_bytes"))
    return {
        "pods_per_second": number(result.get("throughput", {}).get("average")),
        "attempt_p99_ms": number(result.get("attempt_latency_ms", {}).get("p99")),
        "cpu_per_pod_ms": cpu_per_pod_ms(result),
        "peak_rss_bytes": rss if rss > 0 else math.nan,
    }


def _gang_figures(result: dict[str, Any]) -> dict[str, float]:
    wait = (result.get("gangs") or {}).get("last_pod_to_bound_ms") or {}
    return {
        key: float(value) if isinstance(value := wait.get(q), int | float) else math.nan
        for key, q in zip(COMPARED_GANGS, ("p50", "p99"), strict=True)
    }


def compare(result: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    """Ratios new / saved of :data:`COMPARED`, and of :data:`COMPARED_GANGS` for a gang
    workload (NaN where either run lacks the figure: a run with ``--server`` measures no
    latency, CPU or RSS)."""
    new, old = _figures(result), _figures(saved)
    keys: tuple[str, ...] = COMPARED
    if "gangs" in result:
        new, old = {**new, **_gang_figures(result)}, {**old, **_gang_figures(saved)}
        keys += COMPARED_GANGS
    return {
        key: new[key] / old[key] if old[key] and not math.isnan(old[key]) else math.nan
        for key in keys
    }


def render_comparison(results: Sequence[dict[str, Any]], path: str) -> str:
    """``--compare``'s table: per workload and size, this run's figure, the saved one, and the
    ratio (above 1: more pods/s; for the others, more is worse)."""
    rows: list[Sequence[str]] = [
        (f"VS {path}", "NODES", "PODS/S", "RATIO", "P99 MS", "RATIO", "CPU/POD MS", "RATIO",
         "RSS MIB", "RATIO"),
    ]  # fmt: skip
    for r in results:
        c = r["compare"]
        rows.append(
            (
                r["workload"],
                str(r["nodes"]),
                _fmt(r["throughput"]["average"]),
                _ratio(c["pods_per_second"]),
                _fmt(r["attempt_latency_ms"]["p99"], 2),
                _ratio(c["attempt_p99_ms"]),
                _fmt(cpu_per_pod_ms(r), 3),
                _ratio(c["cpu_per_pod_ms"]),
                _fmt(r["peak_rss_bytes"] / 2**20) if r["peak_rss_bytes"] else "-",
                _ratio(c["peak_rss_bytes"]),
            )
        )
    return _columns(rows)


def render_gang_comparison(results: Sequence[dict[str, Any]], path: str) -> str:
    """``--compare``'s table of the gang workloads' figures (their pods/s are in
    :func:`render_comparison`'s): the p50 and p99 of a group's time from its last pod to its
    last bind, beside their ratio to the saved run's (above 1 is slower); ``""`` when no gang
    workload ran."""
    rows: list[Sequence[str]] = [
        (f"GANGS VS {path}", "NODES", "GROUP P50 MS", "RATIO", "GROUP P99 MS", "RATIO"),
    ]
    for r in results:
        if "gangs" not in r:
            continue
        wait, c = r["gangs"]["last_pod_to_bound_ms"], r["compare"]
        rows.append(
            (
                r["workload"],
                str(r["nodes"]),
                _fmt(wait["p50"], 1),
                _ratio(c["group_p50_ms"]),
                _fmt(wait["p99"], 1),
                _ratio(c["group_p99_ms"]),
            )
        )
    return _columns(rows) if len(rows) > 1 else ""


def _ratio(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}x"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value
