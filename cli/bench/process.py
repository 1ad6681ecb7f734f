"""A ``podium serve`` child process: start it, wait for its ready line, stop or kill it.

The one way Podium's harnesses run the daemon: ``podium bench``, the load generator, the
scripts in ``ops/`` and the end-to-end tests (``tests/support``) all start it through
:meth:`ServeProcess.start`, so each gets the same guarantees:

- the ready line (the JSON object ``podium serve`` prints on stdout once it listens) is awaited
  with a deadline, and a daemon that exits or stays silent is reported with its last log lines;
- stderr never fills a pipe the daemon would block on: it goes to a file, or a thread drains it
  into :attr:`ServeProcess.log`;
- ``stop`` sends SIGTERM and waits (killing on the deadline), ``kill`` sends SIGKILL.

Error handling: a daemon that does not become ready raises :class:`DaemonError` (after killing
it); the caller decides whether that fails a test or ends a benchmark.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from podium.protocol.errors import PodiumError

__all__ = ["READY_TIMEOUT", "DaemonError", "ServeProcess", "podium_command"]

READY_TIMEOUT = 30.0
"""Seconds a ``podium serve`` child gets to print its ready line."""


class DaemonError(PodiumError):
    """A ``podium serve`` child did not become ready, or did not stop when asked.

    Attributes:
        exit_code: the child's exit code when it exited (or was killed) before its ready line;
            ``None`` when it did not stop when asked. A wrapper that cannot set the daemon up
            says why by its code (a test skips on one).
    """

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def podium_command() -> list[str]:
    """The ``podium`` console script beside this interpreter, else ``python -m`` the CLI."""
    script = Path(sys.executable).with_name("podium")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "podium.cli.main"]


class ServeProcess:
    """One ``podium serve`` child.

    Attributes:
        proc: the child.
        ready: the ready line, decoded (``listen``, ``unix``, ``metrics``, ``db``, ...).
        log: what the child wrote on stderr so far, a line an entry (when drained, not filed).
        started_seconds: from spawn to the ready line.
    """

    def __init__(
        self,
        proc: subprocess.Popen[str],
        ready: dict[str, Any],
        *,
        log_path: Path | None,
        started_seconds: float,
    ) -> None:
        self.proc = proc
        self.ready = ready
        self.log: list[str] = []
        self.log_path = log_path
        self.started_seconds = started_seconds
        self._drain: threading.Thread | None = None
        if proc.stderr is not None:
            # Keep reading its log: a full pipe would block the daemon's every write.
            self._drain = threading.Thread(
                target=self.log.extend, args=(proc.stderr,), name="daemon-log", daemon=True
            )
            self._drain.start()

    @classmethod
    def start(
        cls,
        *args: str,
        cwd: Path,
        log_path: Path | None = None,
        wrapper: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        ready_timeout: float = READY_TIMEOUT,
    ) -> ServeProcess:
        """Spawn ``podium serve ARGS`` in ``cwd`` and wait for its ready line.

        Args:
            args: the flags after ``serve`` (listen addresses, ``--db``, ...).
            cwd: the child's working directory (its default database lives there).
            log_path: append stderr to this file; ``None`` drains it into :attr:`log`.
            wrapper: a command the daemon runs under (``prlimit ...``, a shell that sets umask).
            env: the child's environment (default: this process's).
            ready_timeout: seconds to wait for the ready line.

        Raises:
            DaemonError: the child exited, or printed nothing within ``ready_timeout``.
        """
        began = time.perf_counter()
        log = log_path.open("a") if log_path is not None else None
        try:
            proc = subprocess.Popen(
                [*wrapper, *podium_command(), "serve", *args],
                stdout=subprocess.PIPE,
                stderr=log if log is not None else subprocess.PIPE,
                text=True,
                cwd=cwd,
                env=None if env is None else dict(env),
            )
        finally:
            if log is not None:
                log.close()
        line = _read_line(proc, ready_timeout)
        if not line:
            exited = line == ""  # stdout closed: it is exiting
            if exited:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
            if proc.poll() is None:
                proc.kill()
            err = proc.communicate()[1] if log_path is None else ""
            code = proc.wait()
            tail = err or (_tail(log_path) if log_path is not None else "")
            what = (
                f"exited with code {code} before its ready line"
                if exited
                else f"printed no ready line in {ready_timeout:g} s (killed)"
            )
            raise DaemonError(f"podium serve {what}:\n{tail}", exit_code=code)
        ready = json.loads(line)
        return cls(proc, ready, log_path=log_path, started_seconds=time.perf_counter() - began)

    @classmethod
    def start_in(
        cls, directory: Path, *args: str, ready_timeout: float = READY_TIMEOUT
    ) -> ServeProcess:
        """A daemon of the harness's own in ``directory``: the protocol and ``/metrics`` on free
        loopback ports, its database ``podium.db`` and its log ``serve.log`` (warnings and
        errors, appended) there. ``podium bench`` and the load generator run it so.

        Args:
            directory: the child's working directory, holding its database and log.
            args: more flags after those (``--policy FILE``, ...).
            ready_timeout: seconds to wait for the ready line.

        Raises:
            DaemonError: as :meth:`start`.
        """
        return cls.start(
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
            "--db",
            str(directory / "podium.db"),
            "--log-level",
            "warning",
            *args,
            cwd=directory,
            log_path=directory / "serve.log",
            ready_timeout=ready_timeout,
        )

    @property
    def address(self) -> str:
        """The TCP address the daemon listens on (``HOST:PORT``), or ``""``."""
        return str(self.ready.get("listen") or "")

    @property
    def metrics(self) -> str:
        """The HTTP address of ``/metrics`` (``HOST:PORT``), or ``""`` when off."""
        return str(self.ready.get("metrics") or "")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_text(self) -> str:
        """Everything the daemon wrote on stderr so far."""
        if self.log_path is not None:
            return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "".join(self.log)

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.stderr_text().splitlines()[-lines:])

    def peak_rss_bytes(self) -> int:
        """The child's peak resident set (VmHWM), or 0 where /proc does not say."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return 0

    def stop(self, timeout: float = 20.0, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``sig`` (if still running) and wait; the exit code and the stderr text.

        Raises:
            DaemonError: it did not exit within ``timeout`` (it is killed first).
        """
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self._close()
            raise DaemonError(
                f"podium serve did not stop within {timeout:g} s:\n{self.log_tail()}"
            ) from None
        self._close()
        return code, self.stderr_text()

    def stop_cleanly(self, timeout: float = 20.0) -> None:
        """:meth:`stop` with SIGTERM, where any exit code but 0 is an error.

        Raises:
            DaemonError: it exited with another code, or did not exit within ``timeout``.
        """
        code, _ = self.stop(timeout)
        if code != 0:
            raise DaemonError(f"podium serve exited {code}:\n{self.log_tail()}")

    def kill(self) -> int:
        """SIGKILL (a crash, as ``kill -9`` makes one); the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        code = self.proc.wait(timeout=10)
        self._close()
        return code

    def _close(self) -> None:
        if self._drain is not None:
            self._drain.join(timeout=10)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str | None:
    """The first line on stdout; ``""`` when it closed first, ``None`` after ``timeout``."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            return None
    return proc.stdout.readline()


def _tail(path: Path, lines: int = 20) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])
