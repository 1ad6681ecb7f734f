"""A snapshot refresh stamps a row changed (``NodeColumns.row_version``) exactly when what a
predicate or priority reads of it changed (issue 27): the cache's NodeInfo after an assume the
scheduler folded in itself, and after the store's confirmation of the bound pod, are not
re-judged; any change a decision can see is."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest
from builders import make_node, make_pod

from podium.actors.cache.core import SchedulerCache
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo, same_for_scheduling
from podium.actors.framework.snapshot import Snapshot, apply_delta, assumed_pod, fold_assumed
from podium.protocol import objects as o


def _node(name: str) -> o.Node:
    result: o.Node = make_node(name).capacity(cpu="4", memory="8Gi", pods=110).obj()
    return result


def _pod(name: str, cpu: str = "500m") -> o.Pod:
    result: o.Pod = make_pod(name).label("app", "web").req(cpu=cpu).obj()
    return result


def _bound(pod: o.Pod, node: str, **meta: object) -> o.Pod:
    """``pod`` as the store writes its binding: nodeName, a new resourceVersion and the
    PodScheduled condition, and any ``meta`` changes besides."""
    metadata = msgspec.structs.replace(pod.metadata, resource_version="42", **meta)
    status = o.PodStatus(conditions=[o.PodCondition(type="PodScheduled", status="True")])
    spec = msgspec.structs.replace(pod.spec, node_name=node)
    return msgspec.structs.replace(pod, metadata=metadata, spec=spec, status=status)


def _cache_and_snapshot() -> tuple[SchedulerCache, Snapshot]:
    cache = SchedulerCache(assumed_pod_ttl_seconds=30.0)
    for name in ("n1", "n2", "n3"):
        cache.add_node(_node(name))
    cache.add_pod(_bound(_pod("old"), "n2"))
    snapshot = apply_delta(None, cache.snapshot_since(0))
    assert snapshot.columns.n == 3  # built, as the scheduler's is
    return cache, snapshot


def _assume_folded(cache: SchedulerCache, snapshot: Snapshot, pod: o.Pod, node: str) -> PodInfo:
    """What a batch does: fold the decision into the snapshot, then assume the same PodInfo."""
    info = PodInfo(pod)
    assumed = assumed_pod(info, node)
    fold_assumed(snapshot, info, node, assumed=assumed)
    assert cache.assume(info, node, snapshot.generation, assumed=assumed) is None
    return assumed


def _refresh(cache: SchedulerCache, snapshot: Snapshot) -> Snapshot:
    refreshed = apply_delta(snapshot, cache.snapshot_since(snapshot.generation))
    assert refreshed is snapshot  # the node set did not change: rows change in place
    return refreshed


def test_the_cache_s_assume_of_a_folded_pod_stamps_no_row() -> None:
    cache, snapshot = _cache_and_snapshot()
    _assume_folded(cache, snapshot, _pod("p"), "n1")
    cols = snapshot.columns
    version, stamps = cols.version, cols.row_version.copy()
    mine, journal = snapshot.by_name["n1"], snapshot.journal_position

    delta = cache.snapshot_since(snapshot.generation)
    assert apply_delta(snapshot, delta) is snapshot

    (theirs,) = (info for info in delta.nodes if info.name == "n1")
    assert theirs is not mine  # the cache's own NodeInfo came in the delta
    assert theirs.pods == mine.pods  # ... holding the very PodInfos the fold made
    # The snapshot holds the cache's (its generation, as a full snapshot would) ...
    row = snapshot._position("n1")
    assert snapshot.by_name["n1"] is theirs
    assert snapshot.node_infos[row] is theirs
    assert cols.infos[row] is theirs  # spreading's window checks the two agree
    # ... but no row is stamped and the affinity counts have nothing to follow.
    assert cols.version == version
    assert cols.row_version.tolist() == stamps.tolist()
    assert snapshot.journal_position == journal


def test_a_pod_that_came_and_went_leaves_the_cache_s_node_info_and_no_stamp() -> None:
    """A node's one pod added and removed between two refreshes: the cache's NodeInfo holds
    the same (no) pods and Node object as the snapshot's, with a newer generation; the
    snapshot takes it, as a full snapshot would (found by test_cache_state_machine)."""
    cache, snapshot = _cache_and_snapshot()
    stamps = snapshot.columns.row_version.copy()
    cache.add_pod(_bound(_pod("brief"), "n3"))
    cache.remove_pod(_bound(_pod("brief"), "n3"))

    delta = cache.snapshot_since(snapshot.generation)
    assert apply_delta(snapshot, delta) is snapshot

    (theirs,) = (info for info in delta.nodes if info.name == "n3")
    assert snapshot.by_name["n3"] is theirs
    full = apply_delta(None, cache.snapshot_since(0))
    assert snapshot.by_name["n3"].generation == full.by_name["n3"].generation
    assert snapshot.columns.row_version.tolist() == stamps.tolist()


def test_the_store_s_confirmation_swaps_the_pod_in_without_stamping_the_row() -> None:
    cache, snapshot = _cache_and_snapshot()
    pod = _pod("p")
    _assume_folded(cache, snapshot, pod, "n1")
    _refresh(cache, snapshot)
    cols = snapshot.columns
    version, stamps = cols.version, cols.row_version.copy()
    requested = cols.req_milli_cpu.tolist()

    cache.add_pod(_bound(pod, "n1"))
    _refresh(cache, snapshot)

    info = snapshot.by_name["n1"]
    # Preemption and the extenders read the store's pod, not the assumed one ...
    assert [p.pod.metadata.resource_version for p in info.pods] == ["42"]
    assert cols.infos[0] is info
    # ... and no verdict or per-row score is re-made for it.
    assert cols.version == version
    assert cols.row_version.tolist() == stamps.tolist()
    assert cols.req_milli_cpu.tolist() == requested


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda p: _bound(p, "n1", labels={"app": "db"}), id="labels"),
        pytest.param(lambda p: _bound(p, "n1", annotations={"a": "b"}), id="annotations"),
        pytest.param(
            lambda p: _bound(p, "n1", deletion_timestamp="2026-11-27T08:00:00Z"),
            id="deletionTimestamp",
        ),
        pytest.param(
            lambda p: _bound(msgspec.structs.replace(p, spec=_pod("x", cpu="1").spec), "n1"),
            id="spec",
        ),
    ],
)
def test_a_confirmation_that_changes_what_a_decision_reads_stamps_the_row(
    change: Callable[[o.Pod], o.Pod],
) -> None:
    cache, snapshot = _cache_and_snapshot()
    pod = _pod("p")
    _assume_folded(cache, snapshot, pod, "n1")
    _refresh(cache, snapshot)
    cols = snapshot.columns
    before = int(cols.row_version[0])
    others = cols.row_version[1:].tolist()

    cache.add_pod(change(pod))
    _refresh(cache, snapshot)

    assert cols.row_version[0] > before
    assert cols.row_version[1:].tolist() == others


def test_another_pod_with_the_same_spec_is_a_change() -> None:
    """Two pods of one spec on a node are not one: SelectorSpread and the affinity counts
    tell them apart by name, so a swap of one for the other stamps the row."""
    info = NodeInfo(_node("n1"))
    info.add_pod(PodInfo(_bound(_pod("a"), "n1")))
    other = NodeInfo(_node("n1"))
    other.node = info.node
    other.add_pod(PodInfo(_bound(_pod("b"), "n1")))
    assert not same_for_scheduling(info, other)
    snapshot = Snapshot([info])
    version = snapshot.columns.version
    snapshot.replace_node_info(other)
    assert snapshot.columns.row_version[0] == snapshot.columns.version > version


def test_a_new_node_object_or_another_pod_count_is_a_change() -> None:
    info = NodeInfo(_node("n1"))
    updated = info.clone()
    updated.set_node(_node("n1"))  # an equal Node, but a new object (a node update)
    assert not same_for_scheduling(info, updated)
    more = info.clone()
    more.add_pod(PodInfo(_bound(_pod("a"), "n1")))
    assert not same_for_scheduling(info, more)


def test_a_row_changed_in_place_is_stamped() -> None:
    """Preemption's what-if steps change a copy's NodeInfo in place: always a change."""
    info = NodeInfo(_node("n1"))
    snapshot = Snapshot([info])
    version = snapshot.columns.version
    info.add_pod(PodInfo(_bound(_pod("a"), "n1")))
    snapshot.replace_node_info(info)
    assert snapshot.columns.row_version[0] > version
    assert snapshot.columns.req_milli_cpu[0] == 500


def test_the_confirmed_pod_counted_in_another_order_is_the_same_row() -> None:
    """A confirmation counts the store's pod at the end of the node's pods: the order of a
    node's pods is read by no predicate or priority of a row (they count, sum or look for
    any), so the row stays unstamped; its aggregates are the same."""
    cache, snapshot = _cache_and_snapshot()
    first, second = _pod("p1"), _pod("p2", cpu="1")
    _assume_folded(cache, snapshot, first, "n1")
    _assume_folded(cache, snapshot, second, "n1")
    _refresh(cache, snapshot)
    cols = snapshot.columns
    version = cols.version

    cache.add_pod(_bound(first, "n1"))
    _refresh(cache, snapshot)

    assert [p.name for p in snapshot.by_name["n1"].pods] == ["p2", "p1"]
    assert cols.version == version
    assert cols.req_milli_cpu[0] == 1500
    fresh = Snapshot(list(snapshot.node_infos)).columns
    assert cols.req_milli_cpu.tolist() == fresh.req_milli_cpu.tolist()
    assert cols.pod_count.tolist() == fresh.pod_count.tolist()


def test_with_pod_keeps_the_stamp_only_for_resource_version_and_status() -> None:
    info = PodInfo(assumed_pod(PodInfo(_pod("p")), "n1").pod)
    assert info.with_pod(_bound(_pod("p"), "n1")).stamp == info.stamp
    assert info.with_pod(_bound(_pod("p"), "n1", labels={"app": "db"})).stamp != info.stamp
    assert info.with_pod(_bound(_pod("p"), "n1", uid="u2")).stamp != info.stamp
    assert PodInfo(info.pod).stamp != info.stamp  # a fresh PodInfo is a fresh stamp
