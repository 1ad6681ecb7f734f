"""The store's durability backends side by side, for the store tests parametrized over both:
SQLite in the test's folder, etcd under a prefix of its own on the session's etcd member.

Each gives the store actor the daemon would build (:func:`~podium.store.sqlite.sqlite_store`,
:func:`~podium.store.etcd.durability.etcd_store`) and reads back what it wrote in its own terms (the
event log's types in revision order, the objects kept), so a test asserts the same facts on
both.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import urllib.request
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import pytest
import trio

from podium.store import tuning
from podium.store.actor import StoreActor, Subscriber
from podium.store.etcd.durability import EtcdDurability, etcd_store
from podium.store.etcd.keys import decode_event_value
from podium.store.location import EtcdLocation, parse_store_url
from podium.store.mail import StoreMsg
from podium.store.schema import decode_change
from podium.store.sqlite import SqliteDurability, sqlite_store

__all__ = ["BACKENDS", "Backend", "EtcdBackend", "SqliteBackend", "etcd_range"]

BACKENDS = ("sqlite", "etcd")


class Backend:
    """One place a store lives, reopened by each :meth:`open` (a restart)."""

    name: str

    def open(
        self,
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[Subscriber],
        retention: int,
    ) -> StoreActor:
        raise NotImplementedError

    def shrink(self, monkeypatch: pytest.MonkeyPatch, memory_log: int, compact_every: int) -> None:
        """Make the core keep ``memory_log`` changes and compact every ``compact_every``."""
        monkeypatch.setattr(tuning, "MEMORY_LOG", memory_log)
        monkeypatch.setattr(tuning, "COMPACT_EVERY", compact_every)

    def event_types(self) -> list[str]:
        """The kept event log's change types, in revision order."""
        raise NotImplementedError

    def object_names(self) -> list[str]:
        """``kind/namespace/name`` of every object kept, sorted."""
        raise NotImplementedError


class SqliteBackend(Backend):
    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path

    def open(
        self,
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[Subscriber],
        retention: int,
    ) -> StoreActor:
        return sqlite_store(
            inbox, subscribers, SqliteDurability(str(self.path), retention=retention)
        )

    def event_types(self) -> list[str]:
        with closing(sqlite3.connect(self.path)) as conn:
            return [r[0] for r in conn.execute("SELECT type FROM events ORDER BY revision")]

    def object_names(self) -> list[str]:
        with closing(sqlite3.connect(self.path)) as conn:
            rows = conn.execute("SELECT kind, namespace, name FROM objects").fetchall()
        return sorted("/".join(r) for r in rows)


def etcd_range(endpoint: str, prefix: str) -> list[tuple[str, bytes]]:
    """Every key under ``prefix`` and its value, read directly from the gateway."""
    key = prefix.encode()
    end = key[:-1] + bytes([key[-1] + 1])
    body = json.dumps(
        {"key": base64.b64encode(key).decode(), "range_end": base64.b64encode(end).decode()}
    ).encode()
    request = urllib.request.Request(f"http://{endpoint}/v3/kv/range", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        kvs = json.loads(response.read()).get("kvs", [])
    return [
        (base64.b64decode(kv["key"]).decode(), base64.b64decode(kv.get("value", ""))) for kv in kvs
    ]


class EtcdBackend(Backend):
    name = "etcd"

    def __init__(self, url: str) -> None:
        location = parse_store_url(url)
        assert isinstance(location, EtcdLocation)
        self.location = location

    def open(
        self,
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[Subscriber],
        retention: int,
    ) -> StoreActor:
        return etcd_store(inbox, subscribers, EtcdDurability(self.location, retention=retention))

    def keys(self, under: str) -> list[tuple[str, bytes]]:
        return etcd_range(self.location.endpoints[0], self.location.prefix + under)

    def event_types(self) -> list[str]:
        types: list[str] = []
        for key, value in self.keys("events/"):
            revision = int(key.rsplit("/", 1)[1])
            row = (revision, *decode_event_value(value))
            types.append(decode_change(row).type)
        return types

    def object_names(self) -> list[str]:
        start = len(self.location.prefix + "objects/")
        return sorted(key[start:] for key, _ in self.keys("objects/"))
