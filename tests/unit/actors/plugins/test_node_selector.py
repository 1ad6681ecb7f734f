"""MatchNodeSelector, scalar and vector forms, on the v1.14 TestPodFitsSelector rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import pytest
from builders import make_node, make_pod
from scalar_plugins import reasons_of

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    ERR_NODE_NOT_FOUND,
    SKIP,
    Code,
    PluginArgs,
    PredicateError,
    VectorFilterPlugin,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.node_selector import (
    ERR_REASON_NODE_SELECTOR,
    FACTORIES,
    NAME,
    PodMatchNodeSelector,
)

PLUGIN = PodMatchNodeSelector(PluginArgs(NAME))


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    r: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        r["values"] = list(values)
    return r


def term(*expressions: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if expressions:
        t["matchExpressions"] = list(expressions)
    if fields:
        t["matchFields"] = list(fields)
    return t


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


NAME_FIELD = "metadata.name"


@dataclass(frozen=True)
class Case:
    name: str
    fits: bool
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: dict[str, Any] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    node_name: str = "node"  # the Go rows leave it empty where it does not matter

    def pod(self) -> PodInfo:
        b = make_pod("pod")
        if self.node_selector:
            b.node_selector(self.node_selector)
        if self.affinity is not None:
            b.affinity(self.affinity)
        return b.info()


FOO_BAR = {"foo": "bar"}

# predicates_test.go@v1.14.0 TestPodFitsSelector (27 of 27 rows).
K8S_CASES = [
    Case("no selector", True),
    Case("missing labels", False, node_selector=FOO_BAR),
    Case("same labels", True, node_selector=FOO_BAR, labels=FOO_BAR),
    Case(
        "node labels are superset",
        True,
        node_selector=FOO_BAR,
        labels={"foo": "bar", "baz": "blah"},
    ),
    Case(
        "node labels are subset", False, node_selector={"foo": "bar", "baz": "blah"}, labels=FOO_BAR
    ),
    Case(
        "Pod with matchExpressions using In operator that matches the existing node",
        True,
        affinity=required(term(req("foo", "In", "bar", "value2"))),
        labels=FOO_BAR,
    ),
    Case(
        "Pod with matchExpressions using Gt operator that matches the existing node",
        True,
        affinity=required(term(req("kernel-version", "Gt", "0204"))),
        labels={"kernel-version": "0206"},
    ),
    Case(
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        True,
        affinity=required(term(req("mem-type", "NotIn", "DDR", "DDR2"))),
        labels={"mem-type": "DDR3"},
    ),
    Case(
        "Pod with matchExpressions using Exists operator that matches the existing node",
        True,
        affinity=required(term(req("GPU", "Exists"))),
        labels={"GPU": "NVIDIA-GRID-K1"},
    ),
    Case(
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        False,
        affinity=required(term(req("foo", "In", "value1", "value2"))),
        labels=FOO_BAR,
    ),
    Case(
        "Pod with a nil []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
        False,
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}},
        labels=FOO_BAR,
    ),
    Case(
        "Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
        False,
        affinity=required(),
        labels=FOO_BAR,
    ),
    Case(
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
        False,
        affinity=required({"matchExpressions": []}),
        labels=FOO_BAR,
    ),
    Case("Pod with no Affinity will schedule onto a node", True, labels=FOO_BAR),
    Case(
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        True,
        affinity={"nodeAffinity": {}},
        labels=FOO_BAR,
    ),
    Case(
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        True,
        affinity=required(term(req("GPU", "Exists"), req("GPU", "NotIn", "AMD", "INTER"))),
        labels={"GPU": "NVIDIA-GRID-K1"},
    ),
    Case(
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        False,
        affinity=required(term(req("GPU", "Exists"), req("GPU", "In", "AMD", "INTER"))),
        labels={"GPU": "NVIDIA-GRID-K1"},
    ),
    Case(
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
        True,
        affinity=required(
            term(req("foo", "In", "bar", "value2")), term(req("diffkey", "In", "wrong", "value2"))
        ),
        labels=FOO_BAR,
    ),
    Case(
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) "
        "both are satisfied, will schedule onto the node",
        True,
        node_selector=FOO_BAR,
        affinity=required(term(req("foo", "Exists"))),
        labels=FOO_BAR,
    ),
    Case(
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) "
        "is not satisfied, won't schedule onto the node",
        False,
        node_selector=FOO_BAR,
        affinity=required(term(req("foo", "Exists"))),
        labels={"foo": "barrrrrr"},
    ),
    Case(
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        False,
        affinity=required(term(req("foo", "NotIn", "invalid value: ___@#$%^"))),
        labels=FOO_BAR,
    ),
    Case(
        "Pod with matchFields using In operator that matches the existing node",
        True,
        affinity=required(term(fields=(req(NAME_FIELD, "In", "node_1"),))),
        node_name="node_1",
    ),
    Case(
        "Pod with matchFields using In operator that does not match the existing node",
        False,
        affinity=required(term(fields=(req(NAME_FIELD, "In", "node_1"),))),
        node_name="node_2",
    ),
    Case(
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        True,
        affinity=required(
            term(fields=(req(NAME_FIELD, "In", "node_1"),)), term(req("foo", "In", "bar"))
        ),
        node_name="node_2",
        labels=FOO_BAR,
    ),
    Case(
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        False,
        affinity=required(term(req("foo", "In", "bar"), fields=(req(NAME_FIELD, "In", "node_1"),))),
        node_name="node_2",
        labels=FOO_BAR,
    ),
    Case(
        "Pod with one term: both matchFields and matchExpressions match",
        True,
        affinity=required(term(req("foo", "In", "bar"), fields=(req(NAME_FIELD, "In", "node_1"),))),
        node_name="node_1",
        labels=FOO_BAR,
    ),
    Case(
        "Pod with two terms: both matchFields and matchExpressions do not match",
        False,
        affinity=required(
            term(fields=(req(NAME_FIELD, "In", "node_1"),)),
            term(req("foo", "In", "not-match-to-bar")),
        ),
        node_name="node_2",
        labels=FOO_BAR,
    ),
]

KV = {"kernel-version": "0206"}

# Podium's rows: the operators and validity rules the Kubernetes table leaves out.
PODIUM_CASES = [
    Case(
        "podium: DoesNotExist matches a node without the key",
        True,
        affinity=required(term(req("GPU", "DoesNotExist"))),
    ),
    Case(
        "podium: DoesNotExist fails a node with the key",
        False,
        affinity=required(term(req("GPU", "DoesNotExist"))),
        labels={"GPU": "x"},
    ),
    Case(
        "podium: Lt matches a smaller value",
        True,
        affinity=required(term(req("kernel-version", "Lt", "0300"))),
        labels=KV,
    ),
    Case(
        "podium: Lt fails an equal value",
        False,
        affinity=required(term(req("kernel-version", "Lt", "206"))),
        labels=KV,
    ),
    Case(
        "podium: Gt fails an equal value",
        False,
        affinity=required(term(req("kernel-version", "Gt", "206"))),
        labels=KV,
    ),
    Case(
        "podium: Gt fails a non-integer label",
        False,
        affinity=required(term(req("kernel-version", "Gt", "1"))),
        labels={"kernel-version": "v2"},
    ),
    Case(
        "podium: Gt parses labels as Go's ParseInt (no underscores)",
        False,
        affinity=required(term(req("kernel-version", "Gt", "1"))),
        labels={"kernel-version": "1_0"},
    ),
    Case(
        "podium: Gt fails a node without the key",
        False,
        affinity=required(term(req("kernel-version", "Gt", "1"))),
    ),
    Case(
        "podium: Gt with a non-integer bound matches nothing",
        False,
        affinity=required(term(req("kernel-version", "Gt", "abc"))),
        labels=KV,
    ),
    Case(
        "podium: Gt with two values matches nothing",
        False,
        affinity=required(term(req("kernel-version", "Gt", "1", "2"))),
        labels=KV,
    ),
    Case(
        "podium: Gt with a negative bound is not a valid label value",
        False,
        affinity=required(term(req("kernel-version", "Gt", "-1"))),
        labels=KV,
    ),
    Case(
        "podium: NotIn matches a node without the key",
        True,
        affinity=required(term(req("foo", "NotIn", "bar"))),
    ),
    Case(
        "podium: In without values matches nothing",
        False,
        affinity=required(term(req("foo", "In"))),
        labels=FOO_BAR,
    ),
    Case(
        "podium: Exists with values matches nothing",
        False,
        affinity=required(term(req("foo", "Exists", "bar"))),
        labels=FOO_BAR,
    ),
    Case(
        "podium: an invalid key matches nothing",
        False,
        affinity=required(term(req("bad key!", "DoesNotExist"))),
        labels=FOO_BAR,
    ),
    Case(
        "podium: an invalid term does not spoil a valid one",
        True,
        affinity=required(term(req("foo", "In")), term(req("foo", "In", "bar"))),
        labels=FOO_BAR,
    ),
    Case(
        "podium: matchFields NotIn",
        True,
        affinity=required(term(fields=(req(NAME_FIELD, "NotIn", "node_1"),))),
        node_name="node_2",
    ),
    Case(
        "podium: matchFields NotIn the node itself",
        False,
        affinity=required(term(fields=(req(NAME_FIELD, "NotIn", "node_1"),))),
        node_name="node_1",
    ),
    Case(
        "podium: matchFields with two values matches nothing",
        False,
        affinity=required(term(fields=(req(NAME_FIELD, "In", "node_1", "node_2"),))),
        node_name="node_1",
    ),
    Case(
        "podium: matchFields Exists matches nothing",
        False,
        affinity=required(term(fields=(req(NAME_FIELD, "Exists"),))),
        node_name="node_1",
    ),
    Case(
        "podium: matchFields on an unknown field",
        False,
        affinity=required(term(fields=(req("spec.unschedulable", "In", "node_1"),))),
        node_name="node_1",
    ),
    Case(
        "podium: nodeSelector value compares exactly",
        False,
        node_selector={"foo": "Bar"},
        labels=FOO_BAR,
    ),
    Case(
        "podium: nodeSelector and affinity both fail",
        False,
        node_selector={"foo": "baz"},
        affinity=required(term(req("foo", "In", "qux"))),
        labels=FOO_BAR,
    ),
]

CASES = K8S_CASES + PODIUM_CASES


def _decoys(exclude: str) -> list[NodeInfo]:
    decoys = [
        make_node("node_1").labels({"foo": "bar", "GPU": "AMD", "kernel-version": "0100"}),
        make_node("plain"),
        make_node("other").labels(
            {"foo": "value2", "mem-type": "DDR", "kernel-version": "0300", "diffkey": "wrong"}
        ),
        make_node("odd").labels(
            {"kernel-version": "x1", "GPU": "NVIDIA-GRID-K1", "baz": "blah", "foo": "bar"}
        ),
    ]
    return [d.info() for d in decoys if d.d["metadata"]["name"] != exclude]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_pod_fits_selector(case: Case) -> None:
    pod = case.pod()
    info = make_node(case.node_name).labels(case.labels).info()
    decoys = _decoys(case.node_name)
    infos = [decoys[0], info, *decoys[1:]]
    meta = PLUGIN.pre_filter(pod, Snapshot(infos))
    want = () if case.fits else (ERR_REASON_NODE_SELECTOR,)

    status = run_filter(PLUGIN, pod, meta, info)
    assert status.reasons == want
    assert status.is_success == case.fits
    if not case.fits:
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    cols = NodeColumns(infos)
    if meta is SKIP:
        assert case.fits
        assert run_filter_columns(PLUGIN, pod, meta, cols) == []
        return
    masks = run_filter_columns(PLUGIN, pod, meta, cols)
    assert reasons_of(masks, 1) == want
    for row, other in enumerate(infos):
        assert reasons_of(masks, row) == run_filter(PLUGIN, pod, meta, other).reasons, other.name


def test_label_change_refreshes_the_vector_form() -> None:
    info = make_node("n").info()
    cols = NodeColumns([info])
    pod = make_pod("p").node_selector(FOO_BAR).info()
    meta = PLUGIN.pre_filter(pod, Snapshot([info]))
    assert reasons_of(run_filter_columns(PLUGIN, pod, meta, cols), 0) == (ERR_REASON_NODE_SELECTOR,)
    cols.update_row(0, make_node("n").labels(FOO_BAR).info())
    assert reasons_of(run_filter_columns(PLUGIN, pod, meta, cols), 0) == ()


def test_gt_follows_a_label_change() -> None:
    """The parsed-integer table is rebuilt when a row's labels change."""
    infos = [make_node(f"n{i}").labels({"kernel-version": str(i)}).info() for i in range(4)]
    cols = NodeColumns(infos)
    pod = make_pod("p").affinity(required(term(req("kernel-version", "Gt", "1")))).info()
    meta = PLUGIN.pre_filter(pod, Snapshot(infos))
    fails = [bool(reasons_of(run_filter_columns(PLUGIN, pod, meta, cols), r)) for r in range(4)]
    assert fails == [True, True, False, False]
    cols.update_row(0, make_node("n0").labels({"kernel-version": "9"}).info())
    fails = [bool(reasons_of(run_filter_columns(PLUGIN, pod, meta, cols), r)) for r in range(4)]
    assert fails == [False, True, False, False]


def test_node_without_node_object_is_an_error() -> None:
    ghost = NodeInfo(name="ghost")
    pod = make_pod("p").node_selector(FOO_BAR).info()
    meta = PLUGIN.pre_filter(pod, Snapshot([ghost]))
    status = run_filter(PLUGIN, pod, meta, ghost)
    assert status.code is Code.ERROR
    assert status.reasons == (ERR_NODE_NOT_FOUND,)
    with pytest.raises(PredicateError, match=ERR_NODE_NOT_FOUND):
        run_filter_columns(PLUGIN, pod, meta, NodeColumns([ghost]))


def test_plugin_contract() -> None:
    plugin = FACTORIES[names.MATCH_NODE_SELECTOR](PluginArgs("NodeSelectorCompliance"))
    assert plugin.name == "NodeSelectorCompliance"
    assert isinstance(plugin, VectorFilterPlugin)
    assert set(FACTORIES) == {names.MATCH_NODE_SELECTOR}
