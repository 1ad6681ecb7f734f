"""Go's duration strings (protocol/duration.py) and the ``podium serve`` flags that take them.

Rows of ``parseDurationTests`` and ``parseDurationErrorTests`` keep Go's inputs
(golang/go src/time/time_test.go).
"""

from __future__ import annotations

import pytest

from podium.cli.config import configured
from podium.cli.main import build_parser
from podium.protocol.duration import duration_nanoseconds, parse_seconds

SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

# golang/go src/time/time_test.go parseDurationTests.
GO_DURATIONS = [
    ("0", 0),
    ("5s", 5 * SECOND),
    ("30s", 30 * SECOND),
    ("1478s", 1478 * SECOND),
    ("-5s", -5 * SECOND),
    ("+5s", 5 * SECOND),
    ("-0", 0),
    ("+0", 0),
    ("5.0s", 5 * SECOND),
    ("5.6s", 5 * SECOND + 600_000_000),
    ("5.s", 5 * SECOND),
    (".5s", 500_000_000),
    ("1.0s", SECOND),
    ("1.00s", SECOND),
    ("1.004s", SECOND + 4_000_000),
    ("1.0040s", SECOND + 4_000_000),
    ("100.00100s", 100 * SECOND + 1_000_000),
    ("10ns", 10),
    ("11us", 11_000),
    ("12\u00b5s", 12_000),
    ("12\u03bcs", 12_000),
    ("13ms", 13_000_000),
    ("14s", 14 * SECOND),
    ("15m", 15 * MINUTE),
    ("16h", 16 * HOUR),
    ("3h30m", 3 * HOUR + 30 * MINUTE),
    ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500_000_000),
    ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400_000_000)),
    ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4_000_000 + 5_000 + 6),
    ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425_000_000),
    ("52763797000ns", 52763797000),
    ("0.3333333333333333333h", 20 * MINUTE),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)),
    ("1m30s", 90 * SECOND),
]


@pytest.mark.parametrize(("text", "want"), GO_DURATIONS)
def test_go_durations(text: str, want: int) -> None:
    assert duration_nanoseconds(text) == want


# golang/go src/time/time_test.go parseDurationErrorTests, with Go's messages.
GO_ERRORS = [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("9223372036854775810ns", 'time: invalid duration "9223372036854775810ns"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
]


@pytest.mark.parametrize(("text", "want"), GO_ERRORS)
def test_go_duration_errors(text: str, want: str) -> None:
    with pytest.raises(ValueError, match=r"^time: ") as caught:
        duration_nanoseconds(text)
    assert str(caught.value) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [("15", 15.0), ("0.5", 0.5), (" 2 ", 2.0), ("15s", 15.0), ("1m30s", 90.0), ("500ms", 0.5)],
)
def test_seconds_or_a_duration(text: str, want: float) -> None:
    assert parse_seconds(text) == want


def test_neither_seconds_nor_a_duration_says_what_is_expected() -> None:
    with pytest.raises(ValueError, match=r"^expected a duration") as caught:
        parse_seconds("1e3")
    assert str(caught.value) == (
        "expected a duration such as 15s, 1m30s or 500ms, or seconds, got '1e3' "
        '(time: unknown unit "e" in duration "1e3")'
    )
    with pytest.raises(ValueError, match="too large"):
        parse_seconds("9" * 400)


def test_the_leader_election_flags_take_kubernetes_durations() -> None:
    args = build_parser().parse_args(
        [
            "serve",
            "--leader-elect-lease-duration",
            "1m30s",
            "--leader-elect-renew-deadline",
            "20",
            "--leader-elect-retry-period",
            "500ms",
        ]
    )
    election = configured(args).podium.leader_election
    assert (
        election.lease_duration_seconds,
        election.renew_deadline_seconds,
        election.retry_period_seconds,
    ) == (90.0, 20.0, 0.5)


@pytest.mark.parametrize(
    ("flag", "value", "why"),
    [
        ("--leader-elect-lease-duration", "15x", 'unknown unit "x" in duration "15x"'),
        ("--leader-elect-renew-deadline", "0s", "expected a duration above 0, got '0s'"),
        ("--leader-elect-retry-period", "-2s", "expected a duration above 0, got '-2s'"),
    ],
)
def test_a_bad_duration_flag_is_a_usage_error_naming_the_flag(
    flag: str, value: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["serve", f"{flag}={value}"])
    assert caught.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"podium serve: error: argument {flag}: ")
    assert why in last
