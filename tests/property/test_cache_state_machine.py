"""The node cache core as a Hypothesis state machine against a small model.

Rules: add/update/remove nodes (zones change the node-tree order), add bound pods (on known,
unknown or removed nodes), assume (decided on the current or an older generation), finish
binding, forget, advance time and expire, remove and update pods, put/delete a Service, and
take snapshot deltas. Every wrong transition is tried too and must raise exactly the
documented error with its exact message.

Invariants after every step: each NodeInfo's requested / non-zero / used ports equal the sums
over its pods; every pod is counted on exactly the node the model says (assumed ones too) and
on no other; the node tree holds exactly the known nodes; nothing handed out in a delta has
changed since; and (in the delta rule) a snapshot built by applying every delta in turn equals
a fresh full snapshot. Hypothesis prints the failing rule sequence.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from builders import decode, make_node, make_pod
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    rule,
)
from long_runs import examples

from podium.actors.cache.core import SchedulerCache
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import ClusterObjects, Snapshot, apply_delta
from podium.actors.plugins.node_ports import ports_conflict
from podium.actors.plugins.node_resources_fit import insufficient_resources
from podium.protocol import objects as o
from podium.protocol.errors import AlreadyAssumed, CacheStateError, NotAssumed

TTL = 5.0
ZONE = "topology.kubernetes.io/zone"
NODES = st.sampled_from(["n0", "n1", "n2"])
PODS = st.sampled_from(["p0", "p1", "p2", "p3"])
KEYS = PODS.map(lambda name: f"default/{name}")
ZONES = st.sampled_from(["", "a", "b"])
CPUS = st.sampled_from([100, 500, 900, 1500])
PORTS = st.sampled_from([0, 0, 8080])


def make_node_obj(name: str, zone: str, cpu: str) -> o.Node:
    b = make_node(name).capacity(cpu=cpu, memory="4Gi", pods=4)
    if zone:
        b.label(ZONE, zone)
    result: o.Node = b.obj()
    return result


def make_pod_obj(name: str, cpu: int, port: int, node: str = "", phase: str = "") -> o.Pod:
    b = make_pod(name).req(cpu=f"{cpu}m", memory="64Mi")
    if port:
        b.host_port(port)
    if node:
        b.node(node)
    if phase:
        b.phase(phase)
    result: o.Pod = b.obj()
    return result


def fingerprint(ni: NodeInfo) -> tuple[Any, ...]:
    r = ni.requested
    return (
        ni.node,
        tuple(p.key for p in ni.pods),
        (r.milli_cpu, r.memory, r.ephemeral_storage, tuple(sorted(r.scalar.items()))),
        ni.non_zero_milli_cpu,
        ni.non_zero_memory,
        tuple(sorted(ni.used_ports.items(), key=repr)),
        ni.generation,
    )


def objects_fingerprint(objects: ClusterObjects) -> tuple[Any, ...]:
    tables = (getattr(objects, f.name) for f in dataclasses.fields(objects))
    return tuple(tuple((k, id(v)) for k, v in table.items()) for table in tables)


@dataclass
class ModelPod:
    node: str
    assumed: bool
    cpu: int
    port: int
    deadline: float | None = None


class CacheMachine(RuleBasedStateMachine):
    # Keys of pods once assumed: later rules pick them often, so assumed pods get finished,
    # forgotten, confirmed and expired (and, once gone, tried again as wrong transitions).
    assumed_keys = Bundle("assumed_keys")

    def __init__(self) -> None:
        super().__init__()
        self.cache = SchedulerCache(assumed_pod_ttl_seconds=TTL)
        self.now = 0.0
        self.nodes: dict[str, str] = {}
        self.pods: dict[str, ModelPod] = {}
        self.snapshot: Snapshot | None = None
        self.handed: list[tuple[NodeInfo, tuple[Any, ...]]] = []
        self.handed_objects: list[tuple[ClusterObjects, tuple[Any, ...]]] = []

    # ------------------------------------------------------------------ helpers

    def expect(self, error: type[CacheStateError], message: str, call: Any, *args: Any) -> None:
        with pytest.raises(CacheStateError) as caught:
            call(*args)
        assert type(caught.value) is error
        assert str(caught.value) == message

    def remember(self, nodes: list[NodeInfo], objects: ClusterObjects | None) -> None:
        self.handed.extend((ni, fingerprint(ni)) for ni in nodes)
        if objects is not None:
            self.handed_objects.append((objects, objects_fingerprint(objects)))

    # ------------------------------------------------------------------ nodes

    @initialize(zone=ZONES)
    def start_with_two_nodes(self, zone: str) -> None:
        for name in ("n0", "n1"):
            self.cache.add_node(make_node_obj(name, zone, "2"))
            self.nodes[name] = zone

    @rule(name=NODES, zone=ZONES, cpu=st.sampled_from(["1", "2"]))
    def add_or_update_node(self, name: str, zone: str, cpu: str) -> None:
        obj = make_node_obj(name, zone, cpu)
        if name in self.nodes:
            self.cache.update_node(obj)
        else:
            self.cache.add_node(obj)
        self.nodes[name] = zone

    @rule(name=NODES)
    def remove_node(self, name: str) -> None:
        if name in self.nodes:
            self.cache.remove_node(name)
            del self.nodes[name]
        else:
            self.expect(
                CacheStateError,
                f"node {name} is not in the cache; cannot remove it",
                self.cache.remove_node,
                name,
            )

    # ------------------------------------------------------------------ pods

    @rule(key=KEYS, node=NODES, cpu=CPUS, port=PORTS)
    def add_bound_pod(self, key: str, node: str, cpu: int, port: int) -> None:
        name = key.partition("/")[2]
        m = self.pods.get(key)
        obj = make_pod_obj(name, cpu, port, node)
        if m is not None and not m.assumed:
            self.expect(
                CacheStateError,
                f"pod {key} is already added on {m.node}; cannot add it twice",
                self.cache.add_pod,
                obj,
            )
            return
        self.cache.add_pod(obj)
        self.pods[key] = ModelPod(node, assumed=False, cpu=cpu, port=port)

    @rule(target=assumed_keys, name=PODS, node=NODES, cpu=CPUS, port=PORTS, back=st.integers(0, 4))
    def assume(self, name: str, node: str, cpu: int, port: int, back: int) -> Any:
        key = f"default/{name}"
        m = self.pods.get(key)
        pod = PodInfo(make_pod_obj(name, cpu, port))
        generation = max(0, self.cache.generation - back)
        if m is not None:
            rule_text = (
                f"is already assumed on {m.node}; cannot assume twice"
                if m.assumed
                else f"is already bound to {m.node}; cannot assume it"
            )
            self.expect(
                AlreadyAssumed,
                f"pod {key} {rule_text}",
                self.cache.assume,
                pod,
                node,
                generation,
            )
            return multiple()
        before = self.cache.dump().nodes.get(node)
        result = self.cache.assume(pod, node, generation)
        if node not in self.nodes:
            assert result == f"node {node} is not in the cache; cannot assume pod {key} on it"
            return multiple()
        if result is not None:
            # A conflict only when the decision is older than the node's last change and the
            # pod really no longer fits.
            assert back > 0
            assert before is not None
            assert insufficient_resources(pod.request, before) or ports_conflict(
                before.used_ports, pod.host_ports
            )
            assert result.startswith(f"pod {key} no longer fits node {node} (")
            event("assume: conflict after a re-check")
            return multiple()
        event("assume: assumed")
        self.pods[key] = ModelPod(node, assumed=True, cpu=cpu, port=port)
        return key

    @rule(key=st.one_of(assumed_keys, KEYS))
    def finish_binding(self, key: str) -> None:
        m = self.pods.get(key)
        if m is not None and m.assumed:
            self.cache.finish_binding(key, self.now)
            m.deadline = self.now + TTL
            event("finish binding")
            return
        detail = "" if m is None else f" (it is bound to {m.node})"
        self.expect(
            NotAssumed,
            f"pod {key} is not assumed{detail}; cannot finish binding it",
            self.cache.finish_binding,
            key,
            self.now,
        )

    @rule(key=st.one_of(assumed_keys, KEYS))
    def forget(self, key: str) -> None:
        m = self.pods.get(key)
        if m is not None and m.assumed:
            self.cache.forget(key)
            del self.pods[key]
            return
        detail = "" if m is None else f" (it is bound to {m.node})"
        self.expect(
            NotAssumed,
            f"pod {key} is not assumed{detail}; cannot forget it",
            self.cache.forget,
            key,
        )

    @rule(dt=st.sampled_from([0.5, 3.0, 5.0, 6.0]))
    def advance_and_expire(self, dt: float) -> None:
        self.now += dt
        want = {
            k
            for k, m in self.pods.items()
            if m.assumed and m.deadline is not None and m.deadline <= self.now
        }
        assert set(self.cache.cleanup_expired(self.now)) == want
        if want:
            event("expired")
        for k in want:
            del self.pods[k]

    @rule(name=PODS)
    def remove_pod(self, name: str) -> None:
        key = f"default/{name}"
        m = self.pods.get(key)
        obj = make_pod_obj(name, 100, 0, m.node if m else "n0")
        if m is not None and not m.assumed:
            self.cache.remove_pod(obj)
            del self.pods[key]
        elif m is None:
            self.expect(
                CacheStateError,
                f"pod {key} is not in the cache; cannot remove it",
                self.cache.remove_pod,
                obj,
            )
        else:
            self.expect(
                CacheStateError,
                f"pod {key} is assumed on {m.node}, not added; cannot remove it before the "
                "store confirms it",
                self.cache.remove_pod,
                obj,
            )

    @rule(name=PODS, cpu=CPUS, terminal=st.booleans())
    def update_pod(self, name: str, cpu: int, terminal: bool) -> None:
        key = f"default/{name}"
        m = self.pods.get(key)
        node = m.node if m else "n0"
        new = make_pod_obj(name, cpu, m.port if m else 0, node, "Succeeded" if terminal else "")
        old = make_pod_obj(name, m.cpu if m else 100, m.port if m else 0, node)
        if m is not None and not m.assumed:
            self.cache.update_pod(old, new)
            if terminal:
                del self.pods[key]
            else:
                m.cpu = cpu
        elif m is None:
            self.expect(
                CacheStateError,
                f"pod {key} is not in the cache; cannot update it",
                self.cache.update_pod,
                old,
                new,
            )
        else:
            self.expect(
                CacheStateError,
                f"pod {key} is assumed on {m.node}, not added; cannot update it before the "
                "store confirms it",
                self.cache.update_pod,
                old,
                new,
            )

    # ------------------------------------------------------------------ objects

    @rule(name=st.sampled_from(["s1", "s2"]), delete=st.booleans())
    def put_or_delete_service(self, name: str, delete: bool) -> None:
        if delete:
            self.cache.delete_object("Service", "default", name)
        else:
            self.cache.add_object(
                decode(o.Service, {"metadata": {"name": name, "namespace": "default"}})
            )

    # ------------------------------------------------------------------ snapshots

    @rule()
    def take_delta(self) -> None:
        generation = self.snapshot.generation if self.snapshot is not None else 0
        delta = self.cache.snapshot_since(generation)
        self.remember(delta.nodes, delta.objects)
        self.snapshot = apply_delta(self.snapshot, delta)
        full_delta = self.cache.snapshot_since(0)
        self.remember(full_delta.nodes, full_delta.objects)
        full = apply_delta(None, full_delta)
        assert [n.name for n in self.snapshot.node_infos] == [n.name for n in full.node_infos]
        assert [fingerprint(n) for n in self.snapshot.node_infos] == [
            fingerprint(n) for n in full.node_infos
        ]
        assert self.snapshot.objects == full.objects
        assert self.snapshot.generation == full.generation == self.cache.generation

    # ------------------------------------------------------------------ invariants

    @invariant()
    def node_sums_equal_their_pods(self) -> None:
        for ni in self.cache.dump().nodes.values():
            r = ni.requested
            assert r.milli_cpu == sum(p.request.milli_cpu for p in ni.pods)
            assert r.memory == sum(p.request.memory for p in ni.pods)
            assert ni.non_zero_milli_cpu == sum(p.non_zero_milli_cpu for p in ni.pods)
            assert ni.non_zero_memory == sum(p.non_zero_memory for p in ni.pods)
            assert ni.used_ports == dict(Counter(hp for p in ni.pods for hp in p.host_ports))
            assert ni.node is not None or ni.pods  # an unlisted NodeInfo exists for its pods

    @invariant()
    def every_pod_is_on_exactly_its_node(self) -> None:
        dump = self.cache.dump()
        seen: dict[str, str] = {}
        for name, ni in dump.nodes.items():
            for p in ni.pods:
                assert p.key not in seen, f"{p.key} on {seen[p.key]} and {name}"
                seen[p.key] = name
                assert p.node_name == name
        assert seen == {k: m.node for k, m in self.pods.items()}
        assert dump.pods == seen
        assert dump.assumed == {k for k, m in self.pods.items() if m.assumed}
        for k, m in self.pods.items():
            counted = self.cache.get_pod(k)
            assert counted is not None and counted.request.milli_cpu == m.cpu

    @invariant()
    def tree_holds_exactly_the_known_nodes(self) -> None:
        dump = self.cache.dump()
        assert sorted(dump.order) == sorted(self.nodes)
        for name in self.nodes:
            assert dump.nodes[name].node is not None
        assert (self.cache.node_count, self.cache.pod_count, self.cache.assumed_count) == (
            len(self.nodes),
            len(self.pods),
            sum(m.assumed for m in self.pods.values()),
        )

    @invariant()
    def nothing_handed_out_changed(self) -> None:
        for ni, fp in self.handed:
            assert fingerprint(ni) == fp
        for objects, ofp in self.handed_objects:
            assert objects_fingerprint(objects) == ofp


CacheMachine.TestCase.settings = settings(
    max_examples=examples(30, 100), deadline=None, stateful_step_count=50
)
TestCacheStateMachine = CacheMachine.TestCase
