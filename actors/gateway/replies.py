"""The store's answers as the client's wire replies.

A store refusal (:class:`~podium.store.mail.StoreFailure`) becomes an ``ErrorReply`` with the
request's id, its code, message and revision, every object's error, and the path of the one
bad field (from the request's root) when there is exactly one; a write's result becomes a PutReply or DeleteReply.
"""

from __future__ import annotations

from podium.protocol.wire import DeleteReply, ErrorReply, PutReply, ServerMessage
from podium.store.mail import StoreFailure, WriteResult

__all__ = ["failure", "written"]


def failure(request_id: int, refused: StoreFailure, *, field: str = "objects") -> ErrorReply:
    """The ErrorReply to request ``request_id`` that the store refused.

    With one refused object, the reply's ``path`` is its field from the request's root, as
    every reply's ``path`` is (``$.objects[1].spec.priorityClassName``; ``field`` names the
    request's list, ``refs`` for a delete); the entry's ``path`` is from the object.
    """
    path = None
    if len(refused.errors) == 1 and (only := refused.errors[0]).path is not None:
        path = f"$.{field}[{only.index}]{only.path.removeprefix('$')}"
    return ErrorReply(
        id=request_id,
        code=refused.code,
        message=refused.message,
        path=path,
        revision=refused.revision,
        errors=refused.errors,
        leader=refused.leader,
    )


def written(
    request_id: int, result: WriteResult | StoreFailure, kind: type[PutReply] | type[DeleteReply]
) -> ServerMessage:
    """The reply of kind ``kind`` to the write ``request_id``, or its refusal."""
    if isinstance(result, StoreFailure):
        return failure(request_id, result, field="objects" if kind is PutReply else "refs")
    return kind(id=request_id, revision=result.revision, objects=result.objects)
