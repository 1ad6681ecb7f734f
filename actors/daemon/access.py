"""Who may reach the daemon: the access rules checked before anything is bound, the tokens
and the TLS context of the TCP listener, and their reload on SIGHUP (docs/protocol.md "Access").

Kubernetes counterpart: kube-scheduler serves only over TLS, and clients present credentials
(cmd/kube-scheduler/app/options/options.go: ``SecureServing``, ``Authentication``); the API
server's static token file (staging/src/k8s.io/apiserver/plugin/pkg/authenticator/token/tokenfile)
and its serving certificate read again when its files change
(staging/src/k8s.io/apiserver/pkg/server/dynamiccertificates/dynamic_serving_content.go, which
keeps the old pair when the new one does not load). Here the reload is asked for by SIGHUP.

The rules (:func:`check_access`): the HTTP listener of ``podium.metrics`` beyond loopback needs
``podium.insecureMetrics`` (it asks for no token and speaks no TLS); listening beyond loopback
needs ``podium.tokenFile`` (every TCP connection then presents a token) and TLS
(``podium.tlsCert``/``tlsKey``: the TCP listener is wrapped in trio's SSLListener) unless
``podium.insecurePlaintext`` says to send tokens in plain text. The Unix socket asks for no
token: its file mode is its guard (listeners.py).
"""

from __future__ import annotations

import logging
import os
import ssl
import stat
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import trio

from podium.actors.daemon.listeners import is_loopback, parse_address
from podium.protocol.config import AccessToken, PodiumSettings, load_token_file
from podium.protocol.errors import ConfigError

__all__ = [
    "Access",
    "TokenHolder",
    "check_access",
    "load_tokens",
    "reload_access",
    "reload_on_hangup",
    "server_ssl_context",
]

# The daemon's one logger: its lines keep the name they had before the daemon was split.
log = logging.getLogger("podium.serve")


def check_access(settings: PodiumSettings) -> list[str]:
    """Refuse an unsafe access setup before anything is bound; the warnings of a tolerated one.

    Raises:
        ValueError: a TLS certificate without its key (or the reverse); a TCP listener beyond
            loopback without a token file; or beyond loopback without TLS and without
            ``insecurePlaintext``; the HTTP listener of ``metrics`` beyond loopback without
            ``insecureMetrics``.
    """
    if (settings.tls_cert is None) != (settings.tls_key is None):
        raise ValueError("give both --tls-cert and --tls-key (podium.tlsCert, podium.tlsKey)")
    warnings = _check_metrics_access(settings)
    if settings.listen is None:
        if settings.tls_cert is not None:
            warnings.append("--tls-cert is set but TCP is off (--listen none): TLS is unused")
        return warnings
    host, _ = parse_address(settings.listen)
    if is_loopback(host):
        return warnings
    if settings.token_file is None:
        raise ValueError(
            f"listening on {settings.listen} (beyond loopback) requires --token-file "
            "(podium.tokenFile): every client must present a token"
        )
    if settings.tls_cert is None:
        if not settings.insecure_plaintext:
            raise ValueError(
                f"listening on {settings.listen} (beyond loopback) without TLS would send "
                "tokens in plain text: give --tls-cert and --tls-key, or --insecure-plaintext "
                "to accept that"
            )
        warnings.append(
            f"listening on {settings.listen} beyond loopback without TLS "
            "(--insecure-plaintext): tokens and objects cross the network in plain text"
        )
    return warnings


def _check_metrics_access(settings: PodiumSettings) -> list[str]:
    """The HTTP listener under the protocol's rule: loopback only, unless the operator accepts
    an open port. (It asks for no token and speaks no TLS: ``/metrics`` shows every plugin's
    failures, the queue and the store's revision, and its rendering costs a worker thread.)"""
    if settings.metrics is None or is_loopback(parse_address(settings.metrics)[0]):
        return []
    if not settings.insecure_metrics:
        raise ValueError(
            f"serving metrics on {settings.metrics} (beyond loopback) would let anyone read "
            "/metrics and the health endpoints: they ask for no token and speak no TLS. Serve "
            "them on loopback (--metrics 127.0.0.1:7071) behind a proxy that does, or give "
            "--insecure-metrics (podium.insecureMetrics) to accept that"
        )
    return [
        f"serving metrics on {settings.metrics} beyond loopback (--insecure-metrics): anyone "
        "who reaches the port reads /metrics, without a token or TLS"
    ]


def server_ssl_context(cert: str, key: str) -> ssl.SSLContext:
    """The TCP listener's TLS context: the certificate chain and key, TLS 1.2 or later, no
    client certificates (clients present tokens).

    Raises:
        ConfigError: the certificate or key cannot be read or do not match.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(
            [("podium.tlsCert", f"cannot load the certificate {cert} with the key {key}: {reason}")]
        ) from None
    return context


def load_tokens(path: str) -> tuple[AccessToken, ...]:
    """The token file's entries; a warning when other users may read it.

    Raises:
        ConfigError: a line of the file is bad (named by its line, never by its token).
        OSError: the file cannot be read.
    """
    tokens = load_token_file(path)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        log.warning(
            "token file %s is readable by other users (mode %04o); chmod 600 it", path, mode
        )
    return tokens


@dataclass(frozen=True, slots=True)
class Access:
    """What the TCP listener asks of a client.

    Attributes:
        tokens: the token file's entries (None: no token is asked).
        tls: the TLS context (None: plain text). SIGHUP loads a new certificate into this same
            context (:func:`reload_access`), so the listener wrapped in it serves the new one.
    """

    tokens: tuple[AccessToken, ...] | None
    tls: ssl.SSLContext | None

    @classmethod
    def load(cls, settings: PodiumSettings) -> Access:
        """Read the token file, then the certificate and key, as ``settings`` name them.

        Raises:
            ConfigError: the token file, certificate or key is bad.
            OSError: the token file cannot be read.
        """
        tokens = load_tokens(settings.token_file) if settings.token_file is not None else None
        tls = (
            server_ssl_context(settings.tls_cert, settings.tls_key)
            if settings.tls_cert is not None and settings.tls_key is not None
            else None
        )
        return cls(tokens, tls)

    def secure(
        self, listeners: Sequence[trio.SocketListener]
    ) -> list[trio.abc.Listener[trio.abc.Stream]]:
        """The TCP listeners as the gateway serves them: wrapped in TLS when there is TLS."""
        if self.tls is None:
            return list(listeners)
        return [trio.SSLListener(listener, self.tls) for listener in listeners]


class TokenHolder(Protocol):
    """Who serves with the tokens (:meth:`podium.actors.gateway.gateway.Gateway.set_tokens`)."""

    def set_tokens(self, tokens: Sequence[AccessToken]) -> int:
        """Replace the tokens; close the connections whose token is gone; how many were."""
        ...


def reload_access(
    settings: PodiumSettings, gateway: TokenHolder, tls: ssl.SSLContext | None
) -> None:
    """SIGHUP: read the token file and the TLS certificate and key again.

    New connections use what was read; connections whose token is gone are closed
    (:meth:`Gateway.set_tokens`); established TLS sessions go on. A file that cannot be read or
    is bad is logged and the old tokens or certificate are kept.
    """
    if settings.token_file is None and tls is None:
        log.info("received SIGHUP: there is no token file or certificate to reload")
        return
    if settings.token_file is not None:
        try:
            tokens = load_tokens(settings.token_file)
        except (ConfigError, OSError) as exc:
            log.error("received SIGHUP: kept the old tokens: %s", exc)
        else:
            closed = gateway.set_tokens(tokens)
            log.info(
                "received SIGHUP: %d access tokens read from %s; %d connections closed",
                len(tokens),
                settings.token_file,
                closed,
            )
    if tls is not None and settings.tls_cert is not None and settings.tls_key is not None:
        try:
            server_ssl_context(settings.tls_cert, settings.tls_key)  # all good, or nothing
            tls.load_cert_chain(settings.tls_cert, settings.tls_key)
        except (ConfigError, OSError, ssl.SSLError) as exc:
            log.error("received SIGHUP: kept the old TLS certificate: %s", exc)
        else:
            log.info("received SIGHUP: TLS certificate %s read again", settings.tls_cert)


async def reload_on_hangup(
    hangups: AsyncIterator[int],
    settings: PodiumSettings,
    gateway: TokenHolder,
    tls: ssl.SSLContext | None,
) -> None:
    """:func:`reload_access` on each SIGHUP, until cancelled (the daemon cancels it once its
    services have drained)."""
    async for _ in hangups:
        reload_access(settings, gateway, tls)
