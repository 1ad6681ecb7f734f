"""The election's timing under trio's MockClock (issue 25, points 5 and 6), against a fake
etcd that keeps one key and leases that expire on the virtual clock: a lost answer to the
key's creation is recognised at once; the renew deadline counts from the lease's grant, so a
candidate that wins with a lease granted long before gives up before etcd expires it.

Virtual times are compared exactly (trio's own style); the real-etcd counterparts are in
tests/actor/test_election.py.
"""

from __future__ import annotations

import base64
import itertools
from typing import Any, cast

import msgspec
import pytest
import trio
import trio.testing

from podium.protocol.errors import LeadershipLost
from podium.store.etcd.client import EtcdClient, EtcdUnknownOutcome
from podium.store.etcd.election import LeaderElection, LeaderRecord
from podium.store.etcd.replies import (
    KeyValue,
    LeaseGrantReply,
    LeaseKeepAliveReply,
    LeaseKeepAliveResult,
    RangeReply,
    RangeResult,
    ResponseHeader,
    ResponseOp,
    TxnReply,
)

KEY = b"/podium/leader"
TTL = 15
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0


class FakeEtcd:
    """The calls the election makes, on one key, with leases expiring on trio's clock.

    Attributes:
        lose_answers: how many key creations to apply and then answer with a lost answer.
        cut_off: every call waits forever (a black hole between the replica and etcd).
        granted: each lease's last grant or renewal time.
    """

    def __init__(self) -> None:
        self.revision = 1
        self.kv: KeyValue | None = None
        self.expiry: dict[int, float] = {}
        self.granted: dict[int, float] = {}
        self.lose_answers = 0
        self.cut_off = False
        self._ids = itertools.count(0x100)

    async def _reach(self) -> None:
        if self.cut_off:
            await trio.sleep_forever()
        now = trio.current_time()
        for lease, until in list(self.expiry.items()):
            if until <= now:
                del self.expiry[lease]
                if self.kv is not None and self.kv.lease == lease:
                    self.kv = None
                    self.revision += 1

    def _header(self) -> ResponseHeader:
        return ResponseHeader(revision=self.revision)

    def hold_key(self, identity: str) -> int:
        """Another replica leads, with a lease that does not expire by itself."""
        lease = next(self._ids)
        self.revision += 1
        value = msgspec_record(identity)
        self.kv = KeyValue(key=KEY, value=value, create_revision=self.revision, lease=lease)
        return lease

    def release_key(self) -> None:
        self.kv = None
        self.revision += 1

    async def lease_grant(self, ttl: int) -> LeaseGrantReply:
        await self._reach()
        lease = next(self._ids)
        self.granted[lease] = trio.current_time()
        self.expiry[lease] = trio.current_time() + ttl
        return LeaseGrantReply(header=self._header(), id=lease, ttl=ttl)

    async def lease_keepalive(self, lease: int) -> LeaseKeepAliveReply:
        await self._reach()
        if lease not in self.expiry:
            return LeaseKeepAliveReply()
        self.granted[lease] = trio.current_time()
        self.expiry[lease] = trio.current_time() + TTL
        return LeaseKeepAliveReply(result=LeaseKeepAliveResult(id=lease, ttl=TTL))

    async def lease_revoke(self, lease: int) -> None:
        await self._reach()
        self.expiry.pop(lease, None)
        if self.kv is not None and self.kv.lease == lease:
            self.release_key()

    async def txn(self, body: dict[str, Any]) -> TxnReply:
        await self._reach()
        if self.kv is not None:
            found = RangeResult(kvs=[self.kv], count=1)
            return TxnReply(header=self._header(), responses=[ResponseOp(response_range=found)])
        put = body["success"][0]["request_put"]
        self.revision += 1
        value = _b64decode(put["value"])
        self.kv = KeyValue(key=KEY, value=value, create_revision=self.revision, lease=put["lease"])
        if self.lose_answers:
            self.lose_answers -= 1
            raise EtcdUnknownOutcome("etcd fake did not answer txn in time (ReadTimeout)")
        return TxnReply(header=self._header(), succeeded=True)

    async def range(self, body: dict[str, Any]) -> RangeReply:
        await self._reach()
        kvs = [self.kv] if self.kv is not None else []
        return RangeReply(header=self._header(), kvs=kvs, count=len(kvs))

    async def aclose(self) -> None:
        pass


def msgspec_record(identity: str) -> bytes:
    return msgspec.json.encode(LeaderRecord(identity=identity, address=f"{identity}:7070"))


def _b64decode(text: str) -> bytes:
    return base64.b64decode(text)


async def _cut_off_at(etcd: FakeEtcd, when: float) -> None:
    await trio.sleep_until(when)
    etcd.cut_off = True


def _candidate(etcd: FakeEtcd, name: str = "a") -> LeaderElection:
    return LeaderElection(
        cast("EtcdClient", etcd),  # a fake with the calls the election makes
        KEY,
        name,
        f"{name}:7070",
        lease_duration=TTL,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
    )


async def test_a_lost_answer_to_the_keys_creation_is_recognised_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    etcd = FakeEtcd()
    etcd.lose_answers = 1
    a = _candidate(etcd)
    with trio.fail_after(60):
        await a.campaign()
    # It leads from the first attempt, on the key its lost answer created (not a lease later,
    # after answering not_leader naming itself meanwhile).
    assert trio.current_time() == 0
    assert a.leading and a.transitions == 1
    assert etcd.kv is not None
    assert a.fence[0]["create_revision"] == etcd.kv.create_revision
    assert a.leader == LeaderRecord(identity="a", address="a:7070")


async def test_another_replicas_key_is_not_taken_for_ours(
    autojump_clock: trio.testing.MockClock,
) -> None:
    etcd = FakeEtcd()
    etcd.hold_key("a")  # same identity, another lease: another process (issue 25, point 4)
    a = _candidate(etcd)
    assert not await a._try_to_lead()
    assert not a.leading
    assert a.leader == LeaderRecord(identity="a", address="a:7070")


async def test_a_late_win_gives_up_before_etcd_expires_the_lease(
    autojump_clock: trio.testing.MockClock,
) -> None:
    etcd = FakeEtcd()
    etcd.hold_key("b")
    a = _candidate(etcd)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.campaign)
        # b leads until 11.5; a's attempts come every retry period from 0, on the lease it was
        # granted at 0.
        await trio.sleep(11.5)
        etcd.release_key()
        await trio.sleep(1)  # its attempt at 12 wins
        assert a.leading
        # Cut off from etcd just after the win.
        etcd.cut_off = True
        with pytest.raises(LeadershipLost, match="within the renew deadline"):
            await a.hold()
    assert etcd.kv is not None
    lease = etcd.kv.lease
    # The lease was renewed by the winning attempt, and the renew deadline counts from there:
    # it gave up while etcd still kept the lease (before issue 25: the lease granted at 0
    # expired at 15 while the winner, counting from its win, believed it led until 24).
    assert etcd.granted[lease] == 12
    assert trio.current_time() == 12 + RENEW_DEADLINE
    assert trio.current_time() < etcd.expiry[lease]


async def test_a_renewed_lease_keeps_the_lead_until_renewals_stop(
    autojump_clock: trio.testing.MockClock,
) -> None:
    etcd = FakeEtcd()
    a = _candidate(etcd)
    await a.campaign()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_cut_off_at, etcd, 31)  # the last renewal was at 30
        with pytest.raises(LeadershipLost, match="within the renew deadline"):
            await a.hold()
    assert trio.current_time() == 30 + RENEW_DEADLINE
    assert not a.leading


async def test_resigning_revokes_the_lease_and_the_key_goes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    etcd = FakeEtcd()
    a, b = _candidate(etcd, "a"), _candidate(etcd, "b")
    await a.campaign()
    await a.resign()
    assert etcd.kv is None
    assert await b._try_to_lead()
    assert trio.current_time() == 0
