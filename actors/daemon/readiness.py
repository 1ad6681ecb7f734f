"""The readiness gate: what ``/readyz`` answers (http.py serves it).

Kubernetes counterpart: kube-scheduler's readyz checks (cmd/kube-scheduler/app/server.go
``Run``): ``sched-handler-sync`` fails until the informers' initial lists are delivered
("handlers are not fully synchronized"; here: ``store not recovered``), ``shutdown``
(``healthz.NewShutdownHealthz``) fails once the process was asked to stop, and under leader
election the election's watchdog. A follower is ready: it serves reads, watches and explain.

Not ready while any of these holds, one line each, in this order::

    podium is shutting down          from the first SIGTERM or SIGINT on
    store not recovered              until the gateway's hub has the store's recovered state
    actor NAME not running           an actor stopped (a store whose commit failed stops, so
                                     this covers "the store is writable")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["Actors", "Readiness", "Recovery"]


class Actors(Protocol):
    """What the gate asks the runtime (:class:`podium.actors.supervisor.supervisor.Runtime`)."""

    def not_running(self) -> list[str]:
        """The actors started that are no longer running."""
        ...


class Recovery(Protocol):
    """What the gate asks the gateway (:class:`podium.actors.gateway.gateway.Gateway`)."""

    @property
    def ready(self) -> bool:
        """Whether its hub has the store's recovered state."""
        ...


def _no_role() -> str:
    return ""


class Readiness:
    """What ``/readyz`` asks: the reasons the daemon is not ready to serve (none: ready).

    Args:
        actors: the runtime whose actors must all run.
        role: what follows ``ok`` (under leader election, the replica's role:
            :meth:`podium.actors.daemon.stores.Replica.role`).

    Attributes:
        gateway: set once the gateway serves (None: not yet, so not recovered).
        stopping: set at the first shutdown signal.
    """

    def __init__(self, actors: Actors, role: Callable[[], str] = _no_role) -> None:
        self.actors = actors
        self.gateway: Recovery | None = None
        self.stopping = False
        self._role = role

    def stop(self) -> None:
        """The daemon stops: from now on ``/readyz`` says ``podium is shutting down``."""
        self.stopping = True

    def role(self) -> str:
        """After ``ok``: under leader election, whether this replica leads, else who does."""
        return self._role()

    def __call__(self) -> list[str]:
        problems: list[str] = []
        if self.stopping:
            problems.append("podium is shutting down")
        if self.gateway is None or not self.gateway.ready:
            problems.append("store not recovered")
        problems.extend(f"actor {name} not running" for name in self.actors.not_running())
        return problems
