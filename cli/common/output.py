"""What every ``podium`` command prints with: lines on stdout and stderr, kubectl's tables,
``-o json`` documents, the daemon's errors, the progress bar, and the exit codes.

Kubernetes counterpart: k8s.io/kubectl/pkg/cmd/util (``CheckErr``'s ``error: ...`` lines and
exit codes) and k8s.io/cli-runtime/pkg/printers (the tabwriter tables, the JSON printer).

Human output goes to stdout, errors and warnings to stderr (``error: ...``); ``-o json`` prints
machine-readable JSON on stdout. The progress bar goes to stderr, only on a terminal (and, but
for ``podium bench``'s, never with ``-o json``). Exit codes: :data:`EXIT_OK` 0, :data:`EXIT_FAILED` 1 (rejected input, a
failed command, an unreachable daemon), :data:`EXIT_USAGE` 2, :data:`EXIT_DAMAGED` 3 (``podium
serve`` refused a damaged, emptied or deleted database), :data:`EXIT_DEPOSED` 4 (``podium serve
--leader-elect``: the replica lost the lead; restart it).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from podium.cli.common.interrupt import raise_if_interrupted

if TYPE_CHECKING:
    from collections import Counter

    import msgspec

    from podium.protocol.client import RemoteError
    from podium.protocol.objects import KubeObject
    from podium.protocol.wire import GroupPlacement, Hint, NodeVerdict, ObjectError

__all__ = [
    "EXIT_DAMAGED",
    "EXIT_DEPOSED",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Progress",
    "add_output_option",
    "dump_json",
    "err",
    "group_verdict",
    "hint_lines",
    "human_duration",
    "message_doc",
    "object_doc",
    "out",
    "print_group",
    "print_remote_error",
    "skipped_doc",
    "skipped_line",
    "table",
    "verdict_table",
]

# Nothing here imports msgspec, trio or the objects at import time: every command's parser is
# built from this module, and ``podium --version`` should not pay for them (issue 26 point 5).

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DAMAGED, EXIT_DEPOSED = 0, 1, 2, 3, 4


def out(text: str = "") -> None:
    """One line on stdout; none after a Ctrl-C (which it raises, as ``KeyboardInterrupt``)."""
    raise_if_interrupted()
    sys.stdout.write(text + "\n")


def err(text: str) -> None:
    """One line on stderr; none after a Ctrl-C (which it raises, as ``KeyboardInterrupt``)."""
    raise_if_interrupted()
    sys.stderr.write(text + "\n")


def table(rows: Sequence[Sequence[str]], stream: TextIO | None = None) -> None:
    """Columns separated by three spaces, as kubectl's tabwriter prints them (on stdout unless
    ``stream`` is given)."""
    write = (stream or sys.stdout).write
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        write("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def verdict_table(nodes: Mapping[str, NodeVerdict], stream: TextIO | None = None) -> None:
    """Every examined node's verdict, in walk order: NODE, FITS, REASONS, TOTAL (``explain``,
    ``simulate --explain``); "No nodes were examined." when there are none."""
    write = (stream or sys.stdout).write
    if not nodes:
        write("No nodes were examined.\n")
        return
    rows = [["NODE", "FITS", "REASONS", "TOTAL"]]
    for name, verdict in nodes.items():
        rows.append(
            [
                name,
                "yes" if verdict.fits else "no",
                ", ".join(verdict.reasons) or "-",
                "-" if verdict.total is None else str(verdict.total),
            ]
        )
    table(rows, stream)


def hint_lines(hints: Sequence[Hint]) -> list[str]:
    """What would make a pod fit, one line a hint: ``needs 200m more cpu on 3 nodes``, or
    ``no node can ever hold it: ...``."""
    lines = []
    for h in hints:
        if h.is_beyond_every_node:
            lines.append(
                f"no node can ever hold it: it asks {h.missing} more {h.resource} than the "
                "largest node's allocatable"
            )
            continue
        plural = "node" if h.nodes == 1 else "nodes"
        lines.append(f"needs {h.missing} more {h.resource} on {h.nodes} {plural}")
    return lines


def group_verdict(group: GroupPlacement) -> str:
    """Whether a pod group would be placed, in one line: ``no: 2 of 4 members fit, 4
    needed``, ``yes: ...``, the quorum it waits for, or (``basic``) how many fit."""
    if group.waiting:
        return f"no: {group.message}"
    pending = sum(1 for m in group.members if not m.bound)
    if not pending and group.placed:
        return f"yes: every member is bound ({group.bound})"
    counts = f"{group.fit} of {pending} members fit"
    if group.min_count is None:
        return f"{counts} (a basic group: each is placed as an ordinary pod)"
    counts += f", {group.needed} needed"
    if group.placed:
        return f"yes: {counts}"
    if group.preempted:
        pods = "pod" if len(group.preempted) == 1 else "pods"
        return f"no: {counts}; preemption would evict {len(group.preempted)} {pods}, then it fits"
    return f"no: {counts}"


def print_group(
    group: GroupPlacement, stream: TextIO | None = None, *, members: bool = True
) -> None:
    """A pod group's explanation (``explain podgroup/NS/NAME``, ``simulate --explain``): the
    group, its policy, whether it would be placed and why not, the pods its preemption would
    evict; with ``members``, each member's verdict; then, per member that blocks it, every
    examined node's verdict (with ``members``) and its hints."""
    write = (stream or sys.stdout).write
    if group.policy is None:
        policy = "<none>: the group does not exist"
    elif group.min_count is None:
        policy = "basic"
    else:
        policy = f"gang, minCount {group.min_count} ({group.bound} bound)"
    write(f"PodGroup:  {group.namespace}/{group.name}\n")
    write(f"Policy:    {policy}\n")
    write(f"Placed:    {group_verdict(group)}\n")
    if group.message and not group.waiting:
        write(f"Message:   {group.message}\n")
    if group.blocking:
        write(f"Blocked:   {', '.join(group.blocking)}\n")
    if group.preempted:
        write(f"Preempts:  {', '.join(group.preempted)}\n")
    if members and group.members:
        write("\n")
        rows = [["MEMBER", "NODE", "VERDICT"]]
        for m in group.members:
            verdict = "bound" if m.bound else ("fits" if m.node else m.message or "")
            if m.preempted:
                verdict += f" (evicting {', '.join(m.preempted)})"
            rows.append([m.name, m.node or "<none>", verdict])
        table(rows, stream)
    by_key = {f"{m.namespace}/{m.name}": m for m in group.members}
    for key in group.blocking:
        found = group.hints.get(key, [])
        member = by_key.get(key)
        if not members and not found:
            continue
        write(f"\n{key}:\n")
        if members and member is not None:
            verdict_table(member.nodes, stream)
        if found:
            write("Hints:\n")
            for line in hint_lines(found):
                write(f"  {line}\n")


def dump_json(doc: Any) -> None:
    """``doc`` as indented JSON on stdout (``-o json``)."""
    out(json.dumps(doc, indent=2))


def add_output_option(
    parser: argparse.ArgumentParser, choices: tuple[str, ...], default: str
) -> None:
    """The ``-o/--output`` flag with ``choices``."""
    parser.add_argument(
        "-o",
        "--output",
        choices=choices,
        default=default,
        help=f"output format (default: {default})",
    )


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


def object_doc(obj: KubeObject) -> dict[str, Any]:
    """The v1 JSON form of an object, with ``apiVersion`` and ``kind`` first (as kubectl)."""
    import msgspec

    from podium.protocol.objects import enc_hook

    doc: dict[str, Any] = msgspec.to_builtins(obj, enc_hook=enc_hook)
    kind = doc.pop("kind")
    doc.pop("apiVersion", None)
    return {"apiVersion": obj.api_version, "kind": kind, **doc}


def message_doc(msg: msgspec.Struct) -> dict[str, Any]:
    """A reply or event as JSON, without the wire's ``msg`` and ``id``."""
    import msgspec

    from podium.protocol.objects import enc_hook
    from podium.protocol.wire import Event

    doc: dict[str, Any] = msgspec.to_builtins(msg, enc_hook=enc_hook)
    doc.pop("msg", None)
    doc.pop("id", None)
    if isinstance(msg, Event) and msg.object is not None:
        doc["object"] = object_doc(msg.object)
    return doc


def skipped_doc(skipped: Counter[str]) -> dict[str, int]:
    """``-o json``'s ``"skipped"``: objects per kind Podium does not schedule, the most
    numerous kind first, then by name."""
    return dict(sorted(skipped.items(), key=lambda entry: (-entry[1], entry[0])))


def skipped_line(skipped: Counter[str]) -> str:
    """The one stderr line that says what a load skipped (``skipped 3 objects of 2 kinds
    Podium does not schedule: ConfigMap 2, Secret 1``)."""
    total, kinds = skipped.total(), len(skipped)
    counts = ", ".join(f"{kind} {n}" for kind, n in skipped_doc(skipped).items())
    return (
        f"skipped {total} object{'s' * (total != 1)} of {kinds} kind{'s' * (kinds != 1)} "
        f"Podium does not schedule: {counts}"
    )


def print_remote_error(exc: RemoteError) -> None:
    """The daemon's error on stderr: its message (and path), or one line per rejected object."""
    reply = exc.reply
    if not reply.errors:
        err(f"error: {_located(reply.message, reply.path)}")
        return
    if len(reply.errors) == 1:
        # The reply's message is this object's message: say it once (with the object and
        # path when the error is in a field), not as a summary and again as a list.
        (only,) = reply.errors
        if only.path is None:
            err(f"error: {reply.message}")
        else:
            err(f"error: {_object_error_text(only)}; nothing was written")
        return
    # The daemon's summary ends with "; first: <the first object's message>", listed below.
    summary, _, _ = reply.message.partition("; first: ")
    err(f"error: {summary}")
    for e in reply.errors:
        err(f"error: {_object_error_text(e)}")


# Request fields a command fills from what the person typed: an error there names the flag.
_REQUEST_FIELD_SOURCES = {
    "$.token": "--token, --token-file or $PODIUM_TOKEN",
    "$.label_selector": "-l/--selector",
    "$.kind": "KIND",
    "$.kinds": "--kind",
    "$.from_revision": "--from-revision",
}
_REQUEST_FIELD = re.compile(r"\$\.[a-z_]+")


def _located(message: str, path: str | None) -> str:
    """The message with where the error is, in the person's words: the flag behind a request
    field, nothing for a field the client fills by itself (``$.id``, ``$.continue``, ...),
    else the path (a field of an object the person wrote, e.g. ``$.pod.spec.priority``)."""
    if not path:
        return message
    if path in _REQUEST_FIELD_SOURCES or _REQUEST_FIELD.fullmatch(path):
        # A decode error names the path itself ("Expected `int` >= 0 at $.from_revision").
        message = message.replace(f" at {path}", "")
        source = _REQUEST_FIELD_SOURCES.get(path)
        return f"{message} ({source})" if source else message
    return message if path in message else f"{message} at {path}"


def _object_error_text(e: ObjectError) -> str:
    name = f"{e.namespace}/{e.name}" if e.namespace and e.name else e.name
    what = " ".join(p for p in (e.kind, name) if p)
    at = f" at {e.path}" if e.path else ""
    return f"object {e.index} ({what or 'unnamed'}){at}: {e.message}"


class Progress:
    """A one-line progress bar on stderr, shown only on a terminal.

    Args:
        label: what moves (``SchedulingBasic 500 nodes``).
        total: the count at the end.
        enabled: whether the command wants it (commands that print ``-o json`` on stdout
            may still show it: it goes to stderr).
        stream: where it goes (a terminal, or it stays silent); None: ``sys.stderr`` as it is
            when the bar is made (not as it was when this module was imported).
        rate: a unit (``pods/s``) to show the rate over the last second in, or None.
        clock: the time source (seconds; tests pass their own).
    """

    def __init__(
        self,
        label: str,
        total: int,
        *,
        enabled: bool,
        stream: TextIO | None = None,
        rate: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        stream = sys.stderr if stream is None else stream
        self.label, self.total, self.stream = label, total, stream
        self.enabled = enabled and stream.isatty() and total > 0
        self.rate, self._clock = rate, clock
        self._last = -math.inf
        self._width = 0
        self._seen: collections.deque[tuple[float, int]] = collections.deque()

    def line(self, done: int, now: float) -> str:
        """The bar for ``done`` at ``now`` (``rate`` over the updates of the last second)."""
        width = 30
        filled = width * min(done, self.total) // self.total
        text = f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}"
        if self.rate is not None:
            seen = self._seen
            seen.append((now, done))
            while len(seen) > 2 and now - seen[1][0] >= 1.0:
                seen.popleft()
            (then, before) = seen[0]
            if now > then:
                text += f"  {(done - before) / (now - then):,.0f} {self.rate}"
        return text

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = self._clock()
        text = self.line(done, now)
        if now - self._last < 0.1 and done < self.total:
            return
        self._last = now
        self._width = max(self._width, len(text))
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * max(self._width, len(self.label) + 50) + "\r")
            self.stream.flush()
