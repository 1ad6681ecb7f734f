"""Access and limit settings: the token file's parser, ``authenticate``, the ``podium:`` keys
and flags for limits, TLS and tokens, ``check_access``, and the client's access options."""

from __future__ import annotations

import argparse
import re
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest

from podium.actors.daemon.access import check_access, server_ssl_context
from podium.actors.daemon.listeners import is_loopback
from podium.cli.common.remote import access
from podium.cli.config import configured
from podium.cli.main import build_parser
from podium.protocol.client import client_ssl_context, read_token_file
from podium.protocol.config import (
    READ_ONLY_REQUESTS,
    AccessToken,
    PodiumSettings,
    authenticate,
    decode_config,
    load_token_file,
    parse_token_file,
)
from podium.protocol.errors import ConfigError
from podium.protocol.wire import ClientMessage

TOKEN_A = "a" * 16
TOKEN_B = "0123456789abcdef0123"

# --------------------------------------------------------------------------- token file


def test_a_token_file_with_comments_blank_lines_and_default_names() -> None:
    tokens = parse_token_file(
        f"# TOKEN ROLE [NAME]\n\n  {TOKEN_A}   read-write  deployer  \n{TOKEN_B}\tread-only\n"
    )
    assert tokens == (
        AccessToken(token=TOKEN_A, role="read-write", name="deployer", line=3),
        AccessToken(token=TOKEN_B, role="read-only", name="line 4", line=4),
    )
    assert [t.read_only for t in tokens] == [False, True]
    assert TOKEN_A not in repr(tokens[0])


EXPECTED = "expected TOKEN ROLE [NAME]"
HIDDEN = "(the values are not shown: one of them may be a token)"
COLUMN_2 = (
    "column 2 must be the role, read-only or read-write (its value is not shown: it may be a token)"
)


@dataclass(frozen=True)
class BadFile:
    name: str
    text: str
    problems: list[tuple[str, str]]


BAD_FILES = [
    BadFile(
        "a token alone",
        f"# ok\n{TOKEN_A}\n",
        [("line 2", "expected TOKEN ROLE [NAME] (ROLE: read-only or read-write), got 1 fields")],
    ),
    BadFile(
        "too many fields",
        f"{TOKEN_A} read-only a name\n",
        [("line 1", "expected TOKEN ROLE [NAME] (ROLE: read-only or read-write), got 4 fields")],
    ),
    BadFile(
        "an unknown role",
        f"{TOKEN_A} admin\n",
        [("line 1", COLUMN_2)],
    ),
    # Issue 16 point 5: a token file whose columns are out of place printed the token in the
    # error. Kubernetes' tokenfile.go@v1.14.0 names the record, never its text: so here.
    BadFile(
        "the columns swapped",
        f"read-write {TOKEN_A} deployer\n",
        [("line 1", f"the role is in column 1: the columns look swapped, {EXPECTED} {HIDDEN}")],
    ),
    BadFile(
        "the role and the name swapped",
        f"{TOKEN_A} deployer read-only\n",
        [("line 1", f"the role is in column 3: {EXPECTED} {HIDDEN}")],
    ),
    BadFile(
        "a token in the role's column",
        f"deployer {TOKEN_A}\n",
        [("line 1", COLUMN_2)],
    ),
    BadFile(
        "two tokens on a line",
        f"{TOKEN_A} {TOKEN_B}\n",
        [("line 1", COLUMN_2)],
    ),
    BadFile(
        "too many columns with the token last",
        f"read-write deployer extra {TOKEN_A}\n",
        [("line 1", "expected TOKEN ROLE [NAME] (ROLE: read-only or read-write), got 4 fields")],
    ),
    BadFile(
        "the same token twice, swapped the second time",
        f"{TOKEN_A} read-write\nread-only {TOKEN_A}\n",
        [("line 2", f"the role is in column 1: the columns look swapped, {EXPECTED} {HIDDEN}")],
    ),
    BadFile(
        "a short token",
        "secret read-write\n",
        [
            (
                "line 1",
                "the token is 6 characters; use at least 16 (e.g. `openssl rand -hex 32`)",
            )
        ],
    ),
    BadFile(
        "a token that is not ASCII",
        "ééééééééééééééééé read-write\n",
        [("line 1", "a token must be printable ASCII")],
    ),
    BadFile(
        "the same token twice",
        f"{TOKEN_A} read-write\n\n{TOKEN_A} read-only\n",
        [("line 3", "the same token as line 1")],
    ),
    BadFile(
        "the same name twice",
        f"{TOKEN_A} read-write ci\n{TOKEN_B} read-only ci\n",
        [("line 2", "the name 'ci' is already used on line 1")],
    ),
    BadFile(
        "every bad line is reported",
        f"{TOKEN_A} read-write\nshort read-only\n{TOKEN_B} writer\n",
        [
            (
                "line 2",
                "the token is 5 characters; use at least 16 (e.g. `openssl rand -hex 32`)",
            ),
            ("line 3", COLUMN_2),
        ],
    ),
    BadFile(
        "no token at all",
        "# nothing here\n\n",
        [("", "no tokens: every line is blank or a comment, so no client could connect")],
    ),
]


@pytest.mark.parametrize("case", BAD_FILES, ids=lambda c: c.name)
def test_bad_token_files_name_the_line(case: BadFile) -> None:
    with pytest.raises(ConfigError) as err:
        parse_token_file(case.text, source="tokens")
    assert list(err.value.problems) == case.problems
    assert str(err.value).startswith("tokens: ")
    for secret in (TOKEN_A, TOKEN_B, "secret", "admin", "writer", "deployer"):
        assert secret not in str(err.value)  # a token is never printed


def test_load_token_file_reads_a_file_and_names_an_unreadable_one(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"{TOKEN_A} read-only\n")
    assert [t.role for t in load_token_file(path)] == ["read-only"]
    with pytest.raises(ConfigError, match=r"missing: cannot read: No such file or directory"):
        load_token_file(tmp_path / "missing")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_token_file(path)


@pytest.mark.parametrize(
    ("presented", "found"),
    [
        (TOKEN_A, "deployer"),
        (TOKEN_B, "dashboard"),
        (None, None),
        ("", None),
        (TOKEN_A[:-1], None),
        (TOKEN_A + "a", None),
        ("é" * 16, None),
    ],
)
def test_authenticate_finds_the_entry_of_the_presented_token(
    presented: str | None, found: str | None
) -> None:
    tokens = parse_token_file(f"{TOKEN_A} read-write deployer\n{TOKEN_B} read-only dashboard\n")
    entry = authenticate(tokens, presented)
    assert (entry.name if entry else None) == found


# --------------------------------------------------------------------------- podium: keys


def test_the_access_and_limit_keys_have_documented_defaults() -> None:
    s = PodiumSettings()
    assert (
        s.max_frame_bytes,
        s.max_connections,
        s.max_in_flight_per_connection,
        s.max_watchers,
        s.watch_buffer,
        s.token_file,
        s.tls_cert,
        s.tls_key,
        s.insecure_plaintext,
        s.unix_mode,
        s.insecure_metrics,
    ) == (16 * 1024 * 1024, 1024, 256, 1024, 4096, None, None, None, False, "0600", False)
    assert (
        s.max_outbox_bytes,
        s.max_buffered_bytes,
        s.handshake_timeout_seconds,
        s.max_handshakes,
    ) == (4 * 1024 * 1024, 64 * 1024 * 1024, 2.0, 64)


def test_access_files_are_relative_to_the_config_file() -> None:
    config = decode_config(
        {
            "podium": {
                "maxConnections": 10,
                "maxInFlightPerConnection": 2,
                "maxWatchers": 3,
                "watchBuffer": 100,
                "tokenFile": "secrets/tokens",
                "tlsCert": "/etc/podium/cert.pem",
                "tlsKey": "key.pem",
                "insecurePlaintext": True,
                "insecureMetrics": True,
                "unixMode": "0660",
            }
        },
        source="/srv/podium/podium.yaml",
    )
    p = config.podium
    assert (p.max_connections, p.max_in_flight_per_connection, p.max_watchers) == (10, 2, 3)
    assert (p.watch_buffer, p.insecure_plaintext, p.unix_mode) == (100, True, "0660")
    assert p.insecure_metrics
    assert (p.token_file, p.tls_cert, p.tls_key) == (
        "/srv/podium/secrets/tokens",
        "/etc/podium/cert.pem",
        "/srv/podium/key.pem",
    )


@pytest.mark.parametrize(
    ("podium", "path", "message"),
    [
        ({"tlsCert": "c.pem"}, "podium.tlsKey", "podium.tlsCert is set without podium.tlsKey"),
        ({"tlsKey": "k.pem"}, "podium.tlsCert", "podium.tlsKey is set without podium.tlsCert"),
        ({"maxConnections": 0}, "podium.maxConnections", "Expected `int` >= 1"),
        ({"watchBuffer": -1}, "podium.watchBuffer", "Expected `int` >= 1"),
        ({"maxFrameBytes": 2**32}, "podium.maxFrameBytes", "Expected `int` <= 4294967295"),
        ({"unixMode": "0999"}, "podium.unixMode", "Expected `str` matching regex"),
        ({"tokenFile": ""}, "podium.tokenFile", "Expected `str` of length >= 1"),
        ({"maxWatcher": 3}, "podium.maxWatcher", "unknown key; did you mean maxWatchers?"),
        ({"maxOutboxBytes": 100}, "podium.maxOutboxBytes", "Expected `int` >= 1024"),
        ({"maxBufferedBytes": 0}, "podium.maxBufferedBytes", "Expected `int` >= 1024"),
        ({"maxHandshakes": 0}, "podium.maxHandshakes", "Expected `int` >= 1"),
        ({"batchMaxPods": 0}, "podium.batchMaxPods", "Expected `int` >= 1"),
        ({"batchMaxSeconds": 0}, "podium.batchMaxSeconds", "Expected `float` > 0"),
        (
            {"handshakeTimeoutSeconds": 0},
            "podium.handshakeTimeoutSeconds",
            "Expected `float` > 0",
        ),
    ],
)
def test_bad_access_and_limit_keys_name_the_key(
    podium: dict[str, object], path: str, message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        decode_config({"podium": podium})
    assert err.value.path == path
    assert err.value.message.startswith(message), err.value.message


# --------------------------------------------------------------------------- flags


def _serve_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", *argv])


def test_serve_flags_override_the_file(tmp_path: Path) -> None:
    config = tmp_path / "podium.yaml"
    config.write_text("podium:\n  maxConnections: 10\n  maxWatchers: 5\n  tokenFile: t\n")
    args = _serve_args(
        "--config", str(config),
        "--max-connections", "20",
        "--max-in-flight", "8",
        "--watch-buffer", "64",
        "--max-frame-bytes", "65536",
        "--token-file", "cli-tokens",
        "--tls-cert", "c.pem",
        "--tls-key", "k.pem",
        "--insecure-plaintext",
        "--insecure-metrics",
        "--unix-mode", "660",
        "--max-outbox-bytes", "65536",
        "--max-buffered-bytes", "1048576",
        "--max-handshakes", "8",
        "--handshake-timeout", "0.5",
        "--batch-max-pods", "1",
        "--batch-max-seconds", "0.05",
    )  # fmt: skip
    p = configured(args).podium
    assert (p.batch_max_pods, p.batch_max_seconds) == (1, 0.05)
    assert (p.max_outbox_bytes, p.max_buffered_bytes) == (65536, 1048576)
    assert (p.max_handshakes, p.handshake_timeout_seconds) == (8, 0.5)
    assert (p.max_connections, p.max_watchers, p.max_in_flight_per_connection) == (20, 5, 8)
    assert (p.watch_buffer, p.max_frame_bytes) == (64, 65536)
    assert (p.token_file, p.tls_cert, p.tls_key) == ("cli-tokens", "c.pem", "k.pem")
    assert (p.insecure_plaintext, p.unix_mode) == (True, "660")
    file_only = configured(_serve_args("--config", str(config))).podium
    assert (file_only.token_file, file_only.insecure_plaintext) == (str(tmp_path / "t"), False)
    assert (p.insecure_metrics, file_only.insecure_metrics) == (True, False)


@pytest.mark.parametrize(
    "argv",
    [
        ["--max-connections", "0"],
        ["--max-watchers", "many"],
        ["--max-frame-bytes", "100"],
        ["--unix-mode", "rw-------"],
        ["--max-outbox-bytes", "10"],
        ["--max-handshakes", "0"],
        ["--handshake-timeout", "0"],
        ["--handshake-timeout", "soon"],
        ["--handshake-timeout", "inf"],
        ["--batch-max-pods", "0"],
        ["--batch-max-seconds", "0"],
    ],
)
def test_bad_serve_flags_are_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        _serve_args(*argv)
    assert exit_.value.code == 2
    assert f"argument {argv[0]}" in capsys.readouterr().err


# --------------------------------------------------------------------------- check_access


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("podium.example.com", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@dataclass(frozen=True)
class AccessCase:
    name: str
    settings: PodiumSettings
    error: str | None = None
    warning: str | None = None


ACCESS_CASES = [
    AccessCase("loopback needs nothing", PodiumSettings(listen="127.0.0.1:7070")),
    AccessCase("ipv6 loopback", PodiumSettings(listen="[::1]:7070")),
    AccessCase("unix only", PodiumSettings(listen=None, unix="/run/p.sock")),
    AccessCase(
        "beyond loopback without a token file",
        PodiumSettings(listen="0.0.0.0:7070"),
        error="listening on 0.0.0.0:7070 (beyond loopback) requires --token-file",
    ),
    AccessCase(
        "beyond loopback with tokens but no TLS",
        PodiumSettings(listen="10.0.0.5:7070", token_file="t"),
        error="listening on 10.0.0.5:7070 (beyond loopback) without TLS would send tokens",
    ),
    AccessCase(
        "beyond loopback with tokens and TLS",
        PodiumSettings(listen="0.0.0.0:7070", token_file="t", tls_cert="c", tls_key="k"),
    ),
    AccessCase(
        "beyond loopback in plain text on purpose",
        PodiumSettings(listen="0.0.0.0:7070", token_file="t", insecure_plaintext=True),
        warning="listening on 0.0.0.0:7070 beyond loopback without TLS (--insecure-plaintext)",
    ),
    # Issue 16 point 7: the HTTP listener (no token, no TLS) under the protocol's rule, with
    # loopback decided by the same is_loopback (127.0.0.2 is loopback).
    AccessCase(
        "metrics on a second loopback address",
        PodiumSettings(metrics="127.0.0.2:7071"),
    ),
    AccessCase("metrics on ipv6 loopback", PodiumSettings(metrics="[::1]:7071")),
    AccessCase("metrics off", PodiumSettings(metrics=None)),
    AccessCase(
        "metrics beyond loopback",
        PodiumSettings(metrics="0.0.0.0:7071"),
        error=(
            "serving metrics on 0.0.0.0:7071 (beyond loopback) would let anyone read /metrics "
            "and the health endpoints: they ask for no token and speak no TLS. Serve them on "
            "loopback (--metrics 127.0.0.1:7071) behind a proxy that does, or give "
            "--insecure-metrics (podium.insecureMetrics) to accept that"
        ),
    ),
    AccessCase(
        "metrics beyond loopback even with tokens and TLS for the protocol",
        PodiumSettings(
            listen="0.0.0.0:7070",
            metrics="10.0.0.5:7071",
            token_file="t",
            tls_cert="c",
            tls_key="k",
        ),
        error="serving metrics on 10.0.0.5:7071 (beyond loopback) would let anyone read",
    ),
    AccessCase(
        "metrics beyond loopback on purpose",
        PodiumSettings(metrics="0.0.0.0:7071", insecure_metrics=True),
        warning="serving metrics on 0.0.0.0:7071 beyond loopback (--insecure-metrics): anyone",
    ),
    AccessCase(
        "metrics on a host name",
        PodiumSettings(metrics="podium.example:7071", listen=None, unix="/p.sock"),
        error="serving metrics on podium.example:7071 (beyond loopback)",
    ),
    AccessCase(
        "a certificate without its key",
        PodiumSettings(tls_cert="c"),
        error="give both --tls-cert and --tls-key",
    ),
    AccessCase(
        "TLS with TCP off",
        PodiumSettings(listen=None, unix="/p.sock", tls_cert="c", tls_key="k"),
        warning="--tls-cert is set but TCP is off",
    ),
]


@pytest.mark.parametrize("case", ACCESS_CASES, ids=lambda c: c.name)
def test_check_access(case: AccessCase) -> None:
    if case.error is not None:
        with pytest.raises(ValueError, match=f"^{re.escape(case.error)}"):
            check_access(case.settings)
        return
    warnings = check_access(case.settings)
    if case.warning is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warnings[0].startswith(case.warning), warnings


def test_a_certificate_that_cannot_be_loaded_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        server_ssl_context(str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))
    assert err.value.path == "podium.tlsCert"
    assert "No such file or directory" in err.value.message


# --------------------------------------------------------------------------- client side


def test_read_token_file_takes_the_first_field_of_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"# mine\n\n{TOKEN_A} read-write deployer\n{TOKEN_B}\n")
    assert read_token_file(path) == TOKEN_A
    path.write_text("# nothing\n")
    with pytest.raises(ValueError, match="holds no token"):
        read_token_file(path)
    with pytest.raises(ValueError, match="cannot read the token file"):
        read_token_file(tmp_path / "missing")


def test_client_ssl_context_verifies_names_and_names_a_bad_ca_file(tmp_path: Path) -> None:
    context = client_ssl_context()
    assert context.check_hostname
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(ValueError, match=f"cannot load the CA file {bad}"):
        client_ssl_context(bad)


def _client_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["stats", *argv])


def test_client_access_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PODIUM_TOKEN", raising=False)
    monkeypatch.delenv("PODIUM_TLS_CA", raising=False)
    tcp = "127.0.0.1:7070"
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN_B + "\n")
    assert access(_client_args(), tcp) == (None, None)
    assert access(_client_args("--token", TOKEN_A, "--token-file", str(token_file)), tcp)[0] == (
        TOKEN_A
    )
    assert access(_client_args("--token-file", str(token_file)), tcp)[0] == TOKEN_B
    monkeypatch.setenv("PODIUM_TOKEN", "from-env")
    assert access(_client_args(), tcp)[0] == "from-env"
    _, tls = access(_client_args("--tls"), tcp)
    assert tls is not None and tls.check_hostname
    # $PODIUM_TLS_CA turns TLS on for TCP, and is ignored for a Unix socket ...
    monkeypatch.setenv("PODIUM_TLS_CA", str(tmp_path / "missing.pem"))
    with pytest.raises(ValueError, match="cannot load the CA file"):
        access(_client_args(), tcp)
    assert access(_client_args(), "unix:/run/podium.sock")[1] is None
    # ... but asking for TLS to a Unix socket is a mistake.
    with pytest.raises(ValueError, match="TLS is for TCP"):
        access(_client_args("--tls"), "unix:/run/podium.sock")


def test_a_read_only_token_may_make_every_request_but_the_writes() -> None:
    tags = {t.__struct_config__.tag for t in typing.get_args(ClientMessage)}
    assert tags - set(READ_ONLY_REQUESTS) == {"put", "delete", "reload_policy"}
    assert set(READ_ONLY_REQUESTS) <= tags
