"""The store's answers as the client's wire replies.

A store refusal (:class:`~podium.store.mail.StoreFailure`) becomes an ``ErrorReply`` with the
request's id, its code, message and revision, every object's error, and the path of the one
bad field when there is exactly one; a write's result becomes a PutReply or DeleteReply.
"""

from __future__ import annotations

from podium.protocol.wire import DeleteReply, ErrorReply, PutReply, ServerMessage
from podium.store.mail import StoreFailure, WriteResult

__all__ = ["failure", "written"]


def failure(request_id: int, refused: StoreFailure) -> ErrorReply:
    """The ErrorReply to request ``request_id`` that the store refused."""
    return ErrorReply(
        id=request_id,
        code=refused.code,
        message=refused.message,
        path=refused.errors[0].path if len(refused.errors) == 1 else None,
        revision=refused.revision,
        errors=refused.errors,
        leader=refused.leader,
    )


def written(
    request_id: int, result: WriteResult | StoreFailure, kind: type[PutReply] | type[DeleteReply]
) -> ServerMessage:
    """The reply of kind ``kind`` to the write ``request_id``, or its refusal."""
    if isinstance(result, StoreFailure):
        return failure(request_id, result)
    return kind(id=request_id, revision=result.revision, objects=result.objects)
