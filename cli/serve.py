"""``podium serve``: the daemon's flags, and running it (:func:`podium.actors.daemon.serve.serve`)
with its start-up failures mapped to messages and exit codes.

Kubernetes counterpart: cmd/kube-scheduler/app (``NewSchedulerCommand``: the flags, the
options' validation, then ``Run``).

Owns: nothing; the daemon's own behaviour (listeners, signals, shutdown) is
:mod:`podium.actors.daemon.serve`'s.
Emits: the daemon's ready line and logs; ``error: ...`` on stderr when it cannot start. Exit
codes: 0 after a clean shutdown, 1 when a listener cannot be bound or the store fails, 2 for
flags or configuration that cannot work, 3 for a damaged store, 4 when a replica under
leader election lost the lead (its supervisor restarts it as a follower).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import re
import sys
from typing import NoReturn

from podium.cli.common.arguments import add_command, at_least, duration, file_mode, positive_seconds
from podium.cli.common.output import (
    EXIT_DAMAGED,
    EXIT_DEPOSED,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    err,
)
from podium.cli.config import configured, podium_version
from podium.protocol.config import (
    PodiumSettings,
    leader_election_problems,
    object_limit_problems,
)
from podium.protocol.errors import DatabaseDamaged, LeadershipLost, StoreError

__all__ = ["cmd_serve", "register"]


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions of a (nested) group, for one message each."""
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


def cmd_serve(args: argparse.Namespace) -> int:
    """``podium serve``: run the daemon until SIGTERM or SIGINT."""
    # Imported here, not at the top: every ``podium`` command builds this module's parser.
    import trio

    from podium.actors.daemon.access import check_access
    from podium.actors.daemon.listeners import parse_address
    from podium.actors.daemon.logs import configure as configure_logging
    from podium.actors.daemon.serve import serve
    from podium.store.location import parse_store_url

    try:
        config = configured(args)
        if config.podium.listen is not None:
            parse_address(config.podium.listen)
        if config.podium.metrics is not None:
            parse_address(config.podium.metrics)
        check_access(config.podium)
        if getattr(args, "db", None) and getattr(args, "store", None):
            raise ValueError("give --db PATH or --store URL, not both")
        if config.podium.store is not None:
            parse_store_url(config.podium.store)
        for key, problem in [
            *leader_election_problems(config.podium),
            *object_limit_problems(config.podium),
        ]:
            raise ValueError(f"{key}: {problem}")
    except ValueError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE
    configure_logging(config.podium.log_format, config.podium.log_level)
    failed = damaged = deposed = False
    try:
        trio.run(lambda: serve(config, version=podium_version()))
        _exit_now(EXIT_OK)
    except* DatabaseDamaged as group:
        # Refused at start, or the file was deleted or replaced under the daemon: a restart
        # would not help, so the exit code says so (README, "State and restarts").
        for error in _leaves(group):
            err(f"error: {error}")
        damaged = True
    except* LeadershipLost as group:
        # Deposed: exit so that the supervisor restarts this replica as a follower.
        for error in _leaves(group):
            err(f"error: {error}")
        deposed = True
    except* OSError as group:
        for error in _leaves(group):
            err(f"error: {_listen_error(error, config.podium)}")
        failed = True
    except* StoreError as group:
        # Locked by another daemon, unreadable, or a commit failed: the log has the details.
        for error in _leaves(group):
            err(f"error: {error}")
        failed = True
    if damaged:
        return EXIT_DAMAGED
    if deposed:
        return EXIT_DEPOSED
    return EXIT_FAILED if failed else EXIT_OK


_LISTEN_SETTINGS = (("listen", "--listen"), ("metrics", "--metrics"), ("unix", "--unix"))


def _listen_error(error: BaseException, settings: PodiumSettings) -> str:
    """A listener that could not be opened, said with its address and the flag (and config key)
    that names it: ``cannot listen on 127.0.0.1:7070 (--listen, podium.listen): address
    already in use``."""
    if not isinstance(error, OSError):  # (the leaves of an OSError group are OSErrors)
        return f"cannot listen: {error}"
    reason = error.strerror or str(error)
    reason = reason[:1].lower() + reason[1:]
    for key, flag in _LISTEN_SETTINGS:
        address = getattr(settings, key)
        if address is not None and error.filename == address:
            hint = ""
            if error.errno == errno.EADDRINUSE:
                hint = "; another process holds it: stop it, or choose another address (port 0 picks a free one)"
            return f"cannot listen on {address} ({flag}, podium.{key}): {reason}{hint}"
    return f"cannot listen: {error}"


def _exit_now(code: int) -> NoReturn:
    """Leave the process once the daemon has stopped, without tearing the interpreter down.

    Freeing every object a loaded daemon holds (pods, snapshots, the event ring) took from a
    quarter of a second to seconds after ``podium stopped`` (issue 16 point 9), and nothing in
    it matters: the store is closed and the spans are flushed (serve's ``finally``). The logs
    and stdout are flushed here; atexit handlers are skipped on purpose.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve`` to ``podium``."""
    srv = add_command(
        subparsers,
        "serve",
        summary="run the scheduler daemon",
        description=(
            "Run Podium as a daemon: clients put nodes and pods over the protocol (TCP on "
            "loopback by default, or a Unix socket), Podium schedules every pending pod whose "
            "spec.schedulerName matches and binds it, and watchers see each binding. Prints one "
            'JSON line when ready: {"listen", "unix", "metrics", "revision"}. '
            "SIGTERM or SIGINT shuts down cleanly within shutdownGracePeriodSeconds."
        ),
        epilog=(
            "examples:\n"
            "  podium serve                                 # 127.0.0.1:7070, embedded defaults\n"
            "  podium serve --listen 127.0.0.1:0            # any free port (see the ready line)\n"
            "  podium serve --unix /run/podium.sock --listen none\n"
            "  podium serve --config scheduler-config.yaml --log-format json\n"
            "  podium serve --store etcd://127.0.0.1:2379/podium   # objects in etcd\n"
            "\nflags override the config file, which overrides the defaults."
        ),
    )
    srv.add_argument("--config", metavar="FILE", help="a KubeSchedulerConfiguration YAML")
    srv.add_argument("--policy", metavar="FILE", help="a scheduler Policy file (JSON or YAML)")
    srv.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="TCP address of the protocol (default 127.0.0.1:7070; port 0 picks one; 'none' disables)",
    )
    srv.add_argument("--unix", metavar="PATH", help="also listen on a Unix socket at PATH")
    srv.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        help=(
            "HTTP address for /metrics, /healthz, /livez and /readyz (default 127.0.0.1:7071; "
            "port 0 picks one; 'none' disables)"
        ),
    )
    srv.add_argument(
        "--db",
        metavar="PATH",
        help="the SQLite database holding every object and the event log (default ./podium.db)",
    )
    srv.add_argument(
        "--store",
        metavar="URL",
        help=(
            "where the store lives: sqlite://PATH (as --db) or "
            "etcd://HOST:PORT[,HOST:PORT...]/PREFIX (podium.store; TLS and user in podium.etcd)"
        ),
    )
    election = srv.add_argument_group("replicas (README, Three replicas)")
    election.add_argument(
        "--leader-elect",
        action="store_true",
        default=None,
        help=(
            "run as one of several replicas on one etcd store: one leads (schedules, writes), "
            "the others serve reads and take over (podium.leaderElection.leaderElect)"
        ),
    )
    election.add_argument(
        "--leader-elect-lease-duration",
        type=duration,
        metavar="DURATION",
        help=(
            "the leader's lease: how soon a follower takes over a dead leader; 15s, 1m30s "
            "or seconds (default 15s)"
        ),
    )
    election.add_argument(
        "--leader-elect-renew-deadline",
        type=duration,
        metavar="DURATION",
        help="how long the leader tries to renew before it gives up and exits (default 10s)",
    )
    election.add_argument(
        "--leader-elect-retry-period",
        type=duration,
        metavar="DURATION",
        help="between renewals, and between a follower's attempts to lead (default 2s)",
    )
    election.add_argument(
        "--leader-elect-identity",
        metavar="NAME",
        help="this replica's name in the leadership key (default HOST:PID)",
    )
    election.add_argument(
        "--advertise",
        metavar="HOST:PORT",
        help="the protocol address followers send writers to while this replica leads "
        "(default: the TCP address listened on)",
    )
    srv.add_argument("--seed", type=int, metavar="N", help="seed the tie-break for repeatable runs")
    srv.add_argument(
        "--scheduler-name", metavar="NAME", help="schedule pods with this schedulerName"
    )
    srv.add_argument("--log-format", choices=("text", "json"), help="log lines as text or JSON")
    srv.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), help="the lowest level logged"
    )
    _add_access_and_limits(srv)
    srv.set_defaults(func=cmd_serve)


def _add_access_and_limits(parser: argparse.ArgumentParser) -> None:
    """The access and limit flags of ``podium serve`` (each overrides its ``podium:`` key)."""
    defaults = PodiumSettings()
    access = parser.add_argument_group("access (docs/protocol.md, Access)")
    access.add_argument(
        "--token-file",
        metavar="FILE",
        help=(
            "access tokens, one per line: TOKEN read-only|read-write [NAME]; every TCP "
            "connection must then present one (podium.tokenFile; required beyond loopback)"
        ),
    )
    access.add_argument(
        "--tls-cert", metavar="FILE", help="PEM certificate chain: TCP speaks TLS (podium.tlsCert)"
    )
    access.add_argument(
        "--tls-key", metavar="FILE", help="PEM private key of --tls-cert (podium.tlsKey)"
    )
    access.add_argument(
        "--insecure-plaintext",
        action="store_true",
        help="allow listening beyond loopback without TLS (podium.insecurePlaintext)",
    )
    access.add_argument(
        "--insecure-metrics",
        action="store_true",
        help=(
            "allow --metrics beyond loopback: /metrics and the health endpoints ask for no "
            "token and speak no TLS (podium.insecureMetrics)"
        ),
    )
    access.add_argument(
        "--unix-mode",
        type=file_mode,
        metavar="MODE",
        help=f"file mode of the Unix socket (podium.unixMode, default {defaults.unix_mode})",
    )
    batching = parser.add_argument_group("scheduling batches (README, Configuration)")
    batching.add_argument(
        "--batch-max-pods",
        type=at_least(1, 4096),
        metavar="N",
        help=(
            "podium.batchMaxPods: the most pods one scheduling batch takes from the queue; "
            f"1 schedules one pod at a time (default {defaults.batch_max_pods})"
        ),
    )
    batching.add_argument(
        "--batch-max-seconds",
        type=positive_seconds,
        metavar="SECONDS",
        help=(
            "podium.batchMaxSeconds: the pods a batch has not decided by then go back to the "
            "queue, so a higher-priority pod waits at most this long "
            f"(default {defaults.batch_max_seconds:g})"
        ),
    )
    limits = parser.add_argument_group("limits (docs/protocol.md, Limits)")
    for flag, key, low, high in (
        ("--max-connections", "maxConnections", 1, None),
        ("--max-in-flight", "maxInFlightPerConnection", 1, None),
        ("--max-watchers", "maxWatchers", 1, None),
        ("--watch-buffer", "watchBuffer", 1, None),
        ("--max-frame-bytes", "maxFrameBytes", 1024, 2**32 - 1),
        ("--max-object-bytes", "maxObjectBytes", 1024, None),
        ("--max-outbox-bytes", "maxOutboxBytes", 1024, None),
        ("--max-buffered-bytes", "maxBufferedBytes", 1024, None),
        ("--max-handshakes", "maxHandshakes", 1, None),
    ):
        default = getattr(defaults, _snake(key))
        limits.add_argument(
            flag,
            type=at_least(low, high),
            metavar="N",
            help=f"podium.{key} (default {default})",
        )
    limits.add_argument(
        "--handshake-timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help=(
            "podium.handshakeTimeoutSeconds: how long a new connection has to send its hello "
            f"(default {defaults.handshake_timeout_seconds:g})"
        ),
    )


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()
