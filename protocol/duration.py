"""Durations as Kubernetes spells them (``15s``, ``1m30s``, ``500ms``), or plain seconds.

Kubernetes counterpart: Go's ``time.ParseDuration`` (src/time/format.go), which kube-scheduler's
duration flags (``--leader-elect-lease-duration``, pflag's ``DurationVar``) and
``metav1.Duration`` fields parse with. Its grammar, from its doc comment: "A duration string is
a possibly signed sequence of decimal numbers, each with optional fraction and a unit suffix,
such as "300ms", "-1.5h" or "2h45m". Valid time units are "ns", "us" (or "µs"), "ms", "s", "m",
"h"." — and ``"0"`` alone needs no unit. The error messages are Go's.

Podium's flags and ``*Seconds`` keys also keep taking a plain number of seconds (``15``,
``0.5``), which Go's grammar refuses ("missing unit").
"""

from __future__ import annotations

import math
import re

__all__ = ["duration_nanoseconds", "parse_duration", "parse_seconds"]

_UNIT_NANOSECONDS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # U+00B5 micro sign
    "\u03bcs": 1_000,  # U+03BC Greek letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_NUMBER = re.compile(r"([0-9]*)(\.([0-9]*))?")
_UNIT = re.compile(r"[^0-9.]*")
_PLAIN_SECONDS = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")
_MAX_NANOSECONDS = 2**63 - 1
"""Go's Duration is an int64 of nanoseconds: about 292 years."""


def duration_nanoseconds(text: str) -> int:
    """The nanoseconds of a Go duration string, exactly as ``time.ParseDuration`` reads it.

    Raises:
        ValueError: not Go's grammar; the message is Go's (``time: invalid duration "15x"``,
            ``time: missing unit in duration "15"``, ``time: unknown unit "d" in duration "2d"``).
    """
    quoted = '"' + text + '"'
    rest, negative = text, False
    if rest[:1] in ("-", "+") and rest:
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f"time: invalid duration {quoted}")
    total = 0
    while rest:
        number = _NUMBER.match(rest)
        assert number is not None  # (every part of the pattern may be empty)
        whole, fraction = number.group(1), number.group(3) or ""
        if not whole and not fraction:  # the next character must be [0-9.], with a digit
            raise ValueError(f"time: invalid duration {quoted}")
        rest = rest[number.end() :]
        unit = _UNIT.match(rest)
        assert unit is not None
        name = unit.group()
        rest = rest[unit.end() :]
        if not name:
            raise ValueError(f"time: missing unit in duration {quoted}")
        scale = _UNIT_NANOSECONDS.get(name)
        if scale is None:
            raise ValueError(f'time: unknown unit "{name}" in duration {quoted}')
        total += int(whole or 0) * scale
        if fraction:
            # As Go: the fraction in floating point, truncated to whole nanoseconds.
            total += int(float(int(fraction)) * (scale / 10 ** len(fraction)))
        if total > _MAX_NANOSECONDS + negative:  # (int64's least value is one further)
            raise ValueError(f"time: invalid duration {quoted}")
    return -total if negative else total


def parse_duration(text: str) -> float:
    """The seconds of a Go duration string (``1m30s`` is 90.0, ``-1.5h`` is -5400.0).

    Raises:
        ValueError: as :func:`duration_nanoseconds`.
    """
    return duration_nanoseconds(text) / 1e9


def parse_seconds(text: str) -> float:
    """Plain seconds (``15``, ``0.5``) or a Go duration (``15s``, ``1m30s``, ``500ms``).

    Raises:
        ValueError: neither, saying what is expected.
    """
    text = text.strip()
    if _PLAIN_SECONDS.fullmatch(text):
        value = float(text)
    else:
        try:
            value = parse_duration(text)
        except ValueError as exc:
            raise ValueError(
                f"expected a duration such as 15s, 1m30s or 500ms, or seconds, got {text!r} ({exc})"
            ) from None
    if not math.isfinite(value):  # (a number of hundreds of digits)
        raise ValueError(f"expected a duration or seconds, got {text!r}: too large")
    return value
