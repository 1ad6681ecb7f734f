"""The store on etcd: :class:`EtcdDurability`, the store actor's durability in an etcd cluster.

Kubernetes counterpart: the API server's etcd3 storage (staging/src/k8s.io/apiserver/pkg/storage/
etcd3/store.go): objects under a prefix by kind/namespace/name, each write a transaction
guarded by a comparison of what it read, a compacted revision answered ``410 Gone``.

The :class:`~podium.store.core.StoreCore` stays the authority in memory and numbers every
change (the *Podium revision*); this module makes each batch durable in etcd, acknowledged
once etcd's quorum has it (etcd answers a txn only after raft commits it). The keys under
``PREFIX`` (``podium/`` by default) are laid out in :mod:`podium.store.etcd.keys`: the meta
key, one key per object, one event key per Podium revision, the leadership key.

Podium revisions are not etcd's: a batch of many changes is one etcd transaction and so one
etcd revision, while each change keeps its own Podium revision (the event key). ``revision``
in the meta key is the last committed Podium revision; ``applied`` the one the object keys
reflect (equal but for a batch too large for one transaction, below).

**One writer.** Every transaction compares the meta key's ``mod_revision`` with the one this
daemon's previous transaction gave it, and puts the meta key (so its ``mod_revision`` moves):
a second writer's transaction, or any write to the meta key by anyone else, makes the next
transaction of the other fail its comparison. The loser stops (fail-stop, a
:class:`~podium.protocol.errors.StoreError` naming the other writer) having acknowledged
nothing that was not committed. A writer is named by a token drawn at its start beside host
and pid (:func:`~podium.store.etcd.keys.writer_identity`): a failed comparison whose meta value
is byte for byte the one this writer sent is its own earlier attempt, never another writer's
(two containers can share ``HOST:PID``). The same comparison is where leader election (issue 20) adds
its own: :attr:`EtcdDurability.fence` is a list of extra compares every transaction carries.

**A batch, one transaction.** The changes' event keys, their objects' final states (a put, or
a delete for a deleted or preempted one), the meta key, and the compaction of the event log
when it has grown :data:`~podium.store.tuning.COMPACT_EVERY` past the retention: all in one
txn, all or nothing. etcd bounds a transaction (``--max-txn-ops``, default 128; ``--max-request-bytes``, default
1.5 MiB): a batch beyond :attr:`EtcdDurability.max_txn_ops` operations or
:attr:`EtcdDurability.max_request_bytes` (less :data:`TXN_RESERVE_BYTES`) is written in
several transactions, in this order::

    event keys (meta unchanged) ──▶ meta revision=R ──▶ object keys ──▶ meta applied=R
    (invisible: above the revision)  (the commit point)   (behind the log)

The first transaction whose meta says ``revision=R`` commits the batch; before it the event
keys above the revision are leftovers, which :meth:`EtcdDurability.load` deletes; after it the
object keys may lag the log, and load replays the events from ``applied`` to ``revision``
onto them. A bind stays atomic with its volume updates, a pod group's bindings with each other,
and an eviction is one transaction either way: the log holds all of a batch or none of it, so
no etcd limit bounds how many changes a batch (a gang of 256 members with their claims: 768)
may hold.

**A batch etcd cannot take.** A change whose event key alone is over the request limit is
refused before anything is sent; a transaction etcd refuses for what it is (its size, its
operations: :class:`~podium.store.etcd.client.EtcdRequestRefused`) up to and including the
commit point leaves nothing committed: the event keys earlier transactions wrote above the
revision are deleted, and :meth:`EtcdDurability.commit` raises
:class:`~podium.protocol.errors.CommitRefused`, which the store actor answers as a rejection
of the writes in the batch (store/actor.py). Nothing of it is replayed later, by this daemon or
the next leader. Past the commit point only object keys are written, each no larger than its
event key, so a refusal there cannot come from the request's size (it stops the daemon, as
any failed commit).

**Compaction.** The event keys below the retention are deleted in a commit's transaction
(Podium's own compaction; ``gone`` below it), never the batch's own: etcd refuses a
transaction that puts a key inside a range it deletes (``duplicate key given in txn
request``), so a batch longer than the retention keeps its keys until the next compaction.
etcd keeps the history of every key until *it* is compacted: every
``podium.etcd.compactionIntervalSeconds`` (300) the store compacts etcd up to the revision of
the previous round, as the API server does, so a cluster shared with other clients keeps at
least one interval of history for their watches (0: leave it to etcd's
``--auto-compaction-retention``).

**Watches.** Watchers are served by the store actor as with SQLite: from the core's memory,
and further back from the event keys (:meth:`EtcdDurability.read_events`, a range read below
the committed revision); a revision compacted out of the log answers ``gone`` (Kubernetes'
410). The event log is Podium's own, so a watch resumes exactly across an etcd leader change
or the loss of a member: nothing about it lives in one member.

**Failures.** A member that cannot be reached, or has lost its leader, is a retry on the
next endpoint (:class:`~podium.store.etcd.client.EtcdClient`, counted in
``podium_etcd_errors_total``): the loss of a member, or a leader election, only delays
commits. When no member has served a request for ``podium.etcd.unavailableSeconds`` (the
quorum is lost) the commit fails with :class:`~podium.store.etcd.client.EtcdUnavailable` and
the daemon stops (fail-stop, as a failed SQLite commit: clients are answered
``unavailable``, and nothing of the batch was acknowledged); restarted (systemd's
``Restart=``), it recovers once the quorum is back. A transaction whose answer was lost is
checked by reading the meta key back (each transaction writes a counter into it); so is a
write whose reply etcd gave but Podium cannot read (:mod:`podium.store.etcd.replies`).

**Deadlines** (issue 25, point 2). Every call ends by ``unavailableSeconds``, an attempt in
flight included, and so does a transaction with its re-sends and read-backs: a write path
that never answers (black-holed while reads and the lease's renewals pass) fails the commit
like a lost quorum. Under leader election that is
:class:`~podium.protocol.errors.LeadershipLost`: the replica revokes its lease (the key goes,
a follower takes over at once) and exits 4, as kube-scheduler exits when it cannot renew;
the one writer exits 1. A transaction abandoned so may still land later: the fence refuses it
once the lease is revoked, and nothing of it was acknowledged.

Refused at start: a prefix with keys but no meta key
(:class:`~podium.protocol.errors.DatabaseDamaged`), a meta key from a newer Podium, an object
or one of the newest event keys that does not decode, a log that does not end at the meta
revision.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import trio

from podium.protocol.config import ETCD_MAX_REQUEST_BYTES, PodiumSettings
from podium.protocol.errors import (
    CommitRefused,
    DatabaseDamaged,
    FollowerBehind,
    LeadershipLost,
    StoreError,
)
from podium.protocol.objects import KubeObject
from podium.store import tuning
from podium.store.actor import FollowPage, Recovery, Standby, StoreActor, Subscriber
from podium.store.core import StoreCore
from podium.store.credentials import EtcdTLS, etcd_credentials
from podium.store.etcd.client import (
    EtcdClient,
    EtcdRequestRefused,
    EtcdUnavailable,
    EtcdUnknownOutcome,
    b64,
)
from podium.store.etcd.keys import (
    SCHEMA_VERSION,
    KeyLayout,
    Meta,
    decode_event,
    decode_meta,
    encode_event,
    encode_meta,
    prefix_end,
    writer_identity,
)
from podium.store.etcd.replies import KeyValue, RangeResult
from podium.store.location import EtcdLocation
from podium.store.mail import Change, StoreMsg
from podium.store.schema import decode_object, encode_object

__all__ = [
    "PAGE",
    "READ_PAGE",
    "READ_PAGE_BYTES",
    "TXN_RESERVE_BYTES",
    "EtcdDurability",
    "Snapshot",
    "etcd_durability",
    "etcd_store",
]

log = logging.getLogger("podium.store")

PAGE = 1000
"""Keys per range read at start."""
READ_PAGE = 10_000
"""The most event keys one read of the log returns (a watcher far behind reads pages)."""
READ_PAGE_BYTES = 4 * 1024 * 1024
"""The bytes of event values one read of the log aims to stay within (a follower catching up
or a watcher far behind): 10 000 events of large objects would be gigabytes, past the request
timeout, read again and again. etcd has no byte limit on a range, so the count is sized from
the largest event the previous read returned (:class:`_PageSize`)."""
MIN_READ_PAGE_BYTES = 64 * 1024
"""The least the byte budget of a read of the log falls to after failed reads."""
LARGEST_EVENT_BYTES = 1536 * 1024
"""What an event may weigh before any was read: etcd's default ``--max-request-bytes`` (one
put is at most that), so the first page of a read stays within :data:`READ_PAGE_BYTES`."""


class _PageSize:
    """How many event keys the next read of the log asks for, so that its values stay within
    ``budget`` bytes: the budget over the largest event of the previous read, doubling at
    most per full page (as TCP's slow start). A read that failed (too large to be answered
    within the request timeout, or etcd unavailable) asks for a quarter next, and halves the
    budget for the durability's life (down to :data:`MIN_READ_PAGE_BYTES`): a link that could
    not carry a page in time will not carry one as large later."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.limit = max(1, min(READ_PAGE, budget // LARGEST_EVENT_BYTES))

    def read(self, asked: int, sizes: Sequence[int]) -> None:
        """A read of ``asked`` keys returned events of ``sizes`` bytes."""
        fit = self.budget // max(1, max(sizes, default=1))
        grown = 2 * asked if len(sizes) >= asked else self.limit
        self.limit = max(1, min(READ_PAGE, grown, fit))

    def failed(self) -> None:
        """A read failed."""
        self.limit = max(1, self.limit // 4)
        self.budget = max(MIN_READ_PAGE_BYTES, self.budget // 2)


TXN_RESERVE_BYTES = 4096
"""What a transaction holds besides its operations' keys and values, kept free below the
request limit: the meta key's put, the compares and the fence, protobuf's field headers and
raft's request header (about 400 bytes measured; the rest is margin)."""
OP_OVERHEAD_BYTES = 16
"""Protobuf's framing of one put or delete in a transaction (field tags and lengths)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What :meth:`EtcdDurability.snapshot` read.

    Attributes:
        revision: the last committed Podium revision.
        objects: every object.
        events: the event log kept, in revision order.
    """

    revision: int
    objects: list[KubeObject]
    events: list[Change]


def _ref(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


class EtcdDurability:
    """The store's :class:`~podium.store.actor.Durability` in etcd (module docstring).

    Args:
        location: the endpoints and the prefix.
        tls: client TLS toward etcd.
        user: etcd user (auth enabled), with ``password``.
        password: its password.
        retention: how many changes the event log keeps.
        max_txn_ops: operations per transaction (etcd's ``--max-txn-ops``).
        max_request_bytes: etcd's ``--max-request-bytes``: transactions are packed below it
            (less :data:`TXN_RESERVE_BYTES`), and a change whose event key alone is over that is
            refused (:class:`~podium.protocol.errors.CommitRefused`).
        request_timeout: seconds one request to one member may take.
        unavailable_after: seconds one request goes on trying the endpoints.
        compaction_interval: seconds between compactions of etcd's history (0: never; leave
            it to etcd's ``--auto-compaction-retention``).
        read_page_bytes: bytes one read of the event log aims to stay within
            (:data:`READ_PAGE_BYTES`).

    Attributes:
        fence: compares (gateway JSON) every transaction also carries: leader election's hook.
    """

    keeps_log = True

    def __init__(
        self,
        location: EtcdLocation,
        *,
        tls: EtcdTLS | None = None,
        user: str | None = None,
        password: str | None = None,
        retention: int = tuning.EVENT_RETENTION_REVISIONS,
        max_txn_ops: int = 128,
        max_request_bytes: int = ETCD_MAX_REQUEST_BYTES,
        request_timeout: float = 5.0,
        unavailable_after: float = 10.0,
        compaction_interval: float = 300.0,
        read_page_bytes: int = READ_PAGE_BYTES,
    ) -> None:
        self.location = location
        self.retention = retention
        self.max_txn_ops = max_txn_ops
        self.max_request_bytes = max_request_bytes
        self.fence: list[dict[str, Any]] = []
        self.standby = False
        self._client = EtcdClient(
            location.endpoints,
            tls=tls,
            user=user,
            password=password,
            request_timeout=request_timeout,
            unavailable_after=unavailable_after,
        )
        self._keys = KeyLayout(location.prefix.encode())
        self._writer = writer_identity()
        self._meta = Meta(schema=SCHEMA_VERSION, revision=0, applied=0, writer=self._writer)
        self._meta_mod = 0  # the meta key's mod_revision after our last txn (0: absent)
        # The last revision reads of the log may return: ours committed, or on a follower the
        # end of the last page it was handed (what its core holds).
        self._committed = 0
        self._page = _PageSize(read_page_bytes)
        self._compacted_through = 0
        self.compaction_interval = compaction_interval
        self._compaction_round = time.monotonic()
        self._compaction_mark = 0

    # ----------------------------------------------------------------- the interface

    async def load(self) -> Recovery:
        """Read the meta key and every object (in pages, at one etcd revision), delete event
        keys a crashed commit left above the revision, replay the log onto objects that lag
        it, and take the prefix over (a txn on the meta key).

        Raises:
            DatabaseDamaged: the prefix fails the checks (module docstring).
            StoreError: etcd is unavailable, or the prefix is from a newer Podium.
        """
        where = str(self.location)
        keys = self._keys
        kvs, revision = await self._range(keys.meta, None, limit=1)
        if not kvs:
            other, _ = await self._range(keys.prefix, prefix_end(keys.prefix), limit=2)
            # The leadership key (store/etcd/election.py) may come before the store's first commit.
            other = [kv for kv in other if kv.key != keys.leader]
            if other:
                raise DatabaseDamaged(
                    f"etcd prefix {where} holds keys ({other[0].key.decode()!r}) but "
                    "no meta/revision: Podium refuses to serve it as a new store"
                )
            if not self.standby:  # a follower leaves the creation to the leader
                await self._create()
            return Recovery(where, 0, [])
        meta = self._decode_meta(kvs[0], where)
        self._meta = meta
        self._meta_mod = kvs[0].mod_revision
        objects: dict[bytes, KubeObject] = {}
        for key, value in await self._scan(keys.objects, revision):
            try:
                objects[key] = decode_object(value)
            except msgspec.DecodeError as exc:
                raise DatabaseDamaged(
                    f"etcd prefix {where} holds an object key {key.decode()!r} that does not "
                    f"decode: {exc}"
                ) from None
        newest, _ = await self._range(
            keys.events, prefix_end(keys.events), limit=1, sort_desc=True, revision=revision
        )
        leftovers = bool(newest) and self._revision_of(newest[0]) > meta.revision
        if leftovers:
            log.warning(
                "etcd prefix %s: deleting event keys above revision %d (a commit that did not "
                "reach its commit point)",
                where,
                meta.revision,
            )
        await self._check_log(meta, where, revision)
        if self.standby:
            # A follower (leader election): it reads, takes nothing over, writes nothing; a
            # split batch's objects are brought up to the log in memory only.
            await self._replay_in_memory(meta, objects, where)
            self._committed = meta.revision
            return Recovery(where, meta.revision, list(objects.values()))
        # Take the prefix over: this txn moves the meta key, so a daemon still writing here
        # fails its next transaction. Leftovers go in the same txn.
        ops: list[dict[str, Any]] = []
        if leftovers:
            ops.append(self._delete(keys.event(meta.revision + 1), prefix_end(keys.events)))
        self._meta = msgspec.structs.replace(meta, writer=self._writer)
        await self._txn(ops, self._meta)
        if meta.applied < meta.revision:
            await self._replay(meta, objects, where)
        self._committed = meta.revision
        self._compacted_through = max(0, meta.revision - self.retention)
        return Recovery(where, meta.revision, list(objects.values()))

    async def commit(self, changes: list[Change]) -> None:
        """Write the batch: one transaction when it fits, else the sequence of the module
        docstring; compact the log when it has grown :data:`~podium.store.tuning.COMPACT_EVERY`
        past the retention.

        Raises:
            CommitRefused: a change is too large for etcd, or etcd refused a transaction for
                what it is before the commit point: nothing of the batch was committed.
            StoreError: another writer moved the meta key (nothing of the batch is
                acknowledged), or etcd refused the transaction.
        """
        revision = changes[-1].revision
        events: list[dict[str, Any]] = []
        final: dict[bytes, bytes | None] = {}
        budget = self.max_request_bytes - TXN_RESERVE_BYTES
        for change in changes:
            value, data = encode_event(change)
            events.append(self._put(self._keys.event(change.revision), value))
            if (weight := _weight(events[-1])) > budget:
                raise CommitRefused(
                    f"{_ref(change.kind, change.namespace, change.name)} would be a "
                    f"{weight}-byte write to etcd, over its request limit of "
                    f"{self.max_request_bytes} bytes (podium.etcd.maxRequestBytes, etcd's "
                    "--max-request-bytes) less a transaction's own fields; nothing was written"
                )
            key = self._keys.object(change.kind, change.namespace, change.name)
            final[key] = None if change.type in ("Deleted", "Preempted") else data
        objects = [
            self._put(key, data) if data is not None else self._delete(key, None)
            for key, data in final.items()
        ]
        tail: list[dict[str, Any]] = []
        # The compaction never reaches this batch's own event keys: etcd refuses a txn that
        # puts a key and deletes a range holding it ("duplicate key given in txn request"),
        # which a batch longer than the retention would otherwise make. Those keys go at the
        # next compaction; the log keeps at most a batch more than the retention meanwhile.
        through = min(revision - self.retention, changes[0].revision - 1)
        compacting = through - self._compacted_through >= tuning.COMPACT_EVERY
        if compacting:
            tail.append(self._delete(self._keys.events, self._keys.event(through + 1)))
        await self._write(self._meta.revision, revision, events, objects + tail)
        self._committed = revision
        if compacting:
            self._compacted_through = through
        await self._compact_history()

    async def read_events(self, after: int, limit: int = 0) -> tuple[int | None, list[Change]]:
        """The event keys after ``after`` up to the committed revision (the first ``limit``;
        0: all; fewer to stay within :data:`READ_PAGE_BYTES`) and the oldest kept, in one
        read-only transaction (one etcd revision). On a follower the committed revision is
        the end of the last page :meth:`follow` handed out, so a watcher paging through the
        log never passes the follower's own revision."""
        keys = self._keys
        asked = min(limit, self._page.limit) if limit > 0 else self._page.limit
        first, page = await self._read_page(
            "read_events",
            asked,
            [
                {
                    "key": b64(keys.events),
                    "range_end": b64(prefix_end(keys.events)),
                    "limit": 1,
                    "keys_only": True,
                },
                {
                    "key": b64(keys.event(after + 1)),
                    "range_end": b64(keys.event(self._committed + 1)),
                    # "All" is a page too: the store actor asks again for the rest.
                    "limit": asked,
                },
            ],
        )
        oldest = self._revision_of(first.kvs[0]) if first.kvs else None
        if oldest is None or after + 1 < oldest:
            return oldest, []
        return oldest, [self._decode_event(kv) for kv in page.kvs]

    async def follow(self, after: int) -> FollowPage:
        """A follower's read of what the leader committed after ``after``: the meta key and
        the event keys above ``after`` in one read-only transaction (one etcd revision), up to
        the meta revision (event keys above it belong to a batch not committed yet), a page
        within :data:`READ_PAGE_BYTES`.

        The follower applies the page before it asks again: :meth:`read_events` reads up to
        the page's end from then on.

        Raises:
            FollowerBehind: the log was compacted past ``after``.
            StoreError: etcd is unavailable, or the read timed out (the next is smaller).
        """
        keys = self._keys
        metas, page = await self._read_page(
            "follow",
            self._page.limit,
            [
                {"key": b64(keys.meta)},
                {
                    "key": b64(keys.event(after + 1)),
                    "range_end": b64(prefix_end(keys.events)),
                    "limit": self._page.limit,
                },
            ],
        )
        if not metas.kvs:
            self._committed = after
            return FollowPage(revision=0, changes=[])
        meta = self._decode_meta(metas.kvs[0], str(self.location))
        changes = [self._decode_event(kv) for kv in page.kvs]
        changes = [c for c in changes if c.revision <= meta.revision]
        if meta.revision > after and (not changes or changes[0].revision != after + 1):
            resumes = changes[0].revision if changes else "nothing kept"
            raise FollowerBehind(
                f"etcd prefix {self.location}: a follower at revision {after} finds the log "
                f"resuming at {resumes} (compacted past it): it stops, and reloads "
                "when restarted"
            )
        self._committed = changes[-1].revision if changes else after
        return FollowPage(revision=meta.revision, changes=changes)

    async def _read_page(
        self, what: str, asked: int, ranges: list[dict[str, Any]]
    ) -> tuple[RangeResult, RangeResult]:
        """Two ranges in one read-only transaction, the second a page of ``asked`` event keys;
        the page size follows what it weighed (:class:`_PageSize`)."""
        try:
            first, page = await self._client.read_ranges(what, ranges)
        except StoreError:
            self._page.failed()
            raise
        self._page.read(asked, [len(kv.value) for kv in page.kvs])
        return first, page

    async def take_over(self, revision: int) -> bool:
        """A newly elected leader takes the prefix over from ``revision`` (its core's), with
        :attr:`fence` set: False when the log has gone past it (follow more, then again).

        Leftover event keys above the meta revision (a batch the previous leader did not
        finish) are deleted in the take-over's transaction; object keys behind the log are
        brought up to it, as :meth:`load` does.

        Raises:
            LeadershipLost: the fence failed (this replica no longer leads).
            StoreError: etcd is unavailable.
        """
        where = str(self.location)
        kvs, _ = await self._range(self._keys.meta, None, limit=1)
        if not kvs:
            if revision:
                raise DatabaseDamaged(f"etcd prefix {where} lost its meta/revision")
            await self._create()
            return True
        meta = self._decode_meta(kvs[0], where)
        if meta.revision != revision:
            return False
        self._meta = meta
        self._meta_mod = kvs[0].mod_revision
        ops = [self._delete(self._keys.event(meta.revision + 1), prefix_end(self._keys.events))]
        self._meta = msgspec.structs.replace(meta, writer=self._writer)
        await self._txn(ops, self._meta)
        if meta.applied < meta.revision:
            await self._replay(meta, {}, where)
        self._committed = meta.revision
        self._compacted_through = max(0, meta.revision - self.retention)
        log.info("etcd prefix %s: taken over at revision %d", where, meta.revision)
        return True

    async def snapshot(self) -> Snapshot:
        """The committed state as it is, read at one etcd revision, changing nothing (``podium
        db backup``/``check``): the objects (brought up to the log, as :meth:`load` would, if a
        split batch left them behind) and every event kept up to the meta revision.

        Raises:
            DatabaseDamaged: the prefix fails the checks of :meth:`load`.
            StoreError: etcd is unavailable, or the prefix is new (no meta key).
        """
        where = str(self.location)
        keys = self._keys
        kvs, revision = await self._range(keys.meta, None, limit=1)
        if not kvs:
            raise StoreError(f"etcd prefix {where} holds no Podium store (no meta/revision)")
        meta = self._decode_meta(kvs[0], where)
        await self._check_log(meta, where, revision)
        objects: dict[bytes, bytes] = {}
        for key, value in await self._scan(keys.objects, revision):
            try:
                decode_object(value)
            except msgspec.DecodeError as exc:
                raise DatabaseDamaged(
                    f"etcd prefix {where} holds an object key {key.decode()!r} that does not "
                    f"decode: {exc}"
                ) from None
            objects[key] = value
        events = [
            self._decode_event(kv)
            for kv in await self._range_all(keys.events, keys.event(meta.revision + 1), revision)
        ]
        for change in events:
            if change.revision <= meta.applied:
                continue
            key = keys.object(change.kind, change.namespace, change.name)
            if change.type in ("Deleted", "Preempted"):
                objects.pop(key, None)
            else:
                objects[key] = encode_object(change.object)
        return Snapshot(
            revision=meta.revision,
            objects=[decode_object(v) for v in objects.values()],
            events=events,
        )

    async def close(self) -> None:
        """Close the HTTP connections (nothing is in flight: the actor waited for its
        commits and readers)."""
        await self._client.aclose()

    # ----------------------------------------------------------------- writing

    async def _create(self) -> None:
        """A new store: the meta key, only if no one made it meanwhile."""
        meta = self._meta
        answer = await self._client.txn(
            {
                "compare": [
                    {
                        "key": b64(self._keys.meta),
                        "target": "CREATE",
                        "result": "EQUAL",
                        "create_revision": 0,
                    },
                    *self.fence,
                ],
                "success": [self._put(self._keys.meta, encode_meta(meta))],
            },
        )
        if not answer.succeeded:
            raise StoreError(
                f"etcd prefix {self.location}: another daemon created the store meanwhile"
            )
        self._meta_mod = answer.header.revision

    async def _write(
        self,
        previous: int,
        revision: int,
        events: list[dict[str, Any]],
        rest: list[dict[str, Any]],
    ) -> None:
        """Pack ``events`` then ``rest`` into transactions (module docstring)."""
        txns = self._pack(events + rest)
        n_events = len(events)
        done = 0
        committed = previous == revision  # a replay: the log has the batch already
        for index, ops in enumerate(txns):
            done += len(ops)
            if index == len(txns) - 1:
                meta = msgspec.structs.replace(self._meta, revision=revision, applied=revision)
            elif done >= n_events:
                meta = msgspec.structs.replace(self._meta, revision=revision)
            else:
                meta = msgspec.structs.replace(self._meta, revision=previous)
            try:
                await self._txn(ops, meta)
            except EtcdRequestRefused as exc:
                if committed:
                    raise
                if index:
                    # Earlier txns wrote event keys above the revision: invisible, and gone now.
                    start = self._keys.event(previous + 1)
                    cleanup = [self._delete(start, prefix_end(self._keys.events))]
                    await self._txn(cleanup, self._meta)
                raise CommitRefused(
                    f"{exc}; nothing of the write was committed", code=exc.code
                ) from exc
            committed = meta.revision == revision

    def _pack(self, ops: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """Split ``ops`` into transactions within the bounds (one op each kept for the meta)."""
        budget = self.max_request_bytes - TXN_RESERVE_BYTES
        txns: list[list[dict[str, Any]]] = [[]]
        size = 0
        for op in ops:
            weight = _weight(op)
            current = txns[-1]
            if current and (len(current) + 2 > self.max_txn_ops or size + weight > budget):
                txns.append([])
                size = 0
            txns[-1].append(op)
            size += weight
        return txns

    async def _txn(self, ops: list[dict[str, Any]], meta: Meta) -> None:
        """One transaction: compare the meta key (and the fence), then ``ops`` and the meta
        key. Retries while etcd is unavailable; finds out what became of a lost answer."""
        meta = msgspec.structs.replace(meta, n=self._meta.n + 1)
        encoded = encode_meta(meta)
        body = {
            "compare": [
                {
                    "key": b64(self._keys.meta),
                    "target": "MOD",
                    "result": "EQUAL",
                    "mod_revision": self._meta_mod,
                },
                *self.fence,
            ],
            "success": [*ops, self._put(self._keys.meta, encoded)],
        }
        # One deadline for the transaction, its re-sends and the reads that find out what became
        # of a lost answer: a write path that never answers (while reads and the lease's
        # renewals pass) must not hold the batch, and the lead, for ever (issue 25, point 2).
        limit = self._client.unavailable_after
        try:
            with trio.fail_after(limit):
                await self._send(body, encoded)
        except (trio.TooSlowError, EtcdUnavailable) as exc:
            why = (
                "etcd is unavailable: no answer" if isinstance(exc, trio.TooSlowError) else str(exc)
            )
            raise self._gave_up(
                f"a transaction was not answered within unavailableSeconds ({limit:g} s): {why}"
            ) from exc
        self._meta = meta

    async def _send(self, body: dict[str, Any], encoded: bytes) -> None:
        """Send the transaction until etcd answers it, or a lost answer is found applied."""
        while True:
            try:
                answer = await self._client.txn(body)
            except EtcdUnknownOutcome as exc:
                log.warning("%s; reading the meta key back", exc)
                applied = await self._was_applied(encoded)
                if applied is None:
                    continue  # not applied: send it again
                self._meta_mod = applied
                return
            if not answer.succeeded:
                # Our own earlier attempt, whose answer was lost, may have landed meanwhile.
                kvs, _ = await self._range(self._keys.meta, None, limit=1)
                if kvs and kvs[0].value == encoded:
                    self._meta_mod = kvs[0].mod_revision
                    return
                raise await self._lost_compare()
            self._meta_mod = answer.header.revision
            return

    def _gave_up(self, why: str) -> StoreError:
        """A transaction past its deadline: nothing of the batch is acknowledged (it may still
        land: the fence refuses it once the lease is revoked). A replica under leader election
        gives up the lead, as kube-scheduler does when it cannot renew (exit 4: its supervisor
        restarts it as a follower); the one writer stops (exit 1)."""
        if self.fence:
            return LeadershipLost(
                f"etcd prefix {self.location}: {why}; this replica gives up its lease and stops "
                "leading (nothing of the batch was acknowledged)"
            )
        return EtcdUnavailable(
            f"etcd prefix {self.location}: {why}; the daemon stops (nothing of the batch was "
            "acknowledged)"
        )

    async def _was_applied(self, encoded: bytes) -> int | None:
        """The meta key's mod revision if it holds ``encoded`` (our txn applied), else None."""
        while True:
            kvs, _ = await self._range(self._keys.meta, None, limit=1)
            if kvs and kvs[0].value == encoded:
                return kvs[0].mod_revision
            if kvs and kvs[0].mod_revision != self._meta_mod:
                raise await self._lost_compare()
            return None

    async def _lost_compare(self) -> StoreError:
        kvs, _ = await self._range(self._keys.meta, None, limit=1)
        holder = "it is gone"
        if kvs:
            try:
                holder = f"now written by {decode_meta(kvs[0].value).writer}"
            except msgspec.DecodeError:
                holder = "it no longer decodes"
        if self.fence:
            return LeadershipLost(
                f"etcd prefix {self.location}: a transaction's fence failed (this replica no "
                f"longer leads, or meta/revision was {holder}); nothing of the batch was "
                "acknowledged"
            )
        return StoreError(
            f"etcd prefix {self.location}: another writer moved meta/revision ({holder}); "
            "this daemon stops without acknowledging its last batch"
        )

    async def _replay_in_memory(
        self, meta: Meta, objects: dict[bytes, KubeObject], where: str
    ) -> dict[bytes, bytes | None]:
        """Bring ``objects`` up to the log without writing (a follower's load). Returns the
        final state of each object key the changes in (applied, revision] touched (None:
        deleted), encoded, for a writer to put back."""
        final: dict[bytes, bytes | None] = {}
        after = meta.applied
        while after < meta.revision:
            oldest, changes = await self._read_log(after, meta.revision, PAGE)
            if not changes or (oldest is not None and oldest > after + 1):
                raise DatabaseDamaged(
                    f"etcd prefix {where}: the objects reflect revision {meta.applied} and "
                    f"the event log lacks revision {after + 1} to bring them up to "
                    f"{meta.revision}"
                )
            for change in changes:
                key = self._keys.object(change.kind, change.namespace, change.name)
                if change.type in ("Deleted", "Preempted"):
                    final[key] = None
                    objects.pop(key, None)
                else:
                    final[key] = encode_object(change.object)
                    objects[key] = change.object
            after = changes[-1].revision
        return final

    async def _replay(self, meta: Meta, objects: dict[bytes, KubeObject], where: str) -> None:
        """Bring the object keys up to the log: the final state of each object the changes
        in (applied, revision] touched, written back and held in ``objects``."""
        log.info(
            "etcd prefix %s: objects reflect revision %d, the log %d: replaying",
            where,
            meta.applied,
            meta.revision,
        )
        final = await self._replay_in_memory(meta, objects, where)
        ops = [
            self._put(key, data) if data is not None else self._delete(key, None)
            for key, data in final.items()
        ]
        await self._write(meta.revision, meta.revision, [], ops)

    async def _compact_history(self) -> None:
        """Every :attr:`compaction_interval` seconds, compact etcd's history up to the etcd
        revision of the previous round, as the API server's compactor does (staging/src/k8s.io/
        apiserver/pkg/storage/etcd3/compact.go): the deleted event keys' history goes, and any
        other client of the cluster keeps at least one interval of history for its watches."""
        if not self.compaction_interval:
            return
        now = time.monotonic()
        if now - self._compaction_round < self.compaction_interval:
            return
        self._compaction_round = now
        mark, self._compaction_mark = self._compaction_mark, self._meta_mod
        if not mark:
            return
        try:
            await self._client.compact(mark)
        except StoreError as exc:
            # Compacted further already (etcd's own auto-compaction, or another client).
            log.info("etcd compaction to revision %d: %s", mark, exc)

    # ----------------------------------------------------------------- reading

    async def _range(
        self,
        key: bytes,
        end: bytes | None,
        *,
        limit: int = 0,
        revision: int = 0,
        sort_desc: bool = False,
    ) -> tuple[list[KeyValue], int]:
        """The keys in [key, end) (``end`` None: ``key`` alone) at etcd ``revision`` (0: the
        newest), and the etcd revision read."""
        body: dict[str, Any] = {"key": b64(key), "limit": limit}
        if end is not None:
            body["range_end"] = b64(end)
        if revision:
            body["revision"] = revision
        if sort_desc:
            body["sort_order"] = "DESCEND"
            body["sort_target"] = "KEY"
        answer = await self._client.range(body)
        return answer.kvs, answer.header.revision

    async def _scan(self, prefix: bytes, revision: int) -> list[tuple[bytes, bytes]]:
        """Every key under ``prefix`` at etcd ``revision`` and its value, read in pages of
        :data:`PAGE`."""
        found: list[tuple[bytes, bytes]] = []
        start = prefix
        end = prefix_end(prefix)
        while True:
            kvs, _ = await self._range(start, end, limit=PAGE, revision=revision)
            found.extend((kv.key, kv.value) for kv in kvs)
            if len(kvs) < PAGE:
                return found
            start = kvs[-1].key + b"\0"

    async def _range_all(self, start: bytes, end: bytes, revision: int) -> list[KeyValue]:
        """Every key in [start, end) at etcd ``revision``, in pages of :data:`PAGE`."""
        found: list[KeyValue] = []
        while True:
            kvs, _ = await self._range(start, end, limit=PAGE, revision=revision)
            found.extend(kvs)
            if len(kvs) < PAGE:
                return found
            start = kvs[-1].key + b"\0"

    async def _read_log(
        self, after: int, through: int, limit: int
    ) -> tuple[int | None, list[Change]]:
        saved = self._committed
        self._committed = through
        try:
            return await self.read_events(after, limit)
        finally:
            self._committed = saved

    async def _check_log(self, meta: Meta, where: str, revision: int) -> None:
        """The log ends at the meta revision, and its newest keys decode."""
        if meta.revision == 0:
            return
        kvs, _ = await self._range(
            self._keys.events,
            self._keys.event(meta.revision + 1),
            limit=tuning.EVENTS_CHECKED_AT_START,
            revision=revision,
            sort_desc=True,
        )
        newest = self._revision_of(kvs[0]) if kvs else None
        if newest != meta.revision:
            log_end = "is empty" if newest is None else f"ends at revision {newest}"
            raise DatabaseDamaged(
                f"etcd prefix {where} has meta revision {meta.revision} but its event log {log_end}"
            )
        for kv in kvs:
            self._decode_event(kv)

    def _decode_meta(self, kv: KeyValue, where: str) -> Meta:
        try:
            meta = decode_meta(kv.value)
        except msgspec.DecodeError as exc:
            raise DatabaseDamaged(
                f"etcd prefix {where} has a meta/revision that does not decode: {exc}"
            ) from None
        if meta.schema > SCHEMA_VERSION:
            raise StoreError(
                f"etcd prefix {where} has schema version {meta.schema}, made by a newer Podium "
                f"(this one knows up to {SCHEMA_VERSION})"
            )
        return meta

    def _decode_event(self, kv: KeyValue) -> Change:
        revision = self._revision_of(kv)
        try:
            return decode_event(revision, kv.value)
        except msgspec.DecodeError as exc:
            raise DatabaseDamaged(
                f"the event key of revision {revision} in etcd prefix {self.location} does not "
                f"decode: {exc}"
            ) from None

    def _revision_of(self, kv: KeyValue) -> int:
        key = kv.key
        try:
            return self._keys.revision_of(key)
        except ValueError:
            raise DatabaseDamaged(
                f"etcd prefix {self.location} holds an event key {key.decode(errors='replace')!r} "
                "that is not a revision"
            ) from None

    # ----------------------------------------------------------------- ops

    @staticmethod
    def _put(key: bytes, value: bytes) -> dict[str, Any]:
        return {"request_put": {"key": b64(key), "value": b64(value)}}

    @staticmethod
    def _delete(key: bytes, end: bytes | None) -> dict[str, Any]:
        body = {"key": b64(key)}
        if end is not None:
            body["range_end"] = b64(end)
        return {"request_delete_range": body}


def _weight(op: dict[str, Any]) -> int:
    """The bytes ``op`` adds to a transaction: its key and value (sent as base64, counted
    as etcd counts them, decoded) and protobuf's framing."""
    body = op.get("request_put") or op.get("request_delete_range") or {}
    encoded = len(body.get("key", "")) + len(body.get("value", ""))
    return encoded * 3 // 4 + OP_OVERHEAD_BYTES


def etcd_durability(location: EtcdLocation, settings: PodiumSettings) -> EtcdDurability:
    """The durability ``podium`` describes: the prefix at ``location``, ``podium.etcd``'s TLS,
    user and password file and timeouts, ``eventRetentionRevisions`` (as
    :func:`~podium.store.sqlite.sqlite_durability`).

    Raises:
        OSError: the password file cannot be read.
    """
    etcd = settings.etcd
    credentials = etcd_credentials(etcd)
    return EtcdDurability(
        location,
        tls=credentials.tls,
        user=credentials.user,
        password=credentials.password,
        retention=settings.event_retention_revisions,
        request_timeout=etcd.request_timeout_seconds,
        unavailable_after=etcd.unavailable_seconds,
        compaction_interval=etcd.compaction_interval_seconds,
        max_request_bytes=etcd.max_request_bytes,
    )


def etcd_store(
    inbox: trio.MemoryReceiveChannel[StoreMsg],
    subscribers: Sequence[Subscriber],
    durability: EtcdDurability,
    *,
    leader: Callable[[], str | None] | None = None,
) -> StoreActor:
    """The daemon's store actor on etcd: ``durability`` (:func:`etcd_durability`), a core
    keeping the recent part of the log in memory, and the group commit window (as
    :func:`~podium.store.sqlite.sqlite_store`, with the same :mod:`~podium.store.tuning`).

    Args:
        inbox: its mailbox; the store stops when every sender has closed it.
        subscribers: who receives Recovered and every Committed.
        durability: where the store lives.
        leader: given for a replica under leader election: it starts as a follower (writes
            answered ``not_leader`` with this address; the core follows the log) until
            :meth:`~podium.store.actor.StoreActor.promote`.
    """
    if leader is not None:
        durability.standby = True
    return StoreActor(
        inbox,
        subscribers,
        durability,
        core=StoreCore(retention=min(durability.retention, tuning.MEMORY_LOG)),
        commit_window=tuning.COMMIT_WINDOW_SECONDS,
        standby=Standby(durability, leader) if leader is not None else None,
    )
