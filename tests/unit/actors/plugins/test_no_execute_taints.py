"""PodToleratesNodeNoExecuteTaints, scalar and vector forms on the same table.

v1.14 has no unit test of its own for this predicate (predicates_test.go tests only
PodToleratesNodeTaints), so every row here is Podium's; several mirror TestPodToleratesTaints
with NoExecute taints.
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
from podium.actors.plugins import no_execute_taints
from podium.actors.plugins.no_execute_taints import (
    ERR_REASON_TAINTS_NOT_TOLERATED as TAINTS,
)
from podium.actors.plugins.no_execute_taints import NoExecuteTaints


@dataclass(frozen=True)
class Case:
    name: str
    pod: PodInfo
    node: NodeInfo
    want: tuple[str, ...]


CASES = [
    Case("untainted node", make_pod("p").info(), make_node("n").info(), ()),
    Case(
        "NoSchedule taints are not this predicate's business",
        make_pod("p").info(),
        make_node("n").taint("dedicated", "user1", "NoSchedule").info(),
        (),
    ),
    Case(
        "PreferNoSchedule taints are ignored",
        make_pod("p").info(),
        make_node("n").taint("dedicated", "user1", "PreferNoSchedule").info(),
        (),
    ),
    Case(
        "a pod with no tolerations can't go onto a node with a NoExecute taint",
        make_pod("p").info(),
        make_node("n").taint("dedicated", "user1", "NoExecute").info(),
        (TAINTS,),
    ),
    Case(
        "Equal toleration with matching key, value and effect",
        make_pod("p").toleration("dedicated", "Equal", "user1", "NoExecute").info(),
        make_node("n").taint("dedicated", "user1", "NoExecute").info(),
        (),
    ),
    Case(
        "Equal toleration with another value",
        make_pod("p").toleration("dedicated", "Equal", "user2", "NoExecute").info(),
        make_node("n").taint("dedicated", "user1", "NoExecute").info(),
        (TAINTS,),
    ),
    Case(
        "Exists toleration for the key",
        make_pod("p").toleration("foo", "Exists", effect="NoExecute").info(),
        make_node("n").taint("foo", "bar", "NoExecute").info(),
        (),
    ),
    Case(
        "a NoSchedule toleration does not tolerate a NoExecute taint",
        make_pod("p").toleration("foo", "Exists", effect="NoSchedule").info(),
        make_node("n").taint("foo", "bar", "NoExecute").info(),
        (TAINTS,),
    ),
    Case(
        "a toleration with empty effect tolerates NoExecute",
        make_pod("p").toleration("foo", "Equal", "bar").info(),
        make_node("n").taint("foo", "bar", "NoExecute").info(),
        (),
    ),
    Case(
        "only the NoExecute taints count among several",
        make_pod("p").toleration("b", "Exists").info(),
        make_node("n").taint("a", "1", "NoSchedule").taint("b", "2", "NoExecute").info(),
        (),
    ),
    Case(
        "one of two NoExecute taints untolerated",
        make_pod("p").toleration("b", "Exists").info(),
        make_node("n").taint("a", "1", "NoExecute").taint("b", "2", "NoExecute").info(),
        (TAINTS,),
    ),
    Case(
        "wildcard Exists toleration",
        make_pod("p").toleration(operator="Exists").info(),
        make_node("n").taint("a", "1", "NoExecute").info(),
        (),
    ),
    Case(
        "wildcard Exists toleration limited to NoSchedule",
        make_pod("p").toleration(operator="Exists", effect="NoSchedule").info(),
        make_node("n").taint("a", "1", "NoExecute").info(),
        (TAINTS,),
    ),
    Case(
        "missing node has no taints and passes",
        make_pod("p").info(),
        NodeInfo(None, name="ghost"),
        (),
    ),
]


def plugin() -> NoExecuteTaints:
    return NoExecuteTaints(PluginArgs(no_execute_taints.NAME))


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter(case: Case) -> None:
    p = plugin()
    meta = p.pre_filter(case.pod, Snapshot([case.node]))
    status = run_filter(p, case.pod, meta, case.node)
    assert status.reasons == case.want
    assert status.code is (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if case.want else Code.SUCCESS)
    if meta is SKIP:
        assert not case.want


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter_columns(case: Case) -> None:
    p = plugin()
    meta = p.pre_filter(case.pod, Snapshot([case.node]))
    assert (
        reasons_of(run_filter_columns(p, case.pod, meta, NodeColumns([case.node])), 0) == case.want
    )


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter_columns_whole_cluster(case: Case) -> None:
    p = plugin()
    infos = [c.node for c in CASES]
    masks = run_filter_columns(p, case.pod, None, NodeColumns(infos))
    assert [reasons_of(masks, i) for i in range(len(infos))] == [
        run_filter(p, case.pod, None, info).reasons for info in infos
    ]


def test_pre_filter_skips_pods_tolerating_every_no_execute_taint() -> None:
    p = plugin()
    snapshot = Snapshot([])
    assert p.pre_filter(make_pod("p").toleration(operator="Exists").info(), snapshot) is SKIP
    assert (
        p.pre_filter(
            make_pod("p").toleration(operator="Exists", effect="NoExecute").info(), snapshot
        )
        is SKIP
    )
    assert (
        p.pre_filter(
            make_pod("p").toleration(operator="Exists", effect="NoSchedule").info(), snapshot
        )
        is None
    )
    assert p.pre_filter(make_pod("p").toleration("k", "Exists").info(), snapshot) is None
    assert p.pre_filter(make_pod("p").info(), snapshot) is None


def test_factory_reports_under_the_given_name() -> None:
    made = no_execute_taints.FACTORIES[no_execute_taints.NAME](
        PluginArgs("NoExecuteTaintTolerance")
    )
    assert isinstance(made, NoExecuteTaints)
    assert made.name == "NoExecuteTaintTolerance"
