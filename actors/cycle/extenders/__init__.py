"""Scheduler extenders (Kubernetes v1.14): HTTP callbacks that filter, prioritize, preempt
and bind. ``client`` is one extender and its connection pool; ``extenders`` is the set, called
by the filter actor, the score actor, the scheduler (preempt) and the binder."""

from __future__ import annotations

from podium.actors.cycle.extenders.client import Call, ExtenderError, HTTPExtender, tls_problem
from podium.actors.cycle.extenders.extenders import NO_EXTENDERS, Extenders

__all__ = ["NO_EXTENDERS", "Call", "ExtenderError", "Extenders", "HTTPExtender", "tls_problem"]
