"""The ``podium`` subcommands that talk to a running daemon: apply, delete, get, watch, explain,
stats, policy reload, and ``protocol schema``.

Kubernetes counterpart: k8s.io/kubectl/pkg/cmd (apply, delete, get, and the table printers of
pkg/printers/internalversion/printers.go@v1.14) — the same names, kind aliases, table columns,
AGE format and "No resources found" wording, so an operator's habits carry over.

Owns: nothing; each command opens one connection (:func:`podium.actors.client.connect`), sends
its requests and prints.
Mailbox: none (each command is a sync function that runs its own ``trio.run``).
Emits: protocol requests through the client; text or JSON on stdout. Exit codes: 0 ok, 1 rejected or failed (the daemon's error, an
unreachable daemon, a file that does not load), 2 usage.

Human output goes to stdout, errors and warnings to stderr (``error: ...``); ``-o json`` prints
machine-readable JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, assert_never

import msgspec
import trio
import yaml

from podium.actors.client import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_SERVER,
    Client,
    ClientConnectionError,
    RemoteError,
    ServerUnreachable,
    client_ssl_context,
    connect,
    parse_server,
    read_token_file,
)
from podium.actors.console import at_least
from podium.actors.framework.nodeinfo import PodInfo
from podium.protocol.errors import LoadErrors
from podium.protocol.loader import load_files, load_text
from podium.protocol.objects import (
    NAMESPACED_KINDS,
    KubeObject,
    LabelSelector,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    StorageClass,
    enc_hook,
)
from podium.protocol.wire import (
    Event,
    ExplainReply,
    ObjectError,
    ObjectRef,
    ObjectStatus,
)

__all__ = [
    "KIND_ALIASES",
    "human_duration",
    "register",
    "resolve_kind",
    "utc_now",
]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
SERVER_ENV = "PODIUM_SERVER"
TOKEN_ENV = "PODIUM_TOKEN"
TLS_CA_ENV = "PODIUM_TLS_CA"

KIND_ALIASES: dict[str, str] = {
    alias: kind
    for kind, aliases in {
        "Pod": ("pods", "pod", "po"),
        "Node": ("nodes", "node", "no"),
        "PersistentVolume": ("persistentvolumes", "persistentvolume", "pv"),
        "PersistentVolumeClaim": ("persistentvolumeclaims", "persistentvolumeclaim", "pvc"),
        "Service": ("services", "service", "svc"),
        "StorageClass": ("storageclasses", "storageclass", "sc"),
        "ReplicaSet": ("replicasets", "replicaset", "rs"),
        "ReplicationController": ("replicationcontrollers", "replicationcontroller", "rc"),
        "StatefulSet": ("statefulsets", "statefulset", "sts"),
        "PriorityClass": ("priorityclasses", "priorityclass", "pc"),
        "PodDisruptionBudget": ("poddisruptionbudgets", "poddisruptionbudget", "pdb"),
    }.items()
    for alias in (*aliases, kind.lower())
}
"""kubectl's resource names, singular names and short names (and the Kind in any case)."""

# PyYAML's safe dumper, the C one when available (a large list dumps ~10x faster).
_YAML_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")


def resolve_kind(name: str) -> str:
    """The Kind for a kubectl-style name (``po``, ``pods``, ``Pod``, ``storageclasses`` ...).

    Raises:
        ValueError: no kind has that name.
    """
    kind = KIND_ALIASES.get(name.lower())
    if kind is None:
        known = ", ".join(sorted({a for a in KIND_ALIASES if a.endswith("s")}))
        raise ValueError(f'the server doesn\'t have a resource type "{name}" (known: {known})')
    return kind


def utc_now() -> datetime:
    """The clock AGE columns are measured against (tests patch it)."""
    return datetime.now(UTC)


# --------------------------------------------------------------------------- output helpers


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def _table(rows: Sequence[Sequence[str]]) -> None:
    """Columns separated by three spaces, as kubectl's tabwriter prints them."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        _out("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def human_duration(seconds: float) -> str:
    """kubectl's AGE: k8s.io/apimachinery/pkg/util/duration.HumanDuration@v1.14."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{hours // 24 // 365}y"


def _age(timestamp: str | None) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        created = datetime.fromisoformat(timestamp)
    except ValueError:
        return "<unknown>"
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return human_duration((utc_now() - created).total_seconds())


def _ref(kind: str, namespace: str, name: str) -> str:
    """``pod/default/web-1`` or ``node/n1``: kubectl's kind/name with the namespace inside."""
    return f"{kind.lower()}/{namespace}/{name}" if namespace else f"{kind.lower()}/{name}"


def _object_doc(obj: KubeObject) -> dict[str, Any]:
    """The v1 JSON form of an object, with ``apiVersion`` and ``kind`` first (as kubectl)."""
    doc: dict[str, Any] = msgspec.to_builtins(obj, enc_hook=enc_hook)
    kind = doc.pop("kind")
    doc.pop("apiVersion", None)
    return {"apiVersion": obj.api_version, "kind": kind, **doc}


def _message_doc(msg: msgspec.Struct) -> dict[str, Any]:
    """A reply or event as JSON, without the wire's ``msg`` and ``id``."""
    doc: dict[str, Any] = msgspec.to_builtins(msg, enc_hook=enc_hook)
    doc.pop("msg", None)
    doc.pop("id", None)
    if isinstance(msg, Event) and msg.object is not None:
        doc["object"] = _object_doc(msg.object)
    return doc


def _dump_json(doc: Any) -> None:
    _out(json.dumps(doc, indent=2))


def _format_milli_cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


_BINARY_UNITS = (
    ("Ei", 1 << 60),
    ("Pi", 1 << 50),
    ("Ti", 1 << 40),
    ("Gi", 1 << 30),
    ("Mi", 1 << 20),
    ("Ki", 1 << 10),
)
_DECIMAL_UNITS = (
    ("E", 10**18),
    ("P", 10**15),
    ("T", 10**12),
    ("G", 10**9),
    ("M", 10**6),
    ("k", 10**3),
)


def _format_bytes(value: int) -> str:
    """Bytes as an exact quantity, binary suffixes first (``1Gi``, ``500M``, ``1234``)."""
    if value == 0:
        return "0"
    for units in (_BINARY_UNITS, _DECIMAL_UNITS):
        for suffix, size in units:
            if value % size == 0:
                return f"{value // size}{suffix}"
    return str(value)


def _selector_text(selector: LabelSelector | dict[str, str] | None) -> str:
    if selector is None:
        return "<none>"
    if isinstance(selector, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"
    parts = [f"{k}={v}" for k, v in sorted(selector.match_labels.items())]
    for r in selector.match_expressions:
        match r.operator:
            case "In":
                parts.append(f"{r.key} in ({','.join(r.values)})")
            case "NotIn":
                parts.append(f"{r.key} notin ({','.join(r.values)})")
            case "Exists":
                parts.append(r.key)
            case "DoesNotExist":
                parts.append(f"!{r.key}")
    return ",".join(parts) or "<none>"


# --------------------------------------------------------------------------- running


def _server(args: argparse.Namespace) -> str:
    server: str | None = args.server
    if server is None:
        server = os.environ.get(SERVER_ENV) or DEFAULT_SERVER
    return server


def _run(
    args: argparse.Namespace,
    body: Callable[[Client], Awaitable[int]],
    *,
    until_interrupted: bool = False,
) -> int:
    """Connect, run ``body`` with the client, and map failures to messages and exit codes.

    ``until_interrupted``: the command runs until Ctrl-C, which is then its normal end (exit
    0); other commands report an interruption as a failure.
    """
    server = _server(args)
    try:
        parse_server(server)
    except ValueError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    try:
        token, tls = _access(args, server)
    except ValueError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE

    async def main() -> int:
        async with connect(server, token=token, tls=tls) as client:
            return await body(client)

    try:
        return trio.run(main)
    except ServerUnreachable as exc:
        _err(f"error: {exc} (is `podium serve` running?)")
    except RemoteError as exc:
        _print_remote_error(exc)
    except ClientConnectionError as exc:
        _err(f"error: {exc}")
    except KeyboardInterrupt:
        if until_interrupted:
            return EXIT_OK
        _err("interrupted")
    return EXIT_FAILED


def _access(args: argparse.Namespace, server: str) -> tuple[str | None, ssl.SSLContext | None]:
    """The token (--token, else --token-file, else $PODIUM_TOKEN) and the TLS context (--tls
    or --tls-ca, else $PODIUM_TLS_CA; never for a Unix socket, whose file mode guards it).

    Raises:
        ValueError: a token file or CA file that cannot be read, or TLS asked for a Unix
            socket.
    """
    token: str | None = getattr(args, "token", None)
    token_file: str | None = getattr(args, "token_file", None)
    if not token and token_file:
        token = read_token_file(token_file)
    token = token or os.environ.get(TOKEN_ENV) or None
    ca: str | None = getattr(args, "tls_ca", None)
    wanted = bool(getattr(args, "tls", False)) or ca is not None
    unix = server.startswith("unix:")
    if wanted and unix:
        raise ValueError(f"TLS is for TCP; {server} is a Unix socket (its file mode guards it)")
    ca = ca or os.environ.get(TLS_CA_ENV) or None
    if unix or not (wanted or ca):
        return token, None
    return token, client_ssl_context(ca)


def _print_remote_error(exc: RemoteError) -> None:
    reply = exc.reply
    if not reply.errors:
        at = f" at {reply.path}" if reply.path and reply.path not in reply.message else ""
        _err(f"error: {reply.message}{at}")
        return
    _err(f"error: {reply.message}")
    for e in reply.errors:
        _err(f"error: {_object_error_text(e)}")


def _object_error_text(e: ObjectError) -> str:
    name = f"{e.namespace}/{e.name}" if e.namespace and e.name else e.name
    what = " ".join(p for p in (e.kind, name) if p)
    at = f" at {e.path}" if e.path else ""
    return f"object {e.index} ({what or 'unnamed'}){at}: {e.message}"


def _load(paths: Sequence[str]) -> list[KubeObject] | None:
    """Every object of the files (``-`` is stdin), or None after printing every load error."""
    try:
        objects = load_files([p for p in paths if p != "-"])
        if "-" in paths:
            objects += load_text(sys.stdin.buffer.read(), source="-")
    except LoadErrors as exc:
        for e in exc.errors:
            _err(f"error: {e}")
        _err("error: nothing was sent")
        return None
    if not objects:
        _err(f"error: no objects found in {', '.join(paths)}")
        return None
    return objects


# --------------------------------------------------------------------------- apply


_ACTION_WORDS = {
    "created": "created",
    "replaced": "configured",
    "unchanged": "unchanged",
    "deleted": "deleted",
}


def _status_line(status: ObjectStatus) -> str:
    return f"{_ref(status.kind, status.namespace, status.name)} {_ACTION_WORDS[status.action]}"


def cmd_apply(args: argparse.Namespace) -> int:
    objects = _load(args.file)
    if objects is None:
        return EXIT_FAILED

    async def body(client: Client) -> int:
        reply = await client.put(objects)
        if args.output == "json":
            _dump_json(_message_doc(reply))
        else:
            for status in reply.objects:
                _out(_status_line(status))
        return EXIT_OK

    return _run(args, body)


# --------------------------------------------------------------------------- delete


def cmd_delete(args: argparse.Namespace) -> int:
    if args.file:
        if args.kind or args.name:
            _err("error: give either KIND NAME or -f FILE, not both")
            return EXIT_USAGE
        objects = _load(args.file)
        if objects is None:
            return EXIT_FAILED
        refs = [
            ObjectRef(kind=type(o).__name__, name=o.metadata.name, namespace=o.metadata.namespace)
            for o in objects
        ]
    else:
        if not (args.kind and args.name):
            _err("error: give KIND NAME (e.g. `podium delete pod web-1`) or -f FILE")
            return EXIT_USAGE
        try:
            kind = resolve_kind(args.kind)
        except ValueError as exc:
            _err(f"error: {exc}")
            return EXIT_USAGE
        namespace = (args.namespace or "default") if kind in NAMESPACED_KINDS else ""
        refs = [ObjectRef(kind=kind, name=args.name, namespace=namespace)]

    async def body(client: Client) -> int:
        reply = await client.delete(refs)
        if args.output == "json":
            _dump_json(_message_doc(reply))
        else:
            for status in reply.objects:
                _out(_status_line(status))
        return EXIT_OK

    return _run(args, body)


# --------------------------------------------------------------------------- get


def pod_status(pod: Pod) -> str:
    """Terminating, a terminal phase, Bound (a node is set) or Pending."""
    if pod.metadata.deletion_timestamp:
        return "Terminating"
    if pod.status.phase in ("Succeeded", "Failed"):
        return pod.status.phase
    return "Bound" if pod.spec.node_name else "Pending"


def _unschedulable_message(pod: Pod) -> str:
    for c in pod.status.conditions:
        if c.type == "PodScheduled" and c.status == "False":
            return c.message or c.reason
    return ""


def node_status(node: Node) -> str:
    """Ready/NotReady from the Ready condition (Ready when absent), plus SchedulingDisabled."""
    ready = next((c for c in node.status.conditions if c.type == "Ready"), None)
    status = "Ready" if ready is None or ready.status == "True" else "NotReady"
    return status + (",SchedulingDisabled" if node.spec.unschedulable else "")


def _taints_text(node: Node) -> str:
    taints = [
        f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
        for t in node.spec.taints
    ]
    return ",".join(taints) or "<none>"


def _row(obj: KubeObject, *, wide: bool) -> tuple[list[str], list[str]]:
    """(header, row) of one object, without NAMESPACE; AGE last (then the wide columns)."""
    age = _age(obj.metadata.creation_timestamp)
    name = obj.metadata.name
    match obj:
        case Pod():
            header = ["NAME", "STATUS", "NODE", "AGE"]
            row = [name, pod_status(obj), obj.spec.node_name or "<none>", age]
            if wide:
                info = PodInfo(obj)
                header += ["PRIORITY", "CPU", "MEMORY", "NOMINATED NODE", "MESSAGE"]
                row += [
                    str(obj.spec.priority or 0),
                    _format_milli_cpu(info.request.milli_cpu),
                    _format_bytes(info.request.memory),
                    obj.status.nominated_node_name or "<none>",
                    _unschedulable_message(obj),
                ]
        case Node():
            allocatable = obj.status.allocatable or obj.status.capacity
            header = ["NAME", "STATUS", "PODS", "CPU", "MEMORY", "AGE"]
            row = [
                name,
                node_status(obj),
                *(
                    allocatable[r].text if r in allocatable else "<none>"
                    for r in ("pods", "cpu", "memory")
                ),
                age,
            ]
            if wide:
                labels = obj.metadata.labels
                zone = next((labels[k] for k in _ZONE_LABELS if k in labels), "<none>")
                header += ["ZONE", "TAINTS"]
                row += [zone, _taints_text(obj)]
        case PersistentVolume():
            claim = obj.spec.claim_ref
            header = ["NAME", "CAPACITY", "STATUS", "CLAIM", "STORAGECLASS", "AGE"]
            row = [
                name,
                obj.spec.capacity["storage"].text if "storage" in obj.spec.capacity else "",
                obj.status.phase or "Available",
                f"{claim.namespace}/{claim.name}" if claim is not None else "",
                obj.spec.storage_class_name,
                age,
            ]
        case PersistentVolumeClaim():
            header = ["NAME", "STATUS", "VOLUME", "STORAGECLASS", "AGE"]
            row = [
                name,
                obj.status.phase or ("Bound" if obj.spec.volume_name else "Pending"),
                obj.spec.volume_name,
                obj.spec.storage_class_name or "",
                age,
            ]
        case StorageClass():
            header = ["NAME", "PROVISIONER", "VOLUMEBINDINGMODE", "AGE"]
            row = [name, obj.provisioner, obj.volume_binding_mode, age]
        case PriorityClass():
            header = ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE"]
            row = [name, str(obj.value), str(obj.global_default).lower(), age]
        case Service() | ReplicationController():
            header = ["NAME", "SELECTOR", "AGE"]
            row = [name, _selector_text(obj.spec.selector), age]
        case ReplicaSet() | StatefulSet():
            header = ["NAME", "SELECTOR", "AGE"]
            row = [name, _selector_text(obj.spec.selector), age]
        case PodDisruptionBudget():
            # kubectl's columns; ALLOWED DISRUPTIONS is <none> when no status was given (the
            # scheduler then derives it from the matching pods, see actors/core/preemption.py).
            spec = obj.spec
            header = ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
            row = [
                name,
                "N/A" if spec.min_available is None else str(spec.min_available),
                "N/A" if spec.max_unavailable is None else str(spec.max_unavailable),
                "<none>" if obj.status is None else str(obj.status.disruptions_allowed),
                age,
            ]
        case _:
            assert_never(obj)
    return header, row


def _print_table(items: Sequence[KubeObject], *, wide: bool, all_ns: bool) -> None:
    rows: list[list[str]] = []
    header: list[str] = []
    for obj in items:
        header, row = _row(obj, wide=wide)
        rows.append([obj.metadata.namespace, *row] if all_ns else row)
    if all_ns:
        header = ["NAMESPACE", *header]
    _table([header, *rows])


def cmd_get(args: argparse.Namespace) -> int:
    try:
        kind = resolve_kind(args.kind)
    except ValueError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    namespaced = kind in NAMESPACED_KINDS
    if args.all_namespaces and args.name:
        _err("error: a resource cannot be retrieved by name across all namespaces")
        return EXIT_USAGE
    all_ns = namespaced and args.all_namespaces
    namespace: str | None = (args.namespace or "default") if namespaced and not all_ns else None

    async def body(client: Client) -> int:
        from podium.actors.console import Progress

        bar: Progress | None = None

        def on_page(done: int, remaining: int | None) -> None:
            nonlocal bar
            if bar is None and remaining:  # more than one page: a long list
                tables = args.output in ("table", "wide")
                bar = Progress(f"reading {kind} objects", done + remaining, enabled=tables)
            if bar is not None:
                bar.update(min(done, bar.total))  # (objects may come while it reads)

        try:
            reply = await client.get(
                kind,
                name=args.name or "",
                namespace=namespace,
                label_selector=args.selector or "",
                chunk_size=args.chunk_size,
                on_page=on_page,
            )
        finally:
            if bar is not None:
                bar.close()
        items = reply.items
        if args.output in ("json", "yaml"):
            if args.name and len(items) == 1:
                doc: dict[str, Any] = _object_doc(items[0])
            else:
                doc = {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": [_object_doc(o) for o in items],
                    "metadata": {"resourceVersion": str(reply.revision)},
                }
            if args.output == "json":
                _dump_json(doc)
            else:
                sys.stdout.write(yaml.dump(doc, Dumper=_YAML_DUMPER, sort_keys=False))
            return EXIT_OK
        if not items:
            where = f" in {namespace} namespace" if namespace is not None else ""
            _err(f"No resources found{where}." if where else "No resources found")
            return EXIT_OK
        _print_table(items, wide=args.output == "wide", all_ns=all_ns)
        return EXIT_OK

    return _run(args, body)


# --------------------------------------------------------------------------- watch


def event_line(event: Event) -> str:
    """``REVISION TYPE kind/ns/name [-> node] [message]``."""
    parts = [str(event.revision), event.type, _ref(event.kind, event.namespace, event.name)]
    if event.node:
        parts += ["->", event.node]
    if event.message:
        parts.append(event.message)
    return " ".join(parts)


def cmd_watch(args: argparse.Namespace) -> int:
    try:
        kinds = [resolve_kind(k) for k in args.kind or ()]
    except ValueError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    as_json = args.output == "json"

    async def body(client: Client) -> int:
        try:
            async with client.watch(args.from_revision, kinds) as events:
                async for event in events:
                    if as_json:
                        _out(msgspec.json.encode(_message_doc(event)).decode())
                    else:
                        _out(event_line(event))
                    sys.stdout.flush()
        except RemoteError as exc:
            if exc.code == "gone":
                _err(
                    f"error: revision {args.from_revision} is compacted; oldest kept is "
                    f"{exc.revision}: list again"
                )
            elif exc.code == "overloaded" and exc.revision is not None:
                _err(f"error: {exc}; resume with --from-revision {exc.revision}")
            else:
                _print_remote_error(exc)
            return EXIT_FAILED
        _err("error: the watch ended")
        return EXIT_FAILED

    return _run(args, body, until_interrupted=True)


# --------------------------------------------------------------------------- explain


def _explain_doc(reply: ExplainReply) -> dict[str, Any]:
    doc: dict[str, Any] = msgspec.to_builtins(reply.placement)
    doc["hints"] = msgspec.to_builtins(reply.hints)
    return doc


def _print_explain(reply: ExplainReply) -> None:
    p = reply.placement
    _out(f"Pod:       {p.namespace}/{p.name}")
    _out(f"Node:      {p.node or '<none>'}")
    if p.message:
        _out(f"Message:   {p.message}")
    _out(f"Attempts:  {p.attempts}")
    if p.preempted:
        _out(f"Preempts:  {', '.join(p.preempted)}")
    _out()
    if p.nodes:
        rows = [["NODE", "FITS", "REASONS", "TOTAL"]]
        for name, verdict in p.nodes.items():
            rows.append(
                [
                    name,
                    "yes" if verdict.fits else "no",
                    ", ".join(verdict.reasons) or "-",
                    "-" if verdict.total is None else str(verdict.total),
                ]
            )
        _table(rows)
    else:
        _out("No nodes were examined.")
    if reply.hints:
        _out()
        _out("Hints:")
        for h in reply.hints:
            plural = "node" if h.nodes == 1 else "nodes"
            _out(f"  needs {h.missing} more {h.resource} on {h.nodes} {plural}")


def cmd_explain(args: argparse.Namespace) -> int:
    namespace, _, name = args.pod.rpartition("/")
    namespace = namespace or "default"
    if not name or "/" in namespace:
        _err(f"error: {args.pod!r} is not NAMESPACE/NAME or NAME")
        return EXIT_USAGE

    async def body(client: Client) -> int:
        reply = await client.explain(namespace, name)
        if args.output == "json":
            _dump_json(_explain_doc(reply))
        else:
            _print_explain(reply)
        return EXIT_OK

    return _run(args, body)


# --------------------------------------------------------------------------- stats, policy


def cmd_stats(args: argparse.Namespace) -> int:
    async def body(client: Client) -> int:
        s = await client.stats()
        if args.output == "json":
            _dump_json(_message_doc(s))
            return EXIT_OK
        p = s.pending
        rows = [
            ["revision", str(s.revision)],
            ["ready", str(s.ready).lower()],
            ["nodes", str(s.nodes)],
            ["pods", f"{s.pods} (bound {s.bound}, assumed {s.assumed})"],
            [
                "pending",
                f"{p.active + p.backoff + p.unschedulable} (active {p.active}, "
                f"backoff {p.backoff}, unschedulable {p.unschedulable})",
            ],
            [
                "attempts",
                f"scheduled {s.scheduled}, unschedulable {s.unschedulable}, errors {s.errors}",
            ],
            ["connections", f"{s.connections} (watchers {s.watchers})"],
            ["uptime", human_duration(s.uptime_seconds)],
            ["server", client.server_version],
        ]
        _table(rows)
        return EXIT_OK

    return _run(args, body)


def cmd_policy_reload(args: argparse.Namespace) -> int:
    async def body(client: Client) -> int:
        reply = await client.reload_policy()
        for w in reply.warnings:
            _err(f"warning: {w}")
        if args.output == "json":
            doc = _message_doc(reply)
            _dump_json(doc)
            return EXIT_OK
        _out("Predicates (in order):")
        for name in reply.predicates:
            _out(f"  {name}")
        _out("Priorities:")
        if reply.priorities:
            width = max(len(p.name) for p in reply.priorities)
            for p in reply.priorities:
                _out(f"  {p.name.ljust(width)}   weight {p.weight}")
        return EXIT_OK

    return _run(args, body)


def cmd_protocol_schema(args: argparse.Namespace) -> int:
    from podium.protocol.schema import protocol_schema  # only this command needs it

    _dump_json(protocol_schema())
    return EXIT_OK


# --------------------------------------------------------------------------- parser


def _server_arg(value: str) -> str:
    try:
        parse_server(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _connection_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("connection")
    group.add_argument(
        "--server",
        type=_server_arg,
        metavar="HOST:PORT|unix:PATH",
        help=f"the daemon to talk to (default: ${SERVER_ENV}, else {DEFAULT_SERVER})",
    )
    group.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"access token for listeners that require one (default: ${TOKEN_ENV})",
    )
    group.add_argument(
        "--token-file",
        metavar="FILE",
        help="read the token from FILE (its first field of its first line)",
    )
    group.add_argument(
        "--tls",
        action="store_true",
        help="connect with TLS, verifying the daemon against the system's CAs",
    )
    group.add_argument(
        "--tls-ca",
        metavar="FILE",
        help=f"connect with TLS, verifying the daemon against the CAs in FILE (default: ${TLS_CA_ENV})",
    )
    return parent


def _output(parser: argparse.ArgumentParser, choices: tuple[str, ...], default: str) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=choices,
        default=default,
        help=f"output format (default: {default})",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add apply, delete, get, watch, explain, stats, policy and protocol to ``podium``."""
    conn = _connection_options()
    raw = argparse.RawDescriptionHelpFormatter
    kinds_help = (
        "kinds: pods (po), nodes (no), persistentvolumes (pv), persistentvolumeclaims (pvc),\n"
        "  services (svc), storageclasses (sc), replicasets (rs), replicationcontrollers (rc),\n"
        "  statefulsets (sts), priorityclasses (pc), or the Kind itself (Pod)"
    )

    p = subparsers.add_parser(
        "apply",
        parents=[conn],
        formatter_class=raw,
        help="create or replace objects from files, atomically",
        description=(
            "Create or replace every object of the files in one atomic request: all are\n"
            "stored or none. Exit 0 means the daemon stored them durably. Files are what\n"
            "`kubectl get ... -o json|yaml` prints: one object, a kind: List, or a\n"
            "multi-document YAML. A file that does not load sends nothing."
        ),
        epilog=(
            "examples:\n"
            "  podium apply -f examples/cluster.yaml\n"
            "  kubectl get nodes,pods -A -o json | podium apply -f -\n"
            "  podium apply -f nodes.yaml -f pods.yaml -o json\n\n"
            "output: one line per object, as kubectl prints it:\n"
            "  node/n1 created\n"
            "  pod/default/web-1 configured\n"
            "  pod/default/web-2 unchanged"
        ),
    )
    p.add_argument(
        "-f",
        "--file",
        action="append",
        required=True,
        metavar="FILE",
        help="a JSON or YAML file; '-' for stdin; repeatable",
    )
    _output(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_apply)

    p = subparsers.add_parser(
        "delete",
        parents=[conn],
        formatter_class=raw,
        help="delete objects by kind and name, or those of a file",
        description=(
            "Delete one object (KIND NAME) or every object of files (-f), atomically.\n"
            "A missing object fails the whole request (exit 1) and nothing is deleted.\n\n"
            + kinds_help
        ),
        epilog=(
            "examples:\n"
            "  podium delete pod web-1\n"
            "  podium delete po web-1 -n batch\n"
            "  podium delete node n3\n"
            "  podium delete -f pods.yaml"
        ),
    )
    p.add_argument("kind", nargs="?", metavar="KIND", help="the kind (pod, node, pvc, ...)")
    p.add_argument("name", nargs="?", metavar="NAME", help="the object's name")
    p.add_argument("-n", "--namespace", metavar="NS", help="namespace (default: default)")
    p.add_argument(
        "-f", "--file", action="append", metavar="FILE", help="delete the objects of FILE"
    )
    _output(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_delete)

    p = subparsers.add_parser(
        "get",
        parents=[conn],
        formatter_class=raw,
        help="list objects, or show one, as kubectl get does",
        description=(
            "List the objects of a kind, or show one by name. Namespaced kinds read the\n"
            "default namespace unless -n or -A is given.\n\n"
            "pods:  NAME STATUS NODE AGE; STATUS is Bound, Pending, Terminating, Succeeded\n"
            "       or Failed. -o wide adds PRIORITY, CPU, MEMORY (requests),\n"
            "       NOMINATED NODE and MESSAGE (why it is unschedulable).\n"
            "nodes: NAME STATUS PODS CPU MEMORY AGE (allocatable); -o wide adds ZONE, TAINTS.\n"
            "-o json|yaml print a kind: List (or the object) that `podium apply` reads back.\n\n"
            + kinds_help
        ),
        epilog=(
            "examples:\n"
            "  podium get pods\n"
            "  podium get po -A -o wide\n"
            "  podium get pods -l app=web,tier!=db -n shop\n"
            "  podium get node n1 -o yaml\n"
            "  podium get nodes -o json > nodes.json"
        ),
    )
    p.add_argument("kind", metavar="KIND", help="the kind to list (pods, nodes, pv, ...)")
    p.add_argument("name", nargs="?", metavar="NAME", help="one object's name")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", metavar="NS", help="namespace (default: default)")
    scope.add_argument(
        "-A", "--all-namespaces", action="store_true", help="every namespace (adds NAMESPACE)"
    )
    p.add_argument(
        "-l",
        "--selector",
        metavar="SELECTOR",
        help="label selector: app=web,tier!=db,env in (a,b),!legacy",
    )
    p.add_argument(
        "--chunk-size",
        type=at_least(0),
        default=DEFAULT_CHUNK_SIZE,
        metavar="N",
        help=(
            f"read a long list N objects a request (default {DEFAULT_CHUNK_SIZE}); 0 asks for "
            "it all at once, which the daemon refuses past its frame limit"
        ),
    )
    _output(p, ("table", "wide", "json", "yaml"), "table")
    p.set_defaults(func=cmd_get)

    p = subparsers.add_parser(
        "watch",
        parents=[conn],
        formatter_class=raw,
        help="stream events (Bound, Unschedulable, Deleted, ...) until Ctrl-C",
        description=(
            "Print every event after a revision (default: from now) until Ctrl-C:\n"
            "  REVISION TYPE kind/ns/name [-> node] [message]\n"
            "With -o json, one JSON object per line (NDJSON). To miss nothing, list first\n"
            "and watch from the revision the list reflects (`podium get ... -o json`\n"
            "prints it as metadata.resourceVersion). A revision older than the daemon\n"
            "keeps fails with exit 1: list again."
        ),
        epilog=(
            "examples:\n"
            "  podium watch\n"
            "  podium watch --kind pods --from-revision 1200\n"
            "  podium watch -o json | jq 'select(.type == \"Unschedulable\")'\n\n"
            "output:\n"
            "  1201 Bound pod/default/web-1 -> n2\n"
            "  1202 Unschedulable pod/default/big 0/3 nodes are available: 3 Insufficient cpu."
        ),
    )
    p.add_argument(
        "--from-revision", type=int, metavar="N", help="events after revision N (default: now)"
    )
    p.add_argument(
        "--kind", action="append", metavar="KIND", help="only this kind; repeatable (default: all)"
    )
    _output(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_watch)

    p = subparsers.add_parser(
        "explain",
        parents=[conn],
        formatter_class=raw,
        help="why is a pod pending: every node's verdict and what would make it fit",
        description=(
            "Explain a pod's placement: the node it would go to, or the scheduler's message,\n"
            "every examined node in walk order with its reasons or total score, and hints\n"
            "on what would make it fit. NAME alone means default/NAME."
        ),
        epilog=(
            "examples:\n"
            "  podium explain default/web-1\n"
            "  podium explain big-job -o json\n\n"
            "output (hints):\n"
            "  needs 200m more cpu on 3 nodes"
        ),
    )
    p.add_argument("pod", metavar="NS/NAME", help="the pod (NAME alone: default/NAME)")
    _output(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_explain)

    p = subparsers.add_parser(
        "stats",
        parents=[conn],
        formatter_class=raw,
        help="counts of objects, queues and scheduling attempts",
        description="Show the daemon's counts: objects, pending pods by queue, attempts.",
        epilog="examples:\n  podium stats\n  podium stats -o json",
    )
    _output(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_stats)

    policy = subparsers.add_parser(
        "policy",
        formatter_class=raw,
        help="manage the daemon's scheduler policy",
        description="Manage the scheduler Policy of a running daemon.",
        epilog="examples:\n  podium policy reload",
    )
    policy_sub = policy.add_subparsers(dest="policy_command", required=True, metavar="COMMAND")
    p = policy_sub.add_parser(
        "reload",
        parents=[conn],
        formatter_class=raw,
        help="read the policy file again and print what is now in force",
        description=(
            "Make the daemon read its configured policy file again. The new predicates and\n"
            "priorities apply from the next scheduling attempt; a policy that does not\n"
            "validate is refused (exit 1) and the old one stays."
        ),
        epilog="examples:\n  podium policy reload\n  podium policy reload -o json",
    )
    _output(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_policy_reload)

    proto = subparsers.add_parser(
        "protocol",
        formatter_class=raw,
        help="the wire protocol, for clients in other languages",
        description="Describe the client <-> daemon protocol.",
        epilog="examples:\n  podium protocol schema > podium-protocol.schema.json",
    )
    proto_sub = proto.add_subparsers(dest="protocol_command", required=True, metavar="COMMAND")
    p = proto_sub.add_parser(
        "schema",
        formatter_class=raw,
        help="print the JSON Schema of every protocol message",
        description=(
            "Print the JSON Schema of every message (requests, replies, events, errors),\n"
            "from which clients in other languages can be generated. No daemon is needed."
        ),
        epilog="examples:\n  podium protocol schema | jq '.\"$defs\" | keys'",
    )
    p.set_defaults(func=cmd_protocol_schema)
