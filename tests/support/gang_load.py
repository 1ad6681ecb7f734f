"""A client load of pod groups against real ``podium serve`` processes, and the checks of what
the store then holds, for the daemon-level gang tests (tests/e2e/test_gang_daemon_crash.py:
``kill -9`` of the daemon; tests/e2e/test_gang_failover.py: a leader change).

The load: writers create gangs one after another in the three forms (Kubernetes'
``scheduling.k8s.io/v1alpha2`` PodGroup, scheduler-plugins' ``scheduling.x-k8s.io`` and
Volcano's ``scheduling.volcano.sh``; now and then a ``basic`` group), of 2 to 16 members, some
with members above minCount, some with a member no node can hold (the gang never fits), some
with a lone pod beside them. A gang is written in one put (its group and every member), or in
two: the group and some members, then the rest (its quorum comes with the second put), or the
members first and the group last (they wait for a group that does not exist yet). A writer
keeps :attr:`GangLoad.live` gangs and deletes its oldest, whole (one atomic delete), beyond
that, so the cluster keeps emptying and filling and the scheduler keeps placing gangs. A
watcher follows the log and records every ``Bound`` the daemon reported.

The ledger keeps what the clients were told: every acknowledged put (key -> uid), every
acknowledged delete, the writes whose answer never came (``unknown``: they may have landed or
not), and the pods reported bound (key -> uid, node).

:func:`check_gangs` then checks the state a daemon serves:

1. **No gang partly bound.** For each group with a gang policy (minCount, or minMember), its
   bound members are none or at least minCount: a gang's members are placed together only when
   at least minCount fit, and bound in one store transaction, so no commit (and no ``kill -9``
   between commits) leaves fewer. Members above minCount that did not fit with the rest are
   retried as ordinary pods and bound one by one later: that only adds to a count already at
   minCount, so "none or at least minCount" is the invariant, not "none or all". The members
   of a group that does not exist (written before their group, or left by a cut write) are
   not bound at all. ``basic`` groups are scheduled pod by pod and are not checked.
2. **Nothing lost.** Every acknowledged put is there with its uid, every acknowledged delete
   absent (a write whose answer never came may be either).
3. **No report taken back.** Every pod the daemon reported ``Bound`` (and that was not deleted
   since) is still bound, to the node it was reported on.
4. **Nothing bound twice.** One ``Bound`` event per pod uid in the whole log (the watcher's
   record), and no node holds more CPU than it has.
"""

from __future__ import annotations

import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio
from builders import decode, make_node, make_pod

from podium.protocol import objects as o
from podium.protocol.client import Client, ClientConnectionError, RemoteError, connect
from podium.protocol.gangs import min_count, pod_group_key
from podium.protocol.wire import Event, ObjectRef
from podium.store.etcd.durability import EtcdDurability
from podium.store.location import EtcdLocation, SqliteLocation, parse_store_url
from podium.store.sqlite import SqliteDurability

__all__ = [
    "NODE_CPU",
    "UNFIT_CPU",
    "Gang",
    "GangLedger",
    "GangLoad",
    "Verdict",
    "check_gangs",
    "follow",
    "key_of",
    "make_gang",
    "nodes",
    "read_state",
    "recover",
    "resolve_unknown",
    "split",
    "write_gangs",
]

NODE_CPU = 8
UNFIT_CPU = "1000"
"""What the member of a gang that never fits asks: more than any node of the tests has."""
FORMS = ("k8s", "coscheduling", "volcano")
RETRIED = ("not_leader", "unavailable")
"""What a writer meets while a daemon restarts or no replica leads."""


def key_of(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def nodes(count: int, cpu: int = NODE_CPU) -> list[o.KubeObject]:
    return [
        make_node(f"n{i}").capacity(cpu=str(cpu), memory="64Gi", pods=110).obj()
        for i in range(count)
    ]


@dataclass
class Gang:
    """One gang as a writer wrote it: its group's key and every object's key, in its puts."""

    group: str  # "ns/name"
    min_count: int | None  # None: a basic group
    parts: list[list[o.KubeObject]]
    fits: bool  # False: a member asks more than a node has

    @property
    def keys(self) -> list[str]:
        return [
            key_of(type(obj).__name__, obj.metadata.namespace, obj.metadata.name)
            for part in self.parts
            for obj in part
        ]


def _group(form: str, ns: str, name: str, count: int | None) -> o.PodGroup:
    if form == "k8s":
        policy: dict[str, Any] = {"basic": {}} if count is None else {"gang": {"minCount": count}}
        api, spec = "scheduling.k8s.io/v1alpha2", {"schedulingPolicy": policy}
    elif form == "coscheduling":
        api, spec = "scheduling.x-k8s.io/v1alpha1", {"minMember": count}
    else:
        api, spec = "scheduling.volcano.sh/v1beta1", {"minMember": count}
    group: o.PodGroup = decode(
        o.PodGroup,
        {
            "kind": "PodGroup",
            "apiVersion": api,
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
        },
    )
    return group


def _member(form: str, ns: str, name: str, group: str, cpu: str) -> o.Pod:
    b = make_pod(name).ns(ns).req(cpu=cpu)
    if form == "k8s":
        b.spec(schedulingGroup={"podGroupName": group})
    elif form == "coscheduling":
        b.label("scheduling.x-k8s.io/pod-group", group)
    else:
        b.annotation("scheduling.k8s.io/group-name", group)
    pod: o.Pod = b.obj()
    return pod


def make_gang(
    rng: random.Random, ns: str, name: str, *, unfit: float = 0.1, basic: float = 0.08
) -> Gang:
    """A random gang ``ns/name``: 2 to 16 members (minCount of them, and up to 2 above it with
    a chance), ``unfit`` of the time with a member no node holds, ``basic`` of the time a
    ``basic`` group (Kubernetes' form); its objects in one, two or (members first) two puts."""
    form = rng.choice(FORMS)
    size = rng.randint(2, 16)
    extra = rng.choice((0, 0, 0, 1, 2)) if size > 2 else 0
    count: int | None = size - extra
    if rng.random() < basic:
        form, count = "k8s", None
    cpu = rng.choice(("250m", "500m", "1"))
    members = [_member(form, ns, f"{name}-{i}", name, cpu) for i in range(size)]
    fits = rng.random() >= unfit
    if not fits:
        members[rng.randrange(size)] = _member(form, ns, f"{name}-{size}", name, UNFIT_CPU)
    group = _group(form, ns, name, count)
    lone: list[o.KubeObject] = []
    if rng.random() < 0.3:
        lone = [make_pod(f"{name}-lone").ns(ns).req(cpu="100m").obj()]
    split = rng.random()
    cut = rng.randint(1, size - 1)
    parts: list[list[o.KubeObject]]
    if split < 0.6:
        parts = [[group, *members, *lone]]
    elif split < 0.85:
        parts = [[group, *members[:cut]], [*members[cut:], *lone]]
    else:
        parts = [[*members[:cut]], [*members[cut:], group, *lone]]
    return Gang(group=f"{ns}/{name}", min_count=count, parts=parts, fits=fits)


@dataclass
class GangLedger:
    """What the clients were told, over every daemon (or leader) the run had."""

    acked: dict[str, str] = field(default_factory=dict)  # key -> uid of acknowledged puts
    deleted: set[str] = field(default_factory=set)  # keys of acknowledged deletes
    unknown_puts: set[str] = field(default_factory=set)  # put, never answered
    unknown_deletes: set[str] = field(default_factory=set)  # deleted, never answered
    reported: dict[str, tuple[str, str]] = field(default_factory=dict)  # pod key -> (uid, node)
    bound_events: Counter[str] = field(default_factory=Counter)  # pod uid -> Bound events
    ever_bound: dict[str, int] = field(default_factory=dict)  # pod key -> its Bound's revision
    gang_of: dict[str, str] = field(default_factory=dict)  # pod key -> its gang's group key
    last_revision: int = 0
    last_bound: float = 0.0  # time.monotonic() of the last Bound the watcher received
    gangs: int = 0
    gang_deletes: int = 0
    refused: Counter[str] = field(default_factory=Counter)


@dataclass
class GangLoad:
    """The writers' shared state: the ledger, the gangs alive (oldest first), the gangs that
    cannot be deleted yet (a put of theirs was never answered) and those a test keeps."""

    ledger: GangLedger
    rng: random.Random
    live: int = 8
    namespaces: tuple[str, ...] = ("ml", "hpc")
    alive: list[Gang] = field(default_factory=list)
    held: list[Gang] = field(default_factory=list)
    next_id: int = 0
    unfit: float = 0.1
    keep: set[str] = field(default_factory=set)  # groups not to delete for now

    def new_gang(self, prefix: str) -> Gang:
        self.next_id += 1
        ns = self.rng.choice(self.namespaces)
        gang = make_gang(self.rng, ns, f"{prefix}{self.next_id}", unfit=self.unfit)
        for key in gang.keys:
            if key.startswith("Pod/"):
                self.ledger.gang_of[key] = gang.group
        return gang

    def release(self) -> None:
        """After :func:`resolve_unknown`: the held gangs may be deleted again."""
        self.alive[:0] = self.held
        self.held.clear()


async def _put(client: Client, ledger: GangLedger, objects: list[o.KubeObject]) -> None:
    keys = [key_of(type(x).__name__, x.metadata.namespace, x.metadata.name) for x in objects]
    ledger.unknown_puts.update(keys)
    # Bounded: a replica cut off (or paused) may accept and never answer.
    with trio.fail_after(5):
        reply = await client.put(objects)
    ledger.unknown_puts.difference_update(keys)
    for key, obj in zip(keys, reply.objects, strict=True):
        ledger.acked[key] = obj.uid


async def _delete(client: Client, ledger: GangLedger, keys: list[str]) -> None:
    refs = []
    for key in keys:
        kind, ns, name = key.split("/")
        refs.append(ObjectRef(kind=kind, name=name, namespace=ns))
    ledger.unknown_deletes.update(keys)
    with trio.fail_after(5):
        await client.delete(refs)
    ledger.unknown_deletes.difference_update(keys)
    ledger.deleted.update(keys)
    for key in keys:
        ledger.acked.pop(key, None)


async def write_gangs(
    addresses: Callable[[], str],
    load: GangLoad,
    prefix: str,
    stop: trio.Event,
    *,
    pause: float = 0.02,
) -> None:
    """Write gangs (and delete the oldest beyond ``load.live``) until ``stop``, through
    whichever daemon answers, reconnecting on a lost connection; a write that was not answered
    is left unknown and never repeated."""
    ledger = load.ledger
    while not stop.is_set():
        try:
            async with connect(addresses()) as client:
                while not stop.is_set():
                    oldest = next(
                        (i for i, g in enumerate(load.alive) if g.group not in load.keep), None
                    )
                    if len(load.alive) > load.live and oldest is not None:
                        gang = load.alive.pop(oldest)
                        if any(k in ledger.unknown_puts for k in gang.keys):
                            load.held.append(gang)  # its objects are not known: kept whole
                            continue
                        present = [k for k in gang.keys if k in ledger.acked]
                        if present:
                            await _delete(client, ledger, present)
                            ledger.gang_deletes += 1
                        continue
                    gang = load.new_gang(prefix)
                    load.alive.append(gang)
                    ledger.gangs += 1
                    for part in gang.parts:
                        await _put(client, ledger, part)
                        await trio.sleep(load.rng.uniform(0, pause))
        except RemoteError as exc:
            if exc.code not in RETRIED:
                raise
            ledger.refused[exc.code] += 1
            await trio.sleep(0.05)
        except (ClientConnectionError, trio.TooSlowError) as exc:
            ledger.refused[type(exc).__name__] += 1
            await trio.sleep(0.05)


def _pod_key(ev: Event) -> str:
    return key_of("Pod", ev.namespace, ev.name)


def record(ledger: GangLedger, ev: Event) -> bool:
    """Take one event of the log in (each revision once, in order); whether it was a Bound."""
    assert ev.revision == ledger.last_revision + 1, (
        f"watch went from revision {ledger.last_revision} to {ev.revision}"
    )
    ledger.last_revision = ev.revision
    key = key_of(ev.kind, ev.namespace, ev.name)
    if ev.type == "Bound":
        assert isinstance(ev.object, o.Pod)
        ledger.reported[key] = (ev.object.metadata.uid, ev.node)
        ledger.bound_events[ev.object.metadata.uid] += 1
        ledger.ever_bound[key] = ev.revision
        ledger.last_bound = time.monotonic()
        return True
    if ev.type == "Deleted":
        ledger.reported.pop(key, None)
    return False


async def follow(
    address: str,
    ledger: GangLedger,
    *,
    until: int | None = None,
    on_bound: Callable[[Event], None] | None = None,
) -> None:
    """Follow the log from the last revision recorded, to ``until`` (or until cancelled or the
    connection is lost); call ``on_bound`` with each Bound of a gang's member."""
    if until is not None and ledger.last_revision >= until:
        return
    async with connect(address) as client, client.watch(ledger.last_revision) as events:
        async for ev in events:
            bound = record(ledger, ev)
            if bound and on_bound is not None and ledger.gang_of.get(_pod_key(ev)):
                on_bound(ev)
            if until is not None and ev.revision >= until:
                break


async def read_state(address: str) -> tuple[int, list[o.Pod], list[o.PodGroup], list[o.Node]]:
    """The revision and the pods, groups and nodes ``address`` serves. Only the daemon writes
    while it is called (bindings and conditions): the three lists agree on every group."""
    async with connect(address) as client:
        listed = await client.get("Pod")
        groups = [g for g in (await client.get("PodGroup")).items if isinstance(g, o.PodGroup)]
        nodes_ = [n for n in (await client.get("Node")).items if isinstance(n, o.Node)]
    pods = [p for p in listed.items if isinstance(p, o.Pod)]
    return listed.revision, pods, groups, nodes_


async def recover(url: str) -> tuple[int, list[o.KubeObject]]:
    """Open the store at ``url`` as a restart does (etcd replays or drops what a cut commit
    left) while no daemon runs, and close it: the revision and objects a restart finds."""
    location = parse_store_url(url)
    if isinstance(location, SqliteLocation):
        durability: SqliteDurability | EtcdDurability = SqliteDurability(location.path)
    else:
        assert isinstance(location, EtcdLocation)
        durability = EtcdDurability(location)
    try:
        recovery = await durability.load()
    finally:
        await durability.close()
    return (0, []) if recovery is None else (recovery.revision, recovery.objects)


def split(objects: list[o.KubeObject]) -> tuple[list[o.Pod], list[o.PodGroup], list[o.Node]]:
    pods = [x for x in objects if isinstance(x, o.Pod)]
    groups = [x for x in objects if isinstance(x, o.PodGroup)]
    return pods, groups, [x for x in objects if isinstance(x, o.Node)]


def resolve_unknown(ledger: GangLedger, objects: list[o.KubeObject]) -> tuple[int, int]:
    """Settle the writes whose answer never came, from what the store now holds (no writer
    runs): a put landed or not, a delete landed or not. After it, the ledger is exact.
    Returns (objects written or deleted unanswered, of which landed)."""
    asked = len(ledger.unknown_puts) + len(ledger.unknown_deletes)
    present = {
        key_of(type(x).__name__, x.metadata.namespace, x.metadata.name): x.metadata.uid
        for x in objects
    }
    landed = 0
    for key in ledger.unknown_puts:
        if key in present:
            ledger.acked[key] = present[key]
            landed += 1
    for key in ledger.unknown_deletes:
        if key not in present:
            ledger.deleted.add(key)
            ledger.acked.pop(key, None)
            landed += 1
    ledger.unknown_puts.clear()
    ledger.unknown_deletes.clear()
    return asked, landed


@dataclass
class Verdict:
    """What one check saw: gangs bound whole (at or above minCount), waiting, and pods."""

    bound_gangs: int = 0
    waiting_gangs: int = 0
    above_min: int = 0  # gangs bound with more than minCount
    pods: int = 0
    bound_pods: int = 0


def check_gangs(
    ledger: GangLedger,
    pods: list[o.Pod],
    groups: list[o.PodGroup],
    nodes_: list[o.Node],
) -> Verdict:
    """The checks of the module docstring on one state (the watcher caught up with it)."""
    verdict = Verdict(pods=len(pods), bound_pods=sum(1 for p in pods if p.spec.node_name))
    members: dict[str, list[o.Pod]] = defaultdict(list)
    for pod in pods:
        group = pod_group_key(pod)
        if group is not None:
            members[group].append(pod)
    by_key = {f"{g.metadata.namespace}/{g.metadata.name}": g for g in groups}
    # 1. No gang partly bound.
    for key, mine in members.items():
        bound = sorted(p.metadata.name for p in mine if p.spec.node_name)
        group = by_key.get(key)
        if group is None:
            assert not bound, f"pods of {key}, a group that does not exist, are bound: {bound}"
            continue
        need = min_count(group)
        if need is None:
            continue
        assert not bound or len(bound) >= need, (
            f"gang {key} is partly bound: {len(bound)} of {len(mine)} members, minCount {need}: "
            f"{bound}"
        )
        if bound:
            verdict.bound_gangs += 1
            verdict.above_min += len(bound) > need
        else:
            verdict.waiting_gangs += 1
    # 2. Nothing lost.
    present = {key_of("Pod", p.metadata.namespace, p.metadata.name): p for p in pods}
    uids = {k: p.metadata.uid for k, p in present.items()}
    uids |= {
        key_of("PodGroup", g.metadata.namespace, g.metadata.name): g.metadata.uid for g in groups
    }
    uids |= {key_of("Node", "", n.metadata.name): n.metadata.uid for n in nodes_}
    for key, uid in ledger.acked.items():
        if key in ledger.unknown_deletes:
            continue
        assert uids.get(key) == uid, (
            f"{key}: acknowledged put lost (uid {uid}, now {uids.get(key)})"
        )
    for key in ledger.deleted:
        assert key not in uids, f"{key}: acknowledged delete, yet present"
    # 3. Every reported binding stands (but for a pod deleted since).
    for key, (uid, node) in ledger.reported.items():
        if key in ledger.deleted or key in ledger.unknown_deletes:
            continue
        pod = present.get(key)
        assert pod is not None and pod.metadata.uid == uid, f"{key}: reported Bound, now gone"
        assert pod.spec.node_name == node, (
            f"{key}: reported Bound to {node}, now on {pod.spec.node_name!r}"
        )
    # 4. Nothing bound twice, no node over its CPU.
    twice = [uid for uid, n in ledger.bound_events.items() if n > 1]
    assert not twice, f"pods bound twice: {twice[:5]}"
    used: Counter[str] = Counter()
    for pod in pods:
        if pod.spec.node_name:
            for c in pod.spec.containers:
                cpu = c.resources.requests.get("cpu")
                used[pod.spec.node_name] += cpu.milli_value() if cpu is not None else 0
    for node in nodes_:
        capacity = (node.status.allocatable or node.status.capacity)["cpu"].milli_value()
        assert used[node.metadata.name] <= capacity, f"{node.metadata.name} over-committed"
    return verdict
