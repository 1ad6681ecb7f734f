"""The daemon's listeners alone: ``HOST:PORT`` parsing, binding with port 0 (the real address
read back), and the Unix socket: its file mode, a stale socket file replaced, a live one or a
file that is not a socket refused. Real sockets on loopback and in ``tmp_path``; no daemon."""

from __future__ import annotations

import os
import re
import socket
import stat
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import pytest
import trio

from podium.actors.daemon.listeners import (
    open_listeners,
    open_unix_listener,
    parse_address,
    remove_unix_socket,
)
from podium.protocol.config import PodiumSettings, SchedulerConfig

NOT_HOST_PORT = "is not HOST:PORT (e.g. 127.0.0.1:7070)"


@dataclass(frozen=True)
class AddressCase:
    name: str
    address: str
    want: tuple[str, int] | None  # None: refused


ADDRESS_CASES = [
    AddressCase("ipv4", "127.0.0.1:7070", ("127.0.0.1", 7070)),
    AddressCase("any port", "127.0.0.1:0", ("127.0.0.1", 0)),
    AddressCase("the highest port", "localhost:65535", ("localhost", 65535)),
    AddressCase("ipv6 in brackets", "[::1]:7070", ("::1", 7070)),
    AddressCase("every ipv6 address", "[::]:7070", ("::", 7070)),
    AddressCase("a host name", "podium.example:7070", ("podium.example", 7070)),
    AddressCase("no port", "127.0.0.1", None),
    AddressCase("an empty port", "127.0.0.1:", None),
    AddressCase("no host", ":7070", None),
    AddressCase("a port past 65535", "127.0.0.1:65536", None),
    AddressCase("a negative port", "127.0.0.1:-1", None),
    AddressCase("a named port", "127.0.0.1:http", None),
    AddressCase("nothing", "", None),
]


@pytest.mark.parametrize("case", ADDRESS_CASES, ids=attrgetter("name"))
def test_parse_address(case: AddressCase) -> None:
    if case.want is None:
        with pytest.raises(ValueError, match=f"^{re.escape(f'{case.address!r} {NOT_HOST_PORT}')}$"):
            parse_address(case.address)
    else:
        assert parse_address(case.address) == case.want


def _config(settings: PodiumSettings) -> SchedulerConfig:
    return SchedulerConfig(podium=settings)


async def test_port_0_binds_a_free_port_and_reports_it() -> None:
    with trio.fail_after(10):
        listeners = await open_listeners(
            _config(PodiumSettings(listen="127.0.0.1:0", metrics="127.0.0.1:0"))
        )
        try:
            tcp_port = listeners.tcp[0].socket.getsockname()[1]
            http_port = listeners.http[0].socket.getsockname()[1]
            assert tcp_port != 0 and http_port != 0 and tcp_port != http_port
            assert listeners.address == f"127.0.0.1:{tcp_port}"
            assert listeners.metrics_address == f"127.0.0.1:{http_port}"
            assert listeners.unix == []
        finally:
            for listener in [*listeners.tcp, *listeners.http]:
                await listener.aclose()


async def test_an_ipv6_address_is_reported_in_brackets() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    with trio.fail_after(10):
        try:
            listeners = await open_listeners(
                _config(PodiumSettings(listen="[::1]:0", metrics=None))
            )
        except OSError as exc:
            pytest.skip(f"cannot bind ::1: {exc}")
        async with listeners.tcp[0]:
            port = listeners.tcp[0].socket.getsockname()[1]
            assert listeners.address == f"[::1]:{port}"
            assert listeners.metrics_address is None and listeners.http == []


async def test_nothing_is_bound_when_everything_is_off(tmp_path: Path) -> None:
    listeners = await open_listeners(_config(PodiumSettings(listen=None, metrics=None, unix=None)))
    assert (listeners.tcp, listeners.unix, listeners.http) == ([], [], [])
    assert (listeners.address, listeners.metrics_address) == (None, None)


async def test_the_unix_socket_has_the_configured_mode(tmp_path: Path) -> None:
    path = str(tmp_path / "podium.sock")
    listeners = await open_listeners(
        _config(PodiumSettings(listen=None, metrics=None, unix=path, unix_mode="0660"))
    )
    async with listeners.unix[0]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o660
        assert listeners.address is None


@pytest.mark.parametrize("mode", [0o600, 0o660, 0o666])
async def test_the_unix_socket_is_created_with_the_mode_asked(tmp_path: Path, mode: int) -> None:
    path = str(tmp_path / "s.sock")
    listener = await open_unix_listener(path, mode)
    async with listener:
        assert stat.S_IMODE(os.stat(path).st_mode) == mode


def _leave_a_stale_socket(path: str, mode: int) -> None:
    """A socket file nobody listens on, as a crashed daemon leaves it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as crashed:
        crashed.bind(path)
        os.chmod(path, mode)


async def test_a_stale_socket_file_is_replaced_with_the_mode_asked(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    _leave_a_stale_socket(path, 0o666)
    listener = await open_unix_listener(path, 0o600)
    async with listener:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with trio.fail_after(10):
            client = await trio.open_unix_socket(path)
            await client.aclose()


async def test_a_socket_a_daemon_listens_on_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    listener = await open_unix_listener(path)
    async with listener:
        with trio.fail_after(10), pytest.raises(OSError, match=r"^another daemon is listening on "):
            await open_unix_listener(path)
        assert stat.S_ISSOCK(os.stat(path).st_mode)  # the live daemon's socket stays


async def test_a_file_that_is_not_a_socket_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    path.write_text("precious")
    with pytest.raises(OSError, match=f"^{path} exists and is not a socket$"):
        await open_unix_listener(str(path))
    assert path.read_text() == "precious"


def test_remove_unix_socket_tolerates_a_file_already_gone(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    path.write_text("")
    remove_unix_socket(str(path))
    assert not path.exists()
    remove_unix_socket(str(path))  # gone already: nothing to do
    remove_unix_socket(None)  # no Unix socket configured
