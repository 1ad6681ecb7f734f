"""Exponential backoff with jitter, bounded: how long a client waits before trying again.

Kubernetes counterpart: k8s.io/apimachinery/pkg/util/wait (``Backoff``, ``Jitter``) as the
reflector's backoff manager uses it (client-go/tools/cache/reflector.go: 800 ms doubling to
30 s, jitter 1.0). Sans-IO: it says how long; the caller sleeps (so a test under trio's
``MockClock`` sees the delays as exact virtual times).
"""

from __future__ import annotations

import random

__all__ = ["Backoff"]


class Backoff:
    """Exponential backoff with jitter, bounded (client-go's ``wait.Backoff`` as the
    reflector's backoff manager uses it: 800 ms doubling up to 30 s, jitter 1.0).

    The n-th delay since the last :meth:`reset` is ``min(initial * factor**n, maximum)``
    stretched by a random factor in ``[1, 1 + jitter)``, and never more than ``maximum``.

    Args:
        initial: the first delay (seconds).
        maximum: no delay is longer.
        factor: the growth between two delays.
        jitter: the random stretch (0: none); spreads the clients a restart disconnected.
        rng: the random source (a seeded ``random.Random`` makes delays repeatable).
    """

    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        if not 0 < initial <= maximum or factor < 1 or jitter < 0:
            raise ValueError(
                f"backoff needs 0 < initial <= maximum, factor >= 1, jitter >= 0; got "
                f"initial={initial}, maximum={maximum}, factor={factor}, jitter={jitter}"
            )
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._rng = rng or random.Random()
        self._steps = 0

    def next_delay(self) -> float:
        """The delay before the next try (and one step further)."""
        base = min(self.initial * self.factor**self._steps, self.maximum)
        if base < self.maximum:
            self._steps += 1
        return min(base * (1 + self.jitter * self._rng.random()), self.maximum)

    def reset(self) -> None:
        """Start again from ``initial`` (after a try that succeeded)."""
        self._steps = 0
