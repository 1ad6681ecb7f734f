"""The store actor: the one source of truth, group-committing what its mailbox holds.

Kubernetes counterpart: the API server with etcd behind it (a write is acknowledged once it is
committed; watchers see the committed changes in revision order, and resume from a revision).

Each round: receive one message, wait out the group commit window, drain every message already
waiting, then

    apply the batch to the core, in order ──▶ commit ──▶ publish one Committed ──▶ reply

so no reply and no published change ever precedes the commit of what it reports. A rejected
write affects only itself; reads are answered in batch order (reflecting the writes before
them) and released with the other replies. A batch the durability refuses for what it is
(:class:`~podium.protocol.errors.CommitRefused`: an object too large for etcd) is taken back
from the core and served again a message at a time (a bind batch a binding at a time, but a
pod group's bindings together: a group is never split), so only the write that cannot be
stored is rejected, with that code; the daemon goes on.

A bind batch's pod groups (:attr:`~podium.store.mail.Binding.group`) are all or nothing in
the core (one transaction each, :meth:`~podium.store.core.StoreCore.bind`) and so in the
durability: a batch is one commit, whole or not at all, on every backend.

Where the committed state lives is a component, not a subclass: a :class:`Durability` loads
the state at start, makes each batch durable and reads the part of the event log the core no
longer keeps. Three implement it: :class:`~podium.store.memory.InMemory` keeps nothing
(``podium simulate``, the actor tests); the daemon's two, built by one factory shape
(``sqlite_store``/``etcd_store`` over ``sqlite_durability``/``etcd_durability``, tuned by
:mod:`podium.store.tuning`), are :class:`~podium.store.sqlite.SqliteDurability`, a SQLite file
written from its own thread, and :class:`~podium.store.etcd.durability.EtcdDurability`, a
prefix in etcd.

Owns: the :class:`~podium.store.core.StoreCore` and its :class:`Durability`.
Mailbox: :data:`~podium.store.mail.StoreMsg` (WriteObjects, BindPods, RecordUnschedulable,
Evict, ReadObjects, ReadEvents, ReadStats).
Emits: :class:`~podium.store.mail.Recovered` once, then one
:class:`~podium.store.mail.Committed` per batch with changes, to every subscriber; replies on
each request's one-shot channel.
Metrics: ``podium_store_commit_duration_seconds`` and ``podium_store_commit_batch_size`` for
each commit with changes, ``podium_store_commit_errors_total``, ``podium_store_revision``, and
``podium_recovery_duration_seconds`` (:attr:`StoreActor.recovery_seconds`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeAlias, assert_never

import msgspec
import trio

from podium.actors.runtime.mailbox import drain, reply, send
from podium.protocol import metrics
from podium.protocol.errors import CommitRefused, DatabaseDamaged, FollowerBehind, StoreError
from podium.protocol.objects import KubeObject
from podium.store.core import StoreCore, StoreRejected, bind_units
from podium.store.mail import (
    BindFailure,
    Binding,
    BindPods,
    BindResult,
    Change,
    Committed,
    EventsResult,
    Evict,
    EvictResult,
    ReadEvents,
    ReadObjects,
    ReadResult,
    ReadStats,
    RecordUnschedulable,
    Recovered,
    StoreFailure,
    StoreMsg,
    Victim,
    WriteObjects,
    WriteResult,
)

__all__ = [
    "FRESH_WAIT_SECONDS",
    "Durability",
    "FollowPage",
    "Following",
    "Recovery",
    "Standby",
    "StoreActor",
    "Subscriber",
]

log = logging.getLogger("podium.store")

Subscriber: TypeAlias = "trio.MemorySendChannel[Recovered | Committed]"
_Reply: TypeAlias = Callable[[], None]

FRESH_WAIT_SECONDS = 3.0
"""How long a follower holds a watch from a revision it has not read yet (the API server's
watch cache: staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go@v1.14
``blockTimeout``, "Too large resource version" after it)."""


@dataclass(frozen=True, slots=True)
class Recovery:
    """The committed state a :class:`Durability` found at start.

    Attributes:
        source: where it was read from (named in the log line).
        revision: the last committed revision.
        objects: every object, as stored.
    """

    source: str
    revision: int
    objects: list[KubeObject]


class Durability(Protocol):
    """Where the store's committed state lives: what the store actor holds, not what it is.

    The actor calls :meth:`load` once, then :meth:`commit` once per batch with changes (and
    :meth:`read_events` for watchers behind the core's memory), and :meth:`close` on the way
    out whatever happened, also when :meth:`load` failed part way.

    Attributes:
        keeps_log: whether the log reaches back further than the core's memory; a read the core
            can no longer answer then goes to :meth:`read_events` instead of ``gone``.
    """

    keeps_log: bool

    async def load(self) -> Recovery | None:
        """Open the backend and read the committed state.

        Returns:
            The state to restore into the (empty) core, or None when nothing is kept (the core
            is served as it was given).

        Raises:
            StoreError: the backend is held by another daemon, unreadable, or from a newer
                Podium.
        """
        ...

    async def commit(self, changes: list[Change]) -> None:
        """Make a batch's changes (at least one, in revision order) durable, all or none.

        Cancellation: the actor shields the call; a commit handed over is waited for until
        the actor itself is cancelled (the shutdown grace is over, or another actor failed):
        then it is abandoned, and nothing of the batch is acknowledged.

        Raises:
            StoreError: the commit failed; the core is ahead of the backend (fail-stop).
        """
        ...

    async def read_events(self, after: int, limit: int = 0) -> tuple[int | None, list[Change]]:
        """The kept changes with revision > ``after`` (the first ``limit`` of them; 0: all)
        and the oldest revision kept (None: the log is empty).

        Concurrency: called from the actor's reader tasks while commits go on, several at a
        time; it must not hold up :meth:`commit` (read on a connection of its own)."""
        ...

    async def close(self) -> None:
        """Finish what was handed over and release the backend."""
        ...


@dataclass(frozen=True, slots=True)
class FollowPage:
    """What one read of the shared log found.

    Attributes:
        revision: the leader's last committed revision, as this read saw it (0: no store yet).
        changes: the changes after the follower's revision, in revision order, up to
            ``revision`` at most: a page (the follower reads again while it is behind).
    """

    revision: int
    changes: list[Change]


class Following(Protocol):
    """A durability a follower replica reads the leader's commits from (etcd's)."""

    async def follow(self, after: int) -> FollowPage:
        """A page of the changes committed after ``after``, and the leader's revision.

        The follower applies the page before it asks again; the durability's own reads of
        the log (:meth:`Durability.read_events`) go no further than the pages it handed out,
        so that a watcher paging through the log never passes the follower's revision."""
        ...

    async def take_over(self, revision: int) -> bool:
        """Become the writer from ``revision`` (False: the log went on; follow, then retry)."""
        ...


@dataclass(frozen=True, slots=True)
class Standby:
    """How a follower replica's store runs (leader election, issue 20).

    Attributes:
        source: the shared log (the durability itself).
        leader: the leader's protocol address, for ``not_leader`` answers (None: unknown).
        poll_seconds: how often the log is read for the leader's new commits.
        fresh_wait_seconds: how long a watch from a revision the follower has not read yet
            waits for it (:data:`FRESH_WAIT_SECONDS`).
    """

    source: Following
    leader: Callable[[], str | None]
    poll_seconds: float = 0.05
    fresh_wait_seconds: float = FRESH_WAIT_SECONDS


class StoreActor:
    """The store actor over a :class:`StoreCore` and a :class:`Durability`.

    Args:
        inbox: its mailbox; the store stops when every sender has closed it.
        subscribers: who receives Recovered and every Committed (the node cache, the queue,
            the watch hub); closed when the store stops.
        durability: where committed batches go.
        core: the state to serve (a fresh, empty one by default); a recovered state is
            restored into it.
        commit_window: seconds a batch waits after the previous one began, gathering writes
            (0: none).
        standby: run as a follower replica: writes are answered ``not_leader``, and the core
            follows the shared log (publishing each page read as a Committed) until
            :meth:`promote` makes this store the writer. A watch from a revision past the
            follower's waits for it (below).

    A follower reads the leader's commits a poll after they are acknowledged, so a client
    that wrote on the leader and watches a follower from the revision it was answered may
    ask for one the follower has not read yet. Such a read waits, as the API server's watch
    cache does (``waitUntilFreshAndBlock``): the follower reads the log at once, and the
    read is answered when the core reaches its revision; ``invalid`` when a read of the log
    begun after it arrived shows the leader has not committed it (it is no store revision);
    ``unavailable`` ("too large resource version") when :attr:`Standby.fresh_wait_seconds`
    pass first (the log cannot be read, or the follower is far behind)::

        ReadEvents(after > core) ──▶ wake the follow loop ──▶ core reaches after ──▶ answer
                                               │
                                               ├──▶ a later read: leader below after ──▶ invalid
                                               └──▶ fresh_wait_seconds ──▶ unavailable

    Attributes:
        recovery_seconds: how long this start's recovery took (0 when nothing was recovered).
    """

    def __init__(
        self,
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[Subscriber],
        durability: Durability,
        *,
        core: StoreCore | None = None,
        commit_window: float = 0.0,
        standby: Standby | None = None,
    ) -> None:
        self._inbox = inbox
        self._standby = standby
        self.leading = standby is None
        self._promote = trio.Event()
        self._promoted = trio.Event()
        self._subscribers = list(subscribers)
        self._durability = durability
        self.core = core if core is not None else StoreCore()
        self.commit_window = commit_window
        self.recovery_seconds = 0.0
        self._commit_seconds = 0.0
        self._last_commit = -math.inf
        self._readers: trio.Nursery | None = None
        # The follow loop's reads of the log, for reads waiting for a revision: how many have
        # begun, the number and leader revision of the last one done, a wake-up for the loop,
        # and an event set (and replaced) after each read.
        self._following = standby is not None
        self._polls_begun = 0
        self._last_poll = (0, 0)
        self._poll_now = trio.Event()
        self._polled = trio.Event()
        self._commit_shield: trio.CancelScope | None = None  # the commit in flight's
        self._abandoning = False  # cancelled: a commit's shield is lifted at once

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Recover, publish Recovered, signal readiness, then serve batches until the inbox
        closes.

        Raises:
            StoreError: the durability could not load, or a commit failed.

        Cancellation: a batch is applied, committed and published without a checkpoint between
        the core and the subscribers except when a subscriber's mailbox is full; the
        subscribers are closed on the way out either way, then the durability (shielded).
        """
        try:
            started = time.perf_counter()
            recovery = await self._durability.load()
            if recovery is not None:
                self.core.restore(recovery.revision, recovery.objects)
                self.recovery_seconds = time.perf_counter() - started
                log.info(
                    "recovered %s at revision %d: %d objects in %.3f s",
                    recovery.source,
                    recovery.revision,
                    len(recovery.objects),
                    self.recovery_seconds,
                )
            # Reads of the log on disk run in their own tasks, so commits go on meanwhile; the
            # nursery waits for them (one page each) before the durability closes.
            failed: Exception | None = None
            async with trio.open_nursery() as readers:
                self._readers = readers
                following = trio.CancelScope()
                if self._standby is not None:
                    readers.start_soon(self._follow_until, self._standby, following)
                watching = trio.CancelScope()
                readers.start_soon(self._abandon_commits_when_cancelled, watching)
                try:
                    await self._serve_inbox(task_status)
                    following.cancel()
                    watching.cancel()
                except Exception as exc:
                    # The store's own failure (a commit's) leaves as itself, not in a group
                    # with the readers it cancels.
                    failed = exc
                    readers.cancel_scope.cancel("the store failed")
            if failed is not None:
                raise failed
        finally:
            with trio.CancelScope(shield=True):
                await self._durability.close()

    async def _abandon_commits_when_cancelled(self, scope: trio.CancelScope) -> None:
        """Lift the commits' shield once the actor is cancelled from outside (its own ``scope``
        ends this task quietly): a commit etcd never answers then ends with the shutdown
        grace instead of holding the daemon (issue 25, point 2)."""
        with scope:
            try:
                await trio.sleep_forever()
            finally:
                if not scope.cancel_called:
                    self._abandoning = True
                    if self._commit_shield is not None:
                        self._commit_shield.cancel("the store is cancelled during a commit")

    async def promote(self) -> None:
        """Become the writer (this replica was elected): follow the log to its end, take the
        durability over (with the fence already set), then serve writes. Returns once
        writes are served."""
        self._promote.set()
        await self._promoted.wait()

    async def _follow_until(self, standby: Standby, scope: trio.CancelScope) -> None:
        try:
            with scope:
                await self._follow(standby)
        finally:
            # Promoted, stopping or failed: reads waiting for a revision wait no more.
            self._following = False
            self._polled.set()

    async def _follow(self, standby: Standby) -> None:
        """A follower's loop: apply and publish the leader's commits until promoted; a read
        waiting for a revision (:meth:`_answer_when_read`) cuts its sleep short."""
        while True:
            self._polls_begun += 1
            poll = self._polls_begun
            try:
                page = await standby.source.follow(self.core.revision)
            except (DatabaseDamaged, FollowerBehind):
                raise
            except StoreError as exc:
                # A follower's state is only stale meanwhile; the leader's commits wait in etcd.
                log.warning("following the store: %s", exc)
                await trio.sleep(standby.poll_seconds * 10)
                continue
            published = self.core.follow(page.changes) if page.changes else []
            self._last_poll = (poll, page.revision)
            self._polled.set()
            self._polled = trio.Event()
            if published:
                metrics.STORE_REVISION.set(self.core.revision)
                await self._publish(Committed(revision=self.core.revision, changes=published))
                continue
            if self._promote.is_set() and await standby.source.take_over(self.core.revision):
                self.leading = True
                self._promoted.set()
                self._polled.set()  # waiting reads: the core is the store's truth now
                log.info("store: leading from revision %d", self.core.revision)
                return
            with trio.move_on_after(standby.poll_seconds):
                await self._poll_now.wait()
            self._poll_now = trio.Event()

    async def _answer_when_read(self, msg: ReadEvents, standby: Standby) -> None:
        """Answer a follower's read from a revision past its own once the core has it
        (class docstring)."""
        asked = self._polls_begun
        leader: int | None = None
        with trio.move_on_after(standby.fresh_wait_seconds):
            while self._following and not self.leading and self.core.revision < msg.after:
                poll, committed = self._last_poll
                if poll > asked and committed < msg.after:
                    leader = committed
                    break
                polled = self._polled
                self._poll_now.set()
                await polled.wait()
        core = self.core
        if self.leading or core.revision >= msg.after:
            if self._is_behind_memory(msg):
                await self._answer_kept_log(msg)
                return
            try:
                revision, events = core.events_after(msg.after)
            except StoreRejected as exc:
                reply(msg.reply, exc.failure())
            else:
                reply(msg.reply, EventsResult(revision=revision, changes=events))
            return
        if leader is not None:
            refused = StoreRejected(
                "invalid",
                f"revision {msg.after} is not a store revision; the current revision is {leader}",
            )
        else:
            refused = StoreRejected(
                "unavailable",
                f"too large resource version: {msg.after}, current: {core.revision}: this "
                f"follower did not read it from the log within {standby.fresh_wait_seconds:g} "
                "s; watch again, or on the leader",
            )
        reply(msg.reply, refused.failure())

    async def _serve_inbox(self, task_status: trio.TaskStatus[None]) -> None:
        try:
            async with self._inbox:
                metrics.RECOVERY_DURATION.set(self.recovery_seconds)
                metrics.STORE_REVISION.set(self.core.revision)
                await self._publish(
                    Recovered(revision=self.core.revision, objects=self.core.all_objects())
                )
                task_status.started()
                while True:
                    try:
                        batch = [await self._inbox.receive()]
                    except trio.EndOfChannel:
                        return
                    if self.commit_window:
                        # Group commit: let more writes join this batch, so that a commit's
                        # fixed cost (the hand-over to the database thread) is paid less often.
                        await trio.sleep_until(self._last_commit + self.commit_window)
                    batch += drain(self._inbox)
                    self._last_commit = trio.current_time()
                    await self._serve(batch)
        finally:
            for subscriber in self._subscribers:
                subscriber.close()

    async def _serve(self, batch: list[StoreMsg]) -> None:
        changes, replies, behind, ahead = self._apply(batch)
        self._commit_seconds = 0.0
        if changes:
            # The batch applied and its rows encoded (the durability's commit, up to its
            # hand-over) are two trio steps, not one: a bind batch's were ~1.3 ms together,
            # waited for whole by a decision in flight (docs/benchmarks.md, "what the slow
            # attempts held"). A schedule point, not a cancel point: between the two, the core
            # holds the batch uncommitted, as it does while the durability commits.
            await trio.lowlevel.cancel_shielded_checkpoint()
            started = time.perf_counter()
            # Shielded: a commit handed over finishes anyway; waiting for it lets its replies go.
            refused: CommitRefused | None = None
            # The shield holds until the actor itself is cancelled (the shutdown grace is
            # over): then nothing of the batch is acknowledged, and the daemon exits rather
            # than wait for an answer that may never come (issue 25, point 2).
            with trio.CancelScope(shield=True) as shield:
                self._commit_shield = shield
                if self._abandoning:
                    shield.cancel("the store is cancelled")
                try:
                    await self._durability.commit(changes)
                except CommitRefused as exc:
                    metrics.STORE_COMMIT_ERRORS.inc()
                    refused = exc
                except Exception:
                    # Counted on the way out: the failure stops the daemon (fail-stop).
                    metrics.STORE_COMMIT_ERRORS.inc()
                    raise
                finally:
                    self._commit_shield = None
            if shield.cancelled_caught:
                # Abandoned: no reply goes, nothing is published; the actor's own cancellation
                # goes on from this checkpoint (the raise is for a caller that was not).
                await trio.lowlevel.checkpoint()
                raise StoreError("a commit was abandoned: the store was cancelled during it")
            if refused is not None:
                # Nothing of it was committed: the core takes it back, nothing is published,
                # and each write is tried again on its own.
                self.core.undo(changes)
                await self._serve_refused(batch, refused)
                return
            self._commit_seconds = time.perf_counter() - started
            metrics.STORE_COMMIT_DURATION.observe(self._commit_seconds)
            metrics.STORE_COMMIT_BATCH_SIZE.observe(len(changes))
            metrics.STORE_REVISION.set(changes[-1].revision)
            await self._publish(Committed(revision=changes[-1].revision, changes=changes))
        for send_reply in replies:
            send_reply()
        # Reads behind the core's memory start after the commit, so they see it too; each in
        # its own task, off this loop (a watch from revision 1 once stalled every put for 6.7 s).
        assert self._readers is not None or not (behind or ahead)
        for msg in behind:
            assert self._readers is not None
            self._readers.start_soon(self._answer_kept_log, msg)
        for msg in ahead:
            assert self._readers is not None and self._standby is not None
            self._readers.start_soon(self._answer_when_read, msg, self._standby)

    async def _serve_refused(self, batch: list[StoreMsg], refused: CommitRefused) -> None:
        """Serve a batch whose commit the durability refused as a request (its size): each
        message again alone, so that only the write that cannot be stored is rejected; a
        bind batch's units each alone (a lone binding, or every binding of one pod group:
        a group is never split), so the others of it still commit."""
        if len(batch) > 1:
            for msg in batch:
                await self._serve([msg])
            return
        (msg,) = batch
        log.warning("the store refused a write: %s", refused)
        failure = StoreRejected(refused.code, str(refused)).failure()
        match msg:
            case BindPods():
                units = bind_units(msg.bindings)
                if len(units) > 1:
                    await self._bind_unit_by_unit(msg, units)
                    return
                # One lone binding, or one pod group: refused whole.
                (unit,) = units
                cause = str(refused)
                if unit[0].group:
                    cause = (
                        f"pod group {unit[0].group}: its {len(unit)} bindings were refused "
                        f"together, none is bound: {refused}"
                    )
                failed = [BindFailure(binding=b, code=refused.code, message=cause) for b in unit]
                self._reply_bound(msg.reply, self.core.revision, failed)
            case WriteObjects() | Evict():
                reply(msg.reply, failure)
            case RecordUnschedulable():
                pass  # the next failed attempt records it again
            case ReadObjects() | ReadEvents() | ReadStats():
                raise AssertionError(f"a read was refused as a commit: {msg}")
            case _:
                assert_never(msg)

    async def _bind_unit_by_unit(self, msg: BindPods, units: list[list[Binding]]) -> None:
        """Commit each unit of ``msg`` (:func:`~podium.store.core.bind_units`: a lone binding,
        or a pod group's bindings together) alone and answer ``msg`` once, as its batch would
        be."""
        revision = self.core.revision
        failed: list[BindFailure] = []
        seconds = 0.0
        for unit in units:
            tx, rx = trio.open_memory_channel[BindResult | StoreFailure](1)
            await self._serve([BindPods(bindings=unit, reply=tx)])
            result = rx.receive_nowait()
            assert isinstance(result, BindResult)  # a bind is never refused whole
            revision = max(revision, result.revision)
            failed.extend(result.failed)
            seconds += result.commit_seconds
        self._commit_seconds = seconds
        self._reply_bound(msg.reply, revision, failed)

    def _reply_bound(
        self,
        channel: trio.MemorySendChannel[BindResult | StoreFailure],
        revision: int,
        failed: list[BindFailure],
    ) -> None:
        """A bind's reply, built when it is released: it reports the batch's commit time."""
        result = BindResult(revision=revision, failed=failed, commit_seconds=self._commit_seconds)
        reply(channel, result)

    def _is_behind_memory(self, msg: ReadEvents) -> bool:
        """Whether the durability answers ``msg`` rather than the core: decided when the read
        is applied, after the batch's earlier writes (which may push ``after`` out of the core's
        memory)."""
        core = self.core
        return (
            self._durability.keeps_log
            and 0 <= msg.after <= core.revision
            and not core.keeps_changes_after(msg.after)
        )

    async def _answer_kept_log(self, msg: ReadEvents) -> None:
        reply(msg.reply, await self._read_kept_log(msg.after, msg.limit))

    async def _read_kept_log(self, after: int, limit: int) -> EventsResult | StoreFailure:
        try:
            oldest, changes = await self._durability.read_events(after, limit)
        except DatabaseDamaged as exc:
            # One damaged row fails this read, not the daemon: stopping would only start a
            # crash loop at the next watcher (the check at start reads the newest rows only).
            log.error("reading the event log after revision %d: %s", after, exc)
            return StoreRejected("internal", f"the event log is damaged: {exc}").failure()
        except StoreError as exc:
            # etcd unavailable, or a page not answered within the request timeout: the watcher
            # is told to retry, and the store goes on (a commit that fails stops it itself).
            log.warning("reading the event log after revision %d: %s", after, exc)
            return StoreRejected(
                "unavailable",
                f"the event log after revision {after} could not be read: {exc}; watch again",
            ).failure()
        if changes or (oldest is not None and after + 1 >= oldest):
            # A page of the disk's log: the core may hold the rest, so the reader asks again.
            return EventsResult(revision=self.core.revision, changes=changes, more=bool(changes))
        kept = oldest if oldest is not None else self.core.revision
        return StoreRejected(
            "gone",
            f"revision {after} is compacted; the oldest kept is {kept}: list again "
            "and watch from the list's revision",
            revision=kept,
        ).failure()

    def _apply(
        self, batch: list[StoreMsg]
    ) -> tuple[list[Change], list[_Reply], list[ReadEvents], list[ReadEvents]]:
        """Apply every message to the core in order; the replies wait for the commit, the
        reads behind the core's memory for the durability, and a follower's reads past its
        revision for the follow loop."""
        changes: list[Change] = []
        replies: list[_Reply] = []
        behind: list[ReadEvents] = []
        ahead: list[ReadEvents] = []
        core = self.core
        for msg in batch:
            if not self.leading and not isinstance(msg, ReadObjects | ReadEvents | ReadStats):
                if not isinstance(msg, RecordUnschedulable):
                    replies.append(partial(reply, msg.reply, self._not_leader()))
                continue
            match msg:
                case WriteObjects():
                    try:
                        revision, statuses, written = core.write(msg.puts, msg.deletes)
                    except StoreRejected as exc:
                        replies.append(partial(reply, msg.reply, exc.failure()))
                    else:
                        if msg.trace is not None:
                            # The request's trace rides with its changes to the queue, so the
                            # pod's scheduling attempts can link to it.
                            written = [msgspec.structs.replace(c, trace=msg.trace) for c in written]
                        changes.extend(written)
                        result = WriteResult(revision=revision, objects=statuses)
                        replies.append(partial(reply, msg.reply, result))
                case BindPods():
                    revision, bound, failed = core.bind(msg.bindings)
                    changes.extend(bound)
                    replies.append(partial(self._reply_bound, msg.reply, revision, failed))
                case RecordUnschedulable():
                    change = core.record_unschedulable(
                        msg.namespace, msg.name, msg.uid, msg.message
                    )
                    if change is not None:
                        changes.append(change)
                case Evict():
                    preemptor = Victim(namespace=msg.namespace, name=msg.name, uid=msg.uid)
                    try:
                        revision, evicted_changes, evicted = core.evict(
                            preemptor, msg.node, msg.victims, msg.group
                        )
                    except StoreRejected as exc:
                        replies.append(partial(reply, msg.reply, exc.failure()))
                    else:
                        changes.extend(evicted_changes)
                        # The victims' changes come first; a Modified one is the nomination.
                        nominated = any(c.type == "Modified" for c in evicted_changes)
                        evict_result = EvictResult(
                            revision=revision, evicted=evicted, nominated=nominated
                        )
                        replies.append(partial(reply, msg.reply, evict_result))
                case ReadObjects():
                    remaining: int | None = 0
                    try:
                        if msg.name:
                            revision, items = core.read(
                                msg.kind, msg.name, msg.namespace, msg.selector
                            )
                        else:
                            revision, items, remaining = core.read_page(
                                msg.kind, msg.namespace, msg.selector, msg.after, msg.limit
                            )
                    except StoreRejected as exc:
                        replies.append(partial(reply, msg.reply, exc.failure()))
                    else:
                        read = ReadResult(revision=revision, items=items, remaining=remaining)
                        replies.append(partial(reply, msg.reply, read))
                case ReadEvents():
                    if self._is_behind_memory(msg):
                        behind.append(msg)
                        continue
                    if not self.leading and msg.after > core.revision:
                        ahead.append(msg)
                        continue
                    try:
                        revision, events = core.events_after(msg.after)
                    except StoreRejected as exc:
                        replies.append(partial(reply, msg.reply, exc.failure()))
                    else:
                        kept = EventsResult(revision=revision, changes=events)
                        replies.append(partial(reply, msg.reply, kept))
                case ReadStats():
                    stats = core.stats()
                    if self._standby is not None:
                        stats = msgspec.structs.replace(
                            stats, leading=self.leading, leader=self._standby.leader()
                        )
                    replies.append(partial(reply, msg.reply, stats))
                case _:
                    assert_never(msg)
        return changes, replies, behind, ahead

    def _not_leader(self) -> StoreFailure:
        leader = self._standby.leader() if self._standby is not None else None
        where = f"the leader is {leader}" if leader else "no replica leads at the moment"
        return StoreRejected(
            "not_leader", f"this replica does not lead: {where}; send writes there", leader=leader
        ).failure()

    async def _publish(self, msg: Recovered | Committed) -> None:
        """Hand ``msg`` to every subscriber, awaiting only a full mailbox; a subscriber that
        went away is dropped (it is shutting down)."""
        for subscriber in list(self._subscribers):
            try:
                await send(subscriber, msg)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                log.warning("a store subscriber went away; it gets no more changes")
                self._subscribers.remove(subscriber)
