"""``podium serve``: the daemon — listeners, the runtime, the gateway, signals.

Start-up order: the policy is loaded (a bad one stops here with exit 1), the listeners are
bound (a taken port stops here), the actors start and the store publishes its state, the
gateway starts serving, scheduling begins, and one JSON line on stdout says where the daemon
listens (``{"listen", "unix", "metrics", "revision"}``, with the real port when 0 was asked).

SIGTERM or SIGINT begins a clean shutdown: listeners close, every connection is told
``unavailable: podium is shutting down``, the scheduling cycle stops, binds in flight finish,
and the store closes; after ``shutdownGracePeriodSeconds`` whatever is left is cancelled. Either
way the exit code is 0. A second signal cancels at once.
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
from podium.actors.mail import BeginScheduling
from podium.actors.sending import send
from podium.actors.supervisor import MAILBOX, Runtime, StoreFactory, load_plugin_set
from podium.protocol.config import SchedulerConfig
from podium.store.mail import Published, StoreMsg
from podium.store.sqlite import SqliteStore

__all__ = ["open_listeners", "parse_address", "serve"]

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
    hub_tx, hub_rx = trio.open_memory_channel[HubMsg](MAILBOX)
    runtime = Runtime(
        config,
        plugins,
        _sqlite_store(config),
        subscribers=[hub_tx.clone()],
        reload_plugins=lambda: load_plugin_set(config),
    )
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as outer:
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
                )
                await nursery.start(gateway.run, listeners)
                ready = {
                    "listen": address,
                    "unix": config.podium.unix,
                    "metrics": None,
                    "revision": gateway.revision,
                }
                out.write(json.dumps(ready) + "\n")
                out.flush()
                log.info("podium %s ready: %s", version, ready)
                async for signum in signals:
                    log.info("received %s: shutting down", signal.Signals(signum).name)
                    gateway.stop()
                    runtime.stop()
                    grace = config.podium.shutdown_grace_period_seconds
                    nursery.cancel_scope.deadline = trio.current_time() + grace
                    outer.start_soon(_second_signal, signals, nursery.cancel_scope)
                    break
            outer.cancel_scope.cancel("shut down")
        if nursery.cancel_scope.cancelled_caught:
            log.warning("shutdown did not finish within the grace period; the rest was cancelled")
    if config.podium.unix is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(config.podium.unix)
    log.info("podium stopped")


async def _second_signal(signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
    async for signum in signals:
        log.warning("received %s again: stopping now", signal.Signals(signum).name)
        scope.cancel()
        return
