"""The ``podium`` command line: the entry point and the top-level parser each command group's
module extends.

Kubernetes counterpart: k8s.io/kubectl/pkg/cmd/cmd.go (``NewKubectlCommand`` adds each group's
command to the root).

Command groups, one module each (in ``podium --help`` order): :mod:`~podium.cli.simulate`,
:mod:`~podium.cli.serve`, :mod:`~podium.cli.objects` (apply, delete, get, watch),
:mod:`~podium.cli.explain`, :mod:`~podium.cli.stats`,
:mod:`~podium.cli.policy`, :mod:`~podium.cli.protocol`,
:mod:`~podium.cli.db` and :mod:`~podium.cli.benchmarks` (whose run is
:mod:`~podium.cli.bench.command`'s); what they print with is :mod:`~podium.cli.common.output`'s.

Start-up: a command module registers its parser with the standard library only and imports
what its command needs (trio, the client, the actors, numpy) inside the command's function, so
``podium --version`` and ``podium get`` pay only for what they use (issue 26 point 5;
tests/unit/cli/test_startup.py keeps it so). This module imports nothing at the top but
``signal``, ``sys`` and :mod:`~podium.cli.common.interrupt` (standard library only):
everything else is imported inside :func:`main`, where a Ctrl-C is caught.

Exit codes: 0 ok, 1 rejected input or failure, 2 usage, 130 stopped by Ctrl-C (SIGINT). Human
tables on stdout by default, ``-o json`` for machines; warnings and progress go to stderr
(progress only on a terminal and never with ``-o json``).

Ctrl-C: wherever it lands (importing, parsing, connecting, inside ``trio.run``, where it may
come as a ``KeyboardInterrupt`` inside an exception group), the command stops with at most one
line on stderr (``interrupted``; none for ``watch``, whose normal end it is, nor before a
command has begun) and exit code 130, never a traceback. Context managers unwind on the way
(connections are closed, a benchmark's daemons stopped); a second Ctrl-C while the last line is
written or the process exits is ignored. A Ctrl-C the interpreter swallowed (raised in a
weakref callback, as at the end of an import) is noticed and raised again when the command
returns or its ``trio.run`` begins, and a daemon command's ``trio.run`` takes it at
checkpoints only (:mod:`~podium.cli.common.interrupt`).
"""

from __future__ import annotations

import gc
import signal
import sys
import threading
import warnings
from typing import TYPE_CHECKING, NoReturn

# Standard library only, and here rather than in main(): its hook is the first thing main()
# sets up, before an import whose module-lock callback could swallow a Ctrl-C unnoticed.
from podium.cli.common.interrupt import noticing_lost_interrupts, raise_if_interrupted

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

__all__ = ["EXIT_INTERRUPTED", "GROUP_OF_COMMAND", "build_parser", "main", "run"]

EXIT_INTERRUPTED = 130
"""A program stopped by SIGINT, as shells report it (128 + 2)."""

GROUP_OF_COMMAND: dict[str, str] = {
    "simulate": "simulate",
    "serve": "serve",
    "apply": "objects",
    "delete": "objects",
    "get": "objects",
    "watch": "objects",
    "explain": "explain",
    "stats": "stats",
    "policy": "policy",
    "protocol": "protocol",
    "db": "db",
    "bench": "benchmarks",
}
"""Each command's group module under :mod:`podium.cli`, in ``podium --help`` order (a test
checks it against what the modules register)."""


def build_parser(commands: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """``podium`` with every command group's subcommands, or only with those of ``commands``.

    Args:
        commands: the commands whose groups to build (``["get"]``; none for ``podium
            --version``), or None for them all. ``podium serve``'s flags alone read the
            configuration's defaults (protocol/config.py and the loader, a third of a second on
            a busy machine): a command that is not ``serve`` need not build them (issue 26
            point 5).
    """
    import argparse
    import importlib

    from podium.cli.config import VersionAction

    parser = argparse.ArgumentParser(
        prog="podium",
        description="Podium: a pod scheduler service with the Kubernetes scheduler's decisions.",
    )
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = GROUP_OF_COMMAND if commands is None else commands
    for group in dict.fromkeys(GROUP_OF_COMMAND[c] for c in wanted):
        importlib.import_module(f"podium.cli.{group}").register(sub)
    return parser


def _commands_named(argv: Sequence[str]) -> list[str] | None:
    """What :func:`build_parser` needs for ``argv``: its command when its first word that is
    not a flag is one (the top level has no flag that takes a value), none for ``podium
    --version``, else None: every command, so that ``--help`` and a mistyped command list
    them all."""
    at = next((i for i, a in enumerate(argv) if not a.startswith("-")), len(argv))
    if any(a in ("-h", "--help") for a in argv[:at]):
        return None  # `podium -h get` is podium's own help: every command listed
    if at < len(argv):
        return [argv[at]] if argv[at] in GROUP_OF_COMMAND else None
    return [] if argv and all(a == "--version" for a in argv) else None


def _is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C: a ``KeyboardInterrupt``, or a group holding one (what
    ``trio.run`` raises when the interrupt met a nursery). The group's other exceptions are
    what stopping did to the command (a connection cut short), not errors of their own."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(KeyboardInterrupt) is not None
    return isinstance(exc, KeyboardInterrupt)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's arguments) names; its exit code.

    Cancellation: a Ctrl-C anywhere in here returns :data:`EXIT_INTERRUPTED` after at most one
    line on stderr (see the module docstring).
    """
    args: argparse.Namespace | None = None
    with noticing_lost_interrupts():
        try:
            from podium.cli.common.output import EXIT_FAILED, EXIT_OK, err
            from podium.protocol.errors import PodiumError

            argv = sys.argv[1:] if argv is None else list(argv)
            args = build_parser(_commands_named(argv)).parse_args(argv)
            try:
                code: int = args.func(args)
            except PodiumError as exc:
                err(f"error: {exc}")
                code = EXIT_FAILED
            except BrokenPipeError:  # `podium simulate ... | head`
                code = EXIT_OK
            raise_if_interrupted()  # a Ctrl-C the interpreter swallowed on the way is still one
            return code
        except BaseException as exc:
            if not _is_interrupt(exc):
                raise
            stopped = exc
    # Only a Ctrl-C gets here; a second one while it is said is the same request.
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main_thread else None
    try:
        # What it cut short is freed under a filter: a coroutine it left unawaited
        # (``trio.open_tcp_stream(...)`` made, not yet awaited) would otherwise print a
        # three-line RuntimeWarning when the traceback's frames go.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            del stopped
            gc.collect()
        if args is not None and not getattr(args, "quiet_interrupt", False):
            sys.stderr.write("interrupted\n")
            sys.stderr.flush()
    except BrokenPipeError:  # stderr closed: nothing can be said
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return EXIT_INTERRUPTED


def run() -> NoReturn:
    """The ``podium`` console script: :func:`main` on the process's arguments, then exit."""
    try:
        code = main()
    finally:
        # The command is over: a Ctrl-C now would only turn the exit into a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(code)


if __name__ == "__main__":
    run()
