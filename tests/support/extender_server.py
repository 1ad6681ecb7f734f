"""A real scheduler extender for the tests: an HTTP server on loopback (plain or TLS) that
answers the v1.14 verbs as a test tells it to.

It runs ``http.server.ThreadingHTTPServer`` in a thread (one thread per connection, HTTP/1.1
keep-alive), so the daemon or the trio code under test reaches it over a real socket. Each verb
gets a handler ``(args) -> Answer``; ``args`` is the request body as parsed JSON (v1.14 keys:
``Pod``, ``Nodes``, ``NodeNames``, ...). Ready-made handlers: :func:`filter_nodes`,
:func:`prioritize`, :func:`preempt_sparing`, :class:`BindLog`, and the failures :data:`HANG`,
:func:`status`, :func:`garbage`, :func:`reply`.

Certificates for the TLS tests come from :func:`make_certificates` (the ``openssl`` command
line): a CA, a server certificate for ``localhost`` and ``127.0.0.1``, a client certificate.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "HANG",
    "Answer",
    "BindLog",
    "ExtenderServer",
    "Handler",
    "filter_nodes",
    "garbage",
    "make_certificates",
    "node_names",
    "preempt_sparing",
    "prioritize",
    "reply",
    "status",
]


@dataclass(frozen=True)
class Answer:
    """What the server sends: a status and a body; ``hang`` waits until the server stops."""

    status: int = 200
    body: bytes = b""
    hang: bool = False


Handler = Callable[[Any], Answer]

HANG: Handler = lambda args: Answer(hang=True)  # noqa: E731 - a constant handler
"""Never answers (until the server stops): for timeouts."""


def reply(value: Any) -> Handler:
    """Always answer ``value`` as JSON."""
    body = json.dumps(value).encode()
    return lambda args: Answer(body=body)


def status(code: int) -> Handler:
    """Always answer ``code`` with an empty body."""
    return lambda args: Answer(status=code)


def garbage(body: bytes = b"{not json") -> Handler:
    """Always answer 200 with ``body``."""
    return lambda args: Answer(body=body)


def node_names(args: Any) -> list[str]:
    """The node names of a filter or prioritize request (``NodeNames``, else ``Nodes``)."""
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [item["metadata"]["name"] for item in (args.get("Nodes") or {}).get("items", [])]


def filter_nodes(verdict: Callable[[str], str | None], *, tagged: bool = False) -> Handler:
    """A filter verb: ``verdict(node)`` is None for a node that passes, else why it fails.

    Answers as a Go extender without JSON tags would (``NodeNames``/``Nodes``, ``FailedNodes``),
    or with ``tagged`` as one built on api/v1's tags (``nodenames``/``nodes``, ``failedNodes``).
    """

    def handle(args: Any) -> Answer:
        names = node_names(args)
        passing = [n for n in names if verdict(n) is None]
        failed = {n: why for n in names if (why := verdict(n)) is not None}
        keys = (
            ("nodenames", "nodes", "failedNodes")
            if tagged
            else ("NodeNames", "Nodes", "FailedNodes")
        )
        body: dict[str, Any] = {keys[2]: failed}
        if args.get("NodeNames") is not None:
            body[keys[0]] = passing
        else:
            items = [i for i in args["Nodes"]["items"] if i["metadata"]["name"] in passing]
            body[keys[1]] = {"items": items}
        return Answer(body=json.dumps(body).encode())

    return handle


def prioritize(score: Callable[[str], int], *, tagged: bool = False) -> Handler:
    """A prioritize verb: ``score(node)`` for every node sent (``Host``/``Score``, or with
    ``tagged`` api/v1's ``host``/``score``)."""
    host, key = ("host", "score") if tagged else ("Host", "Score")

    def handle(args: Any) -> Answer:
        body = [{host: n, key: score(n)} for n in node_names(args)]
        return Answer(body=json.dumps(body).encode())

    return handle


def preempt_sparing(protected: set[str]) -> Handler:
    """A preempt verb that vetoes every node whose victims include a pod in ``protected``
    (by name, or by uid for a nodeCacheCapable request), and agrees to the rest."""

    def handle(args: Any) -> Answer:
        answer: dict[str, Any] = {}
        if args.get("NodeNameToVictims") is not None:
            for node, victims in args["NodeNameToVictims"].items():
                pods = victims["Pods"]
                if any(p["metadata"]["name"] in protected for p in pods):
                    continue
                answer[node] = {
                    "Pods": [{"UID": p["metadata"]["uid"]} for p in pods],
                    "NumPDBViolations": victims["NumPDBViolations"],
                }
        else:
            for node, victims in (args.get("NodeNameToMetaVictims") or {}).items():
                if any(p["UID"] in protected for p in victims["Pods"]):
                    continue
                answer[node] = victims
        return Answer(body=json.dumps({"NodeNameToMetaVictims": answer}).encode())

    return handle


@dataclass
class BindLog:
    """A bind verb that records each bind; idempotent as a Kubernetes binding is: binding a
    pod again to the node it is on is fine, to another node an error. ``refuse`` lists pod
    names it refuses."""

    refuse: set[str] = field(default_factory=set)
    bound: dict[str, str] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, args: Any) -> Answer:
        uid, node = args["PodUID"], args["Node"]
        with self.lock:
            self.calls.append((uid, node))
            if args["PodName"] in self.refuse:
                return Answer(body=b'{"Error": "refused by the test"}')
            if self.bound.setdefault(uid, node) != node:
                message = f"pod {uid} is already bound to {self.bound[uid]}"
                return Answer(body=json.dumps({"Error": message}).encode())
        return Answer(body=b"{}")


class ExtenderServer:
    """A real HTTP(S) extender on 127.0.0.1 (port 0). Use as a context manager.

    Args:
        handlers: verb -> handler; a verb without one answers 404.
        tls: ``(certificate, key)`` to serve HTTPS; ``client_ca`` then requires a client
            certificate signed by it.
    """

    def __init__(
        self,
        handlers: dict[str, Handler] | None = None,
        *,
        tls: tuple[str, str] | None = None,
        client_ca: str | None = None,
    ) -> None:
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self.requests: list[tuple[str, Any]] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # One segment per answer (else the body waits ~40 ms for a delayed ACK).
            disable_nagle_algorithm = True
            wbufsize = 64 * 1024

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                args = json.loads(self.rfile.read(length) or b"null")
                verb = self.path.rsplit("/", 1)[-1]
                with server._lock:
                    server.requests.append((verb, args))
                handler = server.handlers.get(verb)
                answer = handler(args) if handler is not None else Answer(status=404)
                if answer.hang:
                    server.stopping.wait(30)
                    return
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            if client_ca is not None:
                context.load_verify_locations(client_ca)
                context.verify_mode = ssl.CERT_REQUIRED
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        # A short poll, so that stopping (shutdown waits for the next poll) is quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The urlPrefix to configure (``http://127.0.0.1:PORT/scheduler``)."""
        return f"{self.scheme}://127.0.0.1:{self.port}/scheduler"

    def verbs(self) -> list[str]:
        """The verbs called so far, in order."""
        with self._lock:
            return [verb for verb, _ in self.requests]

    def __enter__(self) -> ExtenderServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def make_certificates(cwd: Path) -> dict[str, str]:
    """A CA (``ca``), a server certificate for localhost/127.0.0.1 (``server``, ``server-key``)
    and a client certificate (``client``, ``client-key``), all signed by the CA: file paths."""
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=podium extender test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=cwd,
    )  # fmt: skip
    uses = {"server": "serverAuth", "client": "clientAuth"}
    for name, usage in uses.items():
        (cwd / f"{name}.ext").write_text(
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
            "basicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature\n"
            f"extendedKeyUsage={usage}\n"
        )
        _openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}",
            cwd=cwd,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
            cwd=cwd,
        )  # fmt: skip
    return {
        "ca": str(cwd / "ca.pem"),
        "server": str(cwd / "server.pem"),
        "server-key": str(cwd / "server.key"),
        "client": str(cwd / "client.pem"),
        "client-key": str(cwd / "client.key"),
    }
