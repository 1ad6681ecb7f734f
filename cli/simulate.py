"""``podium simulate``: schedule the pending pods of a cluster dump offline and show where each
goes, or why it cannot go anywhere; nothing is bound.

Kubernetes counterpart: none in kubectl; the decisions are kube-scheduler's (the same actors
run in process, :func:`podium.actors.simulation.run.simulate`), on a dump such as ``kubectl get
nodes,pods,... -A -o json`` prints.

Owns: nothing; reads the files, runs the simulation, prints.
Emits: a table of placements and a per-pool summary, or JSON, on stdout; warnings and the
progress bar on stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from podium.cli.common.arguments import add_command, add_file_options
from podium.cli.common.output import (
    EXIT_OK,
    Progress,
    add_output_option,
    dump_json,
    err,
    print_group,
    skipped_doc,
    skipped_line,
    table,
    verdict_table,
)
from podium.cli.config import configured
from podium.protocol.errors import LoadErrors

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from podium.actors.framework.nodeinfo import NodeInfo
    from podium.actors.simulation.cluster import GroupOutcome, PodOutcome

# The actors (and numpy with them) are imported inside the command: every ``podium`` command
# builds this module's parser (issue 26 point 5).

__all__ = ["POOL_LABELS", "cmd_simulate", "register"]

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


def _outcome_json(
    o: PodOutcome, *, explain: bool, group: GroupOutcome | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "namespace": o.pod.namespace,
        "name": o.pod.name,
        "node": o.node,
        "message": o.message,
        "attempts": o.attempts,
    }
    if o.preempted:
        entry["preempted"] = list(o.preempted)
    if group is not None:
        entry["group"] = group.key
        entry["group_outcome"] = group.verdict
        if explain and group.verdict != "basic":
            # The group's verdict, as ``groups`` explains it: its message and its blockers.
            g = group.placement()
            entry["group_message"] = g.message
            entry["group_blocking"] = list(g.blocking)
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


def _group_json(group: GroupOutcome, *, explain: bool) -> dict[str, Any]:
    """One pod group of ``-o json``'s ``groups``: how it ended, and with ``--explain`` (for
    a group not placed) why, as ``podium explain podgroup/...`` says it."""
    g = group.placement()
    doc: dict[str, Any] = {
        "group": group.key,
        "policy": g.policy,
        "min_count": g.min_count,
        "bound": g.bound,
        "needed": g.needed,
        "fit": g.fit,
        "outcome": group.verdict,
    }
    if explain:
        import msgspec

        doc["message"] = g.message
        doc["blocking"] = list(g.blocking)
        doc["hints"] = msgspec.to_builtins(g.hints)
        doc["preempted"] = list(g.preempted)
    return doc


def _member_group_line(group: GroupOutcome) -> str | None:
    """Under a member's ``--explain`` block, its group's verdict: ``Group:     ml/train (not
    placed; blocked by ml/w6, ml/w7)``, ``(placed)`` or ``(waiting: waiting for pod group ...)``;
    None for a ``basic`` group (its pods are ordinary pods)."""
    verdict = group.verdict
    if verdict == "basic":
        return None
    g = group.placement()
    line = f"Group:     {group.key} ({verdict}"
    if verdict == "waiting" and g.message:
        line += f": {g.message}"
    elif g.blocking and verdict == "not placed":
        line += f"; blocked by {', '.join(g.blocking)}"
    return line + ")"


def _groups_line(groups: Sequence[GroupOutcome]) -> str:
    """``2 pod groups: 1 placed, 1 not placed`` (the outcomes there are, in a fixed order)."""
    counts: dict[str, int] = {}
    for g in groups:
        counts[g.verdict] = counts.get(g.verdict, 0) + 1
    parts = [
        f"{counts[v]} {v}" for v in ("placed", "not placed", "waiting", "basic") if v in counts
    ]
    noun = "pod group" if len(groups) == 1 else "pod groups"
    return f"{len(groups)} {noun}: {', '.join(parts)}"


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


def _print_simulation(
    outcomes: Sequence[PodOutcome],
    before: dict[str, NodeInfo],
    after: dict[str, NodeInfo],
    pool_label: str | None,
    out: TextIO,
    *,
    explain: bool = False,
    groups: Mapping[str, GroupOutcome] | None = None,
) -> None:
    from podium.actors.cycle.explain import placement
    from podium.protocol.gangs import pod_group_key

    groups = groups or {}
    # The GROUP column only when some pod names a group: tables without groups stay as they were.
    head = ["NAMESPACE", "NAME", "NODE", "ATTEMPTS", *(["GROUP"] if groups else []), "REASON"]
    rows = [head]
    for o in outcomes:
        reason = o.message or ""
        if o.preempted:
            evicted = f"preempted {', '.join(o.preempted)}"
            reason = f"{evicted}; {reason}" if reason else evicted
        row = [o.pod.namespace, o.pod.name, o.node or "<none>", str(o.attempts)]
        if groups:
            group = groups.get(pod_group_key(o.pod.pod) or "")
            row.append(f"{group.key} ({group.verdict})" if group is not None else "")
        rows.append([*row, reason])
    table(rows, out)
    if explain:
        for o in outcomes:
            where = f"on {o.node}" if o.node is not None else "unschedulable"
            out.write(f"\n{o.pod.namespace}/{o.pod.name} ({where}):\n")
            group = groups.get(pod_group_key(o.pod.pod) or "") if groups else None
            line = _member_group_line(group) if group is not None else None
            if line is not None:
                out.write(f"{line}\n")
            verdict_table(placement(o.pod, o.result, attempts=o.attempts, explain=True).nodes, out)
        for group in groups.values():
            if group.verdict in ("not placed", "waiting"):
                out.write("\n")
                print_group(group.placement(), out, members=False)
    placed = sum(1 for o in outcomes if o.node is not None)
    unschedulable = len(outcomes) - placed
    out.write(
        f"\n{placed} placed, {unschedulable} unschedulable, of {len(outcomes)} pending pods\n"
    )
    if groups:
        out.write(f"{_groups_line(list(groups.values()))}\n")
    out.write("\n")
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
    table(rows, out)


def cmd_simulate(args: argparse.Namespace) -> int:
    """``podium simulate -f FILE...``: place the pending pods offline and print the result."""
    import dataclasses

    from podium.actors.daemon.logs import configure as configure_logging
    from podium.actors.simulation.cluster import (
        SimulationError,
        build_cluster,
        final_node_infos,
        group_outcomes,
    )
    from podium.actors.simulation.run import simulate
    from podium.actors.supervisor.supervisor import load_plugin_set
    from podium.protocol.gangs import pod_group_key
    from podium.protocol.loader import load_all

    as_json = args.output == "json"
    config = configured(args)
    plugins = load_plugin_set(config)
    if args.no_extenders:
        plugins = dataclasses.replace(plugins, extenders=())
    for w in plugins.warnings:
        err(f"warning: {w}")
    loaded = load_all(args.file, stdin=sys.stdin.buffer, strict=args.strict)
    for w in loaded.warnings:
        err(f"warning: {w}")
    if loaded.skipped:
        err(skipped_line(loaded.skipped))
    objects = loaded.objects
    try:
        cluster = build_cluster(objects, scheduler_name=config.scheduler_name)
        for w in cluster.warnings:
            err(f"warning: {w}")
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
    except SimulationError as exc:
        if not exc.objects:
            raise
        # Named as a load error is: the file, the object, the field.
        raise LoadErrors(
            [loaded.error_at(at, reason, path=path) for at, reason, path in exc.objects]
        ) from None
    progress.close()
    groups = group_outcomes(objects, outcomes)
    if as_json:
        doc: dict[str, Any] = {
            "pods": [
                _outcome_json(
                    o, explain=args.explain, group=groups.get(pod_group_key(o.pod.pod) or "")
                )
                for o in outcomes
            ],
            "skipped": skipped_doc(loaded.skipped),
        }
        if groups:
            doc["groups"] = [_group_json(g, explain=args.explain) for g in groups.values()]
        dump_json(doc)
    else:
        _print_simulation(
            outcomes,
            cluster.infos,
            final_node_infos(cluster, outcomes),
            args.pool_label,
            sys.stdout,
            explain=args.explain,
            groups=groups,
        )
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``simulate`` to ``podium``."""
    sim = add_command(
        subparsers,
        "simulate",
        summary="schedule a cluster dump offline and show where each pending pod goes",
        description=(
            "Schedule the pending pods of a cluster dump offline, with the Kubernetes scheduler's "
            "predicates and priorities, and print where each goes or why it cannot go anywhere. "
            "Nodes, bound pods (spec.nodeName set) and the other objects (PVs, PVCs, "
            "StorageClasses, Services, ReplicaSets, ...) form the cluster. Nothing is bound. "
            "Objects of kinds the scheduler does not use (Deployment, ConfigMap, Event, ...) "
            "are skipped, with one summary line on stderr (--strict refuses them)."
        ),
        epilog=(
            "examples:\n"
            "  kubectl get nodes,pods,pv,pvc,svc,rs,sts,storageclass,priorityclass -A -o json > dump.json\n"
            "  podium simulate -f dump.json\n"
            "  podium simulate -f examples/cluster.yaml --seed 1 --explain -o json\n"
            "  podium simulate -f examples/cluster.yaml --policy examples/policy-seed-004.json"
        ),
    )
    add_file_options(
        sim,
        help_text=(
            "a JSON or YAML file (one object, a kind: List, or multi-document YAML); '-' for "
            "stdin; repeatable"
        ),
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
        help=(
            "every examined node's verdict per pod: reasons and total in the table,"
            " reasons and each priority's score with -o json"
        ),
    )
    sim.add_argument(
        "--no-extenders",
        action="store_true",
        help=(
            "do not call the policy's extenders (their ignoredByScheduler resources stay"
            " unchecked); by default simulate calls them as the daemon does"
        ),
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
    add_output_option(sim, ("table", "json"), "table")
    sim.set_defaults(func=cmd_simulate)
