"""Preemption's pure core (actors/framework/preemption.py).

Rows named as in Kubernetes are ported from pkg/scheduler/core/generic_scheduler_test.go@v1.14.0
(TestSelectNodesForPreemption, TestPickOneNodeForPreemption, TestNodesWherePreemptionMightHelp,
TestPreempt); rows marked "(v1.15+)" come from the same tests in later releases. Every row of
the three v1.14 tests is ported except none: all are expressible (the "newnode" a v1.14 cache
does not have yet is a node name missing from the snapshot). TestPreempt's extender rows and
the later topology-spread rows are not (Podium has neither extenders nor that predicate yet).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

import msgspec
import pytest
from builders import decode, make_node, make_pdb, make_pod

from podium.actors.cache.core import SchedulerCache
from podium.actors.framework.interface import (
    SUCCESS,
    Code,
    FilterPlugin,
    PluginArgs,
    Status,
    VectorFilterPlugin,
    fit_error_message,
    run_filter,
    run_filter_columns,
    status_of,
    unschedulable,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import (
    NominatedPods,
    add_nominated_pods,
    lower_priority_nominated_pods,
)
from podium.actors.framework.preemption import (
    MSG_NO_VICTIMS,
    MSG_NOT_ELIGIBLE_NEVER,
    MSG_NOT_ELIGIBLE_TERMINATING,
    MSG_PREEMPTION_NOT_HELPFUL,
    PREEMPT_NEVER,
    DisruptionBudget,
    PredicateFitCheck,
    PreemptionUnits,
    Victims,
    disruption_budgets,
    disruptions_allowed,
    filter_pods_with_pdb_violation,
    fit_error_with_preemption,
    lowest_evictable_priority,
    more_important_pod,
    nodes_where_preemption_might_help,
    pick_one_node_for_preemption,
    pod_eligible_to_preempt_others,
    preempt,
    same_group,
    select_nodes_for_preemption,
    select_victims_on_node,
    spend_budgets,
    with_whole_gangs,
    without_victims,
    without_victims_anywhere,
)
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.plugins import (
    inter_pod_affinity,
    names,
    node_condition,
    node_label_presence,
    node_name,
    node_pressure,
    node_resources_fit,
    node_selector,
    node_unschedulable,
    pod_topology_spread,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from podium.actors.plugins.inter_pod_affinity import InterPodAffinity
from podium.actors.plugins.node_resources_fit import PodFitsResources
from podium.actors.plugins.registry import predicate_factory
from podium.protocol import objects as o
from podium.store.core import StoreCore
from podium.store.mail import Change

# generic_scheduler_test.go@v1.14.0: priorities and container sizes (DefaultMilliCPURequest
# 100m and DefaultMemoryRequest 200Mi times 1, 2, 3 and 5).
NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "200Mi"}
MEDIUM = {"cpu": "200m", "memory": "400Mi"}
LARGE = {"cpu": "300m", "memory": "600Mi"}
VERY_LARGE = {"cpu": "500m", "memory": "1000Mi"}

ERR_FAKE_PREDICATE = "Nodes failed the fake predicate"  # predicates.ErrFakePredicate
INSUFFICIENT_MEMORY = node_resources_fit.ERR_REASON_INSUFFICIENT_MEMORY


# --------------------------------------------------------------------------- test predicates


class _Fake(FilterPlugin[None]):
    """generic_scheduler_test.go's falsePredicate, truePredicate and matchesPredicate."""

    def __init__(self, name: str, verdict: Callable[[PodInfo, NodeInfo], bool]) -> None:
        self.name = name
        self._verdict = verdict

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        return SUCCESS if self._verdict(pod, node) else unschedulable(ERR_FAKE_PREDICATE)


def false_predicate() -> FilterPlugin:
    return _Fake("false", lambda pod, node: False)


def true_predicate() -> FilterPlugin:
    return _Fake("true", lambda pod, node: True)


def matches_predicate() -> FilterPlugin:
    return _Fake("matches", lambda pod, node: pod.name == node.name)


def pod_fits_resources() -> FilterPlugin:
    return PodFitsResources(PluginArgs(name=names.POD_FITS_RESOURCES))


def inter_pod_affinity_predicate() -> FilterPlugin:
    return InterPodAffinity(PluginArgs(name=names.MATCH_INTER_POD_AFFINITY))


# --------------------------------------------------------------------------- helpers


def pod(
    name: str,
    priority: int | None = None,
    requests: dict[str, str] | None = None,
    *,
    on: str = "",
    start: str = "",
    labels: dict[str, str] | None = None,
    affinity: Mapping[str, object] | None = None,
    policy: str | None = None,
) -> o.Pod:
    b = make_pod(name)
    if priority is not None:
        b.priority(priority)
    if requests:
        b.req(**requests)
    if on:
        b.node(on)
    if start:
        b.start_time(start)
    if labels:
        b.labels(labels)
    if affinity:
        b.affinity(dict(affinity))
    if policy is not None:
        b.spec(preemptionPolicy=policy)
    return b.obj()


def day(d: int) -> str:
    """generic_scheduler_test.go's startTime2019010d: 2019-01-0d 01:01:01 UTC."""
    return f"2019-01-{d:02d}T01:01:01Z"


def snapshot_of(
    nodes: Sequence[o.Node], pods: Sequence[o.Pod], objects: ClusterObjects | None = None
) -> Snapshot:
    infos = {n.metadata.name: NodeInfo(n) for n in nodes}
    for p in pods:
        infos[p.spec.node_name].add_pod(PodInfo(p))
    return Snapshot(list(infos.values()), objects)


def machines(names_: Sequence[str], cpu: str = "5", memory: str = "1000Mi") -> list[o.Node]:
    """makeNode(name, milliCPU, memory) with 100 pods, labelled hostname=<name> as
    TestSelectNodesForPreemption labels them."""
    return [
        make_node(n).capacity(cpu=cpu, memory=memory, pods=100).label("hostname", n).obj()
        for n in names_
    ]


def victim_names(candidates: dict[str, Victims]) -> dict[str, set[str]]:
    return {node: {p.name for p in v.pods} for node, v in candidates.items()}


def assert_sorted_by_priority(candidates: dict[str, Victims]) -> None:
    """checkPreemptionVictims: each node's victims come most important first."""
    for victims in candidates.values():
        priorities = [p.priority for p in victims.pods]
        assert priorities == sorted(priorities, reverse=True)


ANTI_AFFINITY_TO_PREEMPTOR = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": "pod", "operator": "In", "values": ["preemptor", "value2"]}
                    ]
                },
                "topologyKey": "hostname",
            }
        ]
    }
}


# --------------------------------------------------------------------------- TestSelectNodesForPreemption


@dataclass(frozen=True)
class SelectCase:
    name: str
    predicates: tuple[Callable[[], FilterPlugin], ...]
    nodes: tuple[str, ...]
    pod: o.Pod
    pods: tuple[o.Pod, ...]
    expected: dict[str, set[str]]


SELECT_CASES = [
    # generic_scheduler_test.go@v1.14.0 TestSelectNodesForPreemption
    SelectCase(
        "a pod that does not fit on any machine",
        (false_predicate,),
        ("machine1", "machine2"),
        pod("new", HIGH),
        (pod("a", MID, on="machine1"), pod("b", MID, on="machine2")),
        {},
    ),
    SelectCase(
        "a pod that fits with no preemption",
        (true_predicate,),
        ("machine1", "machine2"),
        pod("new", HIGH),
        (pod("a", MID, on="machine1"), pod("b", MID, on="machine2")),
        {"machine1": set(), "machine2": set()},
    ),
    SelectCase(
        "a pod that fits on one machine with no preemption",
        (matches_predicate,),
        ("machine1", "machine2"),
        pod("machine1", HIGH),
        (pod("a", MID, on="machine1"), pod("b", MID, on="machine2")),
        {"machine1": set()},
    ),
    SelectCase(
        "a pod that fits on both machines when lower priority pods are preempted",
        (pod_fits_resources,),
        ("machine1", "machine2"),
        pod("machine1", HIGH, LARGE),
        (pod("a", MID, LARGE, on="machine1"), pod("b", MID, LARGE, on="machine2")),
        {"machine1": {"a"}, "machine2": {"b"}},
    ),
    SelectCase(
        "a pod that would fit on the machines, but other pods running are higher priority",
        (pod_fits_resources,),
        ("machine1", "machine2"),
        pod("machine1", LOW, LARGE),
        (pod("a", MID, LARGE, on="machine1"), pod("b", MID, LARGE, on="machine2")),
        {},
    ),
    SelectCase(
        "medium priority pod is preempted, but lower priority one stays as it is small",
        (pod_fits_resources,),
        ("machine1", "machine2"),
        pod("machine1", HIGH, LARGE),
        (
            pod("a", LOW, SMALL, on="machine1"),
            pod("b", MID, LARGE, on="machine1"),
            pod("c", MID, LARGE, on="machine2"),
        ),
        {"machine1": {"b"}, "machine2": {"c"}},
    ),
    SelectCase(
        "mixed priority pods are preempted",
        (pod_fits_resources,),
        ("machine1", "machine2"),
        pod("machine1", HIGH, LARGE),
        (
            pod("a", MID, SMALL, on="machine1"),
            pod("b", LOW, SMALL, on="machine1"),
            pod("c", MID, MEDIUM, on="machine1"),
            pod("d", HIGH, SMALL, on="machine1"),
            pod("e", HIGH, LARGE, on="machine2"),
        ),
        {"machine1": {"b", "c"}},
    ),
    # (v1.15+) the same test after MoreImportantPod: equal priorities reprieve the earlier start.
    SelectCase(
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        (pod_fits_resources,),
        ("machine1", "machine2"),
        pod("machine1", HIGH, LARGE),
        (
            pod("a", LOW, SMALL, on="machine1", start=day(7)),
            pod("b", LOW, SMALL, on="machine1", start=day(6)),
            pod("c", MID, MEDIUM, on="machine1", start=day(5)),
            pod("d", HIGH, SMALL, on="machine1", start=day(4)),
            pod("e", HIGH, LARGE, on="machine2", start=day(3)),
        ),
        {"machine1": {"a", "c"}},
    ),
    SelectCase(
        "pod with anti-affinity is preempted",
        (pod_fits_resources, inter_pod_affinity_predicate),
        ("machine1", "machine2"),
        pod("machine1", HIGH, SMALL, labels={"pod": "preemptor"}),
        (
            pod(
                "a",
                LOW,
                SMALL,
                on="machine1",
                labels={"service": "securityscan"},
                affinity=ANTI_AFFINITY_TO_PREEMPTOR,
            ),
            pod("b", MID, SMALL, on="machine1"),
            pod("d", HIGH, SMALL, on="machine1"),
            pod("e", HIGH, LARGE, on="machine2"),
        ),
        {"machine1": {"a"}, "machine2": set()},
    ),
]


@pytest.mark.parametrize("case", SELECT_CASES, ids=lambda c: c.name)
def test_select_nodes_for_preemption(case: SelectCase) -> None:
    snapshot = snapshot_of(machines(case.nodes), case.pods)
    fits = PredicateFitCheck([make() for make in case.predicates])
    # "newnode": a node added to the cluster that the snapshot does not have yet.
    candidates, _ = select_nodes_for_preemption(
        PodInfo(case.pod), snapshot, [*case.nodes, "newnode"], fits
    )
    assert victim_names(candidates) == case.expected
    assert_sorted_by_priority(candidates)


def test_select_nodes_for_preemption_says_why_a_node_is_no_candidate() -> None:
    nodes = machines(("machine1", "machine2", "machine3"))
    pods = [
        pod("high", HIGH, LARGE, on="machine1"),  # nothing to evict
        pod("low", LOW, SMALL, on="machine2"),  # evicting it is not enough
        pod("high2", HIGH, LARGE, on="machine2"),
    ]
    snapshot = snapshot_of(nodes, pods)
    candidates, unfit = select_nodes_for_preemption(
        PodInfo(pod("p", MID, LARGE)),
        snapshot,
        ["machine1", "machine2", "machine3", "newnode"],
        PredicateFitCheck([pod_fits_resources()]),
    )
    assert victim_names(candidates) == {"machine3": set()}
    assert unfit == {"machine1": (MSG_NO_VICTIMS,), "machine2": (INSUFFICIENT_MEMORY,)}
    assert MSG_PREEMPTION_NOT_HELPFUL == "Preemption is not helpful for scheduling"


def test_select_nodes_for_preemption_leaves_the_snapshot_as_it_was() -> None:
    case = SELECT_CASES[6]  # mixed priority pods are preempted
    snapshot = snapshot_of(machines(case.nodes), case.pods)
    before = {info.name: (info, [p.key for p in info.pods]) for info in snapshot.node_infos}
    columns_before = snapshot.columns.req_memory.copy()
    select_nodes_for_preemption(
        PodInfo(case.pod), snapshot, case.nodes, PredicateFitCheck([pod_fits_resources()])
    )
    assert {i.name: (i, [p.key for p in i.pods]) for i in snapshot.node_infos} == before
    assert (snapshot.columns.req_memory == columns_before).all()


# --------------------------------------------------------------------------- TestPickOneNodeForPreemption


@dataclass(frozen=True)
class PickCase:
    name: str
    nodes: tuple[str, ...]
    pod: o.Pod
    pods: tuple[o.Pod, ...]
    expected: tuple[str, ...]  # any of them is valid


T0 = "2019-01-01T01:01:01Z"  # generic_scheduler_test.go startTime


def m(name: str, priority: int, requests: dict[str, str], node: str, start: str = T0) -> o.Pod:
    return pod(name, priority, requests, on=node, start=start)


def two_a_machine(*per_machine: Sequence[tuple[int, int]]) -> tuple[o.Pod, ...]:
    """TestPickOneNodeForPreemption's start-time rows: on machine i, pods ``mi.j`` of
    (priority, start day) each, all of MEDIUM size."""
    return tuple(
        m(f"m{i}.{j}", priority, MEDIUM, f"machine{i}", day(d))
        for i, pods in enumerate(per_machine, start=1)
        for j, (priority, d) in enumerate(pods, start=1)
    )


PICK_CASES = [
    # generic_scheduler_test.go@v1.14.0 TestPickOneNodeForPreemption
    PickCase(
        "No node needs preemption",
        ("machine1",),
        pod("machine1", HIGH, LARGE),
        (m("m1.1", MID, SMALL, "machine1"),),
        ("machine1",),
    ),
    PickCase(
        "a pod that fits on both machines when lower priority pods are preempted",
        ("machine1", "machine2"),
        pod("machine1", HIGH, LARGE),
        (m("m1.1", MID, LARGE, "machine1"), m("m2.1", MID, LARGE, "machine2")),
        ("machine1", "machine2"),
    ),
    PickCase(
        "a pod that fits on a machine with no preemption",
        ("machine1", "machine2", "machine3"),
        pod("machine1", HIGH, LARGE),
        (m("m1.1", MID, LARGE, "machine1"), m("m2.1", MID, LARGE, "machine2")),
        ("machine3",),
    ),
    PickCase(
        "machine with min highest priority pod is picked",
        ("machine1", "machine2", "machine3"),
        pod("machine1", HIGH, VERY_LARGE),
        (
            m("m1.1", MID, MEDIUM, "machine1"),
            m("m1.2", MID, LARGE, "machine1"),
            m("m2.1", MID, MEDIUM, "machine2"),
            m("m2.2", LOW, MEDIUM, "machine2"),
            m("m3.1", LOW, MEDIUM, "machine3"),
            m("m3.2", LOW, MEDIUM, "machine3"),
        ),
        ("machine3",),
    ),
    PickCase(
        "when highest priorities are the same, minimum sum of priorities is picked",
        ("machine1", "machine2", "machine3"),
        pod("machine1", HIGH, VERY_LARGE),
        (
            m("m1.1", MID, MEDIUM, "machine1"),
            m("m1.2", MID, LARGE, "machine1"),
            m("m2.1", MID, LARGE, "machine2"),
            m("m2.2", LOW, MEDIUM, "machine2"),
            m("m3.1", MID, MEDIUM, "machine3"),
            m("m3.2", MID, MEDIUM, "machine3"),
        ),
        ("machine2",),
    ),
    PickCase(
        "when highest priority and sum are the same, minimum number of pods is picked",
        ("machine1", "machine2", "machine3"),
        pod("machine1", HIGH, VERY_LARGE),
        (
            m("m1.1", MID, SMALL, "machine1"),
            m("m1.2", NEG, SMALL, "machine1"),
            m("m1.3", MID, SMALL, "machine1"),
            m("m1.4", NEG, SMALL, "machine1"),
            m("m2.1", MID, LARGE, "machine2"),
            m("m2.2", NEG, MEDIUM, "machine2"),
            m("m3.1", MID, MEDIUM, "machine3"),
            m("m3.2", NEG, SMALL, "machine3"),
            m("m3.3", LOW, SMALL, "machine3"),
        ),
        ("machine2",),
    ),
    # pickOneNodeForPreemption adjusts pod priorities when finding the sum of the victims.
    PickCase(
        "sum of adjusted priorities is considered",
        ("machine1", "machine2", "machine3"),
        pod("machine1", HIGH, VERY_LARGE),
        (
            m("m1.1", MID, SMALL, "machine1"),
            m("m1.2", NEG, SMALL, "machine1"),
            m("m1.3", NEG, SMALL, "machine1"),
            m("m2.1", MID, LARGE, "machine2"),
            m("m2.2", NEG, MEDIUM, "machine2"),
            m("m3.1", MID, MEDIUM, "machine3"),
            m("m3.2", NEG, SMALL, "machine3"),
            m("m3.3", LOW, SMALL, "machine3"),
        ),
        ("machine2",),
    ),
    PickCase(
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ("machine1", "machine2", "machine3", "machine4"),
        pod("pod1", VERY_HIGH, VERY_LARGE),
        (
            m("m1.1", MID, SMALL, "machine1"),
            m("m1.2", LOW, SMALL, "machine1"),
            m("m1.3", LOW, SMALL, "machine1"),
            m("m2.1", HIGH, LARGE, "machine2"),
            m("m3.1", MID, MEDIUM, "machine3"),
            m("m3.2", LOW, SMALL, "machine3"),
            m("m3.3", LOW, SMALL, "machine3"),
            m("m3.4", LOW, MEDIUM, "machine3"),
            m("m4.1", MID, MEDIUM, "machine4"),
            m("m4.2", MID, SMALL, "machine4"),
            m("m4.3", MID, SMALL, "machine4"),
            m("m4.4", NEG, SMALL, "machine4"),
        ),
        ("machine1",),
    ),
    PickCase(
        "same priority, same number of victims, different start time for each machine's pod",
        ("machine1", "machine2", "machine3"),
        pod("machine1", HIGH, VERY_LARGE),
        two_a_machine(((MID, 3), (MID, 3)), ((MID, 4), (MID, 4)), ((MID, 2), (MID, 2))),
        ("machine2",),
    ),
    PickCase(
        "same priority, same number of victims, different start time for all pods",
        ("machine1", "machine2", "machine3"),
        pod("machine1", HIGH, VERY_LARGE),
        two_a_machine(((MID, 5), (MID, 3)), ((MID, 6), (MID, 2)), ((MID, 4), (MID, 7))),
        ("machine3",),
    ),
    PickCase(
        "different priority, same number of victims, different start time for all pods",
        ("machine1", "machine2", "machine3"),
        pod("machine1", HIGH, VERY_LARGE),
        two_a_machine(((LOW, 5), (MID, 3)), ((MID, 7), (LOW, 2)), ((LOW, 4), (MID, 6))),
        ("machine2",),
    ),
]


@pytest.mark.parametrize("case", PICK_CASES, ids=lambda c: c.name)
def test_pick_one_node_for_preemption(case: PickCase) -> None:
    # makeNode(n, DefaultMilliCPURequest*5, DefaultMemoryRequest*5)
    snapshot = snapshot_of(machines(case.nodes, cpu="500m"), case.pods)
    candidates, _ = select_nodes_for_preemption(
        PodInfo(case.pod), snapshot, case.nodes, PredicateFitCheck([pod_fits_resources()])
    )
    assert pick_one_node_for_preemption(candidates) in case.expected


def _victims(*priorities: int, violations: int = 0, start: str = T0) -> Victims:
    return Victims(
        tuple(PodInfo(pod(f"v{i}", p, start=start)) for i, p in enumerate(priorities)), violations
    )


@pytest.mark.parametrize(
    ("name", "candidates", "want"),
    [
        ("no candidates", {}, None),
        (
            "first node without victims wins",
            {"a": _victims(LOW), "b": Victims(), "c": Victims()},
            "b",
        ),
        (
            "fewest PDB violations first",
            {"a": _victims(LOW, violations=1), "b": _victims(HIGH)},
            "b",
        ),
        (
            "a full tie goes to the first node",
            {"a": _victims(MID, LOW), "b": _victims(MID, LOW)},
            "a",
        ),
        (
            "pods that never started count as starting last",
            {"a": _victims(MID), "b": _victims(MID, start=""), "c": _victims(MID, start="")},
            "b",
        ),
    ],
)
def test_pick_one_node_edges(name: str, candidates: dict[str, Victims], want: str | None) -> None:
    assert pick_one_node_for_preemption(candidates) == want


# --------------------------------------------------------------------------- TestNodesWherePreemptionMightHelp

NODE_NAMES = ("machine1", "machine2", "machine3", "machine4")

ERR_NODE_SELECTOR_NOT_MATCH = node_selector.ERR_REASON_NODE_SELECTOR
ERR_POD_NOT_MATCH_HOST_NAME = node_name.ERR_REASON_HOST_NAME
ERR_TAINTS_TOLERATIONS_NOT_MATCH = taint_toleration.ERR_REASON_TAINTS_NOT_TOLERATED
ERR_NODE_LABEL_PRESENCE_VIOLATED = node_label_presence.ERR_REASON_LABEL_PRESENCE
ERR_POD_AFFINITY_NOT_MATCH = inter_pod_affinity.ERR_REASON_AFFINITY_NOT_MATCH
ERR_POD_AFFINITY_RULES_NOT_MATCH = inter_pod_affinity.ERR_REASON_AFFINITY_RULES_NOT_MATCH
ERR_NODE_UNSCHEDULABLE = node_unschedulable.ERR_REASON_UNSCHEDULABLE
ERR_DISK_CONFLICT = volume_restrictions.ERR_DISK_CONFLICT


V1_14_UNRESOLVABLE = frozenset(
    {
        node_selector.ERR_REASON_NODE_SELECTOR,  # ErrNodeSelectorNotMatch
        inter_pod_affinity.ERR_REASON_AFFINITY_RULES_NOT_MATCH,  # ErrPodAffinityRulesNotMatch
        node_name.ERR_REASON_HOST_NAME,  # ErrPodNotMatchHostName
        taint_toleration.ERR_REASON_TAINTS_NOT_TOLERATED,  # ErrTaintsTolerationsNotMatch
        node_label_presence.ERR_REASON_LABEL_PRESENCE,  # ErrNodeLabelPresenceViolated
        node_condition.ERR_REASON_NOT_READY,  # ErrNodeNotReady
        node_condition.ERR_REASON_NETWORK_UNAVAILABLE,  # ErrNodeNetworkUnavailable
        node_pressure.ERR_REASON_DISK_PRESSURE,  # ErrNodeUnderDiskPressure
        node_pressure.ERR_REASON_PID_PRESSURE,  # ErrNodeUnderPIDPressure
        node_pressure.ERR_REASON_MEMORY_PRESSURE,  # ErrNodeUnderMemoryPressure
        node_unschedulable.ERR_REASON_UNSCHEDULABLE,  # ErrNodeUnschedulable
        node_unschedulable.ERR_REASON_UNKNOWN_CONDITION,  # ErrNodeUnknownCondition
        volume_zone.ERR_VOLUME_ZONE_CONFLICT,  # ErrVolumeZoneConflict
        volume_binding.ERR_VOLUME_NODE_CONFLICT,  # ErrVolumeNodeConflict
        volume_binding.ERR_VOLUME_BIND_CONFLICT,  # ErrVolumeBindConflict
        # Adopted with PodTopologySpread: its Filter answers UnschedulableAndUnresolvable.
        pod_topology_spread.ERR_REASON_NODE_LABEL_NOT_MATCH,
    }
)
"""generic_scheduler.go@v1.14 ``unresolvablePredicateFailureErrors`` as reason strings: the
reference the plugins' codes are checked against (preemption itself reads only the codes)."""


def unresolvable_of(failed: Mapping[str, Sequence[str]]) -> frozenset[str]:
    """The nodes whose failure reasons v1.14 found unresolvable: what the filter stage's
    ``ScheduleResult.unresolvable`` holds for them, since each plugin returns
    ``Code.UNSCHEDULABLE_AND_UNRESOLVABLE`` for exactly these reasons
    (:func:`test_plugins_answer_unresolvable_for_exactly_v1_14s_reasons`)."""
    return frozenset(n for n, reasons in failed.items() if V1_14_UNRESOLVABLE.intersection(reasons))


@dataclass(frozen=True)
class HelpCase:
    name: str
    failed: dict[str, tuple[str, ...]]
    expected: set[str]


HELP_CASES = [
    # generic_scheduler_test.go@v1.14.0 TestNodesWherePreemptionMightHelp
    HelpCase(
        "No node should be attempted",
        {
            "machine1": (ERR_NODE_SELECTOR_NOT_MATCH,),
            "machine2": (ERR_POD_NOT_MATCH_HOST_NAME,),
            "machine3": (ERR_TAINTS_TOLERATIONS_NOT_MATCH,),
            "machine4": (ERR_NODE_LABEL_PRESENCE_VIOLATED,),
        },
        set(),
    ),
    HelpCase(
        "ErrPodAffinityNotMatch should be tried as it indicates that the pod is unschedulable "
        "due to inter-pod affinity or anti-affinity",
        {
            "machine1": (ERR_POD_AFFINITY_NOT_MATCH,),
            "machine2": (ERR_POD_NOT_MATCH_HOST_NAME,),
            "machine3": (ERR_NODE_UNSCHEDULABLE,),
        },
        {"machine1", "machine4"},
    ),
    HelpCase(
        "pod with both pod affinity and anti-affinity should be tried",
        {
            "machine1": (ERR_POD_AFFINITY_NOT_MATCH,),
            "machine2": (ERR_POD_NOT_MATCH_HOST_NAME,),
        },
        {"machine1", "machine3", "machine4"},
    ),
    HelpCase(
        "ErrPodAffinityRulesNotMatch should not be tried as it indicates that the pod is "
        "unschedulable due to inter-pod affinity, but ErrPodAffinityNotMatch should be tried as "
        "it indicates that the pod is unschedulable due to inter-pod affinity or anti-affinity",
        {
            "machine1": (ERR_POD_AFFINITY_RULES_NOT_MATCH,),
            "machine2": (ERR_POD_AFFINITY_NOT_MATCH,),
        },
        {"machine2", "machine3", "machine4"},
    ),
    HelpCase(
        "Mix of failed predicates works fine",
        {
            "machine1": (
                ERR_NODE_SELECTOR_NOT_MATCH,
                node_pressure.ERR_REASON_DISK_PRESSURE,
                INSUFFICIENT_MEMORY,
            ),
            "machine2": (ERR_POD_NOT_MATCH_HOST_NAME, ERR_DISK_CONFLICT),
            "machine3": (INSUFFICIENT_MEMORY,),
            "machine4": (),
        },
        {"machine3", "machine4"},
    ),
    HelpCase(
        "Node condition errors should be considered unresolvable",
        {
            "machine1": (node_pressure.ERR_REASON_DISK_PRESSURE,),
            "machine2": (node_pressure.ERR_REASON_PID_PRESSURE,),
            "machine3": (node_pressure.ERR_REASON_MEMORY_PRESSURE,),
        },
        {"machine4"},
    ),
    HelpCase(
        "Node condition errors and ErrNodeUnknownCondition should be considered unresolvable",
        {
            "machine1": (node_condition.ERR_REASON_NOT_READY,),
            "machine2": (node_condition.ERR_REASON_NETWORK_UNAVAILABLE,),
            "machine3": (node_condition.ERR_REASON_UNKNOWN_CONDITION,),
        },
        {"machine4"},
    ),
    HelpCase(
        "ErrVolume... errors should not be tried as it indicates that the pod is unschedulable "
        "due to no matching volumes for pod on node",
        {
            "machine1": (volume_zone.ERR_VOLUME_ZONE_CONFLICT,),
            "machine2": (volume_binding.ERR_VOLUME_NODE_CONFLICT,),
            "machine3": (volume_binding.ERR_VOLUME_BIND_CONFLICT,),
        },
        {"machine4"},
    ),
]


@pytest.mark.parametrize("case", HELP_CASES, ids=lambda c: c.name)
def test_nodes_where_preemption_might_help(case: HelpCase) -> None:
    snapshot = snapshot_of(machines(NODE_NAMES), ())
    got = nodes_where_preemption_might_help(unresolvable_of(case.failed), snapshot)
    assert {info.name for info in got} == case.expected
    assert [info.name for info in got] == [n for n in NODE_NAMES if n in case.expected]


@dataclass(frozen=True)
class CodeCase:
    name: str
    predicate: str
    pod: o.Pod
    node: o.Node | None  # None: a NodeInfo without a Node object (v1.14's nil node)
    pods: tuple[o.Pod, ...] = ()
    args: PluginArgs | None = None
    neighbour: o.Node | None = None  # another node, holding ``neighbour_pods``
    neighbour_pods: tuple[o.Pod, ...] = ()


_WEB_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    ]
}
_DB = make_pod("db").label("app", "db").node("n").obj()
_HOST = make_node("n").label("kubernetes.io/hostname", "n").capacity(cpu="1", pods=10)

CODE_CASES = [
    # Unresolvable: one row per reason of v1.14's list (the volume reasons below).
    CodeCase(
        "node selector",
        names.MATCH_NODE_SELECTOR,
        make_pod().node_selector({"disk": "ssd"}).obj(),
        _HOST.obj(),
    ),
    CodeCase("host name", names.HOST_NAME, make_pod().node("other").obj(), _HOST.obj()),
    CodeCase("taints", names.POD_TOLERATES_NODE_TAINTS, make_pod().obj(), _HOST.taint("gpu").obj()),
    CodeCase(
        "label presence",
        names.CHECK_NODE_LABEL_PRESENCE,
        make_pod().obj(),
        _HOST.obj(),
        args=PluginArgs(names.CHECK_NODE_LABEL_PRESENCE, labels=("region",), presence=True),
    ),
    CodeCase(
        "not ready",
        names.CHECK_NODE_CONDITION,
        make_pod().obj(),
        make_node("n").condition("Ready", "False").obj(),
    ),
    CodeCase(
        "network unavailable",
        names.CHECK_NODE_CONDITION,
        make_pod().obj(),
        make_node("n").condition("Ready", "True").condition("NetworkUnavailable", "True").obj(),
    ),
    CodeCase(
        "disk pressure",
        names.CHECK_NODE_DISK_PRESSURE,
        make_pod().obj(),
        make_node("n").condition("DiskPressure", "True").obj(),
    ),
    CodeCase(
        "pid pressure",
        names.CHECK_NODE_PID_PRESSURE,
        make_pod().obj(),
        make_node("n").condition("PIDPressure", "True").obj(),
    ),
    CodeCase(
        "memory pressure (a best-effort pod)",
        names.CHECK_NODE_MEMORY_PRESSURE,
        make_pod().obj(),
        make_node("n").condition("MemoryPressure", "True").obj(),
    ),
    CodeCase(
        "unschedulable",
        names.CHECK_NODE_UNSCHEDULABLE,
        make_pod().obj(),
        make_node("n").unschedulable().obj(),
    ),
    CodeCase(
        "unschedulable (CheckNodeCondition)",
        names.CHECK_NODE_CONDITION,
        make_pod().obj(),
        make_node("n").condition("Ready", "True").unschedulable().obj(),
    ),
    CodeCase("unknown condition", names.CHECK_NODE_UNSCHEDULABLE, make_pod().obj(), None),
    CodeCase(
        "pod affinity rules",
        names.MATCH_INTER_POD_AFFINITY,
        make_pod("web").affinity({"podAffinity": _WEB_AFFINITY}).obj(),
        make_node("m").label("kubernetes.io/hostname", "m").obj(),
        neighbour=_HOST.obj(),
        neighbour_pods=(_DB,),
    ),
    CodeCase(
        "topology spread: the node lacks the topology key",
        names.EVEN_PODS_SPREAD,
        make_pod("web")
        .label("app", "web")
        .spec(
            topologySpreadConstraints=[
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ]
        )
        .obj(),
        _HOST.obj(),
    ),
    # Resolvable: removing pods may cure these.
    CodeCase(
        "insufficient cpu", names.POD_FITS_RESOURCES, make_pod().req(cpu="2").obj(), _HOST.obj()
    ),
    CodeCase(
        "host ports",
        names.POD_FITS_HOST_PORTS,
        make_pod().host_port(80).obj(),
        _HOST.obj(),
        pods=(make_pod("holder").host_port(80).node("n").obj(),),
    ),
    CodeCase(
        "pod anti-affinity rules",
        names.MATCH_INTER_POD_AFFINITY,
        make_pod("web").affinity({"podAntiAffinity": _WEB_AFFINITY}).obj(),
        _HOST.obj(),
        pods=(_DB,),
    ),
    CodeCase(
        "existing pod's anti-affinity",
        names.MATCH_INTER_POD_AFFINITY,
        make_pod("db2").label("app", "db").obj(),
        _HOST.obj(),
        pods=(make_pod("web").affinity({"podAntiAffinity": _WEB_AFFINITY}).node("n").obj(),),
    ),
    CodeCase(
        "GeneralPredicates: insufficient cpu alone",
        names.GENERAL_PREDICATES,
        make_pod().req(cpu="2").obj(),
        _HOST.obj(),
    ),
    CodeCase(
        "GeneralPredicates: insufficient cpu and a node selector",
        names.GENERAL_PREDICATES,
        make_pod().req(cpu="2").node_selector({"disk": "ssd"}).obj(),
        _HOST.obj(),
    ),
]

# Checked by their own tables (tests/unit/plugins/test_volume_zone.py and
# test_volume_binding.py assert Code.UNSCHEDULABLE_AND_UNRESOLVABLE on every failing row).
_VOLUME_REASONS = {
    volume_zone.ERR_VOLUME_ZONE_CONFLICT,
    volume_binding.ERR_VOLUME_NODE_CONFLICT,
    volume_binding.ERR_VOLUME_BIND_CONFLICT,
}


def _status(case: CodeCase) -> Status:
    plugin = predicate_factory(case.predicate)(case.args or PluginArgs(case.predicate))
    info = NodeInfo(case.node) if case.node is not None else NodeInfo(name="n")
    for p in case.pods:
        info.add_pod(PodInfo(p))
    incoming = PodInfo(case.pod)
    infos = [info]
    if case.neighbour is not None:
        infos.append(NodeInfo(case.neighbour))
        for p in case.neighbour_pods:
            infos[1].add_pod(PodInfo(p))
    snapshot = Snapshot(infos)
    status = run_filter(plugin, incoming, plugin.pre_filter(incoming, snapshot), info)
    if isinstance(plugin, VectorFilterPlugin):
        # The vector form carries the same code (what the filter stage reads).
        meta = plugin.pre_filter(incoming, snapshot)
        assert status_of(run_filter_columns(plugin, incoming, meta, snapshot.columns), 0) == status
    return status


@pytest.mark.parametrize("case", CODE_CASES, ids=attrgetter("name"))
def test_plugins_answer_unresolvable_for_exactly_v1_14s_reasons(case: CodeCase) -> None:
    status = _status(case)
    assert status.reasons, "the case must make the predicate fail"
    unresolvable = bool(V1_14_UNRESOLVABLE.intersection(status.reasons))
    want = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    assert status.code is want, status


def test_the_code_cases_cover_every_unresolvable_reason() -> None:
    given = {r for case in CODE_CASES for r in _status(case).reasons}
    assert V1_14_UNRESOLVABLE - given == _VOLUME_REASONS


def test_pod_affinity_rules_rejection_is_unresolvable_as_in_v1_14() -> None:
    # Podium marked it resolvable before; v1.14 lists ErrPodAffinityRulesNotMatch unresolvable.
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
            ]
        }
    }
    plugin = inter_pod_affinity_predicate()
    db = make_pod("db").label("app", "db").node("n1").obj()
    nodes = [make_node("n1").label("zone", "a").obj(), make_node("n2").label("zone", "b").obj()]
    snapshot = snapshot_of(nodes, [db])
    incoming = PodInfo(make_pod("web").affinity(affinity).obj())
    status = run_filter(
        plugin, incoming, plugin.pre_filter(incoming, snapshot), snapshot.node_infos[1]
    )
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (
        inter_pod_affinity.ERR_REASON_AFFINITY_NOT_MATCH,
        inter_pod_affinity.ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    )


# --------------------------------------------------------------------------- TestPreempt

# TestPreempt's failedPredMap: machine1 and machine3 lack memory, machine2 has a disk conflict.
PREEMPT_FAILED = {
    "machine1": (INSUFFICIENT_MEMORY,),
    "machine2": (ERR_DISK_CONFLICT,),
    "machine3": (INSUFFICIENT_MEMORY,),
}


@dataclass(frozen=True)
class PreemptCase:
    name: str
    pod: o.Pod
    pods: tuple[o.Pod, ...]
    expected_node: str | None
    expected_pods: set[str]
    message: str | None = None


def running(name: str, priority: int, requests: dict[str, str], node: str) -> o.Pod:
    return make_pod(name).priority(priority).req(**requests).node(node).phase("Running").obj()


PREEMPT_CASES = [
    # generic_scheduler_test.go@v1.14.0 TestPreempt
    PreemptCase(
        "basic preemption logic",
        pod("pod1", HIGH, VERY_LARGE),
        (
            running("m1.1", LOW, SMALL, "machine1"),
            running("m1.2", LOW, SMALL, "machine1"),
            running("m2.1", HIGH, LARGE, "machine2"),
            running("m3.1", MID, MEDIUM, "machine3"),
        ),
        "machine1",
        {"m1.1", "m1.2"},
    ),
    PreemptCase(
        "One node doesn't need any preemption",
        pod("pod1", HIGH, VERY_LARGE),
        (
            running("m1.1", LOW, SMALL, "machine1"),
            running("m1.2", LOW, SMALL, "machine1"),
            running("m2.1", HIGH, LARGE, "machine2"),
        ),
        "machine3",
        set(),
    ),
    # (v1.15+) TestPreempt with the NonPreemptingPriority rows.
    PreemptCase(
        "no preempting in pod",
        pod("pod1", HIGH, VERY_LARGE, policy="Never"),
        (
            running("m1.1", LOW, SMALL, "machine1"),
            running("m1.2", LOW, SMALL, "machine1"),
            running("m2.1", HIGH, LARGE, "machine2"),
            running("m3.1", MID, MEDIUM, "machine3"),
        ),
        None,
        set(),
        "preemption: " + MSG_NOT_ELIGIBLE_NEVER,
    ),
    PreemptCase(
        "PreemptionPolicy is nil",
        pod("pod1", HIGH, VERY_LARGE),
        (
            running("m1.1", LOW, SMALL, "machine1"),
            running("m1.2", LOW, SMALL, "machine1"),
            running("m2.1", HIGH, LARGE, "machine2"),
            running("m3.1", MID, MEDIUM, "machine3"),
        ),
        "machine1",
        {"m1.1", "m1.2"},
    ),
]


@pytest.mark.parametrize("case", PREEMPT_CASES, ids=lambda c: c.name)
def test_preempt(case: PreemptCase) -> None:
    snapshot = snapshot_of(machines(("machine1", "machine2", "machine3")), case.pods)
    result = preempt(
        PodInfo(case.pod),
        snapshot,
        unresolvable_of(PREEMPT_FAILED),
        PredicateFitCheck([pod_fits_resources()]),
    )
    assert result.node == case.expected_node
    assert {p.name for p in result.victims} == case.expected_pods
    assert result.message == case.message


# --------------------------------------------------------------------------- the FitError's preemption part


def _fit_message(snapshot: Snapshot, failed: Mapping[str, tuple[str, ...]]) -> str:
    return fit_error_message(len(snapshot), Counter(r for why in failed.values() for r in why))


def test_preemption_message_no_victims_and_not_helpful() -> None:
    # The message README.md shows (later Kubernetes, framework/types.go FitError.Error).
    tainted = [make_node(f"t{i}").capacity(cpu="1", pods=10).taint("gpu").obj() for i in range(3)]
    full = [make_node(f"f{i}").capacity(cpu="1", pods=10).obj() for i in range(2)]
    bound = [make_pod(f"big{i}").priority(HIGH).req(cpu="1").node(f"f{i}").obj() for i in range(2)]
    snapshot = snapshot_of([*full, *tainted], bound)
    failed = {f"f{i}": (node_resources_fit.ERR_REASON_INSUFFICIENT_CPU,) for i in range(2)} | {
        f"t{i}": (taint_toleration.ERR_REASON_TAINTS_NOT_TOLERATED,) for i in range(3)
    }
    incoming = PodInfo(make_pod("p").priority(MID).req(cpu="500m").obj())
    result = preempt(
        incoming, snapshot, unresolvable_of(failed), PredicateFitCheck([pod_fits_resources()])
    )
    assert result.node is None and result.victims == () and result.nominated_pods_to_clear == ()
    assert fit_error_with_preemption(_fit_message(snapshot, failed), result) == (
        "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had taints that the pod didn't "
        "tolerate. preemption: 0/5 nodes are available: 2 No preemption victims found for "
        "incoming pod, 3 Preemption is not helpful for scheduling."
    )


def test_preemption_message_when_evicting_every_lower_pod_is_not_enough() -> None:
    snapshot = snapshot_of(
        machines(("machine1",), memory="1000Mi"),
        [pod("low", LOW, SMALL, on="machine1"), pod("high", HIGH, LARGE, on="machine1")],
    )
    failed = {"machine1": (INSUFFICIENT_MEMORY,)}
    result = preempt(
        PodInfo(pod("p", MID, LARGE)),
        snapshot,
        unresolvable_of(failed),
        PredicateFitCheck([pod_fits_resources()]),
    )
    assert result.message == "preemption: 0/1 nodes are available: 1 Insufficient memory."
    assert fit_error_with_preemption("0/1 nodes are available: 1 Insufficient memory.", result) == (
        "0/1 nodes are available: 1 Insufficient memory. "
        "preemption: 0/1 nodes are available: 1 Insufficient memory."
    )


def test_preemption_not_helpful_anywhere_clears_the_pods_nomination() -> None:
    nodes = machines(("machine1", "machine2"))
    snapshot = snapshot_of(nodes, ())
    failed = dict.fromkeys(("machine1", "machine2"), (ERR_NODE_SELECTOR_NOT_MATCH,))
    incoming = PodInfo(make_pod("p").priority(HIGH).nominated("machine1").obj())
    result = preempt(incoming, snapshot, unresolvable_of(failed), PredicateFitCheck([]))
    assert result.node is None
    assert result.nominated_pods_to_clear == (incoming,)
    assert result.message == (
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert fit_error_with_preemption("x", result) == f"x {result.message}"


def test_a_found_node_adds_no_preemption_part() -> None:
    case = PREEMPT_CASES[0]
    snapshot = snapshot_of(machines(("machine1", "machine2", "machine3")), case.pods)
    result = preempt(
        PodInfo(case.pod),
        snapshot,
        unresolvable_of(PREEMPT_FAILED),
        PredicateFitCheck([pod_fits_resources()]),
    )
    assert result.node == "machine1" and result.message is None
    assert fit_error_with_preemption("0/3 nodes are available: ...", result) == (
        "0/3 nodes are available: ..."
    )


# --------------------------------------------------------------------------- eligibility


@pytest.mark.parametrize(
    ("name", "incoming", "on_node", "eligible", "why"),
    [
        ("an ordinary pod may preempt", pod("p", HIGH), (), True, ""),
        (
            "preemptionPolicy Never may not",
            pod("p", HIGH, policy="Never"),
            (),
            False,
            MSG_NOT_ELIGIBLE_NEVER,
        ),
        (
            "PreemptLowerPriority may",
            pod("p", HIGH, policy="PreemptLowerPriority"),
            (),
            True,
            "",
        ),
        (
            "a lower-priority pod terminating on the nominated node waits",
            make_pod("p").priority(HIGH).nominated("machine1").obj(),
            (make_pod("v").priority(LOW).node("machine1").terminating().obj(),),
            False,
            MSG_NOT_ELIGIBLE_TERMINATING,
        ),
        (
            "a higher-priority pod terminating there does not count",
            make_pod("p").priority(MID).nominated("machine1").obj(),
            (make_pod("v").priority(HIGH).node("machine1").terminating().obj(),),
            True,
            "",
        ),
        (
            "a nomination to a vanished node does not count",
            make_pod("p").priority(HIGH).nominated("gone").obj(),
            (make_pod("v").priority(LOW).node("machine1").terminating().obj(),),
            True,
            "",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    name: str, incoming: o.Pod, on_node: tuple[o.Pod, ...], eligible: bool, why: str
) -> None:
    snapshot = snapshot_of(machines(("machine1",)), on_node)
    assert pod_eligible_to_preempt_others(PodInfo(incoming), snapshot) == (eligible, why)


def test_more_important_pod() -> None:
    early, late = PodInfo(pod("a", MID, start=day(1))), PodInfo(pod("b", MID, start=day(2)))
    assert more_important_pod(early, late) and not more_important_pod(late, early)
    assert more_important_pod(PodInfo(pod("c", HIGH, start=day(9))), early)
    assert more_important_pod(late, PodInfo(pod("never-started", MID)))


# --------------------------------------------------------------------------- disruption budgets


def pdb_pod(name: str, app: str = "web", **kw: object) -> o.Pod:
    b = make_pod(name).label("app", app)
    if kw.get("ns"):
        b.ns(str(kw["ns"]))
    if kw.get("node"):
        b.node(str(kw["node"]))
    if kw.get("phase"):
        b.phase(str(kw["phase"]))
    if kw.get("terminating"):
        b.terminating()
    return b.obj()


BOUND = [pdb_pod(f"w{i}", node="n1") for i in range(4)]


@dataclass(frozen=True)
class BudgetCase:
    name: str
    pdb: o.PodDisruptionBudget
    pods: tuple[o.Pod, ...]
    allowed: int


BUDGET_CASES = [
    BudgetCase(
        "a status is read as given",
        make_pdb().min_available(1).match_labels(app="web").allowed(7).obj(),
        tuple(BOUND),
        7,
    ),
    BudgetCase(
        "minAvailable as a count",
        make_pdb().min_available(3).match_labels(app="web").obj(),
        tuple(BOUND),
        1,
    ),
    BudgetCase(
        "minAvailable as a percent rounds up",
        make_pdb().min_available("50%").match_labels(app="web").obj(),
        (*BOUND, pdb_pod("w4", node="n1")),
        2,  # 5 healthy - ceil(2.5)
    ),
    BudgetCase(
        "maxUnavailable as a count",
        make_pdb().max_unavailable(1).match_labels(app="web").obj(),
        tuple(BOUND),
        1,
    ),
    BudgetCase(
        "maxUnavailable as a percent rounds up",
        make_pdb().max_unavailable("30%").match_labels(app="web").obj(),
        tuple(BOUND),
        2,  # desired 4 - ceil(1.2)
    ),
    BudgetCase(
        "a pending pod is expected but not healthy",
        make_pdb().max_unavailable(1).match_labels(app="web").obj(),
        (*BOUND[:3], pdb_pod("pending")),
        0,  # expected 4, desired 3, healthy 3
    ),
    BudgetCase(
        "terminating and finished pods are not healthy",
        make_pdb().min_available(2).match_labels(app="web").obj(),
        (
            BOUND[0],
            BOUND[1],
            pdb_pod("t", node="n1", terminating=True),
            pdb_pod("done", node="n1", phase="Succeeded"),
        ),
        0,
    ),
    BudgetCase(
        "other namespaces and labels do not count",
        make_pdb().min_available(1).match_labels(app="web").obj(),
        (BOUND[0], pdb_pod("x", node="n1", ns="other"), pdb_pod("y", app="db", node="n1")),
        0,
    ),
    BudgetCase(
        "no matching pod allows nothing",
        make_pdb().min_available(0).match_labels(app="none").obj(),
        tuple(BOUND),
        0,
    ),
    BudgetCase(
        "neither minAvailable nor maxUnavailable allows nothing",
        make_pdb().match_labels(app="web").obj(),
        tuple(BOUND),
        0,
    ),
    BudgetCase(
        "an absent selector selects nothing",
        make_pdb().max_unavailable(1).obj(),
        tuple(BOUND),
        0,
    ),
    BudgetCase(
        "an empty selector selects every pod of the namespace",
        make_pdb().max_unavailable(1).selector({}).obj(),
        (*BOUND, pdb_pod("other-app", app="db", node="n1")),
        1,
    ),
]


@pytest.mark.parametrize("case", BUDGET_CASES, ids=lambda c: c.name)
def test_disruptions_allowed(case: BudgetCase) -> None:
    assert disruptions_allowed(case.pdb, case.pods) == case.allowed


def test_disruption_budgets_count_snapshot_and_pending_pods() -> None:
    pdb = make_pdb("web").max_unavailable(1).match_labels(app="web").obj()
    given = make_pdb("db").min_available(1).match_labels(app="db").allowed(3).obj()
    objects = ClusterObjects(pod_disruption_budgets={"default/web": pdb, "default/db": given})
    snapshot = snapshot_of(machines(("n1",)), BOUND[:2], objects)
    assert [(b.pdb.metadata.name, b.allowed) for b in disruption_budgets(snapshot)] == [
        ("db", 3),
        ("web", 1),
    ]
    with_pending = disruption_budgets(snapshot, [pdb_pod("pending")])
    assert [(b.pdb.metadata.name, b.allowed) for b in with_pending] == [("db", 3), ("web", 0)]


def _budget(pdb: o.PodDisruptionBudget, allowed: int) -> DisruptionBudget:
    return DisruptionBudget(pdb, allowed)


def test_filter_pods_with_pdb_violation() -> None:
    web = _budget(make_pdb("web").min_available(1).match_labels(app="web").obj(), 0)
    roomy = _budget(make_pdb("db").min_available(1).match_labels(app="db").obj(), 1)
    empty = _budget(make_pdb("all").min_available(1).selector({}).obj(), 0)
    elsewhere = _budget(make_pdb("x").ns("other").min_available(1).match_labels(app="c").obj(), 0)
    pods = [
        PodInfo(make_pod("a").label("app", "web").obj()),
        PodInfo(make_pod("b").label("app", "db").obj()),
        PodInfo(make_pod("c").label("app", "c").obj()),
        PodInfo(make_pod("nolabels").obj()),
        PodInfo(make_pod("d").label("app", "web").obj()),
    ]
    violating, others = filter_pods_with_pdb_violation(pods, [web, roomy, empty, elsewhere])
    assert [p.name for p in violating] == ["a", "d"]
    assert [p.name for p in others] == ["b", "c", "nolabels"]


def test_pdb_violating_victims_are_reprieved_first() -> None:
    # "a" (no budget) started earlier, so without budgets it is reprieved and "b" evicted.
    node = machines(("machine1",))[0]
    a = pod("a", LOW, LARGE, on="machine1", start=day(1), labels={"app": "batch"})
    b = pod("b", LOW, LARGE, on="machine1", start=day(2), labels={"app": "web"})
    snapshot = snapshot_of([node], [a, b])
    incoming = PodInfo(pod("p", HIGH, SMALL))
    fits = PredicateFitCheck([pod_fits_resources()])
    info = snapshot.node_infos[0]
    plain = select_victims_on_node(incoming, info, snapshot, fits)
    assert ([p.name for p in plain.victims], plain.num_pdb_violations) == (["b"], 0)
    web = _budget(make_pdb("web").min_available(1).match_labels(app="web").obj(), 0)
    guarded = select_victims_on_node(incoming, info, snapshot, fits, [web])
    assert ([p.name for p in guarded.victims], guarded.num_pdb_violations) == (["a"], 0)
    assert guarded.fits and guarded.reasons == ()


def test_a_victim_that_cannot_be_spared_counts_as_a_pdb_violation() -> None:
    snapshot = snapshot_of(
        machines(("machine1",)), [pod("b", LOW, LARGE, on="machine1", labels={"app": "web"})]
    )
    web = _budget(make_pdb("web").min_available(1).match_labels(app="web").obj(), 0)
    got = select_victims_on_node(
        PodInfo(pod("p", HIGH, LARGE)),
        snapshot.node_infos[0],
        snapshot,
        PredicateFitCheck([pod_fits_resources()]),
        [web],
    )
    assert ([p.name for p in got.victims], got.num_pdb_violations, got.fits) == (["b"], 1, True)


def test_preempt_prefers_the_node_without_pdb_violations() -> None:
    nodes = machines(("machine1", "machine2"))
    pods = [
        pod("guarded", LOW, LARGE, on="machine1", labels={"app": "web"}),
        pod("free", MID, LARGE, on="machine2", labels={"app": "batch"}),
    ]
    pdb = make_pdb("web").min_available(1).match_labels(app="web").obj()
    objects = ClusterObjects(pod_disruption_budgets={"default/web": pdb})
    snapshot = snapshot_of(nodes, pods, objects)
    failed = {"machine1": (INSUFFICIENT_MEMORY,), "machine2": (INSUFFICIENT_MEMORY,)}
    incoming = PodInfo(pod("p", HIGH, LARGE))
    result = preempt(
        incoming, snapshot, unresolvable_of(failed), PredicateFitCheck([pod_fits_resources()])
    )
    # Without the budget machine1 wins (lower victim priority); with it, machine2.
    assert (result.node, [p.name for p in result.victims], result.num_pdb_violations) == (
        "machine2",
        ["free"],
        0,
    )
    unguarded = preempt(
        incoming,
        snapshot,
        unresolvable_of(failed),
        PredicateFitCheck([pod_fits_resources()]),
        budgets=(),
    )
    assert unguarded.node == "machine1"


# --------------------------------------------------------------------------- nominated pods


def test_nominated_pods_map() -> None:
    nominated = NominatedPods()
    a = PodInfo(make_pod("a").nominated("n1").obj())
    b = PodInfo(make_pod("b").obj())
    nominated.add(a)
    nominated.add(b)  # no node given and none in its status: not nominated
    nominated.add(b, "n1")
    assert [p.name for p in nominated.pods_for_node("n1")] == ["a", "b"]
    nominated.add(a, "n2")  # a pod is nominated to one node at a time
    assert [p.name for p in nominated.pods_for_node("n1")] == ["b"]
    assert "default/a" in nominated
    assert [(n, p.name) for n, p in nominated] == [("n1", "b"), ("n2", "a")]
    nominated.delete("default/b")
    nominated.delete("default/missing")
    assert nominated.pods_for_node("n1") == [] and len(nominated) == 1


def test_add_nominated_pods_adds_equal_or_higher_priority_pods_only() -> None:
    nominated = NominatedPods()
    for name, priority in (("low", LOW), ("mid", MID), ("high", HIGH), ("me", MID)):
        nominated.add(PodInfo(pod(name, priority, SMALL)), "machine1")
    info = NodeInfo(machines(("machine1",))[0])
    me = PodInfo(pod("me", MID, SMALL))
    added, out = add_nominated_pods(me, info, nominated)
    assert added and out is not info and [p.name for p in out.pods] == ["mid", "high"]
    assert info.pods == []  # the NodeInfo handed in is left alone
    alone, same = add_nominated_pods(PodInfo(pod("top", VERY_HIGH)), info, nominated)
    assert (alone, same) == (False, info)
    assert add_nominated_pods(me, info, None) == (False, info)
    assert [p.name for p in lower_priority_nominated_pods(me, "machine1", nominated)] == ["low"]
    assert lower_priority_nominated_pods(me, "machine1", None) == []


def test_predicate_fit_check_runs_the_two_passes() -> None:
    # A higher-priority pod nominated to the node takes the room the incoming pod needs.
    snapshot = snapshot_of(machines(("machine1",)), [])
    nominated = NominatedPods()
    nominated.add(PodInfo(pod("first", HIGH, VERY_LARGE)), "machine1")
    fits = PredicateFitCheck([pod_fits_resources()], nominated)
    info = snapshot.node_infos[0]
    assert fits(PodInfo(pod("p", MID, SMALL)), info, snapshot) == (INSUFFICIENT_MEMORY,)
    assert fits(PodInfo(pod("p", VERY_HIGH, SMALL)), info, snapshot) == ()
    assert snapshot.node_infos[0] is info


def test_predicate_fit_check_second_pass_without_the_nominated_pods() -> None:
    # Pod affinity to a pod that is only nominated: the first pass (with it) passes, the
    # second (without it) fails, so the pod does not fit (podFitsOnNode's conservative rule).
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "hostname"}
            ]
        }
    }
    snapshot = snapshot_of(machines(("machine1",)), [pod("other", LOW, on="machine1")])
    nominated = NominatedPods()
    nominated.add(PodInfo(make_pod("db").priority(HIGH).label("app", "db").obj()), "machine1")
    fits = PredicateFitCheck([inter_pod_affinity_predicate()], nominated)
    incoming = PodInfo(make_pod("web").priority(MID).affinity(affinity).obj())
    got = fits(incoming, snapshot.node_infos[0], snapshot)
    assert got == (
        inter_pod_affinity.ERR_REASON_AFFINITY_NOT_MATCH,
        inter_pod_affinity.ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    )


def test_preempt_clears_lower_priority_nominations_on_the_chosen_node() -> None:
    case = PREEMPT_CASES[0]
    snapshot = snapshot_of(machines(("machine1", "machine2", "machine3")), case.pods)
    nominated = NominatedPods()
    low = PodInfo(pod("waiting-low", LOW, SMALL))
    high = PodInfo(pod("waiting-high", VERY_HIGH, SMALL))
    nominated.add(low, "machine1")
    nominated.add(high, "machine3")
    result = preempt(
        PodInfo(case.pod),
        snapshot,
        unresolvable_of(PREEMPT_FAILED),
        PredicateFitCheck([pod_fits_resources()], nominated),
        nominated=nominated,
    )
    assert result.node == "machine1"
    assert result.nominated_pods_to_clear == (low,)


def test_a_predicate_error_makes_the_node_unfit() -> None:
    class Broken(FilterPlugin[None]):
        name = "Broken"

        def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
            return None

        def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
            return Status(Code.ERROR, ("disk on fire",))

    snapshot = snapshot_of(machines(("machine1",)), [pod("v", LOW, on="machine1")])
    got = select_victims_on_node(
        PodInfo(pod("p", HIGH)), snapshot.node_infos[0], snapshot, PredicateFitCheck([Broken()])
    )
    assert (got.fits, got.reasons) == (False, ("disk on fire",))


# --------------------------------------------------------------------------- the object kind


def test_pod_disruption_budget_decodes_and_round_trips() -> None:
    data: dict[str, object] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 2, "currentHealthy": 4, "desiredHealthy": 2},
    }
    pdb = decode(o.PodDisruptionBudget, data)
    assert pdb.spec.max_unavailable == "25%" and pdb.spec.min_available is None
    assert pdb.status is not None and pdb.status.disruptions_allowed == 2
    assert msgspec.json.decode(msgspec.json.encode(pdb)) == data
    assert o.KINDS["PodDisruptionBudget"] is o.PodDisruptionBudget
    assert "PodDisruptionBudget" in o.NAMESPACED_KINDS
    assert decode(o.PodDisruptionBudget, {"metadata": {"name": "x"}}).status is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"minAvailable": 1, "maxUnavailable": 1},
            "minAvailable and maxUnavailable cannot be both set",
        ),
        ({"minAvailable": -1}, "minAvailable: must be greater than or equal to 0"),
        ({"maxUnavailable": "101%"}, "maxUnavailable: must not be greater than 100%"),
        ({"minAvailable": "half"}, "minAvailable: a valid percent string must be"),
        ({"maxUnavailable": "%"}, "maxUnavailable: a valid percent string must be"),
    ],
)
def test_pod_disruption_budget_validation(spec: dict[str, object], message: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=message) as caught:
        decode(o.PodDisruptionBudget, {"metadata": {"name": "x"}, "spec": spec})
    assert "at `$.spec`" in str(caught.value)


def test_the_store_keeps_a_budgets_status_and_the_cache_tracks_budgets() -> None:
    core = StoreCore(wall_clock=lambda: 0.0, new_uid=lambda: "uid")
    with_status = make_pdb("web").min_available(1).match_labels(app="web").allowed(2).obj()
    _, _, added = core.write([with_status])
    _, statuses, _ = core.write([make_pdb("web").min_available(1).match_labels(app="web").obj()])
    assert statuses[0].action == "unchanged"
    stored = core.get("PodDisruptionBudget", "default", "web")
    assert isinstance(stored, o.PodDisruptionBudget) and stored.status is not None
    assert stored.status.disruptions_allowed == 2
    assert [type(x).__name__ for x in core.all_objects()] == ["PodDisruptionBudget"]

    cache = SchedulerCache()
    cache.apply_change(added[0], 0.0)
    assert cache.objects.pod_disruption_budgets == {"default/web": added[0].object}
    cache.apply_change(
        Change(
            revision=9,
            type="Deleted",
            kind="PodDisruptionBudget",
            namespace="default",
            name="web",
            object=added[0].object,
        ),
        0.0,
    )
    assert cache.objects.pod_disruption_budgets == {}


def test_snapshot_copy_is_independent() -> None:
    snapshot = snapshot_of(machines(("a", "b")), [pod("x", LOW, on="a")])
    _ = snapshot.columns
    copy = snapshot.copy()
    changed = copy.node_infos[0].clone()
    changed.remove_pod(changed.pods[0])
    copy.replace_node_info(changed)
    assert copy.get("a") is changed and snapshot.get("a") is not changed
    assert len(snapshot.node_infos[0].pods) == 1 and int(snapshot.columns.pod_count[0]) == 1
    assert int(copy.columns.pod_count[0]) == 0


# --------------------------------------------------------------------------- pod groups (issue 24)


def _gang_group(name: str, min_count: int | None) -> o.PodGroup:
    policy: dict[str, object] = (
        {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    )
    group: o.PodGroup = decode(
        o.PodGroup,
        {
            "kind": "PodGroup",
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": policy},
        },
    )
    return group


def _in_group(p: o.Pod, group: str) -> o.Pod:
    return msgspec.structs.replace(
        p,
        spec=msgspec.structs.replace(
            p.spec, scheduling_group=o.PodSchedulingGroup(pod_group_name=group)
        ),
    )


def test_same_group_spares_the_preemptors_own_members_only() -> None:
    spared = same_group([PodInfo(_in_group(pod("w0", HIGH), "train"))])
    assert [
        spared(PodInfo(_in_group(pod(n, LOW), g)))
        for n, g in (("a", "train"), ("b", "other"), ("c", "web"))
    ] == [True, False, False]
    assert not spared(PodInfo(pod("lone", LOW)))
    assert not same_group([PodInfo(pod("lone", HIGH))])(PodInfo(pod("x", LOW)))


# A placed gang as a preemption unit (issue 24 (b)): KEP-5710 "Preemption unit" and Kubernetes
# v1.36's "Workload-Aware Preemption" (a PodGroup whose disruption mode is PodGroup is
# disrupted whole; victims ranked by priority, then a group before a lone pod, then the larger
# group, then the earlier start). Every row runs select_nodes_for_preemption and
# pickOneNodeForPreemption on machines of 1 cpu; "g" is a gang of minCount 2, "b" a basic
# group, "u" a group with no PodGroup object.


@dataclass(frozen=True)
class UnitCase:
    name: str
    nodes: tuple[str, ...]
    pods: tuple[o.Pod, ...]
    preemptor: o.Pod
    node: str | None  # the node picked (None: no candidate)
    victims: frozenset[str]  # its victims, on whatever node
    pdb: bool = False  # a budget allowing no disruption covers app=guarded


def gm(
    name: str,
    priority: int,
    node: str,
    group: str = "g",
    *,
    cpu: str = "500m",
    start: str = T0,
    labels: dict[str, str] | None = None,
) -> o.Pod:
    """A running member of ``group``."""
    return _in_group(pod(name, priority, {"cpu": cpu}, on=node, start=start, labels=labels), group)


def lone(
    name: str,
    priority: int,
    node: str,
    cpu: str = "500m",
    start: str = T0,
    labels: dict[str, str] | None = None,
) -> o.Pod:
    return pod(name, priority, {"cpu": cpu}, on=node, start=start, labels=labels)


def half_full_of_a_gang(second: int) -> tuple[o.Pod, ...]:
    """Two machines, each half full with a pod of HIGH priority and half with a member of
    gang g: g0 of LOW priority, g1 of ``second``."""
    return (
        gm("g0", LOW, "machine1"),
        gm("g1", second, "machine2"),
        lone("x", HIGH, "machine1"),
        lone("y", HIGH, "machine2"),
    )


def full_and_half(group: str, second: str = "machine2") -> tuple[o.Pod, ...]:
    """Two LOW members of ``group``: ``{group}0`` filling machine1, ``{group}1`` half of
    ``second``."""
    return (
        gm(f"{group}0", LOW, "machine1", group, cpu="1"),
        gm(f"{group}1", LOW, second, group),
    )


M12 = ("machine1", "machine2")
M123 = ("machine1", "machine2", "machine3")
WHOLE = {"cpu": "1"}

UNIT_CASES = [
    UnitCase(
        "a lone pod evicts a lower-priority gang whole, its member on another node too",
        M12,
        half_full_of_a_gang(LOW),
        pod("p", HIGH, {"cpu": "500m"}),
        "machine1",
        frozenset({"g0", "g1"}),
    ),
    UnitCase(
        "a gang with a member of the preemptor's priority is never a victim",
        M12,
        half_full_of_a_gang(HIGH),
        pod("p", HIGH, {"cpu": "500m"}),
        None,
        frozenset(),
    ),
    UnitCase(
        "the node whose victims cost less wins once the gang counts whole (1 pod, not 2)",
        M123,
        (*full_and_half("g", "machine3"), lone("l", LOW, "machine2", "1")),
        pod("p", HIGH, WHOLE),
        "machine2",
        frozenset({"l"}),
    ),
    UnitCase(
        "a basic group's pods are ordinary pods",
        M12,
        full_and_half("b"),
        pod("p", HIGH, WHOLE),
        "machine1",
        frozenset({"b0"}),
    ),
    UnitCase(
        "a group Podium does not know is kept whole",
        M12,
        full_and_half("u"),
        pod("p", HIGH, WHOLE),
        "machine1",
        frozenset({"u0", "u1"}),
    ),
    UnitCase(
        "each member of a gang that violates a budget counts as a violation (2 against 1)",
        M123,
        (
            gm("g0", LOW, "machine1", cpu="1", labels={"app": "guarded"}),
            gm("g1", LOW, "machine3", labels={"app": "guarded"}),
            lone("l", MID, "machine2", "1", labels={"app": "guarded"}),
        ),
        pod("p", HIGH, WHOLE),
        "machine2",
        frozenset({"l"}),
        pdb=True,
    ),
    UnitCase(
        "at one priority a gang is more important than a lone pod that started earlier",
        ("machine1",),
        (gm("g0", LOW, "machine1", start=day(3)), lone("l", LOW, "machine1", start=day(1))),
        pod("p", HIGH, {"cpu": "500m"}),
        "machine1",
        frozenset({"l"}),
    ),
    UnitCase(
        "a gang is reprieved whole when the node fits without it",
        M12,
        (
            gm("g0", LOW, "machine1", cpu="250m"),
            gm("g1", LOW, "machine2"),
            lone("l", MID, "machine1", "750m"),
            lone("y", HIGH, "machine2"),
        ),
        pod("p", HIGH, {"cpu": "750m"}),
        "machine1",
        frozenset({"l"}),
    ),
]


def _unit_objects() -> ClusterObjects:
    return ClusterObjects(
        pod_groups={"default/g": _gang_group("g", 2), "default/b": _gang_group("b", None)}
    )


@pytest.mark.parametrize("case", UNIT_CASES, ids=lambda c: c.name)
def test_a_placed_gang_is_one_preemption_unit(case: UnitCase) -> None:
    snapshot = snapshot_of(machines(case.nodes, cpu="1"), case.pods, _unit_objects())
    budgets = [_budget(make_pdb("guard").match_labels(app="guarded").obj(), 0)] if case.pdb else []
    fits = PredicateFitCheck([pod_fits_resources()])
    before = {i.name: [p.name for p in i.pods] for i in snapshot.node_infos}
    candidates, _ = select_nodes_for_preemption(
        PodInfo(case.preemptor), snapshot, case.nodes, fits, budgets
    )
    node = pick_one_node_for_preemption(candidates)
    assert node == case.node
    assert frozenset(victim_names(candidates).get(node or "", set())) == case.victims
    assert_sorted_by_priority(candidates)
    # The evaluation worked on copies: the snapshot is as it was.
    assert {i.name: [p.name for p in i.pods] for i in snapshot.node_infos} == before


def test_spared_pods_are_never_victims_on_a_node() -> None:
    """Two low pods on the node; sparing one, the other alone is not enough room: no victims,
    and the pod does not fit there."""
    snapshot = snapshot_of(
        machines(("machine1",), cpu="1"),
        [
            pod("a", LOW, {"cpu": "500m"}, on="machine1"),
            pod("b", LOW, {"cpu": "500m"}, on="machine1"),
        ],
    )
    incoming = PodInfo(pod("p", HIGH, {"cpu": "1"}))
    fits = PredicateFitCheck([pod_fits_resources()])
    info = snapshot.node_infos[0]
    assert {p.name for p in select_victims_on_node(incoming, info, snapshot, fits).victims} == {
        "a",
        "b",
    }
    found = select_victims_on_node(incoming, info, snapshot, fits, spared=lambda p: p.name == "a")
    assert (found.fits, found.victims, found.reasons) == (False, (), ("Insufficient cpu",))
    everyone = select_victims_on_node(incoming, info, snapshot, fits, spared=lambda p: True)
    assert (everyone.fits, everyone.reasons) == (False, (MSG_NO_VICTIMS,))


def test_lowest_evictable_priority_skips_spared_pods() -> None:
    snapshot = snapshot_of(
        machines(("machine1", "machine2")),
        [pod("a", NEG, on="machine1"), pod("b", MID, on="machine2"), pod("c", HIGH, on="machine2")],
    )
    assert lowest_evictable_priority(snapshot) == NEG
    assert lowest_evictable_priority(snapshot, lambda p: p.name == "a") == MID
    assert lowest_evictable_priority(snapshot, lambda p: True) is None
    asked: list[str] = []

    def spared(p: PodInfo) -> bool:
        asked.append(p.name)
        return False

    # Below MID only "a" counts, and only it is asked about.
    assert lowest_evictable_priority(snapshot, spared, below=MID) == NEG
    assert asked == ["a"]
    assert lowest_evictable_priority(snapshot, spared, below=NEG) is None
    assert lowest_evictable_priority(snapshot_of(machines(("machine1",)), [])) is None


def test_without_victims_anywhere_says_what_preempt_says() -> None:
    """No pod of a lower priority anywhere: the same message as the per-node search gives."""
    snapshot = snapshot_of(
        machines(("machine1", "machine2", "machine3"), cpu="1"),
        [pod(f"x{i}", HIGH, {"cpu": "1"}, on=f"machine{i}") for i in (1, 2, 3)],
    )
    failed = {
        "machine1": ("Insufficient cpu",),
        "machine2": ("Insufficient cpu",),
        "machine3": (ERR_NODE_SELECTOR_NOT_MATCH,),
    }
    incoming = PodInfo(pod("p", MID, {"cpu": "1"}))
    unresolvable = unresolvable_of(failed)
    searched = preempt(incoming, snapshot, unresolvable, PredicateFitCheck([pod_fits_resources()]))
    quick = without_victims_anywhere(incoming, snapshot, unresolvable)
    assert (
        quick.message
        == searched.message
        == (
            "preemption: 0/3 nodes are available: 1 Preemption is not helpful for "
            "scheduling, 2 No preemption victims found for incoming pod."
        )
    )
    never = PodInfo(pod("n", MID, {"cpu": "1"}, policy=PREEMPT_NEVER))
    assert without_victims_anywhere(never, snapshot, unresolvable).message == (
        f"preemption: {MSG_NOT_ELIGIBLE_NEVER}"
    )


def test_without_victims_takes_them_off_clones_of_the_nodes_they_run_on() -> None:
    snapshot = snapshot_of(
        machines(("machine1", "machine2")),
        [
            pod("a", LOW, SMALL, on="machine1"),
            pod("b", LOW, SMALL, on="machine1"),
            pod("c", LOW, SMALL, on="machine2"),
        ],
    )
    one, two = snapshot.node_infos
    victims = [p for p in (*one.pods, *two.pods) if p.name in ("a", "c")]
    before: dict[str, NodeInfo] = {}
    without_victims(snapshot, before, "machine1", victims)
    assert before == {"machine1": one, "machine2": two}
    assert [p.name for p in one.pods] == ["a", "b"] and [p.name for p in two.pods] == ["c"]
    assert [p.name for p in snapshot.by_name["machine1"].pods] == ["b"]
    assert snapshot.by_name["machine2"].pods == []
    # A second call keeps the first NodeInfo each node had.
    without_victims(snapshot, before, "machine1", [p for p in one.pods if p.name == "b"])
    assert before["machine1"] is one and snapshot.by_name["machine1"].pods == []


def test_with_whole_gangs_completes_a_gang_an_extender_handed_back_in_part() -> None:
    """An extender's preempt verb returns one member of a placed gang: the rest come with it,
    most important first, the extender's violation count kept; lone victims stay as they are."""
    snapshot = snapshot_of(
        machines(M12),
        [gm("g0", LOW, "machine1"), gm("g1", MID, "machine2"), lone("l", LOW, "machine1")],
        _unit_objects(),
    )
    units = PreemptionUnits(snapshot)
    by_name = {p.name: p for i in snapshot.node_infos for p in i.pods}
    part = Victims((by_name["g0"], by_name["l"]), 1)
    whole = with_whole_gangs(part, units)
    assert [p.name for p in whole.pods] == ["g1", "g0", "l"] and whole.num_pdb_violations == 1
    alone = Victims((by_name["l"],))
    assert with_whole_gangs(alone, units) is alone
    assert with_whole_gangs(part, PreemptionUnits(snapshot_of(machines(M12), []))) is part


def test_spend_budgets_takes_each_covered_victim_off_its_budget() -> None:
    web = DisruptionBudget(make_pdb("web").match_labels(app="web").obj(), 2)
    db = DisruptionBudget(make_pdb("db").match_labels(app="db").obj(), 1)
    victims = [PodInfo(pod(n, LOW, labels={"app": "web"})) for n in ("a", "b")]
    spent = spend_budgets([web, db], victims)
    assert [b.allowed for b in spent] == [0, 1]
    assert spent[1] is db
    # The next member's victims on a web pod now violate the budget.
    assert filter_pods_with_pdb_violation([PodInfo(pod("c", LOW, labels={"app": "web"}))], spent)[0]
