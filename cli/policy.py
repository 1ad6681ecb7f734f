"""``podium policy reload``: make the running daemon read its scheduler Policy file again.

Kubernetes counterpart: none (kube-scheduler reads its Policy once, at start); the Policy file
itself is v1.14's (pkg/scheduler/api/types.go).

Owns: nothing; one ReloadPolicy request on one connection.
Emits: a ReloadPolicy request; the predicates and priorities now in force, as text or JSON.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from podium.cli.common.arguments import add_command_group
from podium.cli.common.output import EXIT_OK, add_output_option, dump_json, err, message_doc, out
from podium.cli.common.remote import add_remote_command, run_client

if TYPE_CHECKING:
    from podium.protocol.client import Client

__all__ = ["cmd_policy_reload", "register"]


def cmd_policy_reload(args: argparse.Namespace) -> int:
    """``podium policy reload``: reload, then print what is in force."""

    async def body(client: Client) -> int:
        reply = await client.reload_policy()
        for w in reply.warnings:
            err(f"warning: {w}")
        if args.output == "json":
            doc = message_doc(reply)
            dump_json(doc)
            return EXIT_OK
        out("Predicates (in order):")
        for name in reply.predicates:
            out(f"  {name}")
        out("Priorities:")
        if reply.priorities:
            width = max(len(p.name) for p in reply.priorities)
            for p in reply.priorities:
                out(f"  {p.name.ljust(width)}   weight {p.weight}")
        return EXIT_OK

    return run_client(args, body)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``policy`` command group (``reload``) to ``podium``."""
    policy = add_command_group(
        subparsers,
        "policy",
        summary="manage the daemon's scheduler policy",
        description="Manage the scheduler Policy of a running daemon.",
        epilog="examples:\n  podium policy reload",
    )
    p = add_remote_command(
        policy,
        "reload",
        summary="read the policy file again and print what is now in force",
        description=(
            "Make the daemon read its configured policy file again. The new predicates and\n"
            "priorities apply from the next scheduling attempt; a policy that does not\n"
            "validate is refused (exit 1) and the old one stays. A daemon started without\n"
            "a policy file (it runs the default policy) says so and refuses (exit 1)."
        ),
        epilog="examples:\n  podium policy reload\n  podium policy reload -o json",
    )
    add_output_option(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_policy_reload)
