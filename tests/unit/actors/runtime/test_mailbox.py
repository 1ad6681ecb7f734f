"""actors/runtime/mailbox.py: drain, receive_batch and StepBudget, under trio's autojump clock
(virtual times exact)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from podium.actors.runtime.mailbox import StepBudget, drain, receive_batch

TIME_LIMIT = 100.0  # virtual seconds: a hung test fails instead of jumping forever


async def test_drain_takes_what_waits_up_to_the_limit() -> None:
    tx, rx = trio.open_memory_channel[int](10)
    for i in range(5):
        tx.send_nowait(i)
    assert drain(rx, 2) == [0, 1]
    assert drain(rx) == [2, 3, 4]
    assert drain(rx) == []


async def test_receive_batch_takes_the_first_then_everything_waiting() -> None:
    tx, rx = trio.open_memory_channel[int](10)
    for i in range(3):
        tx.send_nowait(i)
    with trio.fail_after(TIME_LIMIT):
        assert await receive_batch(rx) == [0, 1, 2]


async def test_receive_batch_limit_counts_the_first() -> None:
    tx, rx = trio.open_memory_channel[int](10)
    for i in range(5):
        tx.send_nowait(i)
    with trio.fail_after(TIME_LIMIT):
        assert await receive_batch(rx, limit=3) == [0, 1, 2]
        assert await receive_batch(rx, limit=3) == [3, 4]


async def test_receive_batch_waits_for_the_first(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tx, rx = trio.open_memory_channel[int](10)

    async def later() -> None:
        await trio.sleep(7)
        tx.send_nowait(1)
        tx.send_nowait(2)

    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(later)
            assert await receive_batch(rx) == [1, 2]
            assert trio.current_time() == 7


async def test_receive_batch_gives_an_empty_batch_at_the_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    tx, rx = trio.open_memory_channel[int](10)
    with trio.fail_after(TIME_LIMIT):
        assert await receive_batch(rx, deadline=5) == []
    assert trio.current_time() == 5
    # A deadline already passed wins over waiting mail: the caller's timers run first.
    tx.send_nowait(1)
    with trio.fail_after(TIME_LIMIT):
        assert await receive_batch(rx, deadline=5) == []
        assert await receive_batch(rx, deadline=6) == [1]
    assert trio.current_time() == 5


async def test_receive_batch_gives_none_once_closed_and_empty() -> None:
    tx, rx = trio.open_memory_channel[int](10)
    tx.send_nowait(1)
    tx.close()
    with trio.fail_after(TIME_LIMIT):
        assert await receive_batch(rx) == [1]
        assert await receive_batch(rx) is None
        assert await receive_batch(rx, deadline=trio.current_time() + 1) is None


async def test_step_budget_lets_other_tasks_in_only_every_size_units() -> None:
    done = 0
    seen: list[int] = []
    finished = trio.Event()

    async def work() -> None:
        nonlocal done
        budget = StepBudget(8)
        for _ in range(100):
            done += 1
            await budget.spend()
        finished.set()

    async def watch() -> None:
        while not finished.is_set():
            seen.append(done)
            await trio.lowlevel.checkpoint()

    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            nursery.start_soon(work)
    # The other task ran only at the pauses (after 8, 16, ..., 96 units), and at several.
    assert set(seen) <= set(range(0, 100, 8))
    assert len(set(seen) - {0}) >= 6


async def test_step_budget_counts_units_and_pauses_without_a_cancel_point() -> None:
    budget = StepBudget(10)
    with trio.CancelScope() as scope:
        scope.cancel()
        await budget.spend(4)
        await budget.spend(6)  # the pause: a schedule point, so the cancellation waits
        await budget.spend(25)
        reached = True
        await trio.lowlevel.checkpoint()
        reached = False
    assert reached and scope.cancelled_caught


def test_step_budget_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="StepBudget size must be at least 1, got 0"):
        StepBudget(0)
