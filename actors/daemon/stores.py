"""Which store the daemon opens, and a replica's leadership under leader election.

Kubernetes counterpart: kube-scheduler has no store of its own (its state is the API server's,
behind client-go); its leadership is cmd/kube-scheduler/app/server.go ``Run``:
``leaderelection.LeaderCallbacks``, whose ``OnStartedLeading`` runs the scheduler and whose
``OnStoppedLeading`` exits (here :class:`~podium.protocol.errors.LeadershipLost`: ``podium
serve`` exits 4 and its supervisor restarts it as a follower). Without leader election the
scheduler runs at once (``close(waitingForLeader)``).

``podium.store`` names the store (``sqlite://PATH``, ``etcd://...``), else it is the SQLite
file ``podium.database``. Every import the daemon makes from :mod:`podium.store` is in this
module, so that a change to the store's factories has one place to follow.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import trio

from podium.actors.mail.messages import BeginScheduling, SchedulerMsg
from podium.actors.runtime.mailbox import send
from podium.actors.supervisor.supervisor import StoreFactory
from podium.protocol import metrics
from podium.protocol.config import PodiumSettings, SchedulerConfig
from podium.store.actor import StoreActor
from podium.store.etcd.durability import EtcdDurability, etcd_durability, etcd_store
from podium.store.etcd.election import LeaderElection, leader_election
from podium.store.location import EtcdLocation, SqliteLocation, parse_store_url
from podium.store.mail import Published, StoreMsg
from podium.store.sqlite import sqlite_durability, sqlite_store

__all__ = ["Replica", "begin_scheduling", "lead", "replica_of", "store_factory"]

# The daemon's one logger: its lines keep the name they had before the daemon was split.
log = logging.getLogger("podium.serve")


class Replica:
    """A replica under leader election: its election, and its store once built."""

    def __init__(self, election: LeaderElection) -> None:
        self.election = election
        self.store: StoreActor | None = None
        self.durability: EtcdDurability | None = None

    def role(self) -> str:
        """What ``/readyz`` says after ``ok``: whether this replica leads, else who does (a
        follower is ready: it serves reads, watches and explain)."""
        election = self.election
        if election.leading:
            return f" (leader {election.identity})"
        leader = election.leader
        return (
            f" (follower; leader {leader.identity} at {leader.address})"
            if leader
            else (" (follower; no replica leads)")
        )


def replica_of(settings: PodiumSettings, address: str | None) -> Replica | None:
    """The replica ``podium.leaderElection`` makes of this daemon (None: it is the one writer).

    Args:
        settings: the daemon's settings.
        address: the protocol's real TCP address (what the leader advertises, unless
            ``leaderElection.advertise`` says otherwise).

    Raises:
        ValueError: leader election without an etcd store.
        OSError: the etcd password file cannot be read.
    """
    if not settings.leader_election.leader_elect:
        return None
    location = parse_store_url(settings.store or "")
    if not isinstance(location, EtcdLocation):
        raise ValueError("leader election needs an etcd store (--store etcd://...)")
    return Replica(leader_election(location, settings.etcd, settings.leader_election, address))


def store_factory(config: SchedulerConfig, replica: Replica | None = None) -> StoreFactory:
    """The store ``podium.store`` names (``sqlite://PATH``, ``etcd://...``), else the SQLite
    file ``podium.database``.

    Raises:
        ValueError: ``podium.store`` is not a store URL.
    """
    settings = config.podium
    where = parse_store_url(settings.store) if settings.store else SqliteLocation(settings.database)
    if isinstance(where, EtcdLocation):
        return _etcd_store(config, where, replica)
    return _sqlite_store(config, where)


def _etcd_store(
    config: SchedulerConfig, location: EtcdLocation, replica: Replica | None
) -> StoreFactory:
    def build(
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[trio.MemorySendChannel[Published]],
    ) -> StoreActor:
        durability = etcd_durability(location, config.podium)
        if replica is None:
            return etcd_store(inbox, subscribers, durability)
        election = replica.election
        store = etcd_store(inbox, subscribers, durability, leader=lambda: election.leader_address)
        replica.store, replica.durability = store, durability
        return store

    return build


def _sqlite_store(config: SchedulerConfig, location: SqliteLocation) -> StoreFactory:
    def build(
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[trio.MemorySendChannel[Published]],
    ) -> StoreActor:
        return sqlite_store(inbox, subscribers, sqlite_durability(location, config.podium))

    return build


async def begin_scheduling(
    replica: Replica | None,
    scheduler: trio.MemorySendChannel[SchedulerMsg],
    nursery: trio.Nursery,
) -> None:
    """Let the scheduler begin: at once for the one writer (it leads), else once this replica
    is elected (:func:`lead`, started in ``nursery``, which must outlive the services: the
    replica resigns once they have drained)."""
    if replica is None:
        metrics.LEADER.set(1)  # the one writer: it leads
        await send(scheduler, BeginScheduling())
    else:
        nursery.start_soon(lead, replica, scheduler)


async def lead(replica: Replica, scheduler: trio.MemorySendChannel[SchedulerMsg]) -> None:
    """A replica's part in leader election: campaign; once elected, set the store's fence,
    let it catch up with the log and take it over, begin scheduling, then renew the lease
    until this process stops (resigning then) or loses the lead (:class:`LeadershipLost`:
    the daemon exits, as kube-scheduler does, and its supervisor restarts it as a follower).
    """
    election = replica.election
    name = election.key.decode()
    metrics.LEADER.set(0)
    metrics.MASTER_STATUS.labels(name=name).set(0)
    try:
        await election.campaign()
        assert replica.store is not None and replica.durability is not None
        replica.durability.fence = election.fence
        await replica.store.promote()
        metrics.LEADER.set(1)
        metrics.MASTER_STATUS.labels(name=name).set(1)
        metrics.LEADER_TRANSITIONS.inc()
        try:
            await send(scheduler, BeginScheduling())
        except trio.BrokenResourceError:
            # The scheduler has stopped: the daemon is shutting down (a SIGTERM came while
            # this replica was elected). Nothing to lead: resign below.
            log.info("elected while shutting down: resigning")
            return
        log.info("leading: scheduling begins")
        await election.hold()
    finally:
        metrics.LEADER.set(0)
        metrics.MASTER_STATUS.labels(name=name).set(0)
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            await election.resign()
            await election.aclose()
