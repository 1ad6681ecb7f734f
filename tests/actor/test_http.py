"""The HTTP endpoint: request-head parsing, the routes, and one exchange over an in-memory stream
(a HEAD answers without a body; a slow client gets 408 after exactly 10 s of the clock)."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
import trio
import trio.testing
from prometheus_client import CONTENT_TYPE_LATEST

from podium.actors.daemon.http import (
    READ_TIMEOUT_SECONDS,
    HttpServer,
    Request,
    parse_request,
)


@dataclass(frozen=True)
class ParseCase:
    name: str
    head: bytes
    want: Request | None


PARSE_CASES = [
    ParseCase("plain GET", b"GET /metrics HTTP/1.1", Request("GET", "/metrics", {})),
    ParseCase(
        "headers lower-cased, query dropped",
        b"HEAD /readyz?verbose HTTP/1.0\r\nHost: x:1\r\nAccept:  */*",
        Request("HEAD", "/readyz", {"host": "x:1", "accept": "*/*"}),
    ),
    ParseCase("not HTTP/1", b"GET / HTTP/2.0", None),
    ParseCase("missing version", b"GET /metrics", None),
    ParseCase("lower-case method", b"get /metrics HTTP/1.1", None),
    ParseCase("absolute target", b"GET http://x/metrics HTTP/1.1", None),
    ParseCase("header without colon", b"GET / HTTP/1.1\r\nHost x", None),
    ParseCase("space before colon", b"GET / HTTP/1.1\r\nHost : x", None),
]


@pytest.mark.parametrize("case", PARSE_CASES, ids=attrgetter("name"))
def test_parse_request(case: ParseCase) -> None:
    assert parse_request(case.head) == case.want


class Problems:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def __call__(self) -> list[str]:
        return self.problems


@dataclass(frozen=True)
class RouteCase:
    name: str
    method: str
    path: str
    problems: tuple[str, ...]
    status: int
    body: bytes
    allow: str | None = None


ROUTE_CASES = [
    RouteCase("healthz", "GET", "/healthz", ("store not recovered",), 200, b"ok"),
    RouteCase("livez", "GET", "/livez", (), 200, b"ok"),
    RouteCase("ready", "GET", "/readyz", (), 200, b"ok"),
    RouteCase(
        "not ready: one problem a line",
        "GET",
        "/readyz",
        ("store not recovered", "actor binder not running"),
        503,
        b"store not recovered\nactor binder not running\n",
    ),
    RouteCase("unknown path", "GET", "/nope", (), 404, b"404 page not found\n"),
    RouteCase("unknown path, any method", "POST", "/nope", (), 404, b"404 page not found\n"),
    RouteCase(
        "wrong method", "POST", "/healthz", (), 405, b"method not allowed\n", allow="GET, HEAD"
    ),
]


@pytest.mark.parametrize("case", ROUTE_CASES, ids=attrgetter("name"))
async def test_routes(case: RouteCase) -> None:
    readiness = Problems()
    readiness.problems = list(case.problems)
    server = HttpServer([], readiness)
    response = await server.respond(Request(case.method, case.path, {}))
    assert (response.status, response.body, response.allow) == (
        case.status,
        case.body,
        case.allow,
    )


async def test_metrics_are_rendered_in_a_thread() -> None:
    response = await HttpServer([], Problems()).respond(Request("GET", "/metrics", {}))
    assert response.status == 200
    assert response.content_type == CONTENT_TYPE_LATEST
    assert b"# TYPE scheduler_schedule_attempts_total counter\n" in response.body


async def _exchange(request: bytes) -> bytes:
    client, server_end = trio.testing.memory_stream_pair()
    server = HttpServer([], Problems())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server._serve_connection, server_end)
        await client.send_all(request)
        received = b""
        while data := await client.receive_some():
            received += data
    return received


async def test_head_answers_the_length_without_the_body() -> None:
    got = await _exchange(b"HEAD /livez HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"\r\nContent-Length: 2\r\n" in head + b"\r\n"
    assert b"Connection: close" in head
    assert body == b""


async def test_get_answers_and_closes() -> None:
    got = await _exchange(b"GET /healthz HTTP/1.1\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 200 OK\r\n")
    assert got.endswith(b"\r\n\r\nok")


async def test_a_malformed_head_is_400() -> None:
    got = await _exchange(b"BREW /pot HTCPCP/1.0\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 400 Bad Request\r\n")


async def test_an_oversized_head_is_431() -> None:
    got = await _exchange(b"GET /healthz HTTP/1.1\r\nX: " + b"a" * 20_000)
    assert got.startswith(b"HTTP/1.1 431 ")


async def test_a_slow_client_gets_408_on_time(autojump_clock: trio.testing.MockClock) -> None:
    client, server_end = trio.testing.memory_stream_pair()
    server = HttpServer([], Problems())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server._serve_connection, server_end)
        await client.send_all(b"GET /healthz HTTP/1.1\r\n")
        started = trio.current_time()
        got = await client.receive_some()
        assert trio.current_time() - started == READ_TIMEOUT_SECONDS
    assert got.startswith(b"HTTP/1.1 408 Request Timeout\r\n")


async def test_serves_real_sockets() -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        await nursery.start(HttpServer(listeners, Problems()).run)
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(b"GET /readyz HTTP/1.1\r\n\r\n")
            got = b""
            while data := await stream.receive_some():
                got += data
        assert got.startswith(b"HTTP/1.1 200 OK\r\n")
        nursery.cancel_scope.cancel()
