"""A client that keeps a local copy of some kinds and resumes by itself: :class:`Informer`.

Kubernetes counterpart: k8s.io/client-go/tools/cache (``Reflector.ListAndWatch`` in
reflector.go, the ``Indexer`` of store.go/index.go with the ``namespace`` index, and
``ResourceEventHandlerFuncs`` of shared_informer.go); the backoff is :mod:`.backoff`'s.

The contract (docs/protocol.md "Resuming: what a client does")::

                   +---------------------------- gone ------------------------------+
                   v                                                                |
    start --> list every kind --> watch from the position --> event: deliver, position = it
              (diff against the      ^   (min of the lists'        |
               cache: added,         |    revisions at first)      | connection lost, daemon
               modified, deleted)    |                             | restarted, leader changed,
                                     +---- backoff with jitter <---+ overloaded (position is
                                                                     already its revision),
                                                                     unavailable, invalid

- *position*: the last revision the informer has seen; every watch starts there, so an event
  is delivered at most once and none after it is missed.
- A kind's *floor* is the revision of its last list: its events at or below it are already in
  the list (several kinds are listed one after the other, and watched from the lowest).
- ``gone`` (the log was compacted past the position): relist, and deliver the difference
  between the cache and the lists as added/modified/deleted.

Owns: the :class:`InformerCache` (by key, by namespace, by node) and the handlers.
Mailbox: none; :meth:`Informer.run` is one task that lists, watches and calls the handlers in
revision order.
Emits: Get and Watch requests, through :func:`~podium.protocol.client.connection.connect`.

Error handling:
    Connection failures and the retryable error codes (``unavailable``, ``overloaded``,
    ``invalid``: a follower replica behind the position) are retried after a backoff, each
    told to the ``watch_error_handler`` (client-go's ``WatchErrorHandler``); ``gone``
    relists; any other code (``unauthorized``, ``forbidden``, ``internal``: a damaged row of
    the log would fail every retry) ends :meth:`Informer.run` with the :class:`RemoteError`.
    An exception a handler raises ends the informer too.

Cancellation:
    Cancelling :meth:`Informer.run` leaves its watch (which sends ``Cancel``) and closes its
    connection; the cache stays as it was.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Literal, NoReturn, Protocol

import msgspec
import trio

from podium.protocol.client.backoff import Backoff
from podium.protocol.client.connection import DEFAULT_CHUNK_SIZE, connect
from podium.protocol.client.errors import ClientConnectionError, ConnectionLost, RemoteError
from podium.protocol.client.transport import DEFAULT_SERVER
from podium.protocol.labels import label_selector_matches, parse_selector
from podium.protocol.objects import KINDS, NAMESPACED_KINDS, KubeObject, Pod
from podium.protocol.wire import Encoding, Event, EventType, GetReply

__all__ = [
    "Informer",
    "InformerCache",
    "Notification",
    "NotificationType",
    "Source",
    "WatchErrorHandler",
]

logger = logging.getLogger("podium.protocol.client")

NotificationType = Literal["added", "modified", "deleted"]

Key = tuple[str, str, str]
"""(kind, namespace, name): an object's identity in the cache."""

_DELETING = frozenset({"Deleted", "Preempted"})
_RETRIED = frozenset({"unavailable", "overloaded", "invalid", "not_leader"})
_TYPE_OF_NOTIFICATION: dict[NotificationType, EventType] = {
    "added": "Added",
    "modified": "Modified",
    "deleted": "Deleted",
}


class Notification(msgspec.Struct, frozen=True, kw_only=True):
    """One change of the informer's cache, as a handler is told it.

    Attributes:
        type: ``added``, ``modified`` or ``deleted`` (client-go's OnAdd/OnUpdate/OnDelete).
        object: the object now (its last known state, for ``deleted``).
        old: the object before (``modified`` only).
        revision: the event's revision, or the list's for a difference found by a relist.
        event: the event that made the change; None when a relist found it.
    """

    type: NotificationType
    object: KubeObject
    old: KubeObject | None = None
    revision: int
    event: Event | None = None

    def as_event(self) -> Event:
        """The wire event (the one received, or an Added/Modified/Deleted one for a change a
        relist found), for code that prints events."""
        if self.event is not None:
            return self.event
        meta = self.object.metadata
        node = self.object.spec.node_name if isinstance(self.object, Pod) else ""
        return Event(
            id=0,
            revision=self.revision,
            type=_TYPE_OF_NOTIFICATION[self.type],
            kind=type(self.object).__name__,
            namespace=meta.namespace,
            name=meta.name,
            object=self.object,
            node=node,
        )


def _key(obj: KubeObject) -> Key:
    return (type(obj).__name__, obj.metadata.namespace, obj.metadata.name)


def _node_of(obj: KubeObject) -> str:
    return obj.spec.node_name if isinstance(obj, Pod) else ""


class InformerCache:
    """The informer's objects (client-go's thread-safe store with a ``namespace`` index and
    a ``node`` index over pods' ``spec.nodeName``), and the sans-IO rules of list and watch.

    Args:
        kinds: the kinds kept (a relist lists each).
        namespace: keep only this namespace's objects of namespaced kinds (None: every one).
        label_selector: keep only objects whose labels match (Kubernetes' syntax).

    Attributes:
        position: the last revision seen (a watch resumes after it); None before a list.
        floors: each kind's list revision; its events at or below it are in the list.
    """

    def __init__(
        self,
        kinds: Sequence[str],
        *,
        namespace: str | None = None,
        label_selector: str = "",
    ) -> None:
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
        self.kinds: tuple[str, ...] = tuple(kinds) or tuple(KINDS)
        self.namespace = namespace
        self.label_selector = label_selector
        self._selector = parse_selector(label_selector) if label_selector else None
        self.position: int | None = None
        self.floors: dict[str, int] = {}
        self._objects: dict[Key, KubeObject] = {}
        self._by_namespace: dict[str, set[Key]] = {}
        self._by_node: dict[str, set[Key]] = {}

    # ---------------------------------------------------------------- reading

    def get(self, kind: str, name: str, namespace: str = "") -> KubeObject | None:
        """The object, or None."""
        return self._objects.get((kind, namespace, name))

    def objects(self, kind: str | None = None) -> list[KubeObject]:
        """Every object (of ``kind``), sorted by kind, namespace, name."""
        return [self._objects[k] for k in sorted(self._objects) if kind in (None, k[0])]

    def by_namespace(self, namespace: str, kind: str | None = None) -> list[KubeObject]:
        """The objects in ``namespace`` (of ``kind``), sorted by kind and name."""
        keys = self._by_namespace.get(namespace, set())
        return [self._objects[k] for k in sorted(keys) if kind in (None, k[0])]

    def by_node(self, node: str) -> list[KubeObject]:
        """The pods whose ``spec.nodeName`` is ``node``, sorted by namespace and name."""
        return [self._objects[k] for k in sorted(self._by_node.get(node, set()))]

    def __len__(self) -> int:
        return len(self._objects)

    # ---------------------------------------------------------------- list and watch

    def selects(self, obj: KubeObject) -> bool:
        """Whether ``obj`` belongs in this cache (its namespace and labels)."""
        if (
            self.namespace is not None
            and type(obj).__name__ in NAMESPACED_KINDS
            and obj.metadata.namespace != self.namespace
        ):
            return False
        return self._selector is None or label_selector_matches(self._selector, obj.metadata.labels)

    def replace(self, lists: Mapping[str, GetReply]) -> list[Notification]:
        """Take a fresh list of every kind (client-go's ``Store.Replace``): the cache becomes
        the lists, and the difference is returned as notifications (added and modified in the
        lists' order, then deleted), each at its list's revision.

        The position becomes the lowest list revision, or stays where it was if that is later
        (a kind listed at an older revision cannot move the watch back)."""
        notes: list[Notification] = []
        for kind in self.kinds:
            reply = lists[kind]
            listed: dict[Key, KubeObject] = {}
            for obj in reply.items:
                if self.selects(obj):
                    listed[_key(obj)] = obj
            for key, obj in listed.items():
                old = self._objects.get(key)
                if old is None:
                    notes.append(Notification(type="added", object=obj, revision=reply.revision))
                elif old != obj:
                    notes.append(
                        Notification(type="modified", object=obj, old=old, revision=reply.revision)
                    )
                self._store(key, obj)
            gone = sorted(k for k in self._objects if k[0] == kind and k not in listed)
            for key in gone:
                notes.append(
                    Notification(type="deleted", object=self._remove(key), revision=reply.revision)
                )
            self.floors[kind] = reply.revision
        lowest = min(lists[k].revision for k in self.kinds)
        self.position = lowest if self.position is None else max(self.position, lowest)
        return notes

    def observe(self, event: Event) -> Notification | None:
        """Apply one watch event; the notification it makes, or None (an event already seen,
        already in a list, of another kind, or of an object outside the selection).

        Added, Modified, Bound and Unschedulable put the object (added when the cache did
        not hold it, else modified); Deleted and Preempted remove it. An object that no
        longer matches the namespace or selector is deleted, as a Kubernetes watch with a
        selector reports it."""
        if self.position is not None and event.revision <= self.position:
            return None
        self.position = event.revision
        if event.kind not in self.kinds or event.revision <= self.floors.get(event.kind, -1):
            return None
        key: Key = (event.kind, event.namespace, event.name)
        old = self._objects.get(key)
        obj = event.object
        if event.type in _DELETING or (obj is not None and not self.selects(obj)):
            if old is None:
                return None
            self._remove(key)
            return Notification(type="deleted", object=old, revision=event.revision, event=event)
        if obj is None or obj == old:
            return None
        self._store(key, obj)
        if old is None:
            return Notification(type="added", object=obj, revision=event.revision, event=event)
        return Notification(
            type="modified", object=obj, old=old, revision=event.revision, event=event
        )

    def _store(self, key: Key, obj: KubeObject) -> None:
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        self._by_namespace.setdefault(key[1], set()).add(key)
        node = _node_of(obj)
        if node:
            self._by_node.setdefault(node, set()).add(key)

    def _remove(self, key: Key) -> KubeObject:
        obj = self._objects.pop(key)
        self._unindex(key, obj)
        return obj

    def _unindex(self, key: Key, obj: KubeObject) -> None:
        for index, value in ((self._by_namespace, key[1]), (self._by_node, _node_of(obj))):
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]


class Source(Protocol):
    """What the informer asks of a connection (:class:`~podium.protocol.client.Client` is
    one; tests give a fake)."""

    async def get(
        self,
        kind: str,
        name: str = "",
        namespace: str | None = None,
        label_selector: str = "",
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> GetReply: ...

    def watch(
        self, from_revision: int | None = None, kinds: Sequence[str] = ()
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]: ...


Connector = Callable[[], AbstractAsyncContextManager[Source]]

AddHandler = Callable[[KubeObject], None]
UpdateHandler = Callable[[KubeObject, KubeObject], None]
NotificationHandler = Callable[[Notification], None]
WatchErrorHandler = Callable[[Exception, float], None]
"""Told each error the informer retries, and the delay (seconds) before it tries again."""


class Informer:
    """List, then watch from the list's revision, resuming by itself; a local cache and
    handlers for added, modified and deleted objects.

    Example::

        informer = Informer("10.0.0.1:7070,10.0.0.2:7070", kinds=["Pod"])
        informer.add_handler(on_add=lambda pod: print("new", pod.metadata.name))
        async with trio.open_nursery() as nursery:
            await nursery.start(informer.run)   # returns once the first list is in the cache
            print(len(informer.cache.by_node("node-1")), "pods on node-1")

    Args:
        server: the address, or several comma-separated (replicas): each connection goes to
            the first that answers.
        kinds: the kinds to keep (empty: every kind).
        namespace: only this namespace's objects of namespaced kinds (None: every namespace).
        label_selector: only objects whose labels match.
        from_revision: start watching after this revision without a first list (the cache
            then holds only what the events bring; a relist after ``gone`` fills it).
        backoff: the delays between tries (default: :class:`Backoff`'s).
        connector: opens a connection (default: :func:`connect` with the access arguments).
        watch_error_handler: told each error retried and the delay before the next try
            (default: a log line).
        token, tls, encoding: as :func:`connect`.

    Attributes:
        cache: the :class:`InformerCache`.
        has_synced: the first list is in (with ``from_revision``: the first connection is
            open).
        retries: how many times it waited for a backoff; lists: how many times it listed.
    """

    def __init__(
        self,
        server: str = DEFAULT_SERVER,
        kinds: Sequence[str] = (),
        *,
        namespace: str | None = None,
        label_selector: str = "",
        from_revision: int | None = None,
        backoff: Backoff | None = None,
        connector: Connector | None = None,
        watch_error_handler: WatchErrorHandler | None = None,
        token: str | None = None,
        tls: ssl.SSLContext | None = None,
        encoding: Encoding = "msgpack",
    ) -> None:
        self.cache = InformerCache(kinds, namespace=namespace, label_selector=label_selector)
        self.backoff = backoff or Backoff()
        self._connector: Connector = connector or (
            lambda: connect(server, token=token, tls=tls, encoding=encoding)
        )
        self._on_error = watch_error_handler or self._log_error
        self._needs_list = from_revision is None
        self.cache.position = from_revision
        self.has_synced = False
        self.retries = 0
        self.lists = 0
        self._handlers: list[NotificationHandler] = []
        self._synced_handlers: list[Callable[[], None]] = []

    def add_handler(
        self,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: AddHandler | None = None,
    ) -> None:
        """Call ``on_add(obj)``, ``on_update(old, new)`` and ``on_delete(obj)`` for each change,
        in revision order, from the informer's task (client-go's ResourceEventHandlerFuncs).
        Handlers added before :meth:`run` also see the first list's objects as added."""

        def handle(note: Notification) -> None:
            match note.type:
                case "added":
                    if on_add is not None:
                        on_add(note.object)
                case "modified":
                    if on_update is not None:
                        assert note.old is not None
                        on_update(note.old, note.object)
                case "deleted":
                    if on_delete is not None:
                        on_delete(note.object)

        self._handlers.append(handle)

    def add_notification_handler(self, handler: NotificationHandler) -> None:
        """Call ``handler`` with every :class:`Notification` (the event behind it included)."""
        self._handlers.append(handler)

    def add_synced_handler(self, handler: Callable[[], None]) -> None:
        """Call ``handler()`` once, as soon as the first list is in the cache (before
        :meth:`run` reports itself started), e.g. to print it."""
        self._synced_handlers.append(handler)

    def _deliver(self, notes: Iterable[Notification]) -> None:
        for note in notes:
            for handler in self._handlers:
                handler(note)

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> NoReturn:
        """Keep the cache in step with the daemon until cancelled.

        ``task_status.started()`` is called once the first list is in the cache (with
        ``from_revision``: once the first connection is open).

        Raises:
            RemoteError: a code retrying cannot help (``unauthorized``, ``forbidden``,
                ``internal``).
        """
        while True:
            error: Exception = ConnectionLost("the watch ended without an error")
            try:
                async with self._connector() as source:
                    if self._needs_list:
                        await self._relist(source)
                    if not self.has_synced:
                        self.has_synced = True
                        for handler in self._synced_handlers:
                            handler()
                        task_status.started()
                    await self._watch(source)
            except RemoteError as exc:
                if exc.code == "gone":
                    self._needs_list = True
                elif exc.code not in _RETRIED:
                    raise
                error = exc
            except ClientConnectionError as exc:
                error = exc
            self.retries += 1
            delay = self.backoff.next_delay()
            self._on_error(error, delay)
            await trio.sleep(delay)

    def _log_error(self, error: Exception, delay: float) -> None:
        then = "listing again" if self._needs_list else f"resuming after {self.cache.position}"
        logger.info("informer: %s; %s in %.2f s", error, then, delay)

    async def _relist(self, source: Source) -> None:
        lists: dict[str, GetReply] = {}
        for kind in self.cache.kinds:
            namespace = self.cache.namespace if kind in NAMESPACED_KINDS else None
            lists[kind] = await source.get(
                kind, namespace=namespace, label_selector=self.cache.label_selector
            )
        self.lists += 1
        self._needs_list = False
        self._deliver(self.cache.replace(lists))

    async def _watch(self, source: Source) -> None:
        kinds = [] if set(self.cache.kinds) == set(KINDS) else list(self.cache.kinds)
        async with source.watch(self.cache.position, kinds) as events:
            self.backoff.reset()
            async for event in events:
                note = self.cache.observe(event)
                if note is not None:
                    self._deliver((note,))
