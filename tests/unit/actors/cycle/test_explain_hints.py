"""The explain hints (actors/cycle/explain.py): the smallest change that would make a pending
pod fit, and a resource no node can ever give it (issue 26)."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_node, make_pod
from stages import decide

from podium.actors.cycle.explain import hints
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.interface import PluginArgs
from podium.actors.framework.nodeinfo import NodeInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.node_resources_fit import PodFitsResources
from podium.protocol.wire import Hint

GPU = "nvidia.com/gpu"


def _gpu_node(name: str, gpus: int, *, used: int = 0) -> NodeInfo:
    node = make_node(name).capacity_map({"cpu": "8", "memory": "32Gi", "pods": "110", GPU: gpus})
    pods = [make_pod(f"{name}-user").req_map({GPU: used}).node(name).obj()] if used else []
    return node.info(*pods)


@dataclass(frozen=True)
class Case:
    name: str
    request: dict[str, object]
    nodes: tuple[NodeInfo, ...]
    want: list[Hint]


CASES = [
    Case(
        "8 GPUs on nodes of 4: no node can ever hold it",
        {GPU: 8},
        (_gpu_node("n1", 4, used=2), _gpu_node("n2", 4, used=2), _gpu_node("n3", 4)),
        [Hint(resource=GPU, missing="4", nodes=3, is_beyond_every_node=True)],
    ),
    Case(
        "beyond every node: by how much the largest allocatable falls short",
        {GPU: 8},
        (_gpu_node("n1", 4), _gpu_node("n2", 6), _gpu_node("n3", 2)),
        [Hint(resource=GPU, missing="2", nodes=1, is_beyond_every_node=True)],
    ),
    Case(
        "no node has the resource at all",
        {GPU: 1},
        (make_node("n1").capacity(cpu="8", memory="32Gi", pods=110).info(),),
        [Hint(resource=GPU, missing="1", nodes=1, is_beyond_every_node=True)],
    ),
    Case(
        "some node large enough: the ordinary hint, the least missing amount",
        {GPU: 8},
        (_gpu_node("n1", 8, used=3), _gpu_node("n2", 8, used=6), _gpu_node("n3", 8, used=3)),
        [Hint(resource=GPU, missing="3", nodes=2)],
    ),
    Case(
        "cpu beyond every node while memory only lacks room",
        {"cpu": "16", "memory": "8Gi"},
        (
            make_node("n1")
            .capacity(cpu="8", memory="8Gi", pods=110)
            .info(make_pod("u").req(memory="4Gi").node("n1").obj()),
        ),
        [Hint(resource="cpu", missing="8", nodes=1, is_beyond_every_node=True)],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_hints(case: Case) -> None:
    pod = make_pod("big").req_map(case.request).info()
    snapshot = Snapshot(case.nodes)
    result = decide(
        FilterStage([PodFitsResources(PluginArgs(names.POD_FITS_RESOURCES))]),
        ScoreStage([]),
        pod,
        snapshot,
        explain=True,
    )
    assert result.node is None
    assert hints(pod, result, snapshot) == case.want
