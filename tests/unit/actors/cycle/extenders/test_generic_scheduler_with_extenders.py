"""v1.14 ``TestGenericSchedulerWithExtenders`` (pkg/scheduler/core/extender_test.go@v1.14),
ported row by row: the Go fake extenders answer through the real request/reply JSON behind an
httpx MockTransport (tests/support/extender_fakes.py), and the filter stage, the extenders and
the score stage decide as the actors chain them. The rows keep the Go names; "machine1" and
"machine2" are the Go test's nodes.

Go's ``expectsErr`` is either an extender error (the attempt's result is error) or a FitError
(no node fits); the rows say which, and the FitError's text is Kubernetes'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pytest
from builders import make_node, make_pod
from extender_fakes import (
    ERROR,
    FALSE,
    TRUE,
    FakeExtender,
    decide_with_extenders,
    error_prioritizer,
    machine_predicate,
    machine_prioritizer,
    mock_transport,
)

from podium.actors.cycle.extenders import Extenders
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.interface import PluginArgs, ScorePlugin
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names, registry


class Machine2Prioritizer(ScorePlugin[None]):
    """extender_test.go@v1.14 ``machine2Prioritizer``: 10 for machine2, 1 for the others."""

    name = "machine2Prioritizer"
    node_local = True

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> None:
        return None

    def score(self, pod: PodInfo, meta: None, node: NodeInfo) -> int:
        return 10 if node.name == "machine2" else 1

    def normalize(
        self, pod: PodInfo, meta: Any, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return scores


def _equal() -> list[tuple[ScorePlugin[Any], int]]:
    """v1.14's rows without a priority of their own run ``EqualPriorityMap`` with weight 1."""
    plugin = registry.priority_factory(names.EQUAL_PRIORITY)(PluginArgs(names.EQUAL_PRIORITY))
    return [(plugin, 1)]


@dataclass(frozen=True)
class Case:
    name: str
    extenders: tuple[FakeExtender, ...]
    nodes: tuple[str, ...] = ("machine1", "machine2")
    machine2_prioritizer: int | None = None  # the scheduler's own priority, with this weight
    want_host: str | None = None
    want_error: str | None = None  # an extender error: the attempt's message
    want_fit_error: str | None = None
    want_calls: tuple[tuple[str, ...], ...] = ()


def _ext(i: int, **kwargs: Any) -> FakeExtender:
    return FakeExtender(url=f"http://extender-{i}.test/scheduler", **kwargs)


CASES = [
    Case(
        "test 1: an extender's filter error fails the attempt",
        (_ext(1, predicates=[TRUE]), _ext(2, predicates=[ERROR])),
        want_error="Failed filter with extender at URL http://extender-2.test/scheduler/filter, code 500",
    ),
    Case(
        "test 2: an extender that rejects every node leaves none",
        (_ext(1, predicates=[TRUE]), _ext(2, predicates=[FALSE])),
        want_fit_error="0/2 nodes are available: 2 FakeExtender failed.",
    ),
    Case(
        "test 3: the second extender narrows to machine1",
        (_ext(1, predicates=[TRUE]), _ext(2, predicates=[machine_predicate("machine1")])),
        want_host="machine1",
    ),
    Case(
        "test 4: extenders in order: the second sees only machine2 and rejects it",
        (
            _ext(1, predicates=[machine_predicate("machine2")]),
            _ext(2, predicates=[machine_predicate("machine1")]),
        ),
        want_fit_error="0/2 nodes are available: 2 FakeExtender failed.",
        want_calls=(("filter",), ("filter",)),
    ),
    Case(
        "test 5: one feasible node: no prioritize call, so its error does not matter",
        (_ext(1, predicates=[TRUE], prioritizers=[(error_prioritizer, 10)], weight=1),),
        nodes=("machine1",),
        want_host="machine1",
        want_calls=(("filter",),),
    ),
    Case(
        "test 6: extender scores times their weights decide",
        (
            _ext(
                1, predicates=[TRUE], prioritizers=[(machine_prioritizer("machine1"), 10)], weight=1
            ),
            _ext(
                2, predicates=[TRUE], prioritizers=[(machine_prioritizer("machine2"), 10)], weight=5
            ),
        ),
        want_host="machine2",
        want_calls=(("filter", "prioritize"), ("filter", "prioritize")),
    ),
    Case(
        "test 7: the scheduler's priority outweighs the extender's",
        (
            _ext(
                1, predicates=[TRUE], prioritizers=[(machine_prioritizer("machine1"), 10)], weight=1
            ),
        ),
        machine2_prioritizer=20,
        want_host="machine2",
    ),
    Case(
        "test 8: an uninterested extender is never called",
        (
            _ext(
                1,
                predicates=[ERROR],
                prioritizers=[(error_prioritizer, 10)],
                uninterested=True,
            ),
        ),
        machine2_prioritizer=1,
        want_host="machine2",
        want_calls=((),),
    ),
    Case(
        "test 9: an ignorable extender's error skips it",
        (
            _ext(1, predicates=[ERROR], ignorable=True),
            _ext(2, predicates=[machine_predicate("machine1")]),
        ),
        want_host="machine1",
    ),
    # Beyond the Go table: the prioritize error of a non-ignorable extender is ignored too.
    Case(
        "a prioritize error is always ignored (v1.14 PrioritizeNodes)",
        (
            _ext(1, predicates=[TRUE], prioritizers=[(error_prioritizer, 1)], weight=1),
            _ext(
                2, predicates=[TRUE], prioritizers=[(machine_prioritizer("machine1"), 1)], weight=1
            ),
        ),
        want_host="machine1",
    ),
]


@pytest.mark.parametrize("node_cache_capable", [True, False], ids=["node names", "nodes"])
@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
async def test_generic_scheduler_with_extenders(case: Case, node_cache_capable: bool) -> None:
    fakes = [
        FakeExtender(**{**f.__dict__, "calls": [], "node_cache_capable": node_cache_capable})
        for f in case.extenders
    ]
    snapshot = Snapshot([make_node(n).info() for n in case.nodes])
    scorers = (
        [(Machine2Prioritizer(), case.machine2_prioritizer)]
        if case.machine2_prioritizer is not None
        else _equal()
    )
    async with Extenders([f.config() for f in fakes], transport=mock_transport(fakes)) as ext:
        result = await decide_with_extenders(
            FilterStage([]), ScoreStage(scorers), ext, make_pod("pod").info(), snapshot
        )
    if case.want_error is not None:
        assert (result.error, result.message, result.node) == (True, case.want_error, None)
    elif case.want_fit_error is not None:
        assert (result.error, result.message, result.node) == (False, case.want_fit_error, None)
    else:
        assert (result.error, result.node) == (False, case.want_host)
    if case.want_calls:
        assert tuple(tuple(f.calls) for f in fakes) == case.want_calls
