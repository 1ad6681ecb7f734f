"""Scheduler extenders: their configuration and the JSON they exchange (Kubernetes v1.14).

Kubernetes counterparts, at v1.14:

- ``pkg/scheduler/api/v1/types.go``: ``ExtenderConfig``, ``ExtenderTLSConfig``,
  ``ExtenderManagedResource`` as a Policy file spells them (``urlPrefix``, ``filterVerb``, ...;
  decoded case-insensitively, ``caseInsensitiveExtenderConfig``, because ``BindVerb`` and
  ``TLSConfig`` once had no JSON tag);
- ``pkg/scheduler/api/types.go``: the messages the scheduler sends and decodes. Those internal
  structs carry **no JSON tags**, so v1.14 sends Go's field names as they are (``Pod``,
  ``Nodes``, ``NodeNames``; ``PodName``, ``PodNamespace``, ``PodUID``, ``Node``;
  ``NodeNameToVictims``, ``NodeNameToMetaVictims``, ``Pods``, ``NumPDBViolations``, ``UID``),
  and reads a reply with ``encoding/json``, which matches names case-insensitively: an extender
  written against ``api/v1`` (tags ``nodenames``, ``failedNodes``, ``host``, ``score``) and one
  written in Go without tags (``NodeNames``, ``FailedNodes``, ``Host``, ``Score``) both work;
- ``pkg/scheduler/api/validation/validation.go``: the rules on extenders;
- ``pkg/scheduler/core/extender.go``: ``DefaultExtenderTimeout`` (5 s).

Replies are decoded as Go's decoder reads them (:func:`decode_reply`): a struct's field names
match case-insensitively (the last of two spellings wins, as in Go), unknown fields are
ignored, ``null`` is the field's zero value, and map keys (node names) are kept as written.
msgspec has no case-insensitive mode, so the reply is parsed to plain values, the keys of
every *struct* level folded to the struct's spelling (a shape says which levels are structs),
then converted to the typed reply.

``httpTimeout`` is Go's ``time.Duration``: a Policy writes it as an integer of nanoseconds
(``5000000000``); a string duration (``"5s"``, ``"250ms"``, as later configuration files
write it) is accepted too.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

import msgspec

from podium.protocol.objects import Node, Pod, enc_hook

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT_SECONDS",
    "ExtenderArgs",
    "ExtenderBindingArgs",
    "ExtenderBindingResult",
    "ExtenderConfig",
    "ExtenderFilterResult",
    "ExtenderManagedResource",
    "ExtenderPreemptionArgs",
    "ExtenderPreemptionResult",
    "ExtenderTLSConfig",
    "HostPriority",
    "MetaPod",
    "MetaVictims",
    "NodeList",
    "Victims",
    "check_extenders",
    "decode_reply",
    "encode_request",
    "fold_extender_configs",
    "ignored_resources",
    "parse_duration_seconds",
]

DEFAULT_EXTENDER_TIMEOUT_SECONDS = 5.0
"""core/extender.go@v1.14 ``DefaultExtenderTimeout``: used when ``httpTimeout`` is 0 or absent."""

T = TypeVar("T")

# --------------------------------------------------------------------------- configuration


class _Config(
    msgspec.Struct, rename="camel", frozen=True, kw_only=True, forbid_unknown_fields=True
):
    """Base of the extender configuration: camelCase keys (matched case-insensitively before
    conversion, see :func:`fold_extender_configs`); an unknown key is an error."""


class ExtenderManagedResource(_Config, frozen=True, kw_only=True):
    """``managedResources[]``: an extended resource the extender manages.

    Attributes:
        name: the extended resource name (``example.com/gpu``).
        ignored_by_scheduler: PodFitsResources does not check it (v1.14
            ``ignoredExtendedResources``).
    """

    name: str
    ignored_by_scheduler: bool = False


class ExtenderTLSConfig(_Config, frozen=True, kw_only=True):
    """``tlsConfig`` (v1.14 api/v1 ``ExtenderTLSConfig``): files or inline PEM data
    (``certData``, ``keyData``, ``caData`` are base64, as Go encodes ``[]byte``)."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: str = ""
    key_data: str = ""
    ca_data: str = ""

    def data(self, field: str) -> bytes:
        """The decoded bytes of ``cert_data``, ``key_data`` or ``ca_data`` (b"" when unset)."""
        text: str = getattr(self, field)
        return base64.b64decode(text, validate=True) if text else b""


class ExtenderConfig(_Config, frozen=True, kw_only=True):
    """One extender (``extenders[]`` of a Policy or of the configuration file).

    Attributes:
        url_prefix: where it listens (``http://127.0.0.1:8888/scheduler``); a verb is appended
            after a ``/``.
        filter_verb, prioritize_verb, preempt_verb, bind_verb: the verbs it answers; empty
            means it does not take part in that step.
        weight: multiplies its prioritize scores (>= 1 when it prioritizes).
        enable_https: use TLS; without a CA (file or data) the server is not verified, as
            v1.14 ``makeTransport`` does.
        tls_config: CA, client certificate and key, server name, insecure.
        http_timeout: per call; 0 means 5 s. Nanoseconds (Go's ``time.Duration``) or a
            duration string.
        node_cache_capable: send node names only (the extender caches the nodes).
        managed_resources: only pods asking for one of these are sent to it (none: every pod).
        ignorable: an error, a timeout or a bad reply skips the extender instead of failing
            the pod.
    """

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: int | float | str = 0
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = []
    ignorable: bool = False

    @property
    def timeout_seconds(self) -> float:
        """``http_timeout`` in seconds; the 5 s default when it is 0."""
        seconds = parse_duration_seconds(self.http_timeout)
        return seconds if seconds > 0 else DEFAULT_EXTENDER_TIMEOUT_SECONDS

    @property
    def name(self) -> str:
        """How the extender is named in logs, metrics and explain: its URL prefix (v1.14
        ``HTTPExtender.Name``)."""
        return self.url_prefix


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration_seconds(value: int | float | str) -> float:
    """A Go duration in seconds: an integer of nanoseconds (``time.Duration`` in JSON) or a
    ``time.ParseDuration`` string (``"1m30s"``, ``"250ms"``).

    Raises:
        ValueError: a string that is not a duration, or a negative value.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a duration, got {value!r}")
    if isinstance(value, int | float):
        seconds = value / 1e9
    else:
        text = value.strip()
        if text in ("", "0"):
            return 0.0
        pos, seconds = 0, 0.0
        for match in _DURATION.finditer(text):
            if match.start() != pos:
                break
            seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            pos = match.end()
        if pos != len(text) or pos == 0:
            raise ValueError(f"invalid duration {value!r} (e.g. 5s, 250ms, or nanoseconds)")
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative, got {value!r}")
    return seconds


def ignored_resources(extenders: Sequence[ExtenderConfig]) -> frozenset[str]:
    """The extended resources the scheduler does not check (``ignoredByScheduler``)."""
    return frozenset(
        r.name for e in extenders for r in e.managed_resources if r.ignored_by_scheduler
    )


def _is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName@v1.14: domain-prefixed, not in ``kubernetes.io/``, not a
    quota ``requests.`` name, and valid as a qualified name."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    prefix, _, rest = name.partition("/")
    return bool(
        re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", prefix)
        and re.fullmatch(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", rest)
        and len(rest) <= 63
    )


def check_extenders(
    extenders: list[ExtenderConfig], where: str = "extenders"
) -> list[tuple[str, str]]:
    """The v1.14 validation rules on extenders, plus what Podium needs to call them.

    v1.14 (api/validation/validation.go ``ValidatePolicy``): a prioritizing extender needs a
    positive weight; at most one extender binds; a managed resource is an extended resource
    name, named by one extender only. Podium's: ``urlPrefix`` is an http(s) URL; a timeout
    and the TLS data parse.

    Returns:
        ``(path, message)`` per problem (``extenders[1].weight``), empty when all is well.
    """
    problems: list[tuple[str, str]] = []
    binders: list[int] = []
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        at = f"{where}[{i}]"
        if not re.match(r"https?://[^/]", ext.url_prefix):
            problems.append(
                (
                    f"{at}.urlPrefix",
                    f"urlPrefix must be an http:// or https:// URL, got {ext.url_prefix!r}",
                )
            )
        if ext.prioritize_verb and ext.weight <= 0:
            problems.append(
                (
                    f"{at}.weight",
                    f"Priority for extender {ext.url_prefix} should have a positive weight applied to it",
                )
            )
        if ext.bind_verb:
            binders.append(i)
        for j, resource in enumerate(ext.managed_resources):
            if not _is_extended_resource_name(resource.name):
                problems.append(
                    (
                        f"{at}.managedResources[{j}].name",
                        f"{resource.name} is an invalid extended resource name",
                    )
                )
            if resource.name in managed:
                problems.append(
                    (
                        f"{at}.managedResources[{j}].name",
                        f"Duplicate extender managed resource name {resource.name}",
                    )
                )
            managed.add(resource.name)
        try:
            parse_duration_seconds(ext.http_timeout)
        except ValueError as exc:
            problems.append((f"{at}.httpTimeout", str(exc)))
        if ext.tls_config is not None:
            for field in ("cert_data", "key_data", "ca_data"):
                try:
                    ext.tls_config.data(field)
                except (binascii.Error, ValueError):
                    key = msgspec.structs.fields(ExtenderTLSConfig)
                    spelled = next(f.encode_name for f in key if f.name == field)
                    problems.append((f"{at}.tlsConfig.{spelled}", "not valid base64"))
    if len(binders) > 1:
        problems.append(
            (
                f"{where}[{binders[1]}].bindVerb",
                f"Only one extender can implement bind, found {len(binders)}",
            )
        )
    return problems


# --------------------------------------------------------------------------- requests


class _Go(msgspec.Struct, frozen=True, kw_only=True):
    """A message the scheduler sends: Go field names as they are (the structs have no tags)."""


class NodeList(msgspec.Struct, frozen=True, kw_only=True):
    """``v1.NodeList`` as Go encodes it (``metadata`` is an empty ListMeta)."""

    metadata: dict[str, str] = {}
    items: list[Node] = []


class ExtenderArgs(
    _Go,
    frozen=True,
    kw_only=True,
    rename={"pod": "Pod", "nodes": "Nodes", "node_names": "NodeNames"},
):
    """The filter and prioritize request: ``Nodes`` or (nodeCacheCapable) ``NodeNames``; the
    other is ``null``, as Go encodes a nil pointer."""

    pod: Pod
    nodes: NodeList | None = None
    node_names: list[str] | None = None


class ExtenderBindingArgs(
    _Go,
    frozen=True,
    kw_only=True,
    rename={
        "pod_name": "PodName",
        "pod_namespace": "PodNamespace",
        "pod_uid": "PodUID",
        "node": "Node",
    },
):
    """The bind request."""

    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


class MetaPod(_Go, frozen=True, kw_only=True, rename={"uid": "UID"}):
    """A victim named by its uid (nodeCacheCapable preemption, and every preempt reply)."""

    uid: str = ""


class MetaVictims(
    _Go,
    frozen=True,
    kw_only=True,
    rename={"pods": "Pods", "num_pdb_violations": "NumPDBViolations"},
):
    """The victims on one node, by uid."""

    pods: list[MetaPod] = []
    num_pdb_violations: int = 0


class Victims(
    _Go,
    frozen=True,
    kw_only=True,
    rename={"pods": "Pods", "num_pdb_violations": "NumPDBViolations"},
):
    """The victims on one node, as whole pods."""

    pods: list[Pod] = []
    num_pdb_violations: int = 0


class ExtenderPreemptionArgs(
    _Go,
    frozen=True,
    kw_only=True,
    rename={
        "pod": "Pod",
        "node_name_to_victims": "NodeNameToVictims",
        "node_name_to_meta_victims": "NodeNameToMetaVictims",
    },
):
    """The preempt request: whole victims, or (nodeCacheCapable) their uids; the other map is
    ``null``."""

    pod: Pod
    node_name_to_victims: dict[str, Victims] | None = None
    node_name_to_meta_victims: dict[str, MetaVictims] | None = None


_REQUEST_ENCODER = msgspec.json.Encoder(enc_hook=enc_hook)


def encode_request(request: ExtenderArgs | ExtenderBindingArgs | ExtenderPreemptionArgs) -> bytes:
    """The JSON body of a request."""
    return _REQUEST_ENCODER.encode(request)


# --------------------------------------------------------------------------- replies


class _Reply(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """A reply, after :func:`_fold` gave its keys the spelling below (unknown keys ignored)."""


class _NodeMeta(_Reply, frozen=True, kw_only=True):
    name: str = ""


class _ReplyNode(_Reply, frozen=True, kw_only=True):
    metadata: _NodeMeta = _NodeMeta()


class _ReplyNodeList(_Reply, frozen=True, kw_only=True):
    items: list[_ReplyNode] = []


class ExtenderFilterResult(_Reply, frozen=True, kw_only=True):
    """The filter reply.

    Attributes:
        nodes: the nodes that pass, as objects (only their names are read); or
        node_names: their names (nodeCacheCapable). ``None``: the field was absent or null.
        failed_nodes: node name -> why it fails.
        error: a non-empty error fails the call.
    """

    nodes: _ReplyNodeList | None = None
    node_names: list[str] | None = None
    failed_nodes: dict[str, str] | None = None
    error: str = ""

    def passing(self, node_cache_capable: bool) -> list[str] | None:
        """The passing node names as v1.14 ``Filter`` reads them: ``NodeNames`` for a
        nodeCacheCapable extender when present, else ``Nodes``; None when neither is."""
        if node_cache_capable and self.node_names is not None:
            return list(self.node_names)
        if self.nodes is not None:
            return [item.metadata.name for item in self.nodes.items]
        return None


class HostPriority(_Reply, frozen=True, kw_only=True):
    """One node's score in a prioritize reply (a ``HostPriorityList`` is a list of these)."""

    host: str = ""
    score: int = 0


class ExtenderBindingResult(_Reply, frozen=True, kw_only=True):
    """The bind reply: a non-empty ``error`` is a failed bind."""

    error: str = ""


class _ReplyMetaPod(_Reply, frozen=True, kw_only=True):
    uid: str = ""


class _ReplyMetaVictims(_Reply, frozen=True, kw_only=True):
    pods: list[_ReplyMetaPod] = []
    num_pdb_violations: int = 0


class ExtenderPreemptionResult(_Reply, frozen=True, kw_only=True):
    """The preempt reply: node name -> the victims (by uid) the extender agrees to."""

    node_name_to_meta_victims: dict[str, _ReplyMetaVictims] | None = None


# A shape says how to fold a parsed value: a dict of struct fields (lower-cased Go name ->
# (the spelling to give it, the shape of its value)), ("list", shape), ("map", shape), or None
# (a leaf, kept as it is).
_Shape = dict[str, tuple[str, Any]] | tuple[str, Any] | None


def _struct_shape(
    cls: type[msgspec.Struct], children: Mapping[str, _Shape] | None = None
) -> _Shape:
    """The shape of a struct: each field under its encoded name, matched case-insensitively."""
    children = children or {}
    return {
        f.encode_name.lower(): (f.encode_name, children.get(f.name))
        for f in msgspec.structs.fields(cls)
    }


def _fold(value: Any, shape: _Shape) -> Any:
    """``value`` with every struct level's keys spelled as its shape says; ``null`` fields
    dropped (Go leaves the zero value); map keys and unknown fields kept as they are (msgspec
    ignores the unknown ones, forbidding structs report them)."""
    if shape is None:
        return value
    if isinstance(shape, tuple):
        kind, inner = shape
        if kind == "list" and isinstance(value, list):
            return [_fold(v, inner) for v in value]
        if kind == "map" and isinstance(value, dict):
            return {k: _fold(v, inner) for k, v in value.items()}
        return value
    if not isinstance(value, dict):
        return value
    folded: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            continue
        found = shape.get(key.lower())
        if found is None:
            folded[key] = item
            continue
        name, inner = found
        if item is None:
            folded.pop(name, None)
            continue
        folded[name] = _fold(item, inner)
    return folded


_TLS_SHAPE = _struct_shape(ExtenderTLSConfig)
_EXTENDER_CONFIG_SHAPE = _struct_shape(
    ExtenderConfig,
    {
        "tls_config": _TLS_SHAPE,
        "managed_resources": ("list", _struct_shape(ExtenderManagedResource)),
    },
)


def fold_extender_configs(raw: Any) -> Any:
    """A parsed Policy (or configuration) document whose ``extenders`` entries have their keys
    spelled as :class:`ExtenderConfig` spells them, matched case-insensitively (v1.14
    ``caseInsensitiveExtenderConfig``: ``BindVerb``, ``TLSConfig`` and ``bindVerb`` all work);
    anything else is returned as it is, for the typed conversion to judge."""
    if not isinstance(raw, dict) or not isinstance(raw.get("extenders"), list):
        return raw
    return {**raw, "extenders": [_fold(e, _EXTENDER_CONFIG_SHAPE) for e in raw["extenders"]]}


_NODE_LIST_SHAPE = _struct_shape(
    _ReplyNodeList,
    {"items": ("list", _struct_shape(_ReplyNode, {"metadata": _struct_shape(_NodeMeta)}))},
)
_SHAPES: dict[type[Any], _Shape] = {
    ExtenderFilterResult: _struct_shape(
        ExtenderFilterResult,
        {"nodes": _NODE_LIST_SHAPE, "node_names": None, "failed_nodes": None},
    ),
    ExtenderBindingResult: _struct_shape(ExtenderBindingResult),
    ExtenderPreemptionResult: _struct_shape(
        ExtenderPreemptionResult,
        {
            "node_name_to_meta_victims": (
                "map",
                _struct_shape(_ReplyMetaVictims, {"pods": ("list", _struct_shape(_ReplyMetaPod))}),
            )
        },
    ),
    list[HostPriority]: ("list", _struct_shape(HostPriority)),
}

_JSON = msgspec.json.Decoder()


class _GoHostPriority(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="pascal"):
    host: str
    score: int


class _TaggedHostPriority(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    host: str
    score: int


class _GoFilterResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="pascal"):
    nodes: None = None  # Go encodes the unused nil pointer as null; whole nodes go the long way
    node_names: list[str] | None = None
    failed_nodes: dict[str, str] | None = None
    error: str = ""


class _TaggedFilterResult(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    rename={"node_names": "nodenames", "failed_nodes": "failedNodes"},
):
    nodes: None = None
    node_names: list[str] | None = None
    failed_nodes: dict[str, str] | None = None
    error: str = ""


# The common replies, spelled exactly as a Go extender without tags or one built on api/v1's
# tags spells them, decode straight to types (several times faster than folding 500 entries);
# anything else (another case, a null, an unknown field, whole Nodes) fails these strict types
# and takes the general path, which gives the same answer for what these accept.
_FAST: dict[Any, tuple[msgspec.json.Decoder[Any], ...]] = {
    list[HostPriority]: (
        msgspec.json.Decoder(list[_GoHostPriority]),
        msgspec.json.Decoder(list[_TaggedHostPriority]),
    ),
    ExtenderFilterResult: (
        msgspec.json.Decoder(_GoFilterResult),
        msgspec.json.Decoder(_TaggedFilterResult),
    ),
}


def decode_reply(body: bytes, type_: type[T]) -> T:
    """Decode a reply body as Go's ``encoding/json`` reads it into v1.14's untagged struct
    (see the module docstring). ``type_`` is one of :class:`ExtenderFilterResult`,
    ``list[HostPriority]``, :class:`ExtenderBindingResult`, :class:`ExtenderPreemptionResult`.

    A ``null`` body decodes to the empty reply (Go leaves the zero value).

    Raises:
        msgspec.DecodeError: not JSON, or (``msgspec.ValidationError``) a wrong type, with its
            path.
    """
    for fast in _FAST.get(type_, ()):
        try:
            exact = fast.decode(body)
        except msgspec.ValidationError:
            continue
        except msgspec.DecodeError:
            break  # not JSON: the general path says so
        if isinstance(exact, list):
            return cast("T", [HostPriority(host=e.host, score=e.score) for e in exact])
        return cast(
            "T",
            ExtenderFilterResult(
                node_names=exact.node_names, failed_nodes=exact.failed_nodes, error=exact.error
            ),
        )
    raw = _JSON.decode(body)
    if raw is None:
        raw = [] if type_ == list[HostPriority] else {}
    return msgspec.convert(_fold(raw, _SHAPES[type_]), type=type_)
