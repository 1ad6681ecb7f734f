"""CheckNodeMemoryPressure / CheckNodeDiskPressure / CheckNodePIDPressure, both forms.

Ported rows, from pkg/scheduler/algorithm/predicates/predicates_test.go:
TestPodSchedulesOnNodeWithMemoryPressureCondition (4 of 4), ...WithDiskPressureCondition
(2 of 2), ...WithPIDPressureCondition (2 of 2). The Go row names repeat across the three
tests, so each row here is prefixed with its predicate. Other rows are Podium's.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_node, make_pod
from scalar_plugins import reasons_of

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    SKIP,
    Code,
    PluginArgs,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names, node_pressure
from podium.actors.plugins.node_pressure import (
    ERR_REASON_DISK_PRESSURE as DISK,
)
from podium.actors.plugins.node_pressure import (
    ERR_REASON_MEMORY_PRESSURE as MEMORY,
)
from podium.actors.plugins.node_pressure import (
    ERR_REASON_PID_PRESSURE as PID,
)
from podium.actors.plugins.node_pressure import is_pod_best_effort


@dataclass(frozen=True)
class Case:
    name: str
    predicate: str
    pod: PodInfo
    node: NodeInfo
    want: tuple[str, ...]


MEM, DSK, PIDP = (
    names.CHECK_NODE_MEMORY_PRESSURE,
    names.CHECK_NODE_DISK_PRESSURE,
    names.CHECK_NODE_PID_PRESSURE,
)

# predicates_test.go: a best-effort pod and one requesting makeAllocatableResources(100, 100,
# 100, 0, 0, 0) (cpu 100m, memory 100, pods 100, example.com/aaa 0, ephemeral 0, hugepages 0).
BEST_EFFORT = make_pod("best-effort").container(image="image").info()
BURSTABLE = (
    make_pod("burstable")
    .container(
        image="image",
        requests={
            "cpu": "100m",
            "memory": "100",
            "pods": "100",
            "example.com/aaa": "0",
            "ephemeral-storage": "0",
            "hugepages-2Mi": "0",
        },
    )
    .info()
)
READY = make_node("ready").condition("Ready", "True").info()
MEMORY_PRESSURE = make_node("mem").condition("MemoryPressure", "True").info()
DISK_PRESSURE = make_node("disk").condition("DiskPressure", "True").info()
PID_PRESSURE = make_node("pid").condition("PIDPressure", "True").info()

CASES = [
    # predicates_test.go@v1.14 TestPodSchedulesOnNodeWithMemoryPressureCondition
    Case(
        "memory: best-effort pod schedulable on node without memory pressure condition on",
        MEM,
        BEST_EFFORT,
        READY,
        (),
    ),
    Case(
        "memory: best-effort pod not schedulable on node with memory pressure condition on",
        MEM,
        BEST_EFFORT,
        MEMORY_PRESSURE,
        (MEMORY,),
    ),
    Case(
        "memory: non best-effort pod schedulable on node with memory pressure condition on",
        MEM,
        BURSTABLE,
        MEMORY_PRESSURE,
        (),
    ),
    Case(
        "memory: non best-effort pod schedulable on node without memory pressure condition on",
        MEM,
        BURSTABLE,
        READY,
        (),
    ),
    # predicates_test.go@v1.14 TestPodSchedulesOnNodeWithDiskPressureCondition
    Case(
        "disk: pod schedulable on node without pressure condition on", DSK, BEST_EFFORT, READY, ()
    ),
    Case(
        "disk: pod not schedulable on node with pressure condition on",
        DSK,
        BEST_EFFORT,
        DISK_PRESSURE,
        (DISK,),
    ),
    # predicates_test.go@v1.14 TestPodSchedulesOnNodeWithPIDPressureCondition
    Case(
        "pid: pod schedulable on node without pressure condition on",
        PIDP,
        make_pod("p").info(),
        READY,
        (),
    ),
    Case(
        "pid: pod not schedulable on node with pressure condition on",
        PIDP,
        make_pod("p").info(),
        PID_PRESSURE,
        (PID,),
    ),
    # Podium rows
    Case("disk: non best-effort pods are rejected too", DSK, BURSTABLE, DISK_PRESSURE, (DISK,)),
    Case("pid: non best-effort pods are rejected too", PIDP, BURSTABLE, PID_PRESSURE, (PID,)),
    Case(
        "memory: pressure False passes",
        MEM,
        BEST_EFFORT,
        make_node("n").condition("MemoryPressure", "False").info(),
        (),
    ),
    Case(
        "memory: pressure Unknown passes",
        MEM,
        BEST_EFFORT,
        make_node("n").condition("MemoryPressure", "Unknown").info(),
        (),
    ),
    Case("memory: other pressures are not memory pressure", MEM, BEST_EFFORT, DISK_PRESSURE, ()),
    Case("disk: memory pressure is not disk pressure", DSK, BEST_EFFORT, MEMORY_PRESSURE, ()),
    Case("pid: disk pressure is not pid pressure", PIDP, BEST_EFFORT, DISK_PRESSURE, ()),
    Case("memory: missing node passes", MEM, BEST_EFFORT, NodeInfo(None, name="ghost"), ()),
    Case("disk: missing node passes", DSK, BEST_EFFORT, NodeInfo(None, name="ghost"), ()),
    Case(
        "memory: limits alone make a pod burstable",
        MEM,
        make_pod("p").container(limits={"memory": "1Gi"}).info(),
        MEMORY_PRESSURE,
        (),
    ),
    Case(
        "memory: zero requests leave a pod best-effort",
        MEM,
        make_pod("p").container(requests={"cpu": "0", "memory": "0"}).info(),
        MEMORY_PRESSURE,
        (MEMORY,),
    ),
    Case(
        "memory: ephemeral storage and extended resources leave a pod best-effort",
        MEM,
        make_pod("p")
        .container(requests={"ephemeral-storage": "1Gi", "example.com/gpu": "1"})
        .info(),
        MEMORY_PRESSURE,
        (MEMORY,),
    ),
    Case(
        "memory: v1.14 QoS ignores init containers",
        MEM,
        make_pod("p").container().init_req({"cpu": "1", "memory": "1Gi"}).info(),
        MEMORY_PRESSURE,
        (MEMORY,),
    ),
    Case(
        "memory: one burstable container among best-effort ones",
        MEM,
        make_pod("p").container().container(requests={"cpu": "10m"}).info(),
        MEMORY_PRESSURE,
        (),
    ),
    Case(
        "memory: the last of duplicate conditions wins (False last)",
        MEM,
        BEST_EFFORT,
        make_node("dup1")
        .condition("MemoryPressure", "True")
        .condition("MemoryPressure", "False")
        .info(),
        (),
    ),
    Case(
        "disk: the last of duplicate conditions wins (True last)",
        DSK,
        BEST_EFFORT,
        make_node("dup2")
        .condition("DiskPressure", "False")
        .condition("DiskPressure", "True")
        .info(),
        (DISK,),
    ),
    Case(
        "pid: the last of duplicate conditions wins (False last)",
        PIDP,
        BEST_EFFORT,
        make_node("dup3")
        .condition("PIDPressure", "True")
        .condition("Ready", "True")
        .condition("PIDPressure", "False")
        .info(),
        (),
    ),
    Case(
        "pid: duplicates of another type do not hide pid pressure",
        PIDP,
        BEST_EFFORT,
        make_node("dup4")
        .condition("PIDPressure", "True")
        .condition("Ready", "True")
        .condition("Ready", "False")
        .info(),
        (PID,),
    ),
]


def plugin(predicate: str) -> node_pressure.PressurePredicate:
    return node_pressure.FACTORIES[predicate](PluginArgs(predicate))


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter(case: Case) -> None:
    p = plugin(case.predicate)
    meta = p.pre_filter(case.pod, Snapshot([case.node]))
    status = run_filter(p, case.pod, meta, case.node)
    assert status.reasons == case.want
    assert status.code is (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if case.want else Code.SUCCESS)


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter_columns(case: Case) -> None:
    p = plugin(case.predicate)
    meta = p.pre_filter(case.pod, Snapshot([case.node]))
    assert (
        reasons_of(run_filter_columns(p, case.pod, meta, NodeColumns([case.node])), 0) == case.want
    )


@pytest.mark.parametrize("predicate", [MEM, DSK, PIDP])
def test_filter_columns_whole_table(predicate: str) -> None:
    p = plugin(predicate)
    infos = [case.node for case in CASES]
    cols = NodeColumns(infos)
    for pod in (BEST_EFFORT, BURSTABLE):
        meta = p.pre_filter(pod, Snapshot(infos))
        masks = run_filter_columns(p, pod, meta, cols)
        want = [run_filter(p, pod, meta, info).reasons for info in infos]
        assert [reasons_of(masks, i) for i in range(len(infos))] == want


def test_memory_pressure_skips_pods_that_are_not_best_effort() -> None:
    p = plugin(MEM)
    assert p.pre_filter(BURSTABLE, Snapshot([MEMORY_PRESSURE])) is SKIP
    assert p.pre_filter(BEST_EFFORT, Snapshot([MEMORY_PRESSURE])) is not SKIP
    assert plugin(DSK).pre_filter(BURSTABLE, Snapshot([DISK_PRESSURE])) is not SKIP
    # filter and filter_columns stay correct when called with SKIP anyway.
    assert run_filter(p, BURSTABLE, SKIP, MEMORY_PRESSURE).is_success
    assert run_filter_columns(p, BURSTABLE, SKIP, NodeColumns([MEMORY_PRESSURE])) == []


def test_is_pod_best_effort() -> None:
    assert is_pod_best_effort(BEST_EFFORT)
    assert is_pod_best_effort(make_pod("empty").info())
    assert not is_pod_best_effort(BURSTABLE)
    assert not is_pod_best_effort(make_pod("cpu-limit").container(limits={"cpu": "1"}).info())


def test_factories_report_under_the_given_names() -> None:
    assert set(node_pressure.FACTORIES) == {MEM, DSK, PIDP}
    assert (
        node_pressure.FACTORIES[MEM](PluginArgs("MemoryPressureCheck")).name
        == "MemoryPressureCheck"
    )
