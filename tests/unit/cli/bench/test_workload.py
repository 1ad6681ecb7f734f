"""The gang workloads' objects (issue 24 point 8): PodGroups of the Kubernetes form before their
members, 1-CPU pods in one namespace, and the gangs asking 0.8x or 1.5x the free CPU.

(scheduler_perf's workloads: tests/unit/cli/bench/test_bench.py.)"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from podium.cli.bench.workload import (
    BASELINE_WORKLOAD,
    GANG_NAMESPACE,
    ONE_CPU_POD,
    PUT_BATCH,
    WORKLOADS,
    Gangs,
    free_cpu,
    make_pod_group,
)
from podium.protocol import objects as o
from podium.protocol.gangs import min_count, pod_group_key

GANG_WORKLOADS = [name for name, w in WORKLOADS.items() if w.gangs is not None]


def test_the_gang_workloads_are_named_for_their_size_and_ask() -> None:
    assert GANG_WORKLOADS == [
        "Gang8", "Gang32", "Gang128", "Gang8Overfull", "Gang32Overfull", "Gang128Overfull",
    ]  # fmt: skip
    for name in GANG_WORKLOADS:
        gangs = WORKLOADS[name].gangs
        assert gangs is not None
        assert name == f"Gang{gangs.size}" + ("Overfull" if gangs.overfull else "")
        assert gangs.ask_percent == (150 if gangs.overfull else 80)


def test_gang_workloads_and_their_baseline_run_at_500_and_5000_nodes_with_no_initial_pods() -> None:
    for name in [*GANG_WORKLOADS, BASELINE_WORKLOAD]:
        workload = WORKLOADS[name]
        assert workload.sizes == (500, 5000)
        assert all(workload.init(n) == 0 for n in workload.sizes)
        assert workload.measured_pod is ONE_CPU_POD
        assert workload.capacity(500) == free_cpu(500) == 2000
    assert WORKLOADS[BASELINE_WORKLOAD].gangs is None


def test_the_pod_asks_one_cpu_and_a_little_memory() -> None:
    (container,) = ONE_CPU_POD.spec.containers
    assert str(container.resources.requests["cpu"]) == "1"
    assert str(container.resources.requests["memory"]) == "256Mi"
    assert ONE_CPU_POD.spec.scheduling_group is None


@dataclass(frozen=True)
class AskCase:
    workload: str
    nodes: int
    groups: int
    pods: int


# free = nodes x 4 CPU (no initial pods); the gangs ask 80 % or 150 % of it, in whole gangs.
ASK_CASES = [
    AskCase("Gang8", 500, 200, 1600),  # 0.8 x 2000
    AskCase("Gang32", 500, 50, 1600),
    AskCase("Gang128", 500, 12, 1536),  # 1600 / 128 = 12.5: 12 gangs, 0.768x
    AskCase("Gang8", 5000, 2000, 16000),  # 0.8 x 20 000
    AskCase("Gang32", 5000, 500, 16000),
    AskCase("Gang128", 5000, 125, 16000),
    AskCase("Gang8Overfull", 500, 375, 3000),  # 1.5 x 2000
    AskCase("Gang32Overfull", 500, 93, 2976),  # 3000 / 32 = 93.75
    AskCase("Gang128Overfull", 500, 23, 2944),  # 3000 / 128 = 23.4
    AskCase("Gang8Overfull", 5000, 3750, 30000),  # 1.5 x 20 000
    AskCase("Gang32Overfull", 5000, 937, 29984),
    AskCase("Gang128Overfull", 5000, 234, 29952),
    AskCase(BASELINE_WORKLOAD, 500, 0, 1600),
    AskCase(BASELINE_WORKLOAD, 5000, 0, 16000),
]


@pytest.mark.parametrize("case", ASK_CASES, ids=lambda c: f"{c.workload}-{c.nodes}")
def test_the_gangs_ask_their_share_of_the_free_cpu_in_whole_gangs(case: AskCase) -> None:
    workload = WORKLOADS[case.workload]
    assert workload.measured(case.nodes) == case.pods
    objects = workload.measured_objects(case.nodes, case.pods)
    groups = [obj for obj in objects if isinstance(obj, o.PodGroup)]
    pods = [obj for obj in objects if isinstance(obj, o.Pod)]
    assert (len(groups), len(pods)) == (case.groups, case.pods)
    assert workload.measured_pods(case.nodes, case.pods) == pods
    if workload.gangs is not None:
        assert workload.gangs.groups(case.nodes) == case.groups
        share = case.pods / free_cpu(case.nodes)
        if workload.gangs.overfull:
            assert 1.45 < share <= 1.5
        else:
            assert 0.76 < share <= 0.8


def test_each_group_comes_before_its_members_and_they_all_share_one_namespace() -> None:
    workload = WORKLOADS["Gang8"]
    objects = workload.measured_objects(500, 1600)
    seen: set[str] = set()
    members: dict[str, int] = {}
    for obj in objects:
        assert obj.metadata.namespace == GANG_NAMESPACE
        if isinstance(obj, o.PodGroup):
            seen.add(f"{GANG_NAMESPACE}/{obj.metadata.name}")
            continue
        assert isinstance(obj, o.Pod)
        group = pod_group_key(obj)
        assert group in seen, f"{obj.metadata.name} comes before its group {group}"
        members[group] = members.get(group, 0) + 1
    assert set(members.values()) == {8}
    assert len(members) == 200
    assert [obj.metadata.name for obj in objects[:3]] == ["gang-0", "gang-0-0", "gang-0-1"]
    assert objects[9].metadata.name == "gang-1"


def test_the_pod_groups_are_of_the_kubernetes_form_with_min_count_the_gang_size() -> None:
    for name in GANG_WORKLOADS:
        workload = WORKLOADS[name]
        assert workload.gangs is not None
        group = workload.measured_objects(500, workload.gangs.size)[0]
        assert isinstance(group, o.PodGroup)
        assert group.api_version == "scheduling.k8s.io/v1alpha2"
        assert min_count(group) == workload.gangs.size
        policy = group.spec.scheduling_policy
        assert policy is not None and policy.gang is not None and policy.basic is None
    assert make_pod_group("g", "ns", 3).spec.scheduling_policy == o.PodGroupSchedulingPolicy(
        gang=o.GangSchedulingPolicy(min_count=3)
    )


def test_members_join_by_scheduling_group_alone() -> None:
    pod = WORKLOADS["Gang32"].measured_pods(500, 32)[5]
    assert pod.spec.scheduling_group == o.PodSchedulingGroup(pod_group_name="gang-0")
    assert pod.metadata.labels == {} and pod.metadata.annotations == {}


def test_a_gang_may_span_two_puts() -> None:
    # 9 objects a gang of 8: the 56th gang (objects 495..503) straddles the first Put's end.
    objects = WORKLOADS["Gang8"].measured_objects(500, 1600)
    first, second = objects[:PUT_BATCH], objects[PUT_BATCH:]
    groups_first = {pod_group_key(p) for p in first if isinstance(p, o.Pod)}
    groups_second = {pod_group_key(p) for p in second if isinstance(p, o.Pod)}
    assert groups_first & groups_second == {f"{GANG_NAMESPACE}/gang-55"}


def test_the_baseline_is_the_same_pods_without_groups() -> None:
    pods = WORKLOADS[BASELINE_WORKLOAD].measured_objects(500, 1600)
    assert all(isinstance(p, o.Pod) and p.spec.scheduling_group is None for p in pods)
    assert {p.metadata.namespace for p in pods} == {GANG_NAMESPACE}
    gang_pod = WORKLOADS["Gang8"].measured_pods(500, 8)[0]
    assert isinstance(pods[0], o.Pod)
    assert pods[0].spec.containers == gang_pod.spec.containers


def test_an_ask_over_the_free_cpu_is_overfull() -> None:
    assert Gangs(8, 150).overfull
    assert not Gangs(8, 80).overfull
    assert not Gangs(8, 100).overfull
    assert Gangs(128, 80).groups(39) == 0  # 0.8 x 156 CPUs < 128
    assert Gangs(128, 80).groups(40) == 1
