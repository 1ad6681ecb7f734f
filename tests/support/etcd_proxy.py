"""A small TCP proxy between a Podium replica and one etcd member, which reads the HTTP/1.1
requests of etcd's gateway going through it and, by a rule the test changes at any time,
passes a request, swallows it and every later byte of its connection (a black hole: the
connection stays open, nothing answers), or passes it and loses its answer (the connection
closes once etcd has had time to apply it).

It runs trio in a thread of its own, so that tests whose daemon helpers block (subprocesses,
urllib) keep it serving; the rule and the counters are plain attributes, read there and set
here (each a single store).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

import trio

__all__ = ["BLACK_HOLE", "LOSE_ANSWER", "PASS", "EtcdProxy", "Rule", "writes"]

PASS = "pass"
BLACK_HOLE = "black_hole"
LOSE_ANSWER = "lose_answer"

Rule = Callable[[bytes], str]
"""What to do with a request (its head and body): :data:`PASS`, :data:`BLACK_HOLE` or
:data:`LOSE_ANSWER`."""


def writes(request: bytes) -> bool:
    """Whether a gateway request writes a key (a txn with a put: the store's commits and the
    leader key's creation; not reads, nor the lease's grants, renewals and revocations)."""
    return request.startswith(b"POST /v3/kv/txn ") and b'"request_put"' in request


class EtcdProxy:
    """Listens on loopback (port 0) and relays each connection to ``upstream`` (host:port).

    Attributes:
        rule: applied to every request (default: pass them all).
        swallowed: requests black-holed or whose answers were lost so far.
    """

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self._upstream = (host, int(port))
        self.rule: Rule = lambda _request: PASS
        self.swallowed = 0
        self.port = 0
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> EtcdProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the etcd proxy did not start")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._token is not None and self._scope is not None
        self._token.run_sync_soon(self._scope.cancel)
        self._thread.join(10)

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        with trio.CancelScope() as self._scope:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            self.port = listeners[0].socket.getsockname()[1]
            self._ready.set()
            await trio.serve_listeners(self._relay, listeners)

    async def _relay(self, client: trio.SocketStream) -> None:
        try:
            server = await trio.open_tcp_stream(*self._upstream)
        except OSError:
            await client.aclose()
            return
        answers = _Answers()
        async with client, server, trio.open_nursery() as nursery:
            nursery.start_soon(self._answers, server, client, answers)
            buffer = b""
            while True:
                request, buffer = await _next_request(client, buffer)
                if request is None:
                    break
                action = self.rule(request)
                if action == BLACK_HOLE:
                    self.swallowed += 1
                    await trio.sleep_forever()
                if action == LOSE_ANSWER:
                    self.swallowed += 1
                    answers.lost = True
                    await server.send_all(request)
                    await trio.sleep(0.5)  # etcd applies it meanwhile
                    break
                await server.send_all(request)
            nursery.cancel_scope.cancel()

    @staticmethod
    async def _answers(
        server: trio.SocketStream, client: trio.SocketStream, answers: _Answers
    ) -> None:
        try:
            while data := await server.receive_some(65536):
                if not answers.lost:
                    await client.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


class _Answers:
    lost = False


async def _next_request(stream: trio.SocketStream, buffer: bytes) -> tuple[bytes | None, bytes]:
    """One HTTP/1.1 request (head and Content-Length body) off ``stream``; None at its end."""
    try:
        while b"\r\n\r\n" not in buffer:
            data = await stream.receive_some(65536)
            if not data:
                return None, buffer
            buffer += data
        head, _, rest = buffer.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            data = await stream.receive_some(65536)
            if not data:
                return None, b""
            rest += data
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return None, b""
    return head + b"\r\n\r\n" + rest[:length], rest[length:]
