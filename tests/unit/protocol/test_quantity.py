"""The Kubernetes quantity grammar (resource/quantity_test.go cases, rounded as Value/MilliValue)."""

from __future__ import annotations

import re

import pytest

from podium.protocol.quantity import INT64_MAX, Quantity, QuantityError

VALID = [
    # text, milli_value, int_value
    ("0", 0, 0),
    ("100m", 100, 1),
    ("1", 1000, 1),
    ("1.5", 1500, 2),
    ("1.", 1000, 1),
    (".5", 500, 1),
    ("+1", 1000, 1),
    ("1k", 1_000_000, 1000),
    ("500M", 500_000_000_000, 500_000_000),
    ("1Ki", 1_024_000, 1024),
    ("1Gi", 1_073_741_824_000, 1_073_741_824),
    ("5.5Mi", 5_767_168_000, 5_767_168),
    ("2e3", 2_000_000, 2000),
    ("1E3", 1_000_000, 1000),
    ("1e-3", 1, 1),
    ("1E", INT64_MAX, 10**18),  # 10**21 millis saturate at int64
    ("1m", 1, 1),
    ("0.0001", 1, 1),  # MilliValue rounds up
    ("8Ei", INT64_MAX, INT64_MAX),  # saturates at int64
]


@pytest.mark.parametrize(("text", "milli", "value"), VALID, ids=[v[0] for v in VALID])
def test_valid_quantities(text: str, milli: int, value: int) -> None:
    q = Quantity(text)
    assert q.milli_value() == milli
    assert q.int_value() == value
    assert str(q) == text


INVALID = [
    "",
    " 1",
    "1 ",
    "abc",
    "1Gb",
    "1.2.3",
    "e3",
    "1e",
    "m",
    "Ki",
    "1ki",
    "1.5.Mi",
    "--1",
    "1e1000",
    "0x10",
    "1\n",
]


@pytest.mark.parametrize("text", INVALID)
def test_invalid_quantities_are_rejected_naming_the_text(text: str) -> None:
    with pytest.raises(QuantityError, match=re.escape(repr(text))):
        Quantity(text)


def test_negative_quantities_are_rejected() -> None:
    with pytest.raises(QuantityError, match="is negative"):
        Quantity("-1")


def test_equal_values_compare_equal_whatever_the_spelling() -> None:
    assert Quantity("1000m") == Quantity("1") == Quantity("1e0")
    assert Quantity("1Ki") != Quantity("1k")
