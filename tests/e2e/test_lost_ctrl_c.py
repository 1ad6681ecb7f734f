"""A Ctrl-C is never lost nor taken for something else (issue 26 point 4): a real ``podium``
process whose SIGINT is handled at an exact point (tests/support/lost_interrupt.py) stops with
exit 130 and nothing on stderr.

The points are those a real Ctrl-C met by bad luck in test_ctrl_c.py under load: a
``podium watch`` interrupted right after importing the client hung until killed (1 of 150 tries
at load 6), its ``KeyboardInterrupt`` dropped by the interpreter in importlib's module-lock
weakref callback (``Exception ignored in: <function _get_module_lock.<locals>.cb>``); and 9 of
300 said ``warning: connection ... lost: closed by the daemon`` first, the interrupt having
landed in the connection's reader task. Here each happens every time. The
commands share the module's ``shared_daemon`` (tests/conftest.py): they only read and watch.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from daemon import Daemon
from lost_interrupt import MOMENTS
from repo_paths import ROOT

from podium.cli.main import EXIT_INTERRUPTED

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

DRIVER = ROOT / "tests" / "support" / "lost_interrupt.py"
HANG_SECONDS = 60
"""A watch that lost its Ctrl-C runs until killed: this bounds the wait for it, not its speed."""


def _run(moment: str, *argv: str) -> tuple[int, str]:
    """``podium ARGV`` with SIGINT handled at ``moment``: its exit code and its stderr."""
    try:
        done = subprocess.run(
            [sys.executable, str(DRIVER), moment, *argv],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=HANG_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr
        pytest.fail(f"the Ctrl-C at {moment!r} was lost: still running; stderr: {stderr}")
    return done.returncode, done.stderr


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_watch_stops_silently_wherever_its_ctrl_c_is_handled(
    shared_daemon: Daemon, moment: str
) -> None:
    code, stderr = _run(moment, "watch", "--server", shared_daemon.address)
    assert (code, stderr) == (EXIT_INTERRUPTED, "")


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_get_says_interrupted_wherever_its_ctrl_c_is_handled(
    shared_daemon: Daemon, moment: str
) -> None:
    # `get` would finish without it: a Ctrl-C dropped on the way must still end it as one.
    code, stderr = _run(moment, "get", "pods", "-A", "--server", shared_daemon.address)
    assert (code, stderr) == (EXIT_INTERRUPTED, "interrupted\n")
