"""How long the suite's long tests run: a short form by default (what ``pytest`` and CI run,
the whole suite within CI's 10 minutes), a long form behind environment variables.

Each repetition count or duration is read from its own variable with :func:`count` or
:func:`seconds`, the short form as the default; a property test's Hypothesis examples come from
:func:`examples` (``PODIUM_PROPERTY_EXAMPLES`` sets them all). :data:`LONG` holds the long
form of every one of them; ``PODIUM_SOAK=1`` sets each variable that is not already set to its
long form (tests/conftest.py calls :func:`soak` before any test module is imported), so::

    PODIUM_SOAK=1 pytest

runs every long run at once, and a variable given by hand still wins
(``PODIUM_SOAK=1 PODIUM_CRASH_KILLS=200 pytest tests/e2e/test_crash.py``). docs/testing.md
lists them all.
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["LONG", "count", "examples", "seconds", "soak", "soaking"]

LONG: dict[str, str] = {
    # kill -9 of the daemon (tests/e2e/test_crash.py); the etcd form kills as often
    "PODIUM_CRASH_KILLS": "20",
    # kill -9 of a gang binder and of the daemon binding gangs (test_gang_crash.py,
    # test_gang_daemon_crash.py)
    "PODIUM_GANG_KILLS": "20",
    # leader changes while gangs are bound (test_gang_failover.py)
    "PODIUM_GANG_FAILOVERS": "4",
    # kill -9 of the leader replica under load (test_replicas.py)
    "PODIUM_REPLICA_KILLS": "10",
    # sustained load (test_sustained.py)
    "PODIUM_SUSTAINED_SECONDS": "60",
    # the protocol fuzz tests (tests/support/frame_fuzzing.py, random examples when set)
    "PODIUM_FUZZ_EXAMPLES": "1000",
    # the nemesis on replicas and a faulty etcd (test_nemesis.py): off by default
    "PODIUM_NEMESIS": "1",
}
"""The long form of every variable, what ``PODIUM_SOAK=1`` sets."""


def soaking() -> bool:
    """``PODIUM_SOAK=1``: every long run in its long form."""
    return os.environ.get("PODIUM_SOAK") == "1"


def soak() -> None:
    """Under ``PODIUM_SOAK=1``, set every variable of :data:`LONG` not already set."""
    if soaking():
        for name, value in LONG.items():
            os.environ.setdefault(name, value)


def count(name: str, short: int) -> int:
    """The whole number in environment variable ``name``, ``short`` when it is unset or empty.

    Raises:
        ValueError: it is set to something else than a whole number of at least 1; the
            message names the variable.
    """
    return int(_read(name, short, int, "not a whole number", (1, "must be at least 1")))


def seconds(name: str, short: float) -> float:
    """The seconds in environment variable ``name``, ``short`` when it is unset or empty.

    Raises:
        ValueError: it is not a positive number; the message names the variable.
    """
    return _read(name, short, float, "not a number of seconds", (0, "must be more than 0 seconds"))


def _read(
    name: str,
    short: float,
    parse: Callable[[str], float],
    unreadable: str,
    least: tuple[float, str],
) -> float:
    """The variable parsed, refused with ``unreadable`` or below ``least`` (a number it must
    reach, and above 0 when that is 0), its message naming the variable."""
    value = os.environ.get(name, "")
    if not value:
        return short
    try:
        number = parse(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}: {unreadable}") from None
    smallest, too_small = least
    if number < smallest or not number > 0:
        raise ValueError(f"{name}={value!r}: {too_small}")
    return number


def examples(short: int, long: int) -> int:
    """A property test's Hypothesis ``max_examples``: ``PODIUM_PROPERTY_EXAMPLES`` when set,
    ``long`` under ``PODIUM_SOAK=1``, else ``short`` (the fuzz tests have their own variable,
    ``PODIUM_FUZZ_EXAMPLES``: tests/support/frame_fuzzing.py)."""
    return count("PODIUM_PROPERTY_EXAMPLES", long if soaking() else short)
