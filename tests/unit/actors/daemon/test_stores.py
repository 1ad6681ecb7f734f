"""The daemon's store choice and replica alone, without etcd: which settings make a replica
(leader election needs an etcd store), what its election is built from, and the role it gives
``/readyz`` (kube-scheduler's readyz under leader election) as the election changes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
import trio
import trio.testing

from podium.actors.daemon.stores import Replica, lead, replica_of, store_factory
from podium.actors.mail.messages import BeginScheduling, SchedulerMsg
from podium.protocol.config import LeaderElectionSettings, PodiumSettings, SchedulerConfig
from podium.store.etcd.election import LeaderRecord

ELECTED = LeaderElectionSettings(leader_elect=True, identity="r1")


def test_without_leader_election_the_daemon_is_the_one_writer() -> None:
    assert replica_of(PodiumSettings(store="etcd://127.0.0.1:2379/p"), "127.0.0.1:7070") is None


@pytest.mark.parametrize("store", [None, "sqlite://podium.db", "podium.db"])
def test_leader_election_needs_an_etcd_store(store: str | None) -> None:
    settings = PodiumSettings(store=store, leader_election=ELECTED)
    with pytest.raises(ValueError, match=r"^leader election needs an etcd store \(--store etcd"):
        replica_of(settings, "127.0.0.1:7070")


async def test_a_replica_campaigns_under_its_prefix_and_advertises_its_address() -> None:
    settings = PodiumSettings(store="etcd://127.0.0.1:2379/team-a", leader_election=ELECTED)
    replica = replica_of(settings, "127.0.0.1:7070")
    assert replica is not None
    try:
        election = replica.election
        assert (election.key, election.identity, election.address) == (
            b"team-a/leader",
            "r1",
            "127.0.0.1:7070",
        )
        assert (replica.store, replica.durability) == (None, None)  # built with the runtime
    finally:
        await replica.election.aclose()


async def test_the_role_follows_the_election() -> None:
    settings = PodiumSettings(store="etcd://127.0.0.1:2379/podium", leader_election=ELECTED)
    replica = replica_of(settings, "127.0.0.1:7070")
    assert isinstance(replica, Replica)
    try:
        election = replica.election
        assert replica.role() == " (follower; no replica leads)"
        election.leader = LeaderRecord(identity="r2", address="10.0.0.2:7070")
        assert replica.role() == " (follower; leader r2 at 10.0.0.2:7070)"
        election.leading = True
        assert replica.role() == " (leader r1)"
    finally:
        await replica.election.aclose()


def test_a_store_that_is_not_a_store_url_is_refused() -> None:
    config = SchedulerConfig(podium=PodiumSettings(store="http://127.0.0.1:2379"))
    with pytest.raises(ValueError, match="the store is sqlite://PATH or etcd://HOST:PORT/PREFIX"):
        store_factory(config)


class _Election:
    """What :func:`lead` uses of a LeaderElection: elected at once, holding until cancelled."""

    key = b"team-a/leader"
    fence = object()

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def campaign(self) -> None:
        self.calls.append("campaign")

    async def hold(self) -> None:
        self.calls.append("hold")
        await trio.sleep_forever()

    async def resign(self) -> None:
        self.calls.append("resign")

    async def aclose(self) -> None:
        self.calls.append("aclose")


class _Store:
    async def promote(self) -> None:
        pass


async def test_elected_as_the_daemon_shuts_down_the_replica_resigns_without_a_traceback() -> None:
    """A SIGTERM as this replica wins: the scheduler has stopped and closed its mailbox before
    the lead could begin scheduling (a gang failover test's daemon once exited 1 with
    BrokenResourceError here)."""
    election = _Election()
    replica = Replica(cast(Any, election))
    replica.store, replica.durability = cast(Any, _Store()), cast(Any, SimpleNamespace())
    scheduler, inbox = trio.open_memory_channel[SchedulerMsg](1)
    inbox.close()
    await lead(replica, scheduler)
    assert election.calls == ["campaign", "resign", "aclose"]
    assert replica.durability.fence is election.fence


async def test_elected_the_replica_begins_scheduling_and_holds_the_lead(
    autojump_clock: trio.testing.MockClock,
) -> None:
    election = _Election()
    replica = Replica(cast(Any, election))
    replica.store, replica.durability = cast(Any, _Store()), cast(Any, SimpleNamespace())
    scheduler, inbox = trio.open_memory_channel[SchedulerMsg](1)
    with trio.move_on_after(1):
        await lead(replica, scheduler)
    assert isinstance(inbox.receive_nowait(), BeginScheduling)
    assert election.calls == ["campaign", "hold", "resign", "aclose"]
