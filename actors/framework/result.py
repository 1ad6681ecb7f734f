"""The outcome of one scheduling attempt, as the cycle's stages hand it on."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["ScheduleResult"]


@dataclass(slots=True)
class ScheduleResult:
    """The outcome of one attempt.

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
        feasible_nodes: the feasible nodes in examination order (only with ``explain``).
        scores: node -> priority name -> normalised score (only with ``explain``).
        totals: node -> weighted total (only with ``explain``).
        extender_calls: ``(extender, verb, result, start, end)`` per extender call made for
            this attempt (trio clock; result ``ok`` or ``error``): the scheduler records a
            span for each (actors/cycle/extenders).
    """

    node: str | None = None
    message: str | None = None
    error: bool = False
    evaluated: int = 0
    feasible: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    failed_plugins: set[str] = field(default_factory=set)
    examined: list[str] = field(default_factory=list)
    failed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    feasible_nodes: list[str] = field(default_factory=list)
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    extender_calls: list[tuple[str, str, str, float, float]] = field(default_factory=list)
