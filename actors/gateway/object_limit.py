"""The object-size limit: a put's object larger than ``podium.maxObjectBytes`` is refused before
it reaches the store (docs/protocol.md "Limits", docs/reliability.md).

Kubernetes counterpart: the API server's request body limit
(staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go ``limitedReadBody``: 3 MiB,
``Request entity too large: limit is 3145728``, HTTP 413) in front of etcd's own request limit
(1.5 MiB, ``etcdserver: request is too large``). Podium measures each object as the store will
hold it (its msgpack encoding, :func:`~podium.protocol.objects.encode_msgpack`, which
store/schema.py stores), the same for every store, so one client's
object never reaches a store that cannot take it: etcd refusing a transaction used to stop the
leader, and the next leader replayed it (issue 25).

The fast path: an object's stored encoding is never more than :data:`MAX_EXPANSION` times the
frame that carried it, so a put whose frame is at most ``limit / MAX_EXPANSION`` bytes is let
through unmeasured (every put of ordinary objects); only larger frames encode their objects.
Why the bound holds: msgpack writes every map, array, key, integer, boolean and null in no
more bytes than JSON does, or than the client's own msgpack; a string costs at most 3 bytes
more (a 5-byte header for 64 KiB and over, against JSON's 2 quotes); the one token that grows
is a quantity written as a number, stored as its text: JSON's ``1e15`` (4 bytes) is stored as
``"1000000000000000.0"`` (19 bytes), msgpack's 9-byte float as up to 24, and with the key it
sits under (``"a":1e15,``, 9 bytes, against 21) that is at most 2.4 times.
"""

from __future__ import annotations

from podium.protocol.objects import encode_msgpack, scoped_namespace
from podium.protocol.wire import ClientMessage, ErrorReply, ObjectError, Put

__all__ = ["MAX_EXPANSION", "too_large"]

MAX_EXPANSION = 3
"""How many times its frame an object's stored encoding may be, at most (module docstring)."""


def too_large(msg: ClientMessage, frame_bytes: int, limit: int) -> ErrorReply | None:
    """The refusal of a put holding an object over ``limit`` bytes, or None.

    Args:
        msg: the request, decoded.
        frame_bytes: the size of the frame it came in.
        limit: ``podium.maxObjectBytes``.

    Returns:
        ``too_large`` with Kubernetes' message (``Request entity too large: limit is N``), one
        :class:`ObjectError` per object over the limit (its size in the message), and the
        object's path (``$.objects[3]``) when there is one; None when none is over.
    """
    if not isinstance(msg, Put) or frame_bytes * MAX_EXPANSION <= limit:
        return None
    message = f"Request entity too large: limit is {limit}"
    errors: list[ObjectError] = []
    for index, obj in enumerate(msg.objects):
        size = len(encode_msgpack(obj))
        if size > limit:
            kind = type(obj).__name__
            errors.append(
                ObjectError(
                    index=index,
                    kind=kind,
                    namespace=scoped_namespace(kind, obj.metadata.namespace),
                    name=obj.metadata.name,
                    path="$",
                    message=f"{message} (the object is {size} bytes)",
                )
            )
    if not errors:
        return None
    path = f"$.objects[{errors[0].index}]" if len(errors) == 1 else None
    return ErrorReply(id=msg.id, code="too_large", message=message, path=path, errors=errors)
