"""``podium serve``: the daemon's story, from the policy to ``podium stopped``.

Kubernetes counterpart: cmd/kube-scheduler/app/server.go (``runCommand``, then ``Run``: the
health and readiness checks, the serving endpoint, the informers, the scheduler under leader
election until the context ends).

Start-up order: the policy is loaded (a bad one stops here with exit 1), the access setup is
checked and its token file and certificate read (access.py), the listeners are bound, the HTTP
one of ``podium.metrics`` too (a taken port stops here; listeners.py), the HTTP endpoint
starts (``/healthz`` answers from now on; ``/readyz`` says ``store not recovered``:
readiness.py), the actors start with the store ``podium.store`` names (stores.py) and the store
publishes its state, scheduling begins (under leader election once this replica leads), the
gateway starts serving, the heap is settled (heap.py), and one JSON line on stdout says where
the daemon listens (``{"listen", "unix", "metrics", "revision"}``, with the real port when 0
was asked; ``metrics`` null when not served).

SIGTERM or SIGINT begins a clean shutdown, and a second cuts it short (signals.py); either way
the exit code is 0. ``/readyz`` answers 503 from the first signal on; the HTTP endpoint stops
last. SIGHUP reads the token file and the TLS certificate and key again (access.py).
"""

from __future__ import annotations

import functools
import json
import logging
import signal
import sys
from typing import TextIO

import trio

from podium.actors.daemon.access import Access, check_access, reload_on_hangup
from podium.actors.daemon.heap import settle_heap
from podium.actors.daemon.http import HttpServer
from podium.actors.daemon.listeners import Listeners, open_listeners, remove_unix_socket
from podium.actors.daemon.readiness import Readiness
from podium.actors.daemon.signals import stop_on_signal, stop_signals
from podium.actors.daemon.stores import begin_scheduling, replica_of, store_factory
from podium.actors.gateway.gateway import Gateway
from podium.actors.gateway.watch import HubMsg
from podium.actors.mail.messages import Handles
from podium.actors.runtime.tracing import Tracing, setup_tracing
from podium.actors.supervisor.supervisor import MAILBOX, Runtime, load_plugin_set
from podium.protocol.config import PodiumSettings, SchedulerConfig

__all__ = ["serve"]

log = logging.getLogger("podium.serve")


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
    for warning in [*plugins.warnings, *check_access(settings)]:
        log.warning("%s", warning)
    access = Access.load(settings)
    listeners = await open_listeners(config)
    hub_tx, hub_rx = trio.open_memory_channel[HubMsg](MAILBOX)
    tracing = setup_tracing(settings.tracing, service_version=version)
    replica = replica_of(settings, listeners.address)
    runtime = Runtime(
        config,
        plugins,
        store_factory(config, replica),
        subscribers=[hub_tx.clone()],
        # Without a policy file there is nothing to read again: reload says so (not_found).
        reload_plugins=(lambda: load_plugin_set(config)) if config.policy_file else None,
        tracing=tracing,
    )
    readiness = Readiness(runtime) if replica is None else Readiness(runtime, replica.role)
    try:
        with stop_signals() as signals, trio.open_signal_receiver(signal.SIGHUP) as hangups:
            async with trio.open_nursery() as outer:
                if listeners.http:
                    # In the outer nursery: it keeps answering (/readyz 503) while the services
                    # drain, and is cancelled with the second-signal task once they have.
                    await outer.start(HttpServer(listeners.http, readiness).run)
                # The services run in their own nursery so that, once they have drained, the
                # task still listening for a second signal can be cancelled.
                async with trio.open_nursery() as services:
                    handles = await services.start(runtime.run)
                    await begin_scheduling(replica, handles.scheduler, outer)
                    gateway = _gateway(settings, hub_rx, hub_tx, handles, version, access, tracing)
                    tcp = access.secure(listeners.tcp)
                    await services.start(
                        functools.partial(gateway.run, tcp, tokenless=listeners.unix)
                    )
                    # Outer, like the HTTP server: cancelled once the services have drained.
                    outer.start_soon(reload_on_hangup, hangups, settings, gateway, access.tls)
                    readiness.gateway = gateway
                    settle_heap()
                    _announce(out, version, listeners, settings.unix, gateway.revision)
                    grace = settings.shutdown_grace_period_seconds
                    stopping = (readiness, gateway, runtime)
                    await stop_on_signal(signals, stopping, services.cancel_scope, grace, outer)
                outer.cancel_scope.cancel("shut down")
            if services.cancel_scope.cancelled_caught:
                log.warning(
                    "shutdown did not finish within the grace period; the rest was cancelled"
                )
    finally:
        remove_unix_socket(settings.unix)
        with trio.CancelScope(shield=True):
            await tracing.aclose()  # flush the spans even when the daemon is failing
    log.info("podium stopped")


def _gateway(
    settings: PodiumSettings,
    hub_rx: trio.MemoryReceiveChannel[HubMsg],
    hub_tx: trio.MemorySendChannel[HubMsg],
    handles: Handles,
    version: str,
    access: Access,
    tracing: Tracing,
) -> Gateway:
    """The gateway with the limits of ``settings`` and the tokens of ``access``."""
    return Gateway(
        hub_rx,
        hub_tx,
        handles,
        server_version=version,
        max_frame_bytes=settings.max_frame_bytes,
        max_object_bytes=settings.max_object_bytes,
        max_connections=settings.max_connections,
        max_in_flight=settings.max_in_flight_per_connection,
        max_watchers=settings.max_watchers,
        watch_buffer=settings.watch_buffer,
        max_outbox_bytes=settings.max_outbox_bytes,
        max_buffered_bytes=settings.max_buffered_bytes,
        handshake_seconds=settings.handshake_timeout_seconds,
        max_handshakes=settings.max_handshakes,
        tokens=access.tokens,
        tracing=tracing,
    )


def _announce(
    out: TextIO, version: str, listeners: Listeners, unix: str | None, revision: int
) -> None:
    """The ready line on ``out`` (one JSON object: where the daemon listens), and its log."""
    ready = {
        "listen": listeners.address,
        "unix": unix,
        "metrics": listeners.metrics_address,
        "revision": revision,
    }
    out.write(json.dumps(ready) + "\n")
    out.flush()
    log.info("podium %s ready: %s", version, ready)
