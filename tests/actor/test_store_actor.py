"""The store actor's contract with its durability component, through a fake one (no thread, so
the autojump clock is safe): what is recovered is restored and published, one commit per batch,
the group commit window, a failed commit stops the store before any reply, and the component
is closed on the way out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
import trio.testing
from builders import make_node, make_pod

from podium.protocol import metrics
from podium.protocol.errors import CommitRefused, StoreError
from podium.protocol.objects import Pod
from podium.store.actor import Recovery, StoreActor
from podium.store.core import StoreCore
from podium.store.mail import (
    BindFailure,
    Binding,
    BindPods,
    BindResult,
    Change,
    Committed,
    EventsResult,
    ReadEvents,
    Recovered,
    StoreFailure,
    StoreMsg,
    WriteObjects,
    WriteResult,
)


@dataclass
class FakeDurability:
    """A Durability that remembers what it was asked, and fails when told to."""

    recovery: Recovery | None = None
    fail_load: bool = False
    fail_commit: bool = False
    fail_read: bool = False
    too_large: set[str] = field(default_factory=set)
    keeps_log: bool = False
    log: list[Change] = field(default_factory=list)
    commits: list[list[int]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    read_gate: trio.Event | None = None
    commit_gate: trio.Event | None = None

    async def load(self) -> Recovery | None:
        self.calls.append("load")
        if self.fail_load:
            raise StoreError("cannot open")
        return self.recovery

    async def commit(self, changes: list[Change]) -> None:
        self.calls.append("commit")
        if self.fail_commit:
            raise StoreError("disk full")
        if refused := [c.name for c in changes if c.name in self.too_large]:
            raise CommitRefused(f"{refused[0]} is too large for the store")

        if self.commit_gate is not None:
            with trio.move_on_after(100):  # an answer that comes very late, if ever
                await self.commit_gate.wait()
        self.commits.append([c.revision for c in changes])
        self.log.extend(changes)

    async def read_events(self, after: int, limit: int = 0) -> tuple[int | None, list[Change]]:
        self.calls.append(f"read_events {after}")
        if self.read_gate is not None:
            await self.read_gate.wait()
        if self.fail_read:
            raise StoreError("etcd is unavailable: no member answered within 10 s")
        kept = [c for c in self.log if c.revision > after][: limit or None]
        return (self.log[0].revision if self.log else None), kept

    async def close(self) -> None:
        self.calls.append("close")


@dataclass
class Harness:
    inbox: trio.MemorySendChannel[StoreMsg]
    published: trio.MemoryReceiveChannel[Recovered | Committed]
    store: StoreActor


@asynccontextmanager
async def running(durability: FakeDurability, **kwargs: Any) -> AsyncIterator[Harness]:
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](64)
    pub_tx, pub_rx = trio.open_memory_channel[Recovered | Committed](64)
    store = StoreActor(inbox_rx, [pub_tx], durability, **kwargs)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            async with inbox_tx:
                yield Harness(inbox_tx, pub_rx, store)


async def _written(h: Harness, *names: str) -> None:
    """Write one node per name, each answered before the next."""
    for name in names:
        msg, rx = _write(name)
        h.inbox.send_nowait(msg)
        await rx.receive()


def _write(name: str) -> tuple[WriteObjects, trio.MemoryReceiveChannel[Any]]:
    tx, rx = trio.open_memory_channel[Any](1)
    return WriteObjects(puts=[make_node(name).obj()], reply=tx), rx


async def test_the_recovered_state_is_restored_and_published_first(
    autojump_clock: trio.testing.MockClock,
) -> None:
    node = make_node("n1").obj()
    durability = FakeDurability(recovery=Recovery("fake", 7, [node]))
    async with running(durability) as h:
        assert h.published.receive_nowait() == Recovered(revision=7, objects=[node])
        assert h.store.core.revision == 7
    assert durability.calls == ["load", "close"]


async def test_one_commit_per_batch_before_its_publication_and_replies(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durability = FakeDurability()
    async with running(durability) as h:
        writes = [_write(f"n{i}") for i in range(3)]
        for msg, _ in writes:
            h.inbox.send_nowait(msg)
        results = [await rx.receive() for _, rx in writes]
        assert [r.revision for r in results] == [1, 2, 3]
        assert durability.commits == [[1, 2, 3]]
        await h.published.receive()  # Recovered
        committed = h.published.receive_nowait()
        assert isinstance(committed, Committed) and committed.revision == 3
    assert durability.calls == ["load", "commit", "close"]


async def test_a_batch_is_applied_and_handed_to_the_component_in_two_steps(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other tasks run between the core's apply of a batch and the durability's commit (whose
    rows are encoded before its hand-over), so a decision in flight waits for half of it; the
    replies and the publication still follow the commit.

    The schedule point is observed where it is taken (trio runs the tasks of one batch of
    steps in a random order, so a task polling from outside sees the gap only sometimes)."""
    durability = FakeDurability()
    pauses: list[tuple[int, bool]] = []
    pause = trio.lowlevel.cancel_shielded_checkpoint

    async def observed_pause() -> None:
        pauses.append((h.store.core.revision, "commit" in durability.calls))
        await pause()

    monkeypatch.setattr(trio.lowlevel, "cancel_shielded_checkpoint", observed_pause)
    async with running(durability) as h:
        writes = [_write(f"n{i}") for i in range(3)]
        for msg, _ in writes:
            h.inbox.send_nowait(msg)
        while not durability.commits:
            await trio.lowlevel.checkpoint()
        assert (3, False) in pauses  # applied, not yet handed over: other tasks step here
        assert [(await rx.receive()).revision for _, rx in writes] == [1, 2, 3]
        assert durability.commits == [[1, 2, 3]]


async def test_a_batch_waits_out_the_commit_window_after_the_previous_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durability = FakeDurability()
    async with running(durability, commit_window=0.005) as h:
        start = trio.current_time()
        first, first_reply = _write("n1")
        h.inbox.send_nowait(first)
        assert isinstance(await first_reply.receive(), WriteResult)
        assert trio.current_time() == start
        second, second_reply = _write("n2")
        h.inbox.send_nowait(second)
        assert isinstance(await second_reply.receive(), WriteResult)
        assert trio.current_time() == start + 0.005
    assert durability.commits == [[1], [2]]


async def test_a_failed_commit_stops_the_store_before_any_reply(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durability = FakeDurability(fail_commit=True)
    errors = metrics.REGISTRY.get_sample_value("podium_store_commit_errors_total") or 0.0
    msg, rx = _write("n1")
    with pytest.RaisesGroup(pytest.RaisesExc(StoreError, match="disk full")):
        async with running(durability) as h:
            h.inbox.send_nowait(msg)
            await trio.sleep_forever()
    assert metrics.REGISTRY.get_sample_value("podium_store_commit_errors_total") == errors + 1
    with pytest.raises(trio.WouldBlock):
        rx.receive_nowait()
    assert durability.calls == ["load", "commit", "close"]


async def test_a_write_the_component_refuses_is_rejected_alone_and_the_store_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durability = FakeDurability(too_large={"big"})
    errors = metrics.REGISTRY.get_sample_value("podium_store_commit_errors_total") or 0.0
    async with running(durability) as h:
        writes = [_write(name) for name in ("n1", "big", "n3")]
        for msg, _ in writes:
            h.inbox.send_nowait(msg)
        results = [await rx.receive() for _, rx in writes]
        assert isinstance(results[0], WriteResult) and results[0].revision == 1
        assert results[1] == StoreFailure(
            code="too_large", message="big is too large for the store"
        )
        assert isinstance(results[2], WriteResult) and results[2].revision == 2
        # The refused batch was taken back, then each write committed on its own.
        assert durability.commits == [[1], [2]]
        assert h.store.core.revision == 2
        assert h.store.core.get("Node", "", "big") is None
        await h.published.receive()  # Recovered
        published = [h.published.receive_nowait(), h.published.receive_nowait()]
        assert [[c.name for c in p.changes] for p in published if isinstance(p, Committed)] == [
            ["n1"],
            ["n3"],
        ]
        await _written(h, "n4")
        assert h.store.core.revision == 3
    assert metrics.REGISTRY.get_sample_value("podium_store_commit_errors_total") == errors + 2


async def test_a_bind_the_component_refuses_fails_alone_and_its_batch_commits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durability = FakeDurability()
    async with running(durability) as h:
        await _written(h, "n1")
        tx, rx = trio.open_memory_channel[Any](1)
        h.inbox.send_nowait(
            WriteObjects(puts=[make_pod("p1").obj(), make_pod("p2").obj()], reply=tx)
        )
        await rx.receive()
        pods = {name: h.store.core.get("Pod", "default", name) for name in ("p1", "p2")}
        bindings = [
            Binding(namespace="default", name=name, uid=pod.metadata.uid, node="n1")
            for name, pod in pods.items()
            if pod is not None
        ]
        durability.too_large.add("p2")
        tx, rx = trio.open_memory_channel[Any](1)
        h.inbox.send_nowait(BindPods(bindings=bindings, reply=tx))
        result = await rx.receive()
    assert isinstance(result, BindResult)
    assert result.revision == 4
    assert result.failed == [
        BindFailure(binding=bindings[1], code="too_large", message="p2 is too large for the store")
    ]
    assert durability.commits == [[1], [2, 3], [4]]
    bound = h.store.core.get("Pod", "default", "p1")
    assert bound is not None and bound.spec.node_name == "n1"  # type: ignore[union-attr]  # a Pod
    unbound = h.store.core.get("Pod", "default", "p2")
    assert unbound is not None and unbound.spec.node_name == ""  # type: ignore[union-attr]  # a Pod


async def _pending(h: Harness, *names: str) -> dict[str, str]:
    """Write node n1 and a pending pod per name; their uids by name."""
    await _written(h, "n1")
    tx, rx = trio.open_memory_channel[Any](1)
    h.inbox.send_nowait(WriteObjects(puts=[make_pod(n).obj() for n in names], reply=tx))
    written = await rx.receive()
    assert isinstance(written, WriteResult)
    return {s.name: s.uid for s in written.objects}


def _bindings(uids: dict[str, str], groups: dict[str, str]) -> list[Binding]:
    return [
        Binding(namespace="default", name=name, uid=uid, node="n1", group=groups.get(name, ""))
        for name, uid in uids.items()
    ]


def _bound(h: Harness) -> list[str]:
    pods = h.store.core.read("Pod")[1]
    return sorted(p.metadata.name for p in pods if isinstance(p, Pod) and p.spec.node_name)


async def test_a_refused_bind_batch_is_split_by_pod_group_never_inside_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The durability refuses the batch for one member's change: the batch is served again a
    unit at a time (each group whole, each lone binding alone); the group holding the refused
    change fails whole, every member with the refusal, and the rest commits."""
    durability = FakeDurability()
    async with running(durability) as h:
        uids = await _pending(h, "a1", "a2", "lone", "b1", "b2", "lone2")
        groups = {"a1": "default/a", "a2": "default/a", "b1": "default/b", "b2": "default/b"}
        bindings = _bindings(uids, groups)
        durability.too_large.add("b2")
        tx, rx = trio.open_memory_channel[Any](1)
        h.inbox.send_nowait(BindPods(bindings=bindings, reply=tx))
        result = await rx.receive()
        assert _bound(h) == ["a1", "a2", "lone", "lone2"]
    assert isinstance(result, BindResult)
    why = (
        "pod group default/b: its 2 bindings were refused together, none is bound: "
        "b2 is too large for the store"
    )
    assert result.failed == [
        BindFailure(binding=bindings[3], code="too_large", message=why),
        BindFailure(binding=bindings[4], code="too_large", message=why),
    ]
    # The node, the pods, then the units that could be stored: group a, lone, lone2.
    assert durability.commits == [[1], [2, 3, 4, 5, 6, 7], [8, 9], [10], [11]]
    assert result.revision == 11


async def test_a_refused_pod_group_alone_fails_whole(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A bind of one group the durability refuses is not split: every member fails with the
    refusal, nothing is committed, and the store goes on."""
    durability = FakeDurability()
    async with running(durability) as h:
        uids = await _pending(h, "a1", "a2", "a3")
        bindings = _bindings(uids, dict.fromkeys(uids, "ml/train"))
        durability.too_large.add("a2")
        tx, rx = trio.open_memory_channel[Any](1)
        h.inbox.send_nowait(BindPods(bindings=bindings, reply=tx))
        result = await rx.receive()
        assert _bound(h) == []
        assert h.store.core.revision == 4
        await _written(h, "n2")
    assert isinstance(result, BindResult)
    assert [(f.binding, f.code) for f in result.failed] == [(b, "too_large") for b in bindings]
    assert {f.message for f in result.failed} == {
        "pod group ml/train: its 3 bindings were refused together, none is bound: "
        "a2 is too large for the store"
    }
    assert durability.commits == [[1], [2, 3, 4], [5]]


async def test_a_refused_batch_of_messages_keeps_each_bind_s_groups_whole(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Several messages refused together are served a message at a time; the bind among them
    then commits its group whole (the refused change was another message's)."""
    durability = FakeDurability()
    async with running(durability) as h:
        uids = await _pending(h, "a1", "a2")
        bindings = _bindings(uids, dict.fromkeys(uids, "ml/train"))
        durability.too_large.add("big")
        write, written = _write("big")
        tx, rx = trio.open_memory_channel[Any](1)
        h.inbox.send_nowait(write)
        h.inbox.send_nowait(BindPods(bindings=bindings, reply=tx))
        refused, result = await written.receive(), await rx.receive()
        assert _bound(h) == ["a1", "a2"]
    assert isinstance(refused, StoreFailure) and refused.code == "too_large"
    assert result == BindResult(revision=5, failed=[], commit_seconds=result.commit_seconds)
    assert durability.commits == [[1], [2, 3], [4, 5]]


async def test_a_commit_is_waited_for_while_the_store_drains(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durability = FakeDurability(commit_gate=trio.Event())
    msg, rx = _write("n1")
    async with running(durability) as h:
        h.inbox.send_nowait(msg)
        await trio.sleep(3)  # a slow commit, within the harness's 5 s
        durability.commit_gate.set()  # type: ignore[union-attr]  # set above
        assert isinstance(await rx.receive(), WriteResult)
    assert durability.commits == [[1]]


async def test_a_commit_never_answered_is_abandoned_when_the_store_is_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Issue 25, point 2: the shutdown grace is over (the daemon cancels its services) while
    # etcd has not answered a commit: the store stops at once, acknowledging nothing.
    durability = FakeDurability(commit_gate=trio.Event())
    msg, rx = _write("n1")
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](64)
    pub_tx, pub_rx = trio.open_memory_channel[Recovered | Committed](64)
    store = StoreActor(inbox_rx, [pub_tx], durability)
    with trio.fail_after(200):
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            inbox_tx.send_nowait(msg)
            await trio.testing.wait_all_tasks_blocked()
            assert durability.calls == ["load", "commit"]
            nursery.cancel_scope.deadline = trio.current_time() + 2  # the grace
    assert trio.current_time() == 2
    assert durability.calls == ["load", "commit", "close"]
    assert durability.commits == []
    with pytest.raises(trio.WouldBlock):
        rx.receive_nowait()
    assert isinstance(pub_rx.receive_nowait(), Recovered)
    with pytest.raises(trio.EndOfChannel):
        pub_rx.receive_nowait()


async def test_a_failed_load_still_closes_the_component(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durability = FakeDurability(fail_load=True)
    with pytest.RaisesGroup(pytest.RaisesExc(StoreError, match="cannot open")):
        async with running(durability):
            pass
    assert durability.calls == ["load", "close"]


@pytest.mark.parametrize("keeps_log", [True, False], ids=["durable log", "no log"])
async def test_a_read_behind_the_cores_memory_goes_to_the_component_if_it_keeps_a_log(
    autojump_clock: trio.testing.MockClock, keeps_log: bool
) -> None:
    durability = FakeDurability(keeps_log=keeps_log)
    async with running(durability, core=StoreCore(retention=1)) as h:
        await _written(h, "n1", "n2", "n3")
        tx, rx = trio.open_memory_channel[Any](1)
        h.inbox.send_nowait(ReadEvents(after=1, reply=tx))
        answer = await rx.receive()
    if keeps_log:
        assert isinstance(answer, EventsResult)
        assert [c.revision for c in answer.changes] == [2, 3]
        assert answer.more  # a page from the component: the reader asks again
        assert "read_events 1" in durability.calls
    else:
        assert (answer.code, answer.revision) == ("gone", 3)
        assert not any(call.startswith("read_events") for call in durability.calls)


async def test_a_read_of_the_components_log_runs_beside_the_commits_not_before_them(
    autojump_clock: trio.testing.MockClock,
) -> None:
    durability = FakeDurability(keeps_log=True, read_gate=trio.Event())
    async with running(durability, core=StoreCore(retention=1)) as h:
        await _written(h, "n1", "n2", "n3")
        tx, read = trio.open_memory_channel[Any](1)
        h.inbox.send_nowait(ReadEvents(after=0, limit=2, reply=tx))
        # The read waits on its component; writes behind it commit and are answered.
        for name in ("n4", "n5"):
            msg, rx = _write(name)
            h.inbox.send_nowait(msg)
            assert isinstance(await rx.receive(), WriteResult)
        assert durability.commits[-2:] == [[4], [5]]
        durability.read_gate.set()
        answer = await read.receive()
    assert ([c.revision for c in answer.changes], answer.more) == ([1, 2], True)


async def test_a_read_of_the_components_log_that_fails_answers_that_watcher_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Issue 25 point 9: a page of the log not answered within etcd's request timeout (large
    objects) failed the reader's task, and with it the store and the daemon."""
    durability = FakeDurability(keeps_log=True, fail_read=True)
    async with running(durability, core=StoreCore(retention=1)) as h:
        await _written(h, "n1", "n2", "n3")
        tx, rx = trio.open_memory_channel[Any](1)
        h.inbox.send_nowait(ReadEvents(after=1, reply=tx))
        answer = await rx.receive()
        assert (answer.code, answer.message) == (
            "unavailable",
            "the event log after revision 1 could not be read: etcd is unavailable: no member "
            "answered within 10 s; watch again",
        )
        await _written(h, "n4")
        assert h.store.core.revision == 4
