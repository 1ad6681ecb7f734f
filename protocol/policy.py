"""The scheduler Policy file (Kubernetes Policy API v1, as of v1.14), in both seed spellings.

Kubernetes counterpart: ``pkg/scheduler/api/v1/types.go`` (Policy, PredicatePolicy,
PriorityPolicy, their arguments, ExtenderConfig) and ``pkg/scheduler/api/validation`` at v1.14.

Two spellings load here (README.md, "Policies and configuration"):

- seed 000's: ``{"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "PodFitsHost",
  "order": 1}, ...], "priorities": [{"name": "EqualPriority", "weight": 1}, ...],
  "hardPodAffinitySymmetricWeight": 10}``;
- seed 004's: ``"kind": "SchedulingPolicy"``, renamed predicates/priorities (aliases resolved by
  ``podium.actors.plugins.policy``) and ``"affinityWeight"`` for ``hardPodAffinitySymmetricWeight``.

Beyond v1.14, a predicate entry may carry ``order`` (an integer >= 1; seed 000's end-user
ordering). This module checks the *shape* of a policy: types, ``order``, ``weight``, the
symmetric weight, arguments. The *names* (aliases, unknown names, duplicates, the
``MaxPDVolumeCountPredicate`` group, defaults) are resolved in ``podium.actors.plugins.policy``, next to
the plugin names it needs (protocol/ imports no other podium package).

Unknown keys are errors (a typo should not silently change scheduling). ``extenders`` entries
are read by ``podium.protocol.extender`` (their keys case-insensitively, as v1.14 reads them).
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import msgspec

from podium.protocol.errors import PolicyError, Problem, split_validation_message
from podium.protocol.extender import (
    ExtenderConfig,
    ExtenderManagedResource,
    check_extenders,
    fold_extender_configs,
)
from podium.protocol.loader import Format, read_settings

__all__ = [
    "DEFAULT_HARD_POD_AFFINITY_SYMMETRIC_WEIGHT",
    "MAX_WEIGHT",
    "POLICY_KINDS",
    "ExtenderConfig",
    "ExtenderManagedResource",
    "LabelPreference",
    "LabelsPresence",
    "LoadedPolicy",
    "Policy",
    "PredicateArgument",
    "PredicatePolicy",
    "PriorityArgument",
    "PriorityPolicy",
    "ServiceAffinity",
    "ServiceAntiAffinity",
    "decode_policy",
    "load_policy",
]

POLICY_KINDS = ("Policy", "SchedulingPolicy")
DEFAULT_HARD_POD_AFFINITY_SYMMETRIC_WEIGHT = 10
"""v1.14 ``DefaultHardPodAffinitySymmetricWeight``; a policy's 0 or absent value means this."""
MAX_WEIGHT = ((1 << 63) - 1) // 10
"""v1.14 ``schedulerapi.MaxWeight`` (MaxInt64 / MaxPriority): a weight must stay below it."""


class _PolicyStruct(
    msgspec.Struct, rename="camel", frozen=True, kw_only=True, forbid_unknown_fields=True
):
    """Base of the policy structs: camelCase keys, unknown keys rejected."""


# --------------------------------------------------------------------------- predicates


class LabelsPresence(_PolicyStruct, frozen=True, kw_only=True):
    """``argument.labelsPresence``: nodes must (or must not) carry every label in ``labels``."""

    labels: list[str] = []
    presence: bool = False


class ServiceAffinity(_PolicyStruct, frozen=True, kw_only=True):
    """``argument.serviceAffinity``: a service's pods share the values of ``labels``."""

    labels: list[str] = []


class PredicateArgument(_PolicyStruct, frozen=True, kw_only=True):
    """Exactly one of the two fields is set."""

    service_affinity: ServiceAffinity | None = None
    labels_presence: LabelsPresence | None = None


class PredicatePolicy(_PolicyStruct, frozen=True, kw_only=True):
    """One ``predicates[]`` entry.

    Attributes:
        name: a predicate name or alias; any name when ``argument`` is given.
        order: the end-user position (an integer >= 1); entries without one run after.
        argument: makes a configurable predicate (CheckNodeLabelPresence or
            CheckServiceAffinity) that reports under ``name``.
    """

    name: str
    order: int | None = None
    argument: PredicateArgument | None = None


# --------------------------------------------------------------------------- priorities


class LabelPreference(_PolicyStruct, frozen=True, kw_only=True):
    """``argument.labelPreference``: prefer nodes with (or without) ``label``."""

    label: str = ""
    presence: bool = False


class ServiceAntiAffinity(_PolicyStruct, frozen=True, kw_only=True):
    """``argument.serviceAntiAffinity``: spread a service's pods over the values of ``label``."""

    label: str = ""


class PriorityArgument(_PolicyStruct, frozen=True, kw_only=True):
    """Exactly one of the two fields is set."""

    service_anti_affinity: ServiceAntiAffinity | None = None
    label_preference: LabelPreference | None = None


class PriorityPolicy(_PolicyStruct, frozen=True, kw_only=True):
    """One ``priorities[]`` entry.

    Attributes:
        name: a priority name or alias; any name when ``argument`` is given.
        weight: an integer >= 1 (required; Kubernetes rejects a zero weight).
        argument: makes a configurable priority (NodeLabelPriority or
            ServiceAntiAffinityPriority) that reports under ``name``.
    """

    name: str
    weight: int | None = None
    argument: PriorityArgument | None = None


# --------------------------------------------------------------------------- policy


class Policy(_PolicyStruct, frozen=True, kw_only=True):
    """A scheduler Policy as written (names not yet resolved; see ``podium.actors.plugins.policy``).

    ``predicates``/``priorities`` of ``None`` (the key is absent) mean the defaults; an empty
    list means none at all.
    """

    kind: str = "Policy"
    api_version: str = "v1"
    predicates: list[PredicatePolicy] | None = None
    priorities: list[PriorityPolicy] | None = None
    hard_pod_affinity_symmetric_weight: int | None = None
    affinity_weight: int | None = None
    always_check_all_predicates: bool = False
    extenders: list[ExtenderConfig] = []

    @property
    def symmetric_weight(self) -> int | None:
        """``hardPodAffinitySymmetricWeight`` (or its alias ``affinityWeight``); ``None`` when
        absent or 0, which means the default (10, or the scheduler configuration's)."""
        weight = self.hard_pod_affinity_symmetric_weight or self.affinity_weight
        return weight or None


class LoadedPolicy(NamedTuple):
    """A checked policy and what Podium has to say about it."""

    policy: Policy
    warnings: tuple[str, ...]


def decode_policy(raw: Any, *, source: str | None = None) -> LoadedPolicy:
    """Check and decode a policy from its parsed JSON/YAML form.

    Args:
        raw: the parsed document (a dict); ``None`` (an empty file) is the default policy.
        source: the file name errors carry.

    Returns:
        The policy and its warnings (none today; the field stays for later ones).

    Raises:
        PolicyError: the shape is wrong (a type, an unknown key: the first one msgspec meets),
            or, with every problem listed, a value breaks a rule: ``kind``, ``apiVersion``,
            ``predicates[i].order`` (>= 1), ``priorities[i].weight`` (>= 1), an argument with
            other than exactly one field, ``hardPodAffinitySymmetricWeight`` (0-100).
    """
    try:
        policy = msgspec.convert(fold_extender_configs({} if raw is None else raw), type=Policy)
    except msgspec.ValidationError as exc:
        reason, path = split_validation_message(str(exc))
        raise PolicyError([(_bare(path), reason)], source=source) from None
    problems = _check(policy)
    if problems:
        raise PolicyError(problems, source=source)
    return LoadedPolicy(policy, ())


def load_policy(
    text: str | bytes | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    fmt: Format | None = None,
) -> LoadedPolicy:
    """Read a policy from ``text`` or from the file at ``path`` (JSON or YAML).

    Args:
        text: the policy's content; when ``None``, the file at ``path`` is read.
        path: the file (also names the policy in errors).
        fmt: ``"json"``, ``"yaml"`` or ``None`` to guess from the suffix or the first character.

    Raises:
        PolicyError: the file cannot be read or parsed, or :func:`decode_policy` refuses it.
    """
    source = os.fspath(path) if path is not None else "<policy>"
    if text is None and path is None:
        raise TypeError("load_policy needs text or path")
    raw = read_settings(text, source=source, fmt=fmt, error=PolicyError)
    return decode_policy(raw, source=source)


def _bare(path: str | None) -> str:
    """``$.predicates[0].order`` -> ``predicates[0].order`` (the spelling PolicyError messages use)."""
    if not path or path == "$":
        return ""
    return path.removeprefix("$.").removeprefix("$")


def _one_argument(
    what: str, name: str, where: str, argument: PredicateArgument | PriorityArgument
) -> list[Problem]:
    """v1.14 validation's rule for the ``argument`` of the ``what`` (predicate or priority)
    ``name``: exactly one of its fields is set (the message names them by their keys)."""
    fields = msgspec.structs.fields(argument)
    count = sum(getattr(argument, field.name) is not None for field in fields)
    if count == 1:
        return []
    spelled = " or ".join(sorted(field.encode_name for field in fields))
    return [
        (
            f"{where}.argument",
            f"{what} {name!r}: exactly 1 {what} argument is required ({spelled}), got {count}",
        )
    ]


def _check(policy: Policy) -> list[Problem]:
    problems: list[Problem] = []
    if policy.kind not in POLICY_KINDS:
        problems.append(("kind", f"kind must be Policy or SchedulingPolicy, got {policy.kind!r}"))
    if policy.api_version != "v1":
        problems.append(("apiVersion", f"apiVersion must be v1, got {policy.api_version!r}"))
    for i, predicate in enumerate(policy.predicates or ()):
        where = f"predicates[{i}]"
        if not predicate.name:
            problems.append((f"{where}.name", "a predicate needs a name"))
        if predicate.order is not None and predicate.order < 1:
            problems.append(
                (
                    f"{where}.order",
                    f"predicate {predicate.name!r}: order must be an integer >= 1, got {predicate.order}",
                )
            )
        if predicate.argument is not None:
            problems += _one_argument("predicate", predicate.name, where, predicate.argument)
    for i, priority in enumerate(policy.priorities or ()):
        where = f"priorities[{i}]"
        if not priority.name:
            problems.append((f"{where}.name", "a priority needs a name"))
        if priority.weight is None:
            problems.append(
                (
                    f"{where}.weight",
                    f"priority {priority.name!r}: weight is required (an integer >= 1)",
                )
            )
        elif not 1 <= priority.weight < MAX_WEIGHT:
            problems.append(
                (
                    f"{where}.weight",
                    f"priority {priority.name!r} should have a positive weight applied to it or it has "
                    f"overflown: weight must be an integer in 1-{MAX_WEIGHT - 1}, got {priority.weight}",
                )
            )
        if priority.argument is not None:
            problems += _one_argument("priority", priority.name, where, priority.argument)
    problems += check_extenders(policy.extenders)
    hard, alias = policy.hard_pod_affinity_symmetric_weight, policy.affinity_weight
    if hard is not None and alias is not None and hard != alias:
        problems.append(
            (
                "affinityWeight",
                f"affinityWeight ({alias}) is an alias of hardPodAffinitySymmetricWeight ({hard}); give one of them",
            )
        )
    for key, value in (("hardPodAffinitySymmetricWeight", hard), ("affinityWeight", alias)):
        if value is not None and not 0 <= value <= 100:
            problems.append((key, f"{key} must be in 1-100 (0 means the default, 10), got {value}"))
    return problems
