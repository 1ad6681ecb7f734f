"""GeneralPredicates: PodFitsResources, then PodFitsHost, PodFitsHostPorts, PodMatchNodeSelector.

Kubernetes: pkg/scheduler/algorithm/predicates/predicates.go@v1.14.0 (``GeneralPredicates``,
``noncriticalPredicates``, ``EssentialPredicates``). v1.14 runs the non-critical check
(PodFitsResources) and then the essential ones (PodFitsHost, PodFitsHostPorts,
PodMatchNodeSelector) and collects the reasons of EVERY failing sub-check, in that order; only
an error stops it early. So a node can report e.g. ``Insufficient cpu`` and
``node(s) didn't match node selector`` at once.

This module composes the four plugins of :mod:`node_resources_fit`, :mod:`node_name`,
:mod:`node_ports` and :mod:`node_selector`, in both the scalar and the vector form. The
status is unresolvable when any failing sub-check is (HostName, MatchNodeSelector).
"""

from __future__ import annotations

from collections.abc import Callable

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    PluginArgs,
    ReasonMasks,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.node_name import PodFitsHost
from podium.actors.plugins.node_ports import PodFitsHostPorts
from podium.actors.plugins.node_resources_fit import PodFitsResources
from podium.actors.plugins.node_selector import PodMatchNodeSelector

__all__ = ["FACTORIES", "NAME", "GeneralPredicates"]

NAME = names.GENERAL_PREDICATES


class GeneralPredicates(VectorFilterPlugin):
    """v1.14 ``GeneralPredicates`` (see the module docstring)."""

    node_local = True
    """The answer for a node depends only on the pod's spec and that node (equivalence)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        # noncriticalPredicates, then EssentialPredicates, in v1.14's order.
        self.checks: tuple[VectorFilterPlugin, ...] = (
            PodFitsResources(PluginArgs(names.POD_FITS_RESOURCES)),
            PodFitsHost(PluginArgs(names.HOST_NAME)),
            PodFitsHostPorts(PluginArgs(names.POD_FITS_HOST_PORTS)),
            PodMatchNodeSelector(PluginArgs(names.MATCH_NODE_SELECTOR)),
        )

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> object:
        # One meta per sub-check; a sub-check's SKIP is kept and honoured in filter.
        # Never SKIP as a whole: PodFitsResources always checks the pod count.
        return tuple(check.pre_filter(pod, snapshot) for check in self.checks)

    def _metas(self, pod: PodInfo, meta: object) -> tuple[object, ...]:
        if isinstance(meta, tuple) and len(meta) == len(self.checks):
            return meta
        return tuple(None for _ in self.checks)

    def filter(self, pod: PodInfo, meta: object, node: NodeInfo) -> Status:
        reasons: list[str] = []
        resolvable = True
        for check, sub_meta in zip(self.checks, self._metas(pod, meta), strict=True):
            if sub_meta is SKIP:
                continue
            status = check.filter(pod, sub_meta, node)
            if status.code is Code.ERROR:
                return status
            if not status.is_success:
                reasons.extend(status.reasons)
                resolvable = resolvable and status.code is Code.UNSCHEDULABLE
        return unschedulable(*reasons, resolvable=resolvable) if reasons else SUCCESS

    def filter_columns(self, pod: PodInfo, meta: object, cols: NodeColumns) -> ReasonMasks:
        masks: ReasonMasks = []
        for check, sub_meta in zip(self.checks, self._metas(pod, meta), strict=True):
            if sub_meta is not SKIP:
                masks.extend(check.filter_columns(pod, sub_meta, cols))
        return masks


FACTORIES: dict[str, Callable[[PluginArgs], GeneralPredicates]] = {NAME: GeneralPredicates}
