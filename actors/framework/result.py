"""The outcome of one scheduling attempt, as the cycle's stages hand it on."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeAlias

import msgspec

__all__ = ["ExtenderCall", "ScheduleResult"]

_NONE: Mapping[Any, Any] = MappingProxyType({})
"""The empty default of every mapping field: shared, since nobody can change it."""

ExtenderCall: TypeAlias = tuple[str, str, str, float, float]
"""``(extender, verb, result, start, end)``: one extender call (trio clock; result ``ok`` or
``error``), for the attempt's trace."""


class ScheduleResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of one attempt: a value, never changed once made.

    It travels in :class:`~podium.actors.mail.messages.ScoreRequest` and
    :class:`~podium.actors.mail.messages.Decision`, so each stage that adds to it makes a new one
    (``msgspec.structs.replace``, once per stage and pod) from containers it built before:
    nobody mutates a container of a result it was handed either.

    Attributes:
        node: the chosen node, or ``None``.
        message: the FitError text when nothing fits; the error text when ``error``.
        error: True when a predicate or priority could not be evaluated (result=error).
        evaluated: nodes examined by the filter; feasible: how many of them fit.
        reasons: reason -> number of examined nodes that gave it.
        failed_plugins: the predicates that rejected at least one examined node (Kubernetes'
            UnschedulablePlugins, for ``scheduler_unschedulable_pods``).
        examined: the examined nodes in walk order (only with ``explain``).
        failed: node -> its reasons (only with ``explain``).
        unresolvable: the nodes of ``failed`` whose status is
            ``Code.UNSCHEDULABLE_AND_UNRESOLVABLE`` (some failing predicate said so): removing
            pods cannot make the pod fit there, and preemption does not try them.
        feasible_nodes: the feasible nodes in examination order (only with ``explain``).
        scores: node -> priority name -> normalised score (only with ``explain``).
        totals: node -> weighted total (only with ``explain``).
        extender_calls: every extender call made for this attempt, in order: the scheduler
            records a span for each (actors/cycle/extenders).
    """

    node: str | None = None
    message: str | None = None
    error: bool = False
    evaluated: int = 0
    feasible: int = 0
    reasons: Mapping[str, int] = _NONE
    failed_plugins: frozenset[str] = frozenset()
    examined: tuple[str, ...] = ()
    failed: Mapping[str, tuple[str, ...]] = _NONE
    unresolvable: frozenset[str] = frozenset()
    feasible_nodes: tuple[str, ...] = ()
    scores: Mapping[str, Mapping[str, int]] = _NONE
    totals: Mapping[str, int] = _NONE
    extender_calls: tuple[ExtenderCall, ...] = ()
