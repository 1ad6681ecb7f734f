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
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from podium.actors.binder.actor import Binder
from podium.actors.cycle.extenders import Extenders
from podium.actors.mail.messages import (
    BindBatch,
    BindDone,
    BinderMsg,
    BindRequest,
    CacheMsg,
    Forget,
    QueueMsg,
    Requeue,
)
from podium.actors.runtime.tracing import setup_tracing
from podium.protocol.config import TracingSettings
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
                requests = [
                    BindRequest(pod=p, node="n1", cycle=1, done=done_to) for p in pods.values()
                ]
                inbox_tx.send_nowait(BindBatch(requests=requests))
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


async def test_each_extender_bind_is_a_span_under_the_attempt() -> None:
    exporter = InMemorySpanExporter()
    tracing = setup_tracing(
        TracingSettings(sample_ratio=1.0), processors=[SimpleSpanProcessor(exporter)]
    )
    with tracing.attempt("default/p", arrived_at=0.0, popped_at=0.0) as attempt:
        carrier = tracing.carrier_of(attempt)
    config = ExtenderConfig(url_prefix=URL, bind_verb="bind")
    transport = httpx.MockTransport(lambda request: httpx.Response(500))
    inbox_tx, inbox_rx = trio.open_memory_channel[BinderMsg](4)
    store_tx, store_rx = trio.open_memory_channel[StoreMsg](4)
    cache_tx, cache_rx = trio.open_memory_channel[CacheMsg](4)
    queue_tx, queue_rx = trio.open_memory_channel[QueueMsg](4)
    done_to, done = trio.open_memory_channel[BindDone](1)
    with trio.fail_after(100):
        async with Extenders([config], transport=transport) as extenders:
            binder = Binder(
                inbox_rx,
                store=store_tx,
                cache=cache_tx,
                queue=queue_tx,
                tracing=tracing,
                extenders=extenders,
            )
            async with trio.open_nursery() as nursery, store_rx, cache_rx, queue_rx:
                await nursery.start(binder.run)
                async with inbox_tx:
                    pod = make_pod("p").uid("u1").info()
                    request = BindRequest(pod=pod, node="n1", cycle=1, done=done_to, trace=carrier)
                    inbox_tx.send_nowait(BindBatch(requests=[request]))
                    answer = await done.receive()
    assert (answer.ok, answer.message) == (
        False,
        f"Failed bind with extender at URL {URL}/bind, code 500",
    )
    spans = {s.name: s for s in exporter.get_finished_spans()}
    extender_span = spans["extender bind"]
    assert extender_span.attributes is not None
    assert dict(extender_span.attributes) == {"podium.extender": URL, "podium.result": "error"}
    assert extender_span.parent is not None
    assert extender_span.parent.span_id == spans["scheduling_attempt"].context.span_id
