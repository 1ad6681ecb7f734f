"""What the fuzz tests feed the protocol: valid requests of every kind (the seeds), values of any
type (some nested thousands of levels deep, some numbers no decoder holds untyped), and seeds
after one to three mutations; and :func:`fuzz`, the settings of the short (CI) and long forms.

Shared by tests/property/test_fuzz_frames.py (the codecs) and tests/e2e/test_fuzz_daemon.py (a
real daemon), so both send the same kinds of frames.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import msgspec
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = [
    "CLAIM",
    "CLASS",
    "DECODER_DEPTH",
    "DEEP",
    "ENCODINGS",
    "EXAMPLES",
    "NODE",
    "NUMBERS",
    "PDB",
    "PLAIN_VALUES",
    "POD",
    "POD_GROUP",
    "SCALARS",
    "SEEDS",
    "SHALLOW_DEPTH",
    "STORAGE",
    "STRINGS",
    "TAGS",
    "VALUES",
    "BigNumber",
    "Deep",
    "Mutated",
    "Path",
    "encode",
    "fuzz",
    "mutated_requests",
]


EXAMPLES = int(os.environ.get("PODIUM_FUZZ_EXAMPLES", "0"))
"""0: the short CI form; otherwise the number of examples of each fuzz test."""


def fuzz(short: int) -> settings:
    """``short`` examples in CI, the same ones every run (CI must not fail by the luck of the
    draw: exploring is the long form's job); PODIUM_FUZZ_EXAMPLES random ones in the long form."""
    return settings(
        max_examples=EXAMPLES or short,
        derandomize=not EXAMPLES,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )


ENCODINGS = ("json", "msgpack")

# --------------------------------------------------------------------------- seeds

POD: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
    "spec": {
        "containers": [
            {
                "name": "c",
                "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": 1}},
                "ports": [{"containerPort": 80, "hostPort": 8080}],
            }
        ],
        "nodeSelector": {"disk": "ssd"},
        "priority": 5,
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": "zone",
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": "app", "operator": "In", "values": ["web"]}
                            ]
                        },
                    }
                ]
            }
        },
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    },
}
NODE: dict[str, Any] = {
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"zone": "a"}},
    "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"cpu": "4", "memory": "16Gi", "pods": 110},
        "conditions": [{"type": "Ready", "status": "True"}],
        "images": [{"names": ["nginx"], "sizeBytes": 1000}],
    },
}
PDB: dict[str, Any] = {
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "b", "namespace": "shop"},
    "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
}
CLASS: dict[str, Any] = {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100}
POD_GROUP: dict[str, Any] = {
    "kind": "PodGroup",
    "apiVersion": "scheduling.k8s.io/v1alpha2",
    "metadata": {"name": "train", "namespace": "shop"},
    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
}
CLAIM: dict[str, Any] = {
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data", "namespace": "shop"},
    "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}},
}
STORAGE: dict[str, Any] = {
    "kind": "StorageClass",
    "metadata": {"name": "fast"},
    "volumeBindingMode": "WaitForFirstConsumer",
}

SEEDS: list[dict[str, Any]] = [
    {"msg": "put", "id": 1, "objects": [POD, NODE, PDB, CLASS, CLAIM, STORAGE, POD_GROUP]},
    {"msg": "delete", "id": 2, "refs": [{"kind": "Pod", "name": "web-1", "namespace": "shop"}]},
    {"msg": "get", "id": 3, "kind": "Pod", "namespace": "shop", "label_selector": "app=web"},
    {"msg": "watch", "id": 4, "from_revision": 0, "kinds": ["Pod"]},
    {"msg": "cancel", "id": 5, "target": 4},
    {"msg": "explain", "id": 6, "name": "web-1", "namespace": "shop"},
    {"msg": "simulate", "id": 7, "pod": POD, "explain": True},
    {"msg": "reload_policy", "id": 8},
    {"msg": "stats", "id": 9},
]
TAGS = frozenset({"msg", "kind"})

# --------------------------------------------------------------------------- values

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Deep:
    """Nesting ``depth`` levels deep, written straight into the payload (no recursion)."""

    depth: int
    as_map: bool = False


def _decoder_depth() -> int:
    """A nesting depth msgspec cannot decode on this interpreter (a power of two).

    msgspec's recursion guard is Python's recursion limit on 3.11 (about 1000 levels, less the
    caller's stack) and the C recursion limit from 3.12 on (about 10 000 levels): a payload
    between the two decodes on one and not the other.
    """
    depth = 500
    while True:
        for payload in (b"[" * depth + b"]" * depth, b"\x91" * depth + b"\x00"):
            try:
                (msgspec.json if payload[:1] == b"[" else msgspec.msgpack).decode(payload)
            except RecursionError:
                continue
            break
        else:
            return depth
        depth *= 2


SHALLOW_DEPTH = 200
"""Nesting every interpreter decodes, whatever the caller's stack."""
DECODER_DEPTH: int = _decoder_depth()
"""Deeper than this interpreter decodes, in any caller: a deeper stack only lowers the guard
(but Hypothesis raises Python's recursion limit while its tests run)."""


@dataclass(frozen=True)
class BigNumber:
    """A JSON number msgspec cannot hold untyped (msgpack gets the largest it can carry)."""

    text: str


def _raw(value: Any, encoding: str) -> Any:
    """The tree with its Deep/BigNumber leaves as msgspec.Raw of the encoding."""
    if isinstance(value, Deep):
        if encoding == "json":
            opening, closing = (b'{"a":', b"}") if value.as_map else (b"[", b"]")
            return msgspec.Raw(opening * value.depth + b"0" + closing * value.depth)
        opening = b"\x81\xa1a" if value.as_map else b"\x91"
        return msgspec.Raw(opening * value.depth + b"\x00")
    if isinstance(value, BigNumber):
        if encoding == "json":
            return msgspec.Raw(value.text.encode())
        return float("inf") if "e" in value.text.lower() else 2**64 - 1
    if type(value) is int and not -(2**63) <= value <= 2**64 - 1:
        # msgpack carries 64-bit integers; JSON gets the digits as written.
        if encoding == "json":
            return msgspec.Raw(str(value).encode())
        return -(2**63) if value < 0 else 2**64 - 1
    if isinstance(value, dict):
        return {k: _raw(v, encoding) for k, v in value.items()}
    if isinstance(value, list):
        return [_raw(v, encoding) for v in value]
    return value


def encode(value: Any, encoding: str) -> bytes:
    tree = _raw(value, encoding)
    if encoding == "json":
        return msgspec.json.encode(tree)
    return msgspec.msgpack.encode(tree)


NUMBERS = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64 - 1),
    st.sampled_from([0, -1, 2**63 - 1, 2**63, 2**64 - 1, -(2**63), 10**18]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["1e999", "-1e999", "9" * 30, "-" + "9" * 30, "1E+400", "9" * 5000]).map(
        BigNumber
    ),
)
STRINGS = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "",
            "1e999",
            "-1",
            "9999999999999999999Ei",
            "1" * 200,
            "0.0000000001",
            "NaN",
            "50%",
            "101%",
            "In",
            "Gt",
            "Pod",
            "Node",
            "put",
            "x" * 50_000,
        ]
    ),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, STRINGS)
PLAIN_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(STRINGS, inner, max_size=4)
    ),
    max_leaves=12,
)
DEEP = st.builds(
    Deep,
    # Whether a few hundred to a few thousand levels decode depends on the recursion limit
    # and on how deep the caller's stack already is (msgspec stops at Python's recursion
    # limit, which Hypothesis raises by 2000 while a test runs): the daemon and a test would
    # disagree. So: shallow, or deeper than any caller decodes.
    st.integers(1, SHALLOW_DEPTH)
    | st.integers(max(5000, DECODER_DEPTH), max(8000, DECODER_DEPTH + 3000)),
    st.booleans(),
)
VALUES = st.integers(0, 9).flatmap(lambda pick: DEEP if pick == 0 else PLAIN_VALUES)
"""Any value; one in ten is a deep nesting."""


def _paths(value: Any, prefix: Path = ()) -> list[Path]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, (*prefix, index)))
    return out


def _replace(value: Any, path: Path, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(copy[head], rest, new)  # type: ignore[index]
    return copy


def _remove(value: Any, path: Path) -> Any:
    if len(path) == 1:
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if k != path[0]}
        return [v for i, v in enumerate(value) if i != path[0]]
    head = path[0]
    if isinstance(value, dict):
        return {**value, head: _remove(value[head], path[1:])}
    copy = list(value)
    copy[head] = _remove(copy[head], path[1:])  # type: ignore[index]
    return copy


def _at(value: Any, path: Path) -> Any:
    for step in path:
        value = value[step]
    return value


@dataclass
class Mutated:
    """A seed request after its mutations, and where they happened."""

    value: Any
    paths: list[Path] = field(default_factory=list)
    touched_tag: bool = False


@st.composite
def mutated_requests(draw: st.DrawFn) -> Mutated:
    seed = draw(st.sampled_from(SEEDS))
    out = Mutated(seed)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(out.value)
        path = draw(st.sampled_from(paths))
        target = _at(out.value, path)
        action = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        if action == "remove" and path:
            out.value = _remove(out.value, path)
            if isinstance(path[-1], int):
                path = path[:-1]  # later elements moved up: the list is what changed
        elif action == "add" and isinstance(target, dict):
            key = draw(STRINGS)
            out.value = _replace(out.value, path, {**target, key: draw(VALUES)})
            path = (*path, key)
        else:
            out.value = _replace(out.value, path, draw(VALUES))
        out.paths.append(path)
        # A changed tag makes the rest of its map read as another struct: errors may be
        # anywhere in it.
        out.touched_tag |= any(step in TAGS for step in path)
    return out
