"""NodeAffinityPriority, scalar and vector map forms, with its NormalizeReduce(10, false).

Rows ported from pkg/scheduler/algorithm/priorities/node_affinity_test.go@v1.14.0
(TestNodeAffinityPriority: 4 of 4 rows), names kept (typos included); plus Podium rows
(marked below) for v1.14's reading of a term through NodeSelectorRequirementsAsSelector.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pytest
from builders import make_node, make_pod
from priority_harness import run_priority

from podium.actors.framework.interface import SKIP, PluginArgs, PredicateError, VectorScorePlugin
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.node_affinity import FACTORIES, NodeAffinity
from podium.protocol import objects as o

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    r: dict[str, Any] = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return r


def term(
    weight: int, *exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    pref: dict[str, Any] = {}
    if exprs:
        pref["matchExpressions"] = list(exprs)
    if fields is not None:
        pref["matchFields"] = fields
    return {"weight": weight, "preference": pref}


def preferring(*terms: dict[str, Any]) -> o.Pod:
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(terms)}}
    return make_pod("p").affinity(affinity).obj()


def nodes(*spec: tuple[str, dict[str, str]]) -> tuple[o.Node, ...]:
    return tuple(make_node(name).labels(labels).obj() for name, labels in spec)


AFFINITY1 = (term(2, req("foo", "In", "bar")),)
AFFINITY2 = (
    term(2, req("foo", "In", "bar")),
    term(4, req("key", "In", "value")),
    term(5, req("foo", "In", "bar"), req("key", "In", "value"), req("az", "In", "az1")),
)


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    want: tuple[int, ...]


# node_affinity_test.go@v1.14.0 TestNodeAffinityPriority (4 rows).
GO_CASES = [
    Case(
        "all machines are same priority as NodeAffinity is nil",
        make_pod("p").obj(),
        nodes(("machine1", LABEL1), ("machine2", LABEL2), ("machine3", LABEL3)),
        (0, 0, 0),
    ),
    Case(
        "no machine macthes preferred scheduling requirements in NodeAffinity of pod so all machines' priority is zero",
        preferring(*AFFINITY1),
        nodes(("machine1", LABEL4), ("machine2", LABEL2), ("machine3", LABEL3)),
        (0, 0, 0),
    ),
    Case(
        "only machine1 matches the preferred scheduling requirements of pod",
        preferring(*AFFINITY1),
        nodes(("machine1", LABEL1), ("machine2", LABEL2), ("machine3", LABEL3)),
        (10, 0, 0),
    ),
    Case(
        "all machines matches the preferred scheduling requirements of pod but with different priorities ",
        preferring(*AFFINITY2),
        nodes(("machine1", LABEL1), ("machine5", LABEL5), ("machine2", LABEL2)),
        (1, 10, 3),
    ),
]

THREE = nodes(("machine1", LABEL1), ("machine2", LABEL2), ("machine3", {"n": "7"}))

# Podium rows.
PODIUM_CASES = [
    Case(
        "a term of weight 0 is skipped, even an invalid one",
        preferring(term(0, req("foo", "In")), term(3, req("foo", "Exists"))),
        THREE,
        (10, 0, 0),
    ),
    Case(
        "matchFields are ignored: a term with only matchFields matches no node",
        preferring(
            term(4, fields=[req("metadata.name", "In", "machine1")]), term(1, req("key", "Exists"))
        ),
        THREE,
        (0, 10, 0),
    ),
    Case(
        "a term without matchExpressions matches no node",
        preferring(term(4), term(1, req("n", "Exists"))),
        THREE,
        (0, 0, 10),
    ),
    Case(
        "NotIn and DoesNotExist match a node without the key",
        preferring(term(1, req("foo", "NotIn", "bar")), term(2, req("key", "DoesNotExist"))),
        THREE,
        (6, 3, 10),  # raw 2, 1, 3
    ),
    Case(
        "Gt and Lt compare integers; a missing or non-integer label does not match",
        preferring(
            term(6, req("n", "Gt", "6"), req("n", "Lt", "8")), term(3, req("foo", "Gt", "1"))
        ),
        THREE,
        (0, 0, 10),
    ),
    Case(
        "matchFields do not stop matchExpressions from matching",
        preferring(
            term(5, req("foo", "In", "bar"), fields=[req("metadata.name", "In", "elsewhere")])
        ),
        THREE,
        (10, 0, 0),
    ),
]


@pytest.mark.parametrize("case", GO_CASES + PODIUM_CASES, ids=attrgetter("name"))
def test_node_affinity_priority(case: Case) -> None:
    run = run_priority(NodeAffinity(PluginArgs(names.NODE_AFFINITY)), case.pod, case.nodes)
    assert tuple(run.final) == case.want
    assert run.vector_raw == run.raw
    assert run.vector_final == run.final


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (req("foo", "In"), "for 'in', 'notin' operators, values set can't be empty"),
        (req("foo", "NotIn"), "for 'in', 'notin' operators, values set can't be empty"),
        (req("foo", "Exists", "x"), "values set must be empty for exists and does not exist"),
        (req("foo", "Gt", "1", "2"), "for 'Gt', 'Lt' operators, exactly one value is required"),
        (req("foo", "Lt", "one"), "for 'Gt', 'Lt' operators, the value must be an integer"),
        (req("bad key!", "Exists"), "invalid label key 'bad key!'"),
        (req("foo", "In", "bad value!"), "invalid label value: 'bad value!'"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_an_invalid_requirement_fails_the_attempt(
    requirement: dict[str, Any], message: str
) -> None:
    # v1.14 returns NodeSelectorRequirementsAsSelector's error from the map function.
    pod = preferring(term(1, req("foo", "Exists")), term(2, requirement))
    with pytest.raises(PredicateError, match="^" + message.replace("(", r"\(") + "$"):
        run_priority(NodeAffinity(PluginArgs(names.NODE_AFFINITY)), pod, THREE)


def test_no_preferred_terms_skips() -> None:
    plugin = NodeAffinity(PluginArgs(names.NODE_AFFINITY))
    required: dict[str, Any] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
    }
    for pod in (make_pod("a").obj(), make_pod("b").affinity({"nodeAffinity": required}).obj()):
        assert plugin.pre_score(PodInfo(pod), Snapshot([]), []) is SKIP


def test_factory_uses_the_entry_name() -> None:
    plugin = FACTORIES[names.NODE_AFFINITY](PluginArgs(names.NODE_AFFINITY))
    assert isinstance(plugin, VectorScorePlugin)
    assert plugin.name == names.NODE_AFFINITY
