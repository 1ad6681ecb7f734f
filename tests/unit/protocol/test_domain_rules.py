"""The domain rules protocol/objects.py gives one home: the default namespace, a pod's key, and
whether a pod holds resources."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import PodBuilder, make_pod

from podium.protocol.objects import (
    holds_resources,
    is_terminal,
    namespace_or_default,
    namespaced_key,
    pod_key,
    scoped_namespace,
)


@dataclass(frozen=True)
class PodCase:
    name: str
    pod: PodBuilder
    holds: bool
    terminal: bool


POD_CASES = [
    PodCase("pending pod", make_pod("p"), holds=True, terminal=False),
    PodCase("running bound pod", make_pod("p").node("n").phase("Running"), True, False),
    PodCase("succeeded pod", make_pod("p").node("n").phase("Succeeded"), False, True),
    PodCase("failed pod", make_pod("p").node("n").phase("Failed"), False, True),
    PodCase("terminating pod", make_pod("p").node("n").terminating(), False, False),
    PodCase(
        "terminating failed pod",
        make_pod("p").node("n").phase("Failed").terminating(),
        False,
        True,
    ),
]


@pytest.mark.parametrize("case", POD_CASES, ids=attrgetter("name"))
def test_holds_resources_and_is_terminal(case: PodCase) -> None:
    pod = case.pod.obj()
    assert (holds_resources(pod), is_terminal(pod)) == (case.holds, case.terminal)


@pytest.mark.parametrize(
    ("kind", "namespace", "want"),
    [
        ("Pod", "", "default"),
        ("Pod", None, "default"),
        ("Pod", "team-a", "team-a"),
        ("PodDisruptionBudget", "", "default"),
        ("PodGroup", "", "default"),
        ("PodGroup", "ml", "ml"),
        ("Node", "", ""),
        ("Node", "team-a", ""),
        ("PriorityClass", "default", ""),
    ],
)
def test_scoped_namespace(kind: str, namespace: str | None, want: str) -> None:
    assert scoped_namespace(kind, namespace) == want


def test_namespaces_and_keys_default_to_default() -> None:
    assert (namespace_or_default(""), namespace_or_default(None)) == ("default", "default")
    assert namespace_or_default("kube-system") == "kube-system"
    assert namespaced_key("", "web") == "default/web"
    assert pod_key(make_pod("web").obj()) == "default/web"
    assert pod_key(make_pod("web").ns("team-a").obj()) == "team-a/web"
