"""``podium stats``: the running daemon's counts of objects, queues and scheduling attempts.

Kubernetes counterpart: none in kubectl; the same figures are the scheduler's metrics
(pkg/scheduler/metrics), which ``/metrics`` serves too.

Owns: nothing; one Stats request on one connection.
Emits: a Stats request; a two-column table or JSON on stdout.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from podium.cli.common.output import (
    EXIT_OK,
    add_output_option,
    dump_json,
    human_duration,
    message_doc,
    table,
)
from podium.cli.common.remote import add_remote_command, run_client

if TYPE_CHECKING:
    from podium.protocol.client import Client

__all__ = ["cmd_stats", "register"]


def cmd_stats(args: argparse.Namespace) -> int:
    """``podium stats``: the daemon's counts, as a table or JSON."""

    async def body(client: Client) -> int:
        s = await client.stats()
        if args.output == "json":
            dump_json(message_doc(s))
            return EXIT_OK
        p = s.pending
        rows = [
            ["revision", str(s.revision)],
            ["ready", str(s.ready).lower()],
            ["nodes", str(s.nodes)],
            ["pods", f"{s.pods} (bound {s.bound}, assumed {s.assumed})"],
            [
                "pending",
                f"{p.active + p.backoff + p.unschedulable} (active {p.active}, "
                f"backoff {p.backoff}, unschedulable {p.unschedulable})",
            ],
            [
                "attempts",
                f"scheduled {s.scheduled}, unschedulable {s.unschedulable}, errors {s.errors}",
            ],
            ["connections", f"{s.connections} (watchers {s.watchers})"],
            ["leader", _leader(s.leading, s.leader)],
            ["uptime", human_duration(s.uptime_seconds)],
            ["server", client.server_version],
        ]
        table(rows)
        return EXIT_OK

    return run_client(args, body)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``stats`` to ``podium``."""
    p = add_remote_command(
        subparsers,
        "stats",
        summary="counts of objects, queues and scheduling attempts",
        description="Show the daemon's counts: objects, pending pods by queue, attempts.",
        epilog="examples:\n  podium stats\n  podium stats -o json",
    )
    add_output_option(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_stats)


def _leader(leading: bool, leader: str | None) -> str:
    """The ``leader`` row: this daemon, or the replica that leads (leader election)."""
    if leading:
        return f"this daemon ({leader})" if leader else "this daemon"
    return f"{leader} (this replica follows)" if leader else "none (this replica follows)"
