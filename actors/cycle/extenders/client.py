"""One HTTP extender: its connection pool, its calls, and the errors they map to.

Kubernetes counterpart: pkg/scheduler/core/extender.go@v1.14 ``HTTPExtender`` (``send``,
``makeTransport``, ``IsInterested``) and the wire of ``pkg/scheduler/api/types.go``
(podium.protocol.extender).

Each extender gets one ``httpx.AsyncClient``: its own connection pool, HTTP/1.1 keep-alive, the
TLS of its ``tlsConfig``. httpx runs on trio (through anyio), so a call awaits the socket and
never blocks the actor that makes it. The timeout (``httpTimeout``, 5 s by default) bounds the
whole call, as Go's ``http.Client.Timeout`` does: connect, send, wait, read.

Error handling: every way a call can fail becomes an :class:`ExtenderError` at this boundary
(httpx's exceptions, a status other than 200, a reply that does not decode, a reply's
``Error`` field); the caller decides, with the extender's ``ignorable``, whether it fails the
pod. Cancellation passes through untouched.

Metrics: ``podium_extender_request_duration_seconds{extender,verb,result}`` per call and
``podium_extender_errors_total{extender,verb}`` per failed one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Iterator
from typing import TypeVar

import httpx
import msgspec
import trio
from prometheus_client import Histogram

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.result import ExtenderCall
from podium.protocol import metrics
from podium.protocol.errors import ErrorCode, PodiumError
from podium.protocol.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderConfig,
    ExtenderPreemptionArgs,
    ExtenderTLSConfig,
    decode_reply,
    encode_request,
)

__all__ = ["Call", "ExtenderError", "HTTPExtender", "tls_problem"]

log = logging.getLogger("podium.extenders")

T = TypeVar("T")

Call = ExtenderCall
"""``(extender, verb, result, start, end)``: one call, for the attempt's trace (result ``ok``
or ``error``; trio clock)."""


class ExtenderError(PodiumError):
    """An extender call failed: unreachable, timed out, a status other than 200, a reply that
    does not decode or names a node it was not sent, or the reply's ``Error`` field."""

    code: ErrorCode = "unavailable"


class HTTPExtender:
    """One configured extender and its HTTP client.

    Args:
        config: from the Policy or the configuration file.
        transport: an httpx transport to use instead of the network (tests: MockTransport).
    """

    def __init__(
        self, config: ExtenderConfig, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.config = config
        self.name = config.name
        self.timeout = config.timeout_seconds
        self.managed = frozenset(r.name for r in config.managed_resources)
        tls = config.tls_config
        self._extensions = {"sni_hostname": tls.server_name} if tls and tls.server_name else None
        self.client = httpx.AsyncClient(
            transport=transport,
            verify=_ssl_context(config),
            # The whole call is bounded by trio (see call); httpx's per-phase timeouts are a backstop.
            timeout=httpx.Timeout(self.timeout + 1.0),
            limits=httpx.Limits(max_keepalive_connections=32, keepalive_expiry=60.0),
        )
        self._observed: dict[tuple[str, str], Histogram] = {}

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.client.aclose()

    def is_interested(self, pod: PodInfo) -> bool:
        """v1.14 ``IsInterested``: no managed resources, or the pod's containers or init
        containers request or limit one of them."""
        if not self.managed:
            return True
        spec = pod.pod.spec
        for container in (*spec.containers, *spec.init_containers):
            resources = container.resources
            if not self.managed.isdisjoint(resources.requests) or not self.managed.isdisjoint(
                resources.limits
            ):
                return True
        return False

    def url(self, verb: str) -> str:
        """v1.14 ``send``: the prefix without trailing ``/``, then ``/verb`` (a verb ``/`` is
        the prefix alone)."""
        prefix = self.config.url_prefix.rstrip("/")
        return prefix if verb == "/" else f"{prefix}/{verb}"

    async def call(
        self,
        verb: str,
        request: ExtenderArgs | ExtenderBindingArgs | ExtenderPreemptionArgs,
        reply_type: type[T],
        calls: list[Call],
        check: Callable[[T], None] | None = None,
    ) -> T:
        """POST ``request`` to ``verb`` and decode the reply as ``reply_type``.

        ``calls`` gets this call's record (for the trace) whatever happens. A reply with a
        non-empty ``Error`` field is an error; so is one ``check`` raises ExtenderError on.

        Raises:
            ExtenderError: see the class; its message names the extender and the verb.
        """
        url = self.url(verb)
        body = encode_request(request)
        started = trio.current_time()
        result = "error"
        try:
            with trio.fail_after(self.timeout):
                response = await self.client.post(
                    url,
                    content=body,
                    headers={"Content-Type": "application/json"},
                    extensions=self._extensions,
                )
            if response.status_code != httpx.codes.OK:
                # extender.go@v1.14 send's text.
                raise ExtenderError(
                    f"Failed {verb} with extender at URL {url}, code {response.status_code}"
                )
            try:
                decoded = decode_reply(response.content, reply_type)
            except msgspec.DecodeError as exc:
                raise ExtenderError(
                    f"extender {self.name}: {verb} reply does not decode: {exc}"
                ) from None
            error = getattr(decoded, "error", "")
            if error:
                raise ExtenderError(error)
            if check is not None:
                check(decoded)
            result = "ok"
            return decoded
        except trio.TooSlowError:
            raise ExtenderError(
                f"extender {self.name}: {verb} timed out after {self.timeout:g}s"
            ) from None
        except httpx.HTTPError as exc:
            # httpx's text is empty for some failures (TLS): the cause says what happened.
            why = _first_text(exc)
            raise ExtenderError(
                f"extender {self.name}: {verb} failed: {type(exc).__name__}: {why}"
            ) from None
        finally:
            ended = trio.current_time()
            calls.append((self.name, verb, result, started, ended))
            self._observe(verb, result, ended - started)

    def _observe(self, verb: str, result: str, seconds: float) -> None:
        key = (verb, result)
        histogram = self._observed.get(key)
        if histogram is None:
            histogram = metrics.EXTENDER_REQUEST_DURATION.labels(self.name, verb, result)
            self._observed[key] = histogram
        histogram.observe(seconds)
        if result != "ok":
            metrics.EXTENDER_ERRORS.labels(self.name, verb).inc()


def tls_problem(config: ExtenderConfig) -> str | None:
    """Why the TLS settings of ``config`` cannot be used (a file missing or unreadable, a
    certificate or key that does not load), or None: checked when the policy is loaded, so a
    bad path is an error naming the extender, not a crash when the daemon starts."""
    try:
        _ssl_context(config)
    except (OSError, ssl.SSLError, ValueError) as exc:
        return _first_text(exc) or type(exc).__name__
    return None


def _first_text(exc: BaseException) -> str:
    """The first non-empty text along an exception's causes (httpx's own may be empty)."""
    seen: BaseException | None = exc
    while seen is not None:
        if text := str(seen):
            return text
        seen = seen.__cause__ or seen.__context__
    return ""


def _ssl_context(config: ExtenderConfig) -> ssl.SSLContext | bool:
    """v1.14 ``makeTransport``: the CA (file or data), the client certificate and key (files
    or data), ``insecure``; with ``enableHttps`` and no CA the server is not verified."""
    tls = config.tls_config
    if tls is None and not config.enable_https:
        return True  # an https:// prefix without tlsConfig: the system's CAs
    tls = tls or ExtenderTLSConfig()
    ca_data = tls.data("ca_data")
    has_ca = bool(tls.ca_file or ca_data)
    context = ssl.create_default_context(
        cafile=tls.ca_file or None, cadata=ca_data.decode("ascii") if ca_data else None
    )
    if tls.insecure or (config.enable_https and not has_ca):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    cert_data, key_data = tls.data("cert_data"), tls.data("key_data")
    if tls.cert_file or cert_data:
        with _pem_files(tls.cert_file, cert_data, tls.key_file, key_data) as (cert, key):
            context.load_cert_chain(cert, key or None)
    return context


@contextlib.contextmanager
def _pem_files(
    cert_file: str, cert_data: bytes, key_file: str, key_data: bytes
) -> Iterator[tuple[str, str]]:
    """Paths for the certificate and key: the files given, or private temporary files holding
    the inline data (``ssl`` loads a key only from a file), removed afterwards."""
    made: list[str] = []
    try:
        paths = []
        for path, data in ((cert_file, cert_data), (key_file, key_data)):
            if data:
                fd, path = tempfile.mkstemp(suffix=".pem")
                made.append(path)
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
            paths.append(path)
        yield paths[0], paths[1]
    finally:
        for path in made:
            os.unlink(path)
