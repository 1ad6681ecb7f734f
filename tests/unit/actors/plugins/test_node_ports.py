"""PodFitsHostPorts, scalar and vector forms, and the host-port conflict rules.

Rows: predicates_test.go@v1.14.0 TestPodFitsHostPorts and
pkg/scheduler/nodeinfo/host_ports_test.go@v1.14.0 TestHostPortInfo_Check.
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
    VectorFilterPlugin,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import HostPort, NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.node_ports import (
    ERR_REASON_HOST_PORTS,
    FACTORIES,
    NAME,
    PodFitsHostPorts,
    host_port_conflicts,
    sanitize,
)
from podium.protocol.objects import Pod

PLUGIN = PodFitsHostPorts(PluginArgs(NAME))


def new_pod(*host_port_infos: str, name: str = "pod") -> Pod:
    """predicates_test.go ``newPod(host, "PROTOCOL/IP/PORT"...)``."""
    b = make_pod(name)
    for spec in host_port_infos:
        protocol, ip, port = spec.split("/")
        b.host_port(int(port), protocol, ip)
    obj: Pod = b.obj()
    return obj


@dataclass(frozen=True)
class Case:
    name: str
    pod: Pod
    existing: Pod | None
    fits: bool


# predicates_test.go@v1.14.0 TestPodFitsHostPorts (13 of 13 rows).
CASES = [
    Case("nothing running", new_pod(), None, True),
    Case("other port", new_pod("UDP/127.0.0.1/8080"), new_pod("UDP/127.0.0.1/9090"), True),
    Case("same udp port", new_pod("UDP/127.0.0.1/8080"), new_pod("UDP/127.0.0.1/8080"), False),
    Case("same tcp port", new_pod("TCP/127.0.0.1/8080"), new_pod("TCP/127.0.0.1/8080"), False),
    Case("different host ip", new_pod("TCP/127.0.0.1/8080"), new_pod("TCP/127.0.0.2/8080"), True),
    Case("different protocol", new_pod("UDP/127.0.0.1/8080"), new_pod("TCP/127.0.0.1/8080"), True),
    Case(
        "second udp port conflict",
        new_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        new_pod("UDP/127.0.0.1/8080"),
        False,
    ),
    Case(
        "first tcp port conflict",
        new_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        new_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        False,
    ),
    Case(
        "first tcp port conflict due to 0.0.0.0 hostIP",
        new_pod("TCP/0.0.0.0/8001"),
        new_pod("TCP/127.0.0.1/8001"),
        False,
    ),
    Case(
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        new_pod("TCP/127.0.0.1/8001"),
        False,
    ),
    Case(
        "second tcp port conflict to 0.0.0.0 hostIP",
        new_pod("TCP/127.0.0.1/8001"),
        new_pod("TCP/0.0.0.0/8001"),
        False,
    ),
    Case(
        "second different protocol",
        new_pod("UDP/127.0.0.1/8001"),
        new_pod("TCP/0.0.0.0/8001"),
        True,
    ),
    Case(
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("UDP/127.0.0.1/8001"),
        new_pod("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        False,
    ),
    # Podium's rows: empty hostIP/protocol are 0.0.0.0/TCP on both sides.
    Case(
        "podium: empty hostIP on the node is 0.0.0.0",
        new_pod("TCP/127.0.0.1/80"),
        new_pod("TCP//80"),
        False,
    ),
    Case(
        "podium: empty hostIP in the pod is 0.0.0.0",
        new_pod("TCP//80"),
        new_pod("TCP/127.0.0.1/80"),
        False,
    ),
    Case(
        "podium: empty protocol is TCP",
        new_pod("/127.0.0.1/80"),
        new_pod("TCP/127.0.0.1/80"),
        False,
    ),
    Case(
        "podium: empty protocol is not UDP",
        new_pod("/127.0.0.1/80"),
        new_pod("UDP/127.0.0.1/80"),
        True,
    ),
    Case("podium: the pod's own ports never conflict", new_pod("TCP//80", "TCP//80"), None, True),
    Case(
        "podium: SCTP is a protocol of its own",
        new_pod("SCTP/0.0.0.0/80"),
        new_pod("TCP/0.0.0.0/80"),
        True,
    ),
]


def _decoys() -> list[NodeInfo]:
    return [
        make_node("free").info(),
        make_node("busy").info(
            new_pod("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8080", "TCP/127.0.0.1/8080", name="b")
        ),
    ]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_pod_fits_host_ports(case: Case) -> None:
    pod = PodInfo(case.pod)
    info = make_node("m1").info(*([case.existing] if case.existing is not None else []))
    infos = [*_decoys(), info]
    meta = PLUGIN.pre_filter(pod, Snapshot(infos))
    want = () if case.fits else (ERR_REASON_HOST_PORTS,)

    status = run_filter(PLUGIN, pod, meta, info)
    assert status.reasons == want
    assert status.is_success == case.fits
    if not case.fits:
        assert status.code is Code.UNSCHEDULABLE

    cols = NodeColumns(infos)
    if meta is SKIP:
        assert not pod.host_ports
        assert run_filter_columns(PLUGIN, pod, meta, cols) == []
        return
    masks = run_filter_columns(PLUGIN, pod, meta, cols)
    assert reasons_of(masks, len(infos) - 1) == want
    for row, other in enumerate(infos):
        assert reasons_of(masks, row) == run_filter(PLUGIN, pod, meta, other).reasons, other.name


@dataclass(frozen=True)
class CheckCase:
    name: str
    added: tuple[tuple[str, str, int], ...]  # (protocol, ip, port), as the Go test writes them
    check: tuple[str, str, int]
    expect: bool


# host_ports_test.go@v1.14.0 TestHostPortInfo_Check (9 of 9 rows).
CHECK_CASES = [
    CheckCase(
        "empty check should check 0.0.0.0 and TCP", (("TCP", "127.0.0.1", 80),), ("", "", 81), False
    ),
    CheckCase(
        "empty check should check 0.0.0.0 and TCP (conflicted)",
        (("TCP", "127.0.0.1", 80),),
        ("", "", 80),
        True,
    ),
    CheckCase("empty port check should pass", (("TCP", "127.0.0.1", 80),), ("", "", 0), False),
    CheckCase(
        "0.0.0.0 should check all registered IPs",
        (("TCP", "127.0.0.1", 80),),
        ("TCP", "0.0.0.0", 80),
        True,
    ),
    CheckCase(
        "0.0.0.0 with different protocol should be allowed",
        (("UDP", "127.0.0.1", 80),),
        ("TCP", "0.0.0.0", 80),
        False,
    ),
    CheckCase(
        "0.0.0.0 with different port should be allowed",
        (("TCP", "127.0.0.1", 79), ("TCP", "127.0.0.1", 81), ("TCP", "127.0.0.1", 82)),
        ("TCP", "0.0.0.0", 80),
        False,
    ),
    CheckCase(
        "normal ip should check all registered 0.0.0.0",
        (("TCP", "0.0.0.0", 80),),
        ("TCP", "127.0.0.1", 80),
        True,
    ),
    CheckCase(
        "normal ip with different port/protocol should be allowed (0.0.0.0)",
        (
            ("TCP", "0.0.0.0", 79),
            ("UDP", "0.0.0.0", 80),
            ("TCP", "0.0.0.0", 81),
            ("TCP", "0.0.0.0", 82),
        ),
        ("TCP", "127.0.0.1", 80),
        False,
    ),
    CheckCase(
        "normal ip with different port/protocol should be allowed",
        (
            ("TCP", "127.0.0.1", 79),
            ("UDP", "127.0.0.1", 80),
            ("TCP", "127.0.0.1", 81),
            ("TCP", "127.0.0.1", 82),
        ),
        ("TCP", "127.0.0.1", 80),
        False,
    ),
    # Podium's rows: ports <= 0 are never held (HostPortInfo.Add ignores them).
    CheckCase(
        "podium: a held port 0 is ignored", (("TCP", "", 0), ("TCP", "", -1)), ("TCP", "", 0), False
    ),
    CheckCase("podium: empty held ip is 0.0.0.0", (("", "", 80),), ("TCP", "10.1.1.1", 80), True),
]


@pytest.mark.parametrize("case", CHECK_CASES, ids=attrgetter("name"))
def test_host_port_info_check(case: CheckCase) -> None:
    used = [HostPort(ip, protocol, port) for protocol, ip, port in case.added]
    protocol, ip, port = case.check
    assert host_port_conflicts(used, HostPort(ip, protocol, port)) is case.expect
    # The same through the predicate, where the check is a real host port.
    if port > 0:
        existing = make_pod("e")
        for p, i, n in case.added:
            existing.host_port(n, p, i)
        info = make_node("n").info(existing.obj())
        pod = make_pod("p").host_port(port, protocol, ip).info()
        assert (
            run_filter(PLUGIN, pod, PLUGIN.pre_filter(pod, Snapshot([info])), info).is_success
            is not case.expect
        )


def test_sanitize() -> None:
    assert sanitize(HostPort("", "", 80)) == HostPort("0.0.0.0", "TCP", 80)
    assert sanitize(HostPort("10.0.0.1", "UDP", 80)) == HostPort("10.0.0.1", "UDP", 80)


def test_ports_change_with_the_row() -> None:
    """The vector form follows NodeColumns.update_row as pods come and go."""
    info = make_node("n").info()
    cols = NodeColumns([info])
    pod = make_pod("p").host_port(80).info()
    meta = PLUGIN.pre_filter(pod, Snapshot([info]))
    assert reasons_of(run_filter_columns(PLUGIN, pod, meta, cols), 0) == ()
    busy = info.clone()
    busy.add_pod(make_pod("holder").host_port(80).info())
    cols.update_row(0, busy)
    assert reasons_of(run_filter_columns(PLUGIN, pod, meta, cols), 0) == (ERR_REASON_HOST_PORTS,)


def test_node_without_node_object_is_not_an_error() -> None:
    # v1.14 PodFitsHostPorts reads only the used ports; it never asks for the Node.
    ghost = NodeInfo(name="ghost")
    pod = make_pod("p").host_port(80).info()
    meta = PLUGIN.pre_filter(pod, Snapshot([ghost]))
    assert meta is not SKIP
    assert run_filter(PLUGIN, pod, meta, ghost).is_success
    assert reasons_of(run_filter_columns(PLUGIN, pod, meta, NodeColumns([ghost])), 0) == ()


def test_plugin_contract() -> None:
    plugin = FACTORIES[names.POD_FITS_HOST_PORTS](PluginArgs("PodFitsPorts"))
    assert plugin.name == "PodFitsPorts"
    assert isinstance(plugin, VectorFilterPlugin)
    assert set(FACTORIES) == {names.POD_FITS_HOST_PORTS}
