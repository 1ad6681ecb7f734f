"""The vector and scalar forms of every predicate and priority agree, on random clusters.

Three comparisons per random cluster and incoming pod:

1. every predicate with a ``filter_columns``: row by row, the reasons its masks give equal
   ``filter(...).reasons`` (and so pass/fail agrees), both run as the framework runs them; a
   predicate whose ``pre_filter`` says SKIP must pass every node;
2. every priority with a ``score_columns``: the map scores over all rows (and over a shuffled
   subset of rows) equal ``score(...)`` node by node;
3. the whole decision, filter stage then score stage (the default policy, and a policy naming
   every predicate and every priority, argument ones included): the vector walk and the
   per-node loop (the same plugins behind thin adapters that hide the vector methods) give the
   same ScheduleResult and the same next start index.

The scalar form is the reference (Kubernetes v1.14 semantics). Besides fresh snapshots, about
a third of the cases edit a few rows through ``Snapshot.replace_node_info`` after every
on-demand column was built (so ``NodeColumns.update_row`` is on trial too), non-argument
plugins are shared across examples (caches kept between pods), and the filter stage runs with
a lowered ``MIN_FEASIBLE_NODES_TO_FIND`` so that the walk's early stop happens on small clusters.

Generation: Hypothesis draws the node count, the incoming pod and the knobs (all shrinkable);
each node with its pods, and the Services/controllers, come from a seeded ``random.Random``
(one drawn seed each), which keeps 200 examples of up to 40 nodes within a few seconds.
Hypothesis prints the failing example (every object as JSON) and how to reproduce it.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any
from unittest import mock

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from long_runs import examples
from random_cluster import (
    AVOID_ANNOTATION,
    GPU,
    HOSTNAME,
    HUGEPAGES,
    NODE_IMAGES,
    NODE_LABELS,
    DrawPick,
    RandomPick,
    cluster_objects,
    existing_pod,
    incoming_pod,
    node,
)
from scalar_plugins import ScalarFilter, ScalarScore
from stages import decide

from podium.actors.cycle import generic_scheduler
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.interface import (
    SKIP,
    FilterPlugin,
    PluginArgs,
    PredicateError,
    ScorePlugin,
    VectorFilterPlugin,
    VectorScorePlugin,
    run_filter,
    run_filter_columns,
    status_of,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.actors.framework.zones import LABEL_REGION_BETA, LABEL_ZONE_BETA, LABEL_ZONE_GA
from podium.actors.plugins import names, registry
from podium.actors.plugins.policy import build_plugins, default_policy, resolve_policy
from podium.protocol import objects as o
from podium.protocol.policy import decode_policy


@dataclass(frozen=True)
class Case:
    """One random cluster, the pod to place and the knobs of the comparison."""

    snapshot: Snapshot
    pod: PodInfo
    presence_labels: tuple[str, ...]
    presence: bool
    affinity_labels: tuple[str, ...]
    preference_label: str
    edits: tuple[tuple[int, int], ...]
    start: int
    seed: int
    check_all: bool
    percentage: int
    min_feasible: int

    def __repr__(self) -> str:
        lines = [
            f"Case(start={self.start}, seed={self.seed}, check_all={self.check_all},",
            f"  edits={self.edits} (the nodes below are after the edits),",
            f"  percentage={self.percentage}, min_feasible={self.min_feasible},",
            f"  presence={self.presence_labels}/{self.presence}, affinity={self.affinity_labels},",
            f"  preference={self.preference_label!r},",
            f"  pod={_dump(self.pod.pod)},",
        ]
        objects = self.snapshot.objects
        for table in (
            objects.services,
            objects.replica_sets,
            objects.replication_controllers,
            objects.stateful_sets,
        ):
            lines.extend(f"  object={_dump(obj)}," for obj in table.values())
        for info in fresh_snapshot(self).node_infos:
            lines.append(f"  node={_dump(info.node)},")
            lines.extend(f"    pod={_dump(p.pod)}," for p in info.pods)
        return "\n".join([*lines, ")"])

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How Hypothesis prints a failing example: every object, as JSON."""
        printer.text(repr(self))


def _dump(obj: object) -> str:
    return msgspec.json.encode(obj, enc_hook=o.enc_hook).decode()


LABEL_KEYS = (*NODE_LABELS, LABEL_ZONE_GA, HOSTNAME)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A cluster of 1-40 nodes (each from its own seed) and an incoming pod drawn directly."""
    pick = DrawPick(draw)
    count = pick.integer(1, 40)
    node_names = [f"n{i}" for i in range(count)]
    pod = incoming_pod(pick, node_names)
    infos = []
    for name in node_names:
        bulk = RandomPick(pick.integer(0, 2**32 - 1))
        pods = [
            PodInfo(existing_pod(bulk, f"{name}-p{j}", name))
            for j in range(bulk.integer(0, 3) if bulk.coin(0.6) else 0)
        ]
        infos.append(NodeInfo(node(bulk, name), pods))
    objects = cluster_objects(RandomPick(pick.integer(0, 2**32 - 1)), pod)
    return Case(
        snapshot=Snapshot(infos, objects),
        pod=PodInfo(pod),
        presence_labels=tuple(pick.some(LABEL_KEYS, 1 if pick.coin(0.8) else 2)),
        presence=pick.coin(),
        affinity_labels=tuple(pick.some((LABEL_ZONE_GA, "rack", "disk"), 2, least=1)),
        preference_label=pick.choice(LABEL_KEYS),
        edits=tuple(
            (pick.integer(0, count - 1), pick.integer(0, 2**32 - 1))
            for _ in range(pick.integer(1, 3) if pick.coin(0.3) else 0)
        ),
        start=pick.integer(0, count - 1),
        seed=pick.integer(0, 2**32 - 1),
        check_all=pick.coin(),
        percentage=pick.choice((0, 0, 10, 50, 100)),
        min_feasible=pick.choice((100, 1, 3, 10)),
    )


# --------------------------------------------------------------------------- plugins


def predicate(case: Case, canonical: str) -> FilterPlugin:
    """The predicate, configured from the case when it takes an argument."""
    factory = registry.predicate_factory(canonical)
    if canonical == names.CHECK_NODE_LABEL_PRESENCE:
        return factory(PluginArgs("presence", labels=case.presence_labels, presence=case.presence))
    if canonical == names.CHECK_SERVICE_AFFINITY:
        return factory(PluginArgs("affinity", labels=case.affinity_labels))
    return shared_predicate(canonical)


def priority(case: Case, canonical: str) -> ScorePlugin:
    """The priority, configured from the case when it takes an argument."""
    factory = registry.priority_factory(canonical)
    if canonical == names.NODE_LABEL:
        return factory(
            PluginArgs("preference", label=case.preference_label, presence=case.presence)
        )
    if canonical == names.SERVICE_ANTI_AFFINITY:
        return factory(PluginArgs("spread", label=case.affinity_labels[0]))
    return shared_priority(canonical)


ALL_PRIORITIES = (*names.PRIORITIES, names.NODE_LABEL, names.SERVICE_ANTI_AFFINITY)


def full_policy(case: Case) -> dict[str, Any]:
    """Every predicate and every priority, argument ones included."""
    predicates: list[dict[str, Any]] = [
        {"name": name}
        for name in names.PREDICATES_ORDERING
        if name not in (names.CHECK_NODE_LABEL_PRESENCE, names.CHECK_SERVICE_AFFINITY)
    ]
    predicates.append(
        {
            "name": "presence",
            "argument": {
                "labelsPresence": {"labels": list(case.presence_labels), "presence": case.presence}
            },
        }
    )
    predicates.append(
        {
            "name": "affinity",
            "argument": {"serviceAffinity": {"labels": list(case.affinity_labels)}},
        }
    )
    priorities: list[dict[str, Any]] = [
        {"name": name, "weight": 1 + i % 3} for i, name in enumerate(names.PRIORITIES)
    ]
    priorities.append(
        {
            "name": "preference",
            "weight": 2,
            "argument": {
                "labelPreference": {"label": case.preference_label, "presence": case.presence}
            },
        }
    )
    priorities.append(
        {
            "name": "spread",
            "weight": 3,
            "argument": {"serviceAntiAffinity": {"label": case.affinity_labels[0]}},
        }
    )
    return {
        "kind": "Policy",
        "apiVersion": "v1",
        "predicates": predicates,
        "priorities": priorities,
        "alwaysCheckAllPredicates": case.check_all,
    }


def fresh_snapshot(case: Case) -> Snapshot:
    """The case's cluster in a new Snapshot, with the case's edits applied.

    With edits, every on-demand column is built first and the edits then go through
    ``Snapshot.replace_node_info``, so the vector forms read columns kept in step by
    ``NodeColumns.update_row`` rather than freshly built ones.
    """
    snapshot = Snapshot(case.snapshot.node_infos, case.snapshot.objects)
    if not case.edits:
        return snapshot
    cols = snapshot.columns
    for key in (*NODE_LABELS, LABEL_ZONE_GA, LABEL_ZONE_BETA, LABEL_REGION_BETA, HOSTNAME):
        cols.label(key)
    cols.scalar(GPU)
    cols.scalar(HUGEPAGES)
    cols.annotation(AVOID_ANNOTATION)
    for image in NODE_IMAGES:
        cols.image_sizes(image)
    snapshot.image_states()
    for row, seed in case.edits:
        pick = RandomPick(seed)
        old = snapshot.node_infos[row]
        kind = pick.integer(0, 2)
        if kind == 2:
            new = NodeInfo(node(pick, old.name), old.pods)  # a new Node object
        else:
            new = old.clone()
            if kind == 1 and new.pods:
                new.remove_pod(pick.choice(new.pods))
            else:
                new.add_pod(PodInfo(existing_pod(pick, f"{old.name}-x{seed}", old.name)))
        snapshot.replace_node_info(new)
    return snapshot


@functools.cache
def shared_default_plugins() -> tuple[list[FilterPlugin], list[tuple[ScorePlugin, int]]]:
    return build_plugins(default_policy())


@functools.cache
def shared_predicate(canonical: str) -> FilterPlugin:
    """One instance per predicate for the whole run, so caches kept between pods are used."""
    return registry.predicate_factory(canonical)(PluginArgs(canonical))


@functools.cache
def shared_priority(canonical: str) -> ScorePlugin:
    return registry.priority_factory(canonical)(PluginArgs(canonical))


# --------------------------------------------------------------------------- comparisons


def check_predicates(case: Case) -> None:
    snapshot = fresh_snapshot(case)
    cols = snapshot.columns
    infos = snapshot.node_infos
    pod = case.pod
    for canonical in names.PREDICATES_ORDERING:
        plugin = predicate(case, canonical)
        if not isinstance(plugin, VectorFilterPlugin):
            continue
        try:
            meta = plugin.pre_filter(pod, snapshot)
        except PredicateError:
            continue
        if meta is SKIP:
            for info in infos:
                status = run_filter(plugin, pod, meta, info)
                assert status.is_success, (canonical, info.name, status)
            continue
        masks = run_filter_columns(plugin, pod, meta, cols)
        for mask_reason, mask, _ in masks:
            assert mask.dtype == np.bool_ and mask.shape == (cols.n,), (canonical, mask_reason)
        for row, info in enumerate(infos):
            status = run_filter(plugin, pod, meta, info)
            # Reasons, their order and the code (unresolvable or not) agree.
            vector = status_of(masks, row)
            assert vector == status, (canonical, info.name, vector, status)


def check_priorities(case: Case) -> None:
    snapshot = fresh_snapshot(case)
    cols = snapshot.columns
    infos = snapshot.node_infos
    pod = case.pod
    rng = random.Random(case.seed)
    every = np.arange(len(infos), dtype=np.intp)
    subset = np.asarray(rng.sample(range(len(infos)), rng.randint(1, len(infos))), dtype=np.intp)
    for canonical in ALL_PRIORITIES:
        plugin = priority(case, canonical)
        if not isinstance(plugin, VectorScorePlugin):
            continue
        try:
            meta = plugin.pre_score(pod, snapshot, infos)
        except PredicateError:
            continue
        if meta is SKIP:
            continue
        scalar = [plugin.score(pod, meta, info) for info in infos]
        for rows in (every, subset):
            vector = plugin.score_columns(pod, meta, cols, rows)
            assert vector.dtype == np.int64, canonical
            want = [scalar[r] for r in rows.tolist()]
            assert vector.tolist() == want, (canonical, rows.tolist(), vector.tolist(), want)


def schedule(
    case: Case, policy: dict[str, Any] | None, *, scalar: bool
) -> tuple[ScheduleResult, int]:
    """Schedule the case's pod; the result and the start index the next pod would get."""
    if policy is None:
        resolved = default_policy()
    else:
        resolved = resolve_policy(decode_policy(policy).policy)
    if policy is None and not scalar:
        filters, scorers = shared_default_plugins()  # kept across pods, caches and all
    else:
        filters, scorers = build_plugins(resolved)
    if scalar:
        filters = [ScalarFilter(f) for f in filters]
        scorers = [(ScalarScore(s), w) for s, w in scorers]
        assert not any(isinstance(f, VectorFilterPlugin) for f in filters)
    stage = FilterStage(
        filters,
        percentage_of_nodes_to_score=case.percentage,
        always_check_all_predicates=resolved.always_check_all_predicates or case.check_all,
    )
    stage.next_start_index = case.start
    scores = ScoreStage(scorers, rng=random.Random(case.seed))
    # A smaller floor than Kubernetes' 100 makes the walk stop early on these small clusters.
    with mock.patch.object(generic_scheduler, "MIN_FEASIBLE_NODES_TO_FIND", case.min_feasible):
        result = decide(stage, scores, case.pod, fresh_snapshot(case), explain=True)
    return result, stage.next_start_index


# Every field of the result (node, message, error, evaluated, feasible, reasons, failed,
# feasible_nodes, scores, totals, ...), so a field added later is compared too.
RESULT_FIELDS = ScheduleResult.__struct_fields__


def check_decision(case: Case) -> None:
    for policy in (None, full_policy(case)):
        label = "default" if policy is None else "full"
        vector, vector_next = schedule(case, policy, scalar=False)
        loop, loop_next = schedule(case, policy, scalar=True)
        for field in RESULT_FIELDS:
            assert getattr(vector, field) == getattr(loop, field), (label, field)
        assert vector_next == loop_next, label
        if not vector.error:  # (an error while scoring comes after the walk has moved on)
            assert vector_next == (case.start + vector.evaluated) % len(case.snapshot), label


@settings(
    max_examples=examples(50, 200),
    deadline=None,
    derandomize=False,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases())
def test_vector_and_scalar_forms_agree(case: Case) -> None:
    check_predicates(case)
    check_priorities(case)
    check_decision(case)


def test_adapters_hide_the_vector_forms() -> None:
    """The loop side really is scalar: the adapters are plugins but not vector plugins."""
    filters, scorers = build_plugins(default_policy())
    assert any(isinstance(f, VectorFilterPlugin) for f in filters)
    for f in filters:
        wrapped = ScalarFilter(f)
        assert isinstance(wrapped, FilterPlugin)
        assert not isinstance(wrapped, VectorFilterPlugin)
    for s, _ in scorers:
        assert not isinstance(ScalarScore(s), VectorScorePlugin)
