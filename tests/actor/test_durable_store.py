"""The store actor over each durable backend (SQLite and etcd, tests/support/store_backends.py):
the same acknowledged writes survive a restart, the same event log answers a watcher resuming
behind the core's memory, and ``gone`` below the retention.

These run on the real clock (the SQLite thread and etcd are real), each under a
``fail_after`` guard. What only one backend does is in test_sqlite_store.py and
test_etcd_store.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import msgspec
import pytest
import trio
from builders import make_node, make_pod
from store_backends import Backend

from podium.protocol import objects as o
from podium.protocol.wire import ObjectRef
from podium.store.actor import StoreActor
from podium.store.mail import (
    Binding,
    BindPods,
    BindResult,
    Change,
    Committed,
    EventsResult,
    Evict,
    EvictResult,
    ReadEvents,
    RecordUnschedulable,
    Recovered,
    StoreFailure,
    StoreMsg,
    Victim,
    WriteObjects,
    WriteResult,
)

Published = Recovered | Committed


class Running:
    def __init__(
        self,
        store: StoreActor,
        inbox: trio.MemorySendChannel[StoreMsg],
        published: trio.MemoryReceiveChannel[Published],
    ) -> None:
        self.store, self.inbox, self.published = store, inbox, published

    async def write(
        self, puts: Sequence[o.KubeObject] = (), deletes: Sequence[ObjectRef] = ()
    ) -> WriteResult | StoreFailure:
        tx, rx = trio.open_memory_channel[WriteResult | StoreFailure](1)
        await self.inbox.send(WriteObjects(puts=list(puts), deletes=list(deletes), reply=tx))
        return await rx.receive()

    async def bind(self, bindings: list[Binding]) -> BindResult | StoreFailure:
        tx, rx = trio.open_memory_channel[BindResult | StoreFailure](1)
        await self.inbox.send(BindPods(bindings=bindings, reply=tx))
        return await rx.receive()

    async def events(self, after: int, limit: int = 0) -> EventsResult | StoreFailure:
        tx, rx = trio.open_memory_channel[EventsResult | StoreFailure](1)
        await self.inbox.send(ReadEvents(after=after, limit=limit, reply=tx))
        return await rx.receive()

    async def watch_from(self, after: int) -> EventsResult | StoreFailure:
        """Every change after ``after``, read as the gateway's watch does: page after page
        of the kept log (each as large as the durability answers) until the core's memory
        answers the rest."""
        changes: list[Change] = []
        while True:
            page = await self.events(after)
            if isinstance(page, StoreFailure) or (not page.more and not changes):
                return page
            changes += page.changes
            if not page.more:
                return EventsResult(revision=page.revision, changes=changes)
            after = page.changes[-1].revision


@asynccontextmanager
async def running(backend: Backend, retention: int = 1_000_000) -> AsyncIterator[Running]:
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](64)
    pub_tx, pub_rx = trio.open_memory_channel[Published](1024)
    store = backend.open(inbox_rx, [pub_tx], retention)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            async with inbox_tx:
                yield Running(store, inbox_tx, pub_rx)


def _node(name: str) -> o.Node:
    return make_node(name).capacity(cpu="4", memory="8Gi", pods=110).obj()


def _ref(kind: str, name: str, namespace: str = "") -> ObjectRef:
    return ObjectRef(kind=kind, name=name, namespace=namespace)


async def test_a_new_store_recovers_empty(store_backend: Backend) -> None:
    async with running(store_backend) as s:
        assert await s.published.receive() == Recovered(revision=0, objects=[])
    async with running(store_backend) as s:
        assert await s.published.receive() == Recovered(revision=0, objects=[])


async def test_acknowledged_writes_and_bindings_survive_a_restart(store_backend: Backend) -> None:
    async with running(store_backend) as s:
        written = await s.write([_node("n1"), make_pod("web").req(cpu="1").obj()])
        assert isinstance(written, WriteResult)
        uid = written.objects[1].uid
        bound = await s.bind([Binding(namespace="default", name="web", uid=uid, node="n1")])
        assert isinstance(bound, BindResult) and not bound.failed
        gone = await s.write(deletes=[_ref("Node", "n1")])
        assert isinstance(gone, WriteResult)
    async with running(store_backend) as s:
        recovered = await s.published.receive()
        assert isinstance(recovered, Recovered)
        assert recovered.revision == 4
        (pod,) = recovered.objects
        assert isinstance(pod, o.Pod)
        assert (pod.spec.node_name, pod.metadata.uid, pod.metadata.resource_version) == (
            "n1",
            uid,
            "3",
        )
        # The log resumes where it stopped: the next change is revision 5.
        again = await s.write([_node("n2")])
        assert isinstance(again, WriteResult) and again.revision == 5
    assert store_backend.event_types() == ["Added", "Added", "Bound", "Deleted", "Added"]
    assert store_backend.object_names() == ["Node//n2", "Pod/default/web"]


async def test_a_deleted_object_leaves_nothing_kept(store_backend: Backend) -> None:
    async with running(store_backend) as s:
        written = await s.write([_node("n1"), make_pod("web").obj()])
        assert isinstance(written, WriteResult)
        uid = written.objects[1].uid
        await s.bind([Binding(namespace="default", name="web", uid=uid, node="n1")])
        await s.write(deletes=[_ref("Pod", "web", "default")])
    assert store_backend.object_names() == ["Node//n1"]


async def test_watchers_resume_from_the_kept_log_and_get_gone_below_retention(
    store_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_backend.shrink(monkeypatch, memory_log=2, compact_every=1)
    async with running(store_backend, retention=5) as s:
        for i in range(8):
            await s.write([_node(f"n{i}")])
        # Revisions 1-3 are compacted (8 - 5); 4 onwards are kept, 7-8 also in memory.
        kept = await s.watch_from(3)
        assert isinstance(kept, EventsResult)
        assert [c.revision for c in kept.changes] == [4, 5, 6, 7, 8]
        assert kept.changes[0].object.metadata.name == "n3"
        gone = await s.watch_from(1)
        assert isinstance(gone, StoreFailure)
        assert (gone.code, gone.revision) == ("gone", 4)
        in_memory = await s.watch_from(6)
        assert isinstance(in_memory, EventsResult)
        assert [c.revision for c in in_memory.changes] == [7, 8]
    async with running(store_backend, retention=5) as s:
        after_restart = await s.watch_from(5)
        assert isinstance(after_restart, EventsResult)
        assert [c.revision for c in after_restart.changes] == [6, 7, 8]
        still_gone = await s.watch_from(2)
        assert isinstance(still_gone, StoreFailure)
        assert (still_gone.code, still_gone.revision) == ("gone", 4)


async def test_a_watcher_one_change_behind_a_restart_reads_it_from_the_kept_log(
    store_backend: Backend,
) -> None:
    async with running(store_backend) as s:
        await s.write([_node("n1")])
        await s.write([_node("n2")])
    async with running(store_backend) as s:
        # Nothing is in memory after a restart: revision 2 comes from the kept log.
        events = await s.watch_from(1)
        assert isinstance(events, EventsResult)
        assert [c.revision for c in events.changes] == [2]
        up_to_date = await s.watch_from(2)
        assert isinstance(up_to_date, EventsResult) and up_to_date.changes == []


async def test_the_unschedulable_dedupe_survives_a_restart(store_backend: Backend) -> None:
    async with running(store_backend) as s:
        written = await s.write([make_pod("big").req(cpu="8").obj()])
        assert isinstance(written, WriteResult)
        uid = written.objects[0].uid
        await s.inbox.send(
            RecordUnschedulable(namespace="default", name="big", uid=uid, message="0/1 nodes")
        )
        assert isinstance(await s.events(0), EventsResult)
    async with running(store_backend) as s:
        await s.inbox.send(
            RecordUnschedulable(namespace="default", name="big", uid=uid, message="0/1 nodes")
        )
        events = await s.events(0)
        assert isinstance(events, EventsResult)
        assert [c.type for c in events.changes] == ["Added", "Unschedulable"]


async def test_an_eviction_and_the_nomination_survive_a_restart(store_backend: Backend) -> None:
    async with running(store_backend) as s:
        written = await s.write(
            [
                _node("n1"),
                make_pod("v1").obj(),
                make_pod("v2").obj(),
                make_pod("keep").obj(),
                make_pod("p").obj(),
            ]
        )
        assert isinstance(written, WriteResult)
        uid = {st.name: st.uid for st in written.objects}
        bound = await s.bind(
            [
                Binding(namespace="default", name=name, uid=uid[name], node="n1")
                for name in ("v1", "v2", "keep")
            ]
        )
        assert isinstance(bound, BindResult) and not bound.failed
        tx, rx = trio.open_memory_channel[EvictResult | StoreFailure](1)
        await s.inbox.send(
            Evict(
                namespace="default",
                name="p",
                uid=uid["p"],
                node="n1",
                victims=[
                    Victim(namespace="default", name="v1", uid=uid["v1"]),
                    Victim(namespace="default", name="v2", uid=uid["v2"]),
                ],
                reply=tx,
            )
        )
        assert await rx.receive() == EvictResult(
            revision=11, evicted=["default/v1", "default/v2"], nominated=True
        )
    async with running(store_backend) as s:
        recovered = await s.published.receive()
        assert isinstance(recovered, Recovered)
        assert recovered.revision == 11
        pods = {p.metadata.name: p for p in recovered.objects if isinstance(p, o.Pod)}
        assert sorted(pods) == ["keep", "p"]
        assert (pods["p"].status.nominated_node_name, pods["p"].spec.node_name) == ("n1", "")
        assert pods["keep"].spec.node_name == "n1"
        # The kept event log holds the Preempted changes (a watcher resuming sees them).
        events = await s.watch_from(8)
        assert isinstance(events, EventsResult)
        by_p = "preempted by default/p (priority 0)"
        assert [(c.revision, c.type, c.name, c.node, c.message) for c in events.changes] == [
            (9, "Preempted", "v1", "n1", by_p),
            (10, "Preempted", "v2", "n1", by_p),
            (11, "Modified", "p", "", ""),
        ]


async def test_a_read_behind_writes_of_its_own_batch_goes_to_the_kept_log(
    store_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_backend.shrink(monkeypatch, memory_log=2, compact_every=1024)
    async with running(store_backend) as s:
        for i in range(3):
            await s.write([_node(f"n{i}")])
        # One batch: a write that pushes revision 2 out of memory, then a read after it.
        write_to, write_reply = trio.open_memory_channel[WriteResult | StoreFailure](1)
        read_to, read_reply = trio.open_memory_channel[EventsResult | StoreFailure](1)
        s.inbox.send_nowait(WriteObjects(puts=[_node("n3"), _node("n4")], reply=write_to))
        s.inbox.send_nowait(ReadEvents(after=2, reply=read_to))
        assert isinstance(await write_reply.receive(), WriteResult)
        events = await read_reply.receive()
        assert isinstance(events, EventsResult), events
        # A page of the kept log; the rest as a watcher reads it.
        assert events.more
        rest = await s.watch_from(events.changes[-1].revision)
        assert isinstance(rest, EventsResult), rest
        assert [c.revision for c in events.changes + rest.changes] == [3, 4, 5]


async def test_the_kept_log_is_read_in_pages_then_the_cores_memory_answers_whole(
    store_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_backend.shrink(monkeypatch, memory_log=2, compact_every=1024)
    async with running(store_backend) as s:
        for i in range(7):
            await s.write([_node(f"n{i}")])
        pages: list[tuple[list[int], bool]] = []
        after = 0
        while True:
            page = await s.events(after, limit=2)
            assert isinstance(page, EventsResult), page
            pages.append(([c.revision for c in page.changes], page.more))
            if not page.more:
                break
            after = page.changes[-1].revision
        # Pages of the kept log (a page's end is only known by asking again), then the
        # core's memory (it keeps changes after 6) whole.
        assert pages == [([1, 2], True), ([3, 4], True), ([5, 6], True), ([7], False)]


def _pv(name: str) -> o.PersistentVolume:
    data = {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": {}}
    return msgspec.convert(data, o.PersistentVolume, dec_hook=o.dec_hook)


def _pvc(name: str) -> o.PersistentVolumeClaim:
    data = {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "ml"}}
    return msgspec.convert(data, o.PersistentVolumeClaim, dec_hook=o.dec_hook)


async def test_pod_groups_are_kept_whole_or_not_at_all_across_a_restart(
    store_backend: Backend,
) -> None:
    """One bind batch: a gang with its claims that commits, a gang one of whose members is
    refused (none of it is written, its volume included), and lone pods beside them."""
    async with running(store_backend) as s:
        written = await s.write(
            [
                _node("n1"),
                _pv("pv0"),
                _pv("pv1"),
                _pvc("c0"),
                _pvc("c1"),
                make_pod("w0").ns("ml").pvc("c0").obj(),
                make_pod("w1").ns("ml").obj(),
                make_pod("e0").ns("ml").pvc("c1").obj(),
                make_pod("e1").ns("ml").obj(),
                make_pod("lone").ns("ml").obj(),
            ]
        )
        assert isinstance(written, WriteResult)
        uid = {st.name: st.uid for st in written.objects}

        def member(name: str, group: str, node: str = "n1", **volumes: str) -> Binding:
            claims = {f"ml/{claim}": pv for claim, pv in volumes.items()}
            return Binding(
                namespace="ml", name=name, uid=uid[name], node=node, volumes=claims, group=group
            )

        bindings = [
            member("e0", "ml/eval", c1="pv1"),
            member("w0", "ml/train", c0="pv0"),
            member("lone", ""),
            member("e1", "ml/eval", node="gone"),
            member("w1", "ml/train"),
        ]
        bound = await s.bind(bindings)
        assert isinstance(bound, BindResult)
        assert [(f.binding.name, f.code) for f in bound.failed] == [
            ("e0", "not_found"),
            ("e1", "not_found"),
        ]
        assert bound.failed[0].message == (
            "pod group ml/eval: not bound, because ml/e1 could not be: node gone not found; "
            "cannot bind pod ml/e1 to it"
        )
    async with running(store_backend) as s:
        recovered = await s.published.receive()
        assert isinstance(recovered, Recovered)
        assert recovered.revision == 10 + 5
        pods = {
            p.metadata.name: p.spec.node_name for p in recovered.objects if isinstance(p, o.Pod)
        }
        claims = {
            c.metadata.name: c.spec.volume_name
            for c in recovered.objects
            if isinstance(c, o.PersistentVolumeClaim)
        }
        assert pods == {"e0": "", "e1": "", "lone": "n1", "w0": "n1", "w1": "n1"}
        assert claims == {"c0": "pv0", "c1": ""}
    # The log: the writes, then group ml/train whole (pv0, c0, w0, w1), then the lone pod.
    assert store_backend.event_types()[10:] == ["Modified", "Modified", "Bound", "Bound", "Bound"]


async def test_a_gang_of_256_with_its_claims_commits_whole_and_survives_a_restart(
    store_backend: Backend,
) -> None:
    """256 members, each with a claim: 768 changes in one bind (on etcd, 1536 operations:
    several transactions under one commit point, store/etcd/durability.py)."""
    size = 256
    async with running(store_backend) as s:
        written = await s.write(
            [_node(f"n{i}") for i in range(4)]
            + [_pv(f"pv{i}") for i in range(size)]
            + [_pvc(f"c{i}") for i in range(size)]
            + [make_pod(f"w{i}").ns("ml").pvc(f"c{i}").obj() for i in range(size)]
        )
        assert isinstance(written, WriteResult)
        uid = {st.name: st.uid for st in written.objects}
        bound = await s.bind(
            [
                Binding(
                    namespace="ml",
                    name=f"w{i}",
                    uid=uid[f"w{i}"],
                    node=f"n{i % 4}",
                    volumes={f"ml/c{i}": f"pv{i}"},
                    group="ml/train",
                )
                for i in range(size)
            ]
        )
        assert isinstance(bound, BindResult) and not bound.failed
        assert bound.revision == 4 + 3 * size + 3 * size
    async with running(store_backend) as s:
        recovered = await s.published.receive()
        assert isinstance(recovered, Recovered)
        assert recovered.revision == 4 + 6 * size
        pods = [p for p in recovered.objects if isinstance(p, o.Pod)]
        assert len(pods) == size and all(p.spec.node_name for p in pods)
