"""Resolve a scheduler Policy into the ordered predicates and weighted priorities Podium runs.

Kubernetes counterpart: ``pkg/scheduler/factory/factory.go`` (``CreateFromConfig``) and
``pkg/scheduler/factory/plugins.go`` (``RegisterCustomFitPredicate``,
``RegisterCustomPriorityFunction``) at v1.14, plus the end-user ``order`` of seed 000.

Rules (README.md, "Policies and configuration"; docs/differences.md):

- Names are canonical v1.14 names or their aliases (``names.PREDICATE_ALIASES``,
  ``names.PRIORITY_ALIASES``); ``MaxPDVolumeCountPredicate`` stands for the four
  Max*VolumeCount predicates. An unknown name is a :class:`PolicyError` naming the entry
  (``predicates[3].name``), except for an entry carrying an ``argument``, which may bear any
  name and reports under it (the legacy Policy API's custom predicates and priorities).
- Naming one predicate or priority twice (directly or through an alias) is an error.
- No ``predicates`` key: ``names.DEFAULT_PREDICATES``; no ``priorities`` key:
  ``names.DEFAULT_PRIORITIES``; an empty list: none at all.
- Predicates with an ``order`` run first, by order; the rest follow; ties fall back to the
  canonical v1.14 order (``names.PREDICATES_ORDERING``; an argument entry takes the position
  of its predicate type), then to the policy's own order, so messages are deterministic.
- ``hardPodAffinitySymmetricWeight`` (alias ``affinityWeight``): 1-100, 0 or absent meaning the
  scheduler configuration's value (10 by default), as v1.14's CreateFromConfig lets a policy's
  non-zero value override the configured one.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from podium.actors.framework.interface import FilterPlugin, PluginArgs, ScorePlugin
from podium.actors.plugins import names, registry
from podium.protocol.errors import PolicyError, Problem
from podium.protocol.extender import ExtenderConfig, ignored_resources
from podium.protocol.policy import (
    DEFAULT_HARD_POD_AFFINITY_SYMMETRIC_WEIGHT,
    Policy,
    PredicatePolicy,
    PriorityPolicy,
    load_policy,
)

__all__ = [
    "OrderKey",
    "ResolvedPolicy",
    "build_plugins",
    "default_policy",
    "load_resolved_policy",
    "resolve_policy",
]

_RANK = {name: rank for rank, name in enumerate(names.PREDICATES_ORDERING)}
_KNOWN_PREDICATES = sorted(
    {*names.PREDICATES_ORDERING, *names.PREDICATE_ALIASES, names.MAX_PD_VOLUME_COUNT_GROUP}
)
_KNOWN_PRIORITIES = sorted({*names.PRIORITIES, *names.PRIORITY_ALIASES})
# Predicate/priority types that exist only with a policy argument, and that argument's key.
_ARGUMENT_OF = {
    **{canonical: key for key, canonical in names.ARGUMENT_PREDICATES.items()},
    **{canonical: key for key, canonical in names.ARGUMENT_PRIORITIES.items()},
}


class OrderKey(NamedTuple):
    """The sort key of a predicate: ordered entries first, by order, then canonical rank.

    Attributes:
        unordered: 0 for an entry with an ``order``, 1 for the rest.
        order: the entry's ``order`` (0 when it has none).
        rank: the position of its predicate type in v1.14 ``predicatesOrdering``.
        position: the entry's position in the policy (the last tie-break).
    """

    unordered: int
    order: int
    rank: int
    position: int


@dataclass(frozen=True, slots=True)
class ResolvedPolicy:
    """A policy with every name resolved, ready for :func:`build_plugins`.

    Attributes:
        predicates: ``(order_key, args, canonical)`` in the order predicates run;
            ``args.name`` is the name the predicate reports under.
        priorities: ``(args, canonical, weight)`` in policy order.
        always_check_all_predicates: run every predicate on a node even after one fails.
        hard_pod_affinity_symmetric_weight: 1-100.
        extenders: the policy's extenders, in order (actors/cycle/extenders calls them).
        warnings: what an operator should hear about.
    """

    predicates: Sequence[tuple[OrderKey, PluginArgs, str]]
    priorities: Sequence[tuple[PluginArgs, str, int]]
    always_check_all_predicates: bool = False
    hard_pod_affinity_symmetric_weight: int = DEFAULT_HARD_POD_AFFINITY_SYMMETRIC_WEIGHT
    extenders: tuple[ExtenderConfig, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def predicate_names(self) -> tuple[str, ...]:
        """The names predicates report under, in the order they run."""
        return tuple(args.name for _, args, _ in self.predicates)

    @property
    def priority_weights(self) -> tuple[tuple[str, int], ...]:
        """``(reported name, weight)`` per priority."""
        return tuple((args.name, weight) for args, _, weight in self.priorities)


def resolve_policy(
    policy: Policy | None = None,
    *,
    source: str | None = None,
    hard_pod_affinity_symmetric_weight: int = DEFAULT_HARD_POD_AFFINITY_SYMMETRIC_WEIGHT,
    warnings: Sequence[str] = (),
) -> ResolvedPolicy:
    """Resolve the names of a (shape-checked) policy; ``None`` is the default policy.

    Args:
        policy: from :func:`podium.protocol.policy.decode_policy` / ``load_policy``.
        source: the policy file, for error messages.
        hard_pod_affinity_symmetric_weight: the value when the policy gives none (or 0): the
            scheduler configuration's ``hardPodAffinitySymmetricWeight``.
        warnings: the loader's warnings, carried into the result.

    Raises:
        PolicyError: every unknown name, argument-only name without its argument, and
            duplicate, each naming its entry (``predicates[3].name``).
    """
    policy = policy or Policy()
    weight = policy.symmetric_weight or hard_pod_affinity_symmetric_weight
    problems: list[Problem] = []
    predicates = _resolve_predicates(policy.predicates, weight, problems)
    priorities = _resolve_priorities(policy.priorities, weight, problems)
    if problems:
        raise PolicyError(problems, source=source)
    return ResolvedPolicy(
        predicates=tuple(sorted(predicates, key=lambda entry: entry[0])),
        priorities=tuple(priorities),
        always_check_all_predicates=policy.always_check_all_predicates,
        hard_pod_affinity_symmetric_weight=weight,
        extenders=tuple(policy.extenders),
        warnings=tuple(warnings),
    )


def default_policy(
    *, hard_pod_affinity_symmetric_weight: int = DEFAULT_HARD_POD_AFFINITY_SYMMETRIC_WEIGHT
) -> ResolvedPolicy:
    """The policy Podium runs without a policy file (v1.14 DefaultProvider, see names.py)."""
    return resolve_policy(
        None, hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight
    )


def load_resolved_policy(
    path: str | os.PathLike[str],
    *,
    hard_pod_affinity_symmetric_weight: int = DEFAULT_HARD_POD_AFFINITY_SYMMETRIC_WEIGHT,
) -> ResolvedPolicy:
    """Read, check and resolve the policy file at ``path`` (JSON or YAML).

    Raises:
        PolicyError: the file cannot be read or parsed, its shape is wrong, or a name is.
    """
    loaded = load_policy(path=path)
    return resolve_policy(
        loaded.policy,
        source=os.fspath(path),
        hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight,
        warnings=loaded.warnings,
    )


def build_plugins(
    resolved: ResolvedPolicy,
    *,
    predicate_factory: Callable[[str], registry.PredicateFactory] = registry.predicate_factory,
    priority_factory: Callable[[str], registry.PriorityFactory] = registry.priority_factory,
) -> tuple[list[FilterPlugin[Any]], list[tuple[ScorePlugin[Any], int]]]:
    """Instantiate the plugins of a resolved policy.

    Args:
        resolved: from :func:`resolve_policy`.
        predicate_factory: canonical name -> factory (the registry's by default).
        priority_factory: canonical name -> factory (the registry's by default).

    Returns:
        The filters in the order they run, and ``(scorer, weight)`` pairs in policy order.

    Raises:
        podium.actors.plugins.registry.PluginModuleMissing: a plugin module is missing.
        TypeError: a factory returned something that is not a FilterPlugin/ScorePlugin.
    """
    filters: list[FilterPlugin[Any]] = []
    ignored = ignored_resources(resolved.extenders)
    for _, args, canonical in resolved.predicates:
        if ignored:
            args = dataclasses.replace(args, ignored_extended_resources=ignored)
        plugin = predicate_factory(canonical)(args)
        if not isinstance(plugin, FilterPlugin):
            raise TypeError(
                f"the factory of predicate {canonical} returned {plugin!r}, not a FilterPlugin"
            )
        filters.append(plugin)
    scorers: list[tuple[ScorePlugin[Any], int]] = []
    for args, canonical, weight in resolved.priorities:
        scorer = priority_factory(canonical)(args)
        if not isinstance(scorer, ScorePlugin):
            raise TypeError(
                f"the factory of priority {canonical} returned {scorer!r}, not a ScorePlugin"
            )
        scorers.append((scorer, weight))
    return filters, scorers


# --------------------------------------------------------------------------- predicates


def _resolve_predicates(
    entries: list[PredicatePolicy] | None, weight: int, problems: list[Problem]
) -> list[tuple[OrderKey, PluginArgs, str]]:
    if entries is None:
        return [
            (
                OrderKey(1, 0, _RANK[canonical], index),
                PluginArgs(canonical, hard_pod_affinity_symmetric_weight=weight),
                canonical,
            )
            for index, canonical in enumerate(names.DEFAULT_PREDICATES)
        ]
    resolved: list[tuple[OrderKey, PluginArgs, str]] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"predicates[{index}]"
        for args, canonical in _predicate_entry(entry, weight, where, problems):
            if (first := seen.setdefault(args.name, index)) != index:
                problems.append(
                    (f"{where}.name", _duplicate("predicate", entry.name, args.name, first))
                )
                continue
            key = OrderKey(
                0 if entry.order is not None else 1, entry.order or 0, _RANK[canonical], index
            )
            resolved.append((key, args, canonical))
    return resolved


def _predicate_entry(
    entry: PredicatePolicy, weight: int, where: str, problems: list[Problem]
) -> list[tuple[PluginArgs, str]]:
    argument = entry.argument
    if argument is not None:
        if argument.labels_presence is not None:
            presence = argument.labels_presence
            return [
                (
                    PluginArgs(
                        entry.name,
                        labels=tuple(presence.labels),
                        presence=presence.presence,
                        hard_pod_affinity_symmetric_weight=weight,
                    ),
                    names.CHECK_NODE_LABEL_PRESENCE,
                )
            ]
        if argument.service_affinity is not None:
            affinity = argument.service_affinity
            return [
                (
                    PluginArgs(
                        entry.name,
                        labels=tuple(affinity.labels),
                        hard_pod_affinity_symmetric_weight=weight,
                    ),
                    names.CHECK_SERVICE_AFFINITY,
                )
            ]
        return []  # protocol.policy already reported the empty argument
    if entry.name == names.MAX_PD_VOLUME_COUNT_GROUP:
        return [
            (PluginArgs(member, hard_pod_affinity_symmetric_weight=weight), member)
            for member in names.MAX_PD_VOLUME_COUNT_MEMBERS
        ]
    canonical = names.canonical_predicate(entry.name)
    if canonical is None:
        problems.append((f"{where}.name", _unknown("predicate", entry.name, _KNOWN_PREDICATES)))
        return []
    if canonical in _ARGUMENT_OF:
        problems.append((f"{where}.argument", _needs_argument("predicate", entry.name, canonical)))
        return []
    return [(PluginArgs(canonical, hard_pod_affinity_symmetric_weight=weight), canonical)]


# --------------------------------------------------------------------------- priorities


def _resolve_priorities(
    entries: list[PriorityPolicy] | None, weight: int, problems: list[Problem]
) -> list[tuple[PluginArgs, str, int]]:
    if entries is None:
        return [
            (
                PluginArgs(canonical, hard_pod_affinity_symmetric_weight=weight),
                canonical,
                priority_weight,
            )
            for canonical, priority_weight in names.DEFAULT_PRIORITIES
        ]
    resolved: list[tuple[PluginArgs, str, int]] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"priorities[{index}]"
        found = _priority_entry(entry, weight, where, problems)
        if found is None:
            continue
        args, canonical = found
        if (first := seen.setdefault(args.name, index)) != index:
            problems.append((f"{where}.name", _duplicate("priority", entry.name, args.name, first)))
            continue
        resolved.append((args, canonical, entry.weight or 0))
    return resolved


def _priority_entry(
    entry: PriorityPolicy, weight: int, where: str, problems: list[Problem]
) -> tuple[PluginArgs, str] | None:
    argument = entry.argument
    if argument is not None:
        if argument.label_preference is not None:
            preference = argument.label_preference
            args = PluginArgs(
                entry.name,
                label=preference.label,
                presence=preference.presence,
                hard_pod_affinity_symmetric_weight=weight,
            )
            return args, names.NODE_LABEL
        if argument.service_anti_affinity is not None:
            anti = argument.service_anti_affinity
            return PluginArgs(
                entry.name, label=anti.label, hard_pod_affinity_symmetric_weight=weight
            ), names.SERVICE_ANTI_AFFINITY
        return None  # protocol.policy already reported the empty argument
    if entry.name in _ARGUMENT_OF:
        problems.append((f"{where}.argument", _needs_argument("priority", entry.name, entry.name)))
        return None
    canonical = names.canonical_priority(entry.name)
    if canonical is None:
        problems.append((f"{where}.name", _unknown("priority", entry.name, _KNOWN_PRIORITIES)))
        return None
    return PluginArgs(canonical, hard_pod_affinity_symmetric_weight=weight), canonical


# --------------------------------------------------------------------------- messages


def _unknown(what: str, name: str, known: list[str]) -> str:
    message = f"unknown {what} {name!r}"
    if close := difflib.get_close_matches(name, known, n=1):
        message += f"; did you mean {close[0]!r}?"
    return message


def _needs_argument(what: str, name: str, canonical: str) -> str:
    return f"{what} {name!r} ({canonical}) exists only with an argument: give argument.{_ARGUMENT_OF[canonical]}"


def _duplicate(what: str, name: str, reported: str, first: int) -> str:
    plural = "predicates" if what == "predicate" else "priorities"
    alias = f" ({reported})" if reported != name else ""
    return f"{what} {name!r}{alias} is already given at {plural}[{first}]"
