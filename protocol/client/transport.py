"""Reaching the daemon: its address, the stream to it (TCP, TLS over TCP, or a Unix socket)
and the access token; everything before the first frame.

Kubernetes counterpart: k8s.io/client-go/rest (``Config.Host``, ``TLSClientConfig``,
``BearerTokenFile``) and client-go/transport.

Access (docs/protocol.md "Access"): the token goes in the hello (:func:`read_token_file` reads
one from a file); ``tls`` (an :class:`ssl.SSLContext`, e.g. :func:`client_ssl_context`) wraps a
TCP connection in TLS, verifying the daemon's certificate and its name against the address
connected to. A Unix socket never takes TLS: its file mode guards it.

Error handling: a connect that fails maps the OS's error to :class:`ServerUnreachable` with
kubectl's lower-case reason (``connection refused``); a TLS handshake that fails raises
:class:`TLSFailed` naming why.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import trio

from podium.protocol.client.errors import ServerUnreachable, TLSFailed

__all__ = [
    "DEFAULT_SERVER",
    "client_ssl_context",
    "open_stream",
    "parse_server",
    "read_token_file",
]

DEFAULT_SERVER = "127.0.0.1:7070"


def client_ssl_context(ca_file: str | os.PathLike[str] | None = None) -> ssl.SSLContext:
    """A TLS context that verifies the daemon: against ``ca_file`` (PEM) when given, else the
    system's CAs; the certificate must name the host connected to.

    Raises:
        ValueError: ``ca_file`` cannot be read or holds no certificate.
    """
    try:
        return ssl.create_default_context(cafile=os.fspath(ca_file) if ca_file else None)
    except (OSError, ssl.SSLError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"cannot load the CA file {ca_file}: {reason}") from None


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The token in ``path``: the first field of its first line that is not blank or a
    comment (so a daemon's one-line token file, ``TOKEN ROLE [NAME]``, works as is).

    Raises:
        ValueError: the file cannot be read or holds no token.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"cannot read the token file {os.fspath(path)}: {reason}") from None
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line.split()[0]
    raise ValueError(f"the token file {os.fspath(path)} holds no token")


def parse_server(server: str) -> tuple[str, int] | str:
    """``(host, port)`` for ``HOST:PORT`` / ``[v6]:PORT``, or the path of ``unix:PATH``.

    Raises:
        ValueError: the address has neither shape.
    """
    if server.startswith("unix:"):
        path = server.removeprefix("unix:")
        if not path:
            raise ValueError(f"server address {server!r} names no socket path (unix:PATH)")
        return path
    host, sep, port = server.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"server address {server!r}: write an IPv6 address as [ADDR]:PORT")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"server address {server!r} is not HOST:PORT or unix:PATH")
    return host, int(port)


def _unreachable_reason(exc: OSError) -> str:
    """The reason of a failed connect in kubectl's lower-case style (``connection refused``)."""
    leaves: list[BaseException] = [exc]
    cause = exc.__cause__
    if isinstance(cause, BaseExceptionGroup):
        leaves = list(cause.exceptions)
    elif isinstance(cause, OSError):
        leaves = [cause]
    if any(isinstance(e, ConnectionRefusedError) for e in leaves):
        return "connection refused"
    first = leaves[0]
    if isinstance(first, OSError) and first.strerror:
        return first.strerror.lower()
    return str(first) or type(first).__name__


async def open_stream(server: str, tls: ssl.SSLContext | None = None) -> trio.abc.Stream:
    """A stream to ``server``, TLS-wrapped and with its handshake done when ``tls`` is given.

    Raises:
        ValueError: ``server`` is not an address, or ``tls`` was given for a Unix socket.
        ServerUnreachable: nothing answered at ``server``.
        TLSFailed: the daemon's certificate did not verify, or the handshake failed.
    """
    where = parse_server(server)
    if tls is not None and isinstance(where, str):
        raise ValueError(f"TLS is for TCP; {server} is a Unix socket (its file mode guards it)")
    try:
        if isinstance(where, str):
            return await trio.open_unix_socket(where)
        tcp = await trio.open_tcp_stream(*where)
    except OSError as exc:
        raise ServerUnreachable(server, _unreachable_reason(exc)) from exc
    if tls is None:
        return tcp
    stream = trio.SSLStream(tcp, tls, server_hostname=where[0])
    try:
        # Now, not lazily at the first read: a certificate that does not verify is reported
        # as such rather than as a connection lost in the handshake.
        await stream.do_handshake()
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        await trio.aclose_forcefully(tcp)
        cause = exc.__cause__
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = f"certificate verify failed: {cause.verify_message}"
        elif isinstance(cause, ssl.SSLError) and cause.reason:
            detail = cause.reason.lower().replace("_", " ")
        else:
            detail = str(cause or exc)
        raise TLSFailed(f"TLS handshake with podium at {server} failed: {detail}") from exc
    except BaseException:
        await trio.aclose_forcefully(tcp)
        raise
    return stream
