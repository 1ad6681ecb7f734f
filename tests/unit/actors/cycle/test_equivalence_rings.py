"""Which class verdicts keep a ring (actors/cycle/equivalence.py): the least recently walked
loses it first, and a verdict dropped or replaced gives its ring up."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from podium.actors.cycle.equivalence import EquivalenceCache, Verdict
from podium.actors.cycle.generic_scheduler import _same_metas


def verdict() -> Verdict:
    return Verdict(np.ones(4, dtype=np.bool_), [], epoch=1, version=0)


def test_the_least_recently_walked_verdict_loses_its_ring() -> None:
    cache = EquivalenceCache(rings=2)
    a, b, c = verdict(), verdict(), verdict()
    cache.attach_ring(a)
    cache.attach_ring(b)
    cache.walked(a)  # b is now the one walked longest ago
    cache.attach_ring(c)
    assert a.ring is not None
    assert b.ring is None
    assert c.ring is not None


def test_a_replaced_or_dropped_verdict_gives_its_ring_up() -> None:
    cache = EquivalenceCache(size=1, rings=2)
    first = cache.store(b"k", verdict())
    cache.attach_ring(first)
    second = cache.store(b"k", verdict())  # the class's verdict made afresh
    assert first.ring is None
    cache.attach_ring(second)
    cache.store(b"other", verdict())  # past size: the least recently used verdict is dropped
    assert second.ring is None
    # Both slots are free again: two new verdicts keep theirs.
    x, y = cache.store(b"x", verdict()), verdict()
    cache.attach_ring(x)
    cache.attach_ring(y)
    assert x.ring is not None and y.ring is not None


@dataclass
class _Matrix:
    matrix: np.ndarray


def test_metadata_holding_arrays_counts_as_changed_rather_than_raising() -> None:
    same = _Matrix(np.zeros((2, 2)))
    assert _same_metas([same, 1], [same, 1])
    assert not _same_metas([_Matrix(np.zeros((2, 2)))], [_Matrix(np.zeros((2, 2)))])
    assert not _same_metas([1], [2])
    assert not _same_metas([1], [1, 2])
