"""A sampled attempt (the plugin-metrics sample) on a class's ring decides there as every other
pod of the class does (actors/cycle/generic_scheduler.py): the same node, result, start index
and tie-break draws as an unsampled run, the class's verdict and ring kept, and each active
predicate and priority observed once with the time it ran in that attempt."""

from __future__ import annotations

import random

from builders import make_node, make_pod

from podium.actors.cycle.equivalence import Window
from podium.actors.cycle.generic_scheduler import FilterStage, PluginObserver, ScoreStage
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot, assumed_pod, fold_assumed
from podium.actors.plugins.policy import build_plugins, default_policy

NODES = 240  # above 100: a pod examines only some nodes, and the walk wraps
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def _snapshot() -> Snapshot:
    infos = []
    for i in range(NODES):
        # Room for two pods of 1500m on most nodes, one on every fifth: folds fill rows, so
        # the re-judged rows are rejected now and then.
        cpu = "2" if i % 5 == 0 else "3"
        node = make_node(f"n{i}").capacity(cpu=cpu, memory="8Gi", pods=110)
        node = node.label(ZONE, f"z{i % 3}").label(HOSTNAME, f"n{i}")
        infos.append(NodeInfo(node.condition("Ready", "True").obj()))
    return Snapshot(infos)


def _stages() -> tuple[FilterStage, ScoreStage]:
    filters, scorers = build_plugins(default_policy())
    return FilterStage(filters), ScoreStage(scorers, rng=random.Random(7))


def _pods(count: int) -> list[PodInfo]:
    return [make_pod(f"p{i}").req(cpu="1500m", memory="1Gi").info() for i in range(count)]


Seen = list[tuple[str, str, str, float]]


def _recorder() -> tuple[Seen, PluginObserver]:
    """A plugin observer and the list of what it was told."""
    seen: Seen = []

    def observe(plugin: str, point: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        seen.append((plugin, point, status, seconds))

    return seen, observe


def _decide(
    pods: list[PodInfo], sampled: set[int]
) -> tuple[list[tuple[object, ...]], list[Seen], FilterStage]:
    """Decide ``pods`` one after another, each placement folded in; the attempts at the
    indexes in ``sampled`` observed. Returns each attempt's outcome, each sampled attempt's
    observations, and the filter stage."""
    filters, scores = _stages()
    snapshot = _snapshot()
    outcomes: list[tuple[object, ...]] = []
    seen_all: list[Seen] = []
    for i, pod in enumerate(pods):
        seen, observe = _recorder()
        watch = observe if i in sampled else None
        result, feasible = filters.run(pod, snapshot, observe=watch)
        if feasible:
            result = scores.run(pod, snapshot, result, feasible, observe=watch)
        outcomes.append(
            (
                result.node,
                result.message,
                result.evaluated,
                result.feasible,
                result.failed_plugins,
                dict(result.reasons),
                filters.next_start_index,
                scores.rng.getstate(),
            )
        )
        if result.node is not None:
            fold_assumed(snapshot, pod, result.node, assumed=assumed_pod(pod, result.node))
        if i in sampled:
            seen_all.append(seen)
    return outcomes, seen_all, filters


def test_sampled_attempts_decide_as_unsampled_ones_on_the_ring() -> None:
    pods = _pods(NODES * 2 + 20)  # fills the cluster, then FitErrors
    plain, _, _ = _decide(pods, set())
    sampled, _, _ = _decide(pods, set(range(1, len(pods), 3)))
    assert sampled == plain
    assert any(o[0] is None for o in plain)  # the run reaches FitErrors too


def test_a_sampled_attempt_keeps_the_class_ring_and_observes_each_plugin_once() -> None:
    pods = _pods(12)
    filters, scores = _stages()
    snapshot = _snapshot()
    rings = []
    observations: list[Seen] = []
    for i, pod in enumerate(pods):
        seen, observe = _recorder()
        result, feasible = filters.run(pod, snapshot, observe=observe if i else None)
        # Sampled or not, every pod walks the class's ring (the first one builds it).
        assert isinstance(feasible, Window)
        result = scores.run(pod, snapshot, result, feasible, observe=observe if i else None)
        assert result.node is not None
        fold_assumed(snapshot, pod, result.node, assumed=assumed_pod(pod, result.node))
        verdict = next(iter(filters.equivalence._verdicts.values()))
        rings.append(verdict.ring)
        if i:
            observations.append(seen)
    # One verdict, one ring from the first pod on: no sampled attempt made its own.
    assert len(filters.equivalence) == 1
    assert rings[0] is not None and all(r is rings[0] for r in rings)
    head = next(iter(filters.equivalence._verdicts.values())).head
    assert head is not None
    filter_names = sorted(p.name for p, _ in head)
    score_names = sorted(p.name for p, _ in scores.scorers)
    for seen in observations:
        assert sorted(n for n, point, _, _ in seen if point == "Filter") == filter_names
        assert sorted(n for n, point, _, _ in seen if point == "Score") == score_names


def test_a_predicate_that_rejects_a_re_judged_row_is_observed_unschedulable() -> None:
    # The second pod on the one node a first pod filled: the re-judged row no longer fits.
    filters, scores = _stages()
    node = make_node("n0").capacity(cpu="2", memory="8Gi", pods=110).label(HOSTNAME, "n0")
    spare = make_node("n1").capacity(cpu="4", memory="8Gi", pods=110).label(HOSTNAME, "n1")
    snapshot = Snapshot([NodeInfo(n.condition("Ready", "True").obj()) for n in (node, spare)])
    first, second = _pods(2)
    result, feasible = filters.run(first, snapshot)
    result = scores.run(first, snapshot, result, feasible)
    fold_assumed(snapshot, first, "n0", assumed=assumed_pod(first, "n0"))
    seen, observe = _recorder()
    result, feasible = filters.run(second, snapshot, observe=observe)
    assert list(feasible) == [1]
    statuses = {name: status for name, point, status, _ in seen if point == "Filter"}
    assert statuses["GeneralPredicates"] == "Unschedulable"
    assert {s for name, s in statuses.items() if name != "GeneralPredicates"} == {"Success"}
