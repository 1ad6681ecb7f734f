"""GeneralPredicates, scalar and vector forms, on the v1.14 TestRunGeneralPredicates rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import pytest
from builders import PodBuilder, make_node, make_pod
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
from podium.actors.plugins.general_predicates import FACTORIES, NAME, GeneralPredicates
from podium.actors.plugins.node_name import ERR_REASON_HOST_NAME
from podium.actors.plugins.node_ports import ERR_REASON_HOST_PORTS
from podium.actors.plugins.node_selector import ERR_REASON_NODE_SELECTOR

PLUGIN = GeneralPredicates(PluginArgs(NAME))

CPU, MEM, PODS = "Insufficient cpu", "Insufficient memory", "Insufficient pods"


def res(cpu: int, mem: int) -> dict[str, Any]:
    return {"cpu": f"{cpu}m", "memory": str(mem)}


def alloc(cpu: int, mem: int, pods: int) -> dict[str, Any]:
    """makeAllocatableResources(cpu, mem, pods, 0, 0, 0)."""
    return {"cpu": f"{cpu}m", "memory": str(mem), "pods": str(pods), "example.com/aaa": "0"}


def port_pod(name: str, *ports: int) -> PodBuilder:
    """newPodWithPort: container ports with only hostPort set (protocol and hostIP empty)."""
    b = make_pod(name)
    for p in ports:
        b.container(ports=[{"hostPort": p, "protocol": ""}])
    return b


@dataclass(frozen=True)
class Case:
    name: str
    pod: PodBuilder
    existing: tuple[PodBuilder, ...]
    want: tuple[str, ...] = ()
    node: str = "machine1"
    allocatable: dict[str, Any] = field(default_factory=lambda: alloc(10, 20, 32))
    labels: dict[str, str] = field(default_factory=dict)
    code: Code = Code.UNSCHEDULABLE

    def node_info(self) -> NodeInfo:
        b = (
            make_node(self.node)
            .capacity_map(self.allocatable)
            .allocatable(self.allocatable)
            .labels(self.labels)
        )
        info: NodeInfo = b.info(*(p.obj() for p in self.existing))
        return info


def _selector_pod() -> PodBuilder:
    return make_pod("pod").node_selector({"disk": "ssd"})


CASES = [
    # predicates_test.go@v1.14.0 TestRunGeneralPredicates (4 of 4 rows).
    Case(
        "no resources/port/host requested always fits",
        make_pod("pod"),
        (make_pod("e").req_map(res(9, 19)),),
    ),
    Case(
        "not enough cpu and memory resource",
        make_pod("pod").req_map(res(8, 10)),
        (make_pod("e").req_map(res(5, 19)),),
        (CPU, MEM),
    ),
    Case(
        "host not match",
        make_pod("pod").node("machine2"),
        (),
        (ERR_REASON_HOST_NAME,),
        code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    Case(
        "hostport conflict", port_pod("pod", 123), (port_pod("e", 123),), (ERR_REASON_HOST_PORTS,)
    ),
    # Podium's rows: every failing sub-check reports, in v1.14's order.
    Case(
        "podium: every sub-check fails, reasons in v1.14 order",
        _selector_pod().node("machine2").req_map(res(11, 1)).host_port(123, "", ""),
        (port_pod("e", 123),),
        (PODS, CPU, ERR_REASON_HOST_NAME, ERR_REASON_HOST_PORTS, ERR_REASON_NODE_SELECTOR),
        allocatable=alloc(10, 20, 1),
        code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    Case(
        "podium: resources and node selector both fail",
        _selector_pod().req_map(res(11, 1)),
        (),
        (CPU, ERR_REASON_NODE_SELECTOR),
        code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ),
    Case(
        "podium: everything asked for is there",
        _selector_pod().node("machine1").req_map(res(10, 20)).host_port(124, "", ""),
        (port_pod("e", 123),),
        labels={"disk": "ssd"},
    ),
    Case(
        "podium: pods and ports are resolvable",
        port_pod("pod", 80),
        (port_pod("e", 80),),
        (PODS, ERR_REASON_HOST_PORTS),
        allocatable=alloc(10, 20, 1),
    ),
]


def _decoys() -> list[NodeInfo]:
    return [
        make_node("machine2").capacity_map(alloc(100, 100, 10)).labels({"disk": "ssd"}).info(),
        make_node("machine3").capacity_map(alloc(1, 1, 1)).info(port_pod("x", 123, 124).obj()),
    ]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_general_predicates(case: Case) -> None:
    pod = PodInfo(case.pod.obj())
    info = case.node_info()
    infos = [*_decoys(), info]
    meta = PLUGIN.pre_filter(pod, Snapshot(infos))
    assert meta is not SKIP

    status = run_filter(PLUGIN, pod, meta, info)
    assert status.reasons == case.want
    assert status.is_success == (not case.want)
    if case.want:
        assert status.code is case.code

    cols = NodeColumns(infos)
    masks = run_filter_columns(PLUGIN, pod, meta, cols)
    assert reasons_of(masks, len(infos) - 1) == case.want
    for row, other in enumerate(infos):
        assert reasons_of(masks, row) == run_filter(PLUGIN, pod, meta, other).reasons, other.name


def test_error_stops_the_checks() -> None:
    ghost = NodeInfo(name="ghost")
    pod = make_pod("p").node("elsewhere").info()
    meta = PLUGIN.pre_filter(pod, Snapshot([ghost]))
    status = run_filter(PLUGIN, pod, meta, ghost)
    assert status.code is Code.ERROR
    assert status.reasons == (ERR_NODE_NOT_FOUND,)
    with pytest.raises(PredicateError, match=ERR_NODE_NOT_FOUND):
        run_filter_columns(PLUGIN, pod, meta, NodeColumns([ghost]))


def test_plugin_contract() -> None:
    plugin = FACTORIES[names.GENERAL_PREDICATES](PluginArgs("GeneralPredicate"))
    assert plugin.name == "GeneralPredicate"
    assert isinstance(plugin, VectorFilterPlugin)
    assert set(FACTORIES) == {names.GENERAL_PREDICATES}
