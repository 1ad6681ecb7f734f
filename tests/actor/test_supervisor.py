"""The supervisor reports the actor failure that is the cause, not its echoes.

CI once saw a deleted database stop the daemon with a traceback and exit 1 instead of exit 3:
the store failed (DatabaseDamaged) and closed its inbox, and the scheduler, already woken, sent
to it with ``send_nowait``, which has no checkpoint, so the cancellation had not landed yet; the
BrokenResourceError went up beside the cause and ``podium serve`` no longer recognised it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import pytest
import trio

from podium.actors.supervisor.supervisor import Runtime, load_plugin_set
from podium.protocol.config import SchedulerConfig
from podium.protocol.errors import DatabaseDamaged
from podium.store.actor import StoreActor
from podium.store.core import StoreCore
from podium.store.mail import Published, StoreMsg
from podium.store.memory import memory_store


def _store(
    inbox: trio.MemoryReceiveChannel[StoreMsg],
    subscribers: Sequence[trio.MemorySendChannel[Published]],
) -> StoreActor:
    return memory_store(inbox, subscribers, StoreCore())


def _runtime() -> Runtime:
    config = SchedulerConfig()
    return Runtime(config, load_plugin_set(config), _store, seed=1)


async def _fail_after_closing(
    inbox: trio.MemoryReceiveChannel[int],
    peer_waiting: trio.Event,
    woken: trio.Event,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    task_status.started()
    await peer_waiting.wait()
    inbox.close()
    woken.set()  # the peer is rescheduled now, before the nursery's cancellation can reach it
    raise DatabaseDamaged("podium.db was deleted while the daemon ran")


async def _send_when_woken(
    mailbox: trio.MemorySendChannel[int],
    peer_waiting: trio.Event,
    woken: trio.Event,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    task_status.started()
    peer_waiting.set()
    await woken.wait()
    mailbox.send_nowait(1)


async def test_a_peer_failing_leaves_only_its_own_error() -> None:
    runtime = _runtime()
    tx, rx = trio.open_memory_channel[int](4)
    peer_waiting, woken = trio.Event(), trio.Event()
    store = functools.partial(_fail_after_closing, rx, peer_waiting, woken)
    scheduler = functools.partial(_send_when_woken, tx, peer_waiting, woken)
    with pytest.RaisesGroup(DatabaseDamaged):
        async with trio.open_nursery() as nursery:
            await nursery.start(runtime._supervise, "store", store, nursery.cancel_scope)
            await nursery.start(runtime._supervise, "scheduler", scheduler, nursery.cancel_scope)


async def test_a_closed_mailbox_with_no_failing_peer_is_still_an_error() -> None:
    runtime = _runtime()
    tx, rx = trio.open_memory_channel[int](4)
    rx.close()

    async def send_now(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        tx.send_nowait(1)

    # Re-raised in a group of its own (the supervisor catches it with except*, as an actor
    # with a nursery of its own raises it), after the grace for a failing peer.
    with pytest.RaisesGroup(trio.BrokenResourceError, flatten_subgroups=True):
        async with trio.open_nursery() as nursery:
            await nursery.start(runtime._supervise, "scheduler", send_now, nursery.cancel_scope)
