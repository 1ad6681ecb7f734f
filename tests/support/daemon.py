"""The one way a test runs ``podium serve``: a :class:`~podium.cli.bench.process.ServeProcess`
with the tests' default flags, and what end-to-end tests ask of it besides.

The default daemon listens on loopback port 0 for the protocol and for ``/metrics``, on a Unix
socket ``podium.sock`` in its work folder, and breaks ties with seed 1 (repeatable placements);
its database is ``podium.db`` in the work folder. Flags given after the defaults override them
(``--metrics none``); ``bare=True`` gives only the flags the test names (a daemon configured by
its ``--config`` file).

ServeProcess waits for the ready line with a deadline (:data:`READY_TIMEOUT`) and drains
stderr into :attr:`Daemon.log`, so a daemon that never becomes ready fails its test with its
log instead of hanging it, and a chatty one never blocks on a full pipe. The ``start_daemon``
and ``daemon`` fixtures (tests/conftest.py) stop every daemon a test started and check it as
:func:`check_stopped` does.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from podium.cli.bench.process import READY_TIMEOUT, DaemonError, ServeProcess

__all__ = [
    "DEFAULT_FLAGS",
    "PODIUM",
    "READY_TIMEOUT",
    "Daemon",
    "DaemonError",
    "StartDaemon",
    "check_stopped",
    "start_daemon",
]

PODIUM = str(Path(sys.executable).with_name("podium"))
"""The ``podium`` console script of this environment (for CLI commands a test runs)."""

DEFAULT_FLAGS = ("--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--seed", "1")
"""The default daemon's flags besides its Unix socket (which lives in the work folder)."""


class Daemon(ServeProcess):
    """A ``podium serve`` a test started.

    Attributes:
        unix: the Unix socket path it was told to listen on (the last ``--unix``), or ``""``.
        workdir: its working directory (where its default database ``podium.db`` is).
        killed: :meth:`kill` ended it (a crash a test made): its exit code is not checked.
    """

    unix = ""
    workdir = Path()
    killed = False

    def cli(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``podium ARGS --server ADDRESS`` against this daemon (a minute at most)."""
        return subprocess.run(
            [PODIUM, *args, "--server", self.address],
            capture_output=True,
            text=True,
            input=stdin,
            timeout=60,
            check=False,
        )

    def kill(self) -> int:
        self.killed = True
        return super().kill()


def start_daemon(
    workdir: Path, *args: str, wrapper: Sequence[str] = (), bare: bool = False
) -> Daemon:
    """Start ``podium serve`` in ``workdir`` with the default flags, then ``args``.

    Args:
        workdir: its working directory (its database, and the default Unix socket).
        args: more flags; a flag given again overrides the default.
        wrapper: a command the daemon runs under (it ``exec``s the rest of its arguments).
        bare: only ``args``, none of the defaults.

    Raises:
        DaemonError: it exited or printed no ready line within :data:`READY_TIMEOUT` seconds.
    """
    flags = list(args)
    if not bare:
        flags = [*DEFAULT_FLAGS, "--unix", str(workdir / "podium.sock"), *flags]
    daemon = Daemon.start(*flags, cwd=workdir, wrapper=wrapper)
    daemon.unix = _last(flags, "--unix")
    daemon.workdir = workdir
    return daemon


def check_stopped(daemon: Daemon) -> str:
    """Stop ``daemon`` (SIGTERM) unless a test killed it; it must exit 0 without a traceback.

    Returns:
        Everything it wrote on stderr ("" for a killed daemon).
    """
    if daemon.killed:
        return ""
    code, err = daemon.stop()
    assert code == 0, err
    assert "Traceback" not in err, err
    return err


class StartDaemon(Protocol):
    """The ``start_daemon`` fixture: :func:`start_daemon` in the test's ``tmp_path`` (or
    ``cwd``), each daemon stopped and checked after the test."""

    def __call__(
        self,
        *args: str,
        cwd: Path | None = None,
        wrapper: Sequence[str] = (),
        bare: bool = False,
    ) -> Daemon: ...


def _last(flags: Sequence[str], name: str) -> str:
    values = [flags[i + 1] for i, flag in enumerate(flags[:-1]) if flag == name]
    return values[-1] if values else ""
