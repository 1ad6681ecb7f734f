#!/usr/bin/env python3
"""The in-process cost of a scheduling decision per pod: the filter and score stages alone.

What the scheduler's batch loop does per pod, without the actors, the store or the hops:
``FilterStage.run``, ``ScoreStage.run``, then ``fold_assumed`` of the chosen node, with SchedulingBasic's cluster (cli/bench/workload.py:
4-CPU nodes over three zones, the default policy, 1000 initial pods placed first) and its
pods (100m / 500Mi, all of one spec: one equivalence class).

Usage: ops/decision-cost.py [--nodes 500 5000] [--pods 2000] [--batch 32] [--runs 3]
       [--profile] [--no-refresh]

A tenth of the pods (``PLUGIN_METRICS_SAMPLE_PERCENT``) are sampled attempts, their plugins
timed, as the filter actor draws them. Between batches the nodes the last two batches placed pods on are swapped in anew, as the
daemon's snapshot refresh brings the cache's assumed and bound NodeInfos (``--no-refresh``:
not); the rows those refreshes stamped changed are counted.

Prints per node count the CPU microseconds a decided pod (``time.process_time``), the
minimum and the median over ``--runs``, the rows the refreshes stamped changed a pod
(each re-judged and re-scored at the class's next pod), and where the pods went (a hash of the placements,
to compare trees: the same cluster and seed must place the same pods on the same nodes).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import random
import statistics
import time

import msgspec

from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot, assumed_pod, fold_assumed
from podium.actors.plugins.policy import build_plugins, default_policy
from podium.cli.bench.workload import DEFAULT_POD, ZONES, make_node, make_pods
from podium.protocol import metrics
from podium.protocol.objects import Pod, PodCondition, PodStatus

SAMPLED = metrics.PLUGIN_METRICS_SAMPLE_PERCENT / 100
"""The share of attempts the filter actor samples for the plugin metrics (their plugins timed)."""


def _ignore(plugin: str, point: str, status: str, seconds: float) -> None:
    """A sampled attempt's plugin timings, dropped (the daemon observes a histogram)."""


def _snapshot(nodes: int) -> Snapshot:
    infos = [NodeInfo(make_node(i, ZONES[i % len(ZONES)])) for i in range(nodes)]
    return Snapshot(infos)


def _decide_all(
    filters: FilterStage,
    scores: ScoreStage,
    snapshot: Snapshot,
    pods: list[PodInfo],
    batch: int,
    refresh: bool,
) -> list[str | None]:
    """Decide ``pods`` in batches of ``batch``, each placement folded in before the next.

    ``refresh``: before each batch, bring in the NodeInfos the daemon's snapshot refresh
    brings: for every node the last batch placed pods on, the cache's after its assume (a
    clone holding the same PodInfos the batch folded in), and for every node the batch before
    it placed pods on, the cache's after the store confirmed those binds (each assumed pod
    replaced by its bound revision: a new resourceVersion and the PodScheduled condition).

    Returns:
        Where each pod went, and how many rows the refreshes stamped changed (re-judged by
        the class's verdict and re-scored on its ring at its next pod).
    """
    placed: list[str | None] = []
    sampling = random.Random(2)
    last: dict[str, list[PodInfo]] = {}
    before_last: dict[str, list[PodInfo]] = {}
    stamped = 0
    for first in range(0, len(pods), batch):
        if refresh:
            version = snapshot.columns.version
            for name in sorted(last.keys() | before_last.keys()):
                info = snapshot.by_name[name].clone()
                for assumed in before_last.get(name, ()):
                    info.remove_pod(assumed)
                    info.add_pod(assumed.with_pod(_bound(assumed.pod)))
                snapshot.replace_node_info(info)
            stamped += snapshot.columns.version - version
        folded: dict[str, list[PodInfo]] = {}
        for pod in pods[first : first + batch]:
            # The filter actor's plugin-metrics draw: a sampled attempt times each plugin.
            observe = _ignore if sampling.random() < SAMPLED else None
            result, feasible = filters.run(pod, snapshot, observe=observe)
            if feasible:
                result = scores.run(pod, snapshot, result, feasible, observe=observe)
            placed.append(result.node)
            if result.node is not None:
                assumed = assumed_pod(pod, result.node)
                fold_assumed(snapshot, pod, result.node, assumed=assumed)
                folded.setdefault(result.node, []).append(assumed)
        before_last, last = last, folded
    return placed, stamped


def _bound(pod: Pod) -> Pod:
    """The store's revision of an assumed pod once bound."""
    status = PodStatus(conditions=[PodCondition(type="PodScheduled", status="True")])
    metadata = msgspec.structs.replace(pod.metadata, resource_version="2")
    return msgspec.structs.replace(pod, metadata=metadata, status=status)


def one_run(
    nodes: int, pods: int, batch: int, profile: bool, refresh: bool
) -> tuple[float, str, float]:
    filters_list, scorers = build_plugins(default_policy())
    filters = FilterStage(filters_list)
    scores = ScoreStage(scorers, rng=random.Random(1))
    snapshot = _snapshot(nodes)
    init = [PodInfo(p) for p in make_pods(DEFAULT_POD, "init", "default", 1000)]
    _decide_all(filters, scores, snapshot, init, batch, refresh)
    measured = [PodInfo(p) for p in make_pods(DEFAULT_POD, "pod", "default", pods)]
    profiler = cProfile.Profile() if profile else None
    started = time.process_time()
    if profiler is not None:
        profiler.enable()
    placed, stamped = _decide_all(filters, scores, snapshot, measured, batch, refresh)
    if profiler is not None:
        profiler.disable()
    spent = time.process_time() - started
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    digest = hashlib.sha256(msgspec.json.encode(placed)).hexdigest()[:12]
    return spent / pods * 1e6, digest, stamped / pods


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--no-refresh",
        dest="refresh",
        action="store_false",
        help="no snapshot refresh between batches (only the batch's own folds change rows)",
    )
    args = parser.parse_args()
    for nodes in args.nodes:
        costs, digests, stamps = [], set(), set()
        for _ in range(args.runs):
            cost, digest, stamped = one_run(
                nodes, args.pods, args.batch, args.profile, args.refresh
            )
            costs.append(cost)
            digests.add(digest)
            stamps.add(f"{stamped:.2f}")
        print(
            f"nodes {nodes}: {min(costs):.0f} us a pod (min), {statistics.median(costs):.0f}"
            f" (median of {args.runs}); rows the refreshes stamped a pod {','.join(sorted(stamps))};"
            f" placements {','.join(sorted(digests))}"
        )


if __name__ == "__main__":
    main()
