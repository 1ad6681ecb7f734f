"""etcd's answers, as the gateway writes them, decoded into typed Structs.

The gateway speaks proto3 JSON (etcdserver/etcdserverpb/rpc.proto): int64 fields travel as
strings (``"revision": "12"``, read back as ints by a non-strict decoder), fields at their
zero value are left out (``succeeded`` absent is false, ``kvs`` absent is none), and keys and
values are base64 (decoded once, here, into ``bytes``). Fields Podium does not read are
ignored. A reply that does not fit its Struct is a :class:`msgspec.ValidationError` whose
message names the field (``... - at `$.header.revision```); the client turns it into an
:class:`~podium.store.etcd.client.EtcdError`.
"""

from __future__ import annotations

from typing import TypeVar

import msgspec

__all__ = [
    "AuthenticateReply",
    "CompactionReply",
    "DeleteRangeResult",
    "ErrorReply",
    "KeyValue",
    "LeaseGrantReply",
    "LeaseKeepAliveReply",
    "LeaseKeepAliveResult",
    "LeaseRevokeReply",
    "PutResult",
    "RangeReply",
    "RangeResult",
    "Reply",
    "ResponseHeader",
    "ResponseOp",
    "TxnReply",
    "decode_reply",
]


class ResponseHeader(msgspec.Struct, frozen=True, kw_only=True):
    """``etcdserverpb.ResponseHeader``: the etcd revision the answer reflects."""

    revision: int


class KeyValue(msgspec.Struct, frozen=True, kw_only=True):
    """``mvccpb.KeyValue``, its key and value decoded from base64."""

    key: bytes
    value: bytes = b""
    create_revision: int = 0
    mod_revision: int = 0
    version: int = 0
    lease: int = 0


class RangeResult(msgspec.Struct, frozen=True, kw_only=True):
    """A range's keys, as a txn's ``response_range`` holds them."""

    kvs: list[KeyValue] = []
    more: bool = False
    count: int = 0


class PutResult(msgspec.Struct, frozen=True, kw_only=True):
    """A txn's ``response_put`` (nothing Podium reads)."""


class DeleteRangeResult(msgspec.Struct, frozen=True, kw_only=True):
    """A txn's ``response_delete_range``."""

    deleted: int = 0


class ResponseOp(msgspec.Struct, frozen=True, kw_only=True):
    """One of a txn's answers, in the order of its requests (one field set)."""

    response_range: RangeResult | None = None
    response_put: PutResult | None = None
    response_delete_range: DeleteRangeResult | None = None


class RangeReply(RangeResult, frozen=True, kw_only=True):
    """``/v3/kv/range``."""

    header: ResponseHeader


class TxnReply(msgspec.Struct, frozen=True, kw_only=True):
    """``/v3/kv/txn``: whether the compares held, and the answers of the branch taken."""

    header: ResponseHeader
    succeeded: bool = False
    responses: list[ResponseOp] = []


class LeaseGrantReply(msgspec.Struct, frozen=True, kw_only=True):
    """``/v3/lease/grant``: the lease and its TTL in seconds."""

    header: ResponseHeader
    id: int = msgspec.field(name="ID")
    ttl: int = msgspec.field(default=0, name="TTL")


class LeaseKeepAliveResult(msgspec.Struct, frozen=True, kw_only=True):
    """A keepalive's answer: the lease's TTL left (0 or absent: the lease is gone)."""

    id: int = msgspec.field(default=0, name="ID")
    ttl: int = msgspec.field(default=0, name="TTL")


class LeaseKeepAliveReply(msgspec.Struct, frozen=True, kw_only=True):
    """``/v3/lease/keepalive`` (a stream in gRPC; the gateway answers with one item)."""

    result: LeaseKeepAliveResult = LeaseKeepAliveResult()


class LeaseRevokeReply(msgspec.Struct, frozen=True, kw_only=True):
    """``/v3/lease/revoke``."""

    header: ResponseHeader


class CompactionReply(msgspec.Struct, frozen=True, kw_only=True):
    """``/v3/kv/compaction``."""

    header: ResponseHeader


class AuthenticateReply(msgspec.Struct, frozen=True, kw_only=True):
    """``/v3/auth/authenticate``: the token later requests carry."""

    token: str


class ErrorReply(msgspec.Struct, frozen=True, kw_only=True):
    """A refusal (grpc-gateway's error body): etcd's message, as ``message`` or ``error``."""

    message: str = ""
    error: str = ""
    code: int = 0


Reply = TypeVar(
    "Reply",
    RangeReply,
    TxnReply,
    LeaseGrantReply,
    LeaseKeepAliveReply,
    LeaseRevokeReply,
    CompactionReply,
    AuthenticateReply,
    ErrorReply,
)

_decoders: dict[type, msgspec.json.Decoder[object]] = {}


def decode_reply(reply_type: type[Reply], content: bytes) -> Reply:
    """``content`` as a ``reply_type`` (one decoder per type, made on first use).

    Raises:
        msgspec.DecodeError: not JSON, or not that reply (the message names the field).
    """
    decoder = _decoders.get(reply_type)
    if decoder is None:
        decoder = _decoders[reply_type] = msgspec.json.Decoder(reply_type, strict=False)
    reply: Reply = decoder.decode(content)  # type: ignore[assignment]  # decoded as reply_type
    return reply
