"""EqualPriority, scalar and vector map forms.

v1.14 has no unit test of EqualPriorityMap (pkg/scheduler/core/generic_scheduler.go@v1.14.0);
these Podium rows pin its contract: 1 on every node, no reduce step.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_node, make_pod
from priority_harness import resource_node, run_priority

from podium.actors.framework.interface import PluginArgs, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.equal_priority import FACTORIES, EqualPriority
from podium.protocol import objects as o


@dataclass(frozen=True)
class Case:
    name: str
    nodes: tuple[o.Node, ...]
    want: tuple[int, ...]


CASES = [
    Case(
        "every node scores 1",
        (resource_node("a", 4000, 10000), make_node("b").label("x", "y").obj()),
        (1, 1),
    ),
    Case("no nodes", (), ()),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_equal_priority(case: Case) -> None:
    run = run_priority(
        EqualPriority(PluginArgs(names.EQUAL_PRIORITY)), make_pod("p").obj(), case.nodes
    )
    assert tuple(run.final) == case.want
    assert run.vector_raw == run.raw
    assert run.vector_final == run.final


def test_factory_uses_the_entry_name() -> None:
    plugin = FACTORIES[names.EQUAL_PRIORITY](PluginArgs("UniformPriority"))
    assert isinstance(plugin, VectorScorePlugin)
    assert plugin.name == "UniformPriority"
