"""The long runs' variables (tests/support/long_runs.py): a short form by default, the long
form under ``PODIUM_SOAK=1`` unless a variable is set by hand, and a bad value refused naming
its variable (a typo must not silently run the short form)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from operator import attrgetter

import pytest
from long_runs import LONG, count, examples, seconds, soak

VARIABLE = "PODIUM_TEST_LONG_RUNS_KNOB"


@dataclass(frozen=True)
class Case:
    name: str
    value: str | None
    want: int | None
    error: str = ""


COUNTS = [
    Case("unset: the short form", None, 3),
    Case("empty: the short form", "", 3),
    Case("a whole number", "12", 12),
    Case("not a number", "twelve", None, f"{VARIABLE}='twelve': not a whole number"),
    Case("a fraction", "1.5", None, f"{VARIABLE}='1.5': not a whole number"),
    Case("zero", "0", None, f"{VARIABLE}='0': must be at least 1"),
]


@pytest.mark.parametrize("case", COUNTS, ids=attrgetter("name"))
def test_count_reads_its_variable_or_names_it(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    if case.value is None:
        monkeypatch.delenv(VARIABLE, raising=False)
    else:
        monkeypatch.setenv(VARIABLE, case.value)
    if case.error:
        with pytest.raises(ValueError, match="^" + case.error.replace(".", r"\.") + "$"):
            count(VARIABLE, 3)
    else:
        assert count(VARIABLE, 3) == case.want


def test_seconds_reads_its_variable_or_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)
    assert seconds(VARIABLE, 4) == 4
    monkeypatch.setenv(VARIABLE, "2.5")
    assert seconds(VARIABLE, 4) == 2.5
    monkeypatch.setenv(VARIABLE, "soon")
    with pytest.raises(ValueError, match=f"^{VARIABLE}='soon': not a number of seconds$"):
        seconds(VARIABLE, 4)
    monkeypatch.setenv(VARIABLE, "-1")
    with pytest.raises(ValueError, match=f"^{VARIABLE}='-1': must be more than 0 seconds$"):
        seconds(VARIABLE, 4)


def test_soak_sets_the_long_form_of_every_variable_not_set_by_hand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in LONG:
        monkeypatch.delenv(name, raising=False)  # restored after the test, whatever soak sets
    monkeypatch.setenv("PODIUM_CRASH_KILLS", "7")
    monkeypatch.delenv("PODIUM_SOAK", raising=False)
    soak()
    assert [name for name in LONG if name in os.environ] == ["PODIUM_CRASH_KILLS"]
    monkeypatch.setenv("PODIUM_SOAK", "1")
    soak()
    assert count("PODIUM_CRASH_KILLS", 4) == 7  # set by hand: kept
    assert count("PODIUM_GANG_KILLS", 4) == int(LONG["PODIUM_GANG_KILLS"])
    assert count("PODIUM_GANG_KILLS", 4) > 4


def test_examples_are_short_long_under_soak_or_as_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PODIUM_PROPERTY_EXAMPLES", raising=False)
    monkeypatch.delenv("PODIUM_SOAK", raising=False)
    assert examples(20, 60) == 20
    monkeypatch.setenv("PODIUM_SOAK", "1")
    assert examples(20, 60) == 60
    monkeypatch.setenv("PODIUM_PROPERTY_EXAMPLES", "5")
    assert examples(20, 60) == 5
