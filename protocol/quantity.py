"""The Kubernetes resource quantity grammar, exactly.

Grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go)::

    <quantity>        ::= <signedNumber><suffix>
    <signedNumber>    ::= <number> | <sign><number>
    <sign>            ::= "+" | "-"
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>

Values are kept as exact fractions. ``Value()`` and ``MilliValue()`` round up, as
Kubernetes does, and saturate at the int64 range.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

from podium.protocol.errors import ErrorCode, PodiumError

__all__ = ["INT64_MAX", "Quantity", "QuantityError", "parse_quantity"]

INT64_MAX = (1 << 63) - 1

_BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
_DECIMAL = {
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_QUANTITY = re.compile(
    rf"(?P<num>{_NUMBER})(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?[0-9]+)|(?P<dec>[mkMGTPE]?))"
)
# An exponent beyond this cannot describe a real resource and would make fractions huge.
_MAX_EXPONENT = 64
# Likewise a number with more digits (Kubernetes keeps at most 19 significant ones and
# nanounits).
_MAX_DIGITS = 128
_MAX_SHOWN = 64


class QuantityError(PodiumError, ValueError):
    """A string that is not a Kubernetes quantity (or a negative one, which Podium refuses).

    Also a ValueError: msgspec turns one raised while decoding into a ValidationError with the
    field's path, and parsers of command-line values catch it as such.
    """

    code: ErrorCode = "invalid"


class Quantity:
    """An exact resource quantity, keeping the text it was written as.

    Args:
        text: the quantity as written, e.g. ``"100m"``, ``"1.5Gi"``, ``"2e3"``.

    Raises:
        QuantityError: the text does not follow the grammar, or is negative.
    """

    __slots__ = ("_int", "_milli", "text", "value")

    def __init__(self, text: str) -> None:
        self.text = text
        self.value = parse_quantity(text)
        # Both are asked for on every pod a node takes; Fraction arithmetic costs ~5 us.
        self._milli = min(math.ceil(self.value * 1000), INT64_MAX)
        self._int = min(math.ceil(self.value), INT64_MAX)

    def milli_value(self) -> int:
        """The value in thousandths, rounded up (Kubernetes ``MilliValue``)."""
        return self._milli

    def int_value(self) -> int:
        """The value rounded up to an integer (Kubernetes ``Value``)."""
        return self._int

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"

    def __str__(self) -> str:
        return self.text


@functools.lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Fraction:
    """Parse a quantity string into an exact non-negative fraction.

    Cached: a cluster repeats a few dozen quantities ("100m", "1Gi") over thousands of objects,
    and Fractions are immutable.

    Raises:
        QuantityError: naming the text and what is wrong with it.
    """
    shown = _shown(text)
    m = _QUANTITY.fullmatch(text)
    if m is None:
        raise QuantityError(
            f"quantity {shown} does not match the Kubernetes quantity grammar "
            "(e.g. '100m', '1.5', '1Gi', '2e3', '500M')"
        )
    if len(m["num"]) > _MAX_DIGITS or (m["exp"] is not None and len(m["exp"]) > _MAX_DIGITS):
        # Also keeps int() under Python's 4300-digit limit (a ValueError, not ours).
        raise QuantityError(f"quantity {shown} has more than {_MAX_DIGITS} digits")
    number = (
        Fraction(m["num"].rstrip(".") or "0")
        if m["num"].rstrip(".") not in ("", "+", "-")
        else None
    )
    if number is None:
        raise QuantityError(f"quantity {shown} has no digits")
    if m["bin"]:
        value = number * _BINARY[m["bin"]]
    elif m["exp"] is not None:
        exponent = int(m["exp"])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"quantity {shown} has an exponent beyond ±{_MAX_EXPONENT}")
        value = number * Fraction(10) ** exponent
    else:
        value = number * _DECIMAL[m["dec"] or ""]
    if value < 0:
        raise QuantityError(f"quantity {shown} is negative")
    return value


def _shown(text: str) -> str:
    """``text`` quoted for a message, cut short when a client sent a long one."""
    if len(text) <= _MAX_SHOWN:
        return repr(text)
    return f"{text[:_MAX_SHOWN]!r}... ({len(text)} characters)"
