"""``podium explain``: why a pod is pending — every examined node's verdict and what would make
the pod fit, and for a member of a gang its group's verdict too; or why a pod group is not
placed (``podium explain podgroup/ml/train``): each
member's verdict, the members that block it, what would help, the victims its preemption
would evict, or the quorum it waits for.

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
    hint_lines,
    out,
    print_group,
    verdict_table,
)
from podium.cli.common.remote import add_remote_command, run_client

if TYPE_CHECKING:
    from podium.protocol.client import Client
    from podium.protocol.wire import ExplainReply

__all__ = ["cmd_explain", "explain_target", "register"]

_KINDS = {
    alias: kind
    for kind, aliases in {
        "Pod": ("pods", "pod", "po"),
        "PodGroup": ("podgroups", "podgroup", "pg"),
    }.items()
    for alias in aliases
}
"""The kinds ``explain`` takes, by kubectl's names (``get``'s, for these two kinds)."""


def explain_target(text: str, namespace: str | None) -> tuple[str, str, str]:
    """What ``podium explain`` is asked about: ``(Pod or PodGroup, namespace, name)``.

    ``NAME`` and ``NS/NAME`` name a pod, as they always have; ``KIND/NAME`` and
    ``KIND/NS/NAME`` (``get``'s forms) a pod or a pod group, KIND being ``pod`` (``pods``,
    ``po``) or ``podgroup`` (``podgroups``, ``pg``). A two-part name whose first part is one
    of those words is KIND/NAME: a pod in a namespace so named is ``pod/NS/NAME``. ``-n``
    gives the namespace of a form without one (default: default).

    Raises:
        ValueError: an empty part, more than three, a KIND other than those, or a namespace
            ``-n`` contradicts.
    """
    parts = text.split("/")
    if len(parts) > 3 or not all(parts):
        raise ValueError(f"{text!r} is not NAME, NAMESPACE/NAME or KIND/[NAMESPACE/]NAME")
    kind = _KINDS.get(parts[0].lower()) if len(parts) > 1 else None
    if len(parts) == 3 and kind is None:
        raise ValueError(
            f"{text!r}: explain takes a pod or a pod group (pod/NS/NAME, podgroup/NS/NAME), "
            f"not {parts[0]!r}"
        )
    if kind is None:
        kind, rest = "Pod", parts
    else:
        rest = parts[1:]
    given = rest[0] if len(rest) == 2 else None
    if given is not None and namespace is not None and namespace != given:
        raise ValueError(f"{text!r} is in namespace {given}, not {namespace} (-n)")
    return kind, given or namespace or "default", rest[-1]


def _explain_doc(reply: ExplainReply) -> dict[str, Any]:
    import msgspec

    doc: dict[str, Any] = msgspec.to_builtins(reply.placement)
    doc["hints"] = msgspec.to_builtins(reply.hints)
    if reply.group is not None:
        # The pod's group, as ``explain podgroup/NS/NAME -o json`` prints it.
        doc["group"] = msgspec.to_builtins(reply.group)
    return doc


def _print_explain(reply: ExplainReply) -> None:
    p = reply.placement
    out(f"Pod:       {p.namespace}/{p.name}")
    group = reply.group
    if (
        p.node
        and not p.bound
        and group is not None
        and group.min_count is not None
        and not group.placed
    ):
        # A member that fits alone is not placed while its gang is not: say so beside the node,
        # so that ``Node: n0`` is not read as the pod's place.
        out(f"Node:      <none> (fits {p.node} alone; its group would not be placed)")
    else:
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
        for line in hint_lines(reply.hints):
            out(f"  {line}")
    if reply.group is not None:
        # The group's verdict, as ``explain podgroup/NS/NAME`` gives it (without the members'
        # tables: ``explain podgroup/...`` shows them).
        out()
        print_group(reply.group, members=False)


def cmd_explain(args: argparse.Namespace) -> int:
    """``podium explain [KIND/][NS/]NAME``: a pod's placement, node by node, and the hints;
    or a pod group's members, what blocks it and what would help."""
    try:
        kind, namespace, name = explain_target(args.pod, args.namespace)
    except ValueError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE

    async def body(client: Client) -> int:
        if kind == "PodGroup":
            import msgspec

            group = (await client.explain_group(namespace, name)).group
            if args.output == "json":
                dump_json(msgspec.to_builtins(group))
            else:
                print_group(group)
            return EXIT_OK
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
        summary=(
            "why is a pod pending, or a pod group not placed: every node's verdict, what would help"
        ),
        description=(
            "Explain a pod's placement: the node it would go to, or the scheduler's message,\n"
            "every examined node in walk order with its reasons or total score, and hints\n"
            "on what would make it fit. NAME alone means default/NAME. For a member of a\n"
            "gang it also gives the group's verdict: the quorum it waits for, or whether the\n"
            "group's next attempt places it, the members that block it and what would help\n"
            "(the member itself is judged as that attempt would judge it).\n\n"
            "podgroup/NS/NAME (pg/...) explains a pod group: its members decided one after\n"
            "another as its next attempt would, whether the group as a whole would be placed,\n"
            "the members that block it with their nodes' verdicts and hints, the pods its\n"
            "preemption would evict, or the quorum it waits for. Nothing changes."
        ),
        epilog=(
            "examples:\n"
            "  podium explain default/web-1\n"
            "  podium explain big-job -o json\n"
            "  podium explain podgroup/ml/train\n"
            "  podium explain pg/train -n ml -o json\n\n"
            "output (hints):\n"
            "  needs 200m more cpu on 3 nodes"
        ),
    )
    p.add_argument(
        "pod",
        metavar="[KIND/][NS/]NAME",
        help="a pod (NAME alone: default/NAME; or pod/NS/NAME), or podgroup/NS/NAME",
    )
    p.add_argument("-n", "--namespace", metavar="NS", help="namespace (default: default)")
    add_output_option(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_explain)
