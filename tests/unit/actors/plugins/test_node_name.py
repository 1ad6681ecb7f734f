"""HostName (PodFitsHost), scalar and vector forms, on the v1.14 TestPodFitsHost rows."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

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
from podium.actors.plugins.node_name import (
    ERR_REASON_HOST_NAME,
    FACTORIES,
    NAME,
    PodFitsHost,
)


@dataclass(frozen=True)
class Case:
    name: str
    pod_node_name: str  # spec.nodeName ("" = none)
    node_name: str
    want: tuple[str, ...] = ()


CASES = [
    # predicates_test.go@v1.14.0 TestPodFitsHost (3 of 3 rows). The Go row "no host specified"
    # uses a node without a name, which Podium cannot load; any name serves.
    Case("no host specified", "", "node"),
    Case("host matches", "foo", "foo"),
    Case("host doesn't match", "bar", "foo", (ERR_REASON_HOST_NAME,)),
    # Podium's rows.
    Case("podium: host names a node that does not exist", "gone", "foo", (ERR_REASON_HOST_NAME,)),
    Case("podium: names compare exactly", "Foo", "foo", (ERR_REASON_HOST_NAME,)),
]

PLUGIN = PodFitsHost(PluginArgs(NAME))


def _pod(node_name: str) -> PodInfo:
    b = make_pod("pod")
    if node_name:
        b.node(node_name)
    return b.info()


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_pod_fits_host(case: Case) -> None:
    pod = _pod(case.pod_node_name)
    info = make_node(case.node_name).info()
    # Decoys around the row under test, one of them named "bar" (the pod's wish in one row).
    infos = [make_node("bar").info(), info, make_node("zzz").info()]
    meta = PLUGIN.pre_filter(pod, Snapshot(infos))
    assert (meta is SKIP) == (not case.pod_node_name)

    status = run_filter(PLUGIN, pod, meta, info)
    assert status.reasons == case.want
    assert status.is_success == (not case.want)
    if case.want:
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    cols = NodeColumns(infos)
    masks = run_filter_columns(PLUGIN, pod, meta, cols)
    assert reasons_of(masks, 1) == case.want
    for row, other in enumerate(infos):
        assert reasons_of(masks, row) == run_filter(PLUGIN, pod, meta, other).reasons, other.name


def test_node_without_node_object() -> None:
    ghost = NodeInfo(name="ghost")
    snapshot = Snapshot([ghost])
    # v1.14 checks spec.nodeName first: a pod naming no node fits even a node-less NodeInfo.
    nameless = _pod("")
    meta = PLUGIN.pre_filter(nameless, snapshot)
    assert run_filter(PLUGIN, nameless, meta, ghost).is_success
    assert run_filter_columns(PLUGIN, nameless, meta, NodeColumns([ghost])) == []
    named = _pod("ghost")
    meta = PLUGIN.pre_filter(named, snapshot)
    status = run_filter(PLUGIN, named, meta, ghost)
    assert status.code is Code.ERROR
    assert status.reasons == (ERR_NODE_NOT_FOUND,)
    with pytest.raises(PredicateError, match=ERR_NODE_NOT_FOUND):
        run_filter_columns(PLUGIN, named, meta, NodeColumns([ghost]))


def test_plugin_contract() -> None:
    plugin = FACTORIES[names.HOST_NAME](PluginArgs("HostnameMatch"))
    assert plugin.name == "HostnameMatch"
    assert isinstance(plugin, VectorFilterPlugin)
    assert set(FACTORIES) == {names.HOST_NAME}
