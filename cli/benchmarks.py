"""``podium bench``'s flags; the run is :func:`podium.cli.bench.command.cmd_bench`'s.

Kubernetes counterpart: ``test/integration/scheduler_perf``'s command line (``-perf-scheduling-
label-filter`` and friends).

The flags live apart from :mod:`podium.cli.bench` so that building ``podium``'s parser does not
import the benchmarks (their workloads import the actors' plugin names, their runs start
daemons): every command, ``podium --version`` included, would pay for them (issue 26 point 5).

Owns: nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from podium.cli.common.arguments import add_command, at_least
from podium.cli.common.output import add_output_option

__all__ = ["GANG_WORKLOADS", "SCHEDULER_PERF_WORKLOADS", "WORKLOAD_NAMES", "register"]

SCHEDULER_PERF_WORKLOADS = (
    "SchedulingBasic",
    "SchedulingPodAntiAffinity",
    "SchedulingPodAffinity",
    "SchedulingNodeAffinity",
    "TopologySpreading",
    "Unschedulable",
    "SchedulingWithMixedChurn",
)
"""scheduler_perf's workloads."""

GANG_WORKLOADS = {
    "OneCPUPods": "the gangs' pods without groups, 0.8x the free CPU (their baseline)",
    "Gang8": "gangs of 8 pods of 1 CPU (PodGroup minCount 8), 0.8x the free CPU: all fit",
    "Gang32": "gangs of 32, 0.8x the free CPU",
    "Gang128": "gangs of 128, 0.8x the free CPU",
    "Gang8Overfull": "gangs of 8, 1.5x the free CPU: those that do not fit stay unbound",
    "Gang32Overfull": "gangs of 32, 1.5x the free CPU",
    "Gang128Overfull": "gangs of 128, 1.5x the free CPU",
}
"""The gang workloads (issue 24) and their line in the help."""

WORKLOAD_NAMES = (*SCHEDULER_PERF_WORKLOADS, *GANG_WORKLOADS)
"""The names of :data:`podium.cli.bench.workload.WORKLOADS`, in its order (a test keeps them
equal), for ``--workload``'s choices and the help."""


def _cmd_bench(args: argparse.Namespace) -> int:
    from podium.cli.bench.command import cmd_bench

    return cmd_bench(args)


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
            "histogram, the daemon's peak RSS and CPU seconds, and its recovery time on restart.\n"
            "Gang workloads also report their pod groups fully, partly (the run fails) and not\n"
            "bound, and the p50/p99 time from a group's last pod created to its last member bound."
        ),
        epilog=(
            "workloads: " + ", ".join(SCHEDULER_PERF_WORKLOADS) + "\n\n"
            "gang workloads (issue 24; 500 and 5000 nodes, no initial pods, one namespace):\n"
            + "".join(f"  {name:<18}{line}\n" for name, line in GANG_WORKLOADS.items())
            + "\n"
            "examples:\n"
            "  podium bench                                        # every workload, every size\n"
            "  podium bench --workload SchedulingBasic --nodes 5000 --runs 3\n"
            "  podium bench --workload SchedulingBasic --nodes 5000 --pods 150000   # RSS, ~5 min\n"
            "  podium bench --server 127.0.0.1:7070 --workload SchedulingBasic --nodes 500\n"
            "  podium bench --workload SchedulingBasic --nodes 500 -o json > base.json\n"
            "  podium bench --workload SchedulingBasic --nodes 500 --compare base.json\n"
            "  podium bench --workload OneCPUPods --workload Gang32 --nodes 5000   # and the ratio\n"
            "\nWith --server the daemon must be empty; latency, RSS, CPU and recovery are not "
            "measured (they need the daemon's metrics and process)."
        ),
    )
    bench.add_argument(
        "--workload",
        action="append",
        choices=WORKLOAD_NAMES,
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
        "--compare",
        type=Path,
        metavar="FILE",
        help=(
            "a saved run (`podium bench -o json > FILE`): print each figure's ratio against "
            "it (pods/s, attempt p99, CPU per pod, peak RSS); it must hold every workload and "
            "size run"
        ),
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
    bench.set_defaults(func=_cmd_bench)
