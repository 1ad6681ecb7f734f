"""Ctrl-C, as a person presses it (issue 26 point 4): a real ``podium`` process gets SIGINT at
several moments — importing, connecting, inside ``trio.run`` while it watches a real daemon —
and stops with at most one line on stderr and exit code 130, never a traceback nor a
``BaseExceptionGroup``.

The process runs under ``python -X importtime``, whose lines (dropped before the check) say how
far the start-up went: the test waits for a module's line, then for a delay, then interrupts.
Python's own start-up (before the first line of ``podium`` runs) is out of reach of any program
and is not tested: the first moment is just after ``podium.cli.common.output`` was imported, inside
:func:`podium.cli.main.main`.

The interrupted ``get`` and ``watch`` commands share the module's ``shared_daemon``
(tests/conftest.py): they only connect to it (``get`` reads, ``watch`` from now on). The watch
that must see an event first has a fresh ``daemon`` of its own.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from operator import attrgetter
from typing import IO

import pytest
from builders import make_node
from daemon import PODIUM, Daemon

from podium.cli.main import EXIT_INTERRUPTED

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@dataclass(frozen=True)
class Moment:
    name: str
    after_import: str  # the module whose import line starts the clock
    delay_seconds: float


def _wait_for_import(stderr: IO[str], module: str, seen: list[str]) -> None:
    """Read ``-X importtime`` lines until ``module``'s (the import finished)."""
    for line in stderr:
        seen.append(line)
        if line.startswith("import time:") and line.rstrip().endswith(f"| {module}"):
            return
        if line.rstrip().split("|")[-1].strip() == module:
            return
    raise AssertionError(f"the process ended before importing {module}: {''.join(seen)}")


STOPS_WITHIN = 30.0
"""Seconds a process has, after its SIGINT, to close its stderr and exit: a Ctrl-C it lost
fails the test (naming the moment) instead of hanging the suite on a read without end."""


def _read_until_exit(
    proc: subprocess.Popen[str], within: float, moment: Moment, seen: list[str]
) -> str:
    """The rest of ``proc``'s stderr, read in a thread so that the wait has a deadline."""
    assert proc.stderr is not None
    stderr = proc.stderr
    rest: list[str] = []
    reader = threading.Thread(target=lambda: rest.append(stderr.read()), daemon=True)
    reader.start()
    reader.join(within)
    if reader.is_alive():
        proc.kill()  # its stderr closes: the reader ends
        reader.join()
        said = "".join(line for line in seen if not line.startswith("import time:"))
        raise AssertionError(
            f"still running {within:g} s after SIGINT at {moment.name!r} (after "
            f"{moment.after_import} + {moment.delay_seconds} s): the Ctrl-C was lost; "
            f"stderr: {said + ''.join(rest)!r}"
        )
    return rest[0]


def _interrupt(argv: list[str], moment: Moment, *, finishes: bool) -> tuple[int, list[str]]:
    """Run ``podium ARGV``, SIGINT it at ``moment``; its exit code and its stderr lines
    (without the import times). ``finishes``: the command may end before the signal."""
    seen: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-X", "importtime", PODIUM, *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stderr is not None
            _wait_for_import(proc.stderr, moment.after_import, seen)
            time.sleep(moment.delay_seconds)
            proc.send_signal(signal.SIGINT)
            rest = _read_until_exit(proc, STOPS_WITHIN, moment, seen)
            code = proc.wait(timeout=STOPS_WITHIN)
        finally:
            if proc.poll() is None:
                proc.kill()
    lines = [
        line
        for line in (*seen, *rest.splitlines(keepends=True))
        if not line.startswith("import time:")
    ]
    if finishes and code == 0:
        return EXIT_INTERRUPTED, []  # it was done first: nothing to interrupt, nothing said
    return code, [line.rstrip("\n") for line in lines]


START_UP = [
    Moment("parsing", "podium.cli.common.output", 0.0),
    Moment("importing the command group", "podium.cli.common.remote", 0.0),
    Moment("importing trio", "trio._core._run", 0.0),
    Moment("importing the client", "podium.protocol.client.connection", 0.0),
    Moment("connecting", "podium.protocol.client", 0.0),
    Moment("connected", "podium.protocol.client", 0.05),
]


@pytest.mark.parametrize("moment", START_UP, ids=attrgetter("name"))
def test_ctrl_c_while_get_starts_says_at_most_one_line(
    shared_daemon: Daemon, moment: Moment
) -> None:
    code, lines = _interrupt(
        ["get", "pods", "-A", "--server", shared_daemon.address], moment, finishes=True
    )
    assert code == EXIT_INTERRUPTED, lines
    assert lines in ([], ["interrupted"])


@pytest.mark.parametrize("delay_seconds", [0.0, 0.002, 0.01])
def test_ctrl_c_while_version_starts_says_nothing(delay_seconds: float) -> None:
    moment = Moment("version", "podium.cli.common.output", delay_seconds)
    code, lines = _interrupt(["--version"], moment, finishes=True)
    assert code == EXIT_INTERRUPTED, lines
    assert lines == []


@pytest.mark.parametrize(
    "moment",
    [*START_UP[:4], Moment("connecting", "podium.protocol.client", 0.0)],
    ids=attrgetter("name"),
)
def test_ctrl_c_while_watch_starts_says_at_most_one_line(
    shared_daemon: Daemon, moment: Moment
) -> None:
    code, lines = _interrupt(["watch", "--server", shared_daemon.address], moment, finishes=False)
    assert code == EXIT_INTERRUPTED, lines
    assert lines == []  # a watch ends by Ctrl-C: nothing to say at any moment


def test_ctrl_c_ends_a_watch_inside_trio_run_with_130_and_nothing_on_stderr(
    daemon: Daemon,
) -> None:
    done = daemon.cli("apply", "-f", "-", stdin=_node_yaml())
    assert done.returncode == 0, done.stderr
    errors: list[str] = []
    with subprocess.Popen(
        [PODIUM, "watch", "--from-revision", "0", "--server", daemon.address],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stderr is not None
            first = proc.stdout.readline()  # the watch is running: an event came through trio
            assert " Added node/n1" in first, first
            stderr = proc.stderr
            reader = threading.Thread(target=lambda: errors.extend(stderr.readlines()))
            reader.start()
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
            reader.join(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert code == EXIT_INTERRUPTED
    assert errors == []


def _node_yaml() -> str:
    import yaml

    from podium.cli.common.output import object_doc

    return yaml.safe_dump(object_doc(make_node("n1").obj()))
