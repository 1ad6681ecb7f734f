"""What the scheduler's two paths share (actors/cycle/steps.py): how many pods a batch pops."""

from __future__ import annotations

import pytest

from podium.actors.cycle.steps import PopSize


def test_before_any_batch_it_pops_the_most_a_batch_takes() -> None:
    assert PopSize(max_pods=32, max_seconds=0.02).next() == 32


@pytest.mark.parametrize(
    ("refresh", "deciding", "decided", "pops"),
    [
        # A 2 ms refresh and 3.1 ms decisions in a 20 ms bound: pods start at 2, 5.1, ...
        # 17.5 ms, and the one that would start at 20.6 ms goes back: six are popped.
        (0.002, 0.0186, 6, 6),
        (0.001, 0.5, 1, 1),  # slower than the bound: at least one
        (0.001, 0.0001, 10, 32),  # faster: at most max_pods
        (0.03, 0.0, 1, 1),  # the refresh alone took the bound: the first pod only
        # podium simulate's virtual clock: nothing takes time, batches are as big as allowed.
        (0.0, 0.0, 16, 32),
        (0.5, 0.0, 0, 32),  # a batch that decided nothing is no measure
    ],
)
def test_it_pops_what_the_bound_leaves_room_for_after_the_refresh(
    refresh: float, deciding: float, decided: int, pops: int
) -> None:
    size = PopSize(max_pods=32, max_seconds=0.02)
    size.observe(refresh=refresh, deciding=deciding, decided=decided)
    assert size.next() == pops


def test_each_new_batch_moves_the_measure_by_its_weight() -> None:
    size = PopSize(max_pods=64, max_seconds=0.02)
    size.observe(refresh=0.0, deciding=0.004, decided=2)  # 2 ms a pod: 10 fit
    assert size.next() == 10
    size.observe(refresh=0.0, deciding=0.001, decided=1)  # 1 ms a pod
    assert size.decision == pytest.approx(0.002 + PopSize.WEIGHT * (0.001 - 0.002))
    assert size.next() == 12  # ceil(20 / 1.75)


@pytest.mark.parametrize(
    ("max_seconds", "decision"),
    [
        (float("inf"), 0.01),  # batchMaxSeconds: .inf in a config file: no time bound
        (1e308, 0.001),  # a quotient that overflows a float
        (0.05, 2.5e-310),  # a decision worn down to a subnormal by zero-time batches
    ],
)
def test_a_bound_with_room_for_every_pod_pops_the_most_without_overflowing(
    max_seconds: float, decision: float
) -> None:
    """The review's case: `math.ceil(inf)` raised OverflowError in the scheduler's Pop."""
    size = PopSize(max_pods=32, max_seconds=max_seconds)
    size.observe(refresh=0.001, deciding=decision, decided=1)
    assert size.next() == 32


def test_zero_time_batches_after_a_measured_one_keep_popping_the_most() -> None:
    size = PopSize(max_pods=32, max_seconds=0.05)
    size.observe(refresh=0.0, deciding=0.01, decided=1)
    for _ in range(3000):
        size.observe(refresh=0.0, deciding=0.0, decided=5)
    assert size.next() == 32
