"""Sustained load (podium.cli.bench.loadgen): writers and watchers on a real daemon, then every
check. CI runs a short, narrow form (4 s; 60 s under ``PODIUM_SOAK=1``:
tests/support/long_runs.py); the long one is ``ops/sustained-load.py`` or this test::

    PODIUM_SUSTAINED_SECONDS=300 PODIUM_SUSTAINED_WRITERS=50 PODIUM_SUSTAINED_WATCHERS=20 \\
        PODIUM_SUSTAINED_NODES=500 pytest tests/e2e/test_sustained.py -s

The checker's own tests come first: a checker that cannot fail proves nothing.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from long_runs import count, seconds

from podium.cli.bench.loadgen import Ledger, LoadReport, LoadSpec, WatchCheck, run
from podium.protocol.wire import Event, EventType

SECONDS = seconds("PODIUM_SUSTAINED_SECONDS", 4)
WRITERS = count("PODIUM_SUSTAINED_WRITERS", 10)
WATCHERS = count("PODIUM_SUSTAINED_WATCHERS", 4)
NODES = count("PODIUM_SUSTAINED_NODES", 100)


def _ev(revision: int, type_: EventType = "Added", name: str = "p") -> Event:
    return Event(id=1, revision=revision, type=type_, kind="Pod", namespace="ns", name=name)


@dataclass(frozen=True)
class Case:
    name: str
    revisions: list[int]
    violations: int


CASES = [
    Case("in order", [11, 12, 13], 0),
    Case("a gap", [11, 13], 1),
    Case("a repeat", [11, 12, 12, 13], 1),
    Case("out of order", [11, 13, 12], 2),  # 12 missing when 13 came, then 12 late
    Case("before the start", [10], 1),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_watcher_must_see_each_revision_once_in_order(case: Case) -> None:
    ledger = Ledger(start=10)
    check = WatchCheck("watcher 0", ledger, position=10)
    for r in case.revisions:
        check.event(_ev(r, name=f"p{r}"))
    assert ledger.violations.count == case.violations, ledger.violations.messages


def test_observers_must_agree_on_each_revision() -> None:
    ledger = Ledger(start=0)
    ledger.observe(1, "Added", "Pod", "ns", "p1", "writer 0")  # the writer's ack came first
    WatchCheck("watcher 0", ledger, 0).event(_ev(1, name="p1"))
    assert ledger.violations.count == 0
    WatchCheck("watcher 1", ledger, 0).event(_ev(1, "Deleted", name="p1"))
    assert ledger.violations.count == 1
    assert ledger.unobserved(through=1) == 0
    assert ledger.unobserved(through=3) == 2


def test_a_cut_off_must_resume_where_the_watcher_stopped() -> None:
    ledger = Ledger(start=0)
    check = WatchCheck("watcher 0", ledger, 0)
    check.event(_ev(1))
    assert check.cut_off(1) == 1
    assert ledger.violations.count == 0
    assert check.cut_off(0) == 0  # would replay revision 1
    assert (check.cutoffs, ledger.violations.count) == (2, 1)


@pytest.mark.parametrize(
    ("seconds", "last_mib", "leaks"),
    [(300, 105, False), (300, 111, True), (300, 89, True), (60, 200, False)],
)
def test_rss_at_the_end_within_ten_percent_of_minute_one(
    seconds: float, last_mib: int, leaks: bool
) -> None:
    """100 MiB at minute 1 (the middle of a shorter run, which is not checked), 80 elsewhere."""
    report = LoadReport(LoadSpec(seconds=seconds), seconds=seconds)
    at = min(60, seconds / 2)
    report.rss = [(t, (100 if t == at else 80) << 20) for t in range(0, int(seconds), 10)]
    report.rss.append((seconds, last_mib << 20))
    assert (report.rss_violation() is not None) == leaks


def test_sustained_load_loses_repeats_and_fails_nothing() -> None:
    spec = LoadSpec(seconds=SECONDS, writers=WRITERS, watchers=WATCHERS, nodes=NODES)
    report = run(spec, progress=print)
    summary = "\n".join(report.lines())
    print(f"\n{summary}")
    assert report.ok, summary
    assert report.changes > 0 and report.deletes > 0 and report.updates > 0
    assert report.events == WATCHERS * (report.final_revision - report.start_revision)
    assert report.types["Bound"] > 0
    assert len(report.rss) >= 2


def test_the_ops_script_starts() -> None:
    script = Path(__file__).resolve().parents[2] / "ops" / "sustained-load.py"
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "--warmup-revisions" in done.stdout
