"""PodToleratesNodeTaints, scalar and vector forms on the same table.

The first 9 rows come from pkg/scheduler/algorithm/predicates/predicates_test.go,
TestPodToleratesTaints (9 of 9 rows); the others are Podium's.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import msgspec
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
from podium.actors.plugins import taint_toleration
from podium.actors.plugins.taint_toleration import (
    ERR_REASON_TAINTS_NOT_TOLERATED as TAINTS,
)
from podium.actors.plugins.taint_toleration import (
    ERR_REASON_UNKNOWN_CONDITION as UNKNOWN,
)
from podium.actors.plugins.taint_toleration import TaintToleration, taint_sets_tolerated
from podium.protocol.objects import Taint, Toleration


@dataclass(frozen=True)
class Case:
    name: str
    pod: PodInfo
    node: NodeInfo
    want: tuple[str, ...]


CASES = [
    # predicates_test.go@v1.14 TestPodToleratesTaints
    Case(
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        make_pod("pod0").info(),
        make_node("n").taint("dedicated", "user1", "NoSchedule").info(),
        (TAINTS,),
    ),
    Case(
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        make_pod("pod1")
        .container("pod1:V1")
        .toleration("dedicated", value="user1", effect="NoSchedule")
        .info(),
        make_node("n").taint("dedicated", "user1", "NoSchedule").info(),
        (),
    ),
    Case(
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        make_pod("pod2")
        .container("pod2:V1")
        .toleration("dedicated", "Equal", "user2", "NoSchedule")
        .info(),
        make_node("n").taint("dedicated", "user1", "NoSchedule").info(),
        (TAINTS,),
    ),
    Case(
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
        make_pod("pod2")
        .container("pod2:V1")
        .toleration("foo", "Exists", effect="NoSchedule")
        .info(),
        make_node("n").taint("foo", "bar", "NoSchedule").info(),
        (),
    ),
    Case(
        "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled onto the node",
        make_pod("pod2")
        .container("pod2:V1")
        .toleration("dedicated", "Equal", "user2", "NoSchedule")
        .toleration("foo", "Exists", effect="NoSchedule")
        .info(),
        make_node("n")
        .taint("dedicated", "user2", "NoSchedule")
        .taint("foo", "bar", "NoSchedule")
        .info(),
        (),
    ),
    Case(
        "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, "
        "can't be scheduled onto the node",
        make_pod("pod2")
        .container("pod2:V1")
        .toleration("foo", "Equal", "bar", "PreferNoSchedule")
        .info(),
        make_node("n").taint("foo", "bar", "NoSchedule").info(),
        (TAINTS,),
    ),
    Case(
        "The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, "
        "and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
        make_pod("pod2").container("pod2:V1").toleration("foo", "Equal", "bar").info(),
        make_node("n").taint("foo", "bar", "NoSchedule").info(),
        (),
    ),
    Case(
        "The pod has a toleration that key and value don't match the taint on the node, "
        "but the effect of taint on node is PreferNochedule. Pod can be scheduled onto the node",
        make_pod("pod2")
        .container("pod2:V1")
        .toleration("dedicated", "Equal", "user2", "NoSchedule")
        .info(),
        make_node("n").taint("dedicated", "user1", "PreferNoSchedule").info(),
        (),
    ),
    Case(
        "The pod has no toleration, but the effect of taint on node is PreferNochedule. Pod can be scheduled onto the node",
        make_pod("pod2").container("pod2:V1").info(),
        make_node("n").taint("dedicated", "user1", "PreferNoSchedule").info(),
        (),
    ),
    # Podium rows
    Case(
        "missing node has unknown conditions",
        make_pod("p").info(),
        NodeInfo(None, name="ghost"),
        (UNKNOWN,),
    ),
    Case("untainted node", make_pod("p").info(), make_node("n").info(), ()),
    Case(
        "NoExecute taints must be tolerated too",
        make_pod("p").toleration("foo", "Exists", effect="NoSchedule").info(),
        make_node("n").taint("foo", "bar", "NoExecute").info(),
        (TAINTS,),
    ),
    Case(
        "NoExecute taint tolerated",
        make_pod("p").toleration("foo", "Equal", "bar", "NoExecute").info(),
        make_node("n").taint("foo", "bar", "NoExecute").info(),
        (),
    ),
    Case(
        "one taint of two untolerated",
        make_pod("p").toleration("a", "Exists").info(),
        make_node("n").taint("a", "1").taint("b", "2", "NoExecute").info(),
        (TAINTS,),
    ),
    Case(
        "wildcard Exists toleration tolerates every taint",
        make_pod("p").toleration(operator="Exists").info(),
        make_node("n").taint("a", "1").taint("b", "2", "NoExecute").info(),
        (),
    ),
    Case(
        "empty-key Equal toleration matches only empty values",
        make_pod("p").toleration(value="").info(),
        make_node("n").taint("a", "1").info(),
        (TAINTS,),
    ),
    Case(
        "an unknown operator tolerates nothing",
        make_pod("p").toleration("a", "Gt", "1").info(),
        make_node("n").taint("a", "1").info(),
        (TAINTS,),
    ),
]


def plugin() -> TaintToleration:
    return TaintToleration(PluginArgs(taint_toleration.NAME))


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


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter_columns_whole_cluster(case: Case) -> None:
    """Each row's pod against every row's node at once: the gather by taint set agrees."""
    p = plugin()
    infos = [c.node for c in CASES]
    masks = run_filter_columns(p, case.pod, None, NodeColumns(infos))
    assert [reasons_of(masks, i) for i in range(len(infos))] == [
        run_filter(p, case.pod, None, info).reasons for info in infos
    ]


def test_taints_differing_only_in_time_added_share_a_verdict() -> None:
    stamped = [
        msgspec.structs.replace(
            Taint(key="k", value="v", effect="NoExecute"), time_added=f"2019-03-0{d}T00:00:00Z"
        )
        for d in range(1, 4)
    ]
    sets = [(), (stamped[0],), (stamped[1],), (stamped[2], Taint(key="other", effect="NoSchedule"))]
    tolerant = [Toleration(key="k", operator="Exists")]
    assert taint_sets_tolerated(
        tolerant, sets, frozenset({"NoSchedule", "NoExecute"})
    ).tolist() == [
        True,
        True,
        True,
        False,
    ]
    assert taint_sets_tolerated([], sets, frozenset({"NoSchedule"})).tolist() == [
        True,
        True,
        True,
        False,
    ]


def test_factory_reports_under_the_given_name() -> None:
    made = taint_toleration.FACTORIES[taint_toleration.NAME](PluginArgs("TaintTolerance"))
    assert isinstance(made, TaintToleration)
    assert made.name == "TaintTolerance"
