"""How Podium proves itself to etcd: client TLS and the user's password, read from the files
``podium.etcd`` names. The store's durability and the leader election each open a client of
their own toward the same cluster with the same credentials, read here.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from podium.protocol.config import EtcdSettings

__all__ = ["EtcdCredentials", "EtcdTLS", "etcd_credentials"]


@dataclass(frozen=True, slots=True)
class EtcdTLS:
    """Client TLS toward etcd.

    etcd 3.5 refuses a gateway request whose client certificate has a CommonName (``400
    CommonName of client sending a request against gateway will be ignored``: the gateway
    cannot pass the name on as the user), so the client certificate must have none; grant
    access with ``user``/``password``.

    Attributes:
        ca: the PEM CA bundle that signed the members' certificates (None: the system's).
        cert: the client certificate (PEM), for etcd's ``--client-cert-auth``.
        key: the client certificate's key.
    """

    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca)
        if self.cert is not None:
            context.load_cert_chain(self.cert, self.key)
        return context


@dataclass(frozen=True, slots=True)
class EtcdCredentials:
    """What a client presents to etcd.

    Attributes:
        tls: client TLS (None: plain HTTP).
        user: the etcd user (None: etcd's auth is off).
        password: its password (the password file's first line).
    """

    tls: EtcdTLS | None = None
    user: str | None = None
    password: str | None = None


def etcd_credentials(settings: EtcdSettings) -> EtcdCredentials:
    """The client TLS, user and password ``podium.etcd`` names (the password file's first
    line).

    Raises:
        OSError: the password file cannot be read.
    """
    tls = (
        EtcdTLS(ca=settings.ca_file, cert=settings.cert_file, key=settings.key_file)
        if settings.ca_file is not None or settings.cert_file is not None
        else None
    )
    password = None
    if settings.password_file is not None:
        with open(settings.password_file, encoding="utf-8") as file:
            password = file.readline().rstrip("\r\n")
    return EtcdCredentials(tls=tls, user=settings.user, password=password)
