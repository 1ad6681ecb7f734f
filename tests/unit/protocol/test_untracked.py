"""Kubernetes-shaped objects stay out of the garbage collector's walks (protocol/objects.py)."""

from __future__ import annotations

import gc
import inspect

import msgspec
import pytest

from podium.protocol import objects as o

KINDS = sorted(
    (c for _, c in inspect.getmembers(o, inspect.isclass) if issubclass(c, msgspec.Struct)),
    key=lambda c: c.__name__,
)


def test_every_object_struct_is_untracked() -> None:
    assert len(KINDS) > 20
    tracked = [c.__name__ for c in KINDS if c.__struct_config__.gc]
    assert tracked == []


@pytest.mark.parametrize(
    "raw",
    [
        {
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        },
        {
            "kind": "Node",
            "metadata": {"name": "n"},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        },
    ],
    ids=["pod", "node"],
)
def test_a_decoded_object_is_untracked(raw: dict[str, object]) -> None:
    obj = msgspec.convert(raw, o.KubeObject, dec_hook=o.dec_hook)
    assert not gc.is_tracked(obj)
    assert not gc.is_tracked(obj.metadata)
