"""Equivalence classes never change a decision.

Two schedulers with the default policy, one sharing node-local verdicts and map scores between
pods with the same spec (:mod:`podium.actors.cycle.equivalence`), walking and picking on the
class's ring (:mod:`podium.actors.cycle.ring`: only the row a placement changed re-judged and
re-scored) and keeping inter-pod affinity counts per class from pod to pod, and one filtering,
counting and scoring every pod afresh over a list (no ring), place the same stream of pods
(drawn from a few specs, so classes repeat) on two copies of a random cluster: small ones,
and ones of more than 100 nodes, where a pod examines only some of the nodes
(``numFeasibleNodesToFind``) and the start index moves round the ring. After each placement the pod is added to its node in both copies, and now and then a
node is replaced by a different Node object or loses a pod, as the cache's deltas do. Every
result must be identical: node, message, reasons, nodes examined and feasible, next start index.
"""

from __future__ import annotations

import random

import msgspec
from builders import make_node, make_pod
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from long_runs import examples
from random_cluster import RandomPick, incoming_pod, node
from stages import decide

from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins.policy import build_plugins, default_policy
from podium.protocol import objects as o


class _Scheduler:
    """The default policy's two stages, chained as the actors chain them.

    Args:
        seed: the tie-break's random source.
        afresh: the reference that computes everything from scratch: every pod gets new
            plugins and new stages (the start index and the random source carried over), so
            nothing one pod computed (verdicts and map scores per class, inter-pod affinity
            counts per class) serves the next, and walks and picks over lists (no ring).
    """

    def __init__(self, *, seed: int, afresh: bool = False) -> None:
        self.afresh = afresh
        self.rng = random.Random(seed)
        self.filters, self.scores = self._stages()

    def _stages(self) -> tuple[FilterStage, ScoreStage]:
        filters, scorers = build_plugins(default_policy())
        stage = FilterStage(filters)
        stage.use_ring = not self.afresh
        return stage, ScoreStage(scorers, rng=self.rng)

    @property
    def next_start_index(self) -> int:
        return self.filters.next_start_index

    def schedule(self, pod: PodInfo, snapshot: Snapshot) -> ScheduleResult:
        if self.afresh:
            start = self.filters.next_start_index
            self.filters, self.scores = self._stages()
            self.filters.next_start_index = start
        return decide(self.filters, self.scores, pod, snapshot)


def _outcome(result: ScheduleResult) -> tuple[object, ...]:
    return (
        result.node,
        result.message,
        dict(result.reasons),
        result.evaluated,
        result.feasible,
        sorted(result.failed_plugins),
    )


def _place(snapshot: Snapshot, pod: o.Pod, node_name: str) -> None:
    info = snapshot.by_name[node_name].clone()
    bound = msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, node_name=node_name)
    )
    info.add_pod(PodInfo(bound))
    snapshot.replace_node_info(info)


@settings(
    max_examples=examples(20, 60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# Found by this test: a node listing Ready=False twice is "not ready" twice, also when re-judged.
@example(cluster_seed=0, spec_seeds=[1], picks=[0, 0, 0, 0, 0, 0], edits=[259], nodes=3)
@given(
    cluster_seed=st.integers(0, 2**32),
    spec_seeds=st.lists(st.integers(0, 2**32), min_size=1, max_size=4),
    picks=st.lists(st.integers(0, 3), min_size=5, max_size=40),
    edits=st.lists(st.integers(0, 2**32), max_size=6),
    nodes=st.integers(3, 30),
)
def test_equivalence_classes_never_change_a_decision(
    cluster_seed: int, spec_seeds: list[int], picks: list[int], edits: list[int], nodes: int
) -> None:
    _compare(cluster_seed, spec_seeds, picks, edits, nodes)


@settings(max_examples=examples(8, 30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster_seed=st.integers(0, 2**32),
    spec_seeds=st.lists(st.integers(0, 2**32), min_size=1, max_size=3),
    runs=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 12)), min_size=1, max_size=8),
    edits=st.lists(st.integers(0, 2**32), max_size=4),
    nodes=st.integers(101, 260),
)
def test_runs_of_one_class_on_large_clusters_decide_as_lists_do(
    cluster_seed: int,
    spec_seeds: list[int],
    runs: list[tuple[int, int]],
    edits: list[int],
    nodes: int,
) -> None:
    """Above 100 nodes a pod examines some nodes only (numFeasibleNodesToFind), so the ring's
    walk from the start index, its wrap and its pick among ties are what decides; pods come
    in runs of one class, as a ReplicaSet's do."""
    picks = [which for which, length in runs for _ in range(length)]
    _compare(cluster_seed, spec_seeds, picks, edits, nodes, plain=True)


def _compare(
    cluster_seed: int,
    spec_seeds: list[int],
    picks: list[int],
    edits: list[int],
    nodes: int,
    *,
    plain: bool = False,
) -> None:
    """``plain``: every other spec without affinity (whose preferred node affinity terms
    make each pod reduce over its own window), so that the ring picks as often as not."""
    pick = RandomPick(cluster_seed)
    names = [f"n{i}" for i in range(nodes)]
    infos = [NodeInfo(node(pick, name)) for name in names]
    specs = [incoming_pod(RandomPick(s), names) for s in spec_seeds]
    if plain:
        specs = [
            msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, affinity=None))
            if i % 2 == 0
            else p
            for i, p in enumerate(specs)
        ]
    shared, fresh = Snapshot(infos), Snapshot(list(infos))
    with_classes = _Scheduler(seed=cluster_seed)
    without = _Scheduler(seed=cluster_seed, afresh=True)
    edit_at = {(seed % len(picks)): seed for seed in edits}
    for step, which in enumerate(picks):
        template = specs[which % len(specs)]
        pod = msgspec.structs.replace(
            template, metadata=msgspec.structs.replace(template.metadata, name=f"p{step}")
        )
        if step % 3:
            # A member of one of three gangs: the group is left out of the class (no predicate
            # or priority reads it), so members of different gangs share verdicts.
            group = o.PodSchedulingGroup(pod_group_name=f"g{(step + which) % 3}")
            pod = msgspec.structs.replace(
                pod, spec=msgspec.structs.replace(pod.spec, scheduling_group=group)
            )
        a = with_classes.schedule(PodInfo(pod), shared)
        b = without.schedule(PodInfo(pod), fresh)
        assert _outcome(a) == _outcome(b), f"step {step}"
        assert with_classes.next_start_index == without.next_start_index
        # The same tie-breaking draws, so every later pick draws from the same state.
        assert with_classes.rng.getstate() == without.rng.getstate(), f"step {step}"
        if a.node is not None:
            _place(shared, pod, a.node)
            _place(fresh, pod, a.node)
        if step in edit_at:
            edit = RandomPick(edit_at[step])
            row = edit.integer(0, nodes - 1)
            old = shared.node_infos[row]
            new = NodeInfo(node(edit, old.name), old.pods)
            shared.replace_node_info(new)
            fresh.replace_node_info(new)


def test_a_class_reuses_its_verdict_and_rejudges_the_changed_node() -> None:
    nodes = [NodeInfo(make_node(f"n{i}").capacity(cpu="1", pods="110").obj()) for i in range(4)]
    snapshot = Snapshot(nodes)
    algorithm = _Scheduler(seed=1)
    cache = algorithm.filters.equivalence
    placed: list[str] = []
    for i in range(5):
        pod = make_pod(f"p{i}").req(cpu="600m").obj()
        result = algorithm.schedule(PodInfo(pod), snapshot)
        if result.node is None:
            assert result.message == "0/4 nodes are available: 4 Insufficient cpu."
            break
        placed.append(result.node)
        _place(snapshot, pod, result.node)
    # Four fit (one per node), the fifth finds every node full: each full node was re-judged.
    assert sorted(placed) == ["n0", "n1", "n2", "n3"]
    assert cache.hits == 4 and cache.misses == 1


def test_members_of_different_gangs_with_one_spec_share_a_class() -> None:
    """Issue 24: the pod group a pod names (``spec.schedulingGroup``) is not part of its
    class, so a gang's first member reuses the verdict of another gang's."""
    nodes = [NodeInfo(make_node(f"n{i}").capacity(cpu="4", pods="110").obj()) for i in range(4)]
    snapshot = Snapshot(nodes)
    algorithm = _Scheduler(seed=1)
    cache = algorithm.filters.equivalence
    for i, group in enumerate(("a", "a", "b", "c")):
        pod = make_pod(f"p{i}").req(cpu="1").spec(schedulingGroup={"podGroupName": group}).obj()
        result = algorithm.schedule(PodInfo(pod), snapshot)
        assert result.node is not None
        _place(snapshot, pod, result.node)
    assert cache.hits == 3 and cache.misses == 1


HOSTNAME = "kubernetes.io/hostname"


def _anti_pod(name: str) -> o.Pod:
    term = {
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    pod: o.Pod = (
        make_pod(name)
        .labels({"app": "web"})
        .affinity({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
        .obj()
    )
    return pod


def test_affinity_counts_follow_placements_and_in_place_changes() -> None:
    nodes = [
        NodeInfo(make_node(f"n{i}").capacity(cpu="4", pods="110").label(HOSTNAME, f"n{i}").obj())
        for i in range(3)
    ]
    shared, fresh = Snapshot(nodes), Snapshot(list(nodes))
    with_classes = _Scheduler(seed=3)
    without = _Scheduler(seed=3, afresh=True)
    placed = []
    for i in range(4):
        pod = _anti_pod(f"web-{i}")
        a = with_classes.schedule(PodInfo(pod), shared)
        b = without.schedule(PodInfo(pod), fresh)
        assert _outcome(a) == _outcome(b)
        if a.node is None:
            break
        placed.append(a.node)
        _place(shared, pod, a.node)
        _place(fresh, pod, a.node)
    assert sorted(placed) == ["n0", "n1", "n2"]  # one per node; the fourth fits nowhere
    assert a.message == (
        "0/3 nodes are available: 3 node(s) didn't match pod affinity/anti-affinity, "
        "3 node(s) didn't satisfy existing pods anti-affinity rules."
    )
    # A NodeInfo changed in place (as preemption's what-if steps do) voids the kept counts.
    info = shared.by_name["n1"]
    info.remove_pod(info.pods[0])
    shared.replace_node_info(info)
    again = with_classes.schedule(PodInfo(_anti_pod("web-9")), shared)
    assert again.node == "n1"
