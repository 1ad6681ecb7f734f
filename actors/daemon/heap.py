"""The garbage collector once the daemon is ready (docs/benchmarks.md, "the collector after
recovery").

Kubernetes counterpart: none in the scheduler; Go's collector is tuned by ``GOGC``, which
kube-scheduler logs at start (cmd/kube-scheduler/app/server.go ``Run``: "Golang settings").
"""

from __future__ import annotations

import gc

__all__ = ["GC_YOUNG_THRESHOLD", "settle_heap"]

GC_YOUNG_THRESHOLD = 50_000
"""Allocations of tracked containers between two young collections once the daemon is ready
(CPython's default is 700). docs/benchmarks.md ("the collector after recovery") measured it."""


def settle_heap() -> None:
    """Take what recovery loaded out of the garbage collector's sight, and collect less often.

    Nearly all of a daemon's garbage is freed by reference counting (the Kubernetes objects are
    not even tracked: protocol/objects.py); the collector's passes over the young generation
    every 700 container allocations, and its full passes over every object the daemon holds,
    cost 10-20% of a loaded scheduler's CPU. Frozen objects are still freed by reference
    counting; only cycles among them would stay, and the recovered state has none.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)
