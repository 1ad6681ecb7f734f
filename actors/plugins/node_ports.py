"""PodFitsHostPorts: the host ports the pod asks for are free on the node.

Kubernetes: pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0 (``PodFitsHostPorts``),
pkg/scheduler/algorithm/predicates/utils.go@v1.14.0 (``portsConflict``) and
pkg/scheduler/nodeinfo/host_ports.go@v1.14.0 (``HostPortInfo.CheckConflict``).

Conflict rules, for a wanted (hostIP, protocol, hostPort) against the ports the node's pods
hold:

- an empty hostIP means ``0.0.0.0`` and an empty protocol means ``TCP``;
- a port <= 0 never conflicts;
- the same protocol and port conflict when either side binds ``0.0.0.0`` or both bind the same
  IP (``0.0.0.0`` on TCP 8001 conflicts with 127.0.0.1 on TCP 8001, not with UDP 8001).

Only the node's existing ports count: two ports of the pod itself never conflict with each
other (v1.14 does not check them). The failure is resolvable: evicting the pod that holds the
port frees it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    PluginArgs,
    ReasonMasks,
    Skip,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.framework.nodeinfo import HostPort, NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names

__all__ = [
    "DEFAULT_BIND_ALL_HOST_IP",
    "ERR_REASON_HOST_PORTS",
    "FACTORIES",
    "NAME",
    "PodFitsHostPorts",
    "host_port_conflicts",
    "ports_conflict",
    "sanitize",
]

NAME = names.POD_FITS_HOST_PORTS

ERR_REASON_HOST_PORTS = "node(s) didn't have free ports for the requested pod ports"

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"
"""nodeinfo.DefaultBindAllHostIP: the wildcard address an empty hostIP stands for."""


def sanitize(port: HostPort) -> HostPort:
    """``HostPortInfo.sanitize``: empty IP -> ``0.0.0.0``, empty protocol -> ``TCP``."""
    if port.ip and port.protocol:
        return port
    return HostPort(port.ip or DEFAULT_BIND_ALL_HOST_IP, port.protocol or "TCP", port.port)


def host_port_conflicts(used: Iterable[HostPort], wanted: HostPort) -> bool:
    """``HostPortInfo.CheckConflict``: does ``wanted`` clash with any of the ``used`` ports?"""
    if wanted.port <= 0:
        return False
    want = sanitize(wanted)
    for held in used:
        if held.port != want.port or held.port <= 0:
            continue
        have = sanitize(held)
        if have.protocol != want.protocol:
            continue
        if DEFAULT_BIND_ALL_HOST_IP in (want.ip, have.ip) or have.ip == want.ip:
            return True
    return False


def ports_conflict(used: Iterable[HostPort], wanted: Iterable[HostPort]) -> bool:
    """``portsConflict``: does any wanted port clash with the node's ``used`` ports?"""
    held = tuple(used)
    return any(host_port_conflicts(held, w) for w in wanted)


class PodFitsHostPorts(VectorFilterPlugin[tuple[HostPort, ...]]):
    """v1.14 ``PodFitsHostPorts`` (see the module docstring).

    ``pre_filter`` answers the pod's host ports, sanitised, or SKIP for a pod without any.
    v1.14 reads only the node's used ports: a NodeInfo without a Node is no error.
    """

    node_local = True

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> tuple[HostPort, ...] | Skip:
        wanted = tuple(sanitize(p) for p in pod.host_ports if p.port > 0)
        return wanted or SKIP

    def filter(self, pod: PodInfo, meta: tuple[HostPort, ...], node: NodeInfo) -> Status:
        if node.used_ports and ports_conflict(node.used_ports, meta):
            return unschedulable(ERR_REASON_HOST_PORTS)
        return SUCCESS

    def filter_columns(
        self, pod: PodInfo, meta: tuple[HostPort, ...], cols: NodeColumns
    ) -> ReasonMasks:
        fails = np.zeros(cols.n, dtype=bool)
        # Only rows whose pods hold host ports can conflict; usually a small minority.
        for row in np.flatnonzero(cols.has_used_ports).tolist():
            if ports_conflict(cols.infos[row].used_ports, meta):
                fails[row] = True
        return [(ERR_REASON_HOST_PORTS, fails, Code.UNSCHEDULABLE)]


FACTORIES: dict[str, Callable[[PluginArgs], PodFitsHostPorts]] = {NAME: PodFitsHostPorts}
