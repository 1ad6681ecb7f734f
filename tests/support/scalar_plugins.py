"""Adapters that hide a plugin's vector form, so the scheduler takes its per-node path.

:class:`ScalarFilter` keeps only a predicate's name, ``pre_filter`` and ``filter``;
:class:`ScalarScore` a priority's name, ``pre_score``, ``score`` and ``normalize``. The scalar
form is the reference the vector forms are compared with (tests/property/test_vector_scalar.py,
tests/property/test_fuzz_requests.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from podium.actors.framework.interface import FilterPlugin, ScorePlugin, Status
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot

__all__ = ["ScalarFilter", "ScalarScore"]


class ScalarFilter:
    """A predicate with its vector form hidden: only name, pre_filter and filter."""

    def __init__(self, inner: FilterPlugin) -> None:
        self.inner = inner
        self.name = inner.name

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> object:
        return self.inner.pre_filter(pod, snapshot)

    def filter(self, pod: PodInfo, meta: object, node: NodeInfo) -> Status:
        return self.inner.filter(pod, meta, node)


class ScalarScore:
    """A priority with its vector form hidden: only name, pre_score, score and normalize."""

    def __init__(self, inner: ScorePlugin) -> None:
        self.inner = inner
        self.name = inner.name

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> object:
        return self.inner.pre_score(pod, snapshot, nodes)

    def score(self, pod: PodInfo, meta: object, node: NodeInfo) -> int:
        return self.inner.score(pod, meta, node)

    def normalize(
        self, pod: PodInfo, meta: object, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return self.inner.normalize(pod, meta, nodes, scores)
