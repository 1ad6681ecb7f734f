"""``podium serve``: the daemon — listeners, the runtime, the gateway, signals.

Start-up order: the policy is loaded (a bad one stops here with exit 1), the listeners are
bound, the HTTP one of ``podium.metrics`` too (a taken port stops here), the HTTP endpoint
starts (``/healthz`` answers from now on; ``/readyz`` says ``store not recovered``), the actors
start and the store publishes its state, the gateway starts serving, scheduling begins, and
one JSON line on stdout says where the daemon listens (``{"listen", "unix", "metrics",
"revision"}``, with the real port when 0 was asked; ``metrics`` null when not served).

Access (docs/protocol.md "Access"): the HTTP listener of ``podium.metrics`` beyond loopback
needs ``podium.insecureMetrics`` (it asks for no token and speaks no TLS); listening beyond
loopback needs ``podium.tokenFile``
(every TCP connection then presents a token) and TLS (``podium.tlsCert``/``tlsKey``: the TCP
listener is wrapped in trio's SSLListener) unless ``podium.insecurePlaintext`` says to send
tokens in plain text; :func:`check_access` refuses anything else before a socket is bound.
The Unix socket is created with ``podium.unixMode`` (0600) before it listens, and asks for no
token: its file mode is its guard.

SIGTERM or SIGINT begins a clean shutdown: listeners close, every connection is told
``unavailable: podium is shutting down``, the scheduling cycle stops, binds in flight finish,
and the store closes; after ``shutdownGracePeriodSeconds`` whatever is left is cancelled. Either
way the exit code is 0. A second signal cancels at once; one after ``podium stopped`` is
ignored (the process is exiting: the CLI leaves without tearing the interpreter down). ``/readyz`` answers 503 from the first
signal on; the HTTP endpoint stops last. SIGHUP reads the token file and the TLS certificate
and key again (:func:`reload_access`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import ipaddress
import json
import logging
import os
import signal
import ssl
import stat
import sys
from collections.abc import AsyncIterator, Sequence
from typing import TextIO

import trio

from podium.actors.daemon.http import HttpServer
from podium.actors.gateway.gateway import Gateway
from podium.actors.gateway.watch import HubMsg
from podium.actors.mail import BeginScheduling, SchedulerMsg
from podium.actors.runtime.mailbox import send
from podium.actors.runtime.tracing import setup_tracing
from podium.actors.supervisor import MAILBOX, Runtime, StoreFactory, load_plugin_set
from podium.protocol import metrics
from podium.protocol.config import (
    AccessToken,
    PodiumSettings,
    SchedulerConfig,
    load_token_file,
)
from podium.protocol.errors import ConfigError
from podium.store.actor import StoreActor
from podium.store.election import LeaderElection, leader_election
from podium.store.etcd import (
    EtcdDurability,
    EtcdLocation,
    etcd_durability,
    etcd_store,
    parse_store_url,
)
from podium.store.mail import Published, StoreMsg
from podium.store.sqlite import sqlite_store

__all__ = [
    "Readiness",
    "check_access",
    "is_loopback",
    "open_listeners",
    "open_metrics_listeners",
    "parse_address",
    "serve",
    "server_ssl_context",
]

log = logging.getLogger("podium.serve")


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:7070`` for IPv6) into its parts.

    Raises:
        ValueError: not HOST:PORT with a port in 0-65535.
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{address!r} is not HOST:PORT (e.g. 127.0.0.1:7070)")
    return host.strip("[]"), int(port)


def _format_address(sockname: tuple[str, int] | tuple[str, int, int, int]) -> str:
    host, port = sockname[0], sockname[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    """Whether a listen host is loopback only (``localhost``, ``127.0.0.0/8``, ``::1``); any
    other name, ``0.0.0.0`` and ``::`` are not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


def reload_access(settings: PodiumSettings, gateway: Gateway, tls: ssl.SSLContext | None) -> None:
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
            tokens = _load_tokens(settings.token_file)
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


async def _reload_on_hangup(
    hangups: AsyncIterator[int],
    settings: PodiumSettings,
    gateway: Gateway,
    tls: ssl.SSLContext | None,
) -> None:
    async for _ in hangups:
        reload_access(settings, gateway, tls)


def _load_tokens(path: str) -> tuple[AccessToken, ...]:
    """The token file's entries; a warning when other users may read it."""
    tokens = load_token_file(path)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        log.warning(
            "token file %s is readable by other users (mode %04o); chmod 600 it", path, mode
        )
    return tokens


async def _open_unix_listener(path: str, mode: int = 0o600) -> trio.SocketListener:
    """A listening Unix socket at ``path`` with file mode ``mode`` (set before it listens, so
    no one connects in between); a stale socket file left by a crash is replaced."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(mode):
            raise OSError(f"{path} exists and is not a socket")
        probe = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        try:
            await probe.connect(path)
        except OSError:
            os.unlink(path)  # nobody listens: a leftover of a crashed daemon
        else:
            raise OSError(f"another daemon is listening on {path}")
        finally:
            probe.close()
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    try:
        await sock.bind(path)
        os.chmod(path, mode)
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return trio.SocketListener(sock)


async def open_listeners(
    config: SchedulerConfig,
) -> tuple[list[trio.SocketListener], list[trio.SocketListener], str | None]:
    """Bind the protocol's listeners: the TCP ones, the Unix one, and the real TCP address."""
    settings = config.podium
    tcp: list[trio.SocketListener] = []
    unix: list[trio.SocketListener] = []
    address = None
    if settings.listen is not None:
        tcp.extend(await _open_tcp_listeners(settings.listen))
        address = _format_address(tcp[0].socket.getsockname())
    if settings.unix is not None:
        unix.append(await _open_unix_listener(settings.unix, int(settings.unix_mode, 8)))
    return tcp, unix, address


async def open_metrics_listeners(
    config: SchedulerConfig,
) -> tuple[list[trio.SocketListener], str | None]:
    """Bind the HTTP listener of ``podium.metrics``; returns it and the real address (none and
    None when metrics are off)."""
    if config.podium.metrics is None:
        return [], None
    listeners = await _open_tcp_listeners(config.podium.metrics)
    return listeners, _format_address(listeners[0].socket.getsockname())


async def _open_tcp_listeners(address: str) -> list[trio.SocketListener]:
    """TCP listeners on ``address`` (``host:port``).

    Raises:
        OSError: it cannot be bound (in use, not this host's, ...), with ``address`` as its
            ``filename``, so that the command line can say which setting names it.
    """
    host, port = parse_address(address)
    try:
        return list(await trio.open_tcp_listeners(port, host=host))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), address) from exc


class Readiness:
    """What ``/readyz`` asks: the reasons the daemon is not ready to serve (none: ready).

    Not ready until the gateway's hub has the store's recovered state, while any actor is not
    running (a store whose commit failed stops, so this covers "the store is writable"), and
    from the first shutdown signal on.
    """

    def __init__(self, runtime: Runtime, election: LeaderElection | None = None) -> None:
        self.runtime = runtime
        self.gateway: Gateway | None = None
        self.stopping = False
        self._election = election

    def role(self) -> str:
        """After ``ok``: under leader election, whether this replica leads, else who does (a
        follower is ready: it serves reads, watches and explain)."""
        election = self._election
        if election is None:
            return ""
        if election.leading:
            return f" (leader {election.identity})"
        leader = election.leader
        return (
            f" (follower; leader {leader.identity} at {leader.address})"
            if leader
            else (" (follower; no replica leads)")
        )

    def __call__(self) -> list[str]:
        problems: list[str] = []
        if self.stopping:
            problems.append("podium is shutting down")
        if self.gateway is None or not self.gateway.ready:
            problems.append("store not recovered")
        problems.extend(f"actor {name} not running" for name in self.runtime.not_running())
        return problems


class _Replica:
    """A replica under leader election: its election, and its store once built."""

    def __init__(self, election: LeaderElection) -> None:
        self.election = election
        self.store: StoreActor | None = None
        self.durability: EtcdDurability | None = None


def _store(config: SchedulerConfig, replica: _Replica | None = None) -> StoreFactory:
    """The store ``podium.store`` names (``sqlite://PATH``, ``etcd://...``), else the SQLite
    file ``podium.database``.

    Raises:
        ValueError: ``podium.store`` is not a store URL.
    """
    settings = config.podium
    where = parse_store_url(settings.store) if settings.store else settings.database
    if isinstance(where, EtcdLocation):
        return _etcd_store(config, where, replica)
    return _sqlite_store(config, where)


def _etcd_store(
    config: SchedulerConfig, location: EtcdLocation, replica: _Replica | None
) -> StoreFactory:
    def build(
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[trio.MemorySendChannel[Published]],
    ) -> StoreActor:
        durability = etcd_durability(
            location, config.podium.etcd, retention=config.podium.event_retention_revisions
        )
        if replica is None:
            return etcd_store(inbox, subscribers, durability)
        election = replica.election
        store = etcd_store(inbox, subscribers, durability, leader=lambda: election.leader_address)
        replica.store, replica.durability = store, durability
        return store

    return build


async def _lead(replica: _Replica, scheduler: trio.MemorySendChannel[SchedulerMsg]) -> None:
    """A replica's part in leader election: campaign; once elected, set the store's fence,
    let it catch up with the log and take it over, begin scheduling, then renew the lease
    until this process stops (resigning then) or loses the lead (:class:`LeadershipLost`:
    the daemon exits, as kube-scheduler does, and its supervisor restarts it as a follower).
    """
    election = replica.election
    name = election.key.decode()
    metrics.LEADER.set(0)
    metrics.MASTER_STATUS.labels(name=name).set(0)
    try:
        await election.campaign()
        assert replica.store is not None and replica.durability is not None
        replica.durability.fence = election.fence
        await replica.store.promote()
        metrics.LEADER.set(1)
        metrics.MASTER_STATUS.labels(name=name).set(1)
        metrics.LEADER_TRANSITIONS.inc()
        log.info("leading: scheduling begins")
        await send(scheduler, BeginScheduling())
        await election.hold()
    finally:
        metrics.LEADER.set(0)
        metrics.MASTER_STATUS.labels(name=name).set(0)
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            await election.resign()
            await election.aclose()


def _sqlite_store(config: SchedulerConfig, path: str) -> StoreFactory:
    settings = config.podium

    def build(
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[trio.MemorySendChannel[Published]],
    ) -> StoreActor:
        return sqlite_store(
            inbox,
            subscribers,
            path,
            synchronous=settings.synchronous,
            retention=settings.event_retention_revisions,
        )

    return build


async def serve(config: SchedulerConfig, *, version: str, out: TextIO = sys.stdout) -> None:
    """Run the daemon until SIGTERM/SIGINT.

    Raises:
        PolicyError: the policy file is bad.
        ConfigError: the token file, certificate or key is bad.
        ValueError: the access setup is unsafe (:func:`check_access`).
        OSError: a listener cannot be bound.
    """
    settings = config.podium
    plugins = load_plugin_set(config)
    for warning in plugins.warnings:
        log.warning("%s", warning)
    for warning in check_access(settings):
        log.warning("%s", warning)
    tokens = _load_tokens(settings.token_file) if settings.token_file is not None else None
    tls = (
        server_ssl_context(settings.tls_cert, settings.tls_key)
        if settings.tls_cert is not None and settings.tls_key is not None
        else None
    )
    tcp, unix, address = await open_listeners(config)
    listeners: list[trio.abc.Listener[trio.abc.Stream]] = (
        [trio.SSLListener(listener, tls) for listener in tcp] if tls is not None else list(tcp)
    )
    http_listeners, metrics_address = await open_metrics_listeners(config)
    hub_tx, hub_rx = trio.open_memory_channel[HubMsg](MAILBOX)
    tracing = setup_tracing(config.podium.tracing, service_version=version)
    replica: _Replica | None = None
    if settings.leader_election.leader_elect:
        location = parse_store_url(settings.store or "")
        if not isinstance(location, EtcdLocation):
            raise ValueError("leader election needs an etcd store (--store etcd://...)")
        replica = _Replica(
            leader_election(location, settings.etcd, settings.leader_election, address)
        )
    runtime = Runtime(
        config,
        plugins,
        _store(config, replica),
        subscribers=[hub_tx.clone()],
        # Without a policy file there is nothing to read again: reload says so (not_found).
        reload_plugins=(lambda: load_plugin_set(config)) if config.policy_file else None,
        tracing=tracing,
    )
    readiness = Readiness(runtime, replica.election if replica is not None else None)
    try:
        # SIGTERM and SIGINT are ignored from here on but for the receiver below, which puts
        # this back when it closes: a signal after the stop (while the process exits) then
        # cannot turn a clean exit 0 into a death by signal.
        _ignore_stop_signals()
        with (
            trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals,
            trio.open_signal_receiver(signal.SIGHUP) as hangups,
        ):
            async with trio.open_nursery() as outer:
                if http_listeners:
                    # In the outer nursery: it keeps answering (/readyz 503) while the services
                    # drain, and is cancelled with the second-signal task once they have.
                    await outer.start(HttpServer(http_listeners, readiness).run)
                # The services run in their own nursery so that, once they have drained, the
                # task still listening for a second signal can be cancelled.
                async with trio.open_nursery() as nursery:
                    handles = await nursery.start(runtime.run)
                    if replica is None:
                        metrics.LEADER.set(1)  # the one writer: it leads
                        await send(handles.scheduler, BeginScheduling())
                    else:
                        # In the outer nursery: it resigns once the services have drained.
                        outer.start_soon(_lead, replica, handles.scheduler)
                    gateway = Gateway(
                        hub_rx,
                        hub_tx,
                        handles,
                        server_version=version,
                        max_frame_bytes=settings.max_frame_bytes,
                        max_connections=settings.max_connections,
                        max_in_flight=settings.max_in_flight_per_connection,
                        max_watchers=settings.max_watchers,
                        watch_buffer=settings.watch_buffer,
                        max_outbox_bytes=settings.max_outbox_bytes,
                        max_buffered_bytes=settings.max_buffered_bytes,
                        handshake_seconds=settings.handshake_timeout_seconds,
                        max_handshakes=settings.max_handshakes,
                        tokens=tokens,
                        tracing=tracing,
                    )
                    await nursery.start(functools.partial(gateway.run, listeners, tokenless=unix))
                    # In the outer nursery, like the HTTP server: cancelled once the services
                    # have drained.
                    outer.start_soon(_reload_on_hangup, hangups, settings, gateway, tls)
                    readiness.gateway = gateway
                    ready = {
                        "listen": address,
                        "unix": config.podium.unix,
                        "metrics": metrics_address,
                        "revision": gateway.revision,
                    }
                    _settle_heap()
                    out.write(json.dumps(ready) + "\n")
                    out.flush()
                    log.info("podium %s ready: %s", version, ready)
                    async for signum in signals:
                        log.info("received %s: shutting down", signal.Signals(signum).name)
                        readiness.stopping = True
                        gateway.stop()
                        runtime.stop()
                        grace = config.podium.shutdown_grace_period_seconds
                        nursery.cancel_scope.deadline = trio.current_time() + grace
                        outer.start_soon(_second_signal, signals, nursery.cancel_scope)
                        break
                outer.cancel_scope.cancel("shut down")
            if nursery.cancel_scope.cancelled_caught:
                log.warning(
                    "shutdown did not finish within the grace period; the rest was cancelled"
                )
    finally:
        if config.podium.unix is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(config.podium.unix)
        with trio.CancelScope(shield=True):
            await tracing.aclose()  # flush the spans even when the daemon is failing
    log.info("podium stopped")


GC_YOUNG_THRESHOLD = 50_000
"""Allocations of tracked containers between two young collections once the daemon is ready
(CPython's default is 700). docs/benchmarks.md ("the collector after recovery") measured it."""


def _settle_heap() -> None:
    """Take what recovery loaded out of the garbage collector's sight, and collect less often.

    Nearly all of a daemon's garbage is freed by reference counting (the Kubernetes objects are
    not even tracked: protocol/objects.py); the collector's passes over the young generation
    every 700 container allocations, and its full passes over every object the daemon holds,
    cost 10-20% of a loaded scheduler's CPU. Frozen objects are still freed by reference
    counting; only cycles among them would stay, and the recovered state has none.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def _ignore_stop_signals() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)


async def _second_signal(signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
    async for signum in signals:
        log.warning("received %s again: stopping now", signal.Signals(signum).name)
        scope.cancel()
        return
