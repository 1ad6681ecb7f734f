"""Run a v1.14 priority (map + reduce) the way the Kubernetes priority tests do, both forms.

Kubernetes' tests build ``CreateNodeNameToInfoMap(pods, nodes)`` (each pod lands on the node
its ``spec.nodeName`` names), run the map function per node and the reduce function over the
list. :func:`run_priority` does the same through a plugin's ``pre_score``/``score``/
``normalize`` and, for a vector plugin, through ``score_columns`` as well, so every table row
checks that the two forms agree. Shared by the priority tests in tests/unit/actors/plugins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from builders import make_node, make_pod

from podium.actors.framework.interface import (
    ScorePlugin,
    VectorScorePlugin,
    run_score,
    run_score_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.protocol import objects as o

__all__ = ["PriorityRun", "node_infos", "requests_pod", "resource_node", "run_priority"]


def node_infos(nodes: Sequence[o.Node], pods: Sequence[o.Pod] = ()) -> list[NodeInfo]:
    """One NodeInfo per node, holding the pods whose ``spec.nodeName`` names it."""
    return [
        NodeInfo(n, [PodInfo(p) for p in pods if p.spec.node_name == n.metadata.name])
        for n in nodes
    ]


@dataclass(frozen=True)
class PriorityRun:
    """What one priority gave each node, in node order."""

    raw: list[int]
    """Map scores of the scalar form."""
    final: list[int]
    """The scalar map scores after the reduce step."""
    vector_raw: list[int] | None
    """Map scores of ``score_columns`` over every row (``None`` without a vector form)."""
    vector_final: list[int] | None
    """``vector_raw`` after the reduce step."""


def run_priority(
    plugin: ScorePlugin[Any], pod: o.Pod, nodes: Sequence[o.Node], pods: Sequence[o.Pod] = ()
) -> PriorityRun:
    """Score ``pod`` on ``nodes`` (with ``pods`` placed by nodeName) through both forms.

    The vector form is also run over the rows in reverse order, which must give the scalar
    scores reversed (``rows`` selects and orders the rows it scores).
    """
    infos = node_infos(nodes, pods)
    snapshot = Snapshot(infos)
    pod_info = PodInfo(pod)
    meta = plugin.pre_score(pod_info, snapshot, infos)
    raw = run_score(plugin, pod_info, meta, infos)
    final = plugin.normalize(pod_info, meta, infos, list(raw))
    if not isinstance(plugin, VectorScorePlugin):
        return PriorityRun(raw, final, None, None)
    rows = np.arange(len(infos), dtype=np.intp)
    columns = run_score_columns(plugin, pod_info, meta, snapshot.columns, rows)
    assert columns.dtype == np.int64
    vector_raw = [int(v) for v in columns]
    reversed_raw = run_score_columns(plugin, pod_info, meta, snapshot.columns, rows[::-1].copy())
    assert [int(v) for v in reversed_raw] == raw[::-1]
    vector_final = plugin.normalize(pod_info, meta, infos, list(vector_raw))
    return PriorityRun(raw, final, vector_raw, vector_final)


def resource_node(name: str, milli_cpu: int, memory: int) -> o.Node:
    """test_util.go ``makeNode``: capacity and allocatable of ``milli_cpu`` and ``memory``."""
    res = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    return make_node(name).capacity_map(res).allocatable(res).obj()


def requests_pod(
    name: str, node: str = "", *containers: tuple[str, str], labels: dict[str, str] | None = None
) -> o.Pod:
    """A pod with one container per (cpu, memory) request pair, on ``node`` when given."""
    b = make_pod(name)
    for cpu, memory in containers:
        b.container(requests={"cpu": cpu, "memory": memory})
    if node:
        b.node(node)
    if labels:
        b.labels(labels)
    return b.obj()
