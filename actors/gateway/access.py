"""Who may talk to the gateway, and what a read-only token may ask (docs/protocol.md "Access").

Kubernetes counterpart: the API server's static token file authenticator
(staging/src/k8s.io/apiserver/plugin/pkg/authenticator/token/tokenfile) and the authorization
of a request's verb, here by two roles: read-only and read-write.

With ``tokens``, a connection from a listener that is not ``tokenless`` must present one of
them in its hello, else it is answered ``unauthorized`` and closed before it can read or write
anything (:func:`authenticate_hello`); a read-only token's put, delete and reload_policy are
answered ``forbidden`` (:func:`forbidden`). TLS is the listener's business (daemon/access.py
wraps the TCP listener in trio's SSLListener); :func:`tls_failure` finds the TLS error behind a
broken stream so that a failed handshake is logged and ends only its own connection.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Sequence

import trio

from podium.actors.gateway.counters import request_type
from podium.protocol.config import READ_ONLY_REQUESTS, AccessToken, authenticate
from podium.protocol.wire import ClientMessage, ErrorReply

__all__ = ["authenticate_hello", "forbidden", "peer_address", "tls_failure"]

log = logging.getLogger("podium.gateway")


def authenticate_hello(
    tokens: Sequence[AccessToken], presented: str | None, *, conn_id: int, peer: str
) -> AccessToken | ErrorReply:
    """The token a hello presented, or the ``unauthorized`` refusal to send in its place.

    Args:
        tokens: the access tokens in force.
        presented: the hello's token (None: it gave none).
        conn_id: the connection's number, for logs.
        peer: the peer's address, for logs.
    """
    token = authenticate(tokens, presented)
    if token is not None:
        log.debug("connection %d from %s: token %s (%s)", conn_id, peer, token.name, token.role)
        return token
    why = "no token was given" if not presented else "the token is not valid"
    log.warning("connection %d from %s: refused: %s", conn_id, peer, why)
    return ErrorReply(
        id=-1,
        code="unauthorized",
        message=f"this listener requires an access token and {why}",
        path="$.token",
    )


def forbidden(token: AccessToken | None, msg: ClientMessage) -> ErrorReply | None:
    """A read-only token's put, delete or reload_policy: the refusal. (Read-only tokens
    may make the requests listed, so a request type added later is refused to them until
    it is listed.)"""
    if token is None or not token.read_only:
        return None
    kind = request_type(msg)
    if kind in READ_ONLY_REQUESTS:
        return None
    return ErrorReply(
        id=msg.id,
        code="forbidden",
        message=(
            f"token {token.name!r} is read-only: {kind} is not allowed "
            f"(a read-only token may {', '.join(READ_ONLY_REQUESTS)})"
        ),
    )


def tls_failure(group: BaseExceptionGroup[BaseException]) -> ssl.SSLError | None:
    """The TLS error behind a broken stream (trio's SSLStream raises BrokenResourceError from
    the ssl module's error), or None when the peer simply went away."""
    for exc in group.exceptions:
        cause = exc.__cause__
        if isinstance(cause, ssl.SSLError):
            return cause
        if isinstance(exc, BaseExceptionGroup) and (inner := tls_failure(exc)) is not None:
            return inner
    return None


def peer_address(stream: trio.abc.Stream) -> str:
    """The peer's address, for logs (``unix`` for a Unix socket, ``?`` when unknown)."""
    while isinstance(stream, trio.SSLStream):
        stream = stream.transport_stream
    sock = getattr(stream, "socket", None)
    if sock is None:
        return "?"
    try:
        name = sock.getpeername()
    except OSError:
        return "?"
    if isinstance(name, tuple) and len(name) >= 2:
        host, port = name[0], name[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return "unix"
