"""The node cache's state machine (cache.go@v1.14 semantics, Podium's copy-on-write deltas).

Rows named after a Kubernetes test cite pkg/scheduler/internal/cache/cache_test.go@v1.14.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import msgspec
import pytest
from builders import decode, make_node, make_pod

from podium.actors.cache.core import SchedulerCache
from podium.actors.framework.interface import SKIP, PluginArgs, run_filter
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot, apply_delta, assumed_pod, fold_assumed
from podium.actors.plugins.volume_binding import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    ERR_VOLUME_BIND_CONFLICT,
    VolumeBinding,
)
from podium.protocol import objects as o
from podium.protocol.errors import AlreadyAssumed, CacheStateError, NotAssumed
from podium.protocol.wire import EventType
from podium.store.mail import Change

ZONE = "topology.kubernetes.io/zone"


def node(name: str, cpu: str = "2", zone: str = "", **labels: str) -> o.Node:
    b = make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110)
    if zone:
        b.label(ZONE, zone)
    b.labels(labels)
    result: o.Node = b.obj()
    return result


def pod(name: str, cpu: str = "500m", on: str = "", port: int = 0) -> o.Pod:
    b = make_pod(name).req(cpu=cpu)
    if port:
        b.host_port(port)
    if on:
        b.node(on)
    result: o.Pod = b.obj()
    return result


def info(name: str, cpu: str = "500m", port: int = 0) -> PodInfo:
    return PodInfo(pod(name, cpu, port=port))


def cache_with(*nodes: o.Node, ttl: float = 30.0) -> SchedulerCache:
    cache = SchedulerCache(assumed_pod_ttl_seconds=ttl)
    for n in nodes:
        cache.add_node(n)
    return cache


def pods_on(cache: SchedulerCache, name: str) -> list[str]:
    return [p.key for p in cache.dump().nodes[name].pods]


def fingerprint(ni: NodeInfo) -> tuple[Any, ...]:
    r = ni.requested
    return (
        ni.node,
        tuple(p.key for p in ni.pods),
        (r.milli_cpu, r.memory, r.ephemeral_storage, dict(r.scalar)),
        ni.non_zero_milli_cpu,
        ni.non_zero_memory,
        dict(ni.used_ports),
        ni.generation,
    )


def same_snapshot(a: Snapshot, b: Snapshot) -> None:
    assert [n.name for n in a.node_infos] == [n.name for n in b.node_infos]
    assert [fingerprint(n) for n in a.node_infos] == [fingerprint(n) for n in b.node_infos]
    assert a.objects == b.objects
    assert a.generation == b.generation


# --------------------------------------------------------------------------- transitions


def test_assume_counts_the_pod_on_its_node_with_node_name_set() -> None:
    cache = cache_with(node("n1"))
    assert cache.assume(info("p"), "n1", cache.generation) is None
    assert pods_on(cache, "n1") == ["default/p"]
    counted = cache.get_pod("default/p")
    assert counted is not None and counted.node_name == "n1"
    assert cache.dump().nodes["n1"].requested.milli_cpu == 500
    assert cache.is_assumed("default/p")
    assert (cache.node_count, cache.pod_count, cache.assumed_count) == (1, 1, 1)


def test_folding_a_decision_into_a_snapshot_makes_the_change_assume_makes() -> None:
    # A scheduling batch folds each decision into its snapshot; the next snapshot delta then
    # brings the cache's own NodeInfo, which must not differ from the folded one.
    cache = cache_with(node("n1", cpu="4"), node("n2"))
    snapshot = apply_delta(None, cache.snapshot_since(0))
    columns = snapshot.columns
    decided = [info("a", port=8080), info("b", cpu="1"), info("c", port=9090)]
    targets = ["n1", "n1", "n2"]
    originals = {n: snapshot.by_name[n] for n in ("n1", "n2")}
    for p, target in zip(decided, targets, strict=True):
        before = fold_assumed(snapshot, p, target)
        assert cache.assume(p, target, snapshot.generation) is None
        assert before is not snapshot.by_name[target]
    assert {n: fingerprint(i) for n, i in originals.items()} == {
        "n1": fingerprint(NodeInfo(node("n1", cpu="4"))),
        "n2": fingerprint(NodeInfo(node("n2"))),
    }
    folded = {n.name: fingerprint(n) for n in snapshot.node_infos}
    refreshed = apply_delta(snapshot, cache.snapshot_since(snapshot.generation))
    assert {n.name: fingerprint(n) for n in refreshed.node_infos} == folded
    # The columns followed each fold (the equivalence classes patch by row version).
    assert list(columns.infos) == refreshed.node_infos


def test_forget_removes_the_assumed_pod() -> None:
    cache = cache_with(node("n1"))
    cache.assume(info("p"), "n1", cache.generation)
    cache.forget("default/p")
    assert pods_on(cache, "n1") == []
    assert cache.dump().nodes["n1"].requested.milli_cpu == 0
    assert (cache.pod_count, cache.assumed_count) == (0, 0)


def test_assume_then_add_confirms_with_the_stores_object() -> None:
    cache = cache_with(node("n1"))
    cache.assume(info("p"), "n1", cache.generation)
    cache.finish_binding("default/p", now=10.0)
    bound = msgspec.structs.replace(
        pod("p", on="n1"), metadata=msgspec.structs.replace(pod("p").metadata, uid="u-1")
    )
    cache.add_pod(bound)
    assert not cache.is_assumed("default/p")
    assert pods_on(cache, "n1") == ["default/p"]
    counted = cache.get_pod("default/p")
    assert counted is not None and counted.pod is bound
    assert cache.dump().nodes["n1"].requested.milli_cpu == 500
    assert cache.cleanup_expired(1e9) == []
    assert cache.next_deadline() is None


def test_add_on_another_node_than_assumed_moves_the_pod(caplog: pytest.LogCaptureFixture) -> None:
    # cache_test.go@v1.14 TestAddPodWillConfirm / "Pod was assumed to be on ... but got added to"
    cache = cache_with(node("n1"), node("n2"))
    cache.assume(info("p"), "n1", cache.generation)
    with caplog.at_level(logging.WARNING, logger="podium.cache"):
        cache.add_pod(pod("p", on="n2"))
    assert pods_on(cache, "n1") == []
    assert pods_on(cache, "n2") == ["default/p"]
    assert cache.dump().pods == {"default/p": "n2"}
    assert "pod default/p was assumed on n1 but was bound to n2" in caplog.messages


def test_add_pod_the_scheduler_never_assumed() -> None:
    cache = cache_with(node("n1"))
    cache.add_pod(pod("p", on="n1"))
    assert pods_on(cache, "n1") == ["default/p"]
    assert not cache.is_assumed("default/p")


def test_update_pod_replaces_its_requests() -> None:
    cache = cache_with(node("n1"))
    old = pod("p", "500m", on="n1")
    cache.add_pod(old)
    cache.update_pod(old, pod("p", "700m", on="n1"))
    assert cache.dump().nodes["n1"].requested.milli_cpu == 700


@pytest.mark.parametrize(
    "new",
    [
        make_pod("p").req(cpu="500m").node("n1").phase("Succeeded").obj(),
        make_pod("p").req(cpu="500m").node("n1").phase("Failed").obj(),
        decode(
            o.Pod,
            {
                **make_pod("p").req(cpu="500m").node("n1").dict(),
                "metadata": {
                    "name": "p",
                    "namespace": "default",
                    "deletionTimestamp": "2024-01-01T00:00:00Z",
                },
            },
        ),
    ],
    ids=["succeeded", "failed", "terminating"],
)
def test_a_pod_that_stops_holding_resources_is_removed(new: o.Pod) -> None:
    cache = cache_with(node("n1"))
    old = pod("p", on="n1")
    cache.add_pod(old)
    cache.update_pod(old, new)
    assert pods_on(cache, "n1") == []
    assert cache.pod_count == 0


def test_remove_pod() -> None:
    cache = cache_with(node("n1"))
    cache.add_pod(pod("p", on="n1"))
    cache.remove_pod(pod("p", on="n1"))
    assert pods_on(cache, "n1") == []
    assert cache.pod_count == 0


@dataclass(frozen=True)
class WrongCase:
    name: str
    setup: Callable[[SchedulerCache], None]
    act: Callable[[SchedulerCache], object]
    error: type[CacheStateError]
    message: str


def _assumed(c: SchedulerCache) -> None:
    c.assume(info("p"), "n1", c.generation)


def _added(c: SchedulerCache) -> None:
    c.add_pod(pod("p", on="n1"))


def _nothing(c: SchedulerCache) -> None:
    pass


WRONG = [
    WrongCase(
        "assume twice",
        _assumed,
        lambda c: c.assume(info("p"), "n1", c.generation),
        AlreadyAssumed,
        "pod default/p is already assumed on n1; cannot assume twice",
    ),
    WrongCase(
        "assume an added pod",
        _added,
        lambda c: c.assume(info("p"), "n1", c.generation),
        AlreadyAssumed,
        "pod default/p is already bound to n1; cannot assume it",
    ),
    WrongCase(
        "finish binding of an unknown pod",
        _nothing,
        lambda c: c.finish_binding("default/p", 1.0),
        NotAssumed,
        "pod default/p is not assumed; cannot finish binding it",
    ),
    WrongCase(
        "finish binding of an added pod",
        _added,
        lambda c: c.finish_binding("default/p", 1.0),
        NotAssumed,
        "pod default/p is not assumed (it is bound to n1); cannot finish binding it",
    ),
    WrongCase(
        "forget an unknown pod",
        _nothing,
        lambda c: c.forget("default/p"),
        NotAssumed,
        "pod default/p is not assumed; cannot forget it",
    ),
    WrongCase(
        "forget an added pod",
        _added,
        lambda c: c.forget("default/p"),
        NotAssumed,
        "pod default/p is not assumed (it is bound to n1); cannot forget it",
    ),
    WrongCase(
        "add an added pod",
        _added,
        lambda c: c.add_pod(pod("p", on="n1")),
        CacheStateError,
        "pod default/p is already added on n1; cannot add it twice",
    ),
    WrongCase(
        "add an unbound pod",
        _nothing,
        lambda c: c.add_pod(pod("p")),
        CacheStateError,
        "pod default/p has no spec.nodeName; only a bound pod can be added",
    ),
    WrongCase(
        "update an unknown pod",
        _nothing,
        lambda c: c.update_pod(pod("p", on="n1"), pod("p", on="n1")),
        CacheStateError,
        "pod default/p is not in the cache; cannot update it",
    ),
    WrongCase(
        "update an assumed pod",
        _assumed,
        lambda c: c.update_pod(pod("p", on="n1"), pod("p", on="n1")),
        CacheStateError,
        "pod default/p is assumed on n1, not added; cannot update it before the store confirms it",
    ),
    WrongCase(
        "remove an unknown pod",
        _nothing,
        lambda c: c.remove_pod(pod("p", on="n1")),
        CacheStateError,
        "pod default/p is not in the cache; cannot remove it",
    ),
    WrongCase(
        "remove an assumed pod",
        _assumed,
        lambda c: c.remove_pod(pod("p", on="n1")),
        CacheStateError,
        "pod default/p is assumed on n1, not added; cannot remove it before the store confirms it",
    ),
    WrongCase(
        "remove an unknown node",
        _nothing,
        lambda c: c.remove_node("n9"),
        CacheStateError,
        "node n9 is not in the cache; cannot remove it",
    ),
]


@pytest.mark.parametrize("case", WRONG, ids=attrgetter("name"))
def test_wrong_transitions_raise_naming_the_pod_and_rule(case: WrongCase) -> None:
    cache = cache_with(node("n1"))
    case.setup(cache)
    before = cache.dump()
    with pytest.raises(CacheStateError) as caught:
        case.act(cache)
    assert type(caught.value) is case.error
    assert str(caught.value) == case.message
    after = cache.dump()
    assert after.pods == before.pods and after.assumed == before.assumed


# --------------------------------------------------------------------------- conflicts


def test_assume_on_an_unknown_node_is_a_conflict() -> None:
    cache = cache_with(node("n1"))
    assert (
        cache.assume(info("p"), "n9", cache.generation)
        == "node n9 is not in the cache; cannot assume pod default/p on it"
    )
    assert cache.pod_count == 0


def test_node_changed_since_decision_and_pod_still_fits_is_assumed() -> None:
    cache = cache_with(node("n1", cpu="2"))
    decided_at = cache.generation
    cache.add_pod(pod("other", "1", on="n1"))
    assert cache.assume(info("p", "1"), "n1", decided_at) is None
    assert cache.is_assumed("default/p")


def test_node_changed_since_decision_and_pod_no_longer_fits_is_a_conflict() -> None:
    cache = cache_with(node("n1", cpu="2"))
    decided_at = cache.generation
    cache.add_pod(pod("other", "1500m", on="n1"))
    assert cache.assume(info("p", "1"), "n1", decided_at) == (
        f"pod default/p no longer fits node n1 (Insufficient cpu); the node changed after "
        f"generation {decided_at}"
    )
    assert pods_on(cache, "n1") == ["default/other"]
    assert cache.pod_count == 1


def test_host_port_taken_since_decision_is_a_conflict() -> None:
    cache = cache_with(node("n1"))
    decided_at = cache.generation
    cache.add_pod(pod("other", "100m", on="n1", port=8080))
    assert cache.assume(info("p", "100m", port=8080), "n1", decided_at) == (
        "pod default/p no longer fits node n1 (node(s) didn't have free ports for the "
        f"requested pod ports); the node changed after generation {decided_at}"
    )


def test_unchanged_node_is_not_rechecked() -> None:
    # The decision is trusted when its node did not change (another node did).
    cache = cache_with(node("n1", cpu="1"), node("n2"))
    cache.add_pod(pod("other", "1", on="n1"))
    decided_at = cache.generation
    cache.add_pod(pod("elsewhere", on="n2"))
    assert cache.assume(info("p", "1"), "n1", decided_at) is None
    assert cache.dump().nodes["n1"].requested.milli_cpu == 2000


@dataclass(frozen=True)
class BatchCase:
    name: str
    changed_before: str  # cpu of a pod bound on n1 after the decisions' snapshot ("": none)
    batch: bool  # the Assume says its decisions were folded (the scheduler's batches)
    want: list[bool]  # assumed, per pod of the batch (600m each, both on n1 of 1 CPU)


BATCH_CASES = [
    # Together the pods do not fit: only a re-check of the second one finds it. With the
    # promise (the scheduler folded the first in before deciding the second) it is trusted.
    BatchCase(
        "a node only the batch's earlier pods changed is not checked again", "", True, [True, True]
    ),
    BatchCase("without the fold's promise it is checked again", "", False, [True, False]),
    BatchCase(
        "a node changed before the batch came to it is checked for each pod",
        "100m",
        True,
        [True, False],
    ),
]


@pytest.mark.parametrize("case", BATCH_CASES, ids=attrgetter("name"))
def test_assume_of_a_folded_batch(case: BatchCase) -> None:
    cache = cache_with(node("n1", cpu="1"))
    decided_at = cache.generation
    if case.changed_before:
        cache.add_pod(pod("other", case.changed_before, on="n1"))
    batch: dict[str, int] | None = {} if case.batch else None
    got = [
        cache.assume(info(name, cpu), "n1", decided_at, batch=batch) is None
        for name, cpu in (("a", "600m"), ("b", "600m"))
    ]
    assert got == case.want


def test_assume_counts_the_assumed_pod_info_it_is_given() -> None:
    cache = cache_with(node("n1"))
    p = info("p")
    assumed = assumed_pod(p, "n1")
    assert cache.assume(p, "n1", cache.generation, assumed=assumed) is None
    assert cache.dump().nodes["n1"].pods == [assumed]


# --------------------------------------------------------------------------- expiry


def test_expires_only_after_finish_binding_plus_ttl() -> None:
    cache = cache_with(node("n1"), ttl=30.0)
    cache.assume(info("p"), "n1", cache.generation)
    assert cache.next_deadline() is None
    assert cache.cleanup_expired(1e9) == []  # binding not finished: never
    cache.finish_binding("default/p", now=10.0)
    assert cache.next_deadline() == 40.0
    assert cache.cleanup_expired(39.999) == []
    assert cache.cleanup_expired(40.0) == ["default/p"]
    assert pods_on(cache, "n1") == []
    assert (cache.pod_count, cache.assumed_count) == (0, 0)
    assert cache.next_deadline() is None


def test_ttl_zero_never_expires() -> None:
    cache = cache_with(node("n1"), ttl=0)
    cache.assume(info("p"), "n1", cache.generation)
    cache.finish_binding("default/p", now=10.0)
    assert cache.next_deadline() is None
    assert cache.cleanup_expired(1e12) == []
    assert cache.is_assumed("default/p")


def test_forgotten_then_reassumed_pod_keeps_only_its_new_deadline() -> None:
    cache = cache_with(node("n1"), ttl=30.0)
    cache.assume(info("p"), "n1", cache.generation)
    cache.finish_binding("default/p", now=0.0)
    cache.forget("default/p")
    cache.assume(info("p"), "n1", cache.generation)
    cache.finish_binding("default/p", now=20.0)
    assert cache.next_deadline() == 50.0
    assert cache.cleanup_expired(45.0) == []
    assert cache.cleanup_expired(50.0) == ["default/p"]


def test_expired_pod_can_be_added_back() -> None:
    cache = cache_with(node("n1"), ttl=1.0)
    cache.assume(info("p"), "n1", cache.generation)
    cache.finish_binding("default/p", now=0.0)
    assert cache.cleanup_expired(1.0) == ["default/p"]
    cache.add_pod(pod("p", on="n1"))
    assert pods_on(cache, "n1") == ["default/p"]


def test_negative_ttl_is_refused() -> None:
    with pytest.raises(ValueError, match="assumed_pod_ttl_seconds must be >= 0, got -1"):
        SchedulerCache(assumed_pod_ttl_seconds=-1)


# --------------------------------------------------------------------------- copy-on-write


def test_node_info_handed_out_is_never_mutated() -> None:
    cache = cache_with(node("n1"), node("n2"))
    cache.add_pod(pod("a", on="n1"))
    first = cache.snapshot_since(0)
    handed = {ni.name: (ni, fingerprint(ni)) for ni in first.nodes}
    cache.assume(info("b"), "n1", cache.generation)
    cache.add_pod(pod("c", on="n2"))
    cache.update_node(node("n1", cpu="8"))
    cache.remove_pod(pod("a", on="n1"))
    cache.forget("default/b")
    cache.remove_node("n2")
    for ni, fp in handed.values():
        assert fingerprint(ni) == fp
    delta = cache.snapshot_since(first.generation)
    assert [ni.name for ni in delta.nodes] == ["n1"]
    assert delta.nodes[0] is not handed["n1"][0]


def test_objects_handed_out_are_never_mutated() -> None:
    cache = cache_with(node("n1"))
    svc = decode(o.Service, {"metadata": {"name": "s", "namespace": "default"}})
    cache.add_object(svc)
    first = cache.snapshot_since(0).objects
    assert first is not None
    services = dict(first.services)
    cache.add_object(decode(o.Service, {"metadata": {"name": "t", "namespace": "default"}}))
    cache.delete_object("Service", "default", "s")
    assert first.services == services
    latest = cache.snapshot_since(0).objects
    assert latest is not first
    assert list(latest.services if latest else {}) == ["default/t"]


def test_dump_and_deltas_never_share_what_the_cache_still_changes() -> None:
    cache = cache_with(node("n1"))
    first = cache.snapshot_since(0)
    handed = first.nodes[0]
    cache.add_pod(pod("a", on="n1"))
    private = cache.dump().nodes["n1"]  # a clone: does not share the cache's copy
    cache.add_pod(pod("b", on="n1"))
    delta = cache.snapshot_since(first.generation)
    assert delta.nodes[0] is not handed and delta.nodes[0] is not private
    assert [p.key for p in handed.pods] == []
    assert [p.key for p in private.pods] == ["default/a"]
    assert [p.key for p in delta.nodes[0].pods] == ["default/a", "default/b"]


# --------------------------------------------------------------------------- deltas


def test_delta_lists_changed_nodes_removals_and_order_changes() -> None:
    cache = cache_with(node("n1", zone="a"), node("n2", zone="a"), node("n3", zone="b"))
    full = cache.snapshot_since(0)
    assert full.order == ["n1", "n3", "n2"]
    assert [ni.name for ni in full.nodes] == ["n1", "n3", "n2"]
    assert full.objects is not None and full.removed == []
    g = full.generation

    nothing = cache.snapshot_since(g)
    assert (nothing.nodes, nothing.removed, nothing.order, nothing.objects) == ([], [], None, None)
    assert nothing.generation == g

    cache.add_pod(pod("p", on="n2"))
    d = cache.snapshot_since(g)
    assert ([ni.name for ni in d.nodes], d.removed, d.order, d.objects) == (["n2"], [], None, None)
    g = d.generation

    cache.update_node(node("n1", cpu="4", zone="a"))  # same zone: no order change
    d = cache.snapshot_since(g)
    assert ([ni.name for ni in d.nodes], d.order) == (["n1"], None)
    g = d.generation

    cache.update_node(node("n1", zone="b"))  # moves to the end of zone b
    d = cache.snapshot_since(g)
    assert ([ni.name for ni in d.nodes], d.order) == (["n1"], ["n2", "n3", "n1"])
    g = d.generation

    cache.remove_node("n3")
    d = cache.snapshot_since(g)
    assert (d.nodes, d.removed, d.order) == ([], ["n3"], ["n2", "n1"])
    g = d.generation

    cache.remove_node("n2")  # it still holds p: kept unlisted
    cache.add_object(decode(o.Service, {"metadata": {"name": "s", "namespace": "default"}}))
    d = cache.snapshot_since(g)
    assert (d.nodes, d.removed, d.order) == ([], ["n2"], ["n1"])
    assert d.objects is not None and list(d.objects.services) == ["default/s"]


def test_removed_then_readded_node_is_not_reported_removed() -> None:
    cache = cache_with(node("n1"), node("n2"))
    g = cache.snapshot_since(0).generation
    cache.remove_node("n2")
    cache.add_node(node("n2", cpu="4"))
    d = cache.snapshot_since(g)
    assert ([ni.name for ni in d.nodes], d.removed, d.order) == (["n2"], [], ["n1", "n2"])


def test_applying_deltas_step_by_step_equals_a_fresh_full_snapshot() -> None:
    cache = cache_with(node("n1", zone="a"), node("n2", zone="b"))
    snap = apply_delta(None, cache.snapshot_since(0))
    steps: list[Callable[[], object]] = [
        lambda: cache.add_pod(pod("a", on="n1")),
        lambda: cache.assume(info("b"), "n2", cache.generation),
        lambda: cache.add_node(node("n3", zone="a")),
        lambda: cache.update_node(node("n2", zone="a")),
        lambda: cache.forget("default/b"),
        lambda: cache.remove_node("n1"),
        lambda: cache.add_object(decode(o.Service, {"metadata": {"name": "s"}})),
        lambda: cache.add_node(node("n1", zone="c")),
    ]
    for step in steps:
        step()
        before_nodes = {ni.name: ni for ni in snap.node_infos}
        delta = cache.snapshot_since(snap.generation)
        snap = apply_delta(snap, delta)
        if delta.order is not None:
            changed = {ni.name for ni in delta.nodes}
            for ni in snap.node_infos:
                if ni.name not in changed and ni.name in before_nodes:
                    assert ni is before_nodes[ni.name]  # unchanged NodeInfos are reused
        same_snapshot(snap, apply_delta(None, cache.snapshot_since(0)))
    assert [ni.name for ni in snap.node_infos] == ["n3", "n1", "n2"]  # zones a, c interleaved


def test_apply_delta_in_place_keeps_the_snapshot_and_its_columns() -> None:
    cache = cache_with(node("n1"), node("n2"))
    snap = apply_delta(None, cache.snapshot_since(0))
    assert snap.columns.req_milli_cpu.tolist() == [0, 0]
    cache.add_pod(pod("a", "700m", on="n2"))
    same = apply_delta(snap, cache.snapshot_since(snap.generation))
    assert same is snap
    assert snap.columns.req_milli_cpu.tolist() == [0, 700]
    assert snap.generation == cache.generation


def test_apply_delta_refuses_a_first_delta_without_order() -> None:
    cache = cache_with(node("n1"))
    g = cache.snapshot_since(0).generation
    cache.add_pod(pod("a", on="n1"))
    with pytest.raises(ValueError, match="the first snapshot delta must carry the node order"):
        apply_delta(None, cache.snapshot_since(g))


def test_a_generation_the_cache_never_had_gets_a_full_snapshot() -> None:
    cache = cache_with(node("n1"))
    d = cache.snapshot_since(cache.generation + 5)
    assert d.order == ["n1"] and [ni.name for ni in d.nodes] == ["n1"]


# --------------------------------------------------------------------------- unknown nodes


def test_pods_on_an_unknown_node_are_kept_and_count_when_it_arrives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = cache_with(node("n1"))
    g = cache.snapshot_since(0).generation
    with caplog.at_level(logging.WARNING, logger="podium.cache"):
        cache.add_pod(pod("p", "300m", on="n9"))
    assert caplog.messages == [
        "pod default/p is bound to node n9, which the cache does not know; it is kept and "
        "counts once the node arrives"
    ]
    d = cache.snapshot_since(g)
    assert (d.nodes, d.order) == ([], None)
    assert cache.pod_count == 1 and cache.node_count == 1
    cache.add_node(node("n9"))
    d = cache.snapshot_since(d.generation)
    assert [ni.name for ni in d.nodes] == ["n9"] and d.order == ["n1", "n9"]
    assert d.nodes[0].requested.milli_cpu == 300


def test_removed_node_keeps_its_pods_until_they_are_deleted() -> None:
    cache = cache_with(node("n1"))
    cache.add_pod(pod("p", on="n1"))
    cache.remove_node("n1")
    assert cache.node_count == 0
    assert cache.dump().nodes["n1"].node is None
    assert cache.snapshot_since(0).nodes == []
    cache.add_node(node("n1"))
    assert pods_on(cache, "n1") == ["default/p"]
    cache.remove_node("n1")
    cache.remove_pod(pod("p", on="n1"))
    assert "n1" not in cache.dump().nodes


def test_assume_on_a_removed_node_is_a_conflict() -> None:
    cache = cache_with(node("n1"))
    g = cache.generation
    cache.remove_node("n1")
    assert cache.assume(info("p"), "n1", g) == (
        "node n1 is not in the cache; cannot assume pod default/p on it"
    )


# --------------------------------------------------------------------------- volumes

WAIT = "wait"


def claim(name: str, **spec: Any) -> o.PersistentVolumeClaim:
    data = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "storageClassName": WAIT,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            **spec,
        },
    }
    result: o.PersistentVolumeClaim = decode(o.PersistentVolumeClaim, data)
    return result


def volume(name: str, claim_ref: dict[str, str] | None = None) -> o.PersistentVolume:
    spec: dict[str, Any] = {
        "capacity": {"storage": "5Gi"},
        "storageClassName": WAIT,
        "accessModes": ["ReadWriteOnce"],
    }
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    result: o.PersistentVolume = decode(
        o.PersistentVolume, {"metadata": {"name": name}, "spec": spec}
    )
    return result


def storage_class() -> o.StorageClass:
    result: o.StorageClass = decode(
        o.StorageClass,
        {
            "metadata": {"name": WAIT},
            "volumeBindingMode": "WaitForFirstConsumer",
            "provisioner": "kubernetes.io/no-provisioner",
        },
    )
    return result


def volume_cache() -> SchedulerCache:
    cache = cache_with(node("n1"))
    for obj in (storage_class(), claim("c1"), claim("c2"), claim("c3"), volume("pv1")):
        cache.add_object(obj)
    return cache


def test_assumed_volumes_are_bound_in_the_objects_and_reverted_on_forget() -> None:
    cache = volume_cache()
    real = cache.objects
    assert (
        cache.assume(
            PodInfo(make_pod("p").pvc("c1").pvc("c2").obj()),
            "n1",
            cache.generation,
            {"default/c1": "pv1"},
            ["default/c2"],
        )
        is None
    )
    objs = cache.objects
    c1 = objs.persistent_volume_claims["default/c1"]
    assert c1.spec.volume_name == "pv1"
    assert c1.metadata.annotations == {ANN_BIND_COMPLETED: "yes"}
    ref = objs.persistent_volumes["pv1"].spec.claim_ref
    assert ref == o.ObjectReference(
        kind="PersistentVolumeClaim", namespace="default", name="c1", uid="uid-c1"
    )
    assert objs.persistent_volume_claims["default/c2"].metadata.annotations == {
        ANN_SELECTED_NODE: "n1"
    }
    # What was handed out before is untouched.
    assert real.persistent_volume_claims["default/c1"].spec.volume_name == ""
    cache.forget("default/p")
    after = cache.objects
    assert after.persistent_volume_claims == real.persistent_volume_claims
    assert after.persistent_volumes == real.persistent_volumes


def test_expiry_reverts_volume_assumptions() -> None:
    cache = volume_cache()
    real = cache.objects
    cache.assume(
        PodInfo(make_pod("p").pvc("c1").obj()), "n1", cache.generation, {"default/c1": "pv1"}
    )
    cache.finish_binding("default/p", now=0.0)
    assert cache.cleanup_expired(30.0) == ["default/p"]
    assert cache.objects.persistent_volumes == real.persistent_volumes
    assert cache.objects.persistent_volume_claims == real.persistent_volume_claims


def test_next_pods_volume_predicate_sees_the_assumed_volume_taken() -> None:
    cache = volume_cache()
    plugin = VolumeBinding(PluginArgs(name="CheckVolumeBinding"))
    second = PodInfo(make_pod("q").pvc("c3").obj())

    def verdict() -> tuple[str, ...]:
        snap = apply_delta(None, cache.snapshot_since(0))
        meta = plugin.pre_filter(second, snap)
        assert meta is not SKIP
        return run_filter(plugin, second, meta, snap.node_infos[0]).reasons

    assert verdict() == ()
    cache.assume(
        PodInfo(make_pod("p").pvc("c1").obj()), "n1", cache.generation, {"default/c1": "pv1"}
    )
    assert verdict() == (ERR_VOLUME_BIND_CONFLICT,)
    cache.forget("default/p")
    assert verdict() == ()


def test_volume_taken_by_another_claim_is_a_conflict() -> None:
    cache = volume_cache()
    g = cache.generation
    cache.assume(PodInfo(make_pod("p").pvc("c1").obj()), "n1", g, {"default/c1": "pv1"})
    assert cache.assume(PodInfo(make_pod("q").pvc("c3").obj()), "n1", g, {"default/c3": "pv1"}) == (
        "persistentvolume pv1 is already bound to claim default/c1; cannot assume pod default/q"
    )
    assert cache.get_pod("default/q") is None


def test_missing_claim_is_a_conflict() -> None:
    cache = volume_cache()
    assert cache.assume(info("p"), "n1", cache.generation, {}, ["default/gone"]) == (
        "persistentvolumeclaim default/gone does not exist; cannot assume pod default/p"
    )


def test_the_stores_own_claim_supersedes_the_assumption() -> None:
    cache = volume_cache()
    cache.assume(
        PodInfo(make_pod("p").pvc("c1").obj()), "n1", cache.generation, {"default/c1": "pv1"}
    )
    stored = claim("c1", volumeName="pv1")
    cache.add_object(stored)
    assert cache.objects.persistent_volume_claims["default/c1"] is stored
    cache.forget("default/p")  # the claim is the store's now: not reverted
    assert cache.objects.persistent_volume_claims["default/c1"] is stored
    assert cache.objects.persistent_volumes["pv1"].spec.claim_ref is None  # pv1 was reverted


def test_confirmed_pods_volume_assumptions_stay_until_superseded() -> None:
    cache = volume_cache()
    cache.assume(
        PodInfo(make_pod("p").pvc("c1").obj()), "n1", cache.generation, {"default/c1": "pv1"}
    )
    cache.add_pod(make_pod("p").pvc("c1").node("n1").obj())
    cache.remove_pod(make_pod("p").pvc("c1").node("n1").obj())
    assert cache.objects.persistent_volumes["pv1"].spec.claim_ref is not None


# --------------------------------------------------------------------------- the store's stream


def change(type_: EventType, obj: o.KubeObject, revision: int = 1) -> Change:
    kind = type(obj).__name__
    return Change(
        revision=revision,
        type=type_,
        kind=kind,
        namespace=obj.metadata.namespace if kind in o.NAMESPACED_KINDS else "",
        name=obj.metadata.name,
        object=obj,
    )


def test_store_changes_map_to_transitions() -> None:
    cache = SchedulerCache()
    cache.apply_change(change("Added", node("n1")), 0.0)
    cache.apply_change(change("Added", pod("pending")), 0.0)
    assert cache.pod_count == 0  # unbound pods are the queue's
    cache.apply_change(change("Added", pod("a", on="n1")), 0.0)
    assert pods_on(cache, "n1") == ["default/a"]
    cache.apply_change(change("Modified", pod("a", "800m", on="n1")), 0.0)
    assert cache.dump().nodes["n1"].requested.milli_cpu == 800

    cache.assume(info("b"), "n1", cache.generation)
    cache.apply_change(change("Modified", make_pod("b").req(cpu="500m").label("x", "y").obj()), 0.0)
    assert cache.is_assumed("default/b")  # its pending object changed: still assumed
    cache.apply_change(change("Deleted", pod("b")), 0.0)
    assert cache.is_assumed("default/b")  # the binder forgets it when its bind fails
    cache.apply_change(change("Bound", pod("b", on="n1")), 0.0)
    assert not cache.is_assumed("default/b") and cache.pod_count == 2

    cache.apply_change(change("Unschedulable", pod("pending")), 0.0)
    cache.apply_change(change("Preempted", pod("a", on="n1")), 0.0)
    cache.apply_change(change("Deleted", pod("b", on="n1")), 0.0)
    cache.apply_change(change("Deleted", pod("pending")), 0.0)
    assert cache.pod_count == 0

    cache.apply_change(change("Modified", node("n1", cpu="8")), 0.0)
    assert cache.dump().nodes["n1"].allocatable.milli_cpu == 8000
    svc = decode(o.Service, {"metadata": {"name": "s", "namespace": "ns"}})
    cache.apply_change(change("Added", svc), 0.0)
    assert cache.objects.services == {"ns/s": svc}
    cache.apply_change(change("Deleted", svc), 0.0)
    assert cache.objects.services == {}
    pc = decode(o.PriorityClass, {"metadata": {"name": "high"}, "value": 1000})
    cache.apply_change(change("Added", pc), 0.0)
    assert cache.objects.priority_classes == {"high": pc}
    cache.apply_change(change("Deleted", node("n1")), 0.0)
    assert cache.node_count == 0


def test_terminal_bound_pod_of_an_assumed_pod_drops_it() -> None:
    cache = cache_with(node("n1"))
    cache.assume(info("p"), "n1", cache.generation)
    cache.apply_change(
        change("Bound", make_pod("p").req(cpu="500m").node("n1").phase("Failed").obj()), 0.0
    )
    assert cache.pod_count == 0 and pods_on(cache, "n1") == []


def test_recover_rebuilds_everything_and_reports_vanished_nodes() -> None:
    cache = cache_with(node("n1"), node("old"))
    cache.assume(info("x"), "n1", cache.generation)
    g = cache.snapshot_since(0).generation
    svc = decode(o.Service, {"metadata": {"name": "s", "namespace": "default"}})
    cache.recover(
        [node("n1"), node("n2"), svc, pod("a", on="n2"), pod("pending"), pod("gone", on="n1")]
    )
    assert cache.dump().pods == {"default/a": "n2", "default/gone": "n1"}
    assert cache.assumed_count == 0
    d = cache.snapshot_since(g)
    assert d.order == ["n1", "n2"] and d.removed == ["old"]
    assert sorted(ni.name for ni in d.nodes) == ["n1", "n2"]
    assert d.objects is not None and d.objects.services == {"default/s": svc}


def _one_of(kind: str) -> o.KubeObject:
    """An object of ``kind`` with only what the kind cannot be without."""
    required: dict[str, Any] = {
        "PodGroup": {"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    }
    meta = {"name": "x", "namespace": "ml"} if kind in o.NAMESPACED_KINDS else {"name": "x"}
    result: o.KubeObject = decode(o.KINDS[kind], {"metadata": meta, **required.get(kind, {})})
    return result


@pytest.mark.parametrize("kind", sorted(set(o.KINDS) - {"Node", "Pod"}))
def test_every_kind_the_store_keeps_has_a_table_in_the_objects(kind: str) -> None:
    # Recovered carries every stored object: none may make the cache fall over, and each is
    # there for the plugins (and pod groups for the queue and the scheduler) to read.
    obj = _one_of(kind)
    key = "ml/x" if kind in o.NAMESPACED_KINDS else "x"
    cache = SchedulerCache()
    cache.recover([node("n1"), obj])
    tables = {
        name: table
        for name in type(cache.objects).__dataclass_fields__
        if key in (table := getattr(cache.objects, name))
    }
    assert list(tables.values()) == [{key: obj}], tables
    cache.apply_change(change("Deleted", obj), 0.0)
    assert all(key not in getattr(cache.objects, name) for name in tables)
    cache.apply_change(change("Added", obj), 0.0)
    assert [getattr(cache.objects, name) for name in tables] == [{key: obj}]


def test_pod_groups_follow_the_store() -> None:
    cache = SchedulerCache()
    group = _one_of("PodGroup")
    cache.apply_change(change("Added", group), 0.0)
    assert cache.objects.pod_groups == {"ml/x": group}
    bigger = decode(
        o.PodGroup,
        {
            "metadata": {"name": "x", "namespace": "ml"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}},
        },
    )
    cache.apply_change(change("Modified", bigger), 0.0)
    assert cache.objects.pod_groups == {"ml/x": bigger}
    cache.apply_change(change("Deleted", bigger), 0.0)
    assert cache.objects.pod_groups == {}
