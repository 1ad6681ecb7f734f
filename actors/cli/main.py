"""The ``podium`` command line.

Exit codes: 0 ok, 1 rejected input or failure, 2 usage. Human tables on stdout by default,
``-o json`` for machines; warnings and progress go to stderr (progress only on a terminal and
never with ``-o json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TextIO

import msgspec
import trio

from podium.actors.bench.scheduler_perf import register_bench_command
from podium.actors.cli.commands import register as register_client_commands
from podium.actors.cli.db import register as register_db_commands
from podium.actors.console import Progress
from podium.actors.core.simulation import (
    PodOutcome,
    SimulationError,
    build_cluster,
    final_node_infos,
)
from podium.actors.daemon.logs import configure as configure_logging
from podium.actors.daemon.serve import add_serve_flags, check_access, parse_address, serve
from podium.actors.framework.nodeinfo import NodeInfo
from podium.actors.simulate import simulate
from podium.actors.supervisor import load_plugin_set
from podium.protocol.config import SchedulerConfig, load_config
from podium.protocol.errors import PodiumError, StoreError
from podium.protocol.loader import load_files, load_text

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

# Node labels that name a node pool on the common platforms, most specific first.
POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "nodepool",
    "pool",
    "node.kubernetes.io/instance-type",
)


def _version() -> str:
    try:
        return version("podium")
    except PackageNotFoundError:  # running from a source tree without an install
        return "0+unknown"


# --------------------------------------------------------------------------- progress


# --------------------------------------------------------------------------- simulate


def _outcome_json(o: PodOutcome, *, explain: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "namespace": o.pod.namespace,
        "name": o.pod.name,
        "node": o.node,
        "message": o.message,
        "attempts": o.attempts,
    }
    if o.preempted:
        entry["preempted"] = list(o.preempted)
    if explain:
        r = o.result
        nodes: dict[str, Any] = {}
        for name in r.examined:
            if name in r.failed:
                nodes[name] = {
                    "fits": False,
                    "reasons": list(r.failed[name]),
                    "scores": {},
                    "total": None,
                }
            else:
                nodes[name] = {
                    "fits": True,
                    "reasons": [],
                    "scores": r.scores.get(name, {}),
                    "total": r.totals.get(name),
                }
        entry["nodes"] = nodes
    return entry


def _pool(info: NodeInfo, pool_label: str | None) -> str:
    labels = info.labels
    if pool_label:
        return labels.get(pool_label, "-")
    for key in POOL_LABELS:
        if key in labels:
            return labels[key]
    return "-"


def _percent(used: int, total: int) -> str:
    return f"{100 * used / total:.0f}%" if total else "-"


def _table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def _print_simulation(
    outcomes: Sequence[PodOutcome],
    before: dict[str, NodeInfo],
    after: dict[str, NodeInfo],
    pool_label: str | None,
    out: TextIO,
) -> None:
    rows = [["NAMESPACE", "NAME", "NODE", "ATTEMPTS", "REASON"]]
    for o in outcomes:
        reason = o.message or ""
        if o.preempted:
            evicted = f"preempted {', '.join(o.preempted)}"
            reason = f"{evicted}; {reason}" if reason else evicted
        rows.append([o.pod.namespace, o.pod.name, o.node or "<none>", str(o.attempts), reason])
    _table(rows, out)
    placed = sum(1 for o in outcomes if o.node is not None)
    out.write(
        f"\n{placed} placed, {len(outcomes) - placed} unschedulable, of {len(outcomes)} pending pods\n\n"
    )
    pools: dict[str, list[str]] = {}
    for name, info in before.items():
        pools.setdefault(_pool(info, pool_label), []).append(name)
    rows = [
        ["POOL", "NODES", "CPU BEFORE", "CPU AFTER", "MEMORY BEFORE", "MEMORY AFTER", "PODS AFTER"]
    ]
    for pool in sorted(pools):
        names = pools[pool]

        def total(
            infos: dict[str, NodeInfo], attr: str, names: list[str] = names
        ) -> tuple[int, int]:
            used = sum(getattr(infos[n].requested, attr) for n in names)
            cap = sum(getattr(infos[n].allocatable, attr) for n in names)
            return used, cap

        cpu_b, cpu_a = total(before, "milli_cpu"), total(after, "milli_cpu")
        mem_b, mem_a = total(before, "memory"), total(after, "memory")
        pods = sum(len(after[n].pods) for n in names)
        rows.append(
            [
                pool,
                str(len(names)),
                _percent(*cpu_b),
                _percent(*cpu_a),
                _percent(*mem_b),
                _percent(*mem_a),
                str(pods),
            ]
        )
    _table(rows, out)


def _configured(args: argparse.Namespace) -> SchedulerConfig:
    """The configuration: flags over the config file over the defaults (BRIEF "Config")."""
    config = load_config(args.config)
    for w in config.warnings:
        print(f"warning: {w}", file=sys.stderr)
    changes: dict[str, Any] = {}
    if getattr(args, "policy", None):
        changes["policy_file"] = Path(args.policy)
    if getattr(args, "scheduler_name", None):
        changes["scheduler_name"] = args.scheduler_name
    podium_changes = {
        key: value
        for key, value in (
            ("listen", getattr(args, "listen", None)),
            ("unix", getattr(args, "unix", None)),
            ("metrics", getattr(args, "metrics", None)),
            ("database", getattr(args, "db", None)),
            ("log_format", getattr(args, "log_format", None)),
            ("log_level", getattr(args, "log_level", None)),
            ("random_seed", getattr(args, "seed", None)),
            ("token_file", getattr(args, "token_file", None)),
            ("tls_cert", getattr(args, "tls_cert", None)),
            ("tls_key", getattr(args, "tls_key", None)),
            ("insecure_plaintext", getattr(args, "insecure_plaintext", None) or None),
            ("unix_mode", getattr(args, "unix_mode", None)),
            ("max_connections", getattr(args, "max_connections", None)),
            ("max_in_flight_per_connection", getattr(args, "max_in_flight", None)),
            ("max_watchers", getattr(args, "max_watchers", None)),
            ("watch_buffer", getattr(args, "watch_buffer", None)),
            ("max_frame_bytes", getattr(args, "max_frame_bytes", None)),
        )
        if value is not None
    }
    if getattr(args, "listen", None) == "none":
        podium_changes["listen"] = None
    if getattr(args, "metrics", None) == "none":
        podium_changes["metrics"] = None
    if podium_changes:
        changes["podium"] = msgspec.structs.replace(config.podium, **podium_changes)
    return dataclasses.replace(config, **changes) if changes else config


def cmd_simulate(args: argparse.Namespace) -> int:
    as_json = args.output == "json"
    config = _configured(args)
    plugins = load_plugin_set(config)
    for w in plugins.warnings:
        print(f"warning: {w}", file=sys.stderr)
    files = [f for f in args.file if f != "-"]
    objects = load_files(files)
    if "-" in args.file:
        objects += load_text(sys.stdin.buffer.read(), source="-")
    cluster = build_cluster(objects, scheduler_name=config.scheduler_name)
    for w in cluster.warnings:
        print(f"warning: {w}", file=sys.stderr)
    # The actors' own warnings repeat the ones above; only their errors are worth showing.
    configure_logging("text", "error")
    progress = Progress("scheduling", len(cluster.pending), enabled=not as_json)
    outcomes = simulate(
        objects,
        config,
        plugins,
        seed=config.podium.random_seed,
        explain=args.explain,
        progress=progress.update,
    )
    progress.close()
    if as_json:
        doc = {"pods": [_outcome_json(o, explain=args.explain) for o in outcomes]}
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_simulation(
            outcomes,
            cluster.infos,
            final_node_infos(cluster, outcomes),
            args.pool_label,
            sys.stdout,
        )
    return EXIT_OK


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions of a (nested) group, for one message each."""
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        config = _configured(args)
        if config.podium.listen is not None:
            parse_address(config.podium.listen)
        if config.podium.metrics is not None:
            parse_address(config.podium.metrics)
        check_access(config.podium)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    configure_logging(config.podium.log_format, config.podium.log_level)
    failed = False
    try:
        trio.run(lambda: serve(config, version=_version()))
    except* OSError as group:
        for error in _leaves(group):
            print(f"error: cannot listen: {error}", file=sys.stderr)
        failed = True
    except* StoreError as group:
        # Locked by another daemon, unreadable, or a commit failed: the log has the details.
        for error in _leaves(group):
            print(f"error: {error}", file=sys.stderr)
        failed = True
    return EXIT_FAILED if failed else EXIT_OK


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="podium",
        description="Podium: a pod scheduler service with the Kubernetes scheduler's decisions.",
    )
    parser.add_argument("--version", action="version", version=f"podium {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser(
        "simulate",
        help="schedule a cluster dump offline and show where each pending pod goes",
        description=(
            "Schedule the pending pods of a cluster dump offline, with the Kubernetes scheduler's "
            "predicates and priorities, and print where each goes or why it cannot go anywhere. "
            "Nodes, bound pods (spec.nodeName set) and the other objects (PVs, PVCs, "
            "StorageClasses, Services, ReplicaSets, ...) form the cluster. Nothing is bound."
        ),
        epilog=(
            "examples:\n"
            "  kubectl get nodes,pods,pv,pvc,svc,rs,sts,storageclass,priorityclass -A -o json > dump.json\n"
            "  podium simulate -f dump.json\n"
            "  podium simulate -f examples/cluster.yaml --seed 1 --explain -o json\n"
            "  podium simulate -f examples/cluster.yaml --policy examples/policy-seed-004.json"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sim.add_argument(
        "-f",
        "--file",
        action="append",
        required=True,
        metavar="FILE",
        help="a JSON or YAML file (one object, a kind: List, or multi-document YAML); '-' for stdin; repeatable",
    )
    sim.add_argument(
        "--policy",
        metavar="FILE",
        help="a scheduler Policy file (JSON or YAML); default: the v1.14 default provider",
    )
    sim.add_argument(
        "--config",
        metavar="FILE",
        help="a KubeSchedulerConfiguration YAML (percentageOfNodesToScore, policy, ...)",
    )
    sim.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="seed the random tie-break between equally good nodes, for repeatable runs",
    )
    sim.add_argument(
        "--explain",
        action="store_true",
        help="with -o json: every examined node's reasons and scores per pod",
    )
    sim.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="schedule the pods whose spec.schedulerName is NAME (default: default-scheduler)",
    )
    sim.add_argument(
        "--pool-label",
        metavar="KEY",
        help="the node label that names a node pool in the summary (default: a well-known one)",
    )
    sim.add_argument(
        "-o",
        "--output",
        choices=("table", "json"),
        default="table",
        help="output format (default: table)",
    )
    sim.set_defaults(func=cmd_simulate)

    srv = sub.add_parser(
        "serve",
        help="run the scheduler daemon",
        description=(
            "Run Podium as a daemon: clients put nodes and pods over the protocol (TCP on "
            "loopback by default, or a Unix socket), Podium schedules every pending pod whose "
            "spec.schedulerName matches and binds it, and watchers see each binding. Prints one "
            'JSON line when ready: {"listen", "unix", "metrics", "revision"}. '
            "SIGTERM or SIGINT shuts down cleanly within shutdownGracePeriodSeconds."
        ),
        epilog=(
            "examples:\n"
            "  podium serve                                 # 127.0.0.1:7070, embedded defaults\n"
            "  podium serve --listen 127.0.0.1:0            # any free port (see the ready line)\n"
            "  podium serve --unix /run/podium.sock --listen none\n"
            "  podium serve --config scheduler-config.yaml --log-format json\n"
            "\nflags override the config file, which overrides the defaults."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    srv.add_argument("--config", metavar="FILE", help="a KubeSchedulerConfiguration YAML")
    srv.add_argument("--policy", metavar="FILE", help="a scheduler Policy file (JSON or YAML)")
    srv.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="TCP address of the protocol (default 127.0.0.1:7070; port 0 picks one; 'none' disables)",
    )
    srv.add_argument("--unix", metavar="PATH", help="also listen on a Unix socket at PATH")
    srv.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        help=(
            "HTTP address for /metrics, /healthz, /livez and /readyz (default 127.0.0.1:7071; "
            "port 0 picks one; 'none' disables)"
        ),
    )
    srv.add_argument(
        "--db",
        metavar="PATH",
        help="the SQLite database holding every object and the event log (default ./podium.db)",
    )
    srv.add_argument("--seed", type=int, metavar="N", help="seed the tie-break for repeatable runs")
    srv.add_argument(
        "--scheduler-name", metavar="NAME", help="schedule pods with this schedulerName"
    )
    srv.add_argument("--log-format", choices=("text", "json"), help="log lines as text or JSON")
    srv.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), help="the lowest level logged"
    )
    add_serve_flags(srv)
    srv.set_defaults(func=cmd_serve)
    register_client_commands(sub)
    register_db_commands(sub)
    register_bench_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except (PodiumError, SimulationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # `podium simulate ... | head`
        return EXIT_OK
    return code


if __name__ == "__main__":
    sys.exit(main())
