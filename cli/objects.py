"""``podium apply``, ``delete``, ``get`` and ``watch``: the objects of a running daemon.

Kubernetes counterpart: k8s.io/kubectl/pkg/cmd (apply, delete, get, and the table printers of
pkg/printers/internalversion/printers.go@v1.14) — the same names, kind aliases, table columns,
AGE format and "No resources found" wording, so an operator's habits carry over.

Owns: nothing; each command opens one connection (:func:`~podium.cli.common.remote.run_client`),
sends its requests and prints.
Mailbox: none (each command is a sync function that runs its own ``trio.run``).
Emits: Put, Delete, Get and Watch requests through the client; text or JSON on stdout. Exit
codes: 0 ok, 1 rejected or failed (the daemon's error, an unreachable daemon, a file that does
not load), 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, assert_never

from podium.cli.common.arguments import add_file_options, at_least
from podium.cli.common.output import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Progress,
    add_output_option,
    dump_json,
    err,
    human_duration,
    message_doc,
    object_doc,
    out,
    print_remote_error,
    skipped_doc,
    skipped_line,
    table,
)
from podium.cli.common.remote import access, add_remote_command, run_client, server_of

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import AsyncIterator, Mapping, Sequence

    from podium.protocol.client import Client, Informer, Notification
    from podium.protocol.loader import Loaded
    from podium.protocol.objects import KubeObject, LabelSelector, Node, Pod
    from podium.protocol.wire import DeleteReply, Event, ObjectStatus, PutReply

# The client, the objects, msgspec and yaml are imported inside the commands: building the
# parser must not pay for them (issue 26 point 5; tests/unit/cli/test_startup.py).

__all__ = [
    "KIND_ALIASES",
    "NAMESPACE_ALIASES",
    "cmd_apply",
    "cmd_delete",
    "cmd_get",
    "cmd_watch",
    "event_line",
    "node_status",
    "pod_status",
    "register",
    "resolve_kind",
    "resolve_ref",
    "utc_now",
]

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
        "PodGroup": ("podgroups", "podgroup", "pg"),
    }.items()
    for alias in (*aliases, kind.lower())
}
"""kubectl's resource names, singular names and short names (and the Kind in any case)."""

DEFAULT_CHUNK_SIZE = 2000
""":data:`podium.protocol.client.DEFAULT_CHUNK_SIZE`, written out for ``--chunk-size``'s help
(the parser is built without the client); a test keeps the two equal."""

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


def resolve_ref(
    text: str, name: str | None, namespace: str | None
) -> tuple[str, str | None, str | None]:
    """``KIND``, ``KIND/NAME`` or ``KIND/NS/NAME`` (as ``apply`` prints an object), with the NAME
    and ``-n`` given apart: ``(Kind, name, namespace)``.

    Raises:
        ValueError: an unknown kind, more than three parts or an empty one, a NAME given twice,
            a namespace ``-n`` contradicts, or one for a cluster-scoped kind.
    """
    from podium.protocol.objects import NAMESPACED_KINDS

    parts = text.split("/")
    if len(parts) > 3 or not all(parts):
        raise ValueError(f"{text!r} is not KIND, KIND/NAME or KIND/NAMESPACE/NAME")
    kind = resolve_kind(parts[0])
    if len(parts) == 1:
        return kind, name, namespace
    if name:
        raise ValueError(f"{text!r} names the object already: give no NAME after it")
    if len(parts) == 2:
        return kind, parts[1], namespace
    if kind not in NAMESPACED_KINDS:
        raise ValueError(f"{kind} is cluster-scoped: give {kind.lower()}/NAME, without a namespace")
    if namespace is not None and namespace != parts[1]:
        raise ValueError(f"{text!r} is in namespace {parts[1]}, not {namespace} (-n)")
    return kind, parts[2], parts[1]


def utc_now() -> datetime:
    """The clock AGE columns are measured against (tests patch it)."""
    return datetime.now(UTC)


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


def _load(paths: Sequence[str], *, strict: bool = False) -> Loaded | None:
    """Every object of the files (``-`` is stdin), or None after printing every load error.

    The kinds Podium does not schedule are skipped with one summary line on stderr (refused
    when ``strict``). Files that hold only such kinds load as nothing to send, as ``simulate``
    reads them (issue 26 point 2: "apply every rendered file" loops); files with no object at
    all are an error.
    """
    from podium.protocol.errors import LoadErrors
    from podium.protocol.loader import load_all

    try:
        loaded = load_all(paths, stdin=sys.stdin.buffer, strict=strict)
    except LoadErrors as exc:
        for e in exc.errors:
            err(f"error: {e}")
        err("error: nothing was sent")
        return None
    for w in loaded.warnings:
        err(f"warning: {w}")
    if loaded.skipped:
        err(skipped_line(loaded.skipped))
    if not loaded.objects and not loaded.skipped:
        err(f"error: no objects found in {', '.join(paths)}")
        return None
    return loaded


def _nothing_sent(output: str, skipped: Counter[str]) -> int:
    """Files that held only kinds Podium does not schedule: nothing to send, and that is no
    failure (the skipped line is already on stderr); ``-o json`` prints no object and what
    was skipped, without a revision (no daemon was asked)."""
    if output == "json":
        dump_json({"objects": [], "skipped": skipped_doc(skipped)})
    return EXIT_OK


# --------------------------------------------------------------------------- apply


_ACTION_WORDS = {
    "created": "created",
    "replaced": "configured",
    "unchanged": "unchanged",
    "deleted": "deleted",
}


def _status_line(status: ObjectStatus) -> str:
    return f"{_ref(status.kind, status.namespace, status.name)} {_ACTION_WORDS[status.action]}"


def _print_statuses(
    reply: PutReply | DeleteReply, output: str, skipped: Counter[str] | None = None
) -> int:
    """A put's or delete's reply: as JSON (with what the files skipped, by kind), or a line
    per object as kubectl prints it."""
    if output == "json":
        doc = message_doc(reply)
        if skipped is not None:
            doc["skipped"] = skipped_doc(skipped)
        dump_json(doc)
    else:
        for status in reply.objects:
            out(_status_line(status))
    return EXIT_OK


def cmd_apply(args: argparse.Namespace) -> int:
    """``podium apply -f FILE...``: put every object of the files in one atomic request."""
    loaded = _load(args.file, strict=args.strict)
    if loaded is None:
        return EXIT_FAILED
    if not loaded.objects:
        return _nothing_sent(args.output, loaded.skipped)

    async def body(client: Client) -> int:
        return _print_statuses(await client.put(loaded.objects), args.output, loaded.skipped)

    return run_client(args, body)


# --------------------------------------------------------------------------- delete


def cmd_delete(args: argparse.Namespace) -> int:
    """``podium delete KIND NAME`` or ``-f FILE``: delete the objects in one atomic request."""
    from podium.protocol.objects import scoped_namespace
    from podium.protocol.wire import ObjectRef

    if args.file:
        if args.kind or args.name:
            err("error: give either KIND NAME or -f FILE, not both")
            return EXIT_USAGE
        loaded = _load(args.file)
        if loaded is None:
            return EXIT_FAILED
        if not loaded.objects:
            return _nothing_sent(args.output, loaded.skipped)
        refs = [
            ObjectRef(kind=type(o).__name__, name=o.metadata.name, namespace=o.metadata.namespace)
            for o in loaded.objects
        ]
    else:
        name: str | None = None
        if args.kind:
            try:
                kind, name, given = resolve_ref(args.kind, args.name, args.namespace)
            except ValueError as exc:
                err(f"error: {exc}")
                return EXIT_USAGE
        if not name:
            err(
                "error: give KIND NAME (e.g. `podium delete pod web-1`), KIND/NS/NAME "
                "(`podium delete podgroup/ml/train`) or -f FILE"
            )
            return EXIT_USAGE
        refs = [ObjectRef(kind=kind, name=name, namespace=scoped_namespace(kind, given))]

    async def body(client: Client) -> int:
        return _print_statuses(await client.delete(refs), args.output)

    return run_client(args, body)


# --------------------------------------------------------------------------- get


def pod_status(pod: Pod) -> str:
    """Terminating, a terminal phase, Bound (a node is set), SchedulingGated (its PodScheduled
    condition says so, as kubectl's printPod reads it) or Pending."""
    from podium.protocol.validation import SCHEDULING_GATED

    if pod.metadata.deletion_timestamp:
        return "Terminating"
    if pod.status.phase in ("Succeeded", "Failed"):
        return pod.status.phase
    if pod.spec.node_name:
        return "Bound"
    gated = any(
        c.type == "PodScheduled" and c.reason == SCHEDULING_GATED for c in pod.status.conditions
    )
    return SCHEDULING_GATED if gated else "Pending"


def _unschedulable_message(pod: Pod) -> str:
    for c in pod.status.conditions:
        if c.type == "PodScheduled" and c.status == "False":
            return c.message or c.reason
    return ""


def node_status(node: Node) -> str:
    """Ready/NotReady from the Ready condition, Unknown without one, plus SchedulingDisabled.

    As kubectl prints it (pkg/printers/internalversion/printers.go ``printNode``: the last
    condition of a type wins, no Ready condition is "Unknown"). The scheduler's
    CheckNodeCondition still lets such a node pass: "Unknown" is only what is printed.
    """
    ready = {c.type: c for c in node.status.conditions}.get("Ready")
    if ready is None:
        status = "Unknown"
    else:
        status = "Ready" if ready.status == "True" else "NotReady"
    return status + (",SchedulingDisabled" if node.spec.unschedulable else "")


def _taints_text(node: Node) -> str:
    taints = [
        f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
        for t in node.spec.taints
    ]
    return ",".join(taints) or "<none>"


def _row(
    obj: KubeObject, *, wide: bool, members: Mapping[str, int] | None = None
) -> tuple[list[str], list[str]]:
    """(header, row) of one object, without NAMESPACE; AGE last (then the wide columns).

    ``members``: pods by the ``namespace/name`` of the group they name, for a PodGroup's
    MEMBERS column (None leaves the column out).
    """
    from podium.protocol.objects import (
        Node,
        PersistentVolume,
        PersistentVolumeClaim,
        Pod,
        PodDisruptionBudget,
        PodGroup,
        PriorityClass,
        ReplicaSet,
        ReplicationController,
        Service,
        StatefulSet,
        StorageClass,
    )

    age = _age(obj.metadata.creation_timestamp)
    name = obj.metadata.name
    match obj:
        case Pod():
            header = ["NAME", "STATUS", "NODE", "AGE"]
            row = [name, pod_status(obj), obj.spec.node_name or "<none>", age]
            if wide:
                # Requests as the scheduler counts them (init containers, overhead): the
                # actors' PodInfo, imported only for -o wide.
                from podium.actors.framework.nodeinfo import PodInfo

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
            # scheduler then derives it from the matching pods, see actors/framework/preemption.py).
            spec = obj.spec
            header = ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
            row = [
                name,
                "N/A" if spec.min_available is None else str(spec.min_available),
                "N/A" if spec.max_unavailable is None else str(spec.max_unavailable),
                "<none>" if obj.status is None else str(obj.status.disruptions_allowed),
                age,
            ]
        case PodGroup():
            from podium.protocol.gangs import min_count

            size = min_count(obj)
            header = ["NAME", "POLICY", "MIN-COUNT"]
            row = [
                name,
                "basic" if size is None else "gang",
                "<none>" if size is None else str(size),
            ]
            if members is not None:
                key = f"{obj.metadata.namespace}/{name}"
                header.append("MEMBERS")
                row.append(str(members.get(key, 0)))
            header.append("AGE")
            row.append(age)
            if wide:
                header.append("API-VERSION")
                row.append(obj.api_version)
        case _:
            assert_never(obj)
    return header, row


def _print_table(
    items: Sequence[KubeObject],
    *,
    wide: bool,
    all_ns: bool,
    members: Mapping[str, int] | None = None,
) -> None:
    rows: list[list[str]] = []
    header: list[str] = []
    for obj in items:
        header, row = _row(obj, wide=wide, members=members)
        rows.append([obj.metadata.namespace, *row] if all_ns else row)
    if all_ns:
        header = ["NAMESPACE", *header]
    table([header, *rows])


NAMESPACE_ALIASES = frozenset({"namespaces", "namespace", "ns"})
"""kubectl's names for namespaces, which Podium reads off the namespaced objects."""


def _namespace_doc(name: str, created: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if created:
        metadata["creationTimestamp"] = created
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": metadata,
        "status": {"phase": "Active"},
    }


def _get_namespaces(args: argparse.Namespace) -> int:
    """``podium get ns [NAME]``: the namespaces the namespaced objects live in, and ``default``.

    Podium stores no Namespace objects: a namespace exists while an object names it (and
    ``default`` always, as in Kubernetes). STATUS is Active; AGE is that of its oldest object.
    """
    if args.selector:
        err("error: namespaces carry no labels in Podium: -l cannot select them")
        return EXIT_USAGE
    import yaml

    from podium.protocol.objects import DEFAULT_NAMESPACE, NAMESPACED_KINDS

    async def body(client: Client) -> int:
        stamps: dict[str, set[str]] = {DEFAULT_NAMESPACE: set()}
        revision = 0
        for kind in sorted(NAMESPACED_KINDS):
            reply = await client.get(kind, namespace=None, chunk_size=args.chunk_size)
            revision = max(revision, reply.revision)
            for obj in reply.items:
                created = obj.metadata.creation_timestamp
                stamps.setdefault(obj.metadata.namespace, set()).update(
                    [created] if created else []
                )
        # The store writes every timestamp in one RFC 3339 form: the least string is the oldest.
        oldest = {ns: min(times, default=None) for ns, times in stamps.items()}
        names = sorted(oldest) if not args.name else [args.name]
        if args.name and args.name not in oldest:
            err(f'error: namespace "{args.name}" not found')
            return EXIT_FAILED
        if args.output in ("json", "yaml"):
            docs = [_namespace_doc(ns, oldest[ns]) for ns in names]
            doc: dict[str, Any] = (
                docs[0]
                if args.name
                else {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": docs,
                    "metadata": {"resourceVersion": str(revision)},
                }
            )
            if args.output == "json":
                dump_json(doc)
            else:
                dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
                sys.stdout.write(yaml.dump(doc, Dumper=dumper, sort_keys=False))
            return EXIT_OK
        table([["NAME", "STATUS", "AGE"], *([ns, "Active", _age(oldest[ns])] for ns in names)])
        return EXIT_OK

    return run_client(args, body)


async def _group_members(
    client: Client, namespace: str | None, args: argparse.Namespace
) -> Counter[str]:
    """How many pods name each pod group (any form, protocol/gangs.py), from one list of the
    pods of ``namespace`` (None: every namespace), for ``get podgroups``' MEMBERS."""
    from collections import Counter

    from podium.protocol.gangs import pod_group_key
    from podium.protocol.objects import Pod

    reply = await client.get("Pod", namespace=namespace, chunk_size=args.chunk_size)
    return Counter(
        key
        for pod in reply.items
        if isinstance(pod, Pod) and (key := pod_group_key(pod)) is not None
    )


def cmd_get(args: argparse.Namespace) -> int:
    """``podium get KIND [NAME]``: a table, or the objects as JSON or YAML."""
    if args.kind.lower() in NAMESPACE_ALIASES:
        return _get_namespaces(args)
    try:
        kind, args.name, args.namespace = resolve_ref(args.kind, args.name, args.namespace)
    except ValueError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE
    from podium.protocol.objects import NAMESPACED_KINDS, namespace_or_default

    namespaced = kind in NAMESPACED_KINDS
    if args.all_namespaces and args.name:
        err("error: a resource cannot be retrieved by name across all namespaces")
        return EXIT_USAGE
    all_ns = namespaced and args.all_namespaces
    namespace: str | None = (
        namespace_or_default(args.namespace) if namespaced and not all_ns else None
    )
    if args.watch:
        return _watch_objects(args, kind, namespace, all_ns=all_ns)

    async def body(client: Client) -> int:
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
                doc: dict[str, Any] = object_doc(items[0])
            else:
                doc = {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": [object_doc(o) for o in items],
                    "metadata": {"resourceVersion": str(reply.revision)},
                }
            if args.output == "json":
                dump_json(doc)
            else:
                import yaml

                # PyYAML's safe dumper, the C one when available (a large list dumps ~10x
                # faster).
                dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
                sys.stdout.write(yaml.dump(doc, Dumper=dumper, sort_keys=False))
            return EXIT_OK
        if not items:
            where = f" in {namespace} namespace" if namespace is not None else ""
            err(f"No resources found{where}." if where else "No resources found")
            return EXIT_OK
        members = await _group_members(client, namespace, args) if kind == "PodGroup" else None
        _print_table(items, wide=args.output == "wide", all_ns=all_ns, members=members)
        return EXIT_OK

    return run_client(args, body)


# --------------------------------------------------------------------------- watch


def event_line(event: Event) -> str:
    """``REVISION TYPE kind/ns/name [-> node] [message]``."""
    parts = [str(event.revision), event.type, _ref(event.kind, event.namespace, event.name)]
    if event.node:
        parts += ["->", event.node]
    if event.message:
        parts.append(event.message)
    return " ".join(parts)


def _informer(
    args: argparse.Namespace, client: Client, kinds: Sequence[str], **options: Any
) -> Informer:
    """An informer on the command's daemon(s), with its access flags: its first connection
    is the command's own ``client``; each retry is told on stderr."""
    from contextlib import asynccontextmanager

    from podium.protocol.client import Informer, connect

    server = server_of(args)
    token, tls = access(args, server)
    first = [client]

    @asynccontextmanager
    async def connector() -> AsyncIterator[Client]:
        if first:
            yield first.pop()
            return
        async with connect(server, token=token, tls=tls) as fresh:
            yield fresh

    def retrying(error: Exception, delay: float) -> None:
        err(f"warning: {error}; trying again in {delay:.1f} s")

    return Informer(server, kinds, connector=connector, watch_error_handler=retrying, **options)


def cmd_watch(args: argparse.Namespace) -> int:
    """``podium watch``: one line (or JSON object) per event until Ctrl-C, resuming by itself
    (an :class:`~podium.protocol.client.Informer`): after a lost connection, a restart or a
    leader change from the last revision printed; after ``gone``, the difference a relist
    finds, as Added/Modified/Deleted at the list's revision."""
    try:
        # Each kind once, in the order given (an informer lists each kind it watches).
        kinds = list(dict.fromkeys(resolve_kind(k) for k in (*args.kinds, *(args.kind or ()))))
    except ValueError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE
    as_json = args.output == "json"
    import msgspec

    from podium.protocol.client import RemoteError

    async def body(client: Client) -> int:
        informer = _informer(args, client, kinds, from_revision=args.from_revision)

        def show(note: Notification) -> None:
            if not informer.has_synced:
                return  # the first list: the state before the watch begins
            event = note.as_event()
            out(msgspec.json.encode(message_doc(event)).decode() if as_json else event_line(event))
            sys.stdout.flush()

        informer.add_notification_handler(show)
        try:
            await informer.run()
        except RemoteError as exc:
            print_remote_error(exc)
        return EXIT_FAILED

    return run_client(args, body)


def _watch_objects(
    args: argparse.Namespace, kind: str, namespace: str | None, *, all_ns: bool
) -> int:
    """``podium get KIND [NAME] -w``: the list, then each object again as it changes (its row,
    or its JSON/YAML document), until Ctrl-C, resuming by itself as ``podium watch`` does."""
    import msgspec
    import yaml

    from podium.protocol.client import RemoteError

    # PyYAML's safe dumper, the C one when available.
    dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    widths: list[int] = []

    def rows(objs: Sequence[KubeObject]) -> list[list[str]]:
        out_rows: list[list[str]] = []
        for obj in objs:
            header, row = _row(obj, wide=args.output == "wide")
            if all_ns:
                header, row = ["NAMESPACE", *header], [obj.metadata.namespace, *row]
            if not out_rows:
                out_rows.append(header)
            out_rows.append(row)
        return out_rows

    def show(objs: Sequence[KubeObject]) -> None:
        nonlocal widths
        objs = [o for o in objs if not args.name or o.metadata.name == args.name]
        if args.output in ("table", "wide"):
            table_rows = rows(objs)
            if not widths:  # the first rows printed: with the header
                if not table_rows:
                    return
                widths = [max(len(r[i]) for r in table_rows) for i in range(len(table_rows[0]))]
            else:
                table_rows = table_rows[1:]
            for row in table_rows:
                widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
                out("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        for obj in objs if args.output in ("json", "yaml") else ():
            if args.output == "json":
                out(msgspec.json.encode(object_doc(obj)).decode())
            else:
                sys.stdout.write(
                    "---\n" + yaml.dump(object_doc(obj), Dumper=dumper, sort_keys=False)
                )
        sys.stdout.flush()

    async def body(client: Client) -> int:
        informer = _informer(
            args, client, [kind], namespace=namespace, label_selector=args.selector or ""
        )
        informer.add_notification_handler(
            lambda note: show([note.object]) if informer.has_synced else None
        )

        def listed() -> None:
            show(informer.cache.objects(kind))
            if not widths and args.output in ("table", "wide"):
                where = f" in {namespace} namespace" if namespace is not None else ""
                err(f"No resources found{where}.")

        informer.add_synced_handler(listed)
        try:
            await informer.run()
        except RemoteError as exc:
            print_remote_error(exc)
        return EXIT_FAILED

    return run_client(args, body)


# --------------------------------------------------------------------------- parser


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add apply, delete, get and watch to ``podium``."""
    kinds_help = (
        "kinds: pods (po), nodes (no), persistentvolumes (pv), persistentvolumeclaims (pvc),\n"
        "  services (svc), storageclasses (sc), replicasets (rs), replicationcontrollers (rc),\n"
        "  statefulsets (sts), priorityclasses (pc), poddisruptionbudgets (pdb),\n"
        "  podgroups (pg), or the Kind itself (Pod)"
    )

    p = add_remote_command(
        subparsers,
        "apply",
        summary="create or replace objects from files, atomically",
        description=(
            "Create or replace every object of the files in one atomic request: all are\n"
            "stored or none. Exit 0 means the daemon stored them durably. Files are what\n"
            "`kubectl get ... -o json|yaml` prints: one object, a kind: List, or a\n"
            "multi-document YAML. A file that does not load sends nothing. Objects of\n"
            "kinds the scheduler does not use (Deployment, ConfigMap, Event, ...) are\n"
            "skipped, with one summary line on stderr (--strict refuses them)."
        ),
        epilog=(
            "examples:\n"
            "  podium apply -f examples/cluster.yaml\n"
            "  kubectl get nodes,pods -A -o json | podium apply -f -\n"
            "  podium apply -f nodes.yaml -f pods.yaml -o json\n\n"
            "output: one line per object, as kubectl prints it:\n"
            "  node/n1 created\n"
            "  pod/default/web-1 configured\n"
            "  pod/default/web-2 unchanged\n"
            "and on stderr, when the files hold other kinds:\n"
            "  skipped 3 objects of 2 kinds Podium does not schedule: ConfigMap 2, Deployment 1"
        ),
    )
    add_file_options(p, help_text="a JSON or YAML file; '-' for stdin; repeatable")
    add_output_option(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_apply)

    p = add_remote_command(
        subparsers,
        "delete",
        summary="delete objects by kind and name, or those of a file",
        description=(
            "Delete one object (KIND NAME, KIND/NAME, or KIND/NS/NAME as apply prints it)\n"
            "or every object of files (-f), atomically. A missing object fails the whole\n"
            "request (exit 1) and nothing is deleted.\n\n" + kinds_help
        ),
        epilog=(
            "examples:\n"
            "  podium delete pod web-1\n"
            "  podium delete po web-1 -n batch\n"
            "  podium delete node n3\n"
            "  podium delete podgroup/ml/train\n"
            "  podium delete -f pods.yaml"
        ),
    )
    p.add_argument(
        "kind",
        nargs="?",
        metavar="KIND",
        help="the kind (pod, node, pvc, ...), or KIND/NAME or KIND/NS/NAME",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="the object's name")
    p.add_argument("-n", "--namespace", metavar="NS", help="namespace (default: default)")
    p.add_argument(
        "-f", "--file", action="append", metavar="FILE", help="delete the objects of FILE"
    )
    add_output_option(p, ("text", "json"), "text")
    p.set_defaults(func=cmd_delete)

    p = add_remote_command(
        subparsers,
        "get",
        summary="list objects, or show one, as kubectl get does",
        description=(
            "List the objects of a kind, or show one by name. Namespaced kinds read the\n"
            "default namespace unless -n or -A is given.\n\n"
            "pods:  NAME STATUS NODE AGE; STATUS is Bound, Pending, SchedulingGated, "
            "Terminating, Succeeded\n"
            "       or Failed. -o wide adds PRIORITY, CPU, MEMORY (requests),\n"
            "       NOMINATED NODE and MESSAGE (why it is unschedulable).\n"
            "nodes: NAME STATUS PODS CPU MEMORY AGE (allocatable); -o wide adds ZONE, TAINTS.\n"
            "podgroups (pg): NAME POLICY (gang or basic) MIN-COUNT (minCount or minMember)\n"
            "       MEMBERS AGE; MEMBERS counts the pods naming the group in any form (one\n"
            "       more list, of the pods; -w leaves it out); -o wide adds API-VERSION.\n"
            "namespaces (ns): NAME STATUS AGE, the namespaces the objects use and default\n"
            "       (Podium stores no Namespace objects; AGE is the oldest object's).\n"
            "-o json|yaml print a kind: List (or the object) that `podium apply` reads back.\n\n"
            + kinds_help
        ),
        epilog=(
            "examples:\n"
            "  podium get pods\n"
            "  podium get po -A -o wide\n"
            "  podium get pods -l app=web,tier!=db -n shop\n"
            "  podium get ns\n"
            "  podium get pg -n ml\n"
            "  podium get podgroup/ml/train -o yaml\n"
            "  podium get node n1 -o yaml\n"
            "  podium get nodes -o json > nodes.json"
        ),
    )
    p.add_argument(
        "kind",
        metavar="KIND",
        help="the kind to list (pods, nodes, pv, ...), or KIND/NAME or KIND/NS/NAME",
    )
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
    p.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help=(
            "after the list, print each object again as it changes, until Ctrl-C (resumes by "
            "itself after a lost connection, a restart or a leader change)"
        ),
    )
    add_output_option(p, ("table", "wide", "json", "yaml"), "table")
    p.set_defaults(func=cmd_get)

    p = add_remote_command(
        subparsers,
        "watch",
        summary="stream events (Bound, Unschedulable, Deleted, ...) until Ctrl-C",
        description=(
            "Print every event after a revision (default: from now) until Ctrl-C:\n"
            "  REVISION TYPE kind/ns/name [-> node] [message]\n"
            "With -o json, one JSON object per line (NDJSON). To miss nothing, list first\n"
            "and watch from the revision the list reflects (`podium get ... -o json`\n"
            "prints it as metadata.resourceVersion). The watch resumes by itself after a\n"
            "lost connection, a daemon restart or a leader change (give every replica in\n"
            "--server), from the last revision printed; when the daemon no longer keeps\n"
            "that revision, it lists again and prints what differs as Added, Modified\n"
            'or Deleted at the list\'s revision (docs/protocol.md, "Resuming").'
        ),
        epilog=(
            "examples:\n"
            "  podium watch\n"
            "  podium watch podgroups pods\n"
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
        "kinds", nargs="*", metavar="KIND", help="only these kinds, as --kind (default: all)"
    )
    p.add_argument(
        "--kind", action="append", metavar="KIND", help="only this kind; repeatable (default: all)"
    )
    add_output_option(p, ("text", "json"), "text")
    # Ctrl-C is how a watch ends: exit 130 (as for every command) but no "interrupted" line.
    p.set_defaults(func=cmd_watch, quiet_interrupt=True)
