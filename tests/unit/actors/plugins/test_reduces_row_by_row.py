"""Each priority's ``reduces_row_by_row`` against its own reduce step.

The score stage keeps a class's totals per row (actors/cycle/generic_scheduler.py,
``ScoreStage._pick_on_ring``) only where a priority says its reduce step reads no other row:
then every window of those rows (the feasible nodes one attempt examines, in any order) must
get, row by row, what the row gets alone, a function of its map score. Every priority of
v1.14 (names.PRIORITIES) is checked, after SKIP and with metadata its reduce step does not
read; the ones that answer False (``ServiceAntiAffinityPriority``, a scaled reduce over
scores above 0) are never taken per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod
from hypothesis import given, settings
from hypothesis import strategies as st

from podium.actors.framework.interface import SKIP, PluginArgs, ScorePlugin
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.plugins import names
from podium.actors.plugins.registry import priority_factory

ZONE = "topology.kubernetes.io/zone"
NODES = [
    NodeInfo(
        make_node(f"n{i}").label(ZONE, f"z{i % 3}").label("kubernetes.io/hostname", f"n{i}").obj()
    )
    for i in range(12)
]
POD = make_pod("p").labels({"app": "web"}).obj()

# What each priority of the default set says, for the record (docs/benchmarks.md): these have
# no reduce step.
ALWAYS = {
    names.LEAST_REQUESTED,
    names.MOST_REQUESTED,
    names.BALANCED_RESOURCE_ALLOCATION,
    names.NODE_PREFER_AVOID_PODS,
    names.IMAGE_LOCALITY,
    names.EQUAL_PRIORITY,
    names.NODE_LABEL,
}

# Priorities whose reduce step reads no metadata but SKIP's: checked with None as well.
META_FREE = ALWAYS | {names.NODE_AFFINITY, names.TAINT_TOLERATION, names.INTER_POD_AFFINITY}


def _plugin(name: str) -> ScorePlugin[Any]:
    return priority_factory(name)(PluginArgs(name=name, label=ZONE))  # type: ignore[return-value]


def _reduce(plugin: ScorePlugin[Any], meta: Any, rows: list[int], scores: list[int]) -> list[int]:
    return list(plugin.normalize(PodInfo(POD), meta, [NODES[r] for r in rows], scores))


PRIORITIES = list(names.PRIORITIES)


@pytest.mark.parametrize("name", PRIORITIES)
@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.integers(-2, 12), min_size=1, max_size=12),
    window=st.lists(st.integers(0, 11), min_size=1, max_size=12, unique=True),
    zeros=st.booleans(),
)
def test_a_reduce_said_to_read_no_other_row_gives_every_window_the_rows_alone(
    name: str, scores: list[int], window: list[int], zeros: bool
) -> None:
    plugin = _plugin(name)
    raw = [0] * len(NODES) if zeros else (scores * 12)[: len(NODES)]
    metas: list[Any] = [SKIP] + ([None] if name in META_FREE else [])
    for meta in metas:
        every = np.asarray(raw, dtype=np.int64)
        if not plugin.reduces_row_by_row(PodInfo(POD), meta, every):
            assert name not in ALWAYS
            continue
        together = _reduce(plugin, meta, window, [raw[r] for r in window])
        alone = [_reduce(plugin, meta, [r], [raw[r]])[0] for r in window]
        assert together == alone
        # A function of the map score alone (the score stage keeps one per distinct score).
        by_score: dict[int, int] = {}
        for r, score in zip(window, alone, strict=True):
            assert by_score.setdefault(raw[r], score) == score


@pytest.mark.parametrize("name", sorted(ALWAYS))
def test_priorities_without_a_reduce_step_always_go_row_by_row(name: str) -> None:
    scores = np.array([0, 3, 10, 7], dtype=np.int64)
    assert _plugin(name).reduces_row_by_row(PodInfo(POD), None, scores)


@pytest.mark.parametrize(
    ("name", "meta", "scores", "by_row"),
    [
        (names.NODE_AFFINITY, None, [0, 0, 0], True),
        (names.NODE_AFFINITY, None, [0, 3, 0], False),  # scaled by the window's highest
        (names.TAINT_TOLERATION, None, [0, 0], True),  # every row 10
        (names.TAINT_TOLERATION, None, [1, 0], False),
        (names.SELECTOR_SPREAD, SKIP, [0, 0], True),
        (names.INTER_POD_AFFINITY, None, [0, 0, 0], True),
        (names.INTER_POD_AFFINITY, None, [0, -1, 0], False),  # min - max over the window
        (names.EVEN_PODS_SPREAD_PRIORITY, SKIP, [0, 0], True),
        (names.SERVICE_ANTI_AFFINITY, SKIP, [0, 0], False),  # spread over the window's values
    ],
)
def test_which_reduce_steps_read_the_window(
    name: str, meta: Any, scores: list[int], by_row: bool
) -> None:
    array = np.array(scores, dtype=np.int64)
    assert _plugin(name).reduces_row_by_row(PodInfo(POD), meta, array) is by_row
