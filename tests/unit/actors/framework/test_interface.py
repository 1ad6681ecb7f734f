"""The framework's rules for running a plugin: SKIP, and a row without a Node object."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import numpy.typing as npt
import pytest
from builders import make_node, make_pod
from scalar_plugins import reasons_of

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    ERR_NODE_NOT_FOUND,
    NODE_NOT_FOUND,
    SKIP,
    SUCCESS,
    Code,
    PredicateError,
    ReasonMasks,
    Skip,
    Status,
    VectorFilterPlugin,
    VectorScorePlugin,
    run_filter,
    run_filter_columns,
    run_score,
    run_score_columns,
    unschedulable,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot

ODD = "node(s) are odd"
GONE = "node(s) had unknown conditions"


class _Odd(VectorFilterPlugin[int]):
    """Rejects odd-numbered nodes; its metadata is the divisor (2), or SKIP when asked to."""

    name = "Odd"

    def __init__(self, missing_node: Status | None = None, *, skip: bool = False) -> None:
        self.missing_node = missing_node
        self.skip = skip
        self.calls = 0

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> int | Skip:
        return SKIP if self.skip else 2

    def filter(self, pod: PodInfo, meta: int, node: NodeInfo) -> Status:
        self.calls += 1
        return unschedulable(ODD) if int(node.name[1:]) % meta else SUCCESS

    def filter_columns(self, pod: PodInfo, meta: int, cols: NodeColumns) -> ReasonMasks:
        self.calls += 1
        return [(ODD, np.array([int(n[1:]) % meta == 1 for n in cols.names]), Code.UNSCHEDULABLE)]


NODES = [make_node("n0").info(), make_node("n1").info(), NodeInfo(name="n3")]
"""Two nodes, then a row without a Node object whose number is odd."""


@dataclass(frozen=True)
class Case:
    name: str
    plugin: _Odd
    want: list[tuple[str, ...]]
    """Per row of NODES, the reasons."""
    calls: int
    """How often the scalar form is called over the rows."""


CASES = [
    Case("SKIP passes every row without a call", _Odd(skip=True), [(), (), ()], 0),
    Case("a row without a Node object is judged as any other", _Odd(), [(), (ODD,), (ODD,)], 3),
    Case(
        "an unschedulable missing_node answers that row",
        _Odd(unschedulable(GONE, resolvable=False)),
        [(), (ODD,), (GONE,)],
        2,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_run_filter(case: Case) -> None:
    pod = make_pod().info()
    plugin = case.plugin
    meta = plugin.pre_filter(pod, Snapshot(NODES))
    assert [run_filter(plugin, pod, meta, n).reasons for n in NODES] == case.want
    assert plugin.calls == case.calls
    masks = run_filter_columns(plugin, pod, meta, NodeColumns(NODES))
    assert [reasons_of(masks, row) for row in range(len(NODES))] == case.want


def test_node_not_found_is_an_error_per_row_and_for_the_vector_walk() -> None:
    pod = make_pod().info()
    plugin = _Odd(NODE_NOT_FOUND)
    status = run_filter(plugin, pod, 2, NODES[2])
    assert status == NODE_NOT_FOUND
    assert status.reasons == (ERR_NODE_NOT_FOUND,) == ("node not found",)
    assert plugin.calls == 0
    with pytest.raises(PredicateError, match=r"^node not found$"):
        run_filter_columns(plugin, pod, 2, NodeColumns(NODES))
    # Only a row without a Node object fails the vector walk.
    masks = run_filter_columns(plugin, pod, 2, NodeColumns(NODES[:2]))
    assert [reasons_of(masks, row) for row in range(2)] == [(), (ODD,)]


class _ByNumber(VectorScorePlugin[int]):
    name = "ByNumber"

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> int | Skip:
        return 1

    def score(self, pod: PodInfo, meta: int, node: NodeInfo) -> int:
        return int(node.name[1:]) * meta

    def score_columns(
        self, pod: PodInfo, meta: int, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        return np.array([int(cols.names[r][1:]) * meta for r in rows.tolist()], dtype=np.int64)

    def normalize(
        self, pod: PodInfo, meta: int | Skip, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return scores


def test_run_score_gives_zero_after_skip() -> None:
    pod, plugin = make_pod().info(), _ByNumber()
    cols = NodeColumns(NODES)
    rows = np.array([2, 0], dtype=np.intp)
    assert run_score(plugin, pod, 1, NODES) == [0, 1, 3]
    assert run_score(plugin, pod, SKIP, NODES) == [0, 0, 0]
    assert run_score_columns(plugin, pod, 1, cols, rows).tolist() == [3, 0]
    skipped = run_score_columns(plugin, pod, SKIP, cols, rows)
    assert skipped.dtype == np.int64 and skipped.tolist() == [0, 0]
