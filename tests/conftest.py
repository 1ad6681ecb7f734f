"""Fixtures every test folder shares; the helpers behind them live in tests/support/.

- ``start_daemon``: start ``podium serve`` (tests/support/daemon.py) with extra flags, as many
  as a test needs; after the test each is stopped with SIGTERM and must exit 0 with no
  traceback on stderr (a daemon the test killed is left as it is).
- ``daemon``: the default daemon, for tests that want one as it comes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from daemon import Daemon, StartDaemon, check_stopped, start_daemon


@pytest.fixture(name="start_daemon")
def start_daemon_fixture(tmp_path: Path) -> Iterator[StartDaemon]:
    started: list[Daemon] = []

    def start(
        *args: str, cwd: Path | None = None, wrapper: Sequence[str] = (), bare: bool = False
    ) -> Daemon:
        d = start_daemon(cwd or tmp_path, *args, wrapper=wrapper, bare=bare)
        started.append(d)
        return d

    yield start
    # Every daemon is stopped even when an earlier one fails its check.
    with contextlib.ExitStack() as checks:
        for d in started:
            checks.callback(check_stopped, d)


@pytest.fixture
def daemon(start_daemon: StartDaemon) -> Daemon:
    return start_daemon()
