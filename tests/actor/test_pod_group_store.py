"""PodGroups through the store actor: kept by each durable backend (SQLite and etcd, tests/support/
store_backends.py) and by the in-memory one, listed, watched, deleted, recovered after a restart
in the kind order (groups before pods), and refused by the put rules with their field after a
restart as before it (a bound member is recovered with its node).

Real clock, each under a ``fail_after`` guard (as test_durable_store.py).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio
from builders import make_node, make_pod, make_pod_group
from store_backends import Backend

from podium.protocol import objects as o
from podium.protocol.wire import ObjectRef
from podium.store.actor import StoreActor
from podium.store.core import StoreCore
from podium.store.mail import (
    Binding,
    BindPods,
    BindResult,
    Committed,
    EventsResult,
    ReadEvents,
    ReadObjects,
    ReadResult,
    Recovered,
    StoreFailure,
    StoreMsg,
    WriteObjects,
    WriteResult,
)
from podium.store.memory import memory_store

Published = Recovered | Committed
VOLCANO = "scheduling.volcano.sh/v1beta1"


class Running:
    def __init__(
        self,
        inbox: trio.MemorySendChannel[StoreMsg],
        published: trio.MemoryReceiveChannel[Published],
    ) -> None:
        self.inbox, self.published = inbox, published

    async def _ask(self, make: Any) -> Any:
        tx, rx = trio.open_memory_channel[Any](1)
        await self.inbox.send(make(tx))
        return await rx.receive()

    async def write(
        self, puts: Sequence[o.KubeObject] = (), deletes: Sequence[ObjectRef] = ()
    ) -> WriteResult | StoreFailure:
        result: WriteResult | StoreFailure = await self._ask(
            lambda r: WriteObjects(puts=list(puts), deletes=list(deletes), reply=r)
        )
        return result

    async def read(self, kind: str, namespace: str | None = None) -> ReadResult | StoreFailure:
        result: ReadResult | StoreFailure = await self._ask(
            lambda r: ReadObjects(kind=kind, namespace=namespace, reply=r)
        )
        return result

    async def events(self, after: int) -> EventsResult | StoreFailure:
        result: EventsResult | StoreFailure = await self._ask(
            lambda r: ReadEvents(after=after, reply=r)
        )
        return result

    async def bind(self, bindings: list[Binding]) -> BindResult | StoreFailure:
        result: BindResult | StoreFailure = await self._ask(
            lambda r: BindPods(bindings=bindings, reply=r)
        )
        return result


@asynccontextmanager
async def running(open_store: Any) -> AsyncIterator[Running]:
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](64)
    pub_tx, pub_rx = trio.open_memory_channel[Published](1024)
    store: StoreActor = open_store(inbox_rx, [pub_tx])
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            async with inbox_tx:
                yield Running(inbox_tx, pub_rx)


def _groups() -> list[o.KubeObject]:
    return [
        make_pod_group("train").ns("ml").gang(2).obj(),
        make_pod_group("nginx").ns("web").min_member(3).obj(),
        make_pod_group("tf")
        .ns("ml")
        .min_member(2, VOLCANO)
        .spec(queue="default")
        .status(phase="Inqueue")
        .obj(),
    ]


def _members() -> list[o.KubeObject]:
    return [
        make_pod("w0").ns("ml").group("train").obj(),
        make_pod("w1").ns("ml").group("train").obj(),
        make_pod("n0").ns("web").group("nginx", "coscheduling").obj(),
        make_pod("t0").ns("ml").group("tf", "volcano").obj(),
    ]


async def _first_life(s: Running) -> str:
    """Write groups and members, bind one member, try to resize its group, delete a group;
    returns the bound member's uid."""
    recovered = await s.published.receive()
    assert recovered == Recovered(revision=0, objects=[])
    written = await s.write([make_node("n1").obj(), *_groups(), *_members()])
    assert isinstance(written, WriteResult), written
    assert [x.action for x in written.objects] == ["created"] * 8
    uid = written.objects[4].uid  # ml/w0
    bound = await s.bind([Binding(namespace="ml", name="w0", uid=uid, node="n1")])
    assert isinstance(bound, BindResult) and not bound.failed
    listed = await s.read("PodGroup", "ml")
    assert isinstance(listed, ReadResult)
    assert [g.metadata.name for g in listed.items] == ["tf", "train"]
    await _refused_resize(s)
    gone = await s.write(deletes=[ObjectRef(kind="PodGroup", namespace="web", name="nginx")])
    assert isinstance(gone, WriteResult) and gone.objects[0].action == "deleted"
    events = await s.events(0)
    assert isinstance(events, EventsResult)
    assert [(c.type, c.kind) for c in events.changes if c.kind == "PodGroup"] == [
        ("Added", "PodGroup"),
        ("Added", "PodGroup"),
        ("Added", "PodGroup"),
        ("Deleted", "PodGroup"),
    ]
    return uid


async def _refused_resize(s: Running) -> None:
    refused = await s.write([make_pod_group("train").ns("ml").gang(3).obj()])
    assert isinstance(refused, StoreFailure) and refused.code == "invalid"
    [error] = refused.errors
    assert (error.kind, error.namespace, error.name, error.path) == (
        "PodGroup",
        "ml",
        "train",
        "$.spec.schedulingPolicy.gang.minCount",
    )
    assert "1 member of pod group ml/train is bound to a node" in error.message


async def test_pod_groups_survive_a_restart_and_keep_their_rules(store_backend: Backend) -> None:
    async with running(lambda inbox, subs: store_backend.open(inbox, subs, 1_000_000)) as s:
        uid = await _first_life(s)
        events = await s.events(0)
        assert isinstance(events, EventsResult)
        revision = events.revision
    async with running(lambda inbox, subs: store_backend.open(inbox, subs, 1_000_000)) as s:
        recovered = await s.published.receive()
        assert isinstance(recovered, Recovered) and recovered.revision == revision
        kinds = [type(x).__name__ for x in recovered.objects]
        assert kinds == ["Node", "PodGroup", "PodGroup", "Pod", "Pod", "Pod", "Pod"]
        tf = next(x for x in recovered.objects if x.metadata.name == "tf")
        assert isinstance(tf, o.PodGroup)
        assert (tf.api_version, tf.spec.min_member, tf.spec.queue) == (VOLCANO, 2, "default")
        assert tf.status is not None and tf.status.phase == "Inqueue"
        w0 = next(x for x in recovered.objects if x.metadata.uid == uid)
        assert isinstance(w0, o.Pod) and w0.spec.node_name == "n1"
        await _refused_resize(s)
        # Re-applying what was written changes nothing, on disk as in memory.
        again = await s.write([*_groups()[:1], *_groups()[2:]])
        assert isinstance(again, WriteResult)
        assert [x.action for x in again.objects] == ["unchanged", "unchanged"]
        assert again.revision == revision
    names = store_backend.object_names()
    assert [n for n in names if n.startswith("PodGroup/")] == [
        "PodGroup/ml/tf",
        "PodGroup/ml/train",
    ]


async def test_pod_groups_in_the_memory_store() -> None:
    uids = (f"uid-{i}" for i in itertools.count(1))
    core = StoreCore(wall_clock=lambda: 1795341600.0, new_uid=lambda: next(uids))
    async with running(lambda inbox, subs: memory_store(inbox, subs, core)) as s:
        await _first_life(s)
        committed = [m async for m in _drain(s.published)]
        kinds = [c.kind for m in committed for c in m.changes]
        assert kinds.count("PodGroup") == 4  # three added, one deleted: published as any kind


async def _drain(published: trio.MemoryReceiveChannel[Published]) -> AsyncIterator[Committed]:
    while True:
        try:
            msg = published.receive_nowait()
        except trio.WouldBlock:
            return
        assert isinstance(msg, Committed)
        yield msg
