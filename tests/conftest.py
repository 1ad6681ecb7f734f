"""Fixtures every test folder shares; the helpers behind them live in tests/support/.

- ``start_daemon``: start ``podium serve`` (tests/support/daemon.py) with extra flags, as many
  as a test needs; after the test each is stopped with SIGTERM and must exit 0 with no
  traceback on stderr (a daemon the test killed is left as it is).
- ``daemon``: the default daemon, for tests that want one as it comes.
- ``shared_daemon``: one default daemon for a whole test module, for the tests that need only
  a running daemon and not a fresh store: each keeps to names (namespaces, nodes) of its own
  and asserts nothing of what other tests put there (a daemon start costs 1–2 s; a test that
  kills, restarts, counts objects, watches from revision 0 or schedules onto "every node"
  keeps its own ``daemon``). Stopped and checked as ``start_daemon``'s after the module.
- ``etcd_member``: one etcd member for the session (for each pytest-xdist worker), started when
  a test first asks for it.
- ``store_backend``: SQLite and etcd in turn (the store tests run on both).

pyproject's addopts run the tests on two pytest-xdist workers, each taking whole files
(``--dist loadfile``), so a module-scoped fixture starts once as in a serial run; ``-n 0`` runs
them in one process (docs/testing.md).

``PODIUM_SOAK=1`` turns every long run to its long form (tests/support/long_runs.py) before
any test module reads its variables.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from daemon import Daemon, StartDaemon, check_stopped, start_daemon
from etcd_servers import EtcdCluster
from long_runs import soak
from store_backends import BACKENDS, Backend, EtcdBackend, SqliteBackend


def pytest_configure(config: pytest.Config) -> None:
    """Under PODIUM_SOAK=1, every long run's variable not set by hand to its long form."""
    del config
    soak()


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


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = start_daemon(tmp_path_factory.mktemp("shared-daemon"))
    try:
        yield d
    finally:
        check_stopped(d)


@pytest.fixture(scope="session")
def etcd_member(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    """One etcd member for the session, one a worker under pytest-xdist
    (tests/support/etcd_servers.py); each test keeps its keys under a prefix of its own."""
    cluster = EtcdCluster(tmp_path_factory.mktemp("etcd"), 1).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def etcd_cluster(tmp_path: Path) -> Iterator[EtcdCluster]:
    """A three-member etcd cluster on loopback of the test's own (members to kill)."""
    folder = tmp_path / "etcd"
    folder.mkdir()
    members = EtcdCluster(folder, 3).start()
    try:
        yield members
    finally:
        members.stop()


@pytest.fixture(params=BACKENDS)
def store_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The store's durability backends (tests/support/store_backends.py), one run each."""
    if request.param == "sqlite":
        return SqliteBackend(tmp_path / "podium.db")
    member: EtcdCluster = request.getfixturevalue("etcd_member")
    return EtcdBackend(member.url(f"test-{uuid.uuid4().hex[:12]}"))
