"""The client's exceptions: what a caller of :mod:`podium.protocol.client` catches.

Kubernetes counterpart: k8s.io/apimachinery/pkg/api/errors (``StatusError`` carries the
server's Status) and the transport errors client-go passes through.

Every one is a :class:`~podium.protocol.errors.PodiumError`::

    PodiumError
    ├── RemoteError                 the daemon answered with an ErrorReply (its code, path, ...)
    └── ClientConnectionError       also a ConnectionError; code "unavailable"
        ├── ServerUnreachable       nothing answered at the address
        ├── ConnectionLost          the connection closed or broke while requests waited
        ├── LeaderUnavailable       no replica took a write within the leader wait
        └── TLSFailed               the TLS handshake failed, or the daemon speaks TLS

A frame the daemon sends that cannot be read raises the protocol's own
:class:`~podium.protocol.errors.ProtocolError`.
"""

from __future__ import annotations

from podium.protocol.errors import ErrorCode, PodiumError
from podium.protocol.wire import ErrorReply

__all__ = [
    "ClientConnectionError",
    "ConnectionLost",
    "LeaderUnavailable",
    "RemoteError",
    "ServerUnreachable",
    "TLSFailed",
]


class RemoteError(PodiumError):
    """The daemon answered a request with an ``ErrorReply``.

    Attributes:
        reply: the ErrorReply itself.
        code: its code (``invalid``, ``not_found``, ``gone``, ...).
        path: the offending field of a single-object error, or None.
        errors: one ObjectError per rejected object of a put or delete.
        revision: for ``gone``, the oldest revision kept; for ``overloaded``, where to resume.
    """

    def __init__(self, reply: ErrorReply) -> None:
        self.reply = reply
        self.code = reply.code
        self.path = reply.path
        self.errors = reply.errors
        self.revision = reply.revision
        lines = [reply.message]
        for e in reply.errors:
            what = " ".join(
                p for p in (e.kind, f"{e.namespace}/{e.name}" if e.namespace else e.name) if p
            )
            at = f" at {e.path}" if e.path else ""
            lines.append(f"  object {e.index} ({what}){at}: {e.message}")
        super().__init__("\n".join(lines))


class ClientConnectionError(PodiumError, ConnectionError):
    """The connection to the daemon could not be opened or was lost."""

    code: ErrorCode = "unavailable"


class ServerUnreachable(ClientConnectionError):
    """The daemon could not be reached (nothing listens, unknown host, missing socket file).

    Attributes:
        server: the address as given (``127.0.0.1:7070``, ``unix:/run/podium.sock``).
        reason: why, in lower case (``connection refused``).
    """

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"cannot reach podium at {server}: {reason}")
        self.server = server
        self.reason = reason


class ConnectionLost(ClientConnectionError):
    """The connection closed or broke while requests were waiting (or a new one was sent)."""


class LeaderUnavailable(ClientConnectionError):
    """A write answered ``not_leader`` found no replica to take it within the client's leader
    wait (no leader was elected, or the one named could not be reached); it was not done."""


class TLSFailed(ClientConnectionError):
    """The TLS handshake failed: the daemon's certificate did not verify (unknown CA, wrong
    name, expired) or the daemon does not speak TLS."""
