"""``null`` in a Kubernetes object, read as the API server reads it.

Kubernetes' JSON decoder (encoding/json, and sigs.k8s.io/json since v1.23) leaves a field whose
value is ``null`` at its zero value, which the API server's defaulting then treats as absent: a
Node with ``spec: null``, ``status:`` left empty in YAML, ``metadata: {labels: }`` or
``resources: null`` are the objects without them. In a map of strings (``labels``,
``annotations``, ``nodeSelector``, ``matchLabels``) a ``null`` value decodes as the empty string
(encoding/json: "unmarshals null into ... a string by leaving it unchanged", i.e. ``""`` for a
new map entry). Helm-rendered YAML is full of both.

msgspec refuses ``null`` for a field that is not ``Optional``. Rather than making every field
``Optional`` (and every reader test for ``None``), :func:`absent_nulls` rewrites the decoded
tree before msgspec converts it, driven by the Struct types: inside the Kubernetes-shaped
structs of :mod:`podium.protocol.objects`, a ``null``-valued field is dropped (its default
applies) and a ``null`` value of a string map becomes ``""``. Everything else, the wire's own
messages included, is left as it is.

Callers decode first and call it only when msgspec refused the tree (the loader and the
wire's framing do), so input without ``null`` pays nothing.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec.inspect as mi

from podium.protocol import objects

__all__ = ["absent_nulls"]

_KUBE_MODULE = objects.__name__


@functools.cache
def _info(tp: Any) -> mi.Type:
    return mi.type_info(tp)


_FIELDS: dict[type, dict[str, mi.Type]] = {}


def _fields(struct: mi.StructType) -> dict[str, mi.Type]:
    """A struct's fields by their encoded name (cached per class: inspect's types do not hash)."""
    fields = _FIELDS.get(struct.cls)
    if fields is None:
        fields = _FIELDS[struct.cls] = {f.encode_name: f.type for f in struct.fields}
    return fields


def absent_nulls(value: Any, tp: Any) -> Any:
    """``value`` (a tree as JSON or YAML decodes it) with Kubernetes' reading of ``null``
    applied wherever ``tp`` puts a Kubernetes-shaped struct.

    Args:
        value: the decoded tree.
        tp: the type msgspec will convert it to (a struct, a union of tagged structs, a
            wire message holding objects, ...).

    Returns:
        ``value`` itself when nothing changed (callers compare identity), else a copy with
        the changed mappings copied.
    """
    return _walk(value, _info(tp), kube=False)


def _walk(value: Any, t: mi.Type, *, kube: bool) -> Any:
    match t:
        case mi.StructType() if isinstance(value, dict):
            kube = kube or t.cls.__module__ == _KUBE_MODULE
            fields = _fields(t)
            out: dict[Any, Any] | None = None
            for key, item in value.items():
                if item is None and kube:
                    new: Any = _DROP
                elif (ft := fields.get(key)) is None or item is None:
                    continue
                else:
                    new = _walk(item, ft, kube=kube)
                    if new is item:
                        continue
                if out is None:
                    out = dict(value)
                if new is _DROP:
                    del out[key]
                else:
                    out[key] = new
            return value if out is None else out
        case mi.DictType() if isinstance(value, dict):
            strings = kube and isinstance(t.value_type, mi.StrType)
            out = None
            for key, item in value.items():
                new = "" if strings and item is None else _walk(item, t.value_type, kube=kube)
                if new is not item:
                    if out is None:
                        out = dict(value)
                    out[key] = new
            return value if out is None else out
        case mi.ListType() if isinstance(value, list):
            items = [_walk(item, t.item_type, kube=kube) for item in value]
            changed = any(new is not old for new, old in zip(items, value, strict=True))
            return items if changed else value
        case mi.UnionType():
            member = _member(value, t)
            return value if member is None else _walk(value, member, kube=kube)
        case _:
            return value


_DROP = object()


def _member(value: Any, t: mi.UnionType) -> mi.Type | None:
    """The member of a union ``value`` decodes as: the tagged struct its tag names, else the
    first struct or map (for a mapping) or list (for a list)."""
    if isinstance(value, dict):
        shaped = [m for m in t.types if isinstance(m, (mi.StructType, mi.DictType))]
        for m in shaped:
            if isinstance(m, mi.StructType) and m.tag_field is not None:
                if value.get(m.tag_field) == m.tag:
                    return m
            else:
                return m
        return None
    if isinstance(value, list):
        return next((m for m in t.types if isinstance(m, mi.ListType)), None)
    return None
