"""The Python client of the Podium protocol: trio-native, plus a blocking wrapper for scripts.

Kubernetes counterpart: k8s.io/client-go (rest + tools/watch) — a typed client over one
connection, with list-then-watch. Podium's protocol is docs/protocol.md (protocol/wire.py)::

    async with connect("127.0.0.1:7070") as client:
        reply = await client.put([node, pod])            # PutReply once durable
        listed = await client.get("Pod", namespace=None)  # every namespace
        async with client.watch(from_revision=listed.revision, kinds=["Pod"]) as events:
            async for event in events:
                print(event.revision, event.type, event.name, event.node)

Modules, each importing only the ones above it and :mod:`podium.protocol`:

- :mod:`~podium.protocol.client.errors`: the exceptions (their tree is drawn there);
- :mod:`~podium.protocol.client.transport`: addresses, TLS and the access token;
- :mod:`~podium.protocol.client.connection`: :class:`Client` and :func:`connect`;
- :mod:`~podium.protocol.client.blocking`: :class:`BlockingClient`.

Access: ``connect(server, token=..., tls=client_ssl_context(ca))``; see the transport module.
"""

from __future__ import annotations

from podium.protocol.client.blocking import BlockingClient
from podium.protocol.client.connection import (
    CANCEL_TIMEOUT_SECONDS,
    DEFAULT_CHUNK_SIZE,
    WATCH_BUFFER,
    Client,
    WatchStream,
    connect,
)
from podium.protocol.client.errors import (
    ClientConnectionError,
    ConnectionLost,
    RemoteError,
    ServerUnreachable,
    TLSFailed,
)
from podium.protocol.client.transport import (
    DEFAULT_SERVER,
    client_ssl_context,
    parse_server,
    read_token_file,
)

__all__ = [
    "CANCEL_TIMEOUT_SECONDS",
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_SERVER",
    "WATCH_BUFFER",
    "BlockingClient",
    "Client",
    "ClientConnectionError",
    "ConnectionLost",
    "RemoteError",
    "ServerUnreachable",
    "TLSFailed",
    "WatchStream",
    "client_ssl_context",
    "connect",
    "parse_server",
    "read_token_file",
]
