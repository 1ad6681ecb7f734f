"""Access alone: the token file and the TLS context read at start (:class:`Access`), the TCP
listeners wrapped in TLS, and SIGHUP's reload over a fake gateway: new tokens handed over,
a bad or missing file logged with the old tokens or certificate kept, and never a token in a
log line. (``check_access``'s table is in tests/unit/test_access_config.py; the reload
through a real daemon and real certificates in tests/e2e/test_access.py.)"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio

from podium.actors.daemon.access import Access, reload_access
from podium.protocol.config import AccessToken, PodiumSettings
from podium.protocol.errors import ConfigError

RW_TOKEN = "rw-" + "a1" * 8
RO_TOKEN = "ro-" + "b2" * 8


@dataclass
class FakeGateway:
    """Holds the tokens; closes ``closes`` connections at each replacement."""

    closes: int = 0
    handed: list[tuple[AccessToken, ...]] = field(default_factory=list)

    def set_tokens(self, tokens: Sequence[AccessToken]) -> int:
        self.handed.append(tuple(tokens))
        return self.closes


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"{RW_TOKEN} read-write deployer\n{RO_TOKEN} read-only dashboard\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="podium.serve")
    return caplog


def test_without_tokens_or_tls_access_asks_nothing() -> None:
    access = Access.load(PodiumSettings())
    assert access == Access(tokens=None, tls=None)


def test_the_token_file_is_read_at_start(token_file: Path) -> None:
    access = Access.load(PodiumSettings(token_file=str(token_file)))
    assert access.tokens is not None
    assert [(t.name, t.role) for t in access.tokens] == [
        ("deployer", "read-write"),
        ("dashboard", "read-only"),
    ]
    assert access.tls is None


def test_a_token_file_others_may_read_is_served_with_a_warning(
    token_file: Path, log: pytest.LogCaptureFixture
) -> None:
    token_file.chmod(0o644)
    Access.load(PodiumSettings(token_file=str(token_file)))
    assert log.messages == [
        f"token file {token_file} is readable by other users (mode 0644); chmod 600 it"
    ]


def test_a_certificate_that_cannot_be_read_stops_the_start(tmp_path: Path) -> None:
    settings = PodiumSettings(tls_cert=str(tmp_path / "c.pem"), tls_key=str(tmp_path / "k.pem"))
    with pytest.raises(ConfigError) as err:
        Access.load(settings)
    assert err.value.path == "podium.tlsCert"


async def test_tcp_listeners_are_wrapped_in_tls_only_with_tls() -> None:
    with trio.fail_after(10):
        tcp = await trio.open_tcp_listeners(0, host="127.0.0.1")
    try:
        assert Access(tokens=None, tls=None).secure(tcp) == tcp
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        secured = Access(tokens=None, tls=context).secure(tcp)
        assert [type(s) for s in secured] == [trio.SSLListener] * len(tcp)
        assert [s.transport_listener for s in secured if isinstance(s, trio.SSLListener)] == tcp
    finally:
        for listener in tcp:
            await listener.aclose()


def test_sighup_without_a_token_file_or_certificate_reloads_nothing(
    log: pytest.LogCaptureFixture,
) -> None:
    gateway = FakeGateway()
    reload_access(PodiumSettings(), gateway, None)
    assert gateway.handed == []
    assert log.messages == ["received SIGHUP: there is no token file or certificate to reload"]


def test_sighup_hands_the_new_tokens_to_the_gateway(
    token_file: Path, log: pytest.LogCaptureFixture
) -> None:
    gateway = FakeGateway(closes=3)
    token_file.write_text(f"{RO_TOKEN} read-only dashboard\n")
    reload_access(PodiumSettings(token_file=str(token_file)), gateway, None)
    assert [[t.name for t in tokens] for tokens in gateway.handed] == [["dashboard"]]
    assert log.messages == [
        f"received SIGHUP: 1 access tokens read from {token_file}; 3 connections closed"
    ]


def test_sighup_keeps_the_old_tokens_when_the_file_is_bad_and_never_logs_a_token(
    token_file: Path, log: pytest.LogCaptureFixture
) -> None:
    gateway = FakeGateway()
    token_file.write_text(f"read-write {RW_TOKEN} deployer\n")  # columns swapped
    reload_access(PodiumSettings(token_file=str(token_file)), gateway, None)
    assert gateway.handed == []
    assert len(log.messages) == 1
    assert log.messages[0].startswith("received SIGHUP: kept the old tokens: ")
    assert RW_TOKEN not in log.messages[0]


def test_sighup_keeps_the_old_tokens_when_the_file_is_gone(
    token_file: Path, log: pytest.LogCaptureFixture
) -> None:
    gateway = FakeGateway()
    token_file.unlink()
    reload_access(PodiumSettings(token_file=str(token_file)), gateway, None)
    assert gateway.handed == []
    assert len(log.messages) == 1
    assert log.messages[0].startswith("received SIGHUP: kept the old tokens: ")


def test_sighup_keeps_the_old_certificate_when_the_new_one_cannot_be_loaded(
    tmp_path: Path, log: pytest.LogCaptureFixture
) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("not a certificate\n")
    key.write_text("not a key\n")
    settings = PodiumSettings(tls_cert=str(cert), tls_key=str(key))
    reload_access(settings, FakeGateway(), context)
    assert len(log.messages) == 1
    assert log.messages[0].startswith(
        "received SIGHUP: kept the old TLS certificate: podium.tlsCert: cannot load the "
        f"certificate {cert} with the key {key}: "
    )
