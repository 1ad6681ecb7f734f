"""The HTTP endpoint: ``/metrics``, ``/healthz``, ``/livez`` and ``/readyz``.

Kubernetes counterpart: the kube-scheduler's insecure serving (cmd/kube-scheduler/app/server.go:
``newMetricsHandler`` and ``newHealthzHandler``, later releases' ``/livez`` and ``/readyz``).
A deliberately small HTTP/1.1 server on trio (no new dependency): it reads one request head,
answers it and closes the connection. ``GET`` and ``HEAD`` only; any other method on a known
path is ``405``, any other path ``404``, a head it cannot parse ``400``.

- ``/metrics``: :data:`podium.protocol.metrics.REGISTRY` in the Prometheus text format, rendered
  in a worker thread (16-25 ms for ~1200 series would stall every actor on the trio thread,
  STYLE.md), one render at a time.
- ``/healthz``, ``/livez``: ``200 ok`` while the process serves.
- ``/readyz``: ``200 ok`` when the readiness callable reports no problem (followed by the replica's
  role under leader election: ``ok (leader NAME)``, ``ok (follower; leader NAME at ADDR)``), else ``503`` with one
  problem per line (``store not recovered``, ``actor binder not running``, ...).

Owns: its listeners and the connections they accept.
Mailbox: none (HTTP requests); it reads the registry and calls the readiness callable.
Emits: nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import trio
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from podium.protocol.metrics import REGISTRY

__all__ = [
    "MAX_HEAD_BYTES",
    "READ_TIMEOUT_SECONDS",
    "HttpServer",
    "Readiness",
    "Request",
    "Response",
    "parse_request",
]

log = logging.getLogger("podium.http")

Readiness = Callable[[], Sequence[str]]
"""Answers the reasons the daemon is not ready (empty: ready)."""

MAX_HEAD_BYTES = 16 * 1024
"""The longest request head (request line and headers) read."""
READ_TIMEOUT_SECONDS = 10.0
"""How long a client may take to send its request head."""

_PATHS = frozenset({"/metrics", "/healthz", "/livez", "/readyz"})
_METHODS = frozenset({"GET", "HEAD"})
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
_TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Request:
    """A parsed request head: the method, the path (query string dropped) and the headers
    (names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = _TEXT
    allow: str | None = None

    def encode(self, *, head_only: bool) -> bytes:
        """The whole response; without the body for ``HEAD`` (Content-Length still says it)."""
        lines = [
            f"HTTP/1.1 {self.status} {_REASONS.get(self.status, '')}",
            f"Content-Type: {self.content_type}",
            f"Content-Length: {len(self.body)}",
            "Cache-Control: no-store",
            "X-Content-Type-Options: nosniff",
            "Connection: close",
        ]
        if self.allow is not None:
            lines.append(f"Allow: {self.allow}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head if head_only else head + self.body


def _text(status: int, text: str, *, allow: str | None = None) -> Response:
    return Response(status, text.encode(), allow=allow)


def parse_request(head: bytes) -> Request | None:
    """Parse a request head (everything before the blank line); None when it is malformed."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        return None
    request_line, *header_lines = text.split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3:
        return None
    method, target, version = parts
    if not method.isalpha() or not method.isupper() or not version.startswith("HTTP/1."):
        return None
    if not target.startswith("/"):
        return None
    headers: dict[str, str] = {}
    for line in header_lines:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            return None
        headers[name.lower()] = value.strip()
    path = target.split("?", 1)[0].split("#", 1)[0]
    return Request(method=method, path=path, headers=headers)


class HttpServer:
    """The HTTP endpoint actor.

    Args:
        listeners: where to accept connections (bound by the caller, so the real port is known
            before the daemon reports ready).
        readiness: what ``/readyz`` asks.
        registry: what ``/metrics`` renders.
    """

    def __init__(
        self,
        listeners: Sequence[trio.SocketListener],
        readiness: Readiness,
        *,
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        self._listeners = list(listeners)
        self._readiness = readiness
        self._registry = registry
        # One render at a time: concurrent scrapes wait rather than each take a core.
        self._render_limiter = trio.CapacityLimiter(1)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled (the daemon cancels it once everything else has stopped)."""
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._serve_connection, self._listeners)
            task_status.started()

    async def _serve_connection(self, stream: trio.SocketStream) -> None:
        try:
            async with stream:
                await self._exchange(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.debug("an HTTP client went away")
        except Exception:
            log.exception("an HTTP request failed")

    async def _exchange(self, stream: trio.abc.Stream) -> None:
        head = b""
        with trio.move_on_after(READ_TIMEOUT_SECONDS) as timer:
            while b"\r\n\r\n" not in head:
                if len(head) > MAX_HEAD_BYTES:
                    await stream.send_all(
                        _text(431, "request head too large\n").encode(head_only=False)
                    )
                    return
                data = await stream.receive_some(4096)
                if not data:
                    return  # the client closed before finishing its request
                head += data
        if timer.cancelled_caught:
            await stream.send_all(_text(408, "request timeout\n").encode(head_only=False))
            return
        request = parse_request(head.split(b"\r\n\r\n", 1)[0])
        if request is None:
            await stream.send_all(_text(400, "bad request\n").encode(head_only=False))
            return
        response = await self.respond(request)
        await stream.send_all(response.encode(head_only=request.method == "HEAD"))

    async def respond(self, request: Request) -> Response:
        """The answer to one request."""
        if request.path not in _PATHS:
            return _text(404, "404 page not found\n")
        if request.method not in _METHODS:
            return _text(405, "method not allowed\n", allow="GET, HEAD")
        match request.path:
            case "/metrics":
                body = await trio.to_thread.run_sync(
                    generate_latest, self._registry, limiter=self._render_limiter
                )
                return Response(200, body, content_type=CONTENT_TYPE_LATEST)
            case "/readyz":
                problems = list(self._readiness())
                if problems:
                    return _text(503, "".join(f"{p}\n" for p in problems))
                role = getattr(self._readiness, "role", None)
                return _text(200, f"ok{role()}" if role is not None else "ok")
            case _:  # /healthz, /livez: answering at all is the proof
                return _text(200, "ok")
