"""LeastRequestedPriority, scalar and vector map forms.

Rows ported from pkg/scheduler/algorithm/priorities/least_requested_test.go@v1.14.0
(TestLeastRequested: 8 of 8 rows), names kept; plus Podium rows (marked below).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_pod
from priority_harness import requests_pod, resource_node, run_priority

from podium.actors.framework.interface import MAX_PRIORITY, PluginArgs, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.least_requested import FACTORIES, LeastRequested, least_requested_score
from podium.protocol import objects as o

_ids = itertools.count()
LABELS1 = {"foo": "bar", "baz": "blah"}
LABELS2 = {"bar": "foo", "baz": "blah"}
CPU_ONLY = (("1000m", "0"), ("2000m", "0"))
CPU_AND_MEMORY = (("1000m", "2000"), ("2000m", "3000"))


def pod(
    node: str = "", *containers: tuple[str, str], labels: dict[str, str] | None = None
) -> o.Pod:
    return requests_pod(f"p{next(_ids)}", node, *containers, labels=labels)


def no_resources() -> o.Pod:
    return pod()


def cpu_only(node: str = "machine1", labels: dict[str, str] | None = None) -> o.Pod:
    return pod(node, *CPU_ONLY, labels=labels)


def cpu_and_memory(node: str = "machine2", labels: dict[str, str] | None = None) -> o.Pod:
    return pod(node, *CPU_AND_MEMORY, labels=labels)


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    want: tuple[int, ...]
    pods: tuple[o.Pod, ...] = ()


def two(cpu1: int, mem1: int, cpu2: int, mem2: int) -> tuple[o.Node, ...]:
    return resource_node("machine1", cpu1, mem1), resource_node("machine2", cpu2, mem2)


MAX = MAX_PRIORITY

# least_requested_test.go@v1.14.0 TestLeastRequested (8 rows).
GO_CASES = [
    Case(
        "nothing scheduled, nothing requested",
        no_resources(),
        two(4000, 10000, 4000, 10000),
        (MAX, MAX),
    ),
    Case(
        "nothing scheduled, resources requested, differently sized machines",
        cpu_and_memory(),
        two(4000, 10000, 6000, 10000),
        (3, 5),
    ),
    Case(
        "no resources requested, pods scheduled",
        no_resources(),
        two(4000, 10000, 4000, 10000),
        (MAX, MAX),
        pods=(
            pod("machine1", labels=LABELS2),
            pod("machine1", labels=LABELS1),
            pod("machine2", labels=LABELS1),
            pod("machine2", labels=LABELS1),
        ),
    ),
    Case(
        "no resources requested, pods scheduled with resources",
        no_resources(),
        two(10000, 20000, 10000, 20000),
        (7, 5),
        pods=(
            cpu_only(labels=LABELS2),
            cpu_only(labels=LABELS1),
            cpu_only("machine2", labels=LABELS1),
            cpu_and_memory(labels=LABELS1),
        ),
    ),
    Case(
        "resources requested, pods scheduled with resources",
        cpu_and_memory(),
        two(10000, 20000, 10000, 20000),
        (5, 4),
        pods=(cpu_only(), cpu_and_memory()),
    ),
    Case(
        "resources requested, pods scheduled with resources, differently sized machines",
        cpu_and_memory(),
        two(10000, 20000, 10000, 50000),
        (5, 6),
        pods=(cpu_only(), cpu_and_memory()),
    ),
    Case(
        "requested resources exceed node capacity",
        cpu_only(),
        two(4000, 10000, 4000, 10000),
        (5, 2),
        pods=(cpu_only(), cpu_and_memory()),
    ),
    Case(
        "zero node resources, pods scheduled with resources",
        no_resources(),
        two(0, 0, 0, 0),
        (0, 0),
        pods=(cpu_only(), cpu_and_memory()),
    ),
]

MIB = 1024 * 1024

# Podium rows: the non-zero defaults (100m cpu, 200 MiB memory for a container naming none).
PODIUM_CASES = [
    # cpu (1000-100)*10/1000 = 9, memory (1000-200)*10/1000 = 8, mean 8.
    Case(
        "a container without requests counts 100m cpu and 200MiB memory",
        make_pod("no-req").container().obj(),
        (resource_node("machine1", 1000, 1000 * MIB),),
        (8,),
    ),
]


@pytest.mark.parametrize("case", GO_CASES + PODIUM_CASES, ids=attrgetter("name"))
def test_least_requested(case: Case) -> None:
    run = run_priority(
        LeastRequested(PluginArgs(names.LEAST_REQUESTED)), case.pod, case.nodes, case.pods
    )
    assert tuple(run.final) == case.want
    assert run.vector_raw == run.raw
    assert run.vector_final == run.final


@pytest.mark.parametrize(
    ("requested", "capacity", "want"),
    [(0, 4000, 10), (3000, 4000, 2), (4000, 4000, 0), (4001, 4000, 0), (0, 0, 0), (1, 3, 6)],
)
def test_least_requested_score(requested: int, capacity: int, want: int) -> None:
    assert least_requested_score(requested, capacity) == want


def test_factory_uses_the_entry_name() -> None:
    plugin = FACTORIES[names.LEAST_REQUESTED](PluginArgs("ResourceOptimization"))
    assert isinstance(plugin, VectorScorePlugin)
    assert plugin.name == "ResourceOptimization"
