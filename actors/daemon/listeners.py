"""The daemon's listeners: the protocol's TCP and Unix sockets, and the HTTP one of
``podium.metrics``.

Kubernetes counterpart: the serving options' listener
(staging/src/k8s.io/apiserver/pkg/server/options/serving.go: ``SecureServingOptions.ApplyTo``
binds ``--bind-address``:``--secure-port`` and reads the bound port back, port 0 meaning any
free one). Here every listener is bound before the daemon reports ready, so the ready line
carries the real address when port 0 was asked; a taken port stops the start-up there.

The Unix socket is created with its file mode (``podium.unixMode``, 0600) before it listens, so
nobody connects in between; that mode is its guard (it asks for no token). A socket file left
by a crashed daemon is replaced; one a live daemon listens on is refused.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import stat
from dataclasses import dataclass

import trio

from podium.protocol.config import SchedulerConfig

__all__ = [
    "Listeners",
    "is_loopback",
    "open_listeners",
    "open_tcp_listeners",
    "open_unix_listener",
    "parse_address",
    "remove_unix_socket",
]


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:7070`` for IPv6) into its parts.

    Raises:
        ValueError: not HOST:PORT with a port in 0-65535.
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{address!r} is not HOST:PORT (e.g. 127.0.0.1:7070)")
    return host.strip("[]"), int(port)


def _format_address(sockname: tuple[str, int] | tuple[str, int, int, int]) -> str:
    host, port = sockname[0], sockname[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    """Whether a listen host is loopback only (``localhost``, ``127.0.0.0/8``, ``::1``); any
    other name, ``0.0.0.0`` and ``::`` are not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Listeners:
    """What the daemon listens on, all bound.

    Attributes:
        tcp: the protocol's TCP listeners (one per address ``podium.listen`` resolves to).
        unix: the protocol's Unix socket listener, if any.
        http: the HTTP listeners of ``podium.metrics``, if any.
        address: the real TCP address (``HOST:PORT``, ``[HOST]:PORT`` for IPv6), or None.
        metrics_address: the real HTTP address, or None.
    """

    tcp: list[trio.SocketListener]
    unix: list[trio.SocketListener]
    http: list[trio.SocketListener]
    address: str | None
    metrics_address: str | None


async def open_listeners(config: SchedulerConfig) -> Listeners:
    """Bind the protocol's listeners (TCP, then the Unix socket), then the HTTP one.

    Raises:
        OSError: a listener cannot be bound (a taken port; a live daemon on the socket; a file
            that is not a socket at its path).
    """
    settings = config.podium
    tcp: list[trio.SocketListener] = []
    unix: list[trio.SocketListener] = []
    address = None
    if settings.listen is not None:
        tcp.extend(await open_tcp_listeners(settings.listen))
        address = _format_address(tcp[0].socket.getsockname())
    if settings.unix is not None:
        unix.append(await open_unix_listener(settings.unix, int(settings.unix_mode, 8)))
    http: list[trio.SocketListener] = []
    metrics_address = None
    if settings.metrics is not None:
        http.extend(await open_tcp_listeners(settings.metrics))
        metrics_address = _format_address(http[0].socket.getsockname())
    return Listeners(tcp, unix, http, address, metrics_address)


async def open_tcp_listeners(address: str) -> list[trio.SocketListener]:
    """TCP listeners on ``address`` (``host:port``).

    Raises:
        OSError: it cannot be bound (in use, not this host's, ...), with ``address`` as its
            ``filename``, so that the command line can say which setting names it.
    """
    host, port = parse_address(address)
    try:
        return list(await trio.open_tcp_listeners(port, host=host))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), address) from exc


async def open_unix_listener(path: str, mode: int = 0o600) -> trio.SocketListener:
    """A listening Unix socket at ``path`` with file mode ``mode`` (set before it listens, so
    no one connects in between); a stale socket file left by a crash is replaced.

    Raises:
        OSError: ``path`` is not a socket, or a daemon listens on it.
    """
    try:
        existing = os.stat(path).st_mode
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(existing):
            raise OSError(f"{path} exists and is not a socket")
        probe = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        try:
            await probe.connect(path)
        except OSError:
            os.unlink(path)  # nobody listens: a leftover of a crashed daemon
        else:
            raise OSError(f"another daemon is listening on {path}")
        finally:
            probe.close()
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    try:
        await sock.bind(path)
        os.chmod(path, mode)
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return trio.SocketListener(sock)


def remove_unix_socket(path: str | None) -> None:
    """Remove the Unix socket's file once the daemon stops (gone already: nothing to do)."""
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
