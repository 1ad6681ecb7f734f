"""Kubernetes' rules on names, namespaces, labels and annotations, with Kubernetes' messages.

Kubernetes counterpart: staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go
(``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsDNS1035Label``, ``IsQualifiedName``,
``IsValidLabelValue``, ``MaxLenError``, ``RegexError``), pkg/api/validation/objectmeta.go
(``ValidateObjectMetaAccessor``, ``ValidateAnnotations``, ``TotalAnnotationSizeLimitB``) and
generic.go (``NameIsDNSSubdomain``, ``NameIsDNSLabel``, ``NameIsDNS1035Label`` and their
``maskTrailingDash`` for a generateName prefix), all @v1.14.

Each ``is_*`` function returns Kubernetes' error strings (empty when the value is valid);
:func:`metadata_errors` returns ``(path, message)`` pairs for an object's metadata. The store
applies them to every put (store/core.py), as the API server validates on create and update:
the structs of protocol/objects.py do not, so the scheduler's views and Kubernetes' own test
tables (``nodeA``) take any object.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "DNS1035_KINDS",
    "GENERATED_SUFFIX_ALPHABET",
    "GENERATED_SUFFIX_LENGTH",
    "MAX_GENERATED_NAME_LENGTH",
    "SCHEDULING_GATED",
    "SCHEDULING_GATED_MESSAGE",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_label_value",
    "is_qualified_name",
    "metadata_errors",
    "name_errors",
    "scheduling_gates_errors",
]

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * (1 << 10)
"""objectmeta.go ``TotalAnnotationSizeLimitB``: the bytes of every annotation key and value."""

GENERATED_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""util/rand/rand.go ``alphanums``: no vowels (no words), no 0/1/3 (no confusion with o/l/e)."""
GENERATED_SUFFIX_LENGTH = 5
"""storage/names/generate.go ``randomLength``."""
MAX_GENERATED_NAME_LENGTH = 63 - GENERATED_SUFFIX_LENGTH
"""generate.go ``MaxGeneratedNameLength``: a longer generateName is cut to this."""

DNS1035_KINDS = frozenset({"Service"})
"""The kinds whose names are DNS-1035 labels (core/validation ``ValidateServiceName``); every
other kind Podium reads names a DNS-1123 subdomain."""

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_LABEL_MAX = 63
_SUBDOMAIN_MAX = 253

# Go's regexp MatchString with ^...$ on ASCII classes: re.ASCII and fullmatch.
_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FMT, re.ASCII)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT, re.ASCII)
_DNS1035_LABEL = re.compile(_DNS1035_LABEL_FMT, re.ASCII)
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FMT, re.ASCII)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT, re.ASCII)


def _max_len(length: int) -> str:
    return f"must be no more than {length} characters"


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """validation.go ``RegexError``, spacing included."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _length(value: str) -> int:
    """Go's ``len``: bytes of the UTF-8 encoding."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def is_dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: a namespace."""
    errors = []
    if _length(value) > _LABEL_MAX:
        errors.append(_max_len(_LABEL_MAX))
    if not _DNS1123_LABEL.fullmatch(value):
        if _DNS1123_SUBDOMAIN.fullmatch(value):
            errors.append("must not contain dots")
        else:
            errors.append(
                _regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc")
            )
    return errors


_Rule = tuple[int, re.Pattern[str], str, str, tuple[str, ...]]
"""(max length, pattern, message, the pattern's text, examples) of a validation.go check."""
_SUBDOMAIN_RULE: _Rule = (
    _SUBDOMAIN_MAX,
    _DNS1123_SUBDOMAIN,
    _DNS1123_SUBDOMAIN_MSG,
    _DNS1123_SUBDOMAIN_FMT,
    ("example.com",),
)
_DNS1035_RULE: _Rule = (
    _LABEL_MAX,
    _DNS1035_LABEL,
    _DNS1035_LABEL_MSG,
    _DNS1035_LABEL_FMT,
    ("my-name", "abc-123"),
)
_LABEL_VALUE_RULE: _Rule = (
    _LABEL_MAX,
    _LABEL_VALUE,
    _LABEL_VALUE_MSG,
    _LABEL_VALUE_FMT,
    ("MyValue", "my_value", "12345"),
)


def _checked(value: str, rule: _Rule) -> list[str]:
    """The length, then the pattern, as each of validation.go's ``Is*`` functions checks."""
    max_len, pattern, message, fmt, examples = rule
    errors = [_max_len(max_len)] if _length(value) > max_len else []
    if not pattern.fullmatch(value):
        errors.append(_regex_error(message, fmt, *examples))
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: most objects' names."""
    return _checked(value, _SUBDOMAIN_RULE)


def is_dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label``: a Service's name."""
    return _checked(value, _DNS1035_RULE)


def is_qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: a label key, an annotation key (lower-cased), a scheduling gate."""
    if _QUALIFIED_NAME.fullmatch(value) and _length(value) <= _LABEL_MAX:
        return []  # the common case, without splitting
    errors = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {m}" for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif _length(name) > _LABEL_MAX:
        errors.append(f"name part {_max_len(_LABEL_MAX)}")
    if not _QUALIFIED_NAME.fullmatch(name):
        errors.append(
            "name part "
            + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def is_label_value(value: str) -> list[str]:
    """``IsValidLabelValue``: may be empty."""
    return _checked(value, _LABEL_VALUE_RULE)


def _mask_trailing_dash(name: str) -> str:
    """generic.go ``maskTrailingDash``: a generateName prefix may end in '-'."""
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def name_errors(kind: str, name: str, *, prefix: bool = False) -> list[str]:
    """The errors of ``name`` as a ``kind``'s name (``prefix``: as its generateName)."""
    if not name:
        return []
    check: Callable[[str], list[str]] = (
        is_dns1035_label if kind in DNS1035_KINDS else is_dns1123_subdomain
    )
    return check(_mask_trailing_dash(name) if prefix else name)


def _quote(key: str) -> str:
    return f"[{key!r}]"


def _invalid(field: str, value: str, detail: str) -> str:
    """field.Invalid's text (``field/errors.go``): the value quoted, clipped past 80 characters
    (Kubernetes echoes it whole; a 10 000-character name is better not)."""
    shown = value if len(value) <= 80 else value[:77] + "..."
    return f"{field}: Invalid value: {json.dumps(shown, ensure_ascii=False)}: {detail}"


def metadata_errors(
    kind: str,
    name: str,
    generate_name: str,
    namespace: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
) -> list[tuple[str, str]]:
    """``ValidateObjectMetaAccessor``'s rules for an object of ``kind``, as ``(path, message)``
    pairs: the path of the field in the object in Podium's form
    (``$.metadata.labels['a,b']``), the message in Kubernetes' (``metadata.labels: Invalid
    value: "a,b": name part must ...``).

    The name (and generateName, whose trailing '-' is allowed) by the kind's rule; a name or a
    generateName is required; a namespace, when given, a DNS-1123 label; label keys qualified
    names and values label values; annotation keys qualified names once lower-cased, and every
    key and value together at most 256 KiB.
    """
    # Valid, by the same checks, with the verdicts on namespaces, labels and annotation keys
    # remembered: they repeat from pod to pod (a ReplicaSet's pods share them), and each label
    # took ~10 us to judge again in every put (docs/benchmarks.md, issue 27's machinery).
    # Anything invalid goes on below, where the errors are worded.
    if (
        (name or generate_name)
        and not name_errors(kind, generate_name, prefix=True)
        and not name_errors(kind, name)
        and (not namespace or _namespace_valid(namespace))
        and all(_label_valid(key, value) for key, value in labels.items())
        and (not annotations or _annotations_valid(annotations))
    ):
        return []
    errors: list[tuple[str, str]] = []
    for field, value, prefix in (("generateName", generate_name, True), ("name", name, False)):
        errors += [
            (f"$.metadata.{field}", _invalid(f"metadata.{field}", value, m))
            for m in name_errors(kind, value, prefix=prefix)
        ]
    if not name and not generate_name:
        errors.append(
            ("$.metadata.name", "metadata.name: Required value: name or generateName is required")
        )
    if namespace:
        errors += [
            ("$.metadata.namespace", _invalid("metadata.namespace", namespace, m))
            for m in is_dns1123_label(namespace)
        ]
    for key, value in labels.items():
        path = f"$.metadata.labels{_quote(key)}"
        errors += [(path, _invalid("metadata.labels", key, m)) for m in is_qualified_name(key)]
        errors += [(path, _invalid("metadata.labels", value, m)) for m in is_label_value(value)]
    total = 0
    for key, value in annotations.items():
        errors += [
            (f"$.metadata.annotations{_quote(key)}", _invalid("metadata.annotations", key, m))
            for m in is_qualified_name(key.lower())
        ]
        total += _length(key) + _length(value)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errors.append(
            (
                "$.metadata.annotations",
                f"metadata.annotations: Too long: must have at most "
                f"{TOTAL_ANNOTATION_SIZE_LIMIT} bytes",
            )
        )
    return errors


_VERDICTS_KEPT = 4096
_QUALIFIED_NAME_MAX = _SUBDOMAIN_MAX + 1 + _LABEL_MAX
"""The longest valid qualified name (a subdomain prefix, '/', a name): a longer string is
invalid whatever it holds, and is not remembered (the caches hold short strings only)."""


def _namespace_valid(namespace: str) -> bool:
    return len(namespace) <= _LABEL_MAX and _short_namespace_valid(namespace)


@functools.lru_cache(maxsize=_VERDICTS_KEPT)
def _short_namespace_valid(namespace: str) -> bool:
    return not is_dns1123_label(namespace)


def _label_valid(key: str, value: str) -> bool:
    return (
        len(key) <= _QUALIFIED_NAME_MAX
        and len(value) <= _LABEL_MAX
        and _short_label_valid(key, value)
    )


@functools.lru_cache(maxsize=_VERDICTS_KEPT)
def _short_label_valid(key: str, value: str) -> bool:
    return not is_qualified_name(key) and not is_label_value(value)


def _annotation_key_valid(key: str) -> bool:
    return len(key) <= _QUALIFIED_NAME_MAX and _short_annotation_key_valid(key)


@functools.lru_cache(maxsize=_VERDICTS_KEPT)
def _short_annotation_key_valid(key: str) -> bool:
    return not is_qualified_name(key.lower())


def _annotations_valid(annotations: Mapping[str, str]) -> bool:
    total = 0
    for key, value in annotations.items():
        if not _annotation_key_valid(key):
            return False
        total += _length(key) + _length(value)
    return total <= TOTAL_ANNOTATION_SIZE_LIMIT


SCHEDULING_GATED = "SchedulingGated"
"""core/v1 ``PodReasonSchedulingGated``: the PodScheduled condition's reason on a gated pod."""
SCHEDULING_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
"""The condition's message (pkg/registry/core/pod/strategy.go ``applySchedulingGatedCondition``)."""


def scheduling_gates_errors(
    gates: Sequence[str], node_name: str, old: Sequence[str] | None
) -> list[tuple[str, str]]:
    """A pod's ``spec.schedulingGates`` (core/validation/validation.go, Kubernetes 1.27+):
    qualified names without duplicates (``validateSchedulingGates``); on create (``old``
    None) no ``nodeName`` with gates (``ValidatePodCreate``); on update only deletions
    (``validateOnlyDeletedSchedulingGates``)."""
    errors: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates):
        field = f"spec.schedulingGates[{i}]"
        errors += [(f"$.{field}.name", _invalid(field, gate, m)) for m in is_qualified_name(gate)]
        if gate in seen:
            errors.append((f"$.{field}.name", f"{field}: Duplicate value: {json.dumps(gate)}"))
        seen.add(gate)
    if old is None:
        if gates and node_name:
            errors.append(
                (
                    "$.spec.nodeName",
                    "spec.nodeName: Forbidden: cannot be set until all schedulingGates have "
                    "been cleared",
                )
            )
    else:
        errors += [
            (
                f"$.spec.schedulingGates[{i}].name",
                f"spec.schedulingGates[{i}].name: Forbidden: only deletion is allowed, but "
                f"found new scheduling gate '{gate}'",
            )
            for i, gate in enumerate(gates)
            if gate not in old
        ]
    return errors
