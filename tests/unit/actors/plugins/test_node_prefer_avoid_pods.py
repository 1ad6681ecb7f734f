"""NodePreferAvoidPodsPriority, scalar and vector map forms.

Rows ported from pkg/scheduler/algorithm/priorities/node_prefer_avoid_pods_test.go@v1.14.0
(TestNodePreferAvoidPriority: 4 of 4 rows), names kept; plus Podium rows (marked below) for
the annotation's decoding as Go's encoding/json does it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pytest
from builders import make_node, make_pod
from priority_harness import run_priority

from podium.actors.framework.interface import MAX_PRIORITY, PluginArgs, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.node_prefer_avoid_pods import (
    FACTORIES,
    PREFER_AVOID_PODS_ANNOTATION_KEY,
    NodePreferAvoidPods,
    avoided_controllers,
)
from podium.protocol import objects as o

MAX = MAX_PRIORITY


def avoid(kind: str, uid: str, **extra: Any) -> dict[str, Any]:
    controller = {"apiVersion": "v1", "kind": kind, "name": "foo", "uid": uid, "controller": True}
    return {
        "podSignature": {"podController": controller},
        "reason": "some reason",
        "message": "some message",
        **extra,
    }


def annotation(*entries: dict[str, Any]) -> str:
    return json.dumps({"preferAvoidPods": list(entries)}, indent=4)


ANNOTATIONS1 = annotation(avoid("ReplicationController", "abcdef123456"))
ANNOTATIONS2 = annotation(avoid("ReplicaSet", "qwert12345"))


def node(name: str, text: str | None = None) -> o.Node:
    b = make_node(name)
    if text is not None:
        b.annotation(PREFER_AVOID_PODS_ANNOTATION_KEY, text)
    return b.obj()


TEST_NODES = (node("machine1", ANNOTATIONS1), node("machine2", ANNOTATIONS2), node("machine3"))


def owned(kind: str, uid: str, controller: bool | None = True) -> o.Pod:
    ref: dict[str, Any] = {"kind": kind, "name": "foo", "uid": uid}
    if controller is not None:
        ref["controller"] = controller
    return _with_refs(ref)


def _with_refs(*refs: dict[str, Any]) -> o.Pod:
    b = make_pod("p")
    b.d["metadata"]["ownerReferences"] = list(refs)
    return b.obj()


@dataclass(frozen=True)
class Case:
    name: str
    pod: o.Pod
    nodes: tuple[o.Node, ...]
    want: tuple[int, ...]


# node_prefer_avoid_pods_test.go@v1.14.0 TestNodePreferAvoidPriority (4 rows).
GO_CASES = [
    Case(
        "pod managed by ReplicationController should avoid a node, this node get lowest priority score",
        owned("ReplicationController", "abcdef123456"),
        TEST_NODES,
        (0, MAX, MAX),
    ),
    Case(
        "ownership by random controller should be ignored",
        owned("RandomController", "abcdef123456"),
        TEST_NODES,
        (MAX, MAX, MAX),
    ),
    Case(
        "owner without Controller field set should be ignored",
        owned("ReplicationController", "abcdef123456", controller=None),
        TEST_NODES,
        (MAX, MAX, MAX),
    ),
    Case(
        "pod managed by ReplicaSet should avoid a node, this node get lowest priority score",
        owned("ReplicaSet", "qwert12345"),
        TEST_NODES,
        (MAX, 0, MAX),
    ),
]

RS = owned("ReplicaSet", "qwert12345")

# Podium rows.
PODIUM_CASES = [
    Case(
        "a pod without owners scores 10 everywhere",
        make_pod("p").obj(),
        TEST_NODES,
        (MAX, MAX, MAX),
    ),
    Case(
        "only the first controller reference counts",
        _with_refs(
            {"kind": "Job", "name": "j", "uid": "j1", "controller": True},
            {"kind": "ReplicaSet", "name": "foo", "uid": "qwert12345", "controller": True},
        ),
        TEST_NODES,
        (MAX, MAX, MAX),
    ),
    Case(
        "a non-controller owner before the controller is skipped",
        _with_refs(
            {"kind": "ReplicaSet", "name": "x", "uid": "x1", "controller": False},
            {"kind": "ReplicaSet", "name": "foo", "uid": "qwert12345", "controller": True},
        ),
        TEST_NODES,
        (MAX, 0, MAX),
    ),
    Case(
        "the kind must match as well as the uid",
        owned("ReplicationController", "qwert12345"),
        TEST_NODES,
        (MAX, MAX, MAX),
    ),
    Case(
        "an annotation that is not valid JSON is ignored",
        RS,
        (node("m1", ANNOTATIONS2[:-1]), node("m2", ANNOTATIONS2)),
        (MAX, 0),
    ),
    Case(
        "a field of the wrong type makes the whole annotation invalid",
        RS,
        (
            node("m1", annotation(avoid("ReplicaSet", "qwert12345", reason=7))),
            node("m2", annotation(avoid("ReplicaSet", "qwert12345", evictionTime="yesterday"))),
            node(
                "m3",
                annotation(avoid("ReplicaSet", "qwert12345", evictionTime="2019-03-25T10:00:00Z")),
            ),
        ),
        (MAX, MAX, 0),
    ),
    Case(
        "keys match case-insensitively and unknown keys are ignored",
        RS,
        (
            node(
                "m1",
                json.dumps(
                    {
                        "PreferAvoidPods": [
                            {
                                "PODSIGNATURE": {
                                    "podcontroller": {"Kind": "ReplicaSet", "UID": "qwert12345"}
                                },
                                "x": [1],
                            }
                        ]
                    }
                ),
            ),
        ),
        (0,),
    ),
    Case(
        "null entries and an entry without podController match nothing",
        RS,
        (
            node("m1", json.dumps({"preferAvoidPods": [None, {"podSignature": {}}]})),
            node("m2", "null"),
            node("m3", ""),
        ),
        (MAX, MAX, MAX),
    ),
]


@pytest.mark.parametrize("case", GO_CASES + PODIUM_CASES, ids=attrgetter("name"))
def test_node_prefer_avoid_priority(case: Case) -> None:
    run = run_priority(
        NodePreferAvoidPods(PluginArgs(names.NODE_PREFER_AVOID_PODS)), case.pod, case.nodes
    )
    assert tuple(run.final) == case.want
    assert run.vector_raw == run.raw
    assert run.vector_final == run.final


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("", frozenset()),
        ("{}", frozenset()),
        ('{"preferAvoidPods": null}', frozenset()),
        ('{"preferAvoidPods": {}}', None),
        ("[]", None),
        ('{"preferAvoidPods": [], "other": NaN}', None),
        (ANNOTATIONS1, frozenset({("ReplicationController", "abcdef123456")})),
    ],
)
def test_avoided_controllers(text: str, want: frozenset[tuple[str, str]] | None) -> None:
    assert avoided_controllers(text) == want


def test_factory_uses_the_entry_name() -> None:
    plugin = FACTORIES[names.NODE_PREFER_AVOID_PODS](PluginArgs(names.NODE_PREFER_AVOID_PODS))
    assert isinstance(plugin, VectorScorePlugin)
    assert plugin.name == names.NODE_PREFER_AVOID_PODS
