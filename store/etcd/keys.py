"""The store's keys in etcd and the codecs of their values.

Under the prefix (``podium/`` by default)::

    PREFIX/meta/revision                     {"schema", "revision", "applied", "writer", "n"}
    PREFIX/objects/<kind>/<namespace>/<name> the object, msgpack (as SQLite's objects.data)
    PREFIX/events/<revision, 20 digits>      one change: msgpack [type, kind, namespace, name,
                                             node, message, object]; the event log
    PREFIX/leader                            who leads, under leader election (JSON
                                             {"identity", "address"}, bound to its lease)

Event keys are zero-padded so that etcd's byte order is revision order (a range read of the
log is a read in revision order).
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass, field

import msgspec

from podium.protocol.wire import EventType
from podium.store.mail import Change
from podium.store.schema import decode_object, event_row

__all__ = [
    "LEADER_KEY",
    "SCHEMA_VERSION",
    "EventValue",
    "KeyLayout",
    "Meta",
    "decode_event",
    "decode_event_value",
    "decode_meta",
    "encode_event",
    "encode_meta",
    "prefix_end",
    "writer_identity",
]

SCHEMA_VERSION = 1
"""The key layout's version, in the meta key; a newer one is refused."""

LEADER_KEY = b"leader"
"""The leadership key under the prefix (store/etcd/election.py)."""

_DIGITS = 20


class Meta(msgspec.Struct, frozen=True, kw_only=True):
    """The meta key's value.

    Attributes:
        schema: :data:`SCHEMA_VERSION` of the Podium that wrote it.
        revision: the last committed Podium revision (the commit point).
        applied: the revision the object keys reflect (behind ``revision`` only while a
            batch too large for one transaction is being written).
        writer: :func:`writer_identity` of the daemon writing the prefix.
        n: a counter every transaction moves (a transaction whose answer was lost is found
            applied by reading it back).
    """

    schema: int
    revision: int
    applied: int
    writer: str = ""
    n: int = 0


def writer_identity(host: str | None = None, pid: int | None = None) -> str:
    """A writer's name in the meta key, ``HOST:PID_TOKEN``, never the same twice.

    The token is what makes it unique: two containers on one host name, each its PID 1, share
    ``HOST:PID``, and a writer that reads back a failed compare's meta value byte for byte as
    the one it sent takes it for its own earlier attempt (``EtcdDurability._txn``), so two
    writers with one name would each acknowledge a write at the same revision. kube-scheduler
    names itself the same way, ``hostname + "_" + uuid`` (cmd/kube-scheduler/app/options/
    options.go@v1.14, the leader-election identity).

    Args:
        host: the host name (default: this host's).
        pid: the process id (default: this process's).
    """
    host = socket.gethostname() if host is None else host
    pid = os.getpid() if pid is None else pid
    return f"{host}:{pid}_{secrets.token_hex(8)}"


_meta_decoder = msgspec.json.Decoder(Meta)
_meta_encoder = msgspec.json.Encoder()

EventValue = tuple[EventType, str, str, str, str, str, bytes]
"""An event key's value: SQLite's events row without its revision (the key holds it)."""
_event_encoder = msgspec.msgpack.Encoder()
_event_decoder = msgspec.msgpack.Decoder(EventValue)


def encode_meta(meta: Meta) -> bytes:
    """The meta key's value (JSON, so that ``etcdctl get`` shows it as it reads)."""
    return _meta_encoder.encode(meta)


def decode_meta(data: bytes) -> Meta:
    """The meta key's value read back.

    Raises:
        msgspec.DecodeError: not a meta value.
    """
    return _meta_decoder.decode(data)


def encode_event(change: Change) -> tuple[bytes, bytes]:
    """The event key's value of ``change``, and the object's encoding in it (its object key's
    value: the object is encoded once for both)."""
    row = event_row(change)
    return _event_encoder.encode(row[1:]), row[-1]


def decode_event_value(data: bytes) -> EventValue:
    """An event key's value as its fields (the object still encoded).

    Raises:
        msgspec.DecodeError: not an event value.
    """
    value: EventValue = _event_decoder.decode(data)
    return value


def decode_event(revision: int, data: bytes) -> Change:
    """The change an event key holds.

    Raises:
        msgspec.DecodeError: the value, or the object in it, does not decode.
    """
    type_, kind, namespace, name, node, message, obj = decode_event_value(data)
    return Change(
        revision=revision,
        type=type_,
        kind=kind,
        namespace=namespace,
        name=name,
        object=decode_object(obj),
        node=node,
        message=message,
    )


def prefix_end(key: bytes) -> bytes:
    """The range end covering every key that starts with ``key``."""
    return key[:-1] + bytes([key[-1] + 1])


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """The keys under one prefix (module docstring).

    Attributes:
        prefix: the prefix, ending with ``/``.
        meta: the meta key.
        objects: the objects' prefix.
        events: the event log's prefix.
        leader: the leadership key.
    """

    prefix: bytes
    meta: bytes = field(init=False)
    objects: bytes = field(init=False)
    events: bytes = field(init=False)
    leader: bytes = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "meta", self.prefix + b"meta/revision")
        object.__setattr__(self, "objects", self.prefix + b"objects/")
        object.__setattr__(self, "events", self.prefix + b"events/")
        object.__setattr__(self, "leader", self.prefix + LEADER_KEY)

    def event(self, revision: int) -> bytes:
        """The event key of ``revision``; also the start (or the end) of a range of the log."""
        return self.events + f"{revision:0{_DIGITS}d}".encode()

    def object(self, kind: str, namespace: str, name: str) -> bytes:
        return self.objects + f"{kind}/{namespace}/{name}".encode()

    def revision_of(self, event_key: bytes) -> int:
        """The revision an event key names.

        Raises:
            ValueError: the key is not ``events/<digits>``.
        """
        return int(event_key[len(self.events) :])
