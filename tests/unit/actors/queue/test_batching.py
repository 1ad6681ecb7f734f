"""How many pods a batch may take (actors/queue/batching.py)."""

from __future__ import annotations

import pytest

from podium.actors.queue.batching import batch_max_pods


@pytest.mark.parametrize(
    ("nominations", "affinity_waiters", "most"),
    [(False, False, 32), (True, False, 1), (False, True, 1), (True, True, 1)],
)
def test_a_batch_holds_one_pod_while_nominations_exist_or_affinity_waiters_wait(
    nominations: bool, affinity_waiters: bool, most: int
) -> None:
    got = batch_max_pods(32, nominations=nominations, affinity_waiters=affinity_waiters)
    assert got == most
