"""End to end: access to a real ``podium serve`` — tokens, TLS, the Unix socket's file mode.

The daemons come from the ``start_daemon`` fixture (tests/conftest.py). Certificates are made
per module with the ``openssl`` command line (a CA, a server certificate for ``localhost`` and
``127.0.0.1`` signed by it, and an unrelated CA); the Unix socket test runs its connect as the
``nobody`` user when the suite runs as root (root ignores file modes), else it takes the
permission away from its own user.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
import trio
from builders import make_node, make_pod
from daemon import PODIUM, StartDaemon
from raw_frames import frame, recv_frame
from servers import require_server

from podium.cli.main import main as cli_main
from podium.protocol.client import (
    ClientConnectionError,
    RemoteError,
    TLSFailed,
    client_ssl_context,
    connect,
)
from podium.protocol.wire import ObjectRef

RW_TOKEN = "rw-" + "a1" * 16
RO_TOKEN = "ro-" + "b2" * 16
NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
_T = TypeVar("_T")


# --------------------------------------------------------------------------- fixtures


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _make_ca(cwd: Path, name: str) -> None:
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
        "-subj", f"/CN=podium test {name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=cwd,
    )  # fmt: skip


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """ca.pem signs server.pem (localhost, 127.0.0.1), other-ca.pem other-server.pem (the same
    names, for a certificate rotated in)."""
    require_server("openssl", install="apt-get install openssl")
    cwd = tmp_path_factory.mktemp("certs")
    _make_ca(cwd, "ca")
    _make_ca(cwd, "other-ca")
    (cwd / "server.ext").write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid,issuer\n"
    )
    for server, ca in (("server", "ca"), ("other-server", "other-ca")):
        _openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{server}.key", "-out", f"{server}.csr", "-subj", "/CN=localhost",
            cwd=cwd,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", f"{server}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{server}.pem", "-days", "2", "-extfile", "server.ext",
            cwd=cwd,
        )  # fmt: skip
    names = ("ca", "other-ca", "server", "other-server")
    return {name: str(cwd / f"{name}.pem") for name in names} | {
        "key": str(cwd / "server.key"),
        "other-key": str(cwd / "other-server.key"),
    }


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(
        "# podium tokens: TOKEN ROLE [NAME]\n"
        f"{RW_TOKEN} read-write deployer\n"
        "\n"
        f"{RO_TOKEN} read-only dashboard\n"
    )
    path.chmod(0o600)
    return path


def _tokens(path: Path) -> tuple[str, ...]:
    return ("--token-file", str(path))


# --------------------------------------------------------------------------- refusing


def test_serve_refuses_to_listen_beyond_loopback_without_token_and_tls(
    tmp_path: Path,
    token_file: Path,
    certs: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    start_daemon: StartDaemon,
) -> None:
    base = [PODIUM, "serve", "--listen", "0.0.0.0:0", "--metrics", "none"]
    # One real process: the exit code and message an operator sees ...
    refused = subprocess.Popen(
        [*base, "--db", str(tmp_path / "r.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    # ... and one allowed, with a warning: tokens over plain text because the operator said so.
    plain = start_daemon(
        *base[2:],
        *_tokens(token_file),
        "--insecure-plaintext",
        "--db",
        str(tmp_path / "p.db"),
        bare=True,
    )
    # The other refusals in this process (the same code path, without another interpreter).
    cases = {
        "no tls": ([*_tokens(token_file)], "without TLS would send tokens in plain text"),
        "cert without key": (
            [*_tokens(token_file), "--tls-cert", certs["server"]],
            "give both --tls-cert and --tls-key",
        ),
        "key without cert": ([*_tokens(token_file), "--tls-key", certs["key"]], "give both"),
    }
    for name, (flags, message) in cases.items():
        assert cli_main([*base[1:], *flags, "--db", str(tmp_path / "x.db")]) == 2, name
        captured = capsys.readouterr()
        assert message in captured.err, (name, captured.err)
        assert not captured.out, name
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened
    assert plain.ready["listen"].startswith("0.0.0.0:")
    code, err = plain.stop()
    assert code == 0, err
    assert "without TLS (--insecure-plaintext): tokens and objects cross the network" in err
    out, err = refused.communicate(timeout=30)
    assert refused.returncode == 2, err
    assert (
        "error: listening on 0.0.0.0:0 (beyond loopback) requires --token-file "
        "(podium.tokenFile): every client must present a token"
    ) in err
    assert not out  # no ready line: nothing was bound


# --------------------------------------------------------------------------- tokens


async def test_a_client_without_a_valid_token_reads_and_writes_nothing(
    tmp_path: Path, token_file: Path, start_daemon: StartDaemon
) -> None:
    d = start_daemon(*_tokens(token_file))
    with trio.fail_after(20):
        for token, why in ((None, "no token was given"), ("x" * 40, "the token is not valid")):
            with pytest.raises(RemoteError) as refused:
                async with connect(d.address, token=token) as cl:
                    await cl.put([make_node("n1").obj()])
            assert refused.value.code == "unauthorized"
            assert str(refused.value) == f"this listener requires an access token and {why}"
        # A raw client that pipelines a put and a get behind a tokenless hello: the daemon
        # answers the hello with unauthorized and reads nothing more.
        host, port = d.address.rsplit(":", 1)
        node = {"kind": "Node", "metadata": {"name": "sneaky"}}
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                frame(json.dumps({"msg": "hello", "protocol": 1, "encoding": "json"}).encode())
                + frame(json.dumps({"msg": "put", "id": 1, "objects": [node]}).encode())
                + frame(json.dumps({"msg": "get", "id": 2, "kind": "Node"}).encode())
            )
            answer = json.loads(recv_frame(sock) or b"null")
            assert (answer["msg"], answer["id"], answer["code"]) == ("error", -1, "unauthorized")
            assert recv_frame(sock) is None
        cli = await trio.run_process(
            [PODIUM, "get", "nodes", "--server", d.address], capture_stderr=True, check=False
        )
        assert cli.returncode == 1
        # Said for the person: the flags to check, not the protocol's $.token.
        assert cli.stderr == (
            b"error: this listener requires an access token and no token was given"
            b" (--token, --token-file or $PODIUM_TOKEN)\n"
        )
        # Nothing was written; a valid token reads that, and the Unix socket asks for none.
        async with connect(d.address, token=RW_TOKEN) as cl:
            assert (await cl.get("Node")).items == []
            assert (await cl.stats()).pods == 0
        async with connect(f"unix:{d.unix}") as local:
            assert (await local.stats()).nodes == 0


async def test_a_read_only_token_reads_but_cannot_write(
    tmp_path: Path, token_file: Path, start_daemon: StartDaemon
) -> None:
    d = start_daemon(*_tokens(token_file))
    with trio.fail_after(20):
        async with connect(d.address, token=RW_TOKEN) as rw:
            await rw.put([make_node("n1").capacity(cpu="2", memory="4Gi", pods=10).obj()])
            await rw.put([make_pod("web").req(cpu="100m").obj()])
        async with connect(d.address, token=RO_TOKEN) as ro:
            assert [n.metadata.name for n in (await ro.get("Node")).items] == ["n1"]
            assert (await ro.stats()).nodes == 1
            assert (await ro.explain("default", "web")).placement.name == "web"
            assert (await ro.simulate(make_pod("what-if").obj())).placement.node == "n1"
            async with ro.watch(from_revision=0, kinds=["Node"]) as events:
                assert (await events.__anext__()).name == "n1"
            attempts = {
                "put": lambda: ro.put([make_node("n2").obj()]),
                "delete": lambda: ro.delete([ObjectRef(kind="Node", name="n1")]),
                "reload_policy": ro.reload_policy,
            }
            for name, attempt in attempts.items():
                with pytest.raises(RemoteError) as refused:
                    await attempt()
                assert refused.value.code == "forbidden", name
                assert str(refused.value).startswith(
                    f"token 'dashboard' is read-only: {name} is not allowed"
                )
            assert (await ro.stats()).nodes == 1  # the connection stays usable
        async with connect(d.address, token=RW_TOKEN) as rw:
            assert [n.metadata.name for n in (await rw.get("Node")).items] == ["n1"]
        cli = await trio.run_process(
            [PODIUM, "delete", "node", "n1", "--server", d.address, "--token", RO_TOKEN],
            capture_stderr=True,
            check=False,
        )
        assert cli.returncode == 1
        assert b"token 'dashboard' is read-only: delete is not allowed" in cli.stderr


# --------------------------------------------------------------------------- TLS


async def test_tls_listener_verifies_and_refuses_plain_text(
    tmp_path: Path,
    token_file: Path,
    certs: dict[str, str],
    start_daemon: StartDaemon,
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = start_daemon(
        *_tokens(token_file),
        "--tls-cert",
        certs["server"],
        "--tls-key",
        certs["key"],
    )
    host, port = d.address.rsplit(":", 1)
    tls = client_ssl_context(certs["ca"])
    with trio.fail_after(20):
        async with connect(d.address, token=RW_TOKEN, tls=tls) as cl:
            await cl.put([make_node("n1").obj()])
        # The certificate names localhost too.
        async with connect(f"localhost:{port}", token=RO_TOKEN, tls=tls) as cl:
            assert (await cl.stats()).nodes == 1
        # A plain-text client cannot talk to the TLS listener: it fails cleanly.
        with pytest.raises(ClientConnectionError) as plain:
            async with connect(d.address, token=RW_TOKEN) as cl:
                await cl.put([make_node("plain").obj()])
        assert "(if it listens with TLS, connect with --tls or --tls-ca)" in str(plain.value)
        # The same with raw bytes: no hello_reply ever comes back, only TLS or nothing.
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(frame(json.dumps({"msg": "hello", "protocol": 1}).encode()))
            received = b""
            while chunk := sock.recv(4096):
                received += chunk
            assert b"hello_reply" not in received
            assert received[:1] in (b"", b"\x15")  # nothing, or a TLS alert record
        # A client that trusts another CA refuses the daemon's certificate.
        with pytest.raises(TLSFailed) as untrusted:
            async with connect(
                d.address, token=RW_TOKEN, tls=client_ssl_context(certs["other-ca"])
            ):
                pass
        assert "certificate verify failed" in str(untrusted.value)
        # TLS without a token is still refused.
        with pytest.raises(RemoteError) as refused:
            async with connect(d.address, tls=tls):
                pass
        assert refused.value.code == "unauthorized"
        # The CLI: --tls-ca and --token-file (a daemon's token line works as is).
        (tmp_path / "my-token").write_text(f"{RW_TOKEN} read-write deployer\n")
        base = [PODIUM, "get", "nodes", "-o", "json", "--server", d.address]
        ok = await trio.run_process(
            [*base, "--tls-ca", certs["ca"], "--token-file", str(tmp_path / "my-token")],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert ok.returncode == 0, ok.stderr
        assert [n["metadata"]["name"] for n in json.loads(ok.stdout)["items"]] == ["n1"]
        # (In this process, in a thread of its own: the same command without another
        # interpreter's start-up.)
        wrong = [*base[1:], "--tls-ca", certs["other-ca"], "--token", RW_TOKEN]
        assert await trio.to_thread.run_sync(cli_main, wrong) == 1
        assert "certificate verify failed" in capsys.readouterr().err
        # Nothing the plain-text clients sent was stored, and the daemon is unharmed.
        async with connect(d.address, token=RW_TOKEN, tls=tls) as cl:
            assert [n.metadata.name for n in (await cl.get("Node")).items] == ["n1"]
    code, err = d.stop()
    assert code == 0, err
    assert f"from {host}:" in err and "TLS handshake failed" in err


# --------------------------------------------------------------------------- SIGHUP


async def _eventually(attempt: Callable[[], Awaitable[_T]]) -> _T:
    """``await attempt()`` until it stops raising (the daemon reads its files on SIGHUP in
    its own time), for at most 20 s."""
    for _ in range(400):
        try:
            return await attempt()
        except (RemoteError, ClientConnectionError):
            await trio.sleep(0.05)
    return await attempt()


def _files(*copies: tuple[str | Path, Path], tokens: tuple[Path, str] | None = None) -> None:
    for source, target in copies:
        shutil.copy(source, target)
    if tokens is not None:
        tokens[0].write_text(tokens[1])


async def test_sighup_reloads_the_tokens_and_the_certificate(
    tmp_path: Path,
    token_file: Path,
    certs: dict[str, str],
    start_daemon: StartDaemon,
) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    _files((certs["server"], cert), (certs["key"], key))
    d = start_daemon(*_tokens(token_file), "--tls-cert", str(cert), "--tls-key", str(key))
    old_tls, new_tls = client_ssl_context(certs["ca"]), client_ssl_context(certs["other-ca"])
    new_token = "new-" + "c3" * 16
    async with (
        connect(d.address, token=RW_TOKEN, tls=old_tls) as deployer,
        connect(d.address, token=RO_TOKEN, tls=old_tls) as dashboard,
    ):
        await deployer.put([make_node("n1").obj()])
        # The deployer's token is revoked, a new one issued; the certificate is rotated.
        _files(
            (certs["other-server"], cert),
            (certs["other-key"], key),
            tokens=(token_file, f"{new_token} read-write ci\n{RO_TOKEN} read-only dashboard\n"),
        )
        d.proc.send_signal(signal.SIGHUP)

        async def as_new() -> int:
            async with connect(d.address, token=new_token, tls=new_tls) as cl:
                return (await cl.stats()).nodes

        assert await _eventually(as_new) == 1
        # The connection holding the revoked token was closed: it reads nothing more.
        with pytest.raises(RemoteError) as revoked:
            await deployer.stats()
        assert revoked.value.code == "unauthorized"
        assert "token 'deployer' was revoked" in str(revoked.value)
        # The unchanged token's connection goes on (its TLS session too).
        assert (await dashboard.stats()).nodes == 1
    with pytest.raises(RemoteError) as refused:
        async with connect(d.address, token=RW_TOKEN, tls=new_tls):
            pass
    assert refused.value.code == "unauthorized"
    with pytest.raises(TLSFailed):  # the old certificate is gone
        async with connect(d.address, token=new_token, tls=old_tls):
            pass
    # A bad token file and a key that does not match: both are kept as they were.
    _files((certs["key"], key), tokens=(token_file, "not a token line\n"))
    d.proc.send_signal(signal.SIGHUP)

    async def reloaded() -> None:
        if not any("kept the old TLS certificate" in line for line in d.log):
            raise ClientConnectionError("not yet")

    await _eventually(reloaded)
    assert await as_new() == 1
    code, err = d.stop()
    assert code == 0, err
    assert "kept the old tokens" in err
    assert "2 access tokens read from" in err and "1 connections closed" in err


# --------------------------------------------------------------------------- Unix socket


def _connect_as_nobody(path: str) -> str:
    """Connect to the Unix socket ``path`` as the nobody user; ``ok`` or the error's name."""
    script = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        "    s.connect(sys.argv[1])\n"
        "except OSError as e:\n"
        "    print(type(e).__name__)\n"
        "else:\n"
        "    print('ok')\n"
    )
    proc = subprocess.run(
        [SYSTEM_PYTHON, "-c", script, path],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return proc.stdout.strip()


def _try_connect(path: str) -> str:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(path)
        except OSError as exc:
            return type(exc).__name__
    return "ok"


def test_the_unix_socket_honours_its_file_mode(tmp_path: Path, start_daemon: StartDaemon) -> None:
    # A folder anyone may enter (pytest's own are 0700), so only the socket's mode decides.
    folder = Path(tempfile.mkdtemp(prefix="podium-unix-"))
    try:
        folder.chmod(0o755)
        path = str(folder / "podium.sock")
        d = start_daemon("--unix", path)
        assert d.ready["unix"] == path
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert _try_connect(path) == "ok"  # the daemon's own user
        if os.geteuid() == 0:
            # Root ignores file modes: ask as another user.
            if not Path(SYSTEM_PYTHON).exists():
                pytest.skip(f"running as root without {SYSTEM_PYTHON} to connect as nobody")
            assert _connect_as_nobody(path) == "PermissionError"
            os.chmod(path, 0o666)
            assert _connect_as_nobody(path) == "ok"
        else:
            os.chmod(path, 0o000)
            assert _try_connect(path) == "PermissionError"
            os.chmod(path, 0o600)
            assert _try_connect(path) == "ok"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- secrets


async def test_a_bad_token_file_never_prints_its_token(
    tmp_path: Path, token_file: Path, start_daemon: StartDaemon
) -> None:
    """Issue 16 point 5: a token file with its columns swapped printed the token in the error,
    at start and on SIGHUP. Now the line and the column are named, the token never."""
    swapped = tmp_path / "swapped"
    swapped.write_text(f"read-write {RW_TOKEN} deployer\n{RO_TOKEN} dashboard read-only\n")
    swapped.chmod(0o600)
    with trio.fail_after(60):
        refused = await trio.run_process(
            [PODIUM, "serve", "--listen", "127.0.0.1:0", "--metrics", "none", *_tokens(swapped)],
            capture_stdout=True,
            capture_stderr=True,
            cwd=tmp_path,
            check=False,
        )
    stderr = refused.stderr.decode()
    assert refused.returncode == 1, stderr
    assert "line 1: the role is in column 1: the columns look swapped" in stderr
    assert "line 2: the role is in column 3" in stderr
    for secret in (RW_TOKEN, RO_TOKEN):
        assert secret not in stderr + refused.stdout.decode()
    # The same file given on SIGHUP: the old tokens stay, the log names the lines only.
    d = start_daemon(*_tokens(token_file))
    _files((swapped, token_file))
    d.proc.send_signal(signal.SIGHUP)

    async def kept() -> None:
        if not any("kept the old tokens" in line for line in d.log):
            raise ClientConnectionError("not yet")

    await _eventually(kept)
    async with connect(d.address, token=RW_TOKEN) as deployer:  # still the old file's token
        assert (await deployer.stats()).nodes == 0
    code, err = d.stop()
    assert code == 0, err
    assert "line 1: the role is in column 1: the columns look swapped" in err
    for secret in (RW_TOKEN, RO_TOKEN):
        assert secret not in err
