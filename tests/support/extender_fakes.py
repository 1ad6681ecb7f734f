"""v1.14's fake extenders (pkg/scheduler/core/extender_test.go@v1.14 ``FakeExtender``) behind an
httpx ``MockTransport``, and one decision with extenders, as the actors chain it.

A :class:`FakeExtender` answers the filter and prioritize verbs with the Go test's predicate
and prioritizer functions (``truePredicateExtender``, ``machine1PrioritizerExtender``, ...),
over the real request and reply JSON: the scheduler's code under test encodes its request and
decodes the reply exactly as it does with a network extender. :func:`mock_transport` routes each
extender's URL prefix to its fake.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec
from extender_server import node_names

from podium.actors.cycle.extenders import Call, Extenders
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.protocol.extender import ExtenderConfig, ExtenderManagedResource

__all__ = [
    "ERROR",
    "FALSE",
    "TRUE",
    "FakeExtender",
    "decide_with_extenders",
    "error_prioritizer",
    "machine_predicate",
    "machine_prioritizer",
    "mock_transport",
]

Predicate = Callable[[str], bool | None]
"""node -> fits (None: the Go predicate's error)."""
Prioritizer = Callable[[str], int | None]
"""node -> score (None: the Go prioritizer's error)."""


def TRUE(node: str) -> bool | None:
    return True


def FALSE(node: str) -> bool | None:
    return False


def ERROR(node: str) -> bool | None:
    return None


def machine_predicate(name: str) -> Predicate:
    """``machine1PredicateExtender``: only ``name`` fits."""
    return lambda node: node == name


def machine_prioritizer(name: str) -> Prioritizer:
    """``machine1PrioritizerExtender``: 10 for ``name``, 1 for every other node."""
    return lambda node: 10 if node == name else 1


def error_prioritizer(node: str) -> int | None:
    """``errorPrioritizerExtender``."""
    return None


@dataclass
class FakeExtender:
    """v1.14's FakeExtender: predicates (all must pass), prioritizers with weights (the reply
    is their weighted sum per node), the extender's own weight, uninterested, ignorable."""

    url: str
    predicates: Sequence[Predicate] = ()
    prioritizers: Sequence[tuple[Prioritizer, int]] = ()
    weight: int = 1
    uninterested: bool = False
    ignorable: bool = False
    node_cache_capable: bool = True
    calls: list[str] = field(default_factory=list)

    def config(self) -> ExtenderConfig:
        return ExtenderConfig(
            url_prefix=self.url,
            filter_verb="filter",
            prioritize_verb="prioritize",
            weight=self.weight,
            node_cache_capable=self.node_cache_capable,
            # The pods of the table ask for nothing: a managed resource makes it uninterested.
            managed_resources=(
                [ExtenderManagedResource(name="example.com/fake")] if self.uninterested else []
            ),
            ignorable=self.ignorable,
        )

    def handle(self, verb: str, args: Any) -> httpx.Response:
        self.calls.append(verb)
        names = node_names(args)
        if verb == "filter":
            passing, failed = [], {}
            for node in names:
                fits = True
                for predicate in self.predicates:
                    verdict = predicate(node)
                    if verdict is None:
                        return httpx.Response(500)
                    if not verdict:
                        fits = False
                        break
                if fits:
                    passing.append(node)
                else:
                    failed[node] = "FakeExtender failed"
            if args.get("NodeNames") is not None:
                return httpx.Response(200, json={"NodeNames": passing, "FailedNodes": failed})
            items = [i for i in args["Nodes"]["items"] if i["metadata"]["name"] in passing]
            return httpx.Response(200, json={"Nodes": {"items": items}, "FailedNodes": failed})
        scores = dict.fromkeys(names, 0)
        for prioritizer, weight in self.prioritizers:
            for node in names:
                score = prioritizer(node)
                if score is None:
                    return httpx.Response(500)
                scores[node] += score * weight
        return httpx.Response(200, json=[{"Host": n, "Score": s} for n, s in scores.items()])


def mock_transport(fakes: Sequence[FakeExtender]) -> httpx.MockTransport:
    """One transport for every fake: the request's URL prefix picks the fake."""

    def route(request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        for fake in fakes:
            if url.startswith(fake.url):
                return fake.handle(url.rsplit("/", 1)[-1], json.loads(request.content))
        return httpx.Response(404)

    return httpx.MockTransport(route)


async def decide_with_extenders(
    filters: FilterStage,
    scores: ScoreStage,
    extenders: Extenders,
    pod: PodInfo,
    snapshot: Snapshot,
    *,
    explain: bool = False,
) -> ScheduleResult:
    """One decision as the filter actor and the score actor make it with extenders."""
    result, feasible = filters.run(pod, snapshot, explain=explain)
    result, feasible = await extenders.filter(pod, snapshot, result, feasible, explain=explain)
    if not feasible:
        return result
    extra = None
    calls: list[Call] = []
    if len(feasible) > 1 or explain:
        extra = await extenders.prioritize(pod, snapshot, feasible, calls)
    result = scores.run(pod, snapshot, result, feasible, explain=explain, extender_scores=extra)
    if calls and not result.error:
        result = msgspec.structs.replace(result, extender_calls=(*result.extender_calls, *calls))
    return result
