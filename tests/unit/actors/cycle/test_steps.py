"""What the scheduler's two paths share (actors/cycle/steps.py): how many pods a batch pops."""

from __future__ import annotations

import pytest

from podium.actors.cycle.steps import PopSize


def test_before_any_batch_it_pops_the_most_a_batch_takes() -> None:
    assert PopSize(max_pods=32, max_seconds=0.02).next() == 32


def test_it_pops_what_the_bound_leaves_room_for_after_the_refresh() -> None:
    """A 2 ms refresh and 3.1 ms decisions in a 20 ms bound: pods start at 2, 5.1, ... 17.5
    ms, and the one that would start at 20.6 ms goes back: six are decided, so six are
    popped."""
    size = PopSize(max_pods=32, max_seconds=0.02)
    size.observe(refresh=0.002, deciding=0.0186, decided=6)
    assert size.next() == 6


def test_it_pops_at_least_one_and_at_most_max_pods() -> None:
    slow = PopSize(max_pods=32, max_seconds=0.02)
    slow.observe(refresh=0.001, deciding=0.5, decided=1)
    assert slow.next() == 1
    fast = PopSize(max_pods=32, max_seconds=0.02)
    fast.observe(refresh=0.001, deciding=0.0001, decided=10)
    assert fast.next() == 32


def test_a_refresh_that_takes_the_bound_leaves_room_for_the_first_pod_only() -> None:
    size = PopSize(max_pods=32, max_seconds=0.02)
    size.observe(refresh=0.03, deciding=0.0, decided=1)
    assert size.next() == 1


def test_decisions_that_take_no_time_pop_the_most_a_batch_takes() -> None:
    """podium simulate's virtual clock: nothing takes time, batches are as big as allowed."""
    size = PopSize(max_pods=16, max_seconds=0.02)
    size.observe(refresh=0.0, deciding=0.0, decided=16)
    assert size.next() == 16


def test_a_batch_that_decided_nothing_is_no_measure() -> None:
    size = PopSize(max_pods=32, max_seconds=0.02)
    size.observe(refresh=0.5, deciding=0.0, decided=0)
    assert size.next() == 32


def test_each_new_batch_moves_the_measure_by_its_weight() -> None:
    size = PopSize(max_pods=64, max_seconds=0.02)
    size.observe(refresh=0.0, deciding=0.004, decided=2)  # 2 ms a pod: 10 fit
    assert size.next() == 10
    size.observe(refresh=0.0, deciding=0.001, decided=1)  # 1 ms a pod
    assert size.decision == pytest.approx(0.002 + PopSize.WEIGHT * (0.001 - 0.002))
    assert size.next() == 12  # ceil(20 / 1.75)
