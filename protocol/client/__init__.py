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
- :mod:`~podium.protocol.client.backoff`: :class:`Backoff` (exponential, with jitter);
- :mod:`~podium.protocol.client.connection`: :class:`Client` and :func:`connect`;
- :mod:`~podium.protocol.client.informer`: :class:`Informer`, a cache kept by list and watch
  that resumes by itself (docs/protocol.md "Resuming: what a client does");
- :mod:`~podium.protocol.client.blocking`: :class:`BlockingClient`, :class:`BlockingInformer`.

Access: ``connect(server, token=..., tls=client_ssl_context(ca))``; see the transport module.
"""

from __future__ import annotations

from podium.protocol.client.backoff import Backoff
from podium.protocol.client.blocking import BlockingClient, BlockingInformer
from podium.protocol.client.connection import (
    CANCEL_TIMEOUT_SECONDS,
    DEFAULT_CHUNK_SIZE,
    LEADER_WAIT_SECONDS,
    WATCH_BUFFER,
    Client,
    WatchStream,
    connect,
)
from podium.protocol.client.errors import (
    ClientConnectionError,
    ConnectionLost,
    LeaderUnavailable,
    RemoteError,
    ServerUnreachable,
    TLSFailed,
)
from podium.protocol.client.informer import (
    Informer,
    InformerCache,
    Notification,
    NotificationType,
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
    "LEADER_WAIT_SECONDS",
    "WATCH_BUFFER",
    "Backoff",
    "BlockingClient",
    "BlockingInformer",
    "Client",
    "ClientConnectionError",
    "ConnectionLost",
    "Informer",
    "InformerCache",
    "LeaderUnavailable",
    "Notification",
    "NotificationType",
    "RemoteError",
    "ServerUnreachable",
    "TLSFailed",
    "WatchStream",
    "client_ssl_context",
    "connect",
    "parse_server",
    "read_token_file",
]
