"""The SQLite schema, its migrations, and how objects and changes are stored in it.

One database file holds everything (WAL mode)::

    meta      key -> value: revision (the last committed)
    objects   (kind, namespace, name) -> revision, data      every stored object, msgpack
    bindings  uid -> namespace, name, node, revision          every binding Podium committed
                                                              for a pod that still exists
    events    revision -> type, kind, namespace, name,        the event log, compacted to the
              node, message, data                             retention setting

``data`` is the object in msgpack, tagged by ``kind`` (the wire form, quantities as their text).
``PRAGMA user_version`` is the schema version; :data:`MIGRATIONS` brings any older file up to
:data:`SCHEMA_VERSION` in order, each step in its own transaction. A file from a newer Podium
is refused rather than guessed at.

This module is plain data and codecs (no I/O): the store actor (store/sqlite.py) runs it on
aiosqlite, ``podium db check`` and ``podium db backup`` (store/tools.py) on the stdlib driver.
"""

from __future__ import annotations

from typing import Final

import msgspec

from podium.protocol.errors import DatabaseDamaged
from podium.protocol.objects import KubeObject, dec_hook, encode_msgpack
from podium.protocol.wire import EventType
from podium.store.mail import Change

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "decode_change",
    "decode_object",
    "encode_object",
    "event_row",
]

SCHEMA_VERSION: Final = 1

MIGRATIONS: Final[tuple[str, ...]] = (
    # 0 -> 1: the first schema.
    """
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE objects (
        kind TEXT NOT NULL,
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        revision INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (kind, namespace, name)
    ) WITHOUT ROWID;
    CREATE TABLE bindings (
        uid TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        node TEXT NOT NULL,
        revision INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE events (
        revision INTEGER PRIMARY KEY,
        type TEXT NOT NULL,
        kind TEXT NOT NULL,
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        node TEXT NOT NULL,
        message TEXT NOT NULL,
        data BLOB NOT NULL
    );
    INSERT INTO meta (key, value) VALUES ('revision', '0');
    """,
)
"""``MIGRATIONS[i]`` takes a file from version ``i`` to ``i + 1``."""

_decoder: msgspec.msgpack.Decoder[KubeObject] = msgspec.msgpack.Decoder(
    KubeObject,
    dec_hook=dec_hook,
)


def encode_object(obj: KubeObject) -> bytes:
    """The object as stored: :func:`~podium.protocol.objects.encode_msgpack`."""
    return encode_msgpack(obj)


def decode_object(data: bytes) -> KubeObject:
    """Raises msgspec.DecodeError for a damaged row (``podium db check`` reports it).

    msgspec raises UnicodeDecodeError for a string that is no longer UTF-8 (a flipped byte):
    that is a damaged row too.
    """
    try:
        return _decoder.decode(data)
    except UnicodeDecodeError as exc:
        raise msgspec.DecodeError(f"a string is not UTF-8: {exc}") from None


EventRow = tuple[int, str, str, str, str, str, str, bytes]


def event_row(change: Change) -> EventRow:
    """The ``events`` row of one change (``old`` is not kept)."""
    return (
        change.revision,
        change.type,
        change.kind,
        change.namespace,
        change.name,
        change.node,
        change.message,
        encode_object(change.object),
    )


def decode_change(row: EventRow) -> Change:
    """Raises DatabaseDamaged naming the row when its object does not decode (a reader of the
    log reports it; the daemon does not fall over on it)."""
    revision, type_, kind, namespace, name, node, message, data = row
    event_type: EventType = type_  # type: ignore[assignment]  # written from EventType only
    try:
        obj = decode_object(data)
    except msgspec.DecodeError as exc:
        ref = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        raise DatabaseDamaged(
            f"the event row of revision {revision} ({ref}) does not decode: {exc}"
        ) from None
    return Change(
        revision=revision,
        type=event_type,
        kind=kind,
        namespace=namespace,
        name=name,
        object=obj,
        node=node,
        message=message,
    )
