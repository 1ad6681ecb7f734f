"""The binder with a binding extender (factory.go@v1.14 ``getBinderFunc``, scheduler.go ``bind``),
under the autojump clock: the extender (an in-memory httpx transport, no threads) binds the
pods it is interested in; only what it bound goes on to the store; a pod it refuses is forgotten
by the cache and requeued, as a refused bind is."""

from __future__ import annotations

import json
from typing import Any

import httpx
import trio
from builders import make_pod

from podium.actors.binder import Binder
from podium.actors.extenders import Extenders
from podium.actors.mail import BindDone, BinderMsg, BindRequest, CacheMsg, Forget, QueueMsg, Requeue
from podium.protocol.extender import ExtenderConfig, ExtenderManagedResource
from podium.store.mail import BindPods, BindResult, StoreMsg

URL = "http://binder.test/scheduler"


async def test_the_extender_binds_and_the_store_records_only_what_it_bound() -> None:
    asked: list[dict[str, str]] = []

    def extender(request: httpx.Request) -> httpx.Response:
        args = json.loads(request.content)
        asked.append(args)
        if args["PodName"] == "refused":
            return httpx.Response(200, json={"Error": "no room on the widget bus"})
        return httpx.Response(200, json={})

    config = ExtenderConfig(
        url_prefix=URL,
        bind_verb="bind",
        managed_resources=[ExtenderManagedResource(name="example.com/widget")],
    )
    widget = {"example.com/widget": "1"}
    pods = {
        "bound": make_pod("bound").uid("u1").req_map(widget).info(),
        "refused": make_pod("refused").uid("u2").req_map(widget).info(),
        "plain": make_pod("plain").uid("u3").info(),  # not the extender's: the store binds it
    }
    stored: list[BindPods] = []
    cache: list[CacheMsg] = []
    queue: list[QueueMsg] = []

    async def store(inbox: trio.MemoryReceiveChannel[StoreMsg]) -> None:
        async for msg in inbox:
            assert isinstance(msg, BindPods)
            stored.append(msg)
            msg.reply.send_nowait(BindResult(revision=1))

    async def record(inbox: trio.MemoryReceiveChannel[Any], into: list[Any]) -> None:
        async for msg in inbox:
            into.append(msg)

    inbox_tx, inbox_rx = trio.open_memory_channel[BinderMsg](16)
    store_tx, store_rx = trio.open_memory_channel[StoreMsg](16)
    cache_tx, cache_rx = trio.open_memory_channel[CacheMsg](16)
    queue_tx, queue_rx = trio.open_memory_channel[QueueMsg](16)
    done_to, done = trio.open_memory_channel[BindDone](3)
    with trio.fail_after(100):
        async with (
            Extenders([config], transport=httpx.MockTransport(extender)) as extenders,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(store, store_rx)
            nursery.start_soon(record, cache_rx, cache)
            nursery.start_soon(record, queue_rx, queue)
            binder = Binder(
                inbox_rx, store=store_tx, cache=cache_tx, queue=queue_tx, extenders=extenders
            )
            await nursery.start(binder.run)
            async with inbox_tx:
                for p in pods.values():
                    inbox_tx.send_nowait(BindRequest(pod=p, node="n1", cycle=1, done=done_to))
                results = {d.key: (d.ok, d.message) for d in [await done.receive() for _ in pods]}
    assert results == {
        "default/bound": (True, ""),
        "default/refused": (False, "no room on the widget bus"),
        "default/plain": (True, ""),
    }
    assert sorted(a["PodName"] for a in asked) == ["bound", "refused"]
    assert sorted(b.name for msg in stored for b in msg.bindings) == ["bound", "plain"]
    assert [m.key for m in cache if isinstance(m, Forget)] == ["default/refused"]
    assert [(m.pod.key, m.why) for m in queue if isinstance(m, Requeue)] == [
        ("default/refused", "error")
    ]
