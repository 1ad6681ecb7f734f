"""NodeLabelPriority (policy ``labelPreference``), scalar and vector map forms.

Rows ported from pkg/scheduler/algorithm/priorities/node_label_test.go@v1.14.0
(TestNewNodeLabelPriority: 6 of 6 rows), names kept; plus Podium rows (marked below).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_node, make_pod
from priority_harness import run_priority

from podium.actors.framework.interface import MAX_PRIORITY, PluginArgs, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.node_label import FACTORIES, NodeLabel
from podium.protocol import objects as o

MAX = MAX_PRIORITY
LABEL1 = {"foo": "bar"}
LABEL2 = {"bar": "foo"}
LABEL3 = {"bar": "baz"}
NODES = tuple(
    make_node(name).labels(labels).obj()
    for name, labels in (("machine1", LABEL1), ("machine2", LABEL2), ("machine3", LABEL3))
)


@dataclass(frozen=True)
class Case:
    name: str
    label: str
    presence: bool
    want: tuple[int, ...]
    nodes: tuple[o.Node, ...] = NODES


# node_label_test.go@v1.14.0 TestNewNodeLabelPriority (6 rows).
GO_CASES = [
    Case("no match found, presence true", "baz", True, (0, 0, 0)),
    Case("no match found, presence false", "baz", False, (MAX, MAX, MAX)),
    Case("one match found, presence true", "foo", True, (MAX, 0, 0)),
    Case("one match found, presence false", "foo", False, (0, MAX, MAX)),
    Case("two matches found, presence true", "bar", True, (0, MAX, MAX)),
    Case("two matches found, presence false", "bar", False, (MAX, 0, 0)),
]

# Podium rows.
PODIUM_CASES = [
    Case(
        "an empty label value counts as present",
        "e",
        True,
        (MAX, 0),
        (make_node("a").label("e", "").obj(), make_node("b").obj()),
    ),
]


@pytest.mark.parametrize("case", GO_CASES + PODIUM_CASES, ids=attrgetter("name"))
def test_node_label_priority(case: Case) -> None:
    plugin = NodeLabel(PluginArgs("labelPref", label=case.label, presence=case.presence))
    run = run_priority(plugin, make_pod("p").obj(), case.nodes)
    assert tuple(run.final) == case.want
    assert run.vector_raw == run.raw
    assert run.vector_final == run.final


def test_factory_reports_under_the_entry_name() -> None:
    plugin = FACTORIES[names.NODE_LABEL](PluginArgs("preferSSD", label="ssd", presence=True))
    assert isinstance(plugin, VectorScorePlugin)
    assert (plugin.name, plugin.label, plugin.presence) == ("preferSSD", "ssd", True)
