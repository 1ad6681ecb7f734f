"""``podium serve``: the daemon — listeners, the runtime, the gateway, signals.

Start-up order: the policy is loaded (a bad one stops here with exit 1), the listeners are
bound, the HTTP one of ``podium.metrics`` too (a taken port stops here), the HTTP endpoint
starts (``/healthz`` answers from now on; ``/readyz`` says ``store not recovered``), the actors
start and the store publishes its state, the gateway starts serving, scheduling begins, and
one JSON line on stdout says where the daemon listens (``{"listen", "unix", "metrics",
"revision"}``, with the real port when 0 was asked; ``metrics`` null when not served).

SIGTERM or SIGINT begins a clean shutdown: listeners close, every connection is told
``unavailable: podium is shutting down``, the scheduling cycle stops, binds in flight finish,
and the store closes; after ``shutdownGracePeriodSeconds`` whatever is left is cancelled. Either
way the exit code is 0. A second signal cancels at once. ``/readyz`` answers 503 from the first
signal on; the HTTP endpoint stops last.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator, Sequence
from typing import TextIO

import trio

from podium.actors.gateway import Gateway, HubMsg
from podium.actors.http import HttpServer
from podium.actors.mail import BeginScheduling
from podium.actors.sending import send
from podium.actors.supervisor import MAILBOX, Runtime, StoreFactory, load_plugin_set
from podium.actors.tracing import setup_tracing
from podium.protocol.config import SchedulerConfig
from podium.store.mail import Published, StoreMsg
from podium.store.sqlite import SqliteStore

__all__ = ["Readiness", "open_listeners", "open_metrics_listeners", "parse_address", "serve"]

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


async def _open_unix_listener(path: str) -> trio.SocketListener:
    """A listening Unix socket at ``path``; a stale socket file left by a crash is replaced."""
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
    await sock.bind(path)
    sock.listen(128)
    return trio.SocketListener(sock)


async def open_listeners(config: SchedulerConfig) -> tuple[list[trio.SocketListener], str | None]:
    """Bind the protocol's TCP and Unix listeners; returns them and the real TCP address."""
    settings = config.podium
    listeners: list[trio.SocketListener] = []
    address = None
    if settings.listen is not None:
        host, port = parse_address(settings.listen)
        tcp = await trio.open_tcp_listeners(port, host=host)
        listeners.extend(tcp)
        address = _format_address(tcp[0].socket.getsockname())
    if settings.unix is not None:
        listeners.append(await _open_unix_listener(settings.unix))
    return listeners, address


async def open_metrics_listeners(
    config: SchedulerConfig,
) -> tuple[list[trio.SocketListener], str | None]:
    """Bind the HTTP listener of ``podium.metrics``; returns it and the real address (none and
    None when metrics are off)."""
    if config.podium.metrics is None:
        return [], None
    host, port = parse_address(config.podium.metrics)
    listeners = await trio.open_tcp_listeners(port, host=host)
    return list(listeners), _format_address(listeners[0].socket.getsockname())


class Readiness:
    """What ``/readyz`` asks: the reasons the daemon is not ready to serve (none: ready).

    Not ready until the gateway's hub has the store's recovered state, while any actor is not
    running (a store whose commit failed stops, so this covers "the store is writable"), and
    from the first shutdown signal on.
    """

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.gateway: Gateway | None = None
        self.stopping = False

    def __call__(self) -> list[str]:
        problems: list[str] = []
        if self.stopping:
            problems.append("podium is shutting down")
        if self.gateway is None or not self.gateway.ready:
            problems.append("store not recovered")
        problems.extend(f"actor {name} not running" for name in self.runtime.not_running())
        return problems


def _sqlite_store(config: SchedulerConfig) -> StoreFactory:
    settings = config.podium

    def build(
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[trio.MemorySendChannel[Published]],
    ) -> SqliteStore:
        return SqliteStore(
            inbox,
            subscribers,
            settings.database,
            synchronous=settings.synchronous,
            retention=settings.event_retention_revisions,
        )

    return build


async def serve(config: SchedulerConfig, *, version: str, out: TextIO = sys.stdout) -> None:
    """Run the daemon until SIGTERM/SIGINT.

    Raises:
        PolicyError: the policy file is bad.
        OSError: a listener cannot be bound.
    """
    plugins = load_plugin_set(config)
    for warning in plugins.warnings:
        log.warning("%s", warning)
    listeners, address = await open_listeners(config)
    http_listeners, metrics_address = await open_metrics_listeners(config)
    hub_tx, hub_rx = trio.open_memory_channel[HubMsg](MAILBOX)
    tracing = setup_tracing(config.podium.tracing, service_version=version)
    runtime = Runtime(
        config,
        plugins,
        _sqlite_store(config),
        subscribers=[hub_tx.clone()],
        reload_plugins=lambda: load_plugin_set(config),
        tracing=tracing,
    )
    readiness = Readiness(runtime)
    try:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with trio.open_nursery() as outer:
                if http_listeners:
                    # In the outer nursery: it keeps answering (/readyz 503) while the services
                    # drain, and is cancelled with the second-signal task once they have.
                    await outer.start(HttpServer(http_listeners, readiness).run)
                # The services run in their own nursery so that, once they have drained, the
                # task still listening for a second signal can be cancelled.
                async with trio.open_nursery() as nursery:
                    handles = await nursery.start(runtime.run)
                    await send(handles.scheduler, BeginScheduling())
                    gateway = Gateway(
                        hub_rx,
                        hub_tx,
                        handles,
                        server_version=version,
                        max_frame_bytes=config.podium.max_frame_bytes,
                        tracing=tracing,
                    )
                    await nursery.start(gateway.run, listeners)
                    readiness.gateway = gateway
                    ready = {
                        "listen": address,
                        "unix": config.podium.unix,
                        "metrics": metrics_address,
                        "revision": gateway.revision,
                    }
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


async def _second_signal(signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
    async for signum in signals:
        log.warning("received %s again: stopping now", signal.Signals(signum).name)
        scope.cancel()
        return
