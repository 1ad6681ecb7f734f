"""``podium protocol schema``: the JSON Schema of every wire message, for clients in other
languages. No daemon is needed.

Kubernetes counterpart: the OpenAPI document the API server serves (``/openapi/v2``).

Owns: nothing.
Emits: the schema (:func:`podium.protocol.schema.protocol_schema`) as JSON on stdout.
"""

from __future__ import annotations

import argparse

from podium.cli.common.arguments import add_command, add_command_group
from podium.cli.common.output import EXIT_OK, dump_json

__all__ = ["cmd_protocol_schema", "register"]


def cmd_protocol_schema(args: argparse.Namespace) -> int:
    """``podium protocol schema``: print the schema."""
    from podium.protocol.schema import protocol_schema

    dump_json(protocol_schema())
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``protocol`` command group (``schema``) to ``podium``."""
    proto = add_command_group(
        subparsers,
        "protocol",
        summary="the wire protocol, for clients in other languages",
        description="Describe the client <-> daemon protocol.",
        epilog="examples:\n  podium protocol schema > podium-protocol.schema.json",
    )
    p = add_command(
        proto,
        "schema",
        summary="print the JSON Schema of every protocol message",
        description=(
            "Print the JSON Schema of every message (requests, replies, events, errors),\n"
            "from which clients in other languages can be generated. No daemon is needed."
        ),
        epilog="examples:\n  podium protocol schema | jq '.\"$defs\" | keys'",
    )
    p.set_defaults(func=cmd_protocol_schema)
