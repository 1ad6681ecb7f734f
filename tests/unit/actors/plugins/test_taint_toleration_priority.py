"""TaintTolerationPriority, scalar and vector map forms, with its NormalizeReduce(10, true).

Rows ported from pkg/scheduler/algorithm/priorities/taint_toleration_test.go@v1.14.0
(TestTaintAndToleration: 5 of 5 rows), names kept; plus Podium rows (marked below).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_node, make_pod
from priority_harness import run_priority

from podium.actors.framework.interface import MAX_PRIORITY, PluginArgs, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.taint_toleration_priority import FACTORIES, TaintTolerationPriority
from podium.protocol import objects as o

PREFER = "PreferNoSchedule"
NO_SCHEDULE = "NoSchedule"
MAX = MAX_PRIORITY

Tol = tuple[str, str, str, str]  # key, operator, value, effect
TaintSpec = tuple[str, str, str]  # key, value, effect


def pod_with_tolerations(*tolerations: Tol) -> o.Pod:
    b = make_pod("p")
    for key, op, value, effect in tolerations:
        b.toleration(key, op, value, effect)
    return b.obj()


def node_with_taints(name: str, *taints: TaintSpec) -> o.Node:
    b = make_node(name)
    for key, value, effect in taints:
        b.taint(key, value, effect)
    return b.obj()


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    want: tuple[int, ...]


CPU_ARM = ("cpu-type", "arm64", PREFER)
DISK_SSD = ("disk-type", "ssd", PREFER)

# taint_toleration_test.go@v1.14.0 TestTaintAndToleration (5 rows).
GO_CASES = [
    Case(
        "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
        pod_with_tolerations(("foo", "Equal", "bar", PREFER)),
        (
            node_with_taints("nodeA", ("foo", "bar", PREFER)),
            node_with_taints("nodeB", ("foo", "blah", PREFER)),
        ),
        (MAX, 0),
    ),
    Case(
        "the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many tolerable taints a node has",
        pod_with_tolerations(
            ("cpu-type", "Equal", "arm64", PREFER), ("disk-type", "Equal", "ssd", PREFER)
        ),
        (
            node_with_taints("nodeA"),
            node_with_taints("nodeB", CPU_ARM),
            node_with_taints("nodeC", CPU_ARM, DISK_SSD),
        ),
        (MAX, MAX, MAX),
    ),
    Case(
        "the more intolerable taints a node has, the lower score it gets.",
        pod_with_tolerations(("foo", "Equal", "bar", PREFER)),
        (
            node_with_taints("nodeA"),
            node_with_taints("nodeB", CPU_ARM),
            node_with_taints("nodeC", CPU_ARM, DISK_SSD),
        ),
        (MAX, 5, 0),
    ),
    Case(
        "only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations priority function",
        pod_with_tolerations(
            ("cpu-type", "Equal", "arm64", NO_SCHEDULE), ("disk-type", "Equal", "ssd", NO_SCHEDULE)
        ),
        (
            node_with_taints("nodeA"),
            node_with_taints("nodeB", ("cpu-type", "arm64", NO_SCHEDULE)),
            node_with_taints("nodeC", CPU_ARM, DISK_SSD),
        ),
        (MAX, MAX, 0),
    ),
    Case(
        "Default behaviour No taints and tolerations, lands on node with no taints",
        pod_with_tolerations(),
        (node_with_taints("nodeA"), node_with_taints("nodeB", CPU_ARM)),
        (MAX, 0),
    ),
]

# Podium rows.
PODIUM_CASES = [
    Case(
        "a toleration with an empty effect covers a PreferNoSchedule taint",
        pod_with_tolerations(("cpu-type", "Exists", "", "")),
        (node_with_taints("nodeA", CPU_ARM), node_with_taints("nodeB", DISK_SSD)),
        (MAX, 0),
    ),
    Case(
        "an empty key with Exists tolerates every taint",
        pod_with_tolerations(("", "Exists", "", PREFER)),
        (node_with_taints("nodeA", CPU_ARM, DISK_SSD), node_with_taints("nodeB")),
        (MAX, MAX),
    ),
    Case(
        "no node has an intolerable taint: every node gets 10",
        pod_with_tolerations(),
        (node_with_taints("nodeA", ("k", "v", NO_SCHEDULE)), node_with_taints("nodeB")),
        (MAX, MAX),
    ),
    Case(
        "nodes sharing a taint list score alike",
        pod_with_tolerations(),
        (
            node_with_taints("nodeA", CPU_ARM),
            node_with_taints("nodeB", CPU_ARM, DISK_SSD),
            node_with_taints("nodeC", CPU_ARM),
            node_with_taints("nodeD"),
        ),
        (5, 0, 5, MAX),
    ),
]


@pytest.mark.parametrize("case", GO_CASES + PODIUM_CASES, ids=attrgetter("name"))
def test_taint_and_toleration(case: Case) -> None:
    run = run_priority(
        TaintTolerationPriority(PluginArgs(names.TAINT_TOLERATION)), case.pod, case.nodes
    )
    assert tuple(run.final) == case.want
    assert run.vector_raw == run.raw
    assert run.vector_final == run.final


def test_factory_uses_the_entry_name() -> None:
    plugin = FACTORIES[names.TAINT_TOLERATION](PluginArgs(names.TAINT_TOLERATION))
    assert isinstance(plugin, VectorScorePlugin)
    assert plugin.name == names.TAINT_TOLERATION
