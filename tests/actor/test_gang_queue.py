"""The scheduling queue with pod groups, under the autojump clock (issue 24, points 2 and 5).

A gang's pending members wait before the queue until their PodGroup exists with minCount pods
(Kubernetes' GangScheduling PreEnqueue, v1.35+), then go to activeQ as one unit ordered by
priority, then the group's creation (scheduler-plugins' Coscheduling QueueSort); a Pop whose
head is a unit answers all its members, then the units next in line while the batch stays
within ``max_pods``, and no other pod; requeues, backoff and moves apply to the unit whole. ``basic`` groups, and members beyond a gang's bound minCount, are ordinary pods.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Literal

import pytest
import trio
import trio.testing
from builders import decode, make_node, make_pod
from gangs import member, pod_group
from queue_harness import QueueHarness, change, run_queue

from podium.actors.mail.messages import (
    GangBatch,
    GiveBack,
    GroupPlaced,
    LookupReply,
    Pop,
    PoppedBatch,
    QueueIdle,
    Requeue,
    RequeueGroup,
)
from podium.protocol import objects as o
from podium.protocol.metrics import REGISTRY
from podium.store.mail import Change, Recovered


class Harness(QueueHarness):
    async def pop(self, max_pods: int = 1, *, idle_ok: bool = False) -> PoppedBatch | QueueIdle:
        return await self.pop_answer(max_pods, idle_ok=idle_ok)

    async def batch(self, max_pods: int = 1) -> PoppedBatch:
        got = await self.pop(max_pods)
        assert isinstance(got, PoppedBatch)
        return got

    async def requeue_group(
        self, got: PoppedBatch, why: Literal["unschedulable", "error", "conflict"]
    ) -> None:
        (group,) = got.groups
        self.send(
            RequeueGroup(
                key=group.key, pods=[p.pod for p in got.pods], cycle=got.pods[0].cycle, why=why
            )
        )
        await trio.testing.wait_all_tasks_blocked()


def running(**kwargs: Any) -> AbstractAsyncContextManager[Harness]:
    return run_queue(Harness, **kwargs)


def names(got: PoppedBatch) -> list[str]:
    return [p.pod.name for p in got.pods]


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


TRAIN = "ml/train"


# --------------------------------------------------------------------------- quorum


async def test_members_wait_until_the_group_exists_with_min_count_pods(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(2)))
        assert await h.lookup("ml/w0") == LookupReply(
            queue="waiting",
            attempts=0,
            message="waiting for pod group ml/train: the group does not exist",
        )
        h.commit(change("Added", pod_group("train", 3)))
        assert await h.lookup("ml/w1") == LookupReply(
            queue="waiting",
            attempts=0,
            message="waiting for pod group ml/train: 2 of 3 pods exist",
        )
        assert sample("podium_pod_groups_waiting") == 1
        # Never popped while waiting: the queue is idle.
        assert await h.pop(idle_ok=True) == QueueIdle(unschedulable=0)
        h.commit(change("Added", member("w2", "train")))
        got = await h.batch(max_pods=1)  # a gang is decided whole, whatever max_pods says
        assert names(got) == ["w0", "w1", "w2"]
        assert got.groups == [GangBatch(key=TRAIN, min_count=3, bound=0, members=3)]
        assert [(p.cycle, p.attempts) for p in got.pods] == [(1, 1)] * 3
        assert await h.lookup("ml/w2") == LookupReply(queue="in_flight", attempts=1)
        assert sample("podium_pod_groups_waiting") == 0


async def test_quorum_counts_bound_members_and_a_group_arriving_last(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bound = member("w0", "train", node="n1")
    async with running() as h:
        h.send(Recovered(revision=1, objects=[bound, member("w1", "train")]))
        h.commit(change("Added", member("w2", "train")))
        await h.settle()
        assert (await h.lookup("ml/w1")).queue == "waiting"
        h.commit(change("Added", pod_group("train", 3)))
        got = await h.batch()
        assert names(got) == ["w1", "w2"]
        assert got.groups == [GangBatch(key=TRAIN, min_count=3, bound=1, members=2)]


async def test_a_member_deleted_while_waiting_lowers_the_count(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pod_group("train", 3)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(2)))
        h.commit(change("Deleted", member("w0", "train")))
        assert (await h.lookup("ml/w1")).message == (
            "waiting for pod group ml/train: 1 of 3 pods exist"
        )
        assert await h.lookup("ml/w0") == LookupReply(queue=None, attempts=0)
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in (2, 3)))
        assert names(await h.batch()) == ["w1", "w2", "w3"]


async def test_a_member_deleted_after_the_quorum_sends_the_unit_back_to_waiting(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pod_group("train", 2)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(2)))
        await h.settle()
        assert (await h.lookup("ml/w0")).queue == "active"
        h.commit(change("Deleted", member("w1", "train")))
        assert (await h.lookup("ml/w0")).message == (
            "waiting for pod group ml/train: 1 of 2 pods exist"
        )
        assert await h.pop(idle_ok=True) == QueueIdle(unschedulable=0)


async def test_a_deleted_group_sends_its_members_back_to_waiting_for_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pod_group("train", 2)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(2)))
        got = await h.batch()
        await h.requeue_group(got, "unschedulable")
        assert (await h.lookup("ml/w0")).queue == "unschedulable"
        h.commit(change("Deleted", pod_group("train", 2)))
        assert await h.lookup("ml/w1") == LookupReply(
            queue="waiting",
            attempts=1,
            message="waiting for pod group ml/train: the group does not exist",
        )
        assert await h.pop(idle_ok=True) == QueueIdle(unschedulable=0)
        h.commit(change("Added", pod_group("train", 2)))
        assert names(await h.batch()) == ["w0", "w1"]


async def test_gated_members_do_not_count_until_their_gates_are_removed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    gated = (
        make_pod("w1")
        .ns("ml")
        .uid("uid-ml-w1")
        .req(cpu="1")
        .spec(schedulingGroup={"podGroupName": "train"}, schedulingGates=[{"name": "wait"}])
        .obj()
    )
    async with running() as h:
        h.commit(change("Added", pod_group("train", 2)), change("Added", member("w0", "train")))
        h.commit(change("Added", gated))
        assert (await h.lookup("ml/w0")).message.endswith("1 of 2 pods exist")
        assert (await h.lookup("ml/w1")).queue == "gated"
        h.commit(change("Modified", member("w1", "train"), old=gated))
        assert names(await h.batch()) == ["w0", "w1"]


# --------------------------------------------------------------------------- order


async def test_units_are_ordered_by_priority_then_the_groups_creation(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Coscheduling's QueueSort: priority, then the group's creationTimestamp, then its key.
    Recovered at once, the groups share the queue's clock: b, created first, goes first."""
    objects: list[o.KubeObject] = [
        pod_group("a", 1, created="2026-01-01T00:00:02Z"),
        pod_group("b", 1, created="2026-01-01T00:00:01Z"),
        pod_group("c", 1, created="2026-01-01T00:00:01Z"),
        pod_group("urgent", 1, created="2026-01-01T00:00:09Z"),
        member("a0", "a"),
        member("b0", "b"),
        member("c0", "c"),
        member("u0", "urgent", priority=100),
    ]
    async with running() as h:
        h.send(Recovered(revision=1, objects=objects))
        order = []
        for _ in range(4):
            got = await h.batch(1)
            (group,) = got.groups
            order.append(group.key)
    assert order == ["ml/urgent", "ml/b", "ml/c", "ml/a"]


def plain(name: str, priority: int = 0) -> o.Pod:
    pod: o.Pod = make_pod(name).ns("ml").uid(f"uid-{name}").priority(priority).obj()
    return pod


async def test_gangs_share_a_batch_only_with_gangs_and_take_their_place_among_pods(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", plain("early")), change("Added", plain("high", 10)))
        await trio.sleep(1)
        h.commit(change("Added", pod_group("train", 2)), change("Added", pod_group("eval", 1)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(2)))
        h.commit(change("Added", member("e0", "eval")))
        await trio.sleep(1)
        h.commit(change("Added", plain("late")))
        batches = [await h.batch(8) for _ in range(3)]
    # The groups seen at once: by key.
    assert [names(b) for b in batches] == [["high", "early"], ["e0", "w0", "w1"], ["late"]]
    assert [[(g.key, g.members) for g in b.groups] for b in batches] == [
        [],
        [("ml/eval", 1), ("ml/train", 2)],
        [],
    ]
    # Each unit its own scheduling cycle, as a pop of its own would give it.
    assert [p.cycle for p in batches[1].pods] == [3, 4, 4]


async def test_the_units_after_the_first_join_its_batch_only_within_max_pods(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Units of 3, 2, 3 and 1 members, a Pop of 4: the first unit whatever max_pods, then
    the next while the batch stays within 4; a unit that would not fit starts the next batch
    (never skipped for a smaller one behind it)."""
    sizes = {"a": 3, "b": 2, "c": 3, "d": 1}
    async with running() as h:
        for name, size in sizes.items():
            h.commit(change("Added", pod_group(name, size)))
            h.commit(*(change("Added", member(f"{name}{i}", name)) for i in range(size)))
            await trio.sleep(1)
        batches = [await h.batch(4) for _ in range(3)]
        big = await h.pop(2, idle_ok=True)
    assert [[(g.key, g.members) for g in b.groups] for b in batches] == [
        [("ml/a", 3)],
        [("ml/b", 2)],
        [("ml/c", 3), ("ml/d", 1)],
    ]
    assert [names(b) for b in batches][2] == ["c0", "c1", "c2", "d0"]
    assert big == QueueIdle(unschedulable=0)


async def test_a_batch_of_gangs_given_back_returns_each_unit_whole(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The scheduler gives back the gangs of a batch it did not decide (its time bound, or an
    earlier gang's preemption): each unit goes back to activeQ whole, its attempt not counted,
    and the next Pop hands them out again in the same order."""
    async with running() as h:
        for name in ("a", "b"):
            h.commit(change("Added", pod_group(name, 2)))
            h.commit(*(change("Added", member(f"{name}{i}", name)) for i in range(2)))
            await trio.sleep(1)
        first = await h.batch(8)
        assert names(first) == ["a0", "a1", "b0", "b1"]
        h.send(GiveBack(keys=["ml/b0", "ml/b1"]))
        await h.settle()
        assert await h.lookup("ml/b1") == LookupReply(queue="active", attempts=0)
        h.send(GiveBack(keys=["ml/a0", "ml/a1"]))
        again = await h.batch(8)
    assert names(again) == ["a0", "a1", "b0", "b1"]
    assert [(g.key, g.members) for g in again.groups] == [("ml/a", 2), ("ml/b", 2)]
    assert {p.attempts for p in again.pods} == {1}


# --------------------------------------------------------------------------- requeue


async def test_a_unit_is_requeued_and_moved_whole_with_the_groups_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pod_group("train", 2)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(2)))
        got = await h.batch()
        added = sample("scheduler_queue_incoming_pods_total", queue="backoff", event="NodeAdd")
        await h.requeue_group(got, "unschedulable")
        assert [(await h.lookup(f"ml/w{i}")).queue for i in range(2)] == ["unschedulable"] * 2
        assert sample("scheduler_pending_pods", queue="unschedulable") == 2
        await trio.sleep(0.5)
        h.commit(change("Added", make_node("n1").obj()))  # a node: the unit moves, backing off
        await h.settle()
        assert (await h.lookup("ml/w1")).queue == "backoff"
        assert (
            sample("scheduler_queue_incoming_pods_total", queue="backoff", event="NodeAdd")
            == added + 2
        )
        again = await h.batch()
        assert trio.current_time() == 1.0  # the group's first backoff: 1 s
        assert [p.attempts for p in again.pods] == [2, 2]
        # A move request during the attempt: the unit goes to backoffQ, its second backoff 2 s.
        h.commit(change("Added", make_node("n2").obj()))
        await h.requeue_group(again, "error")
        third = await h.batch()
        assert trio.current_time() == 3.0
        assert names(third) == ["w0", "w1"]


async def test_a_conflict_requeues_the_unit_straight_to_active(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pod_group("train", 2)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(2)))
        got = await h.batch()
        await h.requeue_group(got, "conflict")
        again = await h.batch()
        assert trio.current_time() == 0.0 and names(again) == ["w0", "w1"]


async def test_members_that_arrive_during_an_attempt_join_the_requeued_unit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pod_group("train", 2)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(2)))
        got = await h.batch()
        h.commit(change("Added", member("w2", "train")))
        assert (await h.lookup("ml/w2")).message == (
            "waiting for pod group ml/train: its other members are being scheduled"
        )
        await h.requeue_group(got, "conflict")
        assert names(await h.batch()) == ["w0", "w1", "w2"]


@pytest.mark.parametrize("volumes", [False, True], ids=["bind", "bind-with-volumes"])
async def test_a_gangs_bind_moves_no_gang_of_its_batch_that_failed_after_it(
    autojump_clock: trio.testing.MockClock, volumes: bool
) -> None:
    """The pods' bind rule (tests/actor/test_queue.py) for gangs: gang e placed in a batch of
    its own, then gangs a and w in one batch, a placed, w failed (its member's required
    affinity matches a's and e's members). One gang at a time a's bind, its Bound and the
    claim it bound, would have come before w's pop: they leave w unschedulable. e's bind, from
    an earlier batch, comes after w's requeue either way: it moves w."""
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
            ]
        }
    }
    db = {"app": "db"}
    claim = decode(
        o.PersistentVolumeClaim,
        {"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ml"}},
    )

    def bind(name: str, group: str) -> list[Change]:
        # The store's order for one binding: its claims (Modified), then the pod (Bound).
        pod = member(name, group, labels=db)
        done = [change("Modified", claim, claim)] if volumes else []
        return [
            *done,
            change("Bound", member(name, group, labels=db, node="n1"), old=pod, node="n1"),
        ]

    async with running() as h:
        h.commit(change("Added", pod_group("e", 1)), change("Added", member("e0", "e", labels=db)))
        early = await h.batch(8)
        assert names(early) == ["e0"]
        h.send(GroupPlaced(key="ml/e", pods=[early.pods[0].pod]))
        await trio.sleep(1)
        h.commit(change("Added", pod_group("a", 1)), change("Added", member("a0", "a", labels=db)))
        await trio.sleep(1)
        h.commit(
            change("Added", pod_group("w", 1)),
            change("Added", member("w0", "w", affinity=affinity)),
        )
        got = await h.batch(8)
        assert names(got) == ["a0", "w0"]
        assert [(g.key, g.members) for g in got.groups] == [("ml/a", 1), ("ml/w", 1)]
        a0, w0 = got.pods
        h.send(GroupPlaced(key="ml/a", pods=[a0.pod]))
        h.send(RequeueGroup(key="ml/w", pods=[w0.pod], cycle=w0.cycle, why="unschedulable"))
        await h.settle()
        assert (await h.lookup("ml/w0")).queue == "unschedulable"
        h.commit(*bind("a0", "a"))
        await h.settle()
        assert (await h.lookup("ml/w0")).queue == "unschedulable"
        h.commit(*bind("e0", "e"))
        await h.settle()
        assert (await h.lookup("ml/w0")).queue == "backoff"


# --------------------------------------------------------------------------- placed


async def test_members_beyond_a_placed_gang_are_ordinary_pods(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The gang placed w0 and w1 (minCount 2) and not w2: w2 is requeued on its own, and w3,
    arriving after, is an ordinary pod; once both placed members are bound, the histogram of
    the group's time from quorum to its last bind gets one sample."""
    count = sample("podium_pod_group_scheduling_duration_seconds_count")
    async with running() as h:
        h.commit(change("Added", pod_group("train", 2)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(3)))
        got = await h.batch()
        assert names(got) == ["w0", "w1", "w2"]
        w0, w1, w2 = (p.pod for p in got.pods)
        h.send(GroupPlaced(key=TRAIN, pods=[w0, w1]))
        h.send(Requeue(pod=w2, cycle=got.pods[2].cycle, why="unschedulable"))
        h.commit(change("Added", member("w3", "train")))
        plain = await h.batch(8)
        assert names(plain) == ["w3"] and plain.groups == []
        assert (await h.lookup("ml/w2")).queue == "unschedulable"
        await trio.sleep(2)
        for pod in (w0, w1):
            h.commit(change("Bound", member(pod.name, "train", node="n1"), old=pod.pod, node="n1"))
        await h.settle()
        assert sample("podium_pod_group_scheduling_duration_seconds_count") == count + 1
        assert sample("podium_pod_group_scheduling_duration_seconds_sum") >= 2.0


async def test_a_group_the_store_refused_is_held_again_with_its_ordinary_members(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The binder gives the placed members back (the store refused the group's bindings): the
    group holds its members again, w2 (requeued on its own meanwhile) included, as one unit."""
    async with running() as h:
        h.commit(change("Added", pod_group("train", 2)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(3)))
        got = await h.batch()
        w0, w1, w2 = (p.pod for p in got.pods)
        h.send(GroupPlaced(key=TRAIN, pods=[w0, w1]))
        h.send(Requeue(pod=w2, cycle=got.pods[0].cycle, why="unschedulable"))
        await h.settle()
        h.send(RequeueGroup(key=TRAIN, pods=[w0, w1], cycle=got.pods[0].cycle, why="error"))
        await h.settle()
        assert [(await h.lookup(f"ml/w{i}")).queue for i in range(3)] == ["unschedulable"] * 3
        h.commit(change("Added", make_node("n1").obj()))
        again = await h.batch()
        assert names(again) == ["w0", "w1", "w2"] and len(again.groups) == 1


async def test_a_basic_groups_pods_are_ordinary_pods(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pod_group("web", None)))
        h.commit(*(change("Added", member(f"p{i}", "web")) for i in range(3)))
        got = await h.batch(2)
        assert names(got) == ["p0", "p1"] and got.groups == []
        assert await h.lookup("ml/p2") == LookupReply(queue="active", attempts=0)


async def test_a_pop_answer_that_cannot_be_delivered_leaves_the_unit_active(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running() as h:
        h.commit(change("Added", pod_group("train", 2)))
        h.commit(*(change("Added", member(f"w{i}", "train")) for i in range(2)))
        reply_to, answer = trio.open_memory_channel[PoppedBatch | QueueIdle](0)
        h.send(Pop(reply=reply_to, max_pods=1))  # nobody receives: send_nowait would block
        await h.settle()
        assert await h.lookup("ml/w0") == LookupReply(queue="active", attempts=0)
        answer.close()
        got = await h.batch()
        assert names(got) == ["w0", "w1"] and [p.attempts for p in got.pods] == [1, 1]
