#!/usr/bin/env python3
"""An example scheduler extender (the Kubernetes v1.14 extender protocol), standard library only.

Run it, then point a Policy's ``extenders`` at it::

    python examples/extender.py --port 8888 --reject node-3 --prefer node-1
    # policy.json:
    # {"kind": "Policy", "extenders": [{"urlPrefix": "http://127.0.0.1:8888/scheduler",
    #   "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 5,
    #   "bindVerb": "bind", "nodeCacheCapable": true}]}
    podium serve --policy policy.json

Verbs (POST ``<urlPrefix>/<verb>``, JSON in and out):

- ``filter``: every node passes except those named with ``--reject``, which fail with a reason
  that shows up in the pod's FitError and in ``podium explain``;
- ``prioritize``: 10 for the nodes named with ``--prefer``, 0 for the others (Podium multiplies
  by the extender's ``weight`` and adds it to the node's total);
- ``bind``: records the binding and says yes; binding a pod again to the node it already has
  is fine, to another node an error (as a Kubernetes binding is), so that a daemon restarted
  between this answer and its own commit converges.

A request carries ``NodeNames`` (``nodeCacheCapable: true``) or whole ``Nodes``; the reply uses
the same form. Field names are Go's (``NodeNames``, ``FailedNodes``, ``Host``, ``Score``); Podium
reads them case-insensitively, as Kubernetes does.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888, help="0 picks a free port")
    parser.add_argument("--reject", action="append", default=[], metavar="NODE")
    parser.add_argument("--prefer", action="append", default=[], metavar="NODE")
    parser.add_argument("--quiet", action="store_true", help="do not print each binding")
    args = parser.parse_args()
    reject, prefer = set(args.reject), set(args.prefer)
    bound: dict[str, str] = {}
    lock = threading.Lock()

    def names(request: dict[str, Any]) -> list[str]:
        if request.get("NodeNames") is not None:
            return list(request["NodeNames"])
        return [n["metadata"]["name"] for n in (request.get("Nodes") or {}).get("items", [])]

    def filter_(request: dict[str, Any]) -> Any:
        failed = {
            n: f"node {n} is reserved by the example extender"
            for n in names(request)
            if n in reject
        }
        if request.get("NodeNames") is not None:
            return {
                "NodeNames": [n for n in request["NodeNames"] if n not in failed],
                "FailedNodes": failed,
            }
        items = [n for n in request["Nodes"]["items"] if n["metadata"]["name"] not in failed]
        return {"Nodes": {"items": items}, "FailedNodes": failed}

    def prioritize(request: dict[str, Any]) -> Any:
        return [{"Host": n, "Score": 10 if n in prefer else 0} for n in names(request)]

    def bind(request: dict[str, Any]) -> Any:
        uid, node = request["PodUID"], request["Node"]
        with lock:
            if bound.setdefault(uid, node) != node:
                return {"Error": f"pod {uid} is already bound to {bound[uid]}"}
        if not args.quiet:
            print(f"bound {request['PodNamespace']}/{request['PodName']} to {node}", flush=True)
        return {}

    verbs = {"filter": filter_, "prioritize": prioritize, "bind": bind}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: Podium keeps one pool per extender
        # One segment per answer, sent at once: without these, headers and body leave as two
        # writes and the body waits for the client's delayed ACK (~40 ms on Linux).
        disable_nagle_algorithm = True
        wbufsize = 64 * 1024

        def log_message(self, format: str, *log_args: Any) -> None:  # noqa: A002
            return

        def do_POST(self) -> None:
            verb = verbs.get(self.path.rstrip("/").rsplit("/", 1)[-1])
            length = int(self.headers.get("Content-Length", "0"))
            try:
                request = json.loads(self.rfile.read(length))
                body, status = (
                    json.dumps(verb(request) if verb else {}).encode(),
                    200 if verb else 404,
                )
            except (ValueError, KeyError, TypeError) as exc:
                body, status = json.dumps({"Error": f"bad request: {exc}"}).encode(), 400
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    print(f"listening on http://{args.host}:{server.server_address[1]}/scheduler", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
