"""Leader election on etcd: one replica of several leads, the others follow (issue 20).

Kubernetes counterpart: client-go's tools/leaderelection (kube-scheduler ``--leader-elect``),
here in etcd's own election recipe (etcd's ``clientv3/concurrency``) rather than a Lease object:

- a candidate grants itself an etcd lease of ``lease_duration`` seconds and creates the key
  ``PREFIX/leader`` bound to it, in a transaction that compares the key's ``create_revision``
  with 0 (nobody leads). The value names the leader (identity and protocol address);
- the leader renews the lease every ``retry_period`` (``/v3/lease/keepalive``) and gives up
  leading (:class:`~podium.protocol.errors.LeadershipLost`) when no renewal has succeeded for
  ``renew_deadline``, or when etcd says the lease is gone. The deadline counts from when the
  last renewal (or the grant) was *sent*, as etcd's TTL does, and a candidate renews its lease
  before each attempt: a win never rests on a lease granted long before, and the leader never
  believes it leads after etcd has expired its lease (issue 25, point 6);
- a creation whose answer is lost is read back at once: a key bound to this candidate's lease
  with its record is its own (etcd's ``concurrency.Election`` recognises its key by lease too,
  since identities may repeat), so it leads instead of following itself (point 5);
- when the leader stops renewing (killed, paused, cut off), etcd expires the lease and deletes
  the key; a follower's next attempt creates it;
- the **fence**: :attr:`LeaderElection.fence` is a compare of the key's ``create_revision``
  with the one this replica's creation gave it. Every transaction the store writes carries it
  (:attr:`~podium.store.etcd.durability.EtcdDurability.fence`), so a deposed leader (its key
  expired, or made again by another) can commit nothing: a bind it attempts fails in etcd,
  whatever its own clock believes.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

import msgspec
import trio

from podium.protocol.config import EtcdSettings, LeaderElectionSettings
from podium.protocol.errors import LeadershipLost, StoreError
from podium.store.credentials import etcd_credentials
from podium.store.etcd.client import (
    EtcdClient,
    EtcdError,
    EtcdUnavailable,
    EtcdUnknownOutcome,
    b64,
)
from podium.store.etcd.keys import KeyLayout
from podium.store.etcd.replies import KeyValue
from podium.store.location import EtcdLocation

__all__ = ["LeaderElection", "LeaderRecord", "leader_election"]

log = logging.getLogger("podium.election")


class LeaderRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The value of the leadership key: who leads, and where clients reach it."""

    identity: str
    address: str | None = None


_encode = msgspec.json.Encoder().encode
_decode_record = msgspec.json.Decoder(LeaderRecord).decode


class LeaderElection:
    """One replica's part in the election (module docstring).

    Args:
        client: the etcd client (its own, so that renewals do not queue behind commits).
        key: the leadership key (``PREFIX/leader``).
        identity: this replica's name.
        address: the protocol address clients are sent to while this replica leads.
        lease_duration: the lease's TTL, seconds (rounded up to whole seconds for etcd).
        renew_deadline: how long the leader tries to renew before it gives up.
        retry_period: between renewals, and between a follower's attempts.

    Attributes:
        leader: the leader as last read (None: nobody leads, or not read yet).
        leading: whether this replica leads.
        transitions: how many times this replica became leader (``podium stats``).
    """

    def __init__(
        self,
        client: EtcdClient,
        key: bytes,
        identity: str,
        address: str | None,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self._client = client
        self.key = key
        self.identity = identity
        self.address = address
        self.ttl = max(1, int(-(-lease_duration // 1)))
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.leader: LeaderRecord | None = None
        self.leading = False
        self.transitions = 0
        self._lease = 0
        self._granted: float | None = None  # when the lease was last granted or renewed
        self._create_revision = 0
        self._renewed = 0.0

    @property
    def fence(self) -> list[dict[str, Any]]:
        """The compare every transaction of the leader carries: the leadership key is still
        the one this replica created."""
        return [
            {
                "key": b64(self.key),
                "target": "CREATE",
                "result": "EQUAL",
                "create_revision": self._create_revision,
            }
        ]

    @property
    def leader_address(self) -> str | None:
        """Where the leader is reached (None: nobody leads, as far as this replica knows)."""
        return self.leader.address if self.leader is not None else None

    async def campaign(self) -> None:
        """Try every ``retry_period`` until this replica leads; meanwhile :attr:`leader`
        follows whoever does. etcd's failures are retried (a follower waits them out)."""
        while True:
            try:
                if await self._try_to_lead():
                    return
            except StoreError as exc:
                log.warning("leader election: %s; trying again", exc)
            await trio.sleep(self.retry_period)

    async def _try_to_lead(self) -> bool:
        # The lease the key would be bound to is fresh at every attempt: renewed (or granted,
        # when there is none or etcd let it go), so that a win leaves the whole renew deadline,
        # which counts from the renewal's sending as etcd's TTL does (issue 25, point 6).
        sent = trio.current_time()
        if not (self._lease and await self._renew_candidate_lease()):
            grant = await self._client.lease_grant(self.ttl)
            self._lease = grant.id
        self._granted = sent
        record = LeaderRecord(identity=self.identity, address=self.address)
        try:
            answer = await self._client.txn(
                {
                    "compare": [
                        {
                            "key": b64(self.key),
                            "target": "CREATE",
                            "result": "EQUAL",
                            "create_revision": 0,
                        }
                    ],
                    "success": [
                        {
                            "request_put": {
                                "key": b64(self.key),
                                "value": b64(_encode(record)),
                                "lease": self._lease,
                            }
                        }
                    ],
                    "failure": [{"request_range": {"key": b64(self.key)}}],
                },
            )
        except EtcdUnknownOutcome as exc:
            # The creation may have landed: read the key back at once rather than at the
            # next attempt (a key of ours left unrecognised would hold every write for a lease).
            log.warning("leader election: %s; reading the key back", exc)
            return self._read(record, (await self._client.range({"key": b64(self.key)})).kvs)
        if answer.succeeded:
            return self._won(record, answer.header.revision)
        found = answer.responses[0].response_range if answer.responses else None
        return self._read(record, found.kvs if found is not None else [])

    async def _renew_candidate_lease(self) -> bool:
        """Whether the candidate's lease was renewed (False: etcd has let it go)."""
        try:
            return (await self._client.lease_keepalive(self._lease)).result.ttl > 0
        except EtcdUnavailable:
            raise
        except EtcdError:
            return False  # refused ("requested lease not found"): a new one is granted

    def _read(self, record: LeaderRecord, kvs: list[KeyValue]) -> bool:
        """Follow the leader ``kvs`` name, or lead if the key is our own creation: bound to
        our lease (unique in etcd, as in etcd's ``concurrency.Election``, whereas identities
        may repeat) with our record, whose answer was lost."""
        if kvs and kvs[0].lease == self._lease and kvs[0].value == _encode(record):
            log.info("leader election: the key is ours (its creation's answer was lost)")
            return self._won(record, kvs[0].create_revision)
        previous = self.leader
        try:
            self.leader = _decode_record(kvs[0].value) if kvs else None
        except msgspec.DecodeError:
            self.leader = None
        if self.leader != previous:
            log.info(
                "leader election: %s leads",
                self.leader.identity if self.leader is not None else "nobody",
            )
        return False

    def _won(self, record: LeaderRecord, create_revision: int) -> bool:
        assert self._granted is not None
        self._create_revision = create_revision
        # The renew deadline counts from the lease's last grant or renewal, as etcd's TTL does.
        self._renewed = self._granted
        self.leader = record
        self.leading = True
        self.transitions += 1
        log.info("leader election: %s leads (lease %x)", self.identity, self._lease)
        return True

    async def hold(self) -> None:
        """Renew the lease at once, then every ``retry_period``, while leading.

        Raises:
            LeadershipLost: no renewal succeeded within ``renew_deadline`` of the last one
                (or of the lease's grant), or the lease is gone (expired while this replica
                was paused or cut off).
        """
        while True:
            deadline = self._renewed + self.renew_deadline
            if trio.current_time() >= deadline:
                raise self._lost("the lease was not renewed within the renew deadline")
            sent = trio.current_time()
            with trio.move_on_at(deadline):
                try:
                    ttl = (await self._client.lease_keepalive(self._lease)).result.ttl
                except StoreError as exc:
                    log.warning("leader election: renewing the lease: %s", exc)
                else:
                    if ttl <= 0:
                        raise self._lost("the lease expired")
                    # etcd restarts the TTL when the renewal reaches it, after it was sent.
                    self._renewed = sent
            # Never sleep past the deadline: leadership is given up at it, not a period later.
            await trio.sleep_until(
                min(trio.current_time() + self.retry_period, self._renewed + self.renew_deadline)
            )

    def _lost(self, why: str) -> LeadershipLost:
        self.leading = False
        log.error("leader election: %s no longer leads: %s", self.identity, why)
        return LeadershipLost(
            f"this replica ({self.identity}) no longer leads: {why}; it stops, and restarts "
            "as a follower"
        )

    async def resign(self) -> None:
        """Give the lead up at once (a clean shutdown, or leadership lost): the lease is
        revoked, and with it goes the key if it is still ours, so a follower takes over without
        waiting for the lease to expire."""
        self.leading = False
        if not self._lease:
            return
        lease, self._lease, self._granted = self._lease, 0, None
        try:
            await self._client.lease_revoke(lease)
        except StoreError as exc:
            log.warning("leader election: resigning: %s (the lease expires by itself)", exc)

    async def aclose(self) -> None:
        await self._client.aclose()


def leader_election(
    location: EtcdLocation,
    settings: EtcdSettings,
    election: LeaderElectionSettings,
    address: str | None,
) -> LeaderElection:
    """The election ``podium.leaderElection`` describes, on a client of its own toward the
    store's etcd (``podium.etcd``'s TLS, user and timeouts); the key is ``PREFIX/leader``.

    Raises:
        OSError: the password file cannot be read.
    """
    credentials = etcd_credentials(settings)
    client = EtcdClient(
        location.endpoints,
        tls=credentials.tls,
        user=credentials.user,
        password=credentials.password,
        request_timeout=min(settings.request_timeout_seconds, election.retry_period_seconds),
        unavailable_after=election.renew_deadline_seconds,
    )
    identity = election.identity or f"{socket.gethostname()}:{os.getpid()}"
    return LeaderElection(
        client,
        KeyLayout(location.prefix.encode()).leader,
        identity,
        election.advertise or address,
        lease_duration=election.lease_duration_seconds,
        renew_deadline=election.renew_deadline_seconds,
        retry_period=election.retry_period_seconds,
    )
