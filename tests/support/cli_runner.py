"""``podium ARGS`` run inside the test's own process, for the tests about a command's output
rather than about being a process: the interpreter's start and Podium's imports (0.5-1 s a
command, several at load) are paid once for the run, not once a command.

:func:`run_podium` answers as :func:`subprocess.run` would for ``podium ARGS``: the exit code
:func:`podium.cli.main.main` returns (argparse's ``SystemExit`` included), and what it wrote on
stdout and stderr. Each command keeps at least one test that runs it as a real process
(test_simulate_cli.py's stdin and usage tests, test_serve.py's apply and simulate, ...): signals,
exit codes seen by a shell and the console script are only tested there.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

from podium.cli.main import main

__all__ = ["run_podium"]


def run_podium(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``podium ARGS`` in this process, with ``stdin`` (text) as its standard input and ``cwd``
    its working directory for the call; its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    given = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        previous_stdin, sys.stdin = sys.stdin, given
        stack.callback(setattr, sys, "stdin", previous_stdin)
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors and --help
            code = 0 if exit_.code is None else exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(["podium", *args], code, out.getvalue(), err.getvalue())
