"""The argparse pieces the command groups share: how a command or a command group is declared,
and the value types, each turning a bad value into a usage error (exit 2) that says what was
expected.

Kubernetes counterpart: the flag value types of k8s.io/component-base/cli/flag; a command's
Short/Long/Example of cobra, as kubectl's commands fill them.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence

__all__ = [
    "add_command",
    "add_command_group",
    "add_file_options",
    "at_least",
    "duration",
    "file_mode",
    "positive_seconds",
    "server_address",
]


def add_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    summary: str,
    description: str,
    epilog: str,
    parents: Sequence[argparse.ArgumentParser] = (),
) -> argparse.ArgumentParser:
    """A command: ``summary`` is its line in the group's help, ``description`` and ``epilog``
    are printed as written (line breaks kept); ``parents`` give shared flags."""
    return subparsers.add_parser(
        name,
        parents=list(parents),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help=summary,
        description=description,
        epilog=epilog,
    )


def add_file_options(parser: argparse.ArgumentParser, *, help_text: str) -> None:
    """``-f/--file`` (repeatable, ``-`` for stdin) and ``--strict``, for the commands that
    read objects files."""
    parser.add_argument(
        "-f", "--file", action="append", required=True, metavar="FILE", help=help_text
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help=(
            "refuse objects of kinds Podium does not schedule (Deployment, ConfigMap, ...) "
            "instead of skipping them with a summary on stderr"
        ),
    )


def add_command_group(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    summary: str,
    description: str,
    epilog: str,
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """A command group (``podium db``), declared as :func:`add_command`; returns where its
    subcommands go. One of them is required (``COMMAND`` in the usage line)."""
    group = add_command(subparsers, name, summary=summary, description=description, epilog=epilog)
    return group.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` (to ``high``), else a usage error saying so."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"{low}-{high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"expected {bound}, got {value}")
        return value

    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0 (``2``, ``0.5``), else a usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text}")
    return value


def duration(text: str) -> float:
    """An argparse type: a duration above 0 as kube-scheduler's flags take it (``15s``,
    ``1m30s``, ``500ms``: Go's ``time.ParseDuration``), or plain seconds (``15``); in seconds.
    """
    from podium.protocol.duration import parse_seconds

    try:
        value = parse_seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a duration above 0, got {text!r}")
    return value


def server_address(value: str) -> str:
    """An argparse type: a daemon's address, ``HOST:PORT`` or ``unix:PATH``, or several
    comma-separated (replicas: the first that answers; writes follow the leader)."""
    # Imported here: the client imports trio, which building the parser does not need.
    from podium.protocol.client.transport import parse_server

    try:
        for one in value.split(","):
            parse_server(one.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def file_mode(text: str) -> str:
    """An argparse type: an octal file mode (``0600`` or ``600``)."""
    if not re.fullmatch(r"0?[0-7]{3}", text):
        raise argparse.ArgumentTypeError(f"expected an octal file mode such as 0600, got {text!r}")
    return text
