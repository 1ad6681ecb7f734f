"""MostRequestedPriority, scalar and vector map forms.

Rows ported from pkg/scheduler/algorithm/priorities/most_requested_test.go@v1.14.0
(TestMostRequested: 5 of 5 rows), names kept; plus Podium rows (marked below).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_pod
from priority_harness import requests_pod, resource_node, run_priority

from podium.actors.framework.interface import PluginArgs, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.most_requested import FACTORIES, MostRequested, most_requested_score
from podium.protocol import objects as o

_ids = itertools.count()
LABELS1 = {"foo": "bar", "baz": "blah"}
LABELS2 = {"bar": "foo", "baz": "blah"}
CPU_ONLY = (("1000m", "0"), ("2000m", "0"))
CPU_AND_MEMORY = (("1000m", "2000"), ("2000m", "3000"))
BIG_CPU_AND_MEMORY = (("2000m", "4000"), ("3000m", "5000"))


def pod(
    node: str = "", *containers: tuple[str, str], labels: dict[str, str] | None = None
) -> o.Pod:
    return requests_pod(f"p{next(_ids)}", node, *containers, labels=labels)


def cpu_only(node: str = "machine1", labels: dict[str, str] | None = None) -> o.Pod:
    return pod(node, *CPU_ONLY, labels=labels)


def cpu_and_memory(node: str = "machine2", labels: dict[str, str] | None = None) -> o.Pod:
    return pod(node, *CPU_AND_MEMORY, labels=labels)


def two(cpu1: int, mem1: int, cpu2: int, mem2: int) -> tuple[o.Node, ...]:
    return resource_node("machine1", cpu1, mem1), resource_node("machine2", cpu2, mem2)


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    want: tuple[int, ...]
    pods: tuple[o.Pod, ...] = ()


# most_requested_test.go@v1.14.0 TestMostRequested (5 rows).
GO_CASES = [
    Case("nothing scheduled, nothing requested", pod(), two(4000, 10000, 4000, 10000), (0, 0)),
    Case(
        "nothing scheduled, resources requested, differently sized machines",
        cpu_and_memory(),
        two(4000, 10000, 6000, 10000),
        (6, 5),
    ),
    Case(
        "no resources requested, pods scheduled with resources",
        pod(),
        two(10000, 20000, 10000, 20000),
        (3, 4),
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
        (4, 5),
        pods=(cpu_only(), cpu_and_memory()),
    ),
    Case(
        "resources requested with more than the node, pods scheduled with resources",
        pod("machine1", *BIG_CPU_AND_MEMORY),
        two(4000, 10000, 10000, 8000),
        (4, 2),
    ),
]

MIB = 1024 * 1024

# Podium rows.
PODIUM_CASES = [
    # cpu 100*10/1000 = 1, memory 200*10/1000 = 2, mean 1.
    Case(
        "a container without requests counts 100m cpu and 200MiB memory",
        make_pod("no-req").container().obj(),
        (resource_node("machine1", 1000, 1000 * MIB),),
        (1,),
    ),
    # v1.14 gives 0 for an over-requested resource (later versions clamp it to the capacity).
    Case(
        "an over-requested resource scores 0, not 10",
        pod("", ("5000m", "5000")),
        (resource_node("machine1", 4000, 10000),),
        (2,),
    ),
]


@pytest.mark.parametrize("case", GO_CASES + PODIUM_CASES, ids=attrgetter("name"))
def test_most_requested(case: Case) -> None:
    run = run_priority(
        MostRequested(PluginArgs(names.MOST_REQUESTED)), case.pod, case.nodes, case.pods
    )
    assert tuple(run.final) == case.want
    assert run.vector_raw == run.raw
    assert run.vector_final == run.final


@pytest.mark.parametrize(
    ("requested", "capacity", "want"),
    [(0, 4000, 0), (3000, 4000, 7), (4000, 4000, 10), (4001, 4000, 0), (0, 0, 0), (5, 0, 0)],
)
def test_most_requested_score(requested: int, capacity: int, want: int) -> None:
    assert most_requested_score(requested, capacity) == want


def test_factory_uses_the_entry_name() -> None:
    plugin = FACTORIES[names.MOST_REQUESTED](PluginArgs("packing"))
    assert isinstance(plugin, VectorScorePlugin)
    assert plugin.name == "packing"
