"""The plugin registry: which module implements which predicate or priority.

Kubernetes counterpart: ``pkg/scheduler/factory/plugins.go`` and
``pkg/scheduler/algorithmprovider/defaults/register_{predicates,priorities}.go`` at v1.14,
where each predicate/priority is registered under its name. Here each plugin module ends with
``FACTORIES: dict[str, Callable[[PluginArgs], plugin]]`` keyed by canonical name, and this
registry knows which module owns which names.

Modules are imported lazily: :func:`predicate_factory` imports only the module that owns the
name asked for, so a policy that does not use a plugin never imports it; :func:`factories`
imports them all (``podium`` checks the whole set at start-up and in its tests).

Error handling:
    A plugin module that does not exist raises :class:`PluginModuleMissing` naming the module
    and the names it should provide; a module whose ``FACTORIES`` lacks a name it owns, or two
    modules claiming one name, raise :class:`RegistryError`. An error raised *inside* a
    plugin module's import propagates unchanged (it is a bug in that module, not a missing one).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from podium.actors.plugins import names
from podium.protocol.errors import PodiumError

if TYPE_CHECKING:
    from podium.actors.framework.interface import FilterPlugin, PluginArgs, ScorePlugin

__all__ = [
    "PACKAGE",
    "PREDICATE_MODULES",
    "PRIORITY_MODULES",
    "PluginModuleMissing",
    "PredicateFactory",
    "PriorityFactory",
    "RegistryError",
    "factories",
    "module_factories",
    "predicate_factory",
    "priority_factory",
]

PACKAGE = "podium.actors.plugins"

PredicateFactory = Callable[["PluginArgs"], "FilterPlugin[Any]"]
PriorityFactory = Callable[["PluginArgs"], "ScorePlugin[Any]"]

PREDICATE_MODULES: Mapping[str, tuple[str, ...]] = {
    "node_condition": (names.CHECK_NODE_CONDITION,),
    "node_unschedulable": (names.CHECK_NODE_UNSCHEDULABLE,),
    "general_predicates": (names.GENERAL_PREDICATES,),
    "node_name": (names.HOST_NAME,),
    "node_ports": (names.POD_FITS_HOST_PORTS,),
    "node_selector": (names.MATCH_NODE_SELECTOR,),
    "node_resources_fit": (names.POD_FITS_RESOURCES,),
    "volume_restrictions": (names.NO_DISK_CONFLICT,),
    "taint_toleration": (names.POD_TOLERATES_NODE_TAINTS,),
    "no_execute_taints": (names.POD_TOLERATES_NODE_NO_EXECUTE_TAINTS,),
    "node_label_presence": (names.CHECK_NODE_LABEL_PRESENCE,),
    "service_affinity": (names.CHECK_SERVICE_AFFINITY,),
    "non_csi_volume_limits": (
        names.MAX_EBS_VOLUME_COUNT,
        names.MAX_GCE_PD_VOLUME_COUNT,
        names.MAX_AZURE_DISK_VOLUME_COUNT,
        names.MAX_CINDER_VOLUME_COUNT,
    ),
    "csi_volume_limits": (names.MAX_CSI_VOLUME_COUNT,),
    "volume_binding": (names.CHECK_VOLUME_BINDING,),
    "volume_zone": (names.NO_VOLUME_ZONE_CONFLICT,),
    "node_pressure": (
        names.CHECK_NODE_MEMORY_PRESSURE,
        names.CHECK_NODE_PID_PRESSURE,
        names.CHECK_NODE_DISK_PRESSURE,
    ),
    "inter_pod_affinity": (names.MATCH_INTER_POD_AFFINITY,),
    "pod_topology_spread": (names.EVEN_PODS_SPREAD,),
}
"""Predicate module (in :data:`PACKAGE`) -> the canonical names its FACTORIES must provide."""

PRIORITY_MODULES: Mapping[str, tuple[str, ...]] = {
    "least_requested": (names.LEAST_REQUESTED,),
    "most_requested": (names.MOST_REQUESTED,),
    "balanced_allocation": (names.BALANCED_RESOURCE_ALLOCATION,),
    "selector_spread": (names.SELECTOR_SPREAD, names.SERVICE_SPREADING),
    "service_anti_affinity": (names.SERVICE_ANTI_AFFINITY,),
    "node_affinity": (names.NODE_AFFINITY,),
    "inter_pod_affinity": (names.INTER_POD_AFFINITY,),
    "taint_toleration_priority": (names.TAINT_TOLERATION,),
    "image_locality": (names.IMAGE_LOCALITY,),
    "node_prefer_avoid_pods": (names.NODE_PREFER_AVOID_PODS,),
    "node_label": (names.NODE_LABEL,),
    "equal_priority": (names.EQUAL_PRIORITY,),
    "pod_topology_spread": (names.EVEN_PODS_SPREAD_PRIORITY,),
}
"""Priority module (in :data:`PACKAGE`) -> the canonical names its FACTORIES must provide.

A module may appear here and in :data:`PREDICATE_MODULES` (the ``inter_pod_affinity`` and
``pod_topology_spread`` packages hold both halves of a Kubernetes plugin, as Kubernetes'
interpodaffinity and podtopologyspread packages do); its FACTORIES must then provide both sets
of names."""

_PREDICATE_OWNER = {name: module for module, owned in PREDICATE_MODULES.items() for name in owned}
_PRIORITY_OWNER = {name: module for module, owned in PRIORITY_MODULES.items() for name in owned}


class RegistryError(PodiumError, LookupError):
    """A name no module provides, or a module whose FACTORIES does not match the registry."""


class PluginModuleMissing(PodiumError, ImportError):
    """A plugin module the registry lists does not exist (``name`` is the module)."""


@functools.cache
def module_factories(module: str) -> Mapping[str, Callable[..., object]]:
    """The FACTORIES of one plugin module, checked against the names the registry expects."""
    qualified = f"{PACKAGE}.{module}"
    owned = (*PREDICATE_MODULES.get(module, ()), *PRIORITY_MODULES.get(module, ()))
    try:
        loaded = importlib.import_module(qualified)
    except ModuleNotFoundError as exc:
        if exc.name != qualified:
            raise  # the module exists but something it imports does not: its own bug
        raise PluginModuleMissing(
            f"plugin module {qualified} is missing; it should provide FACTORIES for {', '.join(owned)}",
            name=qualified,
        ) from exc
    table = getattr(loaded, "FACTORIES", None)
    if not isinstance(table, dict):
        raise RegistryError(f"plugin module {qualified} has no FACTORIES dict")
    if missing := [name for name in owned if name not in table]:
        raise RegistryError(f"plugin module {qualified} FACTORIES lacks {', '.join(missing)}")
    return cast("Mapping[str, Callable[..., object]]", table)


@functools.cache
def factories() -> Mapping[str, Callable[..., object]]:
    """Every plugin module's FACTORIES, merged: canonical name -> factory.

    Raises:
        PluginModuleMissing: a listed module does not exist (the message names it).
        RegistryError: a module lacks a name it owns, or two modules provide one name.
    """
    merged: dict[str, Callable[..., object]] = {}
    origin: dict[str, str] = {}
    # dict.fromkeys: a module listed as both predicate and priority module is merged once.
    for module in dict.fromkeys((*PREDICATE_MODULES, *PRIORITY_MODULES)):
        for name, factory in module_factories(module).items():
            if name in merged:
                raise RegistryError(
                    f"{name} is provided by both {PACKAGE}.{origin[name]} and {PACKAGE}.{module}"
                )
            merged[name] = factory
            origin[name] = module
    return merged


def predicate_factory(canonical: str) -> PredicateFactory:
    """The factory of the predicate ``canonical`` (a canonical v1.14 name, not an alias).

    Raises:
        PluginModuleMissing: the module that owns it does not exist.
        RegistryError: no module provides ``canonical``.
    """
    found = _factory("predicate", canonical, _PREDICATE_OWNER, _PRIORITY_OWNER)
    return cast("PredicateFactory", found)


def priority_factory(canonical: str) -> PriorityFactory:
    """The factory of the priority ``canonical`` (a canonical v1.14 name, not an alias).

    Raises:
        PluginModuleMissing: the module that owns it does not exist.
        RegistryError: no module provides ``canonical``.
    """
    found = _factory("priority", canonical, _PRIORITY_OWNER, _PREDICATE_OWNER)
    return cast("PriorityFactory", found)


def _factory(
    kind: str, canonical: str, owner: Mapping[str, str], other_owner: Mapping[str, str]
) -> Callable[..., object]:
    """The factory of the ``kind`` named ``canonical``: from the module ``owner`` names, or
    else from any module's FACTORIES, unless ``other_owner`` (the other kind's) owns the name."""
    module = owner.get(canonical)
    table = module_factories(module) if module is not None else factories()
    if canonical not in table or (module is None and canonical in other_owner):
        raise RegistryError(f"no plugin module provides the {kind} {canonical!r}")
    return table[canonical]
