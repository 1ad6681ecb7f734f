"""One decision in one call: the filter stage, then the score stage, as the actors chain them.

The filter actor runs :class:`FilterStage` and hands the feasible rows to the score actor,
which run :class:`ScoreStage`; when no node fits, the filter's result is the decision
(actors/cycle/filtering.py, actors/cycle/scoring.py). Shared by the tests that schedule a pod without
the actors.
"""

from __future__ import annotations

from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot

__all__ = ["decide"]


def decide(
    filters: FilterStage,
    scores: ScoreStage,
    pod: PodInfo,
    snapshot: Snapshot,
    *,
    explain: bool = False,
) -> ScheduleResult:
    """Where ``pod`` goes on ``snapshot`` (never mutated); advances the filter's start index."""
    result, feasible = filters.run(pod, snapshot, explain=explain)
    if not feasible:
        return result
    return scores.run(pod, snapshot, result, feasible, explain=explain)
