"""The daemon's stop signals: SIGTERM or SIGINT begins a clean shutdown, a second one cuts it
short. (SIGHUP reloads access: access.py.)

Kubernetes counterpart: staging/src/k8s.io/apiserver/pkg/server/signal.go
``SetupSignalHandler``: the first SIGTERM or SIGINT cancels the component's context and it
shuts down; a second ends the process at once (there with exit code 1; here what is left is
cancelled and the exit code stays 0).

The first signal stops the daemon's parts (``/readyz`` answers 503, the listeners close, every connection
is told ``unavailable: podium is shutting down``, the scheduling cycle stops) and gives the
services ``shutdownGracePeriodSeconds`` to drain (binds in flight finish, the store closes);
past that deadline, or at a second signal, whatever is left is cancelled. A signal after
``podium stopped`` is ignored: the process is exiting.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

import trio

__all__ = ["Stoppable", "stop_on_signal", "stop_signals"]

# The daemon's one logger: its lines keep the name they had before the daemon was split.
log = logging.getLogger("podium.serve")


@contextmanager
def stop_signals() -> Iterator[AsyncIterator[int]]:
    """SIGTERM and SIGINT as they arrive, while the context is open.

    Both are ignored from here on but for this receiver, which puts that back when it closes:
    a signal after the stop (while the process exits) then cannot turn a clean exit 0 into a
    death by signal.
    """
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        yield signals


class Stoppable(Protocol):
    """A part of the daemon told that it stops (the readiness gate, the gateway, the runtime)."""

    def stop(self) -> None:
        """Begin a clean stop; return at once."""
        ...


async def stop_on_signal(
    signals: AsyncIterator[int],
    stopping: Sequence[Stoppable],
    services: trio.CancelScope,
    grace_seconds: float,
    nursery: trio.Nursery,
) -> None:
    """Wait for the first stop signal; then begin the shutdown and return.

    Args:
        signals: the stop signals (:func:`stop_signals`).
        stopping: told to stop, in this order, at the first signal.
        services: the scope of what must drain: cancelled ``grace_seconds`` after the first
            signal, or at the second.
        grace_seconds: ``shutdownGracePeriodSeconds``.
        nursery: where the second signal is awaited; it must outlive ``services`` (the daemon
            cancels it once they have drained).
    """
    async for signum in signals:
        log.info("received %s: shutting down", signal.Signals(signum).name)
        for part in stopping:
            part.stop()
        services.deadline = trio.current_time() + grace_seconds
        nursery.start_soon(_second_signal, signals, services)
        return


async def _second_signal(signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
    async for signum in signals:
        log.warning("received %s again: stopping now", signal.Signals(signum).name)
        scope.cancel()
        return
