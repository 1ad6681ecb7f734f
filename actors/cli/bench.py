"""``podium bench``: the flags, the progress bar and the report (a table or JSON) of the
benchmark :mod:`podium.actors.bench.scheduler_perf` runs.

Kubernetes counterpart: ``test/integration/scheduler_perf``'s command line (``-perf-scheduling-
label-filter`` and friends) and its ``dataItems`` JSON.

Owns: nothing.
Emits: a progress bar and one line per finished workload and size on stderr; a table or JSON
on stdout.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

from podium.actors.bench.scheduler_perf import plan, run_one, summarize
from podium.actors.bench.workload import WORKLOADS
from podium.actors.cli.arguments import add_command, at_least
from podium.actors.cli.output import EXIT_OK, Progress, add_output_option, dump_json, err, out

__all__ = ["cmd_bench", "register", "render_table"]


def cmd_bench(args: argparse.Namespace) -> int:
    """``podium bench``: run the plan, each run ``--runs`` times, and print the medians."""
    as_json = args.output == "json"
    results: list[dict[str, Any]] = []
    for workload, nodes, measured in list(plan(args.workload or (), args.nodes, args.pods)):
        runs = []
        for run in range(args.runs):
            label = f"{workload.name} {nodes} nodes" + (f" run {run + 1}" if args.runs > 1 else "")
            bar = Progress(label, measured, enabled=not as_json)
            try:
                runs.append(
                    run_one(
                        workload,
                        nodes,
                        measured,
                        server=args.server,
                        progress=bar.update,
                        serve_args=args.serve_arg or (),
                    )
                )
            finally:
                bar.close()
        results.append(summarize(runs))
        # One line per finished workload and size, on stderr in either format: a long
        # machine-read run still shows that it moves.
        err(f"{workload.name} {nodes} nodes: {results[-1]['throughput']['average']:.0f} pods/s")
    if as_json:
        dump_json({"results": _json_safe(results)})
    else:
        out(render_table(results))
    return EXIT_OK


def _fmt(value: float, digits: int = 0) -> str:
    return "-" if math.isnan(value) else f"{value:,.{digits}f}"


def render_table(results: Sequence[dict[str, Any]]) -> str:
    """The summaries for people: a row per workload and size, the figures right-aligned."""
    header = (
        "WORKLOAD",
        "NODES",
        "PODS",
        "AVG/S",
        "P50/S",
        "P90/S",
        "P99/S",
        "LAT P50 MS",
        "LAT P99 MS",
        "PEAK RSS MIB",
        "CPU S",
        "RECOVERY S",
    )
    rows = [header]
    for r in results:
        t, lat = r["throughput"], r["attempt_latency_ms"]
        rows.append(
            (
                r["workload"],
                str(r["nodes"]),
                str(r["pods"]),
                _fmt(t["average"]),
                _fmt(t["p50"]),
                _fmt(t["p90"]),
                _fmt(t["p99"]),
                _fmt(lat["p50"], 2),
                _fmt(lat["p99"], 2),
                _fmt(r["peak_rss_bytes"] / 2**20) if r["peak_rss_bytes"] else "-",
                _fmt(r["cpu_seconds"], 1),
                _fmt(r["recovery_seconds"], 2) if "recovery_seconds" in r else "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "   ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``bench`` to ``podium``."""
    bench = add_command(
        subparsers,
        "bench",
        summary="measure throughput and latency on the Kubernetes scheduler's benchmark workloads",
        description=(
            "Run the Kubernetes scheduler's benchmark workloads (test/integration/scheduler_perf)\n"
            "against a fresh `podium serve` per run (or --server): create the nodes and the\n"
            "initial pods through the protocol, then create the measured pods as a client would\n"
            "and count their bindings. Reports throughput in 1 s windows (average, p50/p90/p99,\n"
            "as scheduler_perf computes it), scheduling-attempt latency from the daemon's\n"
            "histogram, the daemon's peak RSS and CPU seconds, and its recovery time on restart."
        ),
        epilog=(
            "workloads: " + ", ".join(WORKLOADS) + "\n\n"
            "examples:\n"
            "  podium bench                                        # every workload, every size\n"
            "  podium bench --workload SchedulingBasic --nodes 5000 --runs 3\n"
            "  podium bench --workload SchedulingBasic --nodes 5000 --pods 150000   # RSS, ~5 min\n"
            "  podium bench --server 127.0.0.1:7070 --workload SchedulingBasic --nodes 500\n"
            "\nWith --server the daemon must be empty; latency, RSS, CPU and recovery are not "
            "measured (they need the daemon's metrics and process)."
        ),
    )
    bench.add_argument(
        "--workload",
        action="append",
        choices=list(WORKLOADS),
        metavar="NAME",
        help="a workload to run (repeatable; default: all)",
    )
    bench.add_argument(
        "--nodes",
        type=at_least(1),
        metavar="N",
        help="run at N nodes only (default: each workload's sizes)",
    )
    bench.add_argument(
        "--pods",
        type=at_least(1),
        metavar="N",
        help="measured pods (default: the workload's count)",
    )
    bench.add_argument(
        "--runs",
        type=at_least(1),
        default=1,
        metavar="N",
        help="repeat each run N times; figures are medians",
    )
    bench.add_argument(
        "--server", metavar="HOST:PORT", help="use this running daemon instead of starting one"
    )
    bench.add_argument(
        "--serve-arg",
        action="append",
        metavar="ARG",
        help=(
            "pass ARG to the `podium serve` each run starts (repeatable; a later --policy wins"
            " over a workload's), e.g. --serve-arg=--policy --serve-arg=extenders.json"
        ),
    )
    add_output_option(bench, ("table", "json"), "table")
    bench.set_defaults(func=cmd_bench)
