"""The binder actor through its mailbox, under the autojump clock, with the store, the cache
and the queue played by the test: binds go to the store in batches, a committed bind is
reported done, a refused one is forgotten by the cache and requeued (scheduler.go@v1.14
``bind`` and its error path)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import pytest
import trio
import trio.testing
from builders import make_pod

from podium.actors.binder.actor import Binder
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.mail.messages import (
    BindBatch,
    BindDone,
    BinderMsg,
    BindRequest,
    CacheMsg,
    FinishBinding,
    Forget,
    QueueMsg,
    Requeue,
    RequeueGroup,
)
from podium.store.mail import (
    BindFailure,
    Binding,
    BindPods,
    BindResult,
    StoreFailure,
    StoreMsg,
)

T = TypeVar("T")

TIME_LIMIT = 1000.0  # virtual seconds: a hung test fails instead of jumping forever
COMMIT_SECONDS = 0.5  # how long the fake store takes over each batch


def pod(name: str, uid: str = "") -> PodInfo:
    info: PodInfo = make_pod(name).uid(uid or f"uid-{name}").info()
    return info


StoreAnswer = Callable[[BindPods], BindResult | StoreFailure]


def commit_all(msg: BindPods) -> BindResult:
    return BindResult(revision=7)


@dataclass
class Peers:
    """What the binder sent to each of its peers, with the trio time it arrived."""

    store: list[tuple[float, BindPods]] = field(default_factory=list)
    cache: list[CacheMsg] = field(default_factory=list)
    queue: list[QueueMsg] = field(default_factory=list)
    answer: StoreAnswer = commit_all


@dataclass
class Harness:
    inbox: trio.MemorySendChannel[BinderMsg]
    peers: Peers

    async def bind(self, p: PodInfo, node: str, *, cycle: int = 1) -> BindDone:
        done_to, done = trio.open_memory_channel[BindDone](1)
        self.inbox.send_nowait(
            BindBatch(requests=[BindRequest(pod=p, node=node, cycle=cycle, done=done_to)])
        )
        return await done.receive()


async def _play_store(inbox: trio.MemoryReceiveChannel[StoreMsg], peers: Peers) -> None:
    async for msg in inbox:
        assert isinstance(msg, BindPods), msg
        peers.store.append((trio.current_time(), msg))
        await trio.sleep(COMMIT_SECONDS)
        msg.reply.send_nowait(peers.answer(msg))


async def _record(inbox: trio.MemoryReceiveChannel[T], into: list[T]) -> None:
    async for msg in inbox:
        into.append(msg)


@asynccontextmanager
async def running(answer: StoreAnswer = commit_all) -> AsyncIterator[Harness]:
    peers = Peers(answer=answer)
    inbox_tx, inbox_rx = trio.open_memory_channel[BinderMsg](1024)
    store_tx, store_rx = trio.open_memory_channel[StoreMsg](1024)
    cache_tx, cache_rx = trio.open_memory_channel[CacheMsg](1024)
    queue_tx, queue_rx = trio.open_memory_channel[QueueMsg](1024)
    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_play_store, store_rx, peers)
            nursery.start_soon(_record, cache_rx, peers.cache)
            nursery.start_soon(_record, queue_rx, peers.queue)
            binder = Binder(inbox_rx, store=store_tx, cache=cache_tx, queue=queue_tx)
            await nursery.start(binder.run)
            async with inbox_tx:
                yield Harness(inbox_tx, peers)


def refuse(*uids: str) -> StoreAnswer:
    """The store commits the batch but refuses the bindings of ``uids``."""

    def answer(msg: BindPods) -> BindResult:
        failed = [
            BindFailure(binding=b, code="conflict", message=f"pod {b.namespace}/{b.name} is gone")
            for b in msg.bindings
            if b.uid in uids
        ]
        return BindResult(revision=7, failed=failed)

    return answer


async def test_a_committed_bind_is_finished_in_the_cache_and_reported_done(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        done_to, done = trio.open_memory_channel[BindDone](1)
        h.inbox.send_nowait(
            BindBatch(
                requests=[
                    BindRequest(
                        pod=pod("web"),
                        node="n1",
                        cycle=3,
                        volumes={"default/data": "pv-1"},
                        provisions=["default/logs"],
                        done=done_to,
                    )
                ]
            )
        )
        assert await done.receive() == BindDone(key="default/web", ok=True)
        assert trio.current_time() == COMMIT_SECONDS
    assert [(t, batch.bindings) for t, batch in h.peers.store] == [
        (
            0.0,
            [
                Binding(
                    namespace="default",
                    name="web",
                    uid="uid-web",
                    node="n1",
                    volumes={"default/data": "pv-1"},
                    provisions=["default/logs"],
                )
            ],
        )
    ]
    # The assumed pod's TTL starts at the hand-over to the store; nothing is requeued.
    assert h.peers.cache == [FinishBinding(keys=["default/web"])]
    assert h.peers.queue == []


async def test_a_refused_bind_is_forgotten_and_requeued_as_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(refuse("uid-web")) as h:
        p = pod("web")
        done = await h.bind(p, "n1", cycle=4)
    assert done == BindDone(key="default/web", ok=False, message="pod default/web is gone")
    assert h.peers.cache == [FinishBinding(keys=["default/web"]), Forget(key="default/web")]
    assert h.peers.queue == [Requeue(pod=p, cycle=4, why="error")]


async def test_a_store_failure_fails_every_bind_of_its_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def unavailable(msg: BindPods) -> StoreFailure:
        return StoreFailure(code="unavailable", message="the store is shutting down")

    async with running(unavailable) as h:
        a, b = pod("a"), pod("b")
        done_to, done = trio.open_memory_channel[BindDone](2)
        h.inbox.send_nowait(
            BindBatch(requests=[BindRequest(pod=a, node="n1", cycle=1, done=done_to)])
        )
        h.inbox.send_nowait(
            BindBatch(requests=[BindRequest(pod=b, node="n2", cycle=1, done=done_to)])
        )
        got = [await done.receive(), await done.receive()]
    message = "the store is shutting down"
    assert got == [
        BindDone(key="default/a", ok=False, message=message),
        BindDone(key="default/b", ok=False, message=message),
    ]
    assert [len(batch.bindings) for _, batch in h.peers.store] == [2]
    # Two scheduling batches waiting together: one store batch, one FinishBinding.
    assert h.peers.cache == [
        FinishBinding(keys=["default/a", "default/b"]),
        Forget(key="default/a"),
        Forget(key="default/b"),
    ]
    assert h.peers.queue == [
        Requeue(pod=a, cycle=1, why="error"),
        Requeue(pod=b, cycle=1, why="error"),
    ]


async def test_requests_that_wait_while_the_store_commits_go_as_one_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        done_to, done = trio.open_memory_channel[BindDone](10)
        h.inbox.send_nowait(
            BindBatch(requests=[BindRequest(pod=pod("first"), node="n1", cycle=1, done=done_to)])
        )
        await trio.testing.wait_all_tasks_blocked()
        for name in ("a", "b", "c"):
            h.inbox.send_nowait(
                BindBatch(requests=[BindRequest(pod=pod(name), node="n2", cycle=2, done=done_to)])
            )
        got = [(await done.receive(), trio.current_time()) for _ in range(4)]
    assert [(t, [b.name for b in batch.bindings]) for t, batch in h.peers.store] == [
        (0.0, ["first"]),
        (COMMIT_SECONDS, ["a", "b", "c"]),
    ]
    assert [(d.key, d.ok, t) for d, t in got] == [
        ("default/first", True, COMMIT_SECONDS),
        ("default/a", True, 2 * COMMIT_SECONDS),
        ("default/b", True, 2 * COMMIT_SECONDS),
        ("default/c", True, 2 * COMMIT_SECONDS),
    ]


async def test_a_scheduling_batch_is_one_store_batch_and_one_finish_binding(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(refuse("uid-b")) as h:
        a, b, c = pod("a"), pod("b"), pod("c")
        done_to, done = trio.open_memory_channel[BindDone](3)
        h.inbox.send_nowait(
            BindBatch(
                requests=[
                    BindRequest(pod=p, node="n1", cycle=i, done=done_to)
                    for i, p in enumerate((a, b, c), 1)
                ]
            )
        )
        got = [(await done.receive()).ok for _ in range(3)]
    assert got == [True, False, True]
    assert [[x.name for x in batch.bindings] for _, batch in h.peers.store] == [["a", "b", "c"]]
    assert h.peers.cache == [
        FinishBinding(keys=["default/a", "default/b", "default/c"]),
        Forget(key="default/b"),
    ]
    assert h.peers.queue == [Requeue(pod=b, cycle=2, why="error")]


async def test_a_failure_names_the_pod_by_uid_not_by_name(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A pod deleted and re-created under its name may share a batch with its old self.
    async with running(refuse("uid-old")) as h:
        old, new = pod("web", uid="uid-old"), pod("web", uid="uid-new")
        done_to, done = trio.open_memory_channel[BindDone](2)
        h.inbox.send_nowait(
            BindBatch(requests=[BindRequest(pod=old, node="n1", cycle=1, done=done_to)])
        )
        h.inbox.send_nowait(
            BindBatch(requests=[BindRequest(pod=new, node="n2", cycle=2, done=done_to)])
        )
        got = [await done.receive(), await done.receive()]
    assert [(d.ok, d.message) for d in got] == [(False, "pod default/web is gone"), (True, "")]
    assert h.peers.queue == [Requeue(pod=old, cycle=1, why="error")]


@pytest.mark.parametrize(
    ("answer", "cache"),
    [
        (commit_all, [FinishBinding(keys=["default/web"])]),
        (refuse("uid-web"), [FinishBinding(keys=["default/web"]), Forget(key="default/web")]),
    ],
    ids=["committed", "refused"],
)
async def test_a_request_without_done_is_bound_all_the_same(
    autojump_clock: trio.testing.MockClock, answer: StoreAnswer, cache: list[CacheMsg]
) -> None:
    async with running(answer) as h:
        h.inbox.send_nowait(BindBatch(requests=[BindRequest(pod=pod("web"), node="n1", cycle=1)]))
        await trio.sleep(COMMIT_SECONDS)
        await trio.testing.wait_all_tasks_blocked()
        # Still serving: the next bind is answered.
        assert (await h.bind(pod("next"), "n2")).ok
    assert [[b.name for b in batch.bindings] for _, batch in h.peers.store] == [["web"], ["next"]]
    assert h.peers.cache[: len(cache)] == cache


async def test_closing_the_mailbox_stops_the_binder_and_closes_its_peers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # running() returns only once every peer's mailbox was closed by the binder.
    async with running() as h:
        await h.bind(pod("web"), "n1")
    assert trio.current_time() == COMMIT_SECONDS


async def test_a_groups_refused_bindings_are_forgotten_and_the_group_requeued_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A gang's members carry their group into their bindings; when the store refuses them
    (all together, as it refuses a group), each is forgotten and the group requeued as one
    unit, while a pod bound on its own beside them is requeued as a pod."""
    members = [pod(f"w{i}") for i in range(3)]
    alone = pod("alone")
    async with running(refuse("uid-w0", "uid-w1", "uid-w2", "uid-alone")) as h:
        requests = [BindRequest(pod=p, node="n1", cycle=4, group="default/g") for p in members]
        h.inbox.send_nowait(
            BindBatch(requests=[*requests, BindRequest(pod=alone, node="n2", cycle=5)])
        )
        await trio.testing.wait_all_tasks_blocked()
    ((_, sent),) = h.peers.store
    assert [(b.name, b.group) for b in sent.bindings] == [
        ("w0", "default/g"),
        ("w1", "default/g"),
        ("w2", "default/g"),
        ("alone", ""),
    ]
    forgotten = [m.key for m in h.peers.cache if isinstance(m, Forget)]
    assert forgotten == ["default/w0", "default/w1", "default/w2", "default/alone"]
    assert h.peers.queue == [
        Requeue(pod=alone, cycle=5, why="error"),
        RequeueGroup(key="default/g", pods=members, cycle=4, why="error"),
    ]
