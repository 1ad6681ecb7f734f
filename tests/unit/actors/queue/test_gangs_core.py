"""The queue core with pod groups under random operations: every pending pod is in exactly one
place, the counts the gauges read add up, and no group is ever handed out partly.

Random streams of what the actor feeds the core (members and plain pods added, updated and
deleted, groups put and deleted, pops, a gang's outcome: requeued as a unit, or placed with
its other members requeued one by one, the placed ones bound or given back by the binder;
moves, flushes, the clock) are replayed against :class:`SchedulingQueue`, and after every step
the invariants below are checked against what ``lookup`` says of each pod (and a waiting
member's message: its group never waits with minCount pods).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from builders import make_pod
from gangs import pod_group
from hypothesis import given, settings
from hypothesis import strategies as st
from long_runs import examples

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.queue.core import PoppedGang, QueuedPodInfo, SchedulingQueue

GROUPS = ("a", "b", "c")


def pod(name: str, group: str | None, priority: int, label: str = "") -> PodInfo:
    b = make_pod(name).ns("ml").uid(f"uid-{name}").priority(priority)
    if group is not None:
        b.spec(schedulingGroup={"podGroupName": group})
    if label:
        b.label("v", label)
    return b.info()


class World:
    """The queue, and what the test knows of each pod and group."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.q = SchedulingQueue()
        self.now = 0.0
        self.pending: dict[str, PodInfo] = {}
        self.groups: dict[str, int | None] = {}  # group -> minCount (None: basic)
        self.in_flight: list[tuple[list[QueuedPodInfo], PoppedGang | None]] = []
        self.placed: list[tuple[str, list[PodInfo], int]] = []  # (group, pods, cycle)
        self.names = 0

    # ---------------------------------------------------------------- steps

    def step(self) -> None:
        rng = self.rng
        action = rng.choice(
            [
                self.add,
                self.add,
                self.add,
                self.delete,
                self.update,
                self.put_group,
                self.put_group,
                self.delete_group,
                self.pop,
                self.pop,
                self.outcome,
                self.outcome,
                self.bind_or_refuse,
                self.bound_elsewhere,
                self.move,
                self.tick,
            ]
        )
        action()

    def add(self) -> None:
        self.names += 1
        group = self.rng.choice([*GROUPS, None])
        p = pod(f"p{self.names}", group, self.rng.choice((0, 0, 5)))
        self.pending[p.key] = p
        self.q.add(p, self.now)

    def delete(self) -> None:
        if self.pending:
            key = self.rng.choice(sorted(self.pending))
            p = self.pending.pop(key)
            self.q.delete(p, self.now)
            self.placed = [(g, [x for x in ps if x.key != key], c) for g, ps, c in self.placed]

    def update(self) -> None:
        if self.pending:
            key = self.rng.choice(sorted(self.pending))
            old = self.pending[key]
            group = old.pod.spec.scheduling_group
            new = pod(
                old.name,
                group.pod_group_name if group is not None else None,
                self.rng.choice((0, 5)),
                label=str(self.rng.randint(0, 9)),
            )
            self.pending[key] = new
            self.q.update(old, new, self.now)

    def put_group(self) -> None:
        name = self.rng.choice(GROUPS)
        min_count = self.rng.choice((None, 1, 2, 3, 4))
        self.groups[name] = min_count
        self.q.group_changed(f"ml/{name}", pod_group(name, min_count), self.now)

    def delete_group(self) -> None:
        if self.groups:
            name = self.rng.choice(sorted(self.groups))
            del self.groups[name]
            self.q.group_changed(f"ml/{name}", None, self.now)

    def pop(self) -> None:
        max_pods = self.rng.randint(1, 4)
        popped, gangs = self.q.pop_batch(self.now, max_pods)
        assert popped or self.q.active_count == 0, "activeQ holds what no pop hands out"
        if not popped:
            return
        if not gangs:
            for p in popped:
                assert not self.q.held(p.pod.key)
            self.in_flight.append((popped, None))
            return
        assert all(g.members for g in gangs), "a gang of no members"
        # Gangs only, each its unit's members, all of one group; the gangs after the first
        # only while the batch stays within max_pods.
        assert sum(g.members for g in gangs) == len(popped)
        assert len(gangs) == 1 or len(popped) <= max_pods
        start = 0
        for gang in gangs:
            members = popped[start : start + gang.members]
            start += gang.members
            groups = {p.pod.pod.spec.scheduling_group for p in members}
            assert len(groups) == 1 and None not in groups
            (group,) = groups
            assert group is not None and f"ml/{group.pod_group_name}" == gang.key
            self.in_flight.append((members, gang))

    def outcome(self) -> None:
        if not self.in_flight:
            return
        popped, gang = self.in_flight.pop(self.rng.randrange(len(self.in_flight)))
        pods = [self.pending.get(p.pod.key, p.pod) for p in popped]
        cycle = popped[0].cycle
        why = self.rng.choice(("unschedulable", "error", "conflict"))
        if gang is None:
            for p, queued in zip(pods, popped, strict=True):
                if self.rng.random() < 0.5:
                    self.q.requeue_conflict(p, self.now)
                else:
                    self.q.add_unschedulable_if_not_present(p, queued.cycle, self.now)
            return
        if self.rng.random() < 0.5:
            self.q.requeue_group(gang.key, pods, cycle, why, self.now)
            return
        placed = [p for p in pods if self.rng.random() < 0.7]
        self.q.group_placed(gang.key, placed, self.now)
        for p in pods:
            if p not in placed:
                self.q.add_unschedulable_if_not_present(p, cycle, self.now)
        self.placed.append((gang.key, placed, cycle))

    def bind_or_refuse(self) -> None:
        if not self.placed:
            return
        key, pods, cycle = self.placed.pop(self.rng.randrange(len(self.placed)))
        if self.rng.random() < 0.7:
            for p in pods:
                if p.key in self.pending:
                    del self.pending[p.key]
                    self.q.delete(p, self.now, bound=True)
        else:
            self.q.requeue_group(key, pods, cycle, "error", self.now)

    def bound_elsewhere(self) -> None:
        """A pending pod's Bound arrives though this queue never placed it (a deposed leader's
        commit, replayed to the new one), wherever the pod is."""
        if self.pending:
            key = self.rng.choice(sorted(self.pending))
            p = self.pending.pop(key)
            self.q.delete(p, self.now, bound=True)
            self.placed = [(g, [x for x in ps if x.key != key], c) for g, ps, c in self.placed]

    def move(self) -> None:
        self.q.move_all_to_active_queue(self.now)

    def tick(self) -> None:
        self.now += self.rng.choice((0.5, 1.0, 31.0, 301.0))
        self.q.flush_backoff_completed(self.now)
        self.q.flush_unschedulable_leftover(self.now)

    # ---------------------------------------------------------------- invariants

    def check(self) -> None:
        q = self.q
        where = Counter(q.lookup(key)[0] for key in self.pending)
        assert None not in where, "a pending pod the queue lost"
        assert len(q) == len(self.pending)
        assert where["active"] == q.active_count
        assert where["backoff"] == q.backoff_count
        assert where["unschedulable"] == q.unschedulable_count
        assert where["in_flight"] == q.in_flight_count
        waiting = {key for key in self.pending if q.lookup(key)[0] == "waiting"}
        for key in waiting:
            message = q.waiting_message(key)
            assert message.startswith("waiting for pod group "), message
            if message.endswith(" pods exist"):
                # Never waiting with its quorum: fewer pods than minCount.
                exist, _, rest = message.rpartition(": ")[2].partition(" of ")
                assert int(exist) < int(rest.split()[0]), message
        for key in self.pending:
            if q.lookup(key)[0] != "waiting":
                assert q.waiting_message(key) == ""


@settings(max_examples=examples(80, 300), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 120))
def test_random_operations_keep_every_pod_in_one_place(seed: int, steps: int) -> None:
    world = World(random.Random(seed))
    for _ in range(steps):
        world.step()
        world.check()


def test_a_unit_whose_last_held_member_is_bound_leaves_active_q() -> None:
    """Found by the leader-change test (tests/e2e/test_gang_failover.py): a new leader's queue
    holds a gang's unit in activeQ when the old leader's Bound events arrive; the last one
    forgets the unit's last member and releases the group (minCount bound). The unit must leave
    activeQ with it: an empty unit popped is a gang of no members that "fits" (0 needed), which
    the scheduler cannot assume (it divided the assume's round trip by no pods)."""
    q = SchedulingQueue()
    q.group_changed("ml/a", pod_group("a", 2), 0.0)
    members = [pod(f"w{i}", "a", 0) for i in range(2)]
    for m in members:
        q.add(m, 0.0)
    q.add(pod("p", None, 0), 1.0)
    assert q.active_count == 3
    for m in members:
        q.delete(m, 2.0, bound=True)
    assert q.active_count == 1
    popped, gangs = q.pop_batch(3.0, 32)
    assert ([p.pod.name for p in popped], gangs) == (["p"], [])
    assert q.pop_batch(3.0, 32) == ([], [])


def test_a_bind_in_a_batch_of_gangs_moves_only_the_gangs_that_failed_before_it() -> None:
    """The gang form of the pods' rule (tests/unit/actors/queue/test_core.py): gang e alone in
    a batch (cycle 1), then gangs a, w, c in one (cycles 2-4); e, a and c are placed, w fails
    (its member's required affinity matches their members). The bind of a (cycle 2), its Bound
    or its volumes' change, leaves w: one gang at a time it would have come before w's pop. The
    bind of e (an earlier batch) and of c (placed after w) move it, as one at a time they come
    after its requeue; so does a change no bind of ours made (cycle 0)."""
    q = SchedulingQueue()
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
            ]
        }
    }

    def member(name: str, group: str, *, node: str = "") -> PodInfo:
        b = make_pod(name).ns("ml").uid(f"uid-{name}").spec(schedulingGroup={"podGroupName": group})
        if group == "w":
            b.affinity(affinity)
        else:
            b.label("app", "db")
        if node:
            b.node(node)
        return b.info()

    q.group_changed("ml/e", pod_group("e", 1), 0.0)
    q.add(member("e0", "e"), 0.0)
    popped, gangs = q.pop_batch(0.0, 8)
    assert [(p.pod.name, p.cycle) for p in popped] == [("e0", 1)]
    q.group_placed("ml/e", [popped[0].pod], 0.0)
    for i, name in enumerate("awc"):
        q.group_changed(f"ml/{name}", pod_group(name, 1), 1.0 + i)
        q.add(member(f"{name}0", name), 1.0 + i)
    popped, gangs = q.pop_batch(4.0, 8)
    assert [(p.pod.name, p.cycle) for p in popped] == [("a0", 2), ("w0", 3), ("c0", 4)]
    assert [g.key for g in gangs] == ["ml/a", "ml/w", "ml/c"]
    a0, w0, c0 = (p.pod for p in popped)
    q.group_placed("ml/a", [a0], 4.0)
    q.group_placed("ml/c", [c0], 4.0)
    assert q.requeue_group("ml/w", [w0], 3, "unschedulable", 4.0) == ("unschedulable", 1)
    assert [q.placed_cycle(member(n, n[0])) for n in ("e0", "a0", "c0")] == [1, 2, 4]

    def bind(name: str) -> int:
        bound = member(name, name[0], node="n1")
        cycle = q.placed_cycle(bound)
        q.delete(bound, 4.5, bound=True)
        return q.assigned_pod_added(bound, 4.5, cycle)

    assert bind("a0") == 0
    assert q.move_all_to_active_queue(4.5, 2) == 0
    assert q.lookup("ml/w0")[0] == "unschedulable"
    assert bind("e0") == 1
    assert q.lookup("ml/w0")[0] == "backoff"  # the unit's backoff, from 4.0, ends at 5.0
    # Failed again, alone in its batch: now c's bind (placed in an earlier batch) moves it.
    q.flush_backoff_completed(10.0)
    again, _ = q.pop_batch(10.0, 8)
    assert [(p.pod.name, p.cycle) for p in again] == [("w0", 5)]
    assert q.requeue_group("ml/w", [again[0].pod], 5, "unschedulable", 10.0) == (
        "unschedulable",
        1,
    )
    assert q.move_all_to_active_queue(10.0, 4) == 1
    assert q.lookup("ml/w0")[0] == "backoff"


@pytest.mark.parametrize(
    ("cycle", "moved"),
    [(1, False), (2, True), (3, True), (0, True)],
    ids=["earlier-gang", "its-own-cycle", "later-gang", "no-bind"],
)
def test_a_bind_moves_a_failed_gang_unless_it_was_decided_before_that_gang(
    cycle: int, moved: bool
) -> None:
    """Gangs a, w, c in one batch (cycles 1-3), w failed: a move made by a's bind (cycle 1)
    leaves it; one made by c's (decided after w), or by a change no bind of ours made (0),
    moves it, as moves always did; the members held by the unit remember the batch too."""
    q = SchedulingQueue()
    for i, name in enumerate("awc"):
        q.group_changed(f"ml/{name}", pod_group(name, 1), float(i))
        q.add(pod(f"{name}0", name, 0), float(i))
    popped, _ = q.pop_batch(3.0, 8)
    assert [(p.pod.name, p.cycle) for p in popped] == [("a0", 1), ("w0", 2), ("c0", 3)]
    assert q.requeue_group("ml/w", [popped[1].pod], 2, "unschedulable", 3.0) == (
        "unschedulable",
        1,
    )
    assert q.move_all_to_active_queue(3.5, cycle) == int(moved)
    assert q.lookup("ml/w0")[0] == ("backoff" if moved else "unschedulable")
