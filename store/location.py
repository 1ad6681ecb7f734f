"""Where the store lives: ``sqlite://PATH`` (or a plain path) or ``etcd://HOST:PORT/PREFIX``.

Parsed here, apart from either backend, so that the command line and the daemon read a store
URL without importing the etcd client (nor SQLite's thread) to find out which one it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias
from urllib.parse import unquote, urlsplit

__all__ = ["EtcdLocation", "SqliteLocation", "StoreLocation", "parse_store_url"]

DEFAULT_PREFIX = "podium"


@dataclass(frozen=True, slots=True)
class SqliteLocation:
    """A store in a SQLite file: ``sqlite://PATH``, or the path alone.

    Attributes:
        path: the database file, relative to the working directory or absolute.
    """

    path: str

    def __str__(self) -> str:
        return self.path


@dataclass(frozen=True, slots=True)
class EtcdLocation:
    """Where the store lives in etcd: ``etcd://HOST:PORT[,HOST:PORT...]/PREFIX``.

    Attributes:
        endpoints: ``host:port`` of the members.
        prefix: the key prefix (ends with ``/``).
    """

    endpoints: tuple[str, ...]
    prefix: str

    def __str__(self) -> str:
        return f"etcd://{','.join(self.endpoints)}/{self.prefix}"


StoreLocation: TypeAlias = SqliteLocation | EtcdLocation


def parse_store_url(url: str) -> StoreLocation:
    """``etcd://HOST:PORT[,HOST:PORT...]/PREFIX`` (the prefix defaults to ``podium``), or
    ``sqlite://PATH`` (the path, relative or absolute: ``sqlite:///var/lib/podium.db``); a
    plain path is a SQLite path.

    Raises:
        ValueError: an etcd URL without endpoints, or another scheme.
    """
    if url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://")
        if not path:
            raise ValueError(f"{url!r}: sqlite://PATH needs a path")
        return SqliteLocation(path)
    if not url.startswith("etcd://"):
        if "://" in url:
            raise ValueError(f"{url!r}: the store is sqlite://PATH or etcd://HOST:PORT/PREFIX")
        return SqliteLocation(url)
    parts = urlsplit(url)
    endpoints = tuple(e.strip() for e in parts.netloc.split(",") if e.strip())
    for endpoint in endpoints:
        host, sep, port = endpoint.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"{url!r}: endpoint {endpoint!r} is not HOST:PORT")
    if not endpoints:
        raise ValueError(f"{url!r}: etcd://HOST:PORT[,HOST:PORT...]/PREFIX needs an endpoint")
    prefix = unquote(parts.path).strip("/") or DEFAULT_PREFIX
    return EtcdLocation(endpoints, prefix + "/")
