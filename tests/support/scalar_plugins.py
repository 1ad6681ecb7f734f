"""Adapters that hide a plugin's vector form, so the scheduler takes its per-node path, and
:func:`reasons_of`, which reads a vector form's answer for one node.

:class:`ScalarFilter` keeps a predicate's contract (name, flags, ``pre_filter``, ``filter``);
:class:`ScalarScore` a priority's (name, flags, ``pre_score``, ``score``, ``normalize``). The scalar
form is the reference the vector forms are compared with (tests/property/test_vector_scalar.py,
tests/property/test_fuzz_requests.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from podium.actors.framework.interface import (
    FilterPlugin,
    ReasonMasks,
    ScorePlugin,
    Skip,
    Status,
    status_of,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot

__all__ = ["ScalarFilter", "ScalarScore", "reasons_of"]

M = TypeVar("M")


def reasons_of(masks: ReasonMasks, row: int) -> tuple[str, ...]:
    """The reasons node ``row`` fails, from a predicate's ``ReasonMasks``: the filter stage's own
    reading (actors/framework/interface.py ``status_of``), reasons only."""
    return status_of(masks, row).reasons


class ScalarFilter(FilterPlugin[M]):
    """A predicate with its vector form hidden: the same contract, pre_filter and filter."""

    def __init__(self, inner: FilterPlugin[M]) -> None:
        self.inner = inner
        self.name = inner.name
        self.node_local = inner.node_local
        self.missing_node = inner.missing_node

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> M | Skip:
        return self.inner.pre_filter(pod, snapshot)

    def filter(self, pod: PodInfo, meta: M, node: NodeInfo) -> Status:
        return self.inner.filter(pod, meta, node)


class ScalarScore(ScorePlugin[M]):
    """A priority with its vector form hidden: the same contract, pre_score, score, normalize."""

    def __init__(self, inner: ScorePlugin[M]) -> None:
        self.inner = inner
        self.name = inner.name
        self.node_local = inner.node_local

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> M | Skip:
        return self.inner.pre_score(pod, snapshot, nodes)

    def score(self, pod: PodInfo, meta: M, node: NodeInfo) -> int:
        return self.inner.score(pod, meta, node)

    def normalize(
        self, pod: PodInfo, meta: M | Skip, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return self.inner.normalize(pod, meta, nodes, scores)
