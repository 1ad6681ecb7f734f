"""The ``podium`` command line: the entry point and the top-level parser each command group's
module extends.

Kubernetes counterpart: k8s.io/kubectl/pkg/cmd/cmd.go (``NewKubectlCommand`` adds each group's
command to the root).

Command groups, one module each (in ``podium --help`` order): :mod:`~podium.cli.simulate`,
:mod:`~podium.cli.serve`, :mod:`~podium.cli.objects` (apply, delete, get, watch),
:mod:`~podium.cli.explain`, :mod:`~podium.cli.stats`,
:mod:`~podium.cli.policy`, :mod:`~podium.cli.protocol`,
:mod:`~podium.cli.db` and :mod:`~podium.cli.bench.command`; what they print with is
:mod:`~podium.cli.output`'s.

Exit codes: 0 ok, 1 rejected input or failure, 2 usage. Human tables on stdout by default,
``-o json`` for machines; warnings and progress go to stderr (progress only on a terminal and
never with ``-o json``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from podium.actors.simulation.cluster import SimulationError
from podium.cli import db, explain, objects, policy, protocol, serve, simulate, stats
from podium.cli.bench import command as bench
from podium.cli.config import podium_version
from podium.cli.output import EXIT_FAILED, EXIT_OK, err
from podium.protocol.errors import PodiumError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """``podium`` with every command group's subcommands."""
    parser = argparse.ArgumentParser(
        prog="podium",
        description="Podium: a pod scheduler service with the Kubernetes scheduler's decisions.",
    )
    parser.add_argument("--version", action="version", version=f"podium {podium_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (simulate, serve, objects, explain, stats, policy, protocol, db, bench):
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's arguments) names; its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except (PodiumError, SimulationError) as exc:
        err(f"error: {exc}")
        return EXIT_FAILED
    except BrokenPipeError:  # `podium simulate ... | head`
        return EXIT_OK
    return code


if __name__ == "__main__":
    sys.exit(main())
