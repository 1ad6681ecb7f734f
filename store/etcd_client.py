"""A small etcd v3 client over etcd's HTTP/JSON gateway (``/v3/...``), on trio through httpx.

Why the gateway and not gRPC: ``grpcio`` is a heavy native dependency and ``aetcd`` (the
maintained asyncio client) needs an asyncio loop of its own in a thread of its own, as
aiosqlite does (STYLE.md); httpx runs on trio directly (through anyio), and every call the
store needs (range, txn, compaction, status, authenticate) is one JSON POST. etcd 3.5 serves
the gateway on its client port (``etcdserver/api/v3rpc`` registered by
``embed/serve.go``); keys and values travel as base64.

Endpoints: the client talks to one endpoint at a time and moves to the next one given when a
request cannot reach it or the member answers that it has no leader (a member cut off from
the quorum), so a member's loss is a retry, not an error. A request that is sent but whose
answer is lost has an *unknown outcome* (:class:`EtcdUnknownOutcome`): the caller decides how
to find out (the store reads its meta key back).

Exceptions (all :class:`~podium.protocol.errors.StoreError`)::

    EtcdError                  an answer etcd gave: a failed request (the message is etcd's)
    ├── EtcdUnavailable        no endpoint answered, or none had a leader, before the deadline
    └── EtcdUnknownOutcome     a request was sent and its answer lost: it may have been applied
"""

from __future__ import annotations

import base64
import logging
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec
import trio

from podium.protocol import metrics
from podium.protocol.errors import StoreError

__all__ = [
    "EtcdClient",
    "EtcdError",
    "EtcdTLS",
    "EtcdUnavailable",
    "EtcdUnknownOutcome",
    "b64",
    "unb64",
]

log = logging.getLogger("podium.store")

_json = msgspec.json.Encoder()
_decode = msgspec.json.Decoder(dict[str, Any])


class EtcdError(StoreError):
    """etcd answered with an error (the message is etcd's, with the endpoint)."""


class EtcdUnavailable(EtcdError):
    """No endpoint answered (or none had a leader) before the deadline."""


class EtcdUnknownOutcome(EtcdError):
    """A request reached etcd and its answer was lost: it may or may not have been applied."""


def b64(data: bytes) -> str:
    """A key or value as the gateway wants it."""
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    """A key or value as the gateway gives it."""
    return base64.b64decode(text)


@dataclass(frozen=True, slots=True)
class EtcdTLS:
    """Client TLS toward etcd.

    etcd 3.5 refuses a gateway request whose client certificate has a CommonName (``400
    CommonName of client sending a request against gateway will be ignored``: the gateway
    cannot pass the name on as the user), so the client certificate must have none; grant
    access with ``user``/``password``.

    Attributes:
        ca: the PEM CA bundle that signed the members' certificates (None: the system's).
        cert: the client certificate (PEM), for etcd's ``--client-cert-auth``.
        key: the client certificate's key.
    """

    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca)
        if self.cert is not None:
            context.load_cert_chain(self.cert, self.key)
        return context


# Requests that change something: when their answer is lost, they may have been applied.
_WRITES = frozenset(("/v3/kv/txn", "/v3/kv/put", "/v3/kv/deleterange"))

# Answers that mean "this member cannot serve now; another may" (etcd's rpctypes errors).
_RETRY_ELSEWHERE = (
    "no leader",
    "leader changed",
    "timed out",
    "not capable",
    "too many requests",
    "unhealthy cluster",
    "raft proposal dropped",
    "stopped",
    "request cancelled",
)


class EtcdClient:
    """Calls on etcd's gateway, failing over across ``endpoints`` (``host:port`` each).

    Args:
        endpoints: the members to talk to.
        tls: client TLS (None: plain HTTP).
        user: etcd user for the ``/v3/auth/authenticate`` token (None: no auth).
        password: its password.
        request_timeout: seconds one request to one endpoint may take.
        unavailable_after: seconds a call goes on trying endpoints before it raises
            :class:`EtcdUnavailable`.
        transport: httpx's transport (tests give a fake etcd; None: the network).
    """

    def __init__(
        self,
        endpoints: Sequence[str],
        *,
        tls: EtcdTLS | None = None,
        user: str | None = None,
        password: str | None = None,
        request_timeout: float = 5.0,
        unavailable_after: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not endpoints:
            raise ValueError("etcd needs at least one endpoint")
        scheme = "https" if tls is not None else "http"
        self.endpoints = [f"{scheme}://{e}" for e in endpoints]
        self.unavailable_after = unavailable_after
        self._current = 0
        self._user = user
        self._password = password
        self._token: str | None = None
        self._http = httpx.AsyncClient(
            verify=tls.context() if tls is not None else True,
            timeout=httpx.Timeout(request_timeout),
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=16),
            transport=transport,
        )
        self._histograms: dict[tuple[str, str], Any] = {}

    @property
    def endpoint(self) -> str:
        """The endpoint in use."""
        return self.endpoints[self._current]

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(
        self, op: str, path: str, body: dict[str, Any], *, read_only: bool = False
    ) -> dict[str, Any]:
        """POST ``body`` to ``path`` (``/v3/kv/txn``), on this endpoint or the next ones.

        Args:
            op: the operation's name for the metrics (``txn``, ``range``...).
            read_only: a txn that only reads: a lost answer is retried like a range's.

        Raises:
            EtcdError: etcd refused the request.
            EtcdUnavailable: no endpoint served it before :attr:`unavailable_after`.
            EtcdUnknownOutcome: it was sent and its answer lost (a write may have applied).
        """
        deadline = time.monotonic() + self.unavailable_after
        payload = _json.encode(body)
        writes = path in _WRITES and not read_only
        last = "no endpoint tried"
        delay = 0.05
        while True:
            endpoint = self.endpoint
            started = time.perf_counter()
            try:
                answer = await self._post(endpoint, path, payload)
            except httpx.ConnectError as exc:
                last = f"{endpoint}: cannot connect ({exc})"
            except httpx.TimeoutException as exc:
                # A write that timed out may have been applied: the caller must find out.
                if writes and not isinstance(exc, httpx.ConnectTimeout):
                    self._observe(op, "timeout", started)
                    self._next()
                    raise EtcdUnknownOutcome(
                        f"etcd {endpoint} did not answer {op} in time ({type(exc).__name__})"
                    ) from exc
                last = f"{endpoint}: timed out"
            except httpx.TransportError as exc:
                if writes:
                    self._observe(op, "lost", started)
                    self._next()
                    raise EtcdUnknownOutcome(
                        f"etcd {endpoint} dropped the connection during {op} ({exc})"
                    ) from exc
                last = f"{endpoint}: {exc}"
            else:
                status, data = answer
                if status == 200:
                    self._observe(op, "ok", started)
                    return data
                message = str(data.get("message") or data.get("error") or data)
                expired = status == 401 or "invalid auth token" in message
                if expired and self._user is not None and self._token is not None:
                    self._token = None  # expired: authenticate again
                    continue
                retry = status in (502, 503, 504) or any(m in message for m in _RETRY_ELSEWHERE)
                if not retry:
                    self._observe(op, "error", started)
                    raise EtcdError(f"etcd {endpoint} refused {op}: {message}")
                last = f"{endpoint}: {message}"
            self._observe(op, "unavailable", started)
            self._next()
            now = time.monotonic()
            if now >= deadline:
                raise EtcdUnavailable(
                    f"etcd is unavailable: no endpoint of {', '.join(self.endpoints)} served "
                    f"{op} for {self.unavailable_after:g} s (last: {last})"
                )
            await trio.sleep(min(delay, deadline - now))
            delay = min(delay * 2, 1.0)

    async def _post(self, endpoint: str, path: str, payload: bytes) -> tuple[int, dict[str, Any]]:
        headers = {"content-type": "application/json"}
        if self._user is not None:
            if self._token is None:
                self._token = await self._authenticate(endpoint)
            headers["authorization"] = self._token
        response = await self._http.post(endpoint + path, content=payload, headers=headers)
        try:
            data = _decode.decode(response.content) if response.content else {}
        except msgspec.DecodeError:
            # etcd's own refusals in front of the gateway are plain text (a client
            # certificate with a CommonName: "CommonName of client sending a request against
            # gateway will be ignored...").
            data = {"message": response.text.strip()[:200]}
        return response.status_code, data

    async def _authenticate(self, endpoint: str) -> str:
        body = _json.encode({"name": self._user, "password": self._password})
        response = await self._http.post(endpoint + "/v3/auth/authenticate", content=body)
        try:
            data = _decode.decode(response.content) if response.content else {}
        except msgspec.DecodeError:
            data = {"message": response.text.strip()[:200]}
        if response.status_code != 200 or "token" not in data:
            message = data.get("message") or data.get("error") or response.text[:200]
            raise EtcdError(f"etcd {endpoint} refused user {self._user!r}: {message}")
        return str(data["token"])

    def _next(self) -> None:
        self._current = (self._current + 1) % len(self.endpoints)

    def _observe(self, op: str, result: str, started: float) -> None:
        histogram = self._histograms.get((op, result))
        if histogram is None:
            histogram = metrics.ETCD_REQUEST_DURATION.labels(op=op, result=result)
            self._histograms[op, result] = histogram
        histogram.observe(time.perf_counter() - started)
        if result != "ok":
            metrics.ETCD_ERRORS.labels(op=op).inc()
