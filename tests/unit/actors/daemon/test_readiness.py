"""The readiness gate alone: what ``/readyz`` lists, in its order, over a fake runtime and a
fake gateway (kube-scheduler's readyz checks: ``shutdown``, ``sched-handler-sync``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

import pytest

from podium.actors.daemon.readiness import Readiness


@dataclass
class FakeRuntime:
    stopped: list[str] = field(default_factory=list)

    def not_running(self) -> list[str]:
        return list(self.stopped)


@dataclass
class FakeGateway:
    recovered: bool

    @property
    def ready(self) -> bool:
        return self.recovered


@dataclass(frozen=True)
class Case:
    name: str
    gateway: FakeGateway | None
    stopped: tuple[str, ...] = ()
    stopping: bool = False
    want: tuple[str, ...] = ()


CASES = [
    Case("before the gateway serves", None, want=("store not recovered",)),
    Case(
        "the hub has not the store's state yet", FakeGateway(False), want=("store not recovered",)
    ),
    Case("recovered and every actor running", FakeGateway(True)),
    Case(
        "an actor stopped",
        FakeGateway(True),
        stopped=("binder",),
        want=("actor binder not running",),
    ),
    Case(
        "the store stopped after a failed commit",
        FakeGateway(True),
        stopped=("store", "scheduler"),
        want=("actor store not running", "actor scheduler not running"),
    ),
    Case("shutting down", FakeGateway(True), stopping=True, want=("podium is shutting down",)),
    Case(
        "everything at once, in order",
        FakeGateway(False),
        stopped=("cache",),
        stopping=True,
        want=("podium is shutting down", "store not recovered", "actor cache not running"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_readiness_lists_each_problem(case: Case) -> None:
    readiness = Readiness(FakeRuntime(list(case.stopped)))
    readiness.gateway = case.gateway
    if case.stopping:
        readiness.stop()
    assert readiness() == list(case.want)
    assert readiness.stopping is case.stopping


def test_it_follows_the_runtime_and_the_gateway_as_they_change() -> None:
    runtime, gateway = FakeRuntime(), FakeGateway(False)
    readiness = Readiness(runtime)
    assert readiness() == ["store not recovered"]
    readiness.gateway = gateway
    assert readiness() == ["store not recovered"]
    gateway.recovered = True
    assert readiness() == []
    runtime.stopped.append("queue")
    assert readiness() == ["actor queue not running"]


def test_the_role_is_empty_without_leader_election_and_asked_each_time() -> None:
    assert Readiness(FakeRuntime()).role() == ""
    roles = iter([" (follower; no replica leads)", " (leader a)"])
    readiness = Readiness(FakeRuntime(), lambda: next(roles))
    assert readiness.role() == " (follower; no replica leads)"
    assert readiness.role() == " (leader a)"
