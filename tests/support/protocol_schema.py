"""JSON Schema validators for wire messages, for any test (``tests/`` is on ``sys.path``)::

    from protocol_schema import schema_validator

    schema_validator("ServerMessage").validate(json.loads(payload))

The validators are built from ``podium.protocol.schema.protocol_schema()`` (what
``podium protocol schema`` prints); jsonschema is a test-only dependency.
:func:`message_examples` gives at least one example of every wire message, for round-trip and
schema tests (``entry_point(msg)`` names the schema entry each belongs to).
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import msgspec

from podium.protocol import objects as o
from podium.protocol import wire as w
from podium.protocol.schema import ENTRY_POINTS, protocol_schema

__all__ = ["ENTRY_POINTS", "entry_point", "message_examples", "schema_validator"]


@functools.cache
def _document() -> dict[str, Any]:
    return protocol_schema()


@functools.cache
def schema_validator(entry: str) -> jsonschema.Draft202012Validator:
    """A draft 2020-12 validator for one entry point of the protocol schema.

    Args:
        entry: ``"ClientMessage"``, ``"ServerMessage"``, ``"Hello"`` or ``"HelloReply"``.

    Raises:
        ValueError: an unknown entry point.
    """
    if entry not in ENTRY_POINTS:
        raise ValueError(f"unknown schema entry {entry!r}; expected one of {ENTRY_POINTS}")
    document = _document()
    return jsonschema.Draft202012Validator(
        {"$schema": document["$schema"], "$ref": f"#/$defs/{entry}", "$defs": document["$defs"]}
    )


# --------------------------------------------------------------------------- examples


def _obj(cls: type[Any], data: dict[str, Any]) -> Any:
    return msgspec.convert(data, cls, dec_hook=o.dec_hook)


def _pod(name: str, **spec: Any) -> o.Pod:
    return _obj(
        o.Pod,
        {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx:1.17",
                        # Quantities in several forms: each must come back as written.
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "1.5Gi"},
                            "limits": {"cpu": "2e3", "memory": 2147483648},
                        },
                        "ports": [{"containerPort": 80, "hostPort": 8080}],
                    }
                ],
                **spec,
            },
        },
    )


def _node(name: str) -> o.Node:
    return _obj(
        o.Node,
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": {"zone": "a"}},
            "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
            "status": {
                "capacity": {"cpu": "4", "memory": "32Gi", "pods": 110},
                "allocatable": {"cpu": "3900m", "memory": "31Gi", "pods": "110"},
            },
        },
    )


def _objects() -> list[o.KubeObject]:
    meta = {"name": "x", "namespace": "default"}
    selector = {"matchLabels": {"app": "web"}}
    return [
        _node("node-1"),
        _pod("web-1", priority=10, tolerations=[{"key": "gpu", "operator": "Exists"}]),
        _obj(
            o.PersistentVolume,
            {
                "kind": "PersistentVolume",
                "metadata": {"name": "pv"},
                "spec": {"capacity": {"storage": "10Gi"}},
            },
        ),
        _obj(
            o.PersistentVolumeClaim,
            {
                "kind": "PersistentVolumeClaim",
                "metadata": meta,
                "spec": {"resources": {"requests": {"storage": "1Gi"}}},
            },
        ),
        _obj(o.StorageClass, {"kind": "StorageClass", "metadata": {"name": "fast"}}),
        _obj(
            o.Service, {"kind": "Service", "metadata": meta, "spec": {"selector": {"app": "web"}}}
        ),
        _obj(
            o.ReplicationController,
            {
                "kind": "ReplicationController",
                "metadata": meta,
                "spec": {"selector": {"app": "web"}},
            },
        ),
        _obj(
            o.ReplicaSet, {"kind": "ReplicaSet", "metadata": meta, "spec": {"selector": selector}}
        ),
        _obj(
            o.StatefulSet, {"kind": "StatefulSet", "metadata": meta, "spec": {"selector": selector}}
        ),
        _obj(
            o.PriorityClass, {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
        ),
    ]


def _placement(explain: bool) -> w.Placement:
    nodes = (
        {
            "node-1": w.NodeVerdict(fits=True, scores={"LeastRequestedPriority": 7}, total=7),
            "node-2": w.NodeVerdict(fits=False, reasons=["Insufficient cpu"]),
        }
        if explain
        else {}
    )
    return w.Placement(
        namespace="default", name="web-1", node="node-1", message=None, attempts=1, nodes=nodes
    )


def _status(action: Any) -> w.ObjectStatus:
    return w.ObjectStatus(
        kind="Pod",
        namespace="default",
        name="web-1",
        uid="u-1",
        resource_version="7",
        action=action,
    )


def message_examples() -> list[Any]:
    """At least one example of every wire message (handshake, requests, replies, errors), with
    every kind of object and quantities written in several forms. Fresh objects each call."""
    objects = _objects()
    pod = objects[1]
    return [
        w.Hello(protocol=1),
        w.Hello(protocol=1, encoding="json", token="s3cret"),
        w.HelloReply(protocol=1, server_version="0.1.0", revision=42),
        w.Put(id=1, objects=objects),
        w.Delete(
            id=2, refs=[w.ObjectRef(kind="Pod", name="web-1"), w.ObjectRef(kind="Node", name="n")]
        ),
        w.Get(id=3, kind="Pod"),
        w.Get(
            id=4, kind="Pod", name="web-1", namespace="default", label_selector="app=web,!legacy"
        ),
        w.Get(id=4, kind="Pod", namespace=None, limit=500, continue_="kwEsp1BvZKdkZWZhdWx0oWE"),
        w.Watch(id=5),
        w.Watch(id=6, from_revision=40, kinds=["Pod", "Node"]),
        w.Cancel(id=7, target=5),
        w.Explain(id=8, name="web-1"),
        w.Explain(id=8, name="train", namespace="ml", kind="PodGroup"),
        w.Simulate(id=9, pod=pod, explain=True),
        w.ReloadPolicy(id=10),
        w.Stats(id=11),
        w.PutReply(id=1, revision=43, objects=[_status("created"), _status("unchanged")]),
        w.DeleteReply(id=2, revision=44, objects=[_status("deleted")]),
        w.GetReply(id=3, revision=44, items=objects),
        w.GetReply(id=4, revision=44, items=objects[:1], continue_="kwEs", remaining=1200),
        w.WatchReply(id=5, revision=44),
        w.Event(
            id=5,
            revision=45,
            type="Added",
            kind="Pod",
            namespace="default",
            name="web-1",
            object=pod,
        ),
        w.Event(
            id=5,
            revision=46,
            type="Bound",
            kind="Pod",
            namespace="default",
            name="web-1",
            object=pod,
            node="node-1",
        ),
        w.Event(
            id=5,
            revision=47,
            type="Unschedulable",
            kind="Pod",
            namespace="default",
            name="web-2",
            message="0/3 nodes are available: 3 Insufficient cpu.",
        ),
        w.Event(
            id=5,
            revision=48,
            type="Deleted",
            kind="Node",
            namespace="",
            name="node-1",
            object=objects[0],
        ),
        w.CancelReply(id=7),
        w.ExplainReply(
            id=8,
            revision=48,
            placement=_placement(True),
            hints=[w.Hint(resource="cpu", missing="200m", nodes=3)],
        ),
        w.ExplainGroupReply(
            id=8,
            revision=48,
            group=w.GroupPlacement(
                namespace="ml",
                name="train",
                policy="gang",
                min_count=2,
                bound=0,
                needed=2,
                fit=1,
                placed=False,
                message="pod group ml/train: 1 of 2 members fit, minCount 2; ml/w1: ...",
                members=[_placement(True), _placement(False)],
                blocking=["ml/w1"],
                hints={"ml/w1": [w.Hint(resource="cpu", missing="1", nodes=2)]},
                preempted=["batch/v0"],
            ),
        ),
        w.SimulateReply(id=9, revision=48, placement=_placement(False)),
        w.ReloadPolicyReply(
            id=10,
            predicates=["PodFitsResources", "MatchNodeSelector"],
            priorities=[w.PriorityWeight(name="LeastRequestedPriority", weight=1)],
            warnings=["predicate CheckNodeCondition is deprecated"],
        ),
        w.StatsReply(
            id=11,
            revision=48,
            ready=True,
            nodes=3,
            pods=10,
            bound=7,
            assumed=1,
            pending=w.PendingCounts(active=1, backoff=1, unschedulable=1),
            scheduled=8,
            unschedulable=2,
            errors=0,
            connections=1,
            watchers=1,
            uptime_seconds=12.5,
        ),
        w.ErrorReply(id=-1, code="too_large", message="frame of 20000000 bytes exceeds the limit"),
        w.ErrorReply(
            id=5, code="gone", message="revision 3 is gone; the oldest kept is 40", revision=40
        ),
        w.ErrorReply(
            id=1,
            code="invalid",
            message="1 object rejected",
            errors=[
                w.ObjectError(
                    index=0,
                    kind="Pod",
                    namespace="default",
                    name="web-1",
                    path="$.spec.containers[0].resources.requests['cpu']",
                    message="quantity '1x' does not match the Kubernetes quantity grammar",
                )
            ],
        ),
        w.ErrorReply(id=12, code="not_found", message="pod default/web-9 not found", path="$.name"),
    ]


def entry_point(msg: Any) -> str:
    """The schema entry point a message belongs to."""
    if isinstance(msg, w.Hello | w.HelloReply):
        return type(msg).__name__
    return "ClientMessage" if isinstance(msg, w.Request) else "ServerMessage"
