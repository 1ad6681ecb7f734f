"""The stop signals alone, under the autojump clock (virtual times compared exactly): the first
signal stops the parts in order and gives the services exactly the grace period; a second cuts
it short at once; services that drain in time are not cancelled. Signals come from a memory
channel, as trio's receiver hands them over; one test sends itself a real SIGTERM."""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass

import pytest
import trio
import trio.testing

from podium.actors.daemon.signals import stop_on_signal, stop_signals

GRACE_SECONDS = 30.0


@dataclass
class Part:
    name: str
    stopped: list[str]

    def stop(self) -> None:
        self.stopped.append(self.name)


async def _send_at(at: float, channel: trio.MemorySendChannel[int], signum: int) -> None:
    await trio.sleep_until(at)
    channel.send_nowait(signum)


async def _shut_down(
    *, drain_seconds: float, signals_at: list[tuple[float, int]]
) -> tuple[float, bool, list[str]]:
    """Serve until a signal with services that take ``drain_seconds`` to drain; the time they
    ended, whether they were cut short, and the parts stopped."""
    stopped: list[str] = []
    parts = [Part("readiness", stopped), Part("gateway", stopped), Part("runtime", stopped)]
    signals_tx, signals_rx = trio.open_memory_channel[int](2)
    async with trio.open_nursery() as outer:
        for at, signum in signals_at:
            outer.start_soon(_send_at, at, signals_tx, signum)
        async with trio.open_nursery() as services:
            draining = trio.Event()

            async def service() -> None:
                await draining.wait()
                await trio.sleep(drain_seconds)

            services.start_soon(service)
            await stop_on_signal(signals_rx, parts, services.cancel_scope, GRACE_SECONDS, outer)
            assert services.cancel_scope.deadline == trio.current_time() + GRACE_SECONDS
            draining.set()
        ended = trio.current_time()
        outer.cancel_scope.cancel("shut down")
    return ended, services.cancel_scope.cancelled_caught, stopped


async def test_the_first_signal_stops_the_parts_and_the_grace_period_cuts_the_rest(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="podium.serve")
    ended, cut_short, stopped = await _shut_down(
        drain_seconds=100.0, signals_at=[(5.0, signal.SIGTERM)]
    )
    assert stopped == ["readiness", "gateway", "runtime"]
    assert (ended, cut_short) == (5.0 + GRACE_SECONDS, True)
    assert [r.getMessage() for r in caplog.records] == ["received SIGTERM: shutting down"]


async def test_services_that_drain_in_time_are_not_cut_short(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ended, cut_short, _ = await _shut_down(drain_seconds=10.0, signals_at=[(5.0, signal.SIGINT)])
    assert (ended, cut_short) == (15.0, False)


async def test_a_second_signal_cancels_at_once(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="podium.serve")
    ended, cut_short, stopped = await _shut_down(
        drain_seconds=100.0, signals_at=[(5.0, signal.SIGTERM), (7.0, signal.SIGINT)]
    )
    assert (ended, cut_short) == (7.0, True)
    assert stopped == ["readiness", "gateway", "runtime"]  # once each
    assert [r.getMessage() for r in caplog.records] == [
        "received SIGTERM: shutting down",
        "received SIGINT again: stopping now",
    ]


async def test_stop_signals_are_received_then_ignored_once_closed() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with trio.fail_after(10):
            with stop_signals() as signals:
                os.kill(os.getpid(), signal.SIGTERM)
                async for signum in signals:
                    assert signum == signal.SIGTERM
                    break
            # The process is exiting now: a late signal must not kill it.
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
