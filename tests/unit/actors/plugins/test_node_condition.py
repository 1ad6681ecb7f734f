"""CheckNodeCondition, scalar and vector forms on the same table.

Rows named "nodeN ..." come from pkg/scheduler/algorithm/predicates/predicates_test.go,
TestNodeConditionPredicate (5 of 5 rows); the others are Podium's, for the reasons and their
order, which that test does not assert.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_node, make_pod
from scalar_plugins import reasons_of

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    Code,
    PluginArgs,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import node_condition
from podium.actors.plugins.node_condition import (
    ERR_REASON_NETWORK_UNAVAILABLE as NETWORK,
)
from podium.actors.plugins.node_condition import (
    ERR_REASON_NOT_READY as NOT_READY,
)
from podium.actors.plugins.node_condition import (
    ERR_REASON_UNKNOWN_CONDITION as UNKNOWN,
)
from podium.actors.plugins.node_condition import (
    ERR_REASON_UNSCHEDULABLE as UNSCHEDULABLE,
)
from podium.actors.plugins.node_condition import NodeCondition


@dataclass(frozen=True)
class Case:
    name: str
    node: NodeInfo
    want: tuple[str, ...]


CASES = [
    # predicates_test.go@v1.14 TestNodeConditionPredicate
    Case("node1 considered", make_node("node1").condition("Ready", "True").info(), ()),
    Case(
        "node2 ignored - node not Ready",
        make_node("node2").condition("Ready", "False").info(),
        (NOT_READY,),
    ),
    Case(
        "node3 ignored - node unschedulable",
        make_node("node9").unschedulable().info(),
        (UNSCHEDULABLE,),
    ),
    Case("node4 considered", make_node("node10").unschedulable(False).info(), ()),
    Case("node5 considered", make_node("node11").info(), ()),
    # Podium rows
    Case("missing node has unknown conditions", NodeInfo(None, name="ghost"), (UNKNOWN,)),
    Case(
        "ready unknown is not ready",
        make_node("n-ru").condition("Ready", "Unknown").info(),
        (NOT_READY,),
    ),
    Case(
        "network unavailable true",
        make_node("n-nu").condition("Ready", "True").condition("NetworkUnavailable", "True").info(),
        (NETWORK,),
    ),
    Case(
        "network unavailable unknown counts as unavailable",
        make_node("n-nuu").condition("NetworkUnavailable", "Unknown").info(),
        (NETWORK,),
    ),
    Case(
        "network available and ready",
        make_node("n-ok")
        .condition("NetworkUnavailable", "False")
        .condition("Ready", "True")
        .info(),
        (),
    ),
    Case(
        "all three reasons in condition order",
        make_node("n-all")
        .condition("Ready", "False")
        .condition("NetworkUnavailable", "True")
        .unschedulable()
        .info(),
        (NOT_READY, NETWORK, UNSCHEDULABLE),
    ),
    Case(
        "network listed before ready reports network first",
        make_node("n-swap")
        .condition("NetworkUnavailable", "True")
        .condition("Ready", "False")
        .unschedulable()
        .info(),
        (NETWORK, NOT_READY, UNSCHEDULABLE),
    ),
    Case(
        "network listed before ready, only ready fails",
        make_node("n-swap-r")
        .condition("NetworkUnavailable", "False")
        .condition("Ready", "False")
        .info(),
        (NOT_READY,),
    ),
    Case(
        "out of disk is not checked in v1.14",
        make_node("n-ood").condition("Ready", "True").condition("OutOfDisk", "True").info(),
        (),
    ),
    Case(
        "pressure conditions are not checked here",
        make_node("n-press")
        .condition("MemoryPressure", "True")
        .condition("DiskPressure", "True")
        .info(),
        (),
    ),
    Case(
        "each failing condition entry adds a reason",
        make_node("n-dup").condition("Ready", "False").condition("Ready", "Unknown").info(),
        (NOT_READY, NOT_READY),
    ),
    Case(
        "a passing duplicate entry does not cancel a failing one",
        make_node("n-dup2").condition("Ready", "False").condition("Ready", "True").info(),
        (NOT_READY,),
    ),
    Case(
        "duplicate conditions with network first and unschedulable",
        make_node("n-dup3")
        .condition("NetworkUnavailable", "True")
        .condition("Ready", "True")
        .condition("Ready", "False")
        .condition("NetworkUnavailable", "True")
        .unschedulable()
        .info(),
        (NETWORK, NOT_READY, NETWORK, UNSCHEDULABLE),
    ),
    Case(
        "duplicate pressure conditions only",
        make_node("n-dup4")
        .condition("DiskPressure", "True")
        .condition("DiskPressure", "False")
        .info(),
        (),
    ),
]

POD = make_pod("p").info()


def plugin() -> NodeCondition:
    return NodeCondition(PluginArgs(node_condition.NAME))


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter(case: Case) -> None:
    p = plugin()
    meta = p.pre_filter(POD, Snapshot([case.node]))
    status = run_filter(p, POD, meta, case.node)
    assert status.reasons == case.want
    assert status.code is (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if case.want else Code.SUCCESS)


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter_columns(case: Case) -> None:
    p = plugin()
    meta = p.pre_filter(POD, Snapshot([case.node]))
    masks = run_filter_columns(p, POD, meta, NodeColumns([case.node]))
    assert reasons_of(masks, 0) == case.want


def test_filter_columns_whole_table() -> None:
    p = plugin()
    infos = [case.node for case in CASES]
    masks = run_filter_columns(p, POD, None, NodeColumns(infos))
    assert [reasons_of(masks, i) for i in range(len(infos))] == [case.want for case in CASES]


def test_filter_columns_follows_update_row() -> None:
    p = plugin()
    cols = NodeColumns([make_node("a").condition("Ready", "True").info(), make_node("b").info()])
    assert reasons_of(run_filter_columns(p, POD, None, cols), 0) == ()
    changed = (
        make_node("a").condition("NetworkUnavailable", "True").condition("Ready", "False").info()
    )
    cols.update_row(0, changed)
    assert reasons_of(run_filter_columns(p, POD, None, cols), 0) == (NETWORK, NOT_READY)
    duplicated = make_node("a").condition("Ready", "False").condition("Ready", "False").info()
    cols.update_row(0, duplicated)
    assert reasons_of(run_filter_columns(p, POD, None, cols), 0) == (NOT_READY, NOT_READY)
    assert reasons_of(run_filter_columns(p, POD, None, cols), 1) == ()


def test_factory_reports_under_the_given_name() -> None:
    made = node_condition.FACTORIES[node_condition.NAME](PluginArgs("ValidateNodeCondition"))
    assert isinstance(made, NodeCondition)
    assert made.name == "ValidateNodeCondition"
