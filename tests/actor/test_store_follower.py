"""A follower replica's store actor over a fake shared log (no thread, so the autojump clock is
safe): a watch from a revision the follower has not read yet waits for it (issue 25 point 8),
as the API server's watch cache waits for a fresher resourceVersion (watch_cache.go@v1.14
``waitUntilFreshAndBlock``): answered once read, ``invalid`` when the leader has no such
revision, ``unavailable`` after :data:`~podium.store.actor.FRESH_WAIT_SECONDS` when the log
cannot be read. Virtual times are compared exactly."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio
import trio.lowlevel
import trio.testing
from builders import make_node

from podium.protocol.errors import StoreError
from podium.store.actor import FRESH_WAIT_SECONDS, FollowPage, Standby, StoreActor
from podium.store.core import StoreCore
from podium.store.mail import (
    Change,
    Committed,
    EventsResult,
    ReadEvents,
    Recovered,
    StoreFailure,
    StoreMsg,
)
from podium.store.memory import InMemory

POLL = 1.0
"""The follower's poll interval in these tests: long, so that an answer at the time it was
asked shows the read woke the follow loop rather than waiting for its next poll."""


@dataclass
class FakeLog:
    """The shared log as the leader left it: ``committed`` changes of ``log`` are visible;
    ``page`` at most per read; ``sick`` makes every read fail as an unreachable etcd would."""

    log: list[Change] = field(default_factory=list)
    committed: int = 0
    page: int = 100
    sick: bool = False
    reads: list[float] = field(default_factory=list)

    async def follow(self, after: int) -> FollowPage:
        self.reads.append(trio.current_time())
        await trio.lowlevel.checkpoint()
        if self.sick:
            raise StoreError("etcd unavailable: no member answered")
        changes = [c for c in self.log if after < c.revision <= self.committed]
        return FollowPage(revision=self.committed, changes=changes[: self.page])

    async def take_over(self, revision: int) -> bool:
        return revision == self.committed

    def commit(self, count: int) -> None:
        """The leader commits ``count`` more changes."""
        self.committed += count


def _leader_log(count: int) -> list[Change]:
    """``count`` changes (one node each) as the leader numbered them, none visible yet."""
    leader = StoreCore()
    _, _, changes = leader.write([make_node(f"n{i}").obj() for i in range(count)])
    return changes


@dataclass
class Follower:
    inbox: trio.MemorySendChannel[StoreMsg]
    store: StoreActor
    log: FakeLog

    async def read_events(self, after: int) -> EventsResult | StoreFailure:
        tx, rx = trio.open_memory_channel[Any](1)
        self.inbox.send_nowait(ReadEvents(after=after, reply=tx))
        answer: EventsResult | StoreFailure = await rx.receive()
        return answer


@asynccontextmanager
async def following(log: FakeLog) -> AsyncIterator[Follower]:
    """A follower that has read everything committed so far (its loop sleeping a poll)."""
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](64)
    pub_tx, pub_rx = trio.open_memory_channel[Recovered | Committed](1024)
    standby = Standby(log, lambda: "leader:7070", poll_seconds=POLL)
    store = StoreActor(inbox_rx, [pub_tx], InMemory(), standby=standby)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, pub_rx:
            await nursery.start(store.run)
            await trio.testing.wait_all_tasks_blocked()
            assert store.core.revision == log.committed
            async with inbox_tx:
                yield Follower(inbox_tx, store, log)


async def test_a_watch_from_a_revision_just_committed_waits_for_the_follower_to_read_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = FakeLog(_leader_log(3), committed=2)
    async with following(log) as f:
        asked = trio.current_time()
        log.commit(1)  # acknowledged by the leader after the follower's last poll
        answer = await f.read_events(3)
        assert answer == EventsResult(revision=3, changes=[])
        # The read woke the follow loop: answered at once, not a poll (1 s) later.
        assert trio.current_time() == asked
        assert f.store.core.revision == 3


async def test_a_watch_from_a_revision_the_follower_has_not_read_streams_from_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = FakeLog(_leader_log(4), committed=1)
    async with following(log) as f:
        log.commit(3)
        answer = await f.read_events(2)
        assert isinstance(answer, EventsResult)
        assert (answer.revision, [c.revision for c in answer.changes]) == (4, [3, 4])


async def test_a_follower_far_behind_answers_once_its_pages_reach_the_revision(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = FakeLog(_leader_log(10), committed=0, page=2)
    async with following(log) as f:
        asked = trio.current_time()
        log.commit(10)
        answer = await f.read_events(7)
        assert isinstance(answer, EventsResult)
        # Answered once a page reached revision 7 (pages end at 2, 4, 6, 8, 10): the changes
        # after 7 the core holds then, and nothing past its revision.
        assert answer.revision in (8, 10)
        assert [c.revision for c in answer.changes] == list(range(8, answer.revision + 1))
        assert trio.current_time() == asked


async def test_a_revision_the_leader_has_not_committed_is_refused_after_a_fresh_read(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = FakeLog(_leader_log(3), committed=3)
    async with following(log) as f:
        asked = trio.current_time()
        reads = len(log.reads)
        answer = await f.read_events(9)
        assert isinstance(answer, StoreFailure)
        assert (answer.code, answer.message) == (
            "invalid",
            "revision 9 is not a store revision; the current revision is 3",
        )
        # One read of the log begun after the watch came decides it, not a timeout.
        assert len(log.reads) == reads + 1
        assert trio.current_time() == asked


async def test_a_follower_that_cannot_read_the_log_answers_unavailable_after_the_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = FakeLog(_leader_log(3), committed=2)
    async with following(log) as f:
        asked = trio.current_time()
        log.commit(1)
        log.sick = True
        answer = await f.read_events(3)
        assert isinstance(answer, StoreFailure)
        assert (answer.code, answer.message) == (
            "unavailable",
            "too large resource version: 3, current: 2: this follower did not read it from "
            "the log within 3 s; watch again, or on the leader",
        )
        assert trio.current_time() == asked + FRESH_WAIT_SECONDS


async def test_a_leader_refuses_a_revision_past_its_own_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](64)
    pub_tx, pub_rx = trio.open_memory_channel[Recovered | Committed](64)
    store = StoreActor(inbox_rx, [pub_tx], InMemory())
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery, pub_rx:
            await nursery.start(store.run)
            async with inbox_tx:
                asked = trio.current_time()
                tx, rx = trio.open_memory_channel[Any](1)
                inbox_tx.send_nowait(ReadEvents(after=1, reply=tx))
                answer = await rx.receive()
    assert isinstance(answer, StoreFailure)
    assert (answer.code, answer.message) == (
        "invalid",
        "revision 1 is not a store revision; the current revision is 0",
    )
    assert trio.current_time() == asked


async def test_a_follower_stopping_answers_its_waiting_reads_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = FakeLog(_leader_log(3), committed=2)
    tx, rx = trio.open_memory_channel[Any](1)
    async with following(log) as f:
        asked = trio.current_time()
        log.commit(1)
        log.sick = True
        f.inbox.send_nowait(ReadEvents(after=3, reply=tx))
        await trio.testing.wait_all_tasks_blocked()
    # The inbox closed: the store stops without holding the read for its 3 s.
    assert trio.current_time() == asked
    answer = rx.receive_nowait()
    assert isinstance(answer, StoreFailure) and answer.code == "unavailable"
