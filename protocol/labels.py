"""Label selectors, node selector terms and tolerations, with Kubernetes' matching rules.

Sources (Kubernetes v1.14): k8s.io/apimachinery/pkg/labels/selector.go,
pkg/apis/core/v1/helper/helpers.go (MatchNodeSelectorTerms, NodeSelectorRequirementsAsSelector,
ToleratesTaint). Rules worth remembering:

- A ``None`` label selector matches nothing; an empty one (``{}``) matches everything.
- ``NotIn`` and ``DoesNotExist`` match a missing key.
- A requirement that is invalid (``In`` without values, ``Gt`` with a non-integer, a key that
  is not a qualified name, a value that is not a valid label value) makes its node selector
  term match nothing, instead of being an error. Integers parse as Go's ``strconv.ParseInt``.
- A node selector term with neither matchExpressions nor matchFields matches nothing; terms are
  ORed, the requirements within a term ANDed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from podium.protocol.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
)

__all__ = [
    "is_qualified_name",
    "is_valid_label_value",
    "label_selector_matches",
    "node_selector_requirement_matches",
    "node_selector_terms_match",
    "parse_int64",
    "selector_from_set_matches",
    "toleration_tolerates_taint",
    "tolerations_tolerate_taints",
]


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def parse_int64(value: str) -> int | None:
    """Go's ``strconv.ParseInt(value, 10, 64)``: sign and digits only, int64 range."""
    if not _DECIMAL.fullmatch(value):
        return None
    n = int(value)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def is_qualified_name(key: str) -> bool:
    """apimachinery ``validation.IsQualifiedName``: ``[prefix/]name`` (a valid label key)."""
    parts = key.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return False
    name = parts[-1]
    return 0 < len(name) <= 63 and _QUALIFIED_NAME.fullmatch(name) is not None


def is_valid_label_value(value: str) -> bool:
    """apimachinery ``validation.IsValidLabelValue``: empty, or <= 63 qualified-name characters."""
    return value == "" or (len(value) <= 63 and _QUALIFIED_NAME.fullmatch(value) is not None)


def _requirement_matches(
    key: str, operator: str, values: Sequence[str], labels: Mapping[str, str]
) -> bool | None:
    """Whether one requirement matches; ``None`` when the requirement itself is invalid."""
    # labels.NewRequirement rejects an invalid key or value: the selector is then an error,
    # which every scheduler caller treats as "matches nothing".
    if not is_qualified_name(key) or not all(is_valid_label_value(v) for v in values):
        return None
    present = key in labels
    if operator == "In":
        if not values:
            return None
        return present and labels[key] in values
    if operator == "NotIn":
        if not values:
            return None
        return not present or labels[key] not in values
    if operator == "Exists":
        return None if values else present
    if operator == "DoesNotExist":
        return None if values else not present
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            return None
        bound = parse_int64(values[0])
        if bound is None:
            return None
        if not present:
            return False
        have = parse_int64(labels[key])
        if have is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return None


def selector_from_set_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """``labels.SelectorFromSet(selector).Matches(labels)``: every pair present (empty matches all)."""
    return all(labels.get(k) == v for k, v in selector.items())


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``.

    ``None`` matches nothing, ``{}`` everything; an invalid requirement matches nothing
    (Kubernetes returns an error there, and callers treat the error as "no match").
    """
    if selector is None:
        return False
    if not selector_from_set_matches(selector.match_labels, labels):
        return False
    for req in selector.match_expressions:
        if _requirement_matches(req.key, req.operator, req.values, labels) is not True:
            return False
    return True


def label_selector_is_valid(selector: LabelSelector) -> bool:
    """Whether every requirement of a selector is well formed."""
    return all(_valid(r) for r in selector.match_expressions)


def _valid(req: LabelSelectorRequirement) -> bool:
    return _requirement_matches(req.key, req.operator, req.values, {}) is not None


def node_selector_requirement_matches(
    req: NodeSelectorRequirement, labels: Mapping[str, str]
) -> bool | None:
    """One node selector requirement against a label map; ``None`` when it is invalid."""
    return _requirement_matches(req.key, req.operator, req.values, labels)


def _field_requirement_matches(req: NodeSelectorRequirement, fields: Mapping[str, str]) -> bool:
    # NodeSelectorRequirementsAsFieldSelector: only In/NotIn with exactly one value.
    if req.operator not in ("In", "NotIn") or len(req.values) != 1:
        return False
    have = fields.get(req.key)
    if req.operator == "In":
        return have == req.values[0]
    return have != req.values[0]


def node_fields(node: Node) -> dict[str, str]:
    """The node fields a matchFields requirement may name (v1.14: ``metadata.name``)."""
    return {"metadata.name": node.metadata.name}


def node_selector_term_matches(
    term: NodeSelectorTerm, labels: Mapping[str, str], fields: Mapping[str, str]
) -> bool:
    """One term: all its requirements hold. An empty term matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    for req in term.match_expressions:
        if _requirement_matches(req.key, req.operator, req.values, labels) is not True:
            return False
    return all(_field_requirement_matches(req, fields) for req in term.match_fields)


def node_selector_terms_match(terms: Sequence[NodeSelectorTerm], node: Node) -> bool:
    """``v1helper.MatchNodeSelectorTerms``: the terms are ORed."""
    fields = node_fields(node)
    labels = node.metadata.labels
    return any(node_selector_term_matches(t, labels, fields) for t in terms)


def toleration_tolerates_taint(toleration: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint``: empty effect/key are wildcards; Exists ignores the value."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def tolerations_tolerate_taints(
    tolerations: Sequence[Toleration],
    taints: Sequence[Taint],
    effects: frozenset[str] | None = None,
) -> bool:
    """Every taint (whose effect is in ``effects``, when given) is tolerated by some toleration."""
    for taint in taints:
        if effects is not None and taint.effect not in effects:
            continue
        if not any(toleration_tolerates_taint(t, taint) for t in tolerations):
            return False
    return True
