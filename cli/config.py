"""What ``podium serve`` and ``podium simulate`` run with: the configuration (flags over the
config file over the defaults, README.md "Policies and configuration") and the version they report.

Kubernetes counterpart: cmd/kube-scheduler/app/options (``Options.Config``: the
KubeSchedulerConfiguration file, then the flags that override it).

Owns: nothing; warnings of the config file go to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from podium.cli.common.output import err

if TYPE_CHECKING:
    from podium.protocol.config import SchedulerConfig

__all__ = ["VersionAction", "configured", "podium_version"]


def podium_version() -> str:
    """The installed distribution's version (``0+unknown`` in a source tree without one)."""
    # Imported here: importlib.metadata costs tens of milliseconds that only --version and
    # serve's ready line need.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("podium")
    except PackageNotFoundError:  # running from a source tree without an install
        return "0+unknown"


class VersionAction(argparse.Action):
    """``--version``: print ``podium VERSION`` and exit 0, reading the version only then."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings,
            dest=dest,
            default=argparse.SUPPRESS,
            nargs=0,
            help="show program's version number and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        sys.stdout.write(f"podium {podium_version()}\n")  # on stdout, as argparse's own
        parser.exit()


def configured(args: argparse.Namespace) -> SchedulerConfig:
    """The configuration: flags over the config file over the defaults (README.md, "Policies and configuration")."""
    import dataclasses
    from pathlib import Path

    import msgspec

    from podium.protocol.config import load_config

    config = load_config(args.config)
    for w in config.warnings:
        err(f"warning: {w}")
    changes: dict[str, Any] = {}
    if getattr(args, "policy", None):
        changes["policy_file"] = Path(args.policy)
    if getattr(args, "scheduler_name", None):
        changes["scheduler_name"] = args.scheduler_name
    podium_changes = {
        key: value
        for key, value in (
            ("listen", getattr(args, "listen", None)),
            ("unix", getattr(args, "unix", None)),
            ("metrics", getattr(args, "metrics", None)),
            ("database", getattr(args, "db", None)),
            ("store", getattr(args, "store", None)),
            ("log_format", getattr(args, "log_format", None)),
            ("log_level", getattr(args, "log_level", None)),
            ("random_seed", getattr(args, "seed", None)),
            ("token_file", getattr(args, "token_file", None)),
            ("tls_cert", getattr(args, "tls_cert", None)),
            ("tls_key", getattr(args, "tls_key", None)),
            ("insecure_plaintext", getattr(args, "insecure_plaintext", None) or None),
            ("insecure_metrics", getattr(args, "insecure_metrics", None) or None),
            ("unix_mode", getattr(args, "unix_mode", None)),
            ("max_connections", getattr(args, "max_connections", None)),
            ("max_in_flight_per_connection", getattr(args, "max_in_flight", None)),
            ("max_watchers", getattr(args, "max_watchers", None)),
            ("watch_buffer", getattr(args, "watch_buffer", None)),
            ("max_frame_bytes", getattr(args, "max_frame_bytes", None)),
            ("max_object_bytes", getattr(args, "max_object_bytes", None)),
            ("max_outbox_bytes", getattr(args, "max_outbox_bytes", None)),
            ("max_buffered_bytes", getattr(args, "max_buffered_bytes", None)),
            ("max_handshakes", getattr(args, "max_handshakes", None)),
            ("handshake_timeout_seconds", getattr(args, "handshake_timeout", None)),
            ("batch_max_pods", getattr(args, "batch_max_pods", None)),
            ("batch_max_seconds", getattr(args, "batch_max_seconds", None)),
        )
        if value is not None
    }
    if getattr(args, "db", None) and not getattr(args, "store", None):
        podium_changes["store"] = None  # --db names the SQLite file, whatever the file says
    if getattr(args, "listen", None) == "none":
        podium_changes["listen"] = None
    if getattr(args, "metrics", None) == "none":
        podium_changes["metrics"] = None
    election = {
        key: value
        for key, value in (
            ("leader_elect", getattr(args, "leader_elect", None)),
            ("lease_duration_seconds", getattr(args, "leader_elect_lease_duration", None)),
            ("renew_deadline_seconds", getattr(args, "leader_elect_renew_deadline", None)),
            ("retry_period_seconds", getattr(args, "leader_elect_retry_period", None)),
            ("identity", getattr(args, "leader_elect_identity", None)),
            ("advertise", getattr(args, "advertise", None)),
        )
        if value is not None
    }
    if election:
        podium_changes["leader_election"] = msgspec.structs.replace(
            config.podium.leader_election, **election
        )
    if podium_changes:
        changes["podium"] = msgspec.structs.replace(config.podium, **podium_changes)
    return dataclasses.replace(config, **changes) if changes else config
