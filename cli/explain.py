"""``podium explain``: why a pod is pending — every examined node's verdict and what would make
the pod fit.

Kubernetes counterpart: the ``FailedScheduling`` event's message (``0/3 nodes are available:
...``, pkg/scheduler/core/generic_scheduler.go@v1.14 ``FitError``), spelled out node by node.

Owns: nothing; one Explain request on one connection.
Emits: an Explain request; text or JSON on stdout.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from podium.cli.common.output import (
    EXIT_OK,
    EXIT_USAGE,
    add_output_option,
    dump_json,
    err,
    out,
    verdict_table,
)
from podium.cli.common.remote import add_remote_command, run_client

if TYPE_CHECKING:
    from podium.protocol.client import Client
    from podium.protocol.wire import ExplainReply

__all__ = ["cmd_explain", "register"]


def _explain_doc(reply: ExplainReply) -> dict[str, Any]:
    import msgspec

    doc: dict[str, Any] = msgspec.to_builtins(reply.placement)
    doc["hints"] = msgspec.to_builtins(reply.hints)
    return doc


def _print_explain(reply: ExplainReply) -> None:
    p = reply.placement
    out(f"Pod:       {p.namespace}/{p.name}")
    out(f"Node:      {p.node or '<none>'}")
    if p.bound:
        # kubectl describe: a bound pod has a node and a status; no attempts are kept for it.
        out("Status:    Bound")
        return
    if p.message:
        out(f"Message:   {p.message}")
    out(f"Attempts:  {p.attempts}")
    if p.preempted:
        out(f"Preempts:  {', '.join(p.preempted)}")
    out()
    verdict_table(p.nodes)
    if reply.hints:
        out()
        out("Hints:")
        for h in reply.hints:
            if h.is_beyond_every_node:
                out(
                    f"  no node can ever hold it: it asks {h.missing} more {h.resource} than "
                    "the largest node's allocatable"
                )
                continue
            plural = "node" if h.nodes == 1 else "nodes"
            out(f"  needs {h.missing} more {h.resource} on {h.nodes} {plural}")


def cmd_explain(args: argparse.Namespace) -> int:
    """``podium explain [NS/]NAME``: the placement, node by node, and the hints."""
    from podium.protocol.objects import namespace_or_default

    namespace, _, name = args.pod.rpartition("/")
    namespace = namespace_or_default(namespace)
    if not name or "/" in namespace:
        err(f"error: {args.pod!r} is not NAMESPACE/NAME or NAME")
        return EXIT_USAGE

    async def body(client: Client) -> int:
        reply = await client.explain(namespace, name)
        if args.output == "json":
            dump_json(_explain_doc(reply))
        else:
            _print_explain(reply)
        return EXIT_OK

    return run_client(args, body)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``explain`` to ``podium``."""
    p = add_remote_command(
        subparsers,
        "explain",
        summary="why is a pod pending: every node's verdict and what would make it fit",
        description=(
            "Explain a pod's placement: the node it would go to, or the scheduler's message,\n"
            "every examined node in walk order with its reasons or total score, and hints\n"
            "on what would make it fit. NAME alone means default/NAME."
        ),
        epilog=(
            "examples:\n"
            "  podium explain default/web-1\n"
            "  podium explain big-job -o json\n\n"
            "output (hints):\n"
            "  needs 200m more cpu on 3 nodes"
        ),
    )
    p.add_argument("pod", metavar="NS/NAME", help="the pod (NAME alone: default/NAME)")
    add_output_option(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_explain)
