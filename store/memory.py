"""The in-memory store actor: the one source of truth, group-committing what its mailbox holds.

Kubernetes counterpart: the API server with etcd behind it (a write is acknowledged once it is
committed; watchers see the committed changes in revision order). ``podium simulate`` and the
actor tests use it; the daemon's :class:`~podium.store.sqlite.SqliteStore` is this loop with a
durable transaction in :meth:`MemoryStore._commit` (and the event log read from disk).

Each round: receive one message, drain every message already waiting (group commit), then

    apply the batch to the core, in order ──▶ commit ──▶ publish one Committed ──▶ reply

so no reply and no published change ever precedes the commit of what it reports. A rejected
write affects only itself; reads are answered in batch order (reflecting the writes before
them) and released with the other replies.

Owns: the :class:`~podium.store.core.StoreCore`.
Mailbox: :data:`~podium.store.mail.StoreMsg` (WriteObjects, BindPods, RecordUnschedulable,
Evict, ReadObjects, ReadEvents, ReadStats).
Emits: :class:`~podium.store.mail.Recovered` once, then one
:class:`~podium.store.mail.Committed` per batch with changes, to every subscriber; replies on
each request's one-shot channel.
Metrics: ``podium_store_commit_duration_seconds`` and ``podium_store_commit_batch_size`` for
each commit with changes (so both stores report them), ``podium_store_revision``, and
``podium_recovery_duration_seconds`` (:attr:`MemoryStore.recovery_seconds`, 0 in memory).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import TypeAlias, TypeVar, assert_never

import msgspec
import trio

from podium.protocol import metrics
from podium.store.core import StoreCore, StoreRejected
from podium.store.mail import (
    BindFailure,
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

__all__ = ["MemoryStore"]

log = logging.getLogger("podium.store")

_T = TypeVar("_T")
Subscriber: TypeAlias = "trio.MemorySendChannel[Recovered | Committed]"
_Reply: TypeAlias = Callable[[], None]


def _replier(channel: trio.MemorySendChannel[_T], answer: _T) -> _Reply:
    """A deferred reply on a one-shot channel; a requester that went away is ignored."""

    def send() -> None:
        try:
            channel.send_nowait(answer)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except trio.WouldBlock:
            # Reply channels are opened with capacity 1 by contract; a full one means the
            # requester broke it, and the store must not wait for anyone.
            log.warning("reply channel full; reply dropped: %s", type(answer).__name__)

    return send


class MemoryStore:
    """The store actor over an in-memory :class:`StoreCore`.

    Args:
        inbox: its mailbox; the store stops when every sender has closed it.
        subscribers: who receives Recovered and every Committed (the node cache, the queue,
            the watch hub); closed when the store stops.
        core: the state to serve (a fresh, empty one by default).

    Attributes:
        recovery_seconds: how long this start's recovery took (nothing to recover in memory).
    """

    recovery_seconds = 0.0

    def __init__(
        self,
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[Subscriber],
        core: StoreCore | None = None,
    ) -> None:
        self._inbox = inbox
        self._subscribers = list(subscribers)
        self.core = core if core is not None else StoreCore()
        self._commit_seconds = 0.0
        # Seconds a batch waits after the previous one began, gathering writes (0: none).
        self.commit_window = 0.0
        self._last_commit = -math.inf

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Publish Recovered, signal readiness, then serve batches until the inbox closes.

        Cancellation: a batch is applied, committed and published without a checkpoint between
        the core and the subscribers except when a subscriber's mailbox is full; the
        subscribers are closed on the way out either way.
        """
        try:
            async with self._inbox:
                metrics.RECOVERY_DURATION.set(self.recovery_seconds)
                metrics.STORE_REVISION.set(self.core.revision)
                await self._publish(
                    Recovered(revision=self.core.revision, objects=self.core.all_objects())
                )
                task_status.started()
                closed = False
                while not closed:
                    try:
                        batch = [await self._inbox.receive()]
                    except trio.EndOfChannel:
                        return
                    if self.commit_window:
                        # Group commit: let more writes join this batch, so that a commit's
                        # fixed cost (the hand-over to the database thread) is paid less often.
                        await trio.sleep_until(self._last_commit + self.commit_window)
                    while True:
                        try:
                            batch.append(self._inbox.receive_nowait())
                        except trio.WouldBlock:
                            break
                        except trio.EndOfChannel:
                            closed = True
                            break
                    self._last_commit = trio.current_time()
                    await self._serve(batch)
        finally:
            for subscriber in self._subscribers:
                subscriber.close()

    async def _serve(self, batch: list[StoreMsg]) -> None:
        changes, replies = self._apply(batch)
        self._commit_seconds = 0.0
        if changes:
            started = time.perf_counter()
            await self._commit(changes)
            self._commit_seconds = time.perf_counter() - started
            metrics.STORE_COMMIT_DURATION.observe(self._commit_seconds)
            metrics.STORE_COMMIT_BATCH_SIZE.observe(len(changes))
            metrics.STORE_REVISION.set(changes[-1].revision)
            await self._publish(Committed(revision=changes[-1].revision, changes=changes))
        for send_reply in replies:
            send_reply()

    def _bind_replier(
        self,
        channel: trio.MemorySendChannel[BindResult | StoreFailure],
        revision: int,
        failed: list[BindFailure],
    ) -> _Reply:
        """A bind's reply, built when it is released: it reports the batch's commit time."""

        def send() -> None:
            result = BindResult(
                revision=revision, failed=failed, commit_seconds=self._commit_seconds
            )
            _replier(channel, result)()

        return send

    def _read_elsewhere(self, msg: ReadEvents) -> bool:
        """Whether a store with a log beyond the core's memory answers ``msg`` itself
        (decided in batch order, after the writes before it). In memory: never."""
        return False

    def _apply(self, batch: list[StoreMsg]) -> tuple[list[Change], list[_Reply]]:
        """Apply every message to the core in order; the replies wait for the commit."""
        changes: list[Change] = []
        replies: list[_Reply] = []
        core = self.core
        for msg in batch:
            match msg:
                case WriteObjects():
                    try:
                        revision, statuses, written = core.write(msg.puts, msg.deletes)
                    except StoreRejected as exc:
                        replies.append(_replier(msg.reply, exc.failure()))
                    else:
                        if msg.trace is not None:
                            # The request's trace rides with its changes to the queue, so the
                            # pod's scheduling attempts can link to it.
                            written = [msgspec.structs.replace(c, trace=msg.trace) for c in written]
                        changes.extend(written)
                        replies.append(
                            _replier(msg.reply, WriteResult(revision=revision, objects=statuses))
                        )
                case BindPods():
                    revision, bound, failed = core.bind(msg.bindings)
                    changes.extend(bound)
                    replies.append(self._bind_replier(msg.reply, revision, failed))
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
                            preemptor, msg.node, msg.victims
                        )
                    except StoreRejected as exc:
                        replies.append(_replier(msg.reply, exc.failure()))
                    else:
                        changes.extend(evicted_changes)
                        # The victims' changes come first; a Modified one is the nomination.
                        nominated = any(c.type == "Modified" for c in evicted_changes)
                        result = EvictResult(
                            revision=revision, evicted=evicted, nominated=nominated
                        )
                        replies.append(_replier(msg.reply, result))
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
                        replies.append(_replier(msg.reply, exc.failure()))
                    else:
                        read = ReadResult(revision=revision, items=items, remaining=remaining)
                        replies.append(_replier(msg.reply, read))
                case ReadEvents():
                    if self._read_elsewhere(msg):
                        continue
                    try:
                        revision, events = core.events_after(msg.after)
                    except StoreRejected as exc:
                        replies.append(_replier(msg.reply, exc.failure()))
                    else:
                        replies.append(
                            _replier(msg.reply, EventsResult(revision=revision, changes=events))
                        )
                case ReadStats():
                    replies.append(_replier(msg.reply, core.stats()))
                case _:
                    assert_never(msg)
        return changes, replies

    async def _commit(self, changes: list[Change]) -> None:
        """Make the batch durable. In memory a commit is immediate; the SQLite store
        writes ``changes`` (and the objects they carry) in one transaction here."""

    async def _publish(self, msg: Recovered | Committed) -> None:
        """Hand ``msg`` to every subscriber, awaiting only a full mailbox; a subscriber that
        went away is dropped (it is shutting down)."""
        for subscriber in list(self._subscribers):
            try:
                try:
                    subscriber.send_nowait(msg)
                except trio.WouldBlock:
                    await subscriber.send(msg)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                log.warning("a store subscriber went away; it gets no more changes")
                self._subscribers.remove(subscriber)
