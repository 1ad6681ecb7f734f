"""A small etcd v3 client over etcd's HTTP/JSON gateway (``/v3/...``), on trio through httpx.

Why the gateway and not gRPC: ``grpcio`` is a heavy native dependency and ``aetcd`` (the
maintained asyncio client) needs an asyncio loop of its own in a thread of its own, as
aiosqlite does (STYLE.md); httpx runs on trio directly (through anyio), and every call the
store needs (range, txn, compaction, status, authenticate) is one JSON POST. etcd 3.5 serves
the gateway on its client port (``etcdserver/api/v3rpc`` registered by
``embed/serve.go``); keys and values travel as base64. Each call's answer is decoded into
its Struct (:mod:`podium.store.etcd.replies`), so no caller reads etcd's JSON as a dict.

Endpoints: the client talks to one endpoint at a time and moves to the next one given when a
request cannot reach it or the member answers that it has no leader (a member cut off from
the quorum), so a member's loss is a retry, not an error. A request that is sent but whose
answer is lost has an *unknown outcome* (:class:`EtcdUnknownOutcome`): the caller decides how
to find out (the store reads its meta key back).

Exceptions (all :class:`~podium.protocol.errors.StoreError`)::

    EtcdError                  an answer etcd gave: a failed request (the message is etcd's),
    │                          or a read's reply that is not what was asked (names the field)
    ├── EtcdUnavailable        no endpoint answered, or none had a leader, before the deadline
    ├── EtcdUnknownOutcome     a write was sent and its answer lost or unreadable: it may have
    │                          been applied
    └── EtcdRequestRefused     etcd refused the request for what it is (too large, too many
                               operations, a key twice): not applied, and sent again it would
                               be refused again
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx
import msgspec
import trio

from podium.protocol import metrics
from podium.protocol.errors import ErrorCode, StoreError
from podium.store.credentials import EtcdTLS
from podium.store.etcd.replies import (
    AuthenticateReply,
    CompactionReply,
    ErrorReply,
    LeaseGrantReply,
    LeaseKeepAliveReply,
    LeaseRevokeReply,
    RangeReply,
    RangeResult,
    Reply,
    TxnReply,
    decode_reply,
)

__all__ = [
    "REQUEST_REFUSALS",
    "EtcdClient",
    "EtcdError",
    "EtcdRequestRefused",
    "EtcdUnavailable",
    "EtcdUnknownOutcome",
    "b64",
]

log = logging.getLogger("podium.store")

_json = msgspec.json.Encoder()


class EtcdError(StoreError):
    """etcd answered with an error (the message is etcd's, with the endpoint), or with a reply
    Podium cannot read (the message names the field)."""


class EtcdUnavailable(EtcdError):
    """No endpoint answered (or none had a leader) before the deadline."""


class EtcdUnknownOutcome(EtcdError):
    """A request reached etcd and its answer was lost: it may or may not have been applied."""


class EtcdRequestRefused(EtcdError):
    """etcd refused the request itself, not for the cluster's health: it was not applied, and
    it would be refused again on any member (:data:`REQUEST_REFUSALS`).

    Attributes:
        code: the ErrorReply code the writes in it get: ``too_large`` for its size or its
            operations, ``internal`` for a key given twice (Podium's own fault).
    """

    code: ErrorCode = "too_large"

    def __init__(self, message: str, *, code: ErrorCode = "too_large") -> None:
        super().__init__(message)
        self.code = code


def b64(data: bytes) -> str:
    """A key or value as the gateway wants it in a request (replies are decoded from base64
    by their Structs, :mod:`podium.store.etcd.replies`)."""
    return base64.b64encode(data).decode("ascii")


# Requests that change something: when their answer is lost, they may have been applied.
_WRITES = frozenset(("/v3/kv/txn", "/v3/kv/put", "/v3/kv/deleterange"))

REQUEST_REFUSALS: dict[str, ErrorCode] = {
    "request is too large": "too_large",  # etcd's --max-request-bytes (1.5 MiB by default)
    "received message larger than max": "too_large",  # gRPC's bound: that limit + 512 KiB
    "too many operations in txn request": "too_large",  # etcd's --max-txn-ops (128)
    "duplicate key given in txn request": "internal",  # a put inside a deleted range
}
"""etcd's refusals of a request for what it is (api/v3rpc/rpctypes), with the code the
writes in it get: :class:`EtcdRequestRefused`, never retried."""

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
        self,
        op: str,
        path: str,
        body: dict[str, Any],
        reply_type: type[Reply],
        *,
        read_only: bool = False,
    ) -> Reply:
        """POST ``body`` to ``path`` (``/v3/kv/txn``), on this endpoint or the next ones, and
        decode the answer as ``reply_type``.

        Args:
            op: the operation's name for the metrics (``txn``, ``range``...).
            reply_type: the Struct the answer is (:mod:`podium.store.etcd.replies`).
            read_only: a txn that only reads: a lost answer is retried like a range's.

        Raises:
            EtcdError: etcd refused the request, or answered a read with a reply that is not
                a ``reply_type`` (the message names the field).
            EtcdRequestRefused: etcd refused it for what it is (:data:`REQUEST_REFUSALS`).
            EtcdUnavailable: no endpoint served it before :attr:`unavailable_after`.
            EtcdUnknownOutcome: it was sent and its answer lost, or unreadable (a write may
                have applied).
        """
        deadline = trio.current_time() + self.unavailable_after
        payload = _json.encode(body)
        writes = path in _WRITES and not read_only
        last = "no endpoint tried"
        delay = 0.05
        while True:
            endpoint = self.endpoint
            started = time.perf_counter()
            unanswered = True
            try:
                # The call's deadline bounds the attempt too: an answer that never comes (a
                # black hole that keeps the connection open) ends the call at the deadline.
                with trio.move_on_at(deadline):
                    response = await self._post(endpoint, path, payload)
                    unanswered = False
                if unanswered:
                    self._observe(op, "timeout", started)
                    self._next()
                    unanswered_for = f"within the call's deadline ({self.unavailable_after:g} s)"
                    if writes:
                        raise EtcdUnknownOutcome(
                            f"etcd {endpoint} did not answer {op} {unanswered_for}"
                        )
                    raise EtcdUnavailable(
                        f"etcd is unavailable: {endpoint} did not answer {op} {unanswered_for}"
                    )
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
                if response.status_code == 200:
                    return self._decode(op, endpoint, response, reply_type, writes, started)
                message = _refusal(response)
                expired = response.status_code == 401 or "invalid auth token" in message
                if expired and self._user is not None and self._token is not None:
                    self._token = None  # expired: authenticate again
                    continue
                retry = response.status_code in (502, 503, 504) or any(
                    m in message for m in _RETRY_ELSEWHERE
                )
                if not retry:
                    self._observe(op, "error", started)
                    for refusal, code in REQUEST_REFUSALS.items():
                        if refusal in message:
                            raise EtcdRequestRefused(
                                f"etcd {endpoint} refused {op}: {message}", code=code
                            )
                    raise EtcdError(f"etcd {endpoint} refused {op}: {message}")
                last = f"{endpoint}: {message}"
            self._observe(op, "unavailable", started)
            self._next()
            now = trio.current_time()
            if now >= deadline:
                raise EtcdUnavailable(
                    f"etcd is unavailable: no endpoint of {', '.join(self.endpoints)} served "
                    f"{op} for {self.unavailable_after:g} s (last: {last})"
                )
            await trio.sleep(min(delay, deadline - now))
            delay = min(delay * 2, 1.0)

    def _decode(
        self,
        op: str,
        endpoint: str,
        response: httpx.Response,
        reply_type: type[Reply],
        writes: bool,
        started: float,
    ) -> Reply:
        try:
            answer = decode_reply(reply_type, response.content)
        except msgspec.DecodeError as exc:
            # etcd said 200, so a write went through raft or not; what it did is unknown.
            self._observe(op, "lost" if writes else "error", started)
            error = EtcdUnknownOutcome if writes else EtcdError
            raise error(f"etcd {endpoint} answered {op} with a malformed reply: {exc}") from None
        self._observe(op, "ok", started)
        return answer

    # ------------------------------------------------------------ the calls, typed

    async def range(self, body: dict[str, Any]) -> RangeReply:
        """``/v3/kv/range``."""
        return await self.call("range", "/v3/kv/range", body, RangeReply)

    async def txn(self, body: dict[str, Any]) -> TxnReply:
        """``/v3/kv/txn``, a write (a lost answer is :class:`EtcdUnknownOutcome`)."""
        return await self.call("txn", "/v3/kv/txn", body, TxnReply)

    async def read_ranges(self, op: str, ranges: Sequence[dict[str, Any]]) -> list[RangeResult]:
        """The ``request_range`` bodies ``ranges`` in one read-only txn (one etcd revision).

        Raises:
            EtcdError: etcd answered with fewer results, or one that is not a range's.
        """
        body = {"success": [{"request_range": r} for r in ranges]}
        answer = await self.call(op, "/v3/kv/txn", body, TxnReply, read_only=True)
        results = [response.response_range for response in answer.responses]
        if len(results) != len(ranges) or None in results:
            raise EtcdError(
                f"etcd {self.endpoint} answered {op}, a txn of {len(ranges)} ranges, with "
                f"{len(results)} answers of which {results.count(None)} not a range's"
            )
        return [result for result in results if result is not None]

    async def compact(self, revision: int) -> None:
        """``/v3/kv/compaction``: etcd's history up to ``revision`` goes."""
        await self.call("compaction", "/v3/kv/compaction", {"revision": revision}, CompactionReply)

    async def lease_grant(self, ttl: int) -> LeaseGrantReply:
        """``/v3/lease/grant``: a lease of ``ttl`` seconds."""
        return await self.call("lease", "/v3/lease/grant", {"TTL": ttl}, LeaseGrantReply)

    async def lease_keepalive(self, lease: int) -> LeaseKeepAliveReply:
        """``/v3/lease/keepalive``: renew ``lease`` once."""
        return await self.call("lease", "/v3/lease/keepalive", {"ID": lease}, LeaseKeepAliveReply)

    async def lease_revoke(self, lease: int) -> None:
        """``/v3/lease/revoke``: ``lease`` ends, and the keys bound to it go."""
        await self.call("lease", "/v3/lease/revoke", {"ID": lease}, LeaseRevokeReply)

    # ------------------------------------------------------------ the wire

    async def _post(self, endpoint: str, path: str, payload: bytes) -> httpx.Response:
        headers = {"content-type": "application/json"}
        if self._user is not None:
            if self._token is None:
                self._token = await self._authenticate(endpoint)
            headers["authorization"] = self._token
        return await self._http.post(endpoint + path, content=payload, headers=headers)

    async def _authenticate(self, endpoint: str) -> str:
        body = _json.encode({"name": self._user, "password": self._password})
        response = await self._http.post(endpoint + "/v3/auth/authenticate", content=body)
        if response.status_code == 200:
            try:
                return decode_reply(AuthenticateReply, response.content).token
            except msgspec.DecodeError:
                pass  # no token: reported below as etcd wrote it
        raise EtcdError(f"etcd {endpoint} refused user {self._user!r}: {_refusal(response)}")

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


def _refusal(response: httpx.Response) -> str:
    """etcd's message in a refusal: the error body's ``message`` or ``error``, else the text as
    it reads (etcd's own refusals in front of the gateway are plain text: a client certificate
    with a CommonName, "CommonName of client sending a request against gateway will be
    ignored...")."""
    try:
        body = decode_reply(ErrorReply, response.content)
    except msgspec.DecodeError:
        body = ErrorReply()
    return (
        body.message or body.error or response.text.strip()[:200] or f"HTTP {response.status_code}"
    )
