"""Scheduling in batches never changes a decision.

``podium simulate`` runs the daemon's own actors (queue, cache, filter actor, score actor,
binder, scheduler, the in-memory store) with each bind committed before the next batch and
trio's MockClock, so a run repeats exactly. The same random cluster and pod stream, with the
same tie-break seed, is simulated one pod at a time (``batchMaxPods: 1``) with every pod walked
and scored over lists (``FilterStage.use_ring`` off), and in batches of several sizes with the
equivalence classes' rings (runs of identical pods filtered once, only the chosen node's row
re-judged and re-scored, the pick read off the ring: actors/cycle/ring.py); every outcome must
be identical: each pod's node or FitError message (with the
preemption part), its attempts, the pods its attempts evicted, the order of the final attempts,
and the per-pod metric counts (attempts by result, extension points, preemption, queue moves).
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgspec
from builders import decode, make_claim, make_node, make_storage_class, make_volume
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from long_runs import examples
from prometheus_client import REGISTRY
from random_cluster import (
    HOSTNAME,
    POD_LABELS,
    RandomPick,
    existing_pod,
    incoming_pod,
    node,
)

from podium.actors.cycle.generic_scheduler import FilterStage
from podium.actors.framework.zones import LABEL_ZONE_GA
from podium.actors.simulation.cluster import SimulationError
from podium.actors.simulation.run import simulate
from podium.actors.supervisor.supervisor import load_plugin_set
from podium.protocol import objects as o
from podium.protocol.config import SchedulerConfig

CONFIG = SchedulerConfig()
PLUGINS = load_plugin_set(CONFIG)

PRIORITIES = {"low": 10, "mid": 50, "high": 1000}
CLASSES = ("", "", "low", "mid", "high")

# Counted per pod, whatever the batch size (durations' sums are times, left out).
COUNTED = (
    "scheduler_schedule_attempts_total",
    "scheduler_scheduling_attempt_duration_seconds_count",
    "scheduler_framework_extension_point_duration_seconds_count",
    "scheduler_pod_scheduling_attempts_count",
    "scheduler_pod_scheduling_attempts_sum",
    "scheduler_preemption_attempts_total",
    "scheduler_preemption_victims_count",
    "scheduler_preemption_victims_sum",
    "scheduler_queue_incoming_pods_total",
)


def counts() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for metric in REGISTRY.collect()
        for s in metric.samples
        if s.name in COUNTED
    }


def _diff(before: dict[Any, float], after: dict[Any, float]) -> dict[Any, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


def cluster(seed: int, n_nodes: int, n_pods: int, n_specs: int) -> list[o.KubeObject]:
    """Random nodes (some holding pods), volumes and storage classes, then a stream of pending
    pods drawn from a few specs (so equivalence classes repeat) with random priorities (so
    preemption happens), some with pod (anti-)affinity, spread constraints or a claim; half the
    time a pod repeats the one before it, priority and all (a run of one class, as a
    ReplicaSet's pods come)."""
    pick = RandomPick(seed)
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(n_nodes)]
    objects: list[o.KubeObject] = [
        decode(o.PriorityClass, {"kind": "PriorityClass", "metadata": {"name": c}, "value": v})
        for c, v in PRIORITIES.items()
    ]
    objects += [node(pick, name) for name in names]
    # Roomy nodes, so that most streams place many pods.
    for name in names[: rng.randint(1, 3)]:
        roomy = make_node(f"{name}-big").capacity(cpu="8", memory="16Gi", pods=110)
        objects.append(roomy.label(HOSTNAME, f"{name}-big").condition("Ready", "True").obj())
    for i in range(rng.randint(0, n_nodes * 2)):
        bound = existing_pod(pick, f"old-{i}", rng.choice(names))
        spec = msgspec.structs.replace(bound.spec, priority_class_name=rng.choice(CLASSES))
        objects.append(msgspec.structs.replace(bound, spec=spec))
    objects += volumes(rng, names)
    specs = [incoming_pod(pick, names) for _ in range(n_specs)]
    # Pod (anti-)affinity in about half the specs (incoming_pod's odds), spreading in a third,
    # a claim of its own for each pod in a third: such pods share batches with the others, and
    # a batch must count each earlier placement in their affinity, spreading and volume
    # decisions as one pod at a time does.
    for i, template in enumerate(specs):
        if rng.random() < 0.35:
            constraints = spread_constraints(rng, template)
            spec = msgspec.structs.replace(template.spec, topology_spread_constraints=constraints)
            specs[i] = msgspec.structs.replace(template, spec=spec)
    claimed = [rng.random() < 0.35 for _ in specs]
    chosen = 0
    drawn: o.PodSpec | None = None
    for i in range(n_pods):
        # Runs of one spec, priority and all (a class of identical pods), as often as a fresh
        # draw.
        if drawn is None or rng.random() < 0.5:
            chosen = rng.randrange(len(specs))
            drawn = msgspec.structs.replace(
                specs[chosen].spec, priority_class_name=rng.choice(CLASSES)
            )
        template, spec = specs[chosen], drawn
        meta = msgspec.structs.replace(template.metadata, name=f"p{i}", uid="")
        if claimed[chosen]:
            objects.append(claim(rng, f"c-p{i}", meta.namespace))
            source = o.PersistentVolumeClaimVolumeSource(claim_name=f"c-p{i}")
            volume = o.Volume(name="data", persistent_volume_claim=source)
            spec = msgspec.structs.replace(spec, volumes=[*spec.volumes, volume])
        objects.append(msgspec.structs.replace(template, metadata=meta, spec=spec))
    return objects


def spread_constraints(rng: random.Random, pod: o.Pod) -> list[o.TopologySpreadConstraint]:
    """One or two constraints over hostnames, zones or racks, hard or soft, selecting the
    pod's own labels (so that the pods of its class count) or other labels."""
    out = []
    for _ in range(rng.randint(1, 2)):
        own = pod.metadata.labels
        if own and rng.random() < 0.7:
            selector: dict[str, Any] = {"matchLabels": dict(own)}
        else:
            key = rng.choice(sorted(POD_LABELS))
            selector = {"matchLabels": {key: rng.choice(POD_LABELS[key])}}
        raw = {
            "maxSkew": rng.randint(1, 2),
            "topologyKey": rng.choice((HOSTNAME, HOSTNAME, LABEL_ZONE_GA, "rack")),
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "DoNotSchedule", "ScheduleAnyway")),
            "labelSelector": selector,
        }
        out.append(decode(o.TopologySpreadConstraint, raw))
    return out


CLAIM_CLASSES = ("local", "local", "provisioned", "immediate")


def volumes(rng: random.Random, names: Sequence[str]) -> list[o.KubeObject]:
    """The storage classes claims name and a few volumes: local ones (WaitForFirstConsumer,
    each on one node or on none in particular, of two sizes), so that a pod's volume decision
    takes a volume the next pod's claim cannot have; a provisioner's class; an Immediate one
    with no volume (its claims stay unbound)."""
    out: list[o.KubeObject] = [
        make_storage_class("local"),
        make_storage_class("provisioned", provisioner="example.com/csi"),
        make_storage_class("immediate", mode="Immediate"),
    ]
    for i in range(rng.randint(0, 2 * len(names))):
        node = rng.choice(names) if rng.random() < 0.8 else None
        size = rng.choice(("1Gi", "10Gi"))
        out.append(make_volume(f"pv{i}", "local", size=size, node=node))
    return out


def claim(rng: random.Random, name: str, namespace: str) -> o.PersistentVolumeClaim:
    size = rng.choice(("1Gi", "5Gi"))
    return make_claim(name, rng.choice(CLAIM_CLASSES), namespace=namespace, size=size)


@contextlib.contextmanager
def lists_only() -> Iterator[None]:
    """Every pod walked and scored over lists: the reference for the rings."""
    FilterStage.use_ring = False
    try:
        yield
    finally:
        FilterStage.use_ring = True


def run(
    objects: Sequence[o.KubeObject], batch: int, seed: int
) -> tuple[list[Any], dict[Any, float]]:
    config = dataclasses.replace(
        CONFIG, podium=msgspec.structs.replace(CONFIG.podium, batch_max_pods=batch)
    )
    before = counts()
    outcomes = simulate(objects, config, PLUGINS, seed=seed)
    placed = [(x.pod.key, x.node, x.message, x.attempts, sorted(x.preempted)) for x in outcomes]
    return placed, _diff(before, counts())


def _streams(
    *, nodes: tuple[int, int], pods: tuple[int, int], specs: int, sizes: int, runs: int
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Hypothesis draws a cluster of ``nodes`` nodes and ``pods`` pods of up to ``specs``
    specs, and up to ``sizes`` batch sizes, ``runs`` times."""
    draws = given(
        seed=st.integers(0, 2**32 - 1),
        n_nodes=st.integers(*nodes),
        n_pods=st.integers(*pods),
        n_specs=st.integers(1, specs),
        batches=st.lists(st.integers(2, 40), min_size=1, max_size=sizes),
    )
    kept = settings(max_examples=runs, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    return lambda test: kept(draws(test))


@_streams(nodes=(1, 8), pods=(1, 30), specs=4, sizes=2, runs=examples(20, 60))
def test_batched_and_one_at_a_time_decisions_are_identical(
    seed: int, n_nodes: int, n_pods: int, n_specs: int, batches: list[int]
) -> None:
    _compare(seed, n_nodes, n_pods, n_specs, batches)


@_streams(nodes=(101, 220), pods=(20, 60), specs=3, sizes=1, runs=examples(4, 15))
def test_large_clusters_decide_alike_in_batches_and_one_at_a_time(
    seed: int, n_nodes: int, n_pods: int, n_specs: int, batches: list[int]
) -> None:
    """Above 100 nodes a pod examines only numFeasibleNodesToFind of them: the start index
    moves round the nodes and the ring's walk decides which are examined."""
    _compare(seed, n_nodes, n_pods, n_specs, batches)


def _compare(seed: int, n_nodes: int, n_pods: int, n_specs: int, batches: list[int]) -> None:
    objects = cluster(seed, n_nodes, n_pods, n_specs)
    # The generators make some objects the store refuses (label values, names): leave them out.
    for _ in range(10):
        try:
            with lists_only():
                alone, alone_counts = run(objects, 1, seed)
            break
        except SimulationError as exc:
            refused = {i for i, _, _ in exc.objects}
            objects = [x for i, x in enumerate(objects) if i not in refused]
    else:
        raise AssertionError("the store kept refusing the cluster")
    for batch in batches:
        together, together_counts = run(objects, batch, seed)
        assert together == alone, f"batch of {batch}"
        assert together_counts == alone_counts, f"batch of {batch}"
