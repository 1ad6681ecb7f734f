"""actors/runtime/mailbox.py: drain and receive_batch, under trio's autojump clock (virtual times exact)."""

from __future__ import annotations

import trio
import trio.testing

from podium.actors.runtime.mailbox import drain, receive_batch

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
