"""Gangs through the real actors: never partly bound, never deadlocked, and bound as placing the
groups one by one in queue order binds them (issue 24's property test).

Each example is a random cluster (nodes of random CPU and pod capacity, some NotReady or
cordoned, some holding bound pods, among them members of the gangs) and a random stream of
pending pods: plain pods, members of ``basic`` groups and members of gangs of random sizes,
minCounts (some above their size, so they never reach quorum) and priorities, put in a random
order; ``podium simulate`` (the daemon's actors on an in-memory store, MockClock, each batch's
binds committed before the next) schedules them.

The oracle is simpler than a second run of the actors, and exact. Every pending pod of an
example asks for the same CPU ``c`` and nothing else that can run short, so a node takes
``min(floor(free CPU / c), free pod slots)`` more of them whatever else lands where: any
placement of ``k`` pods uses ``k`` slots, and *which* pods end bound depends only on the order
groups and pods are decided in, never on the node each lands on (which the random tie-break
picks). Placing in queue order, then, is counting slots: by priority, and at equal priority
the plain pods in arrival order before the gangs (all arrive at once, and a tie goes to the
pod), the gangs by creation then key (put in key order, so that a clock tick inside the write
orders them the same); a plain pod binds if a slot is left; a gang that exists with minCount
pods binds ``min(pending members, slots)`` if that reaches ``minCount - bound``, else none;
a gang already holding minCount bound members is plain pods. Preemption is off here (with it,
a later high-priority pod or gang could evict, which counting slots does not model; the last
test checks what holds with it on). Nothing is retried in a
simulation (a failed attempt lands among the unschedulable pods and the run ends when nothing
is active), so each pod and gang is decided once, as the reference decides it.

So the test checks, for every example: the bound set equals the reference's; every gang's
members bound by the run number 0 or at least what it needed (never partly bound); and (part of
the same equality) of two gangs that fit only one at a time, the first in queue order is
placed whole, so they never both wait for room the other holds.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

import msgspec
from builders import decode, make_node, make_pod
from gangs import pod_group
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from long_runs import examples

from podium.actors.simulation.run import simulate
from podium.actors.supervisor.supervisor import load_plugin_set
from podium.protocol import objects as o
from podium.protocol.config import SchedulerConfig
from podium.protocol.quantity import parse_quantity

CONFIG = dataclasses.replace(SchedulerConfig(), disable_preemption=True)
PLUGINS = load_plugin_set(CONFIG)


def one_at_a_time(config: SchedulerConfig) -> SchedulerConfig:
    """``config`` with batches of one: each gang (decided whole) and each pod a batch of its
    own, where the default batch size lets gangs next in queue order share one."""
    podium = msgspec.structs.replace(config.podium, batch_max_pods=1)
    return dataclasses.replace(config, podium=podium)


SIZES = ("500m", "1", "2")
NODE_CPU = ("1", "2", "3", "4", "8")
BOUND_CPU = ("250m", "500m", "1", "2")
CLASSES = {"": 0, "mid": 10, "high": 1000}
PRIORITIES = ("", "", "mid", "high")


def milli(quantity: str) -> int:
    return int(parse_quantity(quantity) * 1000)


@dataclass
class Gang:
    name: str
    min_count: int | None  # None: basic
    priority: str  # the PriorityClass
    pending: list[str]
    bound: list[str]


@dataclass
class Case:
    objects: list[o.KubeObject]
    slots: int
    plain: list[tuple[int, int, str]]  # (priority, arrival, key)
    gangs: list[Gang]


def priority_classes() -> list[o.KubeObject]:
    return [
        decode(o.PriorityClass, {"kind": "PriorityClass", "metadata": {"name": c}, "value": v})
        for c, v in CLASSES.items()
        if c
    ]


def member_pod(name: str, group: str, cpu: str, priority: str, node: str = "") -> o.Pod:
    b = (
        make_pod(name)
        .ns("ml")
        .uid(f"uid-{name}")
        .req(cpu=cpu)
        .spec(schedulingGroup={"podGroupName": group}, priorityClassName=priority)
    )
    if node:
        b.node(node)
    pod: o.Pod = b.obj()
    return pod


def build(
    seed: int, n_nodes: int, n_gangs: int, n_plain: int, *, only_gangs_preempt: bool = False
) -> Case:
    """A random case and the slots its schedulable nodes have for its pods' size.

    ``only_gangs_preempt``: the plain pods and the pods of ``basic`` groups of priority 0, and
    every gang needing all its pending members (minCount its bound and pending members), so
    that no pod but a gang's, in its gang's attempt, can preempt (a member beyond minCount, or
    of a released group, would be an ordinary pod, whose preemption may evict anyone lower).
    """
    rng = random.Random(seed)
    size = rng.choice(SIZES)
    c = milli(size)
    nodes: list[o.KubeObject] = []
    bound_pods: list[o.Pod] = []
    free: dict[str, tuple[int, int]] = {}  # node -> (free millicpu, free pod slots), usable only
    usable: list[str] = []
    for i in range(n_nodes):
        name = f"n{i}"
        cpu, pods = rng.choice(NODE_CPU), rng.choice((2, 3, 5, 110))
        b = make_node(name).capacity(cpu=cpu, memory="64Gi", pods=pods)
        state = rng.random()
        b.condition("Ready", "False" if state < 0.1 else "True")
        if 0.1 <= state < 0.2:
            b.unschedulable()
        nodes.append(b.obj())
        free[name] = (milli(cpu), pods)
        if state >= 0.2:
            usable.append(name)

    def bind(pod_cpu: str) -> str:
        node = rng.choice(list(free))
        cpu, slots = free[node]
        free[node] = (cpu - milli(pod_cpu), slots - 1)
        return node

    for i in range(rng.randint(0, n_nodes)):
        cpu = rng.choice(BOUND_CPU)
        pod: o.Pod = (
            make_pod(f"old{i}").ns("ml").uid(f"uid-old{i}").req(cpu=cpu).node(bind(cpu)).obj()
        )
        bound_pods.append(pod)

    gangs: list[Gang] = []
    pending: list[o.Pod] = []
    for g in range(n_gangs):
        name = f"g{g}"
        size_ = rng.randint(1, 6)
        basic = rng.random() < 0.15
        min_count = None if basic else rng.randint(1, size_ + 1)
        priority = rng.choice(PRIORITIES)
        if only_gangs_preempt and basic:
            priority = ""
        gang = Gang(name, min_count, priority, [], [])
        for m in range(rng.choice((0, 0, 0, 1, 2))):
            pod = member_pod(f"{name}-b{m}", name, size, priority, bind(size))
            bound_pods.append(pod)
            gang.bound.append(f"ml/{pod.metadata.name}")
        if only_gangs_preempt and not basic:
            gang.min_count = len(gang.bound) + size_
        for m in range(size_):
            pod = member_pod(f"{name}-m{m}", name, size, priority)
            pending.append(pod)
            gang.pending.append(f"ml/{pod.metadata.name}")
        gangs.append(gang)
    plain_pods = [
        make_pod(f"p{i}")
        .ns("ml")
        .uid(f"uid-p{i}")
        .req(cpu=size)
        .spec(priorityClassName="" if only_gangs_preempt else rng.choice(PRIORITIES))
        .obj()
        for i in range(n_plain)
    ]
    stream: list[o.KubeObject] = [*pending, *plain_pods]
    rng.shuffle(stream)
    groups = [pod_group(g.name, g.min_count) for g in gangs]
    # The groups go in key order, each at a random place of the stream (before or after its
    # members), so a tick of the store's clock inside the write orders them as their keys do.
    places = sorted(rng.randint(0, len(stream)) for _ in groups)
    for offset, (at, group) in enumerate(zip(places, groups, strict=True)):
        stream.insert(at + offset, group)
    slots = sum(max(0, min(cpu // c, pods)) for name, (cpu, pods) in free.items() if name in usable)
    by_name = {g.name: g for g in gangs}
    plain: list[tuple[int, int, str]] = []
    arrival = 0
    for gang in gangs:
        gang.pending.clear()  # again, in the order they arrive: the unit decides them so
    for obj in stream:
        if not isinstance(obj, o.Pod):
            continue
        arrival += 1
        key = f"ml/{obj.metadata.name}"
        group = obj.spec.scheduling_group
        gang = by_name.get(group.pod_group_name) if group is not None else None
        if gang is not None:
            gang.pending.append(key)
        if gang is None or gang.min_count is None or len(gang.bound) >= gang.min_count:
            plain.append((CLASSES[obj.spec.priority_class_name], arrival, key))
    objects = [*priority_classes(), *nodes, *bound_pods, *stream]
    return Case(objects, slots, plain, gangs)


def reference(case: Case) -> set[str]:
    """The pods placing groups and pods one by one in queue order binds (module docstring)."""
    Item = tuple[int, int, str, int]  # (-priority, kind: 0 pod / 1 gang, tiebreak, index)
    items: list[Item] = [
        (-p, 0, f"{arrival:09d}", i) for i, (p, arrival, _) in enumerate(case.plain)
    ]
    for i, g in enumerate(case.gangs):
        # A gang short of minCount bound, with minCount pods: one unit.
        if g.min_count is not None and len(g.bound) < g.min_count <= len(g.pending) + len(g.bound):
            items.append((-CLASSES[g.priority], 1, g.name, i))
    slots = case.slots
    bound: set[str] = set()
    for _, kind, _, i in sorted(items):
        if kind == 0:
            if slots:
                bound.add(case.plain[i][2])
                slots -= 1
            continue
        g = case.gangs[i]
        assert g.min_count is not None
        take = min(len(g.pending), slots)
        if take >= g.min_count - len(g.bound):
            bound.update(g.pending[:take])
            slots -= take
    return bound


def run(case: Case, seed: int, config: SchedulerConfig = CONFIG) -> set[str]:
    outcomes = simulate(case.objects, config, PLUGINS, seed=seed)
    return {x.pod.key for x in outcomes if x.node is not None}


@settings(
    max_examples=examples(60, 300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_nodes=st.integers(1, 8),
    n_gangs=st.integers(0, 5),
    n_plain=st.integers(0, 8),
)
@example(seed=7, n_nodes=2, n_gangs=2, n_plain=0)
def test_gangs_are_all_or_nothing_and_placed_in_queue_order(
    seed: int, n_nodes: int, n_gangs: int, n_plain: int
) -> None:
    case = build(seed, n_nodes, n_gangs, n_plain)
    got = run(case, seed)
    for g in case.gangs:
        if g.min_count is None or len(g.bound) >= g.min_count:
            continue
        placed = [k for k in g.pending if k in got]
        needed = g.min_count - len(g.bound)
        assert not placed or len(placed) >= needed, f"gang {g.name} partly bound: {placed}"
    assert got == reference(case)
    # The gangs next in queue order share a batch (up to batchMaxPods, 32 here), each decided
    # as in a batch of its own: one gang a batch binds the same pods.
    assert run(case, seed, one_at_a_time(CONFIG)) == got


def test_a_gang_that_fails_between_two_that_fit_leaves_the_third_its_room() -> None:
    """One batch of three gangs on 6 CPU: a (2 x 1 CPU) fits; b (3 x 2 CPU) does not, with one
    member placed on the way; c (3 x 1 CPU) fits in what a left only once b's placement is
    taken back out. The same with one gang a batch."""
    nodes = [
        make_node(f"n{i}").capacity(cpu=cpu, pods=110).condition("Ready", "True").obj()
        for i, cpu in enumerate(("2", "4"))
    ]
    sizes = {"a": ("1", 2), "b": ("2", 3), "c": ("1", 3)}
    members = [
        member_pod(f"{g}-m{m}", g, cpu, "") for g, (cpu, size) in sizes.items() for m in range(size)
    ]
    groups = [pod_group(g, size) for g, (_, size) in sizes.items()]
    objects: list[o.KubeObject] = [*nodes, *groups, *members]
    want = {f"ml/{g}-m{m}" for g in "ac" for m in range(sizes[g][1])}
    assert run(Case(objects, 6, [], []), seed=1) == want
    assert run(Case(objects, 6, [], []), seed=1, config=one_at_a_time(CONFIG)) == want


def test_two_gangs_that_fit_only_one_at_a_time_place_the_first_whole() -> None:
    """The deadlock pod-by-pod scheduling falls into: two gangs of 3 on room for 4."""
    nodes = [
        make_node(f"n{i}").capacity(cpu="2", pods=110).condition("Ready", "True").obj()
        for i in range(2)
    ]
    members = [member_pod(f"{g}-m{m}", g, "1", "") for m in range(3) for g in ("b", "a")]
    objects: list[o.KubeObject] = [*nodes, pod_group("a", 3), pod_group("b", 3), *members]
    got = run(Case(objects, 4, [], []), seed=1)
    assert got == {"ml/a-m0", "ml/a-m1", "ml/a-m2"}


PREEMPTING = dataclasses.replace(SchedulerConfig(), disable_preemption=False)


@settings(
    max_examples=examples(30, 150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_nodes=st.integers(1, 6),
    n_gangs=st.integers(1, 5),
    n_plain=st.integers(0, 8),
)
@example(seed=6769324, n_nodes=2, n_gangs=2, n_plain=0)  # a gang of priority 1000 evicts one
def test_with_preemption_gangs_stay_whole_and_evict_only_lower_units(
    seed: int, n_nodes: int, n_gangs: int, n_plain: int
) -> None:
    """Preemption on, the plain pods (bound or pending) and the pods of basic groups of
    priority 0, the gangs of random priorities needing all their pending members: only gangs
    can preempt. No gang is ever partly bound; a gang with members on nodes is evicted whole or
    not at all (issue 24 (b)): every member bound at the start goes in the same preemption as
    the first, and only for a member of a higher priority than the gang's, never its own; every
    other victim is an ordinary pod of a lower priority (a basic group's pods are ordinary
    pods); and a gang of the highest priority that evicted ends placed (nothing could take the
    room it made: its members' nominations hold it against pods of its own priority and
    below)."""
    case = build(seed, n_nodes, n_gangs, n_plain, only_gangs_preempt=True)
    outcomes = simulate(case.objects, PREEMPTING, load_plugin_set(PREEMPTING), seed=seed)
    got = {x.pod.key for x in outcomes if x.node is not None}
    # Gangs sharing a batch decide as one gang a batch does: a gang whose preemption evicts
    # ends the batch when it is the first, and goes back with the rest when it is not.
    alone = one_at_a_time(PREEMPTING)
    again = simulate(case.objects, alone, load_plugin_set(alone), seed=seed)
    assert {x.pod.key for x in again if x.node is not None} == got
    assert sorted(v for x in again for v in x.preempted) == sorted(
        v for x in outcomes for v in x.preempted
    )
    # The members of gangs (a basic group's pods are ordinary pods: they may be victims).
    gang_of = {k: g for g in case.gangs if g.min_count is not None for k in (*g.pending, *g.bound)}
    hits: dict[str, list[str]] = {}  # gang -> the preemptors that evicted any of its members
    for x in outcomes:
        if not x.preempted:
            continue
        assert x.pod.key in gang_of and x.pod.priority > 0, x.pod.key
        for name in {gang_of[v].name for v in x.preempted if v in gang_of}:
            g = next(g for g in case.gangs if g.name == name)
            hits.setdefault(name, []).append(x.pod.key)
            assert x.pod.key not in g.pending, f"{x.pod.key} evicted its own gang"
            assert CLASSES[g.priority] < x.pod.priority, f"{x.pod.key} evicted gang {name}"
            assert set(g.bound) <= set(x.preempted), f"gang {name} partly evicted"
    assert all(len(by) == 1 for by in hits.values()), hits
    for g in case.gangs:
        if g.min_count is None or len(g.bound) >= g.min_count:
            continue
        placed = [k for k in g.pending if k in got]
        needed = g.min_count - len(g.bound)
        assert not placed or len(placed) >= needed, f"gang {g.name} partly bound: {placed}"
        evicting = any(x.preempted for x in outcomes if x.pod.key in g.pending)
        if evicting and g.priority == "high":
            assert len(placed) >= needed, f"gang {g.name} evicted and was not placed"
