"""A small network of Linux network namespaces for partition tests (root, iproute2): one
namespace per host, each joined by a veth pair to a bridge in the test's own namespace, which
also has an address on it (so the test reaches every host); :meth:`Network.cut` takes a host's
link down (the host is cut off from every other and from the test), :meth:`Network.heal`
brings it back. :meth:`Network.remove` deletes the namespaces (their veth ends go with them)
and the bridge, also after a failure; the names carry a random tag, so runs never collide.

Without root or iproute2 the tests skip (a failure with ``PODIUM_REQUIRE_SERVERS=1``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess

import pytest
from servers import REQUIRE_SERVERS

__all__ = ["Network"]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


class Network:
    """``hosts`` namespaces on a bridge; host ``i`` has the address :meth:`address` (i)."""

    def __init__(self, hosts: int) -> None:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            reason = "network namespaces need root and iproute2"
            if os.environ.get(REQUIRE_SERVERS) == "1":
                pytest.fail(reason)
            pytest.skip(reason)
        self.tag = secrets.token_hex(3)
        self.subnet = f"10.{200 + secrets.randbelow(50)}.{secrets.randbelow(250)}"
        self.bridge = f"pb{self.tag}"
        self.namespaces = [f"podium-{self.tag}-{i}" for i in range(hosts)]
        self._created: list[str] = []
        self._bridge_up = False
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            self._bridge_up = True
            _ip("addr", "add", f"{self.subnet}.254/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i, ns in enumerate(self.namespaces):
                _ip("netns", "add", ns)
                self._created.append(ns)
                _ip(
                    "link",
                    "add",
                    self._veth(i),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "eth0",
                    "netns",
                    ns,
                )
                _ip("link", "set", self._veth(i), "master", self.bridge, "up")
                _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.remove()
            raise

    def _veth(self, host: int) -> str:
        return f"pv{self.tag}{host}"

    def address(self, host: int) -> str:
        return f"{self.subnet}.{host + 1}"

    def exec_prefix(self, host: int) -> list[str]:
        """The command prefix running a program in ``host``'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[host]]

    def cut(self, host: int) -> None:
        """Cut ``host`` off: its link to the bridge goes down."""
        _ip("link", "set", self._veth(host), "down")

    def heal(self, host: int) -> None:
        _ip("link", "set", self._veth(host), "up")

    def remove(self) -> None:
        """Delete every namespace (and with it its veth pair) and the bridge."""
        for ns in self._created:
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)
        self._created.clear()
        if self._bridge_up:
            subprocess.run(["ip", "link", "del", self.bridge], check=False, capture_output=True)
            self._bridge_up = False
