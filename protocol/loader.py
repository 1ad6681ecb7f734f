"""Load Kubernetes objects from files or text, exactly as ``kubectl get ... -o json|yaml`` prints them.

Accepted shapes, in JSON or YAML:

- one object (``{"kind": "Pod", ...}``);
- a list: ``kind: List`` with ``items`` (what ``kubectl get nodes,pods -A -o json`` prints), or a
  typed list such as ``PodList`` from the API (its items may omit ``kind``);
- a multi-document YAML stream (``---`` separated), each document one of the above.

Each object is decoded into its :data:`~podium.protocol.objects.KINDS` class. Unknown fields are
ignored; wrong types, unparsable or negative quantities and a missing ``metadata.name`` are
rejected. ``null`` reads as the API server reads it (:mod:`podium.protocol.nulls`: absent, or
``""`` in a map of strings). An object of a kind Podium does not schedule (Deployment,
ConfigMap, Event, ...: every real dump holds them) is counted in :attr:`Loaded.skipped` by
:func:`load_all`, or refused as an unknown kind when ``strict`` (and by :func:`load_text`,
:func:`load_file` and :func:`load_files`, which read only what Podium knows). A namespaced kind without ``metadata.namespace`` is put in
``default`` (as ``kubectl apply`` does); a cluster-scoped kind's namespace is cleared (as the
API server does).

Objects without ``kind`` (client-go serialisations, such as an OpenShift insights archive
holds, one object per file): where a field only one kind Podium reads has says what the object
is (:data:`KIND_EVIDENCE`: a Node's ``status.nodeInfo``, a Pod's ``spec.containers``, ...), it
is read as that kind and :attr:`Loaded.warnings` names the file, the object and the field;
otherwise (no such field, or fields of two kinds) the error says to add ``kind:`` and
``apiVersion:``. A ReplicaSet or ReplicationController is never guessed: a Deployment has the
same fields.

Error handling:
    A file is checked whole: :class:`~podium.protocol.errors.LoadErrors` carries one
    :class:`~podium.protocol.errors.LoadError` per bad object, each naming the file, the object
    (its 0-based index in the file, kind, namespace/name when known) and the field path
    (``$.spec.containers[0].resources.requests['cpu']``: msgspec's path, with the offending
    mapping key filled in where msgspec writes ``[...]``). A file that is not JSON/YAML at all
    gives a single LoadError with the line and column.

YAML is read with PyYAML's safe loader (the C one when available), with timestamps kept as the
strings kubectl printed (``creationTimestamp: 2024-05-01T10:00:00Z`` stays a ``str``).
:func:`load_all` reads ``-`` from the stream it is given (the CLI's stdin); the other functions
take a file name or the text itself (``source="-"`` names stdin in errors).
"""

from __future__ import annotations

import os
import re
import types
import typing
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from podium.protocol import objects
from podium.protocol.errors import (
    ConfigError,
    InvalidObject,
    LoadError,
    LoadErrors,
    PolicyError,
    split_validation_message,
)
from podium.protocol.nulls import absent_nulls
from podium.protocol.objects import (
    KINDS,
    NAMESPACED_KINDS,
    KubeObject,
    namespace_or_default,
    scoped_namespace,
)

__all__ = [
    "EVIDENCE_API_VERSIONS",
    "KIND_EVIDENCE",
    "Format",
    "Loaded",
    "decode_object",
    "load_all",
    "load_file",
    "load_files",
    "load_text",
    "parse_documents",
    "read_document",
    "read_settings",
    "yaml_error_text",
    "yaml_load_all",
]

Format = Literal["json", "yaml"]

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_BaseSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseSafeLoader):  # type: ignore[valid-type,misc]  # mypy: base chosen at runtime (C or Python loader)
    """PyYAML's safe loader with timestamps kept as strings (Kubernetes keeps them as text)."""


_Loader.add_constructor(_TIMESTAMP_TAG, yaml.SafeLoader.construct_yaml_str)


def yaml_load_all(text: str) -> list[Any]:
    """Every document of a YAML stream, safely loaded, timestamps kept as strings.

    Empty documents (``---`` with nothing after it) are kept as ``None``.

    Raises:
        yaml.YAMLError: the text is not YAML (callers map it to their own error).
    """
    return list(yaml.load_all(text, Loader=_Loader))  # _Loader is a SafeLoader subclass


def yaml_error_text(exc: yaml.YAMLError) -> str:
    """A one-line description of a YAML syntax error with its (1-based) line and column."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    text = f"{context}, {problem}" if context else str(problem)
    if mark is not None:
        text += f" (line {mark.line + 1}, column {mark.column + 1})"
    return f"not valid YAML: {text}"


_JSON_BYTE = re.compile(r"\(byte (\d+)\)")


def _json_error_text(exc: msgspec.DecodeError, data: bytes) -> str:
    message = str(exc)
    if match := _JSON_BYTE.search(message):
        offset = int(match[1])
        line = data.count(b"\n", 0, offset) + 1
        column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        message = _JSON_BYTE.sub(f"(line {line}, column {column})", message)
    return f"not valid JSON: {message}"


def _sniff(data: bytes, source: str) -> Format:
    suffix = Path(source).suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    head = data.lstrip()[:1]
    return "json" if head in (b"{", b"[") else "yaml"


def _as_bytes(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark, as some editors write


def read_document(text: str | bytes, *, source: str = "<text>", fmt: Format | None = None) -> Any:
    """The single JSON/YAML document of a policy or config file (``None`` when it is empty).

    Raises:
        LoadErrors: the text is not JSON/YAML, or holds more than one document.
    """
    data = _as_bytes(text)
    if (fmt or _sniff(data, source)) == "json":
        if not data.strip():
            return None
        try:
            return msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise LoadErrors([LoadError(_json_error_text(exc, data), file=source)]) from None
    try:
        documents = [
            d for d in yaml_load_all(data.decode("utf-8", errors="replace")) if d is not None
        ]
    except yaml.YAMLError as exc:
        raise LoadErrors([LoadError(yaml_error_text(exc), file=source)]) from None
    if len(documents) > 1:
        raise LoadErrors([LoadError(f"expected one document, found {len(documents)}", file=source)])
    return documents[0] if documents else None


def read_settings(
    text: str | bytes | None,
    *,
    source: str,
    fmt: Format | None = None,
    error: type[ConfigError | PolicyError],
) -> Any:
    """The single document of a policy or configuration file: ``text``, else the file at
    ``source`` (see :func:`read_document`).

    Raises:
        ConfigError, PolicyError: ``error``, naming ``source`` and no path, when the file
            cannot be read or is not one JSON/YAML document.
    """
    if text is None:
        try:
            text = Path(source).read_bytes()
        except OSError as exc:
            raise error([("", f"cannot read: {exc.strerror or exc}")], source=source) from None
    try:
        return read_document(text, source=source, fmt=fmt)
    except LoadErrors as exc:
        raise error([("", exc.errors[0].reason)], source=source) from None


def parse_documents(
    text: str | bytes, *, source: str = "<text>", fmt: Format | None = None
) -> list[Any]:
    """The raw objects of a file: documents parsed, lists flattened, empty documents dropped.

    Args:
        text: the file's content.
        source: the file name used in errors (and to guess the format from its suffix).
        fmt: ``"json"`` or ``"yaml"``; guessed when ``None`` (``.json``/``.yaml`` suffix, else
            JSON when the text starts with ``{`` or ``[``).

    Returns:
        The raw objects (usually dicts) in file order; a typed list's items (``PodList``)
        get the item kind when they lack one.

    Raises:
        LoadErrors: the text is not JSON/YAML, or a list's ``items`` is not a list.
    """
    data = _as_bytes(text)
    fmt = fmt or _sniff(data, source)
    if fmt == "json":
        try:
            documents: list[Any] = [msgspec.json.decode(data)] if data.strip() else []
        except msgspec.DecodeError as exc:
            raise LoadErrors([LoadError(_json_error_text(exc, data), file=source)]) from None
    else:
        try:
            documents = yaml_load_all(data.decode("utf-8", errors="replace"))
        except yaml.YAMLError as exc:
            raise LoadErrors([LoadError(yaml_error_text(exc), file=source)]) from None
    flat: list[Any] = []
    errors: list[LoadError] = []
    for document in documents:
        if document is None:
            continue
        if not _is_list(document):
            flat.append(document)
            continue
        items = document.get("items")
        if items is None:
            continue
        if not isinstance(items, list):
            errors.append(
                LoadError(
                    f"Expected `array`, got `{_json_type(items)}`",
                    file=source,
                    kind=document["kind"],
                    path="$.items",
                )
            )
            continue
        item_kind = document["kind"].removesuffix("List")
        for item in items:
            # A typed list from the API (PodList, EventList) omits each item's kind.
            typed = bool(item_kind) and isinstance(item, dict) and "kind" not in item
            flat.append({"kind": item_kind, **item} if typed else item)
    if errors:
        raise LoadErrors(errors)
    return flat


def _is_list(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    kind = document.get("kind")
    return (
        isinstance(kind, str)
        and kind.endswith("List")
        and kind not in KINDS
        and "items" in document
    )


def _json_type(value: Any) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "bool"
        case int():
            return "int"
        case float():
            return "float"
        case str():
            return "str"
        case list():
            return "array"
        case dict():
            return "object"
        case _:
            return type(value).__name__


@dataclass(slots=True)
class Loaded:
    """What :func:`load_all` read.

    Attributes:
        objects: the objects, in file order (files in the order given).
        origins: per object, its file and its index in that file (as a LoadError counts it:
            every object of every document and list item, skipped ones included).
        skipped: how many objects of each kind Podium does not schedule were skipped.
        warnings: one line per object read without a ``kind``: the file, the object, the
            kind it was read as and the field that said so (the CLI prints them on stderr).
    """

    objects: list[KubeObject] = field(default_factory=list)
    origins: list[tuple[str, int]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)

    def error_at(self, position: int, reason: str, *, path: str | None = None) -> LoadError:
        """A LoadError naming the file and the object at ``position`` of :attr:`objects`
        (for a rule checked after loading, such as priority admission)."""
        obj = self.objects[position]
        file, index = self.origins[position]
        kind = type(obj).__name__
        return LoadError(
            reason,
            file=file,
            index=index,
            kind=kind,
            namespace=scoped_namespace(kind, obj.metadata.namespace) or None,
            name=obj.metadata.name,
            path=path,
        )


def _load_into(
    loaded: Loaded,
    errors: list[LoadError],
    text: str | bytes,
    *,
    source: str,
    fmt: Format | None,
    strict: bool,
) -> None:
    """Decode every object of one file's content into ``loaded``; its errors into ``errors``."""
    try:
        raws = parse_documents(text, source=source, fmt=fmt)
    except LoadErrors as exc:
        errors.extend(exc.errors)
        return
    for index, raw in enumerate(raws):
        inferred = _infer_kind(raw)
        if isinstance(inferred, _Inferred):
            loaded.warnings.append(_inferred_warning(raw, inferred, source=source, index=index))
            raw = {**raw, "kind": inferred.kind}
            if raw.get("apiVersion") in (None, ""):
                raw["apiVersion"] = inferred.api_version
        result = inferred if isinstance(inferred, _Failure) else _decode(raw, strict=strict)
        if isinstance(result, _Failure):
            kind, namespace, name = _identity(raw)
            errors.append(
                LoadError(
                    result.reason,
                    file=source,
                    index=index,
                    kind=kind,
                    namespace=namespace,
                    name=name,
                    path=result.path,
                )
            )
        elif isinstance(result, str):
            loaded.skipped[result] += 1
        else:
            loaded.objects.append(result)
            loaded.origins.append((source, index))


def load_all(
    paths: Sequence[str | os.PathLike[str]],
    *,
    stdin: typing.BinaryIO | None = None,
    strict: bool = False,
) -> Loaded:
    """Decode every object of every file, skipping the kinds Podium does not schedule.

    Args:
        paths: the files, in order; ``-`` reads ``stdin``.
        stdin: what ``-`` reads (the caller's ``sys.stdin.buffer``).
        strict: refuse an object of a kind Podium does not know (as an error naming its
            file, the object and ``$.kind``) instead of counting it in :attr:`Loaded.skipped`.

    Raises:
        LoadErrors: every LoadError of every file (a file is checked whole).
    """
    loaded = Loaded()
    errors: list[LoadError] = []
    for path in paths:
        source = os.fspath(path)
        data = stdin.read() if source == "-" and stdin is not None else _read(source)
        if isinstance(data, LoadError):
            errors.append(data)
            continue
        _load_into(loaded, errors, data, source=source, fmt=None, strict=strict)
    if errors:
        raise LoadErrors(errors)
    return loaded


def load_text(
    text: str | bytes, *, source: str = "<text>", fmt: Format | None = None
) -> list[KubeObject]:
    """Decode every object of a file's content; a kind Podium does not know is an error.

    Args:
        text: the content (JSON or YAML; see the module docstring for the shapes).
        source: the file name errors carry (``-`` for stdin).
        fmt: ``"json"``, ``"yaml"`` or ``None`` to guess.

    Returns:
        The objects, in file order.

    Raises:
        LoadErrors: one LoadError per object that cannot be decoded (all of them, not only
            the first), or one for a file that is not JSON/YAML.
    """
    loaded = Loaded()
    errors: list[LoadError] = []
    _load_into(loaded, errors, text, source=source, fmt=fmt, strict=True)
    if errors:
        raise LoadErrors(errors)
    return loaded.objects


def load_file(path: str | os.PathLike[str], *, fmt: Format | None = None) -> list[KubeObject]:
    """Decode every object of the file at ``path`` (see :func:`load_text`).

    Raises:
        LoadErrors: as :func:`load_text`; also when the file cannot be read.
    """
    source = os.fspath(path)
    data = _read(source)
    if isinstance(data, LoadError):
        raise LoadErrors([data])
    return load_text(data, source=source, fmt=fmt)


def _read(source: str) -> bytes | LoadError:
    """The bytes of the file ``source``, or the LoadError that says why they cannot be read."""
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        return LoadError(f"cannot read: {exc.strerror or exc}", file=source)


def load_files(paths: typing.Iterable[str | os.PathLike[str]]) -> list[KubeObject]:
    """Decode every object of every file, collecting the errors of all files; a kind Podium
    does not know is an error (:func:`load_all` with ``strict``, ``-`` a file name).

    Raises:
        LoadErrors: every LoadError of every file.
    """
    return load_all(list(paths), strict=True).objects


def decode_object(raw: Any) -> KubeObject:
    """Decode one raw object (a dict as JSON/YAML gives it) into its Kubernetes-shaped struct.

    Raises:
        InvalidObject: the message names the object (``Pod default/web-1``) and the rule; its
            ``path`` is the field (``$.spec.containers[0].resources.requests['cpu']``).
    """
    result = _decode(raw, strict=True)
    assert not isinstance(result, str)  # strict: an unknown kind is a failure
    if isinstance(result, _Failure):
        kind, namespace, name = _identity(raw)
        what = " ".join(
            p for p in (kind, f"{namespace}/{name}" if namespace and name else name) if p
        )
        at = f" at {result.path}" if result.path else ""
        raise InvalidObject(f"{what or 'object'}{at}: {result.reason}", path=result.path)
    return result


# --------------------------------------------------------------------------- decoding


class _Failure(typing.NamedTuple):
    reason: str
    path: str | None


def _identity(raw: Any) -> tuple[str | None, str | None, str | None]:
    """(kind, namespace, name) of a raw object, where they are strings."""
    if not isinstance(raw, dict):
        return None, None, None
    kind = raw.get("kind") if isinstance(raw.get("kind"), str) else None
    metadata = raw.get("metadata")
    namespace = name = None
    if isinstance(metadata, dict):
        namespace = (
            metadata.get("namespace") if isinstance(metadata.get("namespace"), str) else None
        )
        name = metadata.get("name") if isinstance(metadata.get("name"), str) else None
    if kind in NAMESPACED_KINDS:
        namespace = namespace_or_default(namespace)
    return kind, namespace or None, name or None


KIND_EVIDENCE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Node", ("status.nodeInfo",)),
    ("Node", ("spec.providerID",)),
    ("Node", ("spec.podCIDR",)),
    ("Node", ("spec.podCIDRs",)),
    ("Pod", ("spec.containers",)),
    ("PersistentVolume", ("spec.persistentVolumeReclaimPolicy",)),
    ("PersistentVolume", ("spec.claimRef",)),
    ("PersistentVolume", ("spec.capacity",)),
    ("PersistentVolumeClaim", ("spec.volumeName",)),
    ("PersistentVolumeClaim", ("spec.accessModes", "spec.resources")),
    ("Service", ("spec.clusterIP",)),
    ("Service", ("spec.clusterIPs",)),
    ("StatefulSet", ("spec.serviceName",)),
    ("StatefulSet", ("spec.volumeClaimTemplates",)),
    ("StatefulSet", ("spec.podManagementPolicy",)),
    ("StorageClass", ("provisioner",)),
    ("PriorityClass", ("value",)),
    ("PodDisruptionBudget", ("spec.minAvailable",)),
    ("PodDisruptionBudget", ("spec.maxUnavailable",)),
    ("PodDisruptionBudget", ("status.disruptionsAllowed",)),
    ("PodGroup", ("spec.schedulingPolicy",)),
    ("PodGroup", ("spec.minMember", "spec.queue")),
    ("PodGroup", ("spec.minMember",)),
)
"""The fields that say what an object without ``kind`` is: each (kind, fields) row holds when
the object has every field of it. Each field belongs, among the v1 objects, to that kind alone
(``spec.maxUnavailable`` is a Deployment's only under ``spec.strategy``; a Pod's
``spec.resources`` (pod-level resources) comes with ``spec.containers``, hence a PVC's
``spec.resources`` only with ``spec.accessModes``, which a Pod has not). A PodGroup's
``spec.minMember`` is scheduler-plugins' or, with ``spec.queue``, Volcano's: an object without
``apiVersion`` either is read in that form (:data:`EVIDENCE_API_VERSIONS`)."""

EVIDENCE_API_VERSIONS: dict[tuple[str, ...], str] = {
    ("spec.minMember", "spec.queue"): "scheduling.volcano.sh/v1beta1",
    ("spec.minMember",): "scheduling.x-k8s.io/v1alpha1",
}
"""The ``apiVersion`` an object read by a :data:`KIND_EVIDENCE` row is given when it has none
(otherwise its kind's default): the row's fields belong to that form of the kind."""

_MISSING_KIND = (
    "missing kind: add `kind:` and `apiVersion:` (e.g. `kind: Pod` and `apiVersion: v1`)"
)


class _Inferred(typing.NamedTuple):
    kind: str
    field: str
    api_version: str


def _has(raw: dict[str, Any], dotted: str) -> bool:
    value: Any = raw
    for part in dotted.split("."):
        if not isinstance(value, dict) or value.get(part) is None:
            return False
        value = value[part]
    return True


def _infer_kind(raw: Any) -> _Inferred | _Failure | None:
    """What an object without ``kind`` is, by :data:`KIND_EVIDENCE`; why it cannot be told;
    or None when the object has a kind (or is no mapping: :func:`_decode` says so)."""
    if not isinstance(raw, dict) or raw.get("kind") not in (None, ""):
        return None
    found: dict[str, tuple[str, ...]] = {}
    for kind, fields in KIND_EVIDENCE:
        if kind not in found and all(_has(raw, f) for f in fields):
            found[kind] = fields
    if len(found) == 1:
        ((kind, fields),) = found.items()
        api_version = raw.get("apiVersion")
        if not isinstance(api_version, str) or not api_version:
            api_version = EVIDENCE_API_VERSIONS.get(fields) or _default_api_version(kind)
        return _Inferred(kind, " and ".join(fields), api_version)
    if not found:
        return _Failure(_MISSING_KIND, "$.kind")
    fits = ", ".join(f"a {kind}'s {' and '.join(fields)}" for kind, fields in found.items())
    return _Failure(f"{_MISSING_KIND}; its fields fit more than one kind ({fits})", "$.kind")


def _inferred_warning(raw: dict[str, Any], inferred: _Inferred, *, source: str, index: int) -> str:
    """The line that says an object without ``kind`` was read as ``inferred.kind``."""
    _, namespace, name = _identity(raw)
    what = f"{namespace}/{name}" if namespace and name else name or "unnamed"
    return (
        f"{source}: object {index} ({what}) has no kind; read as a {inferred.kind} for its "
        f"{inferred.field} (add `kind: {inferred.kind}` and `apiVersion: {inferred.api_version}` "
        "to say so)"
    )


def _default_api_version(kind: str) -> str:
    """The ``apiVersion`` a kind's struct gives an object that names none."""
    default: str = next(
        f.default for f in msgspec.structs.fields(KINDS[kind]) if f.name == "api_version"
    )
    return default


def _decode(raw: Any, *, strict: bool) -> KubeObject | _Failure | str:
    """The object ``raw`` decodes to, why it does not, or (unless ``strict``) its kind when
    Podium does not schedule that kind."""
    if not isinstance(raw, dict):
        return _Failure(f"expected a Kubernetes object (a mapping), got `{_json_type(raw)}`", "$")
    kind = raw.get("kind")
    if kind is None or kind == "":
        return _Failure(_MISSING_KIND, "$.kind")
    if not isinstance(kind, str):
        return _Failure(f"Expected `str`, got `{_json_type(kind)}`", "$.kind")
    cls = KINDS.get(kind)
    if cls is None:
        if not strict:
            return kind
        known = ", ".join(sorted(KINDS))
        return _Failure(f"unknown kind {kind!r}; Podium knows {known}", "$.kind")
    try:
        obj: KubeObject = msgspec.convert(raw, type=cls, dec_hook=objects.dec_hook)
    except msgspec.ValidationError as first:
        # Only an object msgspec refused is walked for nulls: the rest pays nothing.
        fixed = absent_nulls(raw, cls)
        try:
            if fixed is raw:
                raise first
            obj = msgspec.convert(fixed, type=cls, dec_hook=objects.dec_hook)
        except msgspec.ValidationError as exc:
            return _validation_failure(exc, fixed, cls)
    namespace = obj.metadata.namespace
    wanted = scoped_namespace(kind, namespace)
    if wanted != namespace:
        obj = msgspec.structs.replace(
            obj, metadata=msgspec.structs.replace(obj.metadata, namespace=wanted)
        )
    return obj


def _validation_failure(exc: msgspec.ValidationError, raw: Any, cls: type) -> _Failure:
    reason, path = split_validation_message(str(exc))
    key_error = reason.endswith("(a key)")
    if path is not None and ("[...]" in path or key_error):
        path = _resolve_keys(raw, cls, path, key_error=key_error)
    return _Failure(reason, path)


# --------------------------------------------------------------------------- path repair

_TOKEN = re.compile(r"\.(?P<field>[^.\[]+)|\[(?P<index>\d+)\]|\[(?P<any>\.\.\.)\]")


def _resolve_keys(raw: Any, cls: type, path: str, *, key_error: bool) -> str:
    """Replace msgspec's ``[...]`` (an unnamed mapping key) in ``path`` with the key itself.

    msgspec reports an error inside a mapping as ``requests[...]``; walking the raw object
    alongside the struct's field types finds the first entry that fails on its own. When
    anything does not line up, the path is returned unchanged.
    """
    if key_error:
        path += "[...]"
    out = "$"
    value: Any = raw
    tp: Any = cls
    position = 1
    while position < len(path):
        match = _TOKEN.match(path, position)
        if match is None:
            return path
        position = match.end()
        tp = _unwrap(tp, value)
        if (field := match["field"]) is not None:
            encoded = (
                {f.encode_name: f.type for f in msgspec.structs.fields(tp)}
                if _is_struct(tp)
                else {}
            )
            if field not in encoded or not isinstance(value, dict):
                return path
            tp, value = encoded[field], value.get(field)
            out += f".{field}"
        elif (index := match["index"]) is not None:
            args = typing.get_args(tp)
            if not isinstance(value, list) or int(index) >= len(value) or not args:
                return path
            tp, value = args[0], value[int(index)]
            out += f"[{index}]"
        else:
            args = typing.get_args(tp)
            if not isinstance(value, dict) or len(args) != 2:
                return path
            bad = _first_bad_entry(value, args[0], args[1])
            if bad is None:
                return path
            tp, value = args[1], value[bad]
            out += f"[{bad!r}]"
    return out


def _first_bad_entry(mapping: dict[Any, Any], key_type: Any, value_type: Any) -> Any:
    for key, item in mapping.items():
        for candidate, tp in ((key, key_type), (item, value_type)):
            try:
                msgspec.convert(candidate, type=tp, dec_hook=objects.dec_hook)
            except msgspec.ValidationError:
                return key
    return None


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _unwrap(tp: Any, value: Any) -> Any:
    """Strip ``Annotated`` and pick the member of an optional/union type that ``value`` takes."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(tp) if m is not type(None)]
        if isinstance(value, dict):
            members = [
                m for m in members if _is_struct(m) or typing.get_origin(m) is dict
            ] or members
        elif isinstance(value, list):
            members = [m for m in members if typing.get_origin(m) is list] or members
        tp = members[0] if members else tp
        while typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
    return tp
