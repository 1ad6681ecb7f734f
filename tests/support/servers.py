"""Programs the tests run that no Python package ships (Prometheus, promtool, systemd-analyze,
openssl): found on PATH, or the test skips with the command that installs them.

``pip install -e '.[test]'`` cannot bring these, so on a fresh machine the README's test command
skips their tests rather than failing them, and pytest's summary (``-rs``) says what to install.
CI installs them (.ci/run) and sets ``PODIUM_REQUIRE_SERVERS=1``, which turns each such skip into
a failure: CI can never pass by skipping.
"""

from __future__ import annotations

import os
import shutil

import pytest

__all__ = ["REQUIRE_SERVERS", "require_server"]

REQUIRE_SERVERS = "PODIUM_REQUIRE_SERVERS"
"""Set to ``1``, a missing program fails its test instead of skipping it."""


def require_server(name: str, *, install: str) -> str:
    """The path of the program ``name`` on PATH; else skip the test, or fail it in CI.

    Call it from a sync test or fixture: a skip raised inside an async test reaches pytest-trio
    0.8 in an exception group, and it skips the test again without the reason.

    Args:
        name: the executable (``promtool``).
        install: the command that installs it (``apt-get install prometheus``), for the reason.

    Returns:
        Its path.

    Raises:
        pytest.skip.Exception: it is not on PATH.
        pytest.fail.Exception: it is not on PATH and ``PODIUM_REQUIRE_SERVERS=1``.
    """
    path = shutil.which(name)
    if path is not None:
        return path
    reason = f"{name} is not on PATH: {install}"
    if os.environ.get(REQUIRE_SERVERS) == "1":
        pytest.fail(f"{reason} ({REQUIRE_SERVERS}=1: a missing program fails its test)")
    pytest.skip(reason)
