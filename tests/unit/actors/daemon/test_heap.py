"""Once ready, the daemon hides what recovery loaded from the garbage collector and collects
the young generation less often (docs/benchmarks.md: "the collector after recovery")."""

from __future__ import annotations

import gc

from podium.actors.daemon.heap import GC_YOUNG_THRESHOLD, settle_heap


def test_the_recovered_heap_is_frozen_and_young_collections_are_rarer() -> None:
    before = gc.get_threshold()
    held = [[i] for i in range(1000)]  # tracked containers, as recovery leaves them
    try:
        settle_heap()
        assert gc.get_freeze_count() >= len(held)
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, before[1], before[2])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
