"""CheckNodeLabelPresence, scalar and vector forms on the same table.

The first 6 rows come from pkg/scheduler/algorithm/predicates/predicates_test.go,
TestNodeLabelPresence (6 of 6 rows; node labels foo=bar, bar=foo); the others are Podium's.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_node, make_pod
from scalar_plugins import reasons_of

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    ERR_NODE_NOT_FOUND,
    Code,
    PluginArgs,
    PredicateError,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import node_label_presence
from podium.actors.plugins.node_label_presence import (
    ERR_REASON_LABEL_PRESENCE as LABELS,
)
from podium.actors.plugins.node_label_presence import (
    NodeLabelPresence,
)


@dataclass(frozen=True)
class Case:
    name: str
    labels: tuple[str, ...]
    presence: bool
    node: NodeInfo
    want: tuple[str, ...]


LABELLED = make_node("n").labels({"foo": "bar", "bar": "foo"}).info()

CASES = [
    # predicates_test.go@v1.14 TestNodeLabelPresence
    Case("label does not match, presence true", ("baz",), True, LABELLED, (LABELS,)),
    Case("label does not match, presence false", ("baz",), False, LABELLED, ()),
    Case("one label matches, presence true", ("foo", "baz"), True, LABELLED, (LABELS,)),
    Case("one label matches, presence false", ("foo", "baz"), False, LABELLED, (LABELS,)),
    Case("all labels match, presence true", ("foo", "bar"), True, LABELLED, ()),
    Case("all labels match, presence false", ("foo", "bar"), False, LABELLED, (LABELS,)),
    # Podium rows
    Case("no labels listed, presence true", (), True, LABELLED, ()),
    Case("no labels listed, presence false", (), False, make_node("bare").info(), ()),
    Case("unlabelled node, presence true", ("foo",), True, make_node("bare").info(), (LABELS,)),
    Case("unlabelled node, presence false", ("foo",), False, make_node("bare").info(), ()),
    Case(
        "an empty label value still counts as present",
        ("retiring",),
        False,
        make_node("r").label("retiring", "").info(),
        (LABELS,),
    ),
    Case("key matching is exact", ("fo",), True, LABELLED, (LABELS,)),
]

POD = make_pod("p").info()


def plugin(case: Case) -> NodeLabelPresence:
    return NodeLabelPresence(PluginArgs("labels", labels=case.labels, presence=case.presence))


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter(case: Case) -> None:
    p = plugin(case)
    meta = p.pre_filter(POD, Snapshot([case.node]))
    status = run_filter(p, POD, meta, case.node)
    assert status.reasons == case.want
    assert status.code is (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if case.want else Code.SUCCESS)


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter_columns(case: Case) -> None:
    p = plugin(case)
    meta = p.pre_filter(POD, Snapshot([case.node]))
    assert reasons_of(run_filter_columns(p, POD, meta, NodeColumns([case.node])), 0) == case.want


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_filter_columns_whole_cluster(case: Case) -> None:
    p = plugin(case)
    infos = [c.node for c in CASES]
    masks = run_filter_columns(p, POD, None, NodeColumns(infos))
    assert [reasons_of(masks, i) for i in range(len(infos))] == [
        run_filter(p, POD, None, i).reasons for i in infos
    ]


def test_missing_node_is_an_error() -> None:
    p = NodeLabelPresence(PluginArgs("labels", labels=("foo",), presence=True))
    ghost = NodeInfo(None, name="ghost")
    status = run_filter(p, POD, None, ghost)
    assert status.code is Code.ERROR
    assert status.reasons == (ERR_NODE_NOT_FOUND,)
    with pytest.raises(PredicateError, match=r"^node not found$"):
        run_filter_columns(p, POD, None, NodeColumns([LABELLED, ghost]))


def test_factory_takes_the_argument_and_the_entry_name() -> None:
    made = node_label_presence.FACTORIES[node_label_presence.NAME](
        PluginArgs("zoned", labels=("zone",), presence=True)
    )
    assert isinstance(made, NodeLabelPresence)
    assert (made.name, made.labels, made.presence) == ("zoned", ("zone",), True)
