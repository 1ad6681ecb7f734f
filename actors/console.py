"""What every command that talks to a person shares: argparse value types and the progress bar.

Used by the CLI's command groups, ``podium serve``'s flags (actors/daemon) and ``podium bench``
(actors/bench), so it lives below all three and imports nothing of Podium.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["Progress", "at_least"]


def at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` (to ``high``), else a usage error saying so."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"{low}-{high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"expected {bound}, got {value}")
        return value

    return parse


class Progress:
    """A one-line progress bar on stderr, shown only on a terminal (and never for -o json)."""

    def __init__(
        self, label: str, total: int, *, enabled: bool, stream: TextIO = sys.stderr
    ) -> None:
        self.label, self.total, self.stream = label, total, stream
        self.enabled = enabled and stream.isatty() and total > 0
        self._last = 0.0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self._last < 0.1 and done < self.total):
            return
        self._last = now
        width = 30
        filled = width * done // self.total
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * (len(self.label) + 50) + "\r")
            self.stream.flush()
