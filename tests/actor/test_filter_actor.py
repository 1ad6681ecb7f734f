"""The filter actor through its mailbox, under the autojump clock: feasible nodes go on to
the score actor with the request, a pod that fits nowhere is answered with its FitError,
the start index is carried between attempts (generic_scheduler.go@v1.14 ``findNodesThatFit``
and ``nextStartNodeIndex``) and kept across a policy reload, and a plugin bug fails only its
attempt."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio
import trio.testing
from builders import make_node, make_pod
from policies import plugins, volume_binder
from priority_harness import node_infos

from podium.actors.cycle.filtering import FilterActor
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.cycle.scoring import ScoreActor
from podium.actors.framework.interface import FilterPlugin
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.mail.messages import (
    Decision,
    FilterMsg,
    FilterRequest,
    ScoreMsg,
    ScoreRequest,
    SetFilters,
)
from podium.protocol import objects as o

TIME_LIMIT = 1000.0  # virtual seconds: a hung test fails instead of jumping forever


def node(name: str, cpu: str) -> o.Node:
    result: o.Node = make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()
    return result


def pod(name: str, cpu: str) -> PodInfo:
    info: PodInfo = make_pod(name).req(cpu=cpu).info()
    return info


def cluster(*cpus: str, generation: int = 7) -> Snapshot:
    """Nodes n0, n1, ... with these CPU capacities, in that order."""
    return Snapshot(
        node_infos([node(f"n{i}", cpu) for i, cpu in enumerate(cpus)]), None, generation
    )


@dataclass
class Harness:
    inbox: trio.MemorySendChannel[FilterMsg]
    scorers: trio.MemoryReceiveChannel[ScoreMsg]

    async def filter(
        self, p: PodInfo, snapshot: Snapshot, *, dry: bool = False, explain: bool = False
    ) -> tuple[FilterRequest, ScoreRequest | Decision]:
        """Send a FilterRequest; what came of it: the ScoreRequest the score actor got,
        or the Decision the pool answered itself."""
        reply_to, answer = trio.open_memory_channel[Decision](1)
        request = FilterRequest(pod=p, snapshot=snapshot, dry=dry, explain=explain, reply=reply_to)
        self.inbox.send_nowait(request)
        await trio.testing.wait_all_tasks_blocked()
        try:
            return request, answer.receive_nowait()
        except trio.WouldBlock:
            forwarded = self.scorers.receive_nowait()
            assert isinstance(forwarded, ScoreRequest), forwarded
            return request, forwarded


@asynccontextmanager
async def running(filters: list[FilterPlugin], percentage: int = 0) -> AsyncIterator[Harness]:
    inbox_tx, inbox_rx = trio.open_memory_channel[FilterMsg](1024)
    scorers_tx, scorers_rx = trio.open_memory_channel[ScoreMsg](1024)
    stage = FilterStage(filters, percentage_of_nodes_to_score=percentage)
    pool = FilterActor(inbox_rx, scorers_tx, stage, rng=random.Random(1))
    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(pool.run)
            async with inbox_tx:
                yield Harness(inbox_tx, scorers_rx)
    # The pool closed the scorers' mailbox when its own closed.
    assert [msg async for msg in scorers_rx] == []


FITS_RESOURCES = ["PodFitsResources"]


async def test_the_feasible_nodes_go_to_the_score_actor_with_the_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    filters, _ = plugins(FITS_RESOURCES)
    async with running(filters) as h:
        snapshot = cluster("1", "4", "500m", "2")
        request, got = await h.filter(pod("web", cpu="1500m"), snapshot, explain=True)
    assert isinstance(got, ScoreRequest)
    assert (got.pod, got.snapshot, got.reply, got.explain) == (
        request.pod,
        snapshot,
        request.reply,
        True,
    )
    assert got.feasible == [1, 3]
    assert (got.result.evaluated, got.result.feasible) == (4, 2)
    assert got.result.reasons == Counter({"Insufficient cpu": 2})
    assert got.result.feasible_nodes == ("n1", "n3")
    assert got.result.failed == {"n0": ("Insufficient cpu",), "n2": ("Insufficient cpu",)}
    # Filtering takes no virtual time.
    assert got.filter_seconds == 0.0


async def test_a_pod_that_fits_nowhere_is_answered_with_its_fit_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    filters, _ = plugins(FITS_RESOURCES)
    async with running(filters) as h:
        snapshot = cluster("1", "2", generation=12)
        request, got = await h.filter(pod("big", cpu="3"), snapshot)
    assert isinstance(got, Decision)
    assert (got.pod, got.node, got.generation, got.score_seconds) == (request.pod, None, 12, None)
    assert got.result.message == "0/2 nodes are available: 2 Insufficient cpu."
    assert not got.result.error
    assert got.result.failed_plugins == {"PodFitsResources"}


async def test_the_start_index_moves_on_by_the_nodes_examined_unless_dry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # 150 nodes at 50%: each attempt stops at the 100th feasible node (MIN_FEASIBLE_NODES_TO_FIND).
    filters, _ = plugins(FITS_RESOURCES)
    snapshot = cluster(*["4"] * 150)
    small = pod("small", cpu="100m")
    async with running(filters, percentage=50) as h:
        starts = []
        for dry in (True, False, True, False):
            _, got = await h.filter(small, snapshot, dry=dry)
            assert isinstance(got, ScoreRequest)
            assert len(got.feasible) == 100
            starts.append(got.feasible[0])
    assert starts == [0, 0, 100, 100]


async def test_set_filters_replaces_the_predicates_and_keeps_the_start_index(
    autojump_clock: trio.testing.MockClock,
) -> None:
    filters, _ = plugins(FITS_RESOURCES)
    snapshot = cluster(*["1"] * 150)
    async with running(filters, percentage=50) as h:
        _, first = await h.filter(pod("small", cpu="100m"), snapshot)
        assert isinstance(first, ScoreRequest) and first.feasible[0] == 0
        h.inbox.send_nowait(
            SetFilters(
                filters=[], percentage_of_nodes_to_score=100, always_check_all_predicates=False
            )
        )
        # No predicates: every node is feasible (v1.14), from where the last attempt stopped.
        _, got = await h.filter(pod("huge", cpu="64"), snapshot)
    assert isinstance(got, ScoreRequest)
    assert got.feasible == [*range(100, 150), *range(100)]


class Broken:
    """A real predicate but for a bug: its ``pre_filter`` raises."""

    def __init__(self, inner: FilterPlugin) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> object:
        raise RuntimeError("boom")


async def test_a_plugin_that_raises_fails_its_attempt_not_the_pool(
    autojump_clock: trio.testing.MockClock,
) -> None:
    (fits,), _ = plugins(FITS_RESOURCES)
    async with running([Broken(fits)]) as h:
        _, got = await h.filter(pod("web", cpu="1"), cluster("4"))
        assert isinstance(got, Decision)
        assert (got.node, got.result.error, got.result.message) == (
            None,
            True,
            "internal error: boom",
        )
        h.inbox.send_nowait(
            SetFilters(
                filters=[fits], percentage_of_nodes_to_score=0, always_check_all_predicates=False
            )
        )
        _, again = await h.filter(pod("web", cpu="1"), cluster("4"))
    assert isinstance(again, ScoreRequest) and again.feasible == [0]


@asynccontextmanager
async def with_scores(
    filters: list[FilterPlugin],
) -> AsyncIterator[trio.MemorySendChannel[FilterMsg]]:
    """The filter actor beside a real score actor (LeastRequestedPriority), as in a daemon."""
    _, scorers = plugins([], [("LeastRequestedPriority", 1)])
    inbox_tx, inbox_rx = trio.open_memory_channel[FilterMsg](1024)
    scorers_tx, scorers_rx = trio.open_memory_channel[ScoreMsg](1024)
    pool = FilterActor(inbox_rx, scorers_tx, FilterStage(filters), rng=random.Random(1))
    score = ScoreActor(scorers_rx, ScoreStage(scorers, rng=random.Random(1)), volume_binder())
    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(score.run)
            await nursery.start(pool.run)
            async with inbox_tx:
                yield inbox_tx


async def _run(
    inbox: trio.MemorySendChannel[FilterMsg],
    pods: list[PodInfo],
    snapshot: Snapshot,
    before: dict[str, NodeInfo],
    *,
    until: float = float("inf"),
) -> list[Decision]:
    reply_to, answers = trio.open_memory_channel[Decision](len(pods))
    inbox.send_nowait(
        FilterRequest(
            pod=pods[0], snapshot=snapshot, reply=reply_to, run=pods[1:], until=until, before=before
        )
    )
    got = [await answers.receive()]
    while True:
        try:
            got.append(answers.receive_nowait())
        except trio.WouldBlock:
            return got


async def test_a_run_decides_each_pod_with_the_ones_before_it_folded_in(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Least requested first, on a 3-CPU node n0 and a 2-CPU node n1: a (1.5 CPU) goes to n0;
    b (1.5 CPU) alone would too, but sees a folded in and goes to n1; c (0.4 CPU) sees both."""
    filters, _ = plugins(FITS_RESOURCES)
    pods = [pod(name, cpu="1500m") for name in "ab"] + [pod("c", cpu="400m")]
    snapshot, before = cluster("3", "2"), {}
    async with with_scores(filters) as inbox:
        decisions = await _run(inbox, pods, snapshot, before)
    assert [(d.pod, d.node) for d in decisions] == [
        (pods[0], "n0"),
        (pods[1], "n1"),
        (pods[2], "n0"),
    ]
    # Each placed pod was folded into the snapshot, as the cache's assume will count it.
    assert [d.assumed.key for d in decisions if d.assumed] == [
        "default/a",
        "default/b",
        "default/c",
    ]
    assert snapshot.get("n0").requested.milli_cpu == 1900
    assert sorted(before) == ["n0", "n1"]
    # Each node as before the run's first fold on it.
    assert (before["n0"].requested.milli_cpu, before["n1"].requested.milli_cpu) == (0, 0)


async def test_a_run_stops_after_a_pod_that_fits_nowhere_and_before_its_time_bound(
    autojump_clock: trio.testing.MockClock,
) -> None:
    filters, _ = plugins(FITS_RESOURCES)
    big, small = pod("big", cpu="3"), pod("small", cpu="100m")
    async with with_scores(filters) as inbox:
        stopped = await _run(inbox, [small, big, pod("after", cpu="100m")], cluster("2"), {})
        # A bound already passed: only the run's first pod is decided.
        late = await _run(inbox, [small, big], cluster("2"), {}, until=trio.current_time())
    assert [(d.pod.name, d.node) for d in stopped] == [("small", "n0"), ("big", None)]
    assert stopped[1].assumed is None and "Insufficient cpu" in (stopped[1].result.message or "")
    assert [(d.pod.name, d.node) for d in late] == [("small", "n0")]
