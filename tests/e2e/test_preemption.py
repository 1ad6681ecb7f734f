"""Preemption through a real daemon: a high-priority pod evicts lower-priority ones, the
evictions are durable (they survive a restart), and watchers see them as Preempted."""

from __future__ import annotations

from typing import Any

import trio
from builders import decode, make_node, make_pod
from daemon import StartDaemon
from gangs import pod_group

from podium.protocol import objects as o
from podium.protocol.client import connect
from podium.protocol.wire import Event


def _class(name: str, value: int) -> o.PriorityClass:
    doc: dict[str, Any] = {"kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    return decode(o.PriorityClass, doc)


async def _run(address: str) -> list[Event]:
    seen: list[Event] = []
    with trio.fail_after(30):
        async with connect(address) as client, client.watch(kinds=["Pod"]) as events:
            await client.put(
                [
                    _class("low", 10),
                    _class("high", 1000),
                    make_node("n1").capacity(cpu="2", memory="4Gi", pods=10).obj(),
                    make_pod("low-a").req(cpu="1").spec(priorityClassName="low").obj(),
                    make_pod("low-b").req(cpu="1").spec(priorityClassName="low").obj(),
                ]
            )
            bound = 0
            async for ev in events:
                seen.append(ev)
                bound += ev.type == "Bound"
                if bound == 2:
                    break
            urgent = make_pod("urgent").req(cpu="1500m").spec(priorityClassName="high").obj()
            # Asked first, the daemon says whom it would evict (nothing is evicted yet).
            what_if = await client.simulate(urgent)
            assert what_if.placement.node is None
            assert sorted(what_if.placement.preempted) == ["default/low-a", "default/low-b"]
            await client.put([urgent])
            async for ev in events:
                seen.append(ev)
                if ev.type == "Bound" and ev.name == "urgent":
                    return seen
    raise AssertionError("the watch ended")


async def _pods(address: str) -> dict[str, o.Pod]:
    async with connect(address) as client:
        got = await client.get("Pod", namespace="default")
        return {p.metadata.name: p for p in got.items if isinstance(p, o.Pod)}


def test_a_high_priority_pod_evicts_lower_ones_durably(start_daemon: StartDaemon) -> None:
    first = start_daemon("--metrics", "none")
    seen = trio.run(_run, first.address)
    before = trio.run(_pods, first.address)
    first.kill()
    preempted = sorted(ev.name for ev in seen if ev.type == "Preempted")
    # 1.5 CPU needs both 1-CPU pods gone from the 2-CPU node.
    assert preempted == ["low-a", "low-b"]
    assert all("preempted by default/urgent" in ev.message for ev in seen if ev.type == "Preempted")
    assert set(before) == {"urgent"} and before["urgent"].spec.node_name == "n1"
    after = trio.run(_pods, start_daemon("--metrics", "none").address)
    assert set(after) == {"urgent"}
    assert after["urgent"].spec.node_name == "n1"
    assert after["urgent"].status.nominated_node_name == "n1"


async def _gang_run(address: str) -> list[Event]:
    """Four low pods fill two nodes; a gang of four workers of a higher priority arrives."""
    seen: list[Event] = []
    with trio.fail_after(30):
        async with connect(address) as client, client.watch(kinds=["Pod"]) as events:
            nodes = [
                make_node(f"n{i}").capacity(cpu="2", memory="4Gi", pods=10).obj() for i in range(2)
            ]
            lows = [
                make_pod(f"low-{i}").req(cpu="1").spec(priorityClassName="low").obj()
                for i in range(4)
            ]
            await client.put([_class("low", 10), _class("high", 1000), *nodes, *lows])
            bound = 0
            async for ev in events:
                bound += ev.type == "Bound"
                if bound == 4:
                    break
            workers = [
                make_pod(f"w{i}")
                .ns("ml")
                .req(cpu="1")
                .spec(priorityClassName="high", schedulingGroup={"podGroupName": "train"})
                .obj()
                for i in range(4)
            ]
            await client.put([pod_group("train", 4), *workers])
            bound = 0
            async for ev in events:
                seen.append(ev)
                bound += ev.type == "Bound" and ev.namespace == "ml"
                if bound == 4:
                    return seen
    raise AssertionError("the watch ended")


def test_a_gang_evicts_four_lower_pods_at_once_and_binds_whole(start_daemon: StartDaemon) -> None:
    """Issue 24 point 4 through a real daemon: the four victims' Preempted events, then the
    four members' Bound; podium explain podgroup/ml/train then says it is placed, all bound."""
    daemon = start_daemon("--metrics", "none")
    seen = trio.run(_gang_run, daemon.address)
    preempted = [ev for ev in seen if ev.type == "Preempted"]
    assert sorted(ev.name for ev in preempted) == [f"low-{i}" for i in range(4)]
    assert all("preempted by ml/w" in ev.message for ev in preempted)
    # Every eviction came before the first member was bound: one transaction, then the retry.
    first_bound = next(i for i, ev in enumerate(seen) if ev.type == "Bound")
    assert all(seen.index(ev) < first_bound for ev in preempted)
    explained = daemon.cli("explain", "podgroup/ml/train")
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.startswith(
        "PodGroup:  ml/train\nPolicy:    gang, minCount 4 (4 bound)\n"
        "Placed:    yes: every member is bound (4)\n"
    )
