"""The score actor through its mailbox, under the autojump clock: the best weighted total
wins and every score is reported (generic_scheduler.go@v1.14 ``PrioritizeNodes`` and
``selectHost``), ties break with the seeded source a policy reload keeps, the chosen node's
volume decision travels with it, and a plugin bug or an undecidable claim fails only its
attempt."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio
import trio.testing
from builders import decode, make_node, make_pod
from policies import plugins, volume_binder
from priority_harness import node_infos

from podium.actors.cycle.generic_scheduler import ScoreStage
from podium.actors.cycle.scoring import ScoreActor
from podium.actors.framework.interface import ScorePlugin
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.mail.messages import Decision, ScoreMsg, ScoreRequest, SetScorers
from podium.protocol import objects as o

TIME_LIMIT = 1000.0  # virtual seconds: a hung test fails instead of jumping forever
SEED = 1


def node(name: str) -> o.Node:
    result: o.Node = make_node(name).capacity(cpu="4", memory="8Gi", pods=110).obj()
    return result


def cluster(objects: ClusterObjects | None = None) -> Snapshot:
    """n0 with 3 CPUs requested, n1 empty, n2 with 1 CPU requested (each of 4 CPUs, 8Gi); the
    requests name 1Gi each."""
    pods = [
        make_pod("a").req(cpu="3", memory="1Gi").node("n0").obj(),
        make_pod("b").req(cpu="1", memory="1Gi").node("n2").obj(),
    ]
    return Snapshot(node_infos([node("n0"), node("n1"), node("n2")], pods), objects, 5)


def web() -> PodInfo:
    info: PodInfo = make_pod("web").req(cpu="1", memory="1Gi").info()
    return info


@dataclass
class Harness:
    inbox: trio.MemorySendChannel[ScoreMsg]

    async def decide(
        self, p: PodInfo, snapshot: Snapshot, *, explain: bool = False, filter_seconds: float = 0
    ) -> Decision:
        """Score every node of ``snapshot`` (as the filter actor forwards a pod that fits all)."""
        reply_to, answer = trio.open_memory_channel[Decision](1)
        rows = list(range(len(snapshot)))
        self.inbox.send_nowait(
            ScoreRequest(
                pod=p,
                snapshot=snapshot,
                result=ScheduleResult(evaluated=len(rows), feasible=len(rows)),
                feasible=rows,
                explain=explain,
                reply=reply_to,
                filter_seconds=filter_seconds,
            )
        )
        return await answer.receive()

    def set_scorers(self, priorities: Sequence[tuple[str, int]]) -> None:
        self.inbox.send_nowait(SetScorers(scorers=plugins((), priorities)[1]))


@asynccontextmanager
async def running(priorities: Sequence[tuple[str, int]]) -> AsyncIterator[Harness]:
    inbox_tx, inbox_rx = trio.open_memory_channel[ScoreMsg](1024)
    stage = ScoreStage(plugins((), priorities)[1], rng=random.Random(SEED))
    with trio.fail_after(TIME_LIMIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(ScoreActor(inbox_rx, stage, volume_binder()).run)
            async with inbox_tx:
                yield Harness(inbox_tx)


LEAST_AND_MOST = [("LeastRequestedPriority", 1), ("MostRequestedPriority", 2)]


async def test_the_best_weighted_total_wins_and_every_score_is_reported(
    autojump_clock: trio.testing.MockClock,
) -> None:
    snapshot = cluster()
    async with running(LEAST_AND_MOST) as h:
        got = await h.decide(web(), snapshot, explain=True, filter_seconds=0.25)
    # LeastRequested: n0 (cpu 0 + memory 7) / 2 = 3; MostRequested twice: n0 (10 + 2) / 2 = 6.
    assert got.result.scores == {
        "n0": {"LeastRequestedPriority": 3, "MostRequestedPriority": 6},
        "n1": {"LeastRequestedPriority": 7, "MostRequestedPriority": 1},
        "n2": {"LeastRequestedPriority": 6, "MostRequestedPriority": 3},
    }
    assert got.result.totals == {"n0": 15, "n1": 9, "n2": 12}
    assert (got.node, got.result.node, got.generation) == ("n0", "n0", 5)
    assert (got.volumes, got.provisions) == ({}, [])
    # The filter stage's time is passed on; scoring takes no virtual time.
    assert (got.filter_seconds, got.score_seconds) == (0.25, 0.0)


async def test_set_scorers_replaces_the_priorities(autojump_clock: trio.testing.MockClock) -> None:
    async with running(LEAST_AND_MOST) as h:
        assert (await h.decide(web(), cluster())).node == "n0"
        h.set_scorers([("LeastRequestedPriority", 1)])
        assert (await h.decide(web(), cluster())).node == "n1"


async def test_ties_break_with_the_seeded_source_a_reload_keeps(
    autojump_clock: trio.testing.MockClock,
) -> None:
    empty = Snapshot(node_infos([node(f"n{i}") for i in range(4)]))
    tie = [("LeastRequestedPriority", 1)]
    async with running(tie) as h:
        straight = [(await h.decide(web(), empty)).node for _ in range(24)]
    async with running(tie) as h:
        reloaded = [(await h.decide(web(), empty)).node for _ in range(4)]
        h.set_scorers(tie)
        reloaded += [(await h.decide(web(), empty)).node for _ in range(20)]
    assert reloaded == straight
    assert set(straight) == {"n0", "n1", "n2", "n3"}


def _volumes() -> ClusterObjects:
    """Claims default/data and default/logs (1Gi each, class ``fast``: bound when the pod is
    placed), and one volume pv-1 (2Gi) of that class."""
    claims = {
        f"default/{name}": decode(
            o.PersistentVolumeClaim,
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}},
            },
        )
        for name in ("data", "logs")
    }
    fast = {
        "kind": "StorageClass",
        "metadata": {"name": "fast"},
        "provisioner": "p",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    volume = {
        "kind": "PersistentVolume",
        "metadata": {"name": "pv-1"},
        "spec": {"storageClassName": "fast", "capacity": {"storage": "2Gi"}},
    }
    return ClusterObjects(
        persistent_volume_claims=claims,
        storage_classes={"fast": decode(o.StorageClass, fast)},
        persistent_volumes={"pv-1": decode(o.PersistentVolume, volume)},
    )


async def test_the_chosen_nodes_volume_decision_travels_with_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # One claim finds a volume that fits, the other is to be provisioned on the chosen node.
    claiming = make_pod("web").req(cpu="1", memory="1Gi").pvc("data").pvc("logs").info()
    async with running(LEAST_AND_MOST) as h:
        got = await h.decide(claiming, cluster(_volumes()))
    assert (got.node, got.volumes, got.provisions) == (
        "n0",
        {"default/data": "pv-1"},
        ["default/logs"],
    )


async def test_a_claim_the_volume_binder_cannot_decide_fails_the_attempt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    claiming = make_pod("web").req(cpu="1").pvc("data").info()
    async with running(LEAST_AND_MOST) as h:
        got = await h.decide(claiming, cluster())
    assert (got.node, got.result.error, got.result.message) == (
        None,
        True,
        'persistentvolumeclaim "data" not found',
    )
    assert (got.volumes, got.provisions) == ({}, [])


class Broken:
    """A real priority but for a bug: its ``score`` raises."""

    def __init__(self, inner: ScorePlugin) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def score(self, pod: PodInfo, meta: object, node: NodeInfo) -> int:
        raise RuntimeError("boom")

    def score_columns(self, *args: object) -> object:
        raise RuntimeError("boom")


async def test_a_plugin_that_raises_fails_its_attempt_not_the_workers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with running(LEAST_AND_MOST) as h:
        least = plugins((), [("LeastRequestedPriority", 1)])[1][0][0]
        h.inbox.send_nowait(SetScorers(scorers=[(Broken(least), 1)]))
        got = await h.decide(web(), cluster())
        assert (got.node, got.result.error, got.result.message) == (
            None,
            True,
            "internal error: boom",
        )
        h.set_scorers([("LeastRequestedPriority", 1)])
        assert (await h.decide(web(), cluster())).node == "n1"


def _bound_claim_without_its_volume() -> ClusterObjects:
    claim = {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {"volumeName": "gone", "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound"},
    }
    return ClusterObjects(
        persistent_volume_claims={"default/data": decode(o.PersistentVolumeClaim, claim)}
    )


async def test_a_bound_claim_whose_volume_is_missing_binds_without_a_volume_decision(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # v1.14 scheduler.go assumeVolumes -> AssumePodVolumes: arePodVolumesBound reads only the
    # claims, so a pod whose claims are all bound is bound without looking its volumes up; the
    # missing volume fails the attempt only through CheckVolumeBinding (not run here).
    claiming = make_pod("web").req(cpu="1").pvc("data").info()
    async with running(LEAST_AND_MOST) as h:
        got = await h.decide(claiming, cluster(_bound_claim_without_its_volume()))
    assert (got.node, got.result.error, got.volumes, got.provisions) == ("n0", False, {}, [])
