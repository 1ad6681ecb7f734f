"""``podium db check``, ``podium db backup`` and ``podium db recover``: the offline database
tools.

Kubernetes counterpart: etcd's operator commands (``etcdctl snapshot save`` and
``etcdctl snapshot status``, etcdctl/ctlv3/command/snapshot_command.go@v3.3); the scheduler
itself has none.

Owns: nothing; each command opens the database file itself through podium.store.tools (read-only
for check), so both work while ``podium serve`` runs on it. ``check`` and ``backup`` also take an
etcd store (``etcd://HOST:PORT/PREFIX``): backup writes what the prefix holds, at one etcd
revision, into a new SQLite database (:func:`podium.store.etcd.export.export_prefix`), and check
checks such a copy, made in a temporary folder.
Mailbox: none (sync functions called by the ``podium`` CLI).
Emits: text or JSON on stdout; ``error: ...`` on stderr and a progress bar on a terminal. Exit
codes: 0 ok (warnings allowed), 1 errors found or the command failed, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from podium.cli.common.arguments import add_command, add_command_group
from podium.cli.common.output import (
    EXIT_FAILED,
    EXIT_OK,
    Progress,
    add_output_option,
    dump_json,
    err,
    out,
)
from podium.protocol.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from podium.protocol.objects import Node, Pod
    from podium.store.location import EtcdLocation
    from podium.store.tools import CheckReport, RecoverReport

# The store, its etcd client and the actors' NodeInfo are imported inside the commands: every
# ``podium`` command builds this module's parser (issue 26 point 5).

__all__ = ["cmd_backup", "cmd_check", "cmd_recover", "over_allocatable", "register"]


def over_allocatable(node: Node, pods: Sequence[Pod]) -> list[str]:
    """The resources ``pods`` together over-commit on ``node``, as the scheduler counts them.

    Requests are PodInfo's (containers, init containers, overhead); allocatable is NodeInfo's
    (``status.allocatable``, else ``status.capacity``); the pod count is checked against the
    node's ``pods`` as PodFitsResources does (predicates.go@v1.14). Equal is not over.
    """
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo

    info = NodeInfo(node, (PodInfo(p) for p in pods))
    want, have = info.requested, info.allocatable
    over: list[str] = []

    def check(name: str, requested: int, allocatable: int, unit: str = "") -> None:
        if requested > allocatable:
            over.append(f"{name} {requested}{unit} requested of {allocatable}{unit} allocatable")

    check("cpu", want.milli_cpu, have.milli_cpu, "m")
    check("memory", want.memory, have.memory)
    check("ephemeral-storage", want.ephemeral_storage, have.ephemeral_storage)
    check("pods", len(info.pods), have.allowed_pod_number)
    for name in sorted(want.scalar):
        check(name, want.scalar[name], have.scalar.get(name, 0))
    return over


# --------------------------------------------------------------------------- output


def _print_report(report: CheckReport) -> None:
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(report.objects.items())) or "none"
    if report.events:
        log = f"{report.events} kept, from revision {report.oldest_event_revision}"
    else:
        log = "empty"
    rows = [
        ("database", report.path),
        ("schema", str(report.schema_version)),
        ("revision", str(report.revision)),
        ("objects", kinds),
        ("pods", f"{report.bound_pods} bound, {report.bindings} bindings made by Podium"),
        ("events", log),
    ]
    for label, value in rows:
        out(f"{label:<10}{value}")
    for w in report.warnings:
        out(f"warning: {w}")
    for e in report.errors:
        out(f"error: {e}")
    out(f"{len(report.errors)} errors, {len(report.warnings)} warnings")


# --------------------------------------------------------------------------- commands


def _export(args: argparse.Namespace, location: EtcdLocation, dest: str, *, force: bool) -> int:
    """Copy the etcd store at ``location`` into ``dest`` (``podium.etcd`` from ``--config``
    for TLS and the user); its revision."""
    import trio

    from podium.protocol.config import load_config
    from podium.store.etcd.durability import etcd_durability
    from podium.store.etcd.export import export_prefix

    settings = load_config(args.config).podium

    async def export() -> int:
        durability = etcd_durability(location, settings)
        try:
            return (await export_prefix(durability, dest, force=force)).revision
        finally:
            await durability.close()

    return trio.run(export)


def _etcd_location(path: str) -> EtcdLocation | None:
    from podium.store.location import EtcdLocation, parse_store_url

    where = parse_store_url(path) if path.startswith("etcd://") else None
    return where if isinstance(where, EtcdLocation) else None


def cmd_check(args: argparse.Namespace) -> int:
    import tempfile

    from podium.store.tools import check_database

    location = _etcd_location(args.path)
    if location is None:
        return _report(check_database(args.path, over_committed=over_allocatable), args)
    with tempfile.TemporaryDirectory(prefix="podium-check-") as folder:
        copy = str(Path(folder) / "copy.db")
        try:
            _export(args, location, copy, force=False)
        except (StoreError, OSError) as exc:
            err(f"error: {exc}")
            return EXIT_FAILED
        report = check_database(copy, over_committed=over_allocatable)
    report.path = str(location)
    return _report(report, args)


def _report(report: CheckReport, args: argparse.Namespace) -> int:
    if args.output == "json":
        dump_json(report.to_json())
    elif not report.is_database:
        # Nothing was counted: the failure itself is the whole answer.
        for e in report.errors:
            err(f"error: {e}")
    else:
        _print_report(report)
    return EXIT_OK if report.ok else EXIT_FAILED


class _Bar:
    """Adapts backup steps to output.Progress, whose total is fixed when it is made."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Progress | None = None

    def update(self, done: int, total: int) -> None:
        if self.bar is None or self.bar.total != total:
            self.bar = Progress(self.label, total, enabled=True, stream=sys.stderr)
        self.bar.update(done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_backup(args: argparse.Namespace) -> int:
    from podium.store.tools import backup_database

    location = _etcd_location(args.path)
    if location is not None:
        try:
            exported = _export(args, location, args.dest, force=args.force)
        except (StoreError, OSError) as exc:
            err(f"error: {exc}")
            return EXIT_FAILED
        out(f"backed up {location} to {args.dest} (revision {exported})")
        return EXIT_OK
    bar = _Bar("backing up")
    try:
        result = backup_database(args.path, args.dest, progress=bar.update, force=args.force)
    except StoreError as exc:
        bar.close()
        err(f"error: {exc}")
        return EXIT_FAILED
    bar.close()
    revision = "unknown" if result.revision is None else str(result.revision)
    out(f"backed up {result.path} to {result.dest} ({result.pages} pages, revision {revision})")
    return EXIT_OK


def _recover_json(report: RecoverReport) -> dict[str, object]:
    return {
        "path": report.path,
        "dest": report.dest,
        "revision": report.revision,
        "objects": report.objects,
        "events": report.events,
        "oldestEventRevision": report.oldest_event_revision,
        "bindings": report.bindings,
        "lost": list(report.lost),
    }


def cmd_recover(args: argparse.Namespace) -> int:
    from podium.store.tools import recover_database

    try:
        report = recover_database(args.path, args.dest, force=args.force)
    except StoreError as exc:
        err(f"error: {exc}")
        return EXIT_FAILED
    if args.output == "json":
        dump_json(_recover_json(report))
        return EXIT_OK
    log = (
        "empty"
        if report.oldest_event_revision is None
        else (f"{report.events} events from revision {report.oldest_event_revision}")
    )
    out(
        f"recovered {report.path} into {report.dest} at revision {report.revision}: "
        f"{report.objects} objects, {report.bindings} bindings, event log {log}"
    )
    for line in report.lost:
        out(f"lost: {line}")
    out(f"{len(report.lost)} losses")
    return EXIT_OK


# --------------------------------------------------------------------------- parser


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="for an etcd:// store: the configuration whose podium.etcd gives TLS and the user",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``db`` command group (``check``, ``backup``) to ``podium``."""
    db = add_command_group(
        subparsers,
        "db",
        summary="check, back up or recover a Podium database file",
        description=(
            "Offline tools over the SQLite database of `podium serve`. Each opens the file\n"
            "itself (check and recover read-only); check and backup work while the daemon\n"
            "runs on it, recover salvages a database the daemon refuses."
        ),
        epilog=(
            "examples:\n"
            "  podium db check podium.db\n"
            "  podium db backup podium.db /backups/podium-$(date +%F).db\n"
            "  podium db check etcd://127.0.0.1:2379/podium\n"
            "  podium db backup etcd://127.0.0.1:2379/podium copy.db --config scheduler.yaml\n"
            "  podium db recover podium.db podium-recovered.db"
        ),
    )

    p = add_command(
        db,
        "check",
        summary="verify a database's integrity and Podium's invariants",
        description=(
            "Verify a database: SQLite's integrity_check, every stored object and event\n"
            "decodes, revisions are consistent, no pod is bound twice or to two nodes, and no\n"
            "node is over its allocatable through a binding Podium made.\n\n"
            "Prints the counts, then each warning and error. Errors break an invariant;\n"
            "warnings are states Kubernetes allows: a node deleted under its pods, a pod\n"
            "bound by a client to a node that does not exist or past the node's allocatable.\n"
            "Exit 0 when there are no errors (warnings allowed), 1 with errors or when the\n"
            "file is not a Podium database."
        ),
        epilog=(
            "examples:\n"
            "  podium db check podium.db\n"
            "  podium db check podium.db -o json | jq .errors\n\n"
            "output:\n"
            "  database  podium.db\n"
            "  schema    1\n"
            "  revision  1042\n"
            "  objects   Node 3, Pod 120\n"
            "  pods      118 bound, 97 bindings made by Podium\n"
            "  events    1042 kept, from revision 1\n"
            "  warning: pod default/db-0 is bound to node n9, which does not exist (...)\n"
            "  0 errors, 1 warnings"
        ),
    )
    p.add_argument(
        "path",
        metavar="PATH",
        help="the database file (e.g. podium.db), or etcd://HOST:PORT/PREFIX",
    )
    _add_config(p)
    add_output_option(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_check)

    p = add_command(
        db,
        "backup",
        summary="copy a database consistently, even while the daemon writes it",
        description=(
            "Copy a database with SQLite's online backup API: the copy holds exactly one\n"
            "committed state, even while the daemon writes. It is written beside DEST,\n"
            "checked (PRAGMA quick_check), then renamed onto DEST, so DEST is never a\n"
            "partial copy. Restore by stopping the daemon and putting the copy in place."
        ),
        epilog=(
            "examples:\n"
            "  podium db backup podium.db podium-backup.db\n"
            "  podium db backup /var/lib/podium/podium.db /backups/podium.db --force\n\n"
            "output:\n"
            "  backed up podium.db to podium-backup.db (2310 pages, revision 1042)"
        ),
    )
    p.add_argument(
        "path",
        metavar="PATH",
        help="the database to copy, or etcd://HOST:PORT/PREFIX (copied into a SQLite DEST)",
    )
    p.add_argument("dest", metavar="DEST", help="the copy's file name")
    p.add_argument("--force", action="store_true", help="replace DEST if it exists")
    _add_config(p)
    p.set_defaults(func=cmd_backup)

    p = add_command(
        db,
        "recover",
        summary="salvage what a damaged database still holds into a new file",
        description=(
            "Salvage a database podium serve refuses (exit 3): every object row that still\n"
            "decodes, the bindings of the pods recovered, and the end of the event log back to\n"
            "its first gap go into DEST, at the newest revision found; each row or range that\n"
            "could not be read or decoded is listed as lost. A backup, when there is one, is\n"
            "the better way back. Then: podium db check DEST, and serve it with --db DEST.\n"
            "Exit 0 when DEST was written (losses listed), 1 when nothing could be."
        ),
        epilog=(
            "examples:\n"
            "  podium db recover podium.db podium-recovered.db\n"
            "  podium db recover podium.db podium-recovered.db -o json | jq .lost\n\n"
            "output:\n"
            "  recovered podium.db into podium-recovered.db at revision 1042: 118 objects,\n"
            "  97 bindings, event log 1042 events from revision 1\n"
            "  lost: Pod default/web-7: does not decode (...)\n"
            "  1 losses"
        ),
    )
    p.add_argument("path", metavar="PATH", help="the damaged database")
    p.add_argument("dest", metavar="DEST", help="the new database's file name")
    p.add_argument("--force", action="store_true", help="replace DEST if it exists")
    add_output_option(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_recover)
