"""The client for scripts without trio: :class:`BlockingClient`, each call blocking until its
reply, and :class:`BlockingInformer`, a self-resuming cache read from any thread.

Kubernetes counterpart: none (client-go is synchronous Go); this wraps the trio
:class:`~podium.protocol.client.connection.Client`.

Owns: a background thread running a trio loop that holds one connection; calls are handed to
it through ``trio.from_thread``.
Mailbox: none.
Emits: what the wrapped client emits.
"""

from __future__ import annotations

import queue
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any

import trio

from podium.protocol.client.backoff import Backoff
from podium.protocol.client.connection import DEFAULT_CHUNK_SIZE, Client, connect
from podium.protocol.client.errors import ClientConnectionError, ConnectionLost
from podium.protocol.client.informer import Informer, Notification
from podium.protocol.client.transport import DEFAULT_SERVER
from podium.protocol.errors import PodiumError
from podium.protocol.objects import KubeObject, Pod
from podium.protocol.wire import (
    DeleteReply,
    Encoding,
    Event,
    ExplainGroupReply,
    ExplainReply,
    GetReply,
    ObjectRef,
    PutReply,
    ReloadPolicyReply,
    SimulateReply,
    StatsReply,
)

__all__ = ["BlockingClient", "BlockingInformer"]


class BlockingClient:
    """The client for scripts without trio: each call blocks until its reply.

    A background thread runs a trio loop holding the connection; calls are handed to it
    through ``trio.from_thread``. Safe to use from several threads at once.

    Example::

        from podium.protocol.client import BlockingClient
        from podium.protocol.loader import load_file

        with BlockingClient("127.0.0.1:7070") as podium:
            podium.put(load_file("cluster.yaml"))
            for pod in podium.get("Pod", namespace=None).items:
                print(pod.metadata.name, pod.spec.node_name or "<pending>")
            with podium.watch(kinds=["Pod"]) as events:
                for event in events:
                    print(event.revision, event.type, event.name, event.node)

    Raises (from the constructor): as :func:`connect`.
    """

    def __init__(
        self,
        server: str = DEFAULT_SERVER,
        *,
        encoding: Encoding = "msgpack",
        token: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._client: Client | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._closing: trio.Event | None = None
        self._thread = threading.Thread(
            target=trio.run,
            args=(self._main, server, encoding, token, tls),
            name=f"podium-client {server}",
            daemon=True,  # a client a script forgot to close must not keep it alive
        )
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error

    async def _main(
        self, server: str, encoding: Encoding, token: str | None, tls: ssl.SSLContext | None
    ) -> None:
        try:
            async with (
                connect(server, encoding=encoding, token=token, tls=tls) as client,
                trio.open_nursery() as nursery,
            ):
                self._client = client
                self._token = trio.lowlevel.current_trio_token()
                self._nursery = nursery
                self._closing = trio.Event()
                self._ready.set()
                await self._closing.wait()
                nursery.cancel_scope.cancel("the blocking client is closing")
        except BaseException as exc:  # handed to the constructor's thread, which raises it
            if self._ready.is_set():
                raise
            self._error = exc
            self._ready.set()

    def _run(self, afn: Callable[..., Any], *args: Any) -> Any:
        if self._client is None or self._token is None:
            raise ConnectionLost("the blocking client is closed")
        try:
            return trio.from_thread.run(afn, *args, trio_token=self._token)
        except trio.RunFinishedError:
            raise ConnectionLost("the blocking client is closed") from None

    def put(self, objects: Iterable[KubeObject]) -> PutReply:
        """See :meth:`Client.put`."""
        result: PutReply = self._run(self._live().put, list(objects))
        return result

    def delete(self, refs: Iterable[ObjectRef]) -> DeleteReply:
        """See :meth:`Client.delete`."""
        result: DeleteReply = self._run(self._live().delete, list(refs))
        return result

    def get(
        self,
        kind: str,
        name: str = "",
        namespace: str | None = None,
        label_selector: str = "",
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> GetReply:
        """See :meth:`Client.get`."""
        result: GetReply = self._run(
            partial(self._live().get, chunk_size=chunk_size), kind, name, namespace, label_selector
        )
        return result

    def get_page(
        self,
        kind: str,
        name: str = "",
        namespace: str | None = None,
        label_selector: str = "",
        *,
        limit: int = 0,
        continue_: str = "",
    ) -> GetReply:
        """See :meth:`Client.get_page`."""
        result: GetReply = self._run(
            partial(self._live().get_page, limit=limit, continue_=continue_),
            kind,
            name,
            namespace,
            label_selector,
        )
        return result

    def explain(self, namespace: str, name: str) -> ExplainReply:
        """See :meth:`Client.explain`."""
        result: ExplainReply = self._run(self._live().explain, namespace, name)
        return result

    def explain_group(self, namespace: str, name: str) -> ExplainGroupReply:
        """See :meth:`Client.explain_group`."""
        result: ExplainGroupReply = self._run(self._live().explain_group, namespace, name)
        return result

    def simulate(self, pod: Pod, explain: bool = False) -> SimulateReply:
        """See :meth:`Client.simulate`."""
        result: SimulateReply = self._run(self._live().simulate, pod, explain)
        return result

    def reload_policy(self) -> ReloadPolicyReply:
        """See :meth:`Client.reload_policy`."""
        result: ReloadPolicyReply = self._run(self._live().reload_policy)
        return result

    def stats(self) -> StatsReply:
        """See :meth:`Client.stats`."""
        result: StatsReply = self._run(self._live().stats)
        return result

    @property
    def revision(self) -> int:
        """The revision the daemon announced at the handshake."""
        return self._live().revision

    @property
    def server_version(self) -> str:
        return self._live().server_version

    @contextmanager
    def watch(
        self, from_revision: int | None = None, kinds: Sequence[str] = ()
    ) -> Iterator[Iterator[Event]]:
        """See :meth:`Client.watch`; yields a plain iterator of events."""
        client = self._live()
        send, receive = trio.open_memory_channel[Event | PodiumError](0)

        done = trio.Event()

        async def pump(*, task_status: trio.TaskStatus[trio.CancelScope]) -> None:
            try:
                with trio.CancelScope() as scope:
                    async with client.watch(from_revision, kinds) as events, send:
                        task_status.started(scope)
                        try:
                            async for event in events:
                                await send.send(event)
                        except PodiumError as exc:
                            await send.send(exc)
                        except trio.BrokenResourceError:
                            pass  # the iterator's side left: the watch block is ending
            finally:
                done.set()

        async def start() -> trio.CancelScope:
            assert self._nursery is not None
            scope: trio.CancelScope = await self._nursery.start(pump)
            return scope

        try:
            scope: trio.CancelScope = self._run(start)
        except BaseException:
            self._run_sync_quiet(receive.close)
            raise

        def iterate() -> Iterator[Event]:
            while True:
                try:
                    item = self._run(receive.receive)
                except trio.EndOfChannel:
                    return
                if isinstance(item, PodiumError):
                    raise item
                yield item

        try:
            yield iterate()
        finally:
            # Stop the pump and wait until its watch block has sent Cancel and ended.
            self._run_sync_quiet(scope.cancel)
            with suppress(ClientConnectionError):
                self._run(done.wait)
            self._run_sync_quiet(receive.close)

    def _run_sync_quiet(self, fn: Callable[[], object]) -> None:
        if self._token is None:
            return
        with suppress(trio.RunFinishedError):  # the loop already ended: nothing to undo
            trio.from_thread.run_sync(fn, trio_token=self._token)

    def _live(self) -> Client:
        if self._client is None:
            raise ConnectionLost("the blocking client is closed")
        return self._client

    def close(self) -> None:
        """Close the connection and stop the background thread (idempotent)."""
        if self._closing is not None:
            closing = self._closing
            self._run_sync_quiet(closing.set)
        self._thread.join()
        self._client = None

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_END = object()


class BlockingInformer:
    """An :class:`~podium.protocol.client.informer.Informer` for scripts without trio: it
    runs in a background thread; the caller reads its cache and takes its notifications.

    Example::

        with BlockingInformer("127.0.0.1:7070", kinds=["Pod"]) as pods:
            print(len(pods.objects("Pod")), "pods")          # the first list is in
            for note in pods.notifications():             # until closed
                print(note.type, note.object.metadata.name, note.revision)

    Handlers (``on_add``, ``on_update``, ``on_delete``) run in the informer's thread, in
    revision order; :meth:`notifications` yields the same changes in the caller's thread.
    The first list's objects are in the cache when the constructor returns; they are not
    notified.

    Args:
        server, kinds, namespace, label_selector, from_revision, backoff, token, tls:
            as :class:`~podium.protocol.client.informer.Informer`.

    Raises (from the constructor and :meth:`notifications`): what ends the informer
    (``unauthorized`` or ``forbidden``, a handler's exception).
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
        token: str | None = None,
        tls: ssl.SSLContext | None = None,
        on_add: Callable[[KubeObject], None] | None = None,
        on_update: Callable[[KubeObject, KubeObject], None] | None = None,
        on_delete: Callable[[KubeObject], None] | None = None,
    ) -> None:
        self.informer = Informer(
            server,
            kinds,
            namespace=namespace,
            label_selector=label_selector,
            from_revision=from_revision,
            backoff=backoff,
            token=token,
            tls=tls,
        )
        if on_add or on_update or on_delete:
            self.informer.add_handler(on_add, on_update, on_delete)
        self._queue: queue.SimpleQueue[Notification | object] = queue.SimpleQueue()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._thread = threading.Thread(
            target=trio.run, args=(self._main,), name=f"podium-informer {server}", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error

    async def _main(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._scope = nursery.cancel_scope
                self._token = trio.lowlevel.current_trio_token()
                await nursery.start(self.informer.run)
                self.informer.add_notification_handler(self._queue.put)
                self._ready.set()
        except BaseExceptionGroup as group:  # handed to the constructor or notifications()
            # The informer is the nursery's one task: its failure is the group's one member.
            self._error = group.exceptions[0] if len(group.exceptions) == 1 else group
        except Exception as exc:
            self._error = exc
        finally:
            self._ready.set()
            self._queue.put(_END)

    def _read(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the informer's thread (the cache changes only there)."""
        if self._token is None:
            return fn()
        try:
            return trio.from_thread.run_sync(fn, trio_token=self._token)
        except trio.RunFinishedError:
            return fn()  # the informer stopped: nothing changes the cache any more

    def get(self, kind: str, name: str, namespace: str = "") -> KubeObject | None:
        """See :meth:`InformerCache.get`."""
        obj: KubeObject | None = self._read(lambda: self.informer.cache.get(kind, name, namespace))
        return obj

    def objects(self, kind: str | None = None) -> list[KubeObject]:
        """See :meth:`InformerCache.objects`."""
        objs: list[KubeObject] = self._read(lambda: self.informer.cache.objects(kind))
        return objs

    def by_namespace(self, namespace: str, kind: str | None = None) -> list[KubeObject]:
        """See :meth:`InformerCache.by_namespace`."""
        objs: list[KubeObject] = self._read(
            lambda: self.informer.cache.by_namespace(namespace, kind)
        )
        return objs

    def by_node(self, node: str) -> list[KubeObject]:
        """See :meth:`InformerCache.by_node`."""
        objs: list[KubeObject] = self._read(lambda: self.informer.cache.by_node(node))
        return objs

    def notifications(self, timeout: float | None = None) -> Iterator[Notification]:
        """The changes after the first list, in revision order, until :meth:`close` (or,
        with ``timeout``, until none came for that long)."""
        while True:
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                return
            if item is _END:
                self._queue.put(_END)  # for any other reader
                if self._error is not None:
                    raise self._error
                return
            assert isinstance(item, Notification)
            yield item

    def close(self) -> None:
        """Stop the informer and its thread (idempotent)."""
        scope = self._scope
        if scope is not None and self._token is not None:
            with suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(scope.cancel, trio_token=self._token)
        self._thread.join()

    def __enter__(self) -> BlockingInformer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
