"""What every command that talks to a running daemon shares: the connection flags, the access
(token, TLS), and running the command's body on one connection with its failures mapped to
messages and exit codes.

Kubernetes counterpart: k8s.io/cli-runtime/pkg/genericclioptions (``ConfigFlags``: ``--server``,
``--token``, ``--certificate-authority``) and kubectl's ``cmdutil.CheckErr``.

Owns: nothing; :func:`run_client` opens one connection (:func:`podium.protocol.client.connect`)
per command, inside its own ``trio.run``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from podium.cli.common.arguments import add_command, server_address
from podium.cli.common.interrupt import run_trio
from podium.cli.common.output import EXIT_FAILED, EXIT_USAGE, err, print_remote_error

if TYPE_CHECKING:
    import ssl

    from podium.protocol.client import Client

__all__ = [
    "DEFAULT_SERVER",
    "SERVER_ENV",
    "TLS_CA_ENV",
    "TOKEN_ENV",
    "access",
    "add_remote_command",
    "run_client",
    "server_of",
]

SERVER_ENV = "PODIUM_SERVER"
TOKEN_ENV = "PODIUM_TOKEN"
TLS_CA_ENV = "PODIUM_TLS_CA"
DEFAULT_SERVER = "127.0.0.1:7070"
""":data:`podium.protocol.client.DEFAULT_SERVER`, written out so that building the parser does
not import the client (and trio); a test keeps the two equal."""


def _connection_options() -> argparse.ArgumentParser:
    """The parent parser of the ``connection`` flags (``--server``, ``--token``, TLS)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("connection")
    group.add_argument(
        "--server",
        type=server_address,
        metavar="HOST:PORT|unix:PATH",
        help=(
            f"the daemon to talk to (default: ${SERVER_ENV}, else {DEFAULT_SERVER}); replicas "
            "comma-separated: the first that answers, writes sent on to the leader"
        ),
    )
    group.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"access token for listeners that require one (default: ${TOKEN_ENV})",
    )
    group.add_argument(
        "--token-file",
        metavar="FILE",
        help="read the token from FILE (its first field of its first line)",
    )
    group.add_argument(
        "--tls",
        action="store_true",
        help="connect with TLS, verifying the daemon against the system's CAs",
    )
    group.add_argument(
        "--tls-ca",
        metavar="FILE",
        help=f"connect with TLS, verifying the daemon against the CAs in FILE (default: ${TLS_CA_ENV})",
    )
    return parent


def add_remote_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    summary: str,
    description: str,
    epilog: str,
) -> argparse.ArgumentParser:
    """A subcommand that talks to a daemon: the connection flags, and ``summary`` (its line in
    the group's help), ``description`` and ``epilog`` printed as written."""
    return add_command(
        subparsers,
        name,
        summary=summary,
        description=description,
        epilog=epilog,
        parents=[_connection_options()],
    )


def server_of(args: argparse.Namespace) -> str:
    """The daemon address(es) a command talks to: ``--server``, else $PODIUM_SERVER, else the
    default."""
    server: str | None = args.server
    if server is None:
        server = os.environ.get(SERVER_ENV) or DEFAULT_SERVER
    return server


def run_client(
    args: argparse.Namespace,
    body: Callable[[Client], Awaitable[int]],
) -> int:
    """Connect, run ``body`` with the client, and map failures to messages and exit codes.

    Cancellation: a Ctrl-C propagates (a ``KeyboardInterrupt``, or a group holding one, from
    ``trio.run``) once the connection is closed; :func:`podium.cli.main.main` turns it into
    exit 130. It reaches the command at a checkpoint of its main task, never inside the
    connection's reader task or a callback, where it would be taken for a dropped connection
    or lost (:func:`~podium.cli.common.interrupt.run_trio`).
    """
    from podium.protocol.client import (
        ClientConnectionError,
        RemoteError,
        ServerUnreachable,
        connect,
        parse_server,
    )

    server = server_of(args)
    try:
        for one in server.split(","):
            parse_server(one.strip())
    except ValueError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE
    try:
        token, tls = access(args, server)
    except ValueError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE

    async def main() -> int:
        async with connect(server, token=token, tls=tls) as client:
            return await body(client)

    try:
        return run_trio(main)
    except ServerUnreachable as exc:
        err(f"error: {exc} (is `podium serve` running?)")
    except RemoteError as exc:
        print_remote_error(exc)
    except ClientConnectionError as exc:
        err(f"error: {exc}")
    return EXIT_FAILED


def access(args: argparse.Namespace, server: str) -> tuple[str | None, ssl.SSLContext | None]:
    """The token (--token, else --token-file, else $PODIUM_TOKEN) and the TLS context (--tls
    or --tls-ca, else $PODIUM_TLS_CA; never for a Unix socket, whose file mode guards it).

    Raises:
        ValueError: a token file or CA file that cannot be read, or TLS asked for a Unix
            socket.
    """
    from podium.protocol.client import client_ssl_context, read_token_file

    token: str | None = getattr(args, "token", None)
    token_file: str | None = getattr(args, "token_file", None)
    if not token and token_file:
        token = read_token_file(token_file)
    token = token or os.environ.get(TOKEN_ENV) or None
    ca: str | None = getattr(args, "tls_ca", None)
    wanted = bool(getattr(args, "tls", False)) or ca is not None
    unix = server.startswith("unix:")
    if wanted and unix:
        raise ValueError(f"TLS is for TCP; {server} is a Unix socket (its file mode guards it)")
    ca = ca or os.environ.get(TLS_CA_ENV) or None
    if unix or not (wanted or ca):
        return token, None
    return token, client_ssl_context(ca)
