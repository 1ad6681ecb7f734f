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
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    PluginArgs,
    ReasonMasks,
    Status,
    VectorFilterPlugin,
    run_filter,
    run_filter_columns,
    unschedulable,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.node_name import PodFitsHost
from podium.actors.plugins.node_ports import PodFitsHostPorts
from podium.actors.plugins.node_resources_fit import PodFitsResources
from podium.actors.plugins.node_selector import PodMatchNodeSelector

__all__ = ["FACTORIES", "NAME", "GeneralPredicates", "SubCheck"]

NAME = names.GENERAL_PREDICATES

S = TypeVar("S")


class SubCheck(Protocol):
    """One sub-check bound to the pod's metadata for it (what ``pre_filter`` answers)."""

    def filter(self, pod: PodInfo, node: NodeInfo) -> Status: ...

    def filter_columns(self, pod: PodInfo, cols: NodeColumns) -> ReasonMasks: ...


@dataclass(frozen=True, slots=True)
class _Bound(Generic[S]):
    """A :class:`SubCheck`: the plugin and its metadata, typed together."""

    plugin: VectorFilterPlugin[S]
    meta: S

    def filter(self, pod: PodInfo, node: NodeInfo) -> Status:
        return run_filter(self.plugin, pod, self.meta, node)

    def filter_columns(self, pod: PodInfo, cols: NodeColumns) -> ReasonMasks:
        return run_filter_columns(self.plugin, pod, self.meta, cols)


def _bind(plugin: VectorFilterPlugin[S], pod: PodInfo, snapshot: Snapshot) -> SubCheck | None:
    meta = plugin.pre_filter(pod, snapshot)
    return None if meta is SKIP else _Bound(plugin, meta)


class GeneralPredicates(VectorFilterPlugin[tuple[SubCheck, ...]]):
    """v1.14 ``GeneralPredicates`` (see the module docstring).

    ``pre_filter`` answers the sub-checks that did not SKIP, in order, each with its metadata.
    Never SKIP as a whole: PodFitsResources always checks the pod count.
    """

    node_local = True

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name
        # noncriticalPredicates, then EssentialPredicates, in v1.14's order.
        self.resources = PodFitsResources(
            PluginArgs(
                names.POD_FITS_RESOURCES,
                ignored_extended_resources=args.ignored_extended_resources,
            )
        )
        self.host = PodFitsHost(PluginArgs(names.HOST_NAME))
        self.ports = PodFitsHostPorts(PluginArgs(names.POD_FITS_HOST_PORTS))
        self.selector = PodMatchNodeSelector(PluginArgs(names.MATCH_NODE_SELECTOR))

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> tuple[SubCheck, ...]:
        checks = (
            _bind(self.resources, pod, snapshot),
            _bind(self.host, pod, snapshot),
            _bind(self.ports, pod, snapshot),
            _bind(self.selector, pod, snapshot),
        )
        return tuple(check for check in checks if check is not None)

    def filter(self, pod: PodInfo, meta: tuple[SubCheck, ...], node: NodeInfo) -> Status:
        reasons: list[str] = []
        resolvable = True
        for check in meta:
            status = check.filter(pod, node)
            if status.code is Code.ERROR:
                return status
            if not status.is_success:
                reasons.extend(status.reasons)
                resolvable = resolvable and status.code is Code.UNSCHEDULABLE
        return unschedulable(*reasons, resolvable=resolvable) if reasons else SUCCESS

    def filter_columns(
        self, pod: PodInfo, meta: tuple[SubCheck, ...], cols: NodeColumns
    ) -> ReasonMasks:
        masks: ReasonMasks = []
        for check in meta:
            masks.extend(check.filter_columns(pod, cols))
        return masks


FACTORIES: dict[str, Callable[[PluginArgs], GeneralPredicates]] = {NAME: GeneralPredicates}
