"""The store's refusals as wire replies (actors/gateway/replies.py): every reply's ``path`` is
from the request's root, an entry's from its object (docs/protocol.md, put)."""

from __future__ import annotations

from podium.actors.gateway.replies import written
from podium.protocol.wire import DeleteReply, ErrorReply, ObjectError, PutReply, ServerMessage
from podium.store.mail import StoreFailure


def _path(reply: ServerMessage) -> str | None:
    assert isinstance(reply, ErrorReply)
    return reply.path


def _error(index: int, path: str | None) -> ObjectError:
    return ObjectError(
        index=index, kind="Pod", namespace="default", name=f"p{index}", path=path, message="m"
    )


def test_one_refused_object_puts_its_path_under_the_request() -> None:
    refused = StoreFailure(
        code="invalid", message="m; nothing was written", errors=[_error(1, "$.spec.priority")]
    )
    reply = written(7, refused, PutReply)
    assert isinstance(reply, ErrorReply)
    assert (reply.id, reply.path) == (7, "$.objects[1].spec.priority")
    assert reply.errors == [_error(1, "$.spec.priority")]  # the entry's path: from the object


def test_a_delete_refusal_points_into_its_refs() -> None:
    refused = StoreFailure(code="invalid", message="m", errors=[_error(0, "$.name")])
    assert _path(written(7, refused, DeleteReply)) == "$.refs[0].name"


def test_a_refusal_without_one_field_has_no_path() -> None:
    for errors in ([_error(0, None)], [_error(0, "$.spec.priority"), _error(2, "$.spec")]):
        refused = StoreFailure(code="invalid", message="m", errors=errors)
        assert _path(written(7, refused, PutReply)) is None
