"""The etcd store reaching an etcd that asks for TLS with client certificates and etcd's
user/password auth: the daemon configured with ``podium.etcd`` (CA, certificate, key, user,
password file) stores and recovers; a wrong password, a missing user and plain HTTP are each
refused with a message that says so.

One member per module, TLS from the ``openssl`` command line (a CA, a server certificate for
127.0.0.1, a client certificate without a name, as etcd's gateway requires: only the password
grants access).
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from builders import make_node
from daemon import StartDaemon
from etcd_servers import EtcdCluster, MemberTLS
from servers import require_server

from podium.protocol.client import connect
from podium.protocol.errors import StoreError
from podium.store.credentials import EtcdTLS
from podium.store.etcd.durability import EtcdDurability
from podium.store.location import EtcdLocation

PASSWORD = "s3cret-etcd-password"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _signed(cwd: Path, name: str, cn: str, extensions: str) -> None:
    (cwd / f"{name}.ext").write_text(extensions)
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}" if cn else "/O=podium",
        cwd=cwd,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
        cwd=cwd,
    )  # fmt: skip


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    require_server("openssl", install="apt-get install openssl")
    cwd = tmp_path_factory.mktemp("etcd-tls")
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=podium test etcd ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=cwd,
    )  # fmt: skip
    _signed(
        cwd,
        "server",
        "127.0.0.1",
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
    )
    # No CommonName: etcd 3.5 refuses gateway requests from a certificate with one.
    _signed(cwd, "client", "", "extendedKeyUsage=clientAuth\n")
    tls = MemberTLS(
        cert=str(cwd / "server.pem"),
        key=str(cwd / "server.key"),
        ca=str(cwd / "ca.pem"),
        client_cert=str(cwd / "client.pem"),
        client_key=str(cwd / "client.key"),
    )
    data = cwd / "data"
    data.mkdir()
    member = EtcdCluster(data, 1, tls=tls).start()
    try:
        member.post(0, "/v3/auth/role/add", {"name": "root"})
        member.post(0, "/v3/auth/user/add", {"name": "root", "password": PASSWORD})
        member.post(0, "/v3/auth/user/grant", {"user": "root", "role": "root"})
        member.post(0, "/v3/auth/enable", {})
        yield member
    finally:
        member.stop()


def _location(member: EtcdCluster, prefix: str) -> EtcdLocation:
    return EtcdLocation(tuple(member.endpoints), f"{prefix}/")


def _client_tls(member: EtcdCluster) -> EtcdTLS:
    assert member.tls is not None
    return EtcdTLS(ca=member.tls.ca, cert=member.tls.client_cert, key=member.tls.client_key)


def test_the_daemon_stores_in_an_etcd_behind_tls_and_a_password(
    secured: EtcdCluster, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    assert secured.tls is not None
    (tmp_path / "etcd-password").write_text(PASSWORD + "\n")
    config = tmp_path / "config.yaml"
    config.write_text(
        "podium:\n"
        f"  store: etcd://{secured.endpoints[0]}/secured\n"
        "  etcd:\n"
        f"    caFile: {secured.tls.ca}\n"
        f"    certFile: {secured.tls.client_cert}\n"
        f"    keyFile: {secured.tls.client_key}\n"
        "    user: root\n"
        "    passwordFile: etcd-password\n"  # relative to the config file
    )

    async def put(address: str) -> None:
        async with connect(address) as client:
            await client.put([make_node("n1").capacity(cpu="4").obj()])

    async def names(address: str) -> list[str]:
        async with connect(address) as client:
            return [n.metadata.name for n in (await client.get("Node")).items]

    daemon = start_daemon("--config", str(config))
    trio.run(put, daemon.address)
    daemon.kill()
    daemon = start_daemon("--config", str(config))
    assert trio.run(names, daemon.address) == ["n1"]
    # What it wrote is in etcd, for the user that may read it.
    token = secured.post(0, "/v3/auth/authenticate", {"name": "root", "password": PASSWORD})
    key = base64.b64encode(b"secured/objects/Node//n1").decode()
    answer = secured.post(0, "/v3/kv/range", {"key": key}, token=str(token["token"]))
    assert answer.get("count") == "1"


@pytest.mark.parametrize(
    ("user", "password", "problem"),
    [
        pytest.param("root", "wrong", "refused user 'root'.*authentication failed", id="password"),
        pytest.param(None, None, "permission denied|user name is empty", id="no user"),
    ],
)
async def test_etcd_refuses_the_store_without_the_right_user(
    secured: EtcdCluster, user: str | None, password: str | None, problem: str
) -> None:
    durability = EtcdDurability(
        _location(secured, "refused"),
        tls=_client_tls(secured),
        user=user,
        password=password,
        unavailable_after=1,
    )
    with trio.fail_after(10), pytest.raises(StoreError, match=problem):
        await durability.load()
    await durability.close()


async def test_plain_http_to_a_tls_member_is_unavailable(secured: EtcdCluster) -> None:
    durability = EtcdDurability(
        _location(secured, "plain"), user="root", password=PASSWORD, unavailable_after=0.5
    )
    with trio.fail_after(10), pytest.raises(StoreError, match=r"etcd is unavailable"):
        await durability.load()
    await durability.close()
