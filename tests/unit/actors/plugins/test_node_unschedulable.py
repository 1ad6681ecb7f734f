"""CheckNodeUnschedulable, scalar and vector forms on the same table.

Rows 1-3 come from pkg/scheduler/algorithm/predicates/predicates_test.go,
TestCheckNodeUnschedulablePredicate (3 of 3 rows; that test asserts fit only, Podium also
asserts the reason); the others are Podium's.
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
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import node_unschedulable
from podium.actors.plugins.node_unschedulable import (
    ERR_REASON_UNKNOWN_CONDITION as UNKNOWN,
)
from podium.actors.plugins.node_unschedulable import (
    ERR_REASON_UNSCHEDULABLE as UNSCHEDULABLE,
)
from podium.actors.plugins.node_unschedulable import (
    TAINT_NODE_UNSCHEDULABLE,
    NodeUnschedulable,
)


@dataclass(frozen=True)
class Case:
    name: str
    pod: PodInfo
    node: NodeInfo
    want: tuple[str, ...]


CORDONED = make_node("cordoned").unschedulable().info()

CASES = [
    # predicates_test.go@v1.14 TestCheckNodeUnschedulablePredicate
    Case(
        "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
        make_pod("p").info(),
        CORDONED,
        (UNSCHEDULABLE,),
    ),
    Case(
        "Schedule pod to normal node",
        make_pod("p").info(),
        make_node("n").unschedulable(False).info(),
        (),
    ),
    Case(
        "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
        make_pod("p").toleration(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule").info(),
        CORDONED,
        (),
    ),
    # Podium rows
    Case(
        "missing node has unknown conditions",
        make_pod("p").info(),
        NodeInfo(None, name="ghost"),
        (UNKNOWN,),
    ),
    Case(
        "tolerating pod on a missing node still gets unknown conditions",
        make_pod("p").toleration(key=TAINT_NODE_UNSCHEDULABLE, operator="Exists").info(),
        NodeInfo(None, name="ghost"),
        (UNKNOWN,),
    ),
    Case(
        "Exists toleration for the key, any effect",
        make_pod("p").toleration(key=TAINT_NODE_UNSCHEDULABLE, operator="Exists").info(),
        CORDONED,
        (),
    ),
    Case(
        "wildcard Exists toleration tolerates it",
        make_pod("p").toleration(operator="Exists").info(),
        CORDONED,
        (),
    ),
    Case(
        "toleration with the wrong effect does not help",
        make_pod("p")
        .toleration(key=TAINT_NODE_UNSCHEDULABLE, operator="Exists", effect="NoExecute")
        .info(),
        CORDONED,
        (UNSCHEDULABLE,),
    ),
    Case(
        "Equal toleration with a value does not match the empty-valued taint",
        make_pod("p")
        .toleration(key=TAINT_NODE_UNSCHEDULABLE, value="true", effect="NoSchedule")
        .info(),
        CORDONED,
        (UNSCHEDULABLE,),
    ),
    Case(
        "toleration for another key does not help",
        make_pod("p").toleration(key="dedicated", operator="Exists").info(),
        CORDONED,
        (UNSCHEDULABLE,),
    ),
    Case(
        "the node's taints do not matter, only spec.unschedulable",
        make_pod("p").info(),
        make_node("tainted").taint(TAINT_NODE_UNSCHEDULABLE).info(),
        (),
    ),
]


def plugin() -> NodeUnschedulable:
    return NodeUnschedulable(PluginArgs(node_unschedulable.NAME))


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter(case: Case) -> None:
    p = plugin()
    meta = p.pre_filter(case.pod, Snapshot([case.node]))
    status = run_filter(p, case.pod, meta, case.node)
    assert status.reasons == case.want
    assert status.code is (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if case.want else Code.SUCCESS)


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter_columns(case: Case) -> None:
    p = plugin()
    meta = p.pre_filter(case.pod, Snapshot([case.node]))
    assert (
        reasons_of(run_filter_columns(p, case.pod, meta, NodeColumns([case.node])), 0) == case.want
    )


def test_filter_columns_many_nodes() -> None:
    p = plugin()
    infos = [
        make_node("a").info(),
        CORDONED,
        NodeInfo(None, name="ghost"),
        make_node("b").unschedulable().taint("x").info(),
    ]
    cols = NodeColumns(infos)
    pod = make_pod("p").info()
    meta = p.pre_filter(pod, Snapshot(infos))
    masks = run_filter_columns(p, pod, meta, cols)
    assert [reasons_of(masks, i) for i in range(len(infos))] == [
        run_filter(p, pod, meta, info).reasons for info in infos
    ]
    assert [reasons_of(masks, i) for i in range(len(infos))] == [
        (),
        (UNSCHEDULABLE,),
        (UNKNOWN,),
        (UNSCHEDULABLE,),
    ]


def test_factory_reports_under_the_given_name() -> None:
    made = node_unschedulable.FACTORIES[node_unschedulable.NAME](PluginArgs("CheckNodeSchedulable"))
    assert isinstance(made, NodeUnschedulable)
    assert made.name == "CheckNodeSchedulable"
