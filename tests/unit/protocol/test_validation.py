"""Kubernetes' rules on names, labels and annotations (protocol/validation.py).

The good and bad values are Kubernetes' own: staging/src/k8s.io/apimachinery/pkg/util/
validation/validation_test.go (TestIsDNS1123Label, TestIsDNS1123Subdomain, TestIsDNS1035Label,
TestIsQualifiedName, TestIsValidLabelValue) and pkg/api/validation/objectmeta_test.go
(TestValidateObjectMetaNamespaces, TestValidateAnnotations).
"""

from __future__ import annotations

import pytest

from podium.protocol.validation import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
    metadata_errors,
    name_errors,
    scheduling_gates_errors,
)

_LABEL_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a"]
_LABEL_GOOD += ["1--a--b--2", "a" * 63]
_LABEL_BAD = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_"]
_LABEL_BAD += ["_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " "]
_LABEL_BAD += ["a ", " a", "a b", "1 ", " 1", "1 2", "a" * 64]

_SUBDOMAIN_GOOD = [*_LABEL_GOOD, "a.a", "ab.a", "a--1--2--b.a", "a.1", "0.a", "1--a--b--2.1"]
_SUBDOMAIN_GOOD += ["a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55", "a" * 253]
_SUBDOMAIN_BAD = [v for v in _LABEL_BAD if v not in ("a.b", "1.2", "a" * 64)]
_SUBDOMAIN_BAD += ["a..b", "1..2", "A.a", "aB.a", "ab.A", "A1.a", "a1.A", "A.1", "0.A", "1A.a"]
_SUBDOMAIN_BAD += ["A.B.C.D.E", "a.B.c.d.e", "a@b", "a,b", "a;b", "a:b", "a%b", "a?b", "a$b"]
_SUBDOMAIN_BAD += ["a/b", "ünicode", "a" * 254]

_DNS1035_GOOD = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "a" * 63]
_DNS1035_BAD = ["0", "01", "012", "1a", "1-a", "1--a--b--2", *_LABEL_BAD]

_QUALIFIED_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple"]
_QUALIFIED_GOOD += ["now-with-dashes/simple", "now.with.dots/now-with-dashes"]
_QUALIFIED_GOOD += ["now-with.dashes-and.dots/now_with_underscores", "Now_with_underscores"]
_QUALIFIED_GOOD += ["1-num.2-num/3-num", "1234/5678", "1.2.3.4/5678", "Uppercase_Is_OK_123"]
_QUALIFIED_GOOD += ["example.com/Uppercase_Is_OK_123", "requests.storage-foo", "a" * 63]
_QUALIFIED_GOOD += ["a" * 253 + "/" + "b" * 63]
_QUALIFIED_BAD = ["nospecialchars%^=@", "cantendwithadash-", "-cantstartwithadash-"]
_QUALIFIED_BAD += ["only/one/slash", "Example.com/abc", "example_com/abc", "example.com/"]
_QUALIFIED_BAD += ["/simple", "a" * 64, "a" * 254 + "/abc", "a,b", "!x", ""]

_VALUE_GOOD = ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234"]
_VALUE_GOOD += ["a" * 63, ""]
_VALUE_BAD = ["nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad"]
_VALUE_BAD += ["-starts-with-dash", "ends-with-dash-", ".starts.with.dot", "ends.with.dot."]
_VALUE_BAD += ["a" * 64]


@pytest.mark.parametrize(
    ("check", "good", "bad"),
    [
        pytest.param(is_dns1123_label, _LABEL_GOOD, _LABEL_BAD, id="IsDNS1123Label"),
        pytest.param(
            is_dns1123_subdomain, _SUBDOMAIN_GOOD, _SUBDOMAIN_BAD, id="IsDNS1123Subdomain"
        ),
        pytest.param(is_dns1035_label, _DNS1035_GOOD, _DNS1035_BAD, id="IsDNS1035Label"),
        pytest.param(is_qualified_name, _QUALIFIED_GOOD, _QUALIFIED_BAD, id="IsQualifiedName"),
        pytest.param(is_label_value, _VALUE_GOOD, _VALUE_BAD, id="IsValidLabelValue"),
    ],
)
def test_kubernetes_good_and_bad_values(check: object, good: list[str], bad: list[str]) -> None:
    assert callable(check)
    assert {v: check(v) for v in good} == {v: [] for v in good}
    assert [v for v in bad if not check(v)] == []


SUBDOMAIN_REGEX = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("value", "messages"),
    [
        ("a/b", [SUBDOMAIN_REGEX]),
        ("a" * 254, ["must be no more than 253 characters"]),
        ("A" * 254, ["must be no more than 253 characters", SUBDOMAIN_REGEX]),
    ],
)
def test_subdomain_messages_are_kubernetes_verbatim(value: str, messages: list[str]) -> None:
    assert is_dns1123_subdomain(value) == messages


def test_qualified_name_messages_are_kubernetes_verbatim() -> None:
    assert is_qualified_name("a,b") == [QUALIFIED_NAME_PART]
    assert is_qualified_name("/x") == ["prefix part must be non-empty"]
    assert is_qualified_name("x/") == ["name part must be non-empty", QUALIFIED_NAME_PART]
    assert is_qualified_name("a/b/c")[0].startswith("a qualified name must consist of")
    assert is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]


def test_a_namespace_with_dots_is_told_so() -> None:
    assert is_dns1123_label("foo.bar") == ["must not contain dots"]


@pytest.mark.parametrize(
    ("kind", "name", "prefix", "ok"),
    [
        ("Pod", "web.example", False, True),
        ("Service", "web.example", False, False),  # ValidateServiceName: a DNS-1035 label
        ("Service", "1web", False, False),
        ("Pod", "web-", True, True),  # maskTrailingDash: a generateName may end in '-'
        ("Pod", "web-", False, False),
        ("Pod", "-", True, False),
        ("Service", "web-", True, True),
    ],
)
def test_name_rule_by_kind(kind: str, name: str, prefix: bool, ok: bool) -> None:
    assert (name_errors(kind, name, prefix=prefix) == []) is ok


def _meta(
    kind: str = "Pod",
    name: str = "p",
    generate_name: str = "",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> list[tuple[str, str]]:
    return metadata_errors(kind, name, generate_name, namespace, labels or {}, annotations or {})


def test_metadata_paths_and_kubernetes_field_messages() -> None:
    assert _meta() == []
    assert _meta(name="", generate_name="web-") == []
    assert _meta(name="") == [
        ("$.metadata.name", "metadata.name: Required value: name or generateName is required")
    ]
    [(path, message)] = _meta(labels={"a,b": "x"})
    assert path == "$.metadata.labels['a,b']"
    assert message == f'metadata.labels: Invalid value: "a,b": {QUALIFIED_NAME_PART}'
    [(path, message)] = _meta(labels={"ok": "x y"})
    assert (path, message.split(": ")[:2]) == (
        "$.metadata.labels['ok']",
        ["metadata.labels", "Invalid value"],
    )
    assert [p for p, _ in _meta(namespace="Ünicode")] == ["$.metadata.namespace"]
    assert [p for p, _ in _meta(name="a/b")] == ["$.metadata.name"]
    [(_, long_name)] = _meta(name="a" * 10_000)
    assert long_name.startswith('metadata.name: Invalid value: "aaaa') and len(long_name) < 200
    assert [p for p, _ in _meta(annotations={"!x": ""})] == ["$.metadata.annotations['!x']"]
    # Annotation keys are qualified names once lower-cased (objectmeta.go ValidateAnnotations).
    assert _meta(annotations={"Example.COM/Key": "v"}) == []


def test_total_annotation_size_is_256_kib_of_keys_and_values() -> None:
    at_limit = {"a": "b" * (TOTAL_ANNOTATION_SIZE_LIMIT - 1)}
    assert _meta(annotations=at_limit) == []
    over = {"a": "b" * TOTAL_ANNOTATION_SIZE_LIMIT}
    assert _meta(annotations=over) == [
        ("$.metadata.annotations", "metadata.annotations: Too long: must have at most 262144 bytes")
    ]


@pytest.mark.parametrize(
    ("gates", "node", "old", "errors"),
    [
        (["example.com/foo", "bar"], "", None, []),
        (["foo", "foo"], "", None, ['spec.schedulingGates[1]: Duplicate value: "foo"']),
        (
            ["a,b"],
            "",
            None,
            [f'spec.schedulingGates[0]: Invalid value: "a,b": {QUALIFIED_NAME_PART}'],
        ),
        (
            ["foo"],
            "n1",
            None,
            ["spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"],
        ),
        (["foo"], "", ["foo", "bar"], []),  # a deletion
        ([], "", ["foo"], []),
        (
            ["foo", "baz"],
            "",
            ["foo"],
            [
                "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found "
                "new scheduling gate 'baz'"
            ],
        ),
    ],
)
def test_scheduling_gates(
    gates: list[str], node: str, old: list[str] | None, errors: list[str]
) -> None:
    # pkg/apis/core/validation/validation_test.go TestValidatePodCreateWithSchedulingGates,
    # TestValidatePodUpdate ("add a scheduling gate", "remove a scheduling gate").
    assert [m for _, m in scheduling_gates_errors(gates, node, old)] == errors


# Asked again, the verdicts come from what was remembered the first time.
@pytest.mark.parametrize("asked", ["first", "again"])
def test_metadata_is_valid_exactly_when_every_kubernetes_check_passes(asked: str) -> None:
    # Every good and bad value of Kubernetes' tables above, as a namespace, a label key, a label
    # value and an annotation key: metadata_errors finds nothing exactly when the rule's own
    # check finds nothing, whether or not it judged the same string before.
    cases: list[tuple[dict[str, object], bool]] = []
    for ns in {*_LABEL_GOOD, *_LABEL_BAD, "a.b"} - {""}:
        cases.append(({"namespace": ns}, not is_dns1123_label(ns)))
    for key in [*_QUALIFIED_GOOD, *_QUALIFIED_BAD]:
        cases.append(({"labels": {key: "v"}}, not is_qualified_name(key)))
        lowered = key.lower()
        cases.append(({"annotations": {key: "v"}}, not is_qualified_name(lowered)))
    for value in [*_VALUE_GOOD, *_VALUE_BAD]:
        cases.append(({"labels": {"k": value}}, not is_label_value(value)))
    cases.append(({"labels": {"ok": "v", "a,b": "v"}}, False))  # one bad label among good ones
    cases.append(({"annotations": {"a": "b" * (TOTAL_ANNOTATION_SIZE_LIMIT - 1)}}, True))
    cases.append(({"annotations": {"a": "b" * TOTAL_ANNOTATION_SIZE_LIMIT}}, False))
    for fields, valid in cases:
        assert (_meta(**fields) == []) is valid, (asked, fields)
