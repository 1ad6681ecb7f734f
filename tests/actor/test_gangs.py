"""Gang scheduling through the daemon's own actors (issue 24, points 2, 3 and 5), under the
autojump clock: the runtime of ``podium serve`` on an in-memory store, the store's mailbox
recorded (and, for one test, a group's bindings refused).

A gang's members are decided in one batch, each placement folded in before the next; at least
``minCount - bound`` placed are assumed all or nothing and bound in one BindPods whose
bindings carry the group; fewer, and none is assumed or bound, each member told why.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
import trio
import trio.testing
from builders import decode, make_node, make_pdb, make_pod
from gang_cluster import RecordingStore, condition_message
from gangs import member, pod_group

from podium.actors.gateway.connection import Connection
from podium.actors.gateway.dispatch import Dispatcher
from podium.actors.gateway.watch import Hub, Watches
from podium.actors.mail.messages import (
    Attempted,
    BeginScheduling,
    CacheStats,
    CacheStatsReply,
    Handles,
    Lookup,
    LookupReply,
)
from podium.actors.runtime.mailbox import ask, send
from podium.actors.supervisor.supervisor import Runtime, load_plugin_set
from podium.protocol import objects as o
from podium.protocol.config import SchedulerConfig
from podium.protocol.metrics import REGISTRY
from podium.protocol.wire import (
    ErrorReply,
    Explain,
    ExplainGroupReply,
    ExplainReply,
    ObjectRef,
)
from podium.store.mail import (
    BindPods,
    Evict,
    Published,
    ReadObjects,
    ReadResult,
    StoreFailure,
    StoreMsg,
    WriteObjects,
    WriteResult,
)

GPU = "nvidia.com/gpu"


def gpu_node(name: str, gpus: int = 2) -> o.Node:
    node: o.Node = (
        make_node(name)
        .capacity_map({"cpu": "16", "memory": "64Gi", "pods": 110, GPU: gpus})
        .label("kubernetes.io/hostname", name)
        .obj()
    )
    return node


def gpu_worker(name: str, group: str = "train") -> o.Pod:
    pod: o.Pod = (
        make_pod(name)
        .ns("ml")
        .uid(f"uid-ml-{name}")
        .req_map({"cpu": "1", GPU: "1"})
        .spec(schedulingGroup={"podGroupName": group})
        .obj()
    )
    return pod


def cpu_node(name: str, cpu: str) -> o.Node:
    node: o.Node = (
        make_node(name)
        .capacity(cpu=cpu, memory="64Gi", pods=110)
        .label("kubernetes.io/hostname", name)
        .obj()
    )
    return node


@dataclass
class Cluster:
    handles: Handles
    reports: trio.MemoryReceiveChannel[Attempted]
    binds: list[BindPods]
    evicts: list[Evict] = field(default_factory=list)
    attempts: list[Attempted] = field(default_factory=list)

    async def put(self, *objects: o.KubeObject) -> None:
        written: WriteResult | StoreFailure = await ask(
            self.handles.store, lambda r: WriteObjects(puts=list(objects), reply=r)
        )
        assert isinstance(written, WriteResult), written

    async def delete(self, *pods: o.Pod) -> None:
        refs = [
            ObjectRef(kind="Pod", namespace=p.metadata.namespace, name=p.metadata.name)
            for p in pods
        ]
        written: WriteResult | StoreFailure = await ask(
            self.handles.store, lambda r: WriteObjects(deletes=refs, reply=r)
        )
        assert isinstance(written, WriteResult), written

    async def begin(self) -> None:
        await send(self.handles.scheduler, BeginScheduling())
        await self.settle()

    async def explain_group(
        self, name: str, namespace: str = "ml"
    ) -> ExplainGroupReply | ErrorReply:
        dispatcher = Dispatcher(
            self.handles, Hub(), cast(Watches, None), connections=lambda: 0, started=0.0
        )
        reply = await dispatcher.handle(
            cast(Connection, None),
            Explain(id=1, name=name, namespace=namespace, kind="PodGroup"),
        )
        assert isinstance(reply, ExplainGroupReply | ErrorReply), reply
        return reply

    async def explain(self, name: str, namespace: str = "ml") -> ExplainReply:
        dispatcher = Dispatcher(
            self.handles, Hub(), cast(Watches, None), connections=lambda: 0, started=0.0
        )
        reply = await dispatcher.handle(
            cast(Connection, None), Explain(id=1, name=name, namespace=namespace)
        )
        assert isinstance(reply, ExplainReply), reply
        return reply

    async def settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()
        while True:
            try:
                self.attempts.append(self.reports.receive_nowait())
            except trio.WouldBlock:
                return

    async def pods(self, namespace: str = "ml") -> dict[str, o.Pod]:
        read: ReadResult | StoreFailure = await ask(
            self.handles.store, lambda r: ReadObjects(kind="Pod", namespace=namespace, reply=r)
        )
        assert isinstance(read, ReadResult)
        return {p.metadata.name: p for p in read.items if isinstance(p, o.Pod)}

    async def placed(self, namespace: str = "ml") -> dict[str, str]:
        """Pod name -> node, for the bound pods."""
        return {
            n: p.spec.node_name for n, p in (await self.pods(namespace)).items() if p.spec.node_name
        }

    async def assumed(self) -> int:
        stats: CacheStatsReply = await ask(self.handles.cache, lambda r: CacheStats(reply=r))
        return stats.assumed

    async def lookup(self, key: str) -> LookupReply:
        return await ask(self.handles.queue, lambda r: Lookup(key=key, reply=r))


@asynccontextmanager
async def running(
    *objects: o.KubeObject, refuse: bool = False, begin: bool = True, **config: Any
) -> AsyncIterator[Cluster]:
    """The runtime on a recording in-memory store, ``objects`` put, scheduling begun (unless
    not ``begin``: :meth:`Cluster.begin` then starts it)."""
    cfg = dataclasses.replace(SchedulerConfig(), **config)
    binds: list[BindPods] = []
    evicts: list[Evict] = []

    def store(
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[trio.MemorySendChannel[Published]],
    ) -> RecordingStore:
        return RecordingStore(inbox, subscribers, refuse=refuse, binds=binds, evicts=evicts)

    reports_tx, reports_rx = trio.open_memory_channel[Attempted](math.inf)
    runtime = Runtime(cfg, load_plugin_set(cfg), store, reports=reports_tx, seed=1)
    with trio.fail_after(10_000):
        async with trio.open_nursery() as nursery:
            handles = await nursery.start(runtime.run)
            cluster = Cluster(handles, reports_rx, binds, evicts)
            if objects:
                await cluster.put(*objects)
            if begin:
                await cluster.begin()
            yield cluster
            runtime.stop()
            await handles.aclose()


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


# --------------------------------------------------------------------------- all or nothing


async def test_a_gang_of_8_with_room_for_6_waits_whole_then_binds_in_one_commit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The issue's "done when": a PodGroup of 8 GPU workers, minCount 8, on room for 6: none
    bound, none assumed, each member told why; two GPU nodes added: all 8 bound in one
    BindPods whose bindings carry the group, within a second."""
    unschedulable = sample("podium_pod_group_attempts_total", result="unschedulable")
    workers = [gpu_worker(f"w{i}") for i in range(8)]
    nodes = [gpu_node(f"gpu-{i}") for i in range(3)]
    async with running(*nodes, pod_group("train", 8), *workers) as c:
        assert await c.placed() == {}
        assert await c.assumed() == 0
        assert c.binds == []
        # Each member that did not fit says why preemption cannot help it, as a pod would.
        nothing_to_evict = (
            "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
        )
        want = (
            "pod group ml/train: 6 of 8 members fit, minCount 8; "
            f"ml/w6: 0/3 nodes are available: 3 Insufficient {GPU}. {nothing_to_evict}; "
            f"ml/w7: 0/3 nodes are available: 3 Insufficient {GPU}. {nothing_to_evict}"
        )
        pods = await c.pods()
        assert {condition_message(pods[f"w{i}"]) for i in range(8)} == {want}
        assert [(a.pod.name, a.status) for a in c.attempts] == [
            (f"w{i}", "unschedulable") for i in range(8)
        ]
        assert (await c.lookup("ml/w3")).queue == "unschedulable"
        assert sample("podium_pod_group_attempts_total", result="unschedulable") == (
            unschedulable + 1
        )

        await trio.sleep(60)
        added = trio.current_time()
        await c.put(gpu_node("gpu-3"), gpu_node("gpu-4"))
        await c.settle()
        placed = await c.placed()
        assert sorted(placed) == [f"w{i}" for i in range(8)]
        assert trio.current_time() - added <= 1.0
        [bind] = c.binds
        assert sorted(b.name for b in bind.bindings) == sorted(placed)
        assert {b.group for b in bind.bindings} == {"ml/train"}
        assert await c.assumed() == 0  # every assumed member was confirmed


async def test_anti_affinity_between_members_of_one_gang_is_respected(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Each member refuses a node holding another (required anti-affinity on the hostname):
    folded in one after another, three members take three nodes; a gang of four on those three
    nodes fits 3 of 4 and none is bound."""
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "ring"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    nodes = [cpu_node(f"n{i}", "8") for i in range(3)]
    three = [member(f"a{i}", "three", labels={"app": "ring"}, affinity=anti) for i in range(3)]
    async with running(*nodes, pod_group("three", 3), *three) as c:
        placed = await c.placed()
        assert sorted(placed) == ["a0", "a1", "a2"]
        assert sorted(placed.values()) == ["n0", "n1", "n2"]
    four = [
        member(f"b{i}", "four", ns="other", labels={"app": "ring"}, affinity=anti) for i in range(4)
    ]
    async with running(*nodes, pod_group("four", 4, ns="other"), *four) as c:
        assert await c.placed("other") == {}
        message = condition_message((await c.pods("other"))["b3"])
        assert message.startswith(
            "pod group other/four: 3 of 4 members fit, minCount 4; other/b3: "
        )
        assert "didn't match pod affinity/anti-affinity" in message


async def test_spreading_between_members_of_one_gang_is_respected(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """maxSkew 1 over two zones (DoNotSchedule, in a policy with EvenPodsSpread): each member
    counts the ones folded before it, so four members land two and two although zone a has
    the room, and the lower load, for all of them."""
    policy = tmp_path / "policy.json"
    policy.write_text(
        json.dumps(
            {
                "kind": "Policy",
                "apiVersion": "v1",
                "predicates": [{"name": "PodFitsResources"}, {"name": "EvenPodsSpread"}],
                "priorities": [{"name": "LeastRequestedPriority", "weight": 1}],
            }
        )
    )
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}},
        }
    ]
    nodes = [
        make_node(name).capacity(cpu=cpu, memory="64Gi", pods=110).label("zone", zone).obj()
        for name, cpu, zone in (("a0", "8", "a"), ("a1", "8", "a"), ("b0", "2", "b"))
    ]
    members = [
        make_pod(f"s{i}")
        .ns("ml")
        .uid(f"uid-ml-s{i}")
        .req(cpu="1")
        .label("app", "spread")
        .spec(schedulingGroup={"podGroupName": "spread"}, topologySpreadConstraints=spread)
        .obj()
        for i in range(4)
    ]
    async with running(*nodes, pod_group("spread", 4), *members, policy_file=str(policy)) as c:
        placed = await c.placed()
        zones = sorted(placed[f"s{i}"][0] for i in range(4))
        assert zones == ["a", "a", "b", "b"]


async def test_two_gangs_that_fit_one_at_a_time_place_one_and_the_other_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Pod by pod, two gangs of 4 on room for 4 can end 2 + 2, both stuck; here the first
    (by creation, then key) is placed whole, the second told why, and placed once the first
    is gone."""
    first = [member(f"a{i}", "a") for i in range(4)]
    second = [member(f"b{i}", "b") for i in range(4)]
    async with running(
        cpu_node("n0", "2"),
        cpu_node("n1", "2"),
        pod_group("a", 4),
        pod_group("b", 4),
        *second,
        *first,
    ) as c:
        assert sorted(await c.placed()) == ["a0", "a1", "a2", "a3"]
        message = condition_message((await c.pods())["b0"])
        assert message.startswith("pod group ml/b: 0 of 4 members fit, minCount 4; ml/b0: ")
        await c.delete(*first)
        await trio.sleep(1)  # b's backoff after its attempt at 0
        await c.settle()
        assert sorted(await c.placed()) == ["b0", "b1", "b2", "b3"]
        assert all(len({b.group for b in bind.bindings}) == 1 for bind in c.binds)


async def test_members_beyond_min_count_that_do_not_fit_are_requeued_as_pods(
    autojump_clock: trio.testing.MockClock,
) -> None:
    workers = [member(f"w{i}", "train") for i in range(5)]
    async with running(cpu_node("n0", "4"), pod_group("train", 3), *workers) as c:
        placed = await c.placed()
        assert sorted(placed) == ["w0", "w1", "w2", "w3"]
        [bind] = c.binds
        assert {b.group for b in bind.bindings} == {"ml/train"}
        assert (await c.lookup("ml/w4")).queue == "unschedulable"
        assert condition_message((await c.pods())["w4"]) == (
            "0/1 nodes are available: 1 Insufficient cpu. "
            "preemption: not tried for a member of pod group ml/train."
        )
        # Another member now: the group has minCount bound, so it is an ordinary pod.
        await c.delete(workers[0])
        await c.put(member("w5", "train"))
        await c.settle()
        assert "w5" in await c.placed()
        assert c.binds[-1].bindings[0].group == ""


async def test_a_basic_groups_pods_are_scheduled_as_ordinary_pods(
    autojump_clock: trio.testing.MockClock,
) -> None:
    pods = [member(f"p{i}", "web") for i in range(3)]
    async with running(cpu_node("n0", "2"), pod_group("web", None), *pods) as c:
        assert sorted(await c.placed()) == ["p0", "p1"]
        assert {b.group for bind in c.binds for b in bind.bindings} == {""}
        assert condition_message((await c.pods())["p2"]).startswith("0/1 nodes are available")


async def test_members_claims_see_the_volumes_earlier_members_took(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """One local volume, two members each claiming one (WaitForFirstConsumer): the first
    member's choice is folded into the objects, so the second finds no volume, and the gang
    is unschedulable, rather than both choosing the same volume and the cache refusing it."""
    local = decode(
        o.StorageClass,
        {
            "kind": "StorageClass",
            "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    )
    volume = decode(
        o.PersistentVolume,
        {
            "kind": "PersistentVolume",
            "metadata": {"name": "pv0"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
            },
        },
    )

    def claim(name: str) -> o.PersistentVolumeClaim:
        pvc: o.PersistentVolumeClaim = decode(
            o.PersistentVolumeClaim,
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "ml"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "local",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        return pvc

    def with_claim(name: str) -> o.Pod:
        pod = member(name, "data")
        volumes = [
            o.Volume(
                name="d",
                persistent_volume_claim=o.PersistentVolumeClaimVolumeSource(claim_name=f"c-{name}"),
            )
        ]
        return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, volumes=volumes))

    objects = [local, volume, claim("c-d0"), claim("c-d1"), cpu_node("n0", "4")]
    async with running(*objects, pod_group("data", 2), with_claim("d0"), with_claim("d1")) as c:
        assert await c.placed() == {}
        assert await c.assumed() == 0
        message = condition_message((await c.pods())["d1"])
        assert message.startswith("pod group ml/data: 1 of 2 members fit, minCount 2; ml/d1: ")
        assert "didn't find available persistent volumes to bind" in message


# --------------------------------------------------------------------------- refusals


async def test_the_store_refusing_a_groups_bindings_forgets_and_requeues_them_as_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    workers = [member(f"w{i}", "train") for i in range(3)]
    async with running(cpu_node("n0", "4"), pod_group("train", 3), *workers, refuse=True) as c:
        # The first BindPods was refused whole: the members were forgotten by the cache and the
        # group requeued once, as a unit among the unschedulable pods (a refused bind is
        # AddUnschedulableIfNotPresent, as for a pod).
        [first] = c.binds
        assert [b.group for b in first.bindings] == ["ml/train"] * 3
        assert await c.placed() == {}
        assert await c.assumed() == 0
        assert [(await c.lookup(f"ml/w{i}")).queue for i in range(3)] == ["unschedulable"] * 3
        assert [(await c.lookup(f"ml/w{i}")).attempts for i in range(3)] == [1, 1, 1]
        # The leftover flush retries it (unschedulable for over 5 minutes, at the 330 s tick).
        await trio.sleep(400)
        await c.settle()
        _, second = c.binds
        assert sorted(b.name for b in second.bindings) == ["w0", "w1", "w2"]
        assert sorted(await c.placed()) == ["w0", "w1", "w2"]
        assert await c.assumed() == 0


@pytest.mark.parametrize(
    ("disabled", "never", "tail"),
    [
        (
            False,
            False,
            " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        ),
        (True, False, ""),
        (False, True, " preemption: not eligible due to preemptionPolicy=Never."),
    ],
    ids=["preemption", "no-preemption", "preemption-policy-never"],
)
async def test_a_members_preemption_part_is_a_pods(
    autojump_clock: trio.testing.MockClock, disabled: bool, never: bool, tail: str
) -> None:
    """A member that did not fit is told what a pod's message tells it: why preemption cannot
    help (Kubernetes' ``preemption:`` part), nothing with preemption off, and that it may not
    preempt when its class says ``preemptionPolicy: Never``."""
    batch = decode(
        o.PriorityClass,
        {
            "kind": "PriorityClass",
            "metadata": {"name": "batch"},
            "value": 10,
            "preemptionPolicy": "Never" if never else "PreemptLowerPriority",
        },
    )
    workers = [
        make_pod(f"w{i}")
        .ns("ml")
        .uid(f"uid-ml-w{i}")
        .req(cpu="3")
        .spec(schedulingGroup={"podGroupName": "train"}, priorityClassName="batch")
        .obj()
        for i in range(2)
    ]
    objects = [batch, cpu_node("n0", "4"), pod_group("train", 2), *workers]
    async with running(*objects, disable_preemption=disabled) as c:
        message = condition_message((await c.pods())["w1"])
        assert message == (
            "pod group ml/train: 1 of 2 members fit, minCount 2; ml/w1: 0/1 nodes are "
            f"available: 1 Insufficient cpu.{tail}"
        )


# --------------------------------------------------------------------------- preemption


def priority_class(name: str, value: int) -> o.PriorityClass:
    pc: o.PriorityClass = decode(
        o.PriorityClass, {"kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    )
    return pc


CLASSES = (priority_class("low", 10), priority_class("high", 1000))


def low_pod(name: str, node: str, *, cpu: str = "1", **labels: str) -> o.Pod:
    """A bound pod of priority 10 in namespace batch, no group."""
    b = make_pod(name).ns("batch").uid(f"uid-batch-{name}").req(cpu=cpu).node(node)
    b.spec(priorityClassName="low")
    if labels:
        b.labels(labels)
    pod: o.Pod = b.obj()
    return pod


def high_worker(name: str, group: str = "train", *, cpu: str = "1") -> o.Pod:
    return member(name, group, cpu=cpu, priority_class="high")


def evicted_by(evict: Evict) -> dict[str, tuple[str, list[str]]]:
    """Member name -> (its node, the names of its victims), for one Evict and its group."""
    out = {evict.name: (evict.node, [v.name for v in evict.victims])}
    out.update({p.name: (p.node, [v.name for v in p.victims]) for p in evict.group})
    return out


async def test_a_gang_that_fits_only_by_evicting_four_lower_pods_evicts_them_and_binds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Four workers of priority 1000 on two full nodes of pods of priority 10: one Evict
    takes the four pods and nominates each member to its node; the group, backed off, is
    then decided whole and bound in one BindPods."""
    nodes = [cpu_node("n0", "2"), cpu_node("n1", "2")]
    lows = [low_pod(f"v{i}", f"n{i // 2}") for i in range(4)]
    workers = [high_worker(f"w{i}") for i in range(4)]
    async with running(*CLASSES, *nodes, *lows, pod_group("train", 4), *workers) as c:
        [evict] = c.evicts
        assert evicted_by(evict) == {
            "w0": ("n0", ["v1"]),
            "w1": ("n0", ["v0"]),
            "w2": ("n1", ["v3"]),
            "w3": ("n1", ["v2"]),
        }
        assert await c.pods("batch") == {}
        pods = await c.pods()
        assert {n: p.status.nominated_node_name for n, p in pods.items()} == {
            "w0": "n0",
            "w1": "n0",
            "w2": "n1",
            "w3": "n1",
        }
        assert sorted((a.pod.name, *a.preempted) for a in c.attempts) == [
            ("w0", "batch/v1"),
            ("w1", "batch/v0"),
            ("w2", "batch/v3"),
            ("w3", "batch/v2"),
        ]
        await trio.sleep(2)  # the group's backoff after its first attempt
        await c.settle()
        placed = await c.placed()
        assert sorted(placed.items()) == [("w0", "n0"), ("w1", "n0"), ("w2", "n1"), ("w3", "n1")]
        [bind] = c.binds
        assert {b.group for b in bind.bindings} == {"ml/train"}
        assert len(c.evicts) == 1


async def test_a_gang_never_evicts_a_gang_of_its_own_priority(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The only pods in the way are a bound gang's members, of the workers' own priority:
    nothing is evicted (issue 24 point 4: never members of a gang of higher or equal
    priority), and the members are told no victim was found."""
    held = [member(f"h{i}", "held", ns="ml", node=f"n{i}", priority_class="high") for i in range(2)]
    nodes = [cpu_node("n0", "1"), cpu_node("n1", "1")]
    workers = [high_worker(f"w{i}") for i in range(2)]
    objects = [*CLASSES, *nodes, pod_group("held", 2), *held, pod_group("train", 2), *workers]
    async with running(*objects) as c:
        assert c.evicts == []
        assert sorted(await c.placed()) == ["h0", "h1"]
        message = condition_message((await c.pods())["w0"])
        assert message == (
            "pod group ml/train: 0 of 2 members fit, minCount 2; "
            "ml/w0: 0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
            "available: 2 No preemption victims found for incoming pod.; "
            "ml/w1: 0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
            "available: 2 No preemption victims found for incoming pod."
        )


async def test_a_higher_priority_gang_evicts_a_lower_one_whole_in_one_transaction(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The only pods in the way are a bound gang of priority 10 on two full nodes: the first
    worker's victims are that whole gang (its member on the other node too), the second needs
    none; one Evict takes both members and nominates both workers, and the gang of priority
    1000 is then bound whole. No gang is ever partly evicted."""
    held = [member(f"h{i}", "held", node=f"n{i}", priority_class="low") for i in range(2)]
    nodes = [cpu_node("n0", "1"), cpu_node("n1", "1")]
    workers = [high_worker(f"w{i}") for i in range(2)]
    objects = [*CLASSES, *nodes, pod_group("held", 2), *held, pod_group("train", 2), *workers]
    async with running(*objects) as c:
        [evict] = c.evicts
        assert evicted_by(evict) == {"w0": ("n0", ["h0", "h1"]), "w1": ("n1", [])}
        # Each victim names the node it runs on: h1 is evicted from n1, not from w0's n0.
        assert [(v.name, v.node) for v in evict.victims] == [("h0", ""), ("h1", "n1")]
        pods = await c.pods()
        assert "h0" not in pods and "h1" not in pods
        await trio.sleep(2)
        await c.settle()
        assert sorted(await c.placed()) == ["w0", "w1"]


async def test_a_lone_pods_preemption_evicts_a_lower_gang_whole_or_not_at_all(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A pod of priority 1000 that fits nowhere, on two full nodes each holding a member of a
    gang of priority 10 (and, on n1, a pod of priority 10 of 1 cpu): evicting the lone pod on
    n1 costs one pod, evicting on n0 the whole gang, two: n1 is picked, the gang stays whole.
    With the lone pod gone first, the gang is the only way: both members go, in one Evict,
    and the pod is bound; never one member alone."""
    nodes = [cpu_node("n0", "1"), cpu_node("n1", "2")]
    held = [member(f"h{i}", "held", node=f"n{i}", priority_class="low") for i in range(2)]
    urgent = make_pod("urgent").ns("batch").uid("uid-urgent").req(cpu="1")
    urgent.spec(priorityClassName="high")
    objects = [*CLASSES, *nodes, pod_group("held", 2), *held, low_pod("l", "n1")]
    async with running(*objects, urgent.obj()) as c:
        [evict] = c.evicts
        assert (evict.name, evict.node, [v.name for v in evict.victims]) == ("urgent", "n1", ["l"])
        await trio.sleep(2)  # the pod's backoff after its attempt
        await c.settle()
        assert sorted(await c.placed()) == ["h0", "h1"]
        assert (await c.placed("batch")) == {"urgent": "n1"}
    one_each = [cpu_node("n0", "1"), cpu_node("n1", "1")]
    async with running(*CLASSES, *one_each, pod_group("held", 2), *held, urgent.obj()) as c:
        [evict] = c.evicts
        assert evict.group == []
        assert sorted((v.name, v.node) for v in evict.victims) == [("h0", ""), ("h1", "n1")]
        await trio.sleep(2)
        await c.settle()
        assert await c.placed() == {}
        assert (await c.placed("batch")) == {"urgent": "n0"}


async def test_a_gangs_victims_are_ordinary_pods_beside_a_lower_gang_kept_whole(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Each node holds a member of a low-priority gang and an ordinary low-priority pod: at
    one priority a pod group is more important than a lone pod (Kubernetes' victim importance
    hierarchy), so the ordinary pods are evicted and the gang's members stay, whole."""
    nodes = [cpu_node("n0", "2"), cpu_node("n1", "2")]
    held = [member(f"h{i}", "held", node=f"n{i}", priority_class="low") for i in range(2)]
    lows = [low_pod(f"p{i}", f"n{i}") for i in range(2)]
    workers = [high_worker(f"w{i}") for i in range(2)]
    objects = [*CLASSES, *nodes, pod_group("held", 2), *held, *lows]
    async with running(*objects, pod_group("train", 2), *workers) as c:
        [evict] = c.evicts
        assert sorted(v for _, vs in evicted_by(evict).values() for v in vs) == ["p0", "p1"]
        await trio.sleep(2)
        await c.settle()
        assert await c.pods("batch") == {}
        assert sorted(await c.placed()) == ["h0", "h1", "w0", "w1"]


async def test_a_disruption_budget_sends_a_gangs_preemption_to_the_next_best_node(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The pods on n0 are covered by a budget that allows no disruption: both members' victims
    are taken on n1 (no violation), as pod preemption picks the node with the fewest."""
    nodes = [cpu_node("n0", "2"), cpu_node("n1", "2")]
    guarded = [low_pod(f"g{i}", "n0", app="guarded") for i in range(2)]
    free = [low_pod(f"f{i}", "n1") for i in range(2)]
    budget = make_pdb("guard").ns("batch").match_labels(app="guarded").allowed(0).obj()
    workers = [high_worker(f"w{i}") for i in range(2)]
    objects = [*CLASSES, *nodes, *guarded, *free, budget, pod_group("train", 2), *workers]
    async with running(*objects) as c:
        [evict] = c.evicts
        assert evicted_by(evict) == {"w0": ("n1", ["f1"]), "w1": ("n1", ["f0"])}
        await trio.sleep(2)
        await c.settle()
        assert sorted(await c.pods("batch")) == ["g0", "g1"]
        assert sorted(await c.placed()) == ["w0", "w1"]


async def test_a_gang_that_eviction_would_help_only_in_part_evicts_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Evicting the three pods of priority 10 would make room for three of the four workers
    (n3 holds a pod of their own priority): no pod is evicted, and the message names the member
    that blocks the group first."""
    nodes = [cpu_node(f"n{i}", "2") for i in range(4)]
    lows = [low_pod(f"v{i}", f"n{i}", cpu="2") for i in range(3)]
    peer = make_pod("peer").ns("batch").uid("uid-peer").req(cpu="2").node("n3")
    peer.spec(priorityClassName="high")
    workers = [high_worker(f"w{i}", cpu="2") for i in range(4)]
    objects = [*CLASSES, *nodes, *lows, peer.obj(), pod_group("train", 4), *workers]
    async with running(*objects) as c:
        assert c.evicts == []
        assert sorted(await c.pods("batch")) == ["peer", "v0", "v1", "v2"]
        message = condition_message((await c.pods())["w0"])
        assert message.startswith(
            "pod group ml/train: 0 of 4 members fit, minCount 4; ml/w3: 0/4 nodes are "
            "available: 4 Insufficient cpu. preemption: 0/4 nodes are available: 4 No "
            "preemption victims found for incoming pod.; ml/w0: "
        )
        assert message.endswith(
            "and 1 more; preemption: evicting 3 pods would let 3 of the 4 members needed fit; "
            "nothing was evicted"
        )


# --------------------------------------------------------------------------- explain


async def test_explain_says_why_a_member_waits(autojump_clock: trio.testing.MockClock) -> None:
    """``podium explain`` of a member held before the queue: the queue's Lookup says why, and
    the scheduler is not asked (the pod is not for it to try yet)."""
    async with running(cpu_node("n0", "4"), pod_group("train", 3), member("w0", "train")) as c:
        dispatcher = Dispatcher(
            c.handles, Hub(), cast(Watches, None), connections=lambda: 0, started=0.0
        )
        reply = await dispatcher.handle(
            cast(Connection, None), Explain(id=1, name="w0", namespace="ml")
        )
        assert isinstance(reply, ExplainReply)
        assert (reply.placement.node, reply.placement.message) == (
            None,
            "waiting for pod group ml/train: 1 of 3 pods exist",
        )
        # The group's verdict too, as explain podgroup/ml/train gives it.
        group = await c.explain_group("train")
        assert isinstance(group, ExplainGroupReply) and reply.group == group.group
        assert reply.group is not None and reply.group.waiting
        assert reply.group.message == "waiting for pod group ml/train: 1 of 3 pods exist"


async def test_explain_of_a_member_gives_its_groups_verdict(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``podium explain ml/w0`` and ``ml/w7`` of 8 workers with room for 6: each is judged as
    the group's attempt judges it (w0 would go to a node, w7 fits nowhere, with its hints),
    and both say the group's verdict: not placed, the message every member was told, w6 and
    w7 blocking it; a pod of no group and a basic group's pod get no group."""
    workers = [gpu_worker(f"w{i}") for i in range(8)]
    nodes = [gpu_node(f"gpu-{i}") for i in range(3)]
    basic = member("b0", "web", cpu="100")
    async with running(*nodes, pod_group("train", 8), *workers, pod_group("web", None), basic) as c:
        told = condition_message((await c.pods())["w0"])
        asked = await c.explain_group("train")
        assert isinstance(asked, ExplainGroupReply)
        group = asked.group
        first, last = await c.explain("w0"), await c.explain("w7")
        for reply in (first, last):
            assert reply.group is not None
            # The same verdict (the nodes a tie sends members to may differ between dry runs).
            same = ("fit", "needed", "placed", "message", "blocking", "hints", "preempted")
            assert [getattr(reply.group, f) for f in same] == [getattr(group, f) for f in same]
            assert (reply.group.placed, reply.group.message) == (False, told)
            assert reply.group.blocking == ["ml/w6", "ml/w7"]
        assert first.group is not None and last.group is not None
        assert first.placement == first.group.members[0] and first.placement.node is not None
        assert first.hints == []
        assert last.placement == last.group.members[7] and last.placement.node is None
        assert last.placement.message is not None
        assert last.placement.message.startswith("0/3 nodes are available: 3 Insufficient")
        assert [(h.resource, h.missing) for h in last.hints] == [(GPU, "1")]
        assert (await c.explain("b0")).group is None
        assert await c.placed() == {} and c.evicts == [] and c.binds == []


async def test_explain_of_a_gang_that_does_not_fit_names_its_blockers_and_changes_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``podium explain podgroup/ml/train`` on 8 workers with room for 6: each member's verdict
    (six on nodes, two not), 6 of 8 fit with 8 needed, the two that block it with their
    hints, and the very message the members were told; nothing assumed, bound or evicted."""
    workers = [gpu_worker(f"w{i}") for i in range(8)]
    nodes = [gpu_node(f"gpu-{i}") for i in range(3)]
    async with running(*nodes, pod_group("train", 8), *workers) as c:
        told = condition_message((await c.pods())["w0"])
        reply = await c.explain_group("train")
        assert isinstance(reply, ExplainGroupReply)
        g = reply.group
        assert (g.policy, g.min_count, g.bound, g.needed, g.fit, g.placed, g.waiting) == (
            "gang",
            8,
            0,
            8,
            6,
            False,
            False,
        )
        assert g.message == told
        assert [(m.name, m.node is not None) for m in g.members] == [
            (f"w{i}", i < 6) for i in range(8)
        ]
        assert g.blocking == ["ml/w6", "ml/w7"]
        assert {k: [(h.resource, h.missing) for h in v] for k, v in g.hints.items()} == {
            "ml/w6": [(GPU, "1")],
            "ml/w7": [(GPU, "1")],
        }
        assert all(m.nodes for m in g.members)  # every examined node's verdict
        assert g.preempted == []
        assert await c.placed() == {}
        assert await c.assumed() == 0
        assert c.evicts == []
        assert c.binds == []


async def test_explain_of_a_gang_names_the_victims_its_preemption_would_evict(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Before scheduling begins, the dry run says which pods the gang's preemption would evict
    (and evicts none); once it begins, those are the pods evicted."""
    nodes = [cpu_node("n0", "2"), cpu_node("n1", "2")]
    lows = [low_pod(f"v{i}", f"n{i // 2}") for i in range(4)]
    workers = [high_worker(f"w{i}") for i in range(4)]
    objects = [*CLASSES, *nodes, *lows, pod_group("train", 4), *workers]
    async with running(*objects, begin=False) as c:
        reply = await c.explain_group("train")
        assert isinstance(reply, ExplainGroupReply)
        g = reply.group
        assert (g.fit, g.needed, g.placed) == (0, 4, False)
        assert sorted(g.preempted) == ["batch/v0", "batch/v1", "batch/v2", "batch/v3"]
        assert [(m.name, m.preempted) for m in g.members] == [
            ("w0", ["batch/v1"]),
            ("w1", ["batch/v0"]),
            ("w2", ["batch/v3"]),
            ("w3", ["batch/v2"]),
        ]
        assert c.evicts == []
        assert sorted(await c.pods("batch")) == ["v0", "v1", "v2", "v3"]
        await c.begin()
        [evict] = c.evicts
        assert sorted(v for _, vs in evicted_by(evict).values() for v in vs) == [
            "v0",
            "v1",
            "v2",
            "v3",
        ]


async def test_explain_of_a_waiting_group_a_placed_one_and_a_missing_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    waiting = [member("w0", "train")]
    placed = [member(f"p{i}", "web") for i in range(2)]
    half = member("h0", "half", node="n0")
    objects = [
        cpu_node("n0", "4"),
        pod_group("train", 3),
        *waiting,
        pod_group("web", 2),
        *placed,
        pod_group("half", 3),
        half,
    ]
    async with running(*objects) as c:
        reply = await c.explain_group("train")
        assert isinstance(reply, ExplainGroupReply)
        assert (reply.group.waiting, reply.group.placed, reply.group.message) == (
            True,
            False,
            "waiting for pod group ml/train: 1 of 3 pods exist",
        )
        assert [(m.name, m.message) for m in reply.group.members] == [
            ("w0", "waiting for pod group ml/train: 1 of 3 pods exist")
        ]
        bound = await c.explain_group("web")
        assert isinstance(bound, ExplainGroupReply)
        assert (bound.group.bound, bound.group.needed, bound.group.placed) == (2, 0, True)
        assert [(m.name, m.bound) for m in bound.group.members] == [("p0", True), ("p1", True)]
        short = await c.explain_group("half")
        assert isinstance(short, ExplainGroupReply)
        assert (short.group.waiting, short.group.bound, short.group.message) == (
            True,
            1,
            "waiting for pod group ml/half: 1 of 3 pods exist",
        )
        missing = await c.explain_group("nope")
        assert isinstance(missing, ErrorReply)
        assert missing.code == "not_found"
