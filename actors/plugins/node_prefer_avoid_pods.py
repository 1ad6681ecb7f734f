"""NodePreferAvoidPodsPriority: keep a controller's pods off nodes that ask to avoid them.

Kubernetes counterpart: pkg/scheduler/algorithm/priorities/node_prefer_avoid_pods.go@v1.14.0
(``CalculateNodePreferAvoidPodsPriorityMap``) and pkg/apis/core/v1/helper/helpers.go
(``GetAvoidPodsFromNodeAnnotations``). A pod whose controller (its first owner reference
with ``controller: true``) is a ReplicationController or ReplicaSet scores 0 on a node whose
``scheduler.alpha.kubernetes.io/preferAvoidPods`` annotation lists that controller (same kind
and uid), and 10 everywhere else; every other pod scores 10 on every node. An annotation that
does not decode as ``v1.AvoidPods`` JSON is ignored (the node scores 10). No reduce step; the
default policy weighs this priority 10000.

The annotation is decoded as Go's ``encoding/json`` would decode it into ``v1.AvoidPods``:
keys match case-insensitively, unknown keys are ignored, ``null`` leaves a field empty, and a
value of the wrong JSON type anywhere in the known fields (or an ``evictionTime`` that is not
RFC 3339) makes the whole annotation an error. An entry without ``podController`` matches
nothing (v1.14 would dereference a nil pointer there).
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import MAX_PRIORITY, PluginArgs, VectorScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.reduce import NoReduce

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot
    from podium.protocol.objects import Pod

__all__ = [
    "FACTORIES",
    "NAME",
    "PREFER_AVOID_PODS_ANNOTATION_KEY",
    "Controller",
    "NodePreferAvoidPods",
    "avoided_controllers",
    "controller_ref",
]

NAME = names.NODE_PREFER_AVOID_PODS

PREFER_AVOID_PODS_ANNOTATION_KEY = "scheduler.alpha.kubernetes.io/preferAvoidPods"
"""``v1.PreferAvoidPodsAnnotationKey``."""

_AVOIDABLE_KINDS = frozenset({"ReplicationController", "ReplicaSet"})

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


class _Invalid(Exception):
    """The annotation does not decode as v1.AvoidPods."""


Controller = tuple[str, str] | None
"""(kind, uid) of a pod's avoidable controller, or ``None`` (every node scores 10)."""


def controller_ref(pod: Pod) -> Controller:
    """(kind, uid) of the pod's controller when it is a ReplicationController or ReplicaSet.

    ``metav1.GetControllerOf``: the first owner reference with ``controller: true``; a pod
    whose controller is of any other kind has none here.
    """
    for ref in pod.metadata.owner_references:
        if ref.controller:
            return (ref.kind, ref.uid) if ref.kind in _AVOIDABLE_KINDS else None
    return None


def _reject_constant(name: str) -> object:
    # Python's json accepts NaN and Infinity; Go's encoding/json rejects the document.
    raise _Invalid(name)


def _field(obj: dict[str, object], key: str) -> object:
    """Go's encoding/json field lookup: case-insensitive; the last matching key wins."""
    found: object = None
    folded = key.casefold()
    for k, v in obj.items():
        if k.casefold() == folded:
            found = v
    return found


def _object(value: object) -> dict[str, object] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Invalid
    return value


def _check(value: object, kind: type) -> None:
    # null is allowed everywhere; bool is not an int and vice versa in JSON.
    if value is not None and type(value) is not kind:
        raise _Invalid


def _check_time(value: object) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        raise _Invalid
    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _Invalid from None


@functools.lru_cache(maxsize=1024)
def avoided_controllers(annotation: str) -> frozenset[tuple[str, str]] | None:
    """The (kind, uid) pairs a preferAvoidPods annotation lists; ``None`` when it is invalid."""
    if annotation == "":
        return frozenset()
    try:
        top = _object(json.loads(annotation, parse_constant=_reject_constant))
        if top is None:
            return frozenset()
        entries = _field(top, "preferAvoidPods")
        if entries is None:
            return frozenset()
        if not isinstance(entries, list):
            raise _Invalid
        avoided: set[tuple[str, str]] = set()
        for raw in entries:
            entry = _object(raw)
            if entry is None:
                continue
            _check_time(_field(entry, "evictionTime"))
            _check(_field(entry, "reason"), str)
            _check(_field(entry, "message"), str)
            signature = _object(_field(entry, "podSignature"))
            controller = (
                _object(_field(signature, "podController")) if signature is not None else None
            )
            if controller is None:
                continue
            for key in ("apiVersion", "kind", "name", "uid"):
                _check(_field(controller, key), str)
            for key in ("controller", "blockOwnerDeletion"):
                _check(_field(controller, key), bool)
            kind, uid = _field(controller, "kind"), _field(controller, "uid")
            avoided.add(
                (kind if isinstance(kind, str) else "", uid if isinstance(uid, str) else "")
            )
    except (_Invalid, ValueError, RecursionError):
        return None
    return frozenset(avoided)


def _node_score(controller: tuple[str, str], annotation: str | None) -> int:
    avoided = avoided_controllers(annotation) if annotation is not None else None
    return 0 if avoided is not None and controller in avoided else MAX_PRIORITY


class NodePreferAvoidPods(NoReduce, VectorScorePlugin[Controller]):
    """NodePreferAvoidPodsPriority (map only)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> Controller:
        """The pod's avoidable controller as (kind, uid), or ``None`` (every node scores 10)."""
        return controller_ref(pod.pod)

    def score(self, pod: PodInfo, meta: Controller, node: NodeInfo) -> int:
        if meta is None or node.node is None:
            return MAX_PRIORITY
        return _node_score(
            meta, node.node.metadata.annotations.get(PREFER_AVOID_PODS_ANNOTATION_KEY)
        )

    def score_columns(
        self, pod: PodInfo, meta: Controller, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        if meta is None:
            return np.full(len(rows), MAX_PRIORITY, dtype=np.int64)
        codes, vocab = cols.annotation(PREFER_AVOID_PODS_ANNOTATION_KEY)
        # One decision per distinct annotation text; the extra last slot is "no annotation".
        table = np.full(len(vocab) + 1, MAX_PRIORITY, dtype=np.int64)
        for text, code in vocab.items():
            table[code] = _node_score(meta, text)
        return table[codes[rows]]


FACTORIES: dict[str, Callable[[PluginArgs], NodePreferAvoidPods]] = {NAME: NodePreferAvoidPods}
