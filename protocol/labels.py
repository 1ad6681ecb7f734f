"""Label selectors, node selector terms and tolerations, with Kubernetes' matching rules.

Sources (Kubernetes v1.14): k8s.io/apimachinery/pkg/labels/selector.go,
pkg/apis/core/v1/helper/helpers.go (MatchNodeSelectorTerms, NodeSelectorRequirementsAsSelector,
ToleratesTaint). Rules worth remembering:

- A ``None`` label selector matches nothing; an empty one (``{}``) matches everything.
  :class:`Selector` is a LabelSelector compiled once (``LabelSelectorAsSelector``) for matching
  against many label sets; :func:`label_selector_matches` compiles and matches once.
- ``NotIn`` and ``DoesNotExist`` match a missing key.
- A requirement that is invalid (``In`` without values, ``Gt`` with a non-integer, a key that
  is not a qualified name, a value that is not a valid label value) makes its node selector
  term match nothing, instead of being an error. Integers parse as Go's ``strconv.ParseInt``.
- A node selector term with neither matchExpressions nor matchFields matches nothing; terms are
  ORed, the requirements within a term ANDed.

:func:`parse_selector` reads the selector string syntax (``app=web,env in (a,b),!legacy``) of
selector.go's ``Parse`` into a LabelSelector, as metav1's ``ParseToLabelSelector`` does.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple

from podium.protocol.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
)

__all__ = [
    "NOTHING",
    "Selector",
    "is_qualified_name",
    "is_valid_label_value",
    "label_selector_as_selector",
    "label_selector_is_valid",
    "label_selector_matches",
    "node_fields",
    "node_selector_requirement_matches",
    "node_selector_term_matches",
    "node_selector_terms_match",
    "parse_int64",
    "parse_selector",
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


def label_selector_is_valid(selector: LabelSelector) -> bool:
    """Whether every requirement of a selector is well formed."""
    return all(_valid(r) for r in selector.match_expressions)


def _valid(req: LabelSelectorRequirement) -> bool:
    return _requirement_matches(req.key, req.operator, req.values, {}) is not None


class Selector:
    """A LabelSelector compiled for matching (apimachinery's ``labels.Selector``).

    Made by :func:`label_selector_as_selector`, which checks the requirements once, so that
    :meth:`matches` is a walk over tuples: the form for a selector matched against many label
    sets (an affinity term against every pod of the cluster, a spread constraint against
    every pod of a node). Requirements are ANDed: the ``matchLabels`` pairs, then the
    ``matchExpressions`` (In, NotIn, Exists, DoesNotExist) in order.
    """

    __slots__ = ("_expressions", "_labels", "_nothing")

    def __init__(
        self,
        labels: tuple[tuple[str, str], ...] = (),
        expressions: tuple[tuple[str, str, frozenset[str]], ...] = (),
        *,
        nothing: bool = False,
    ) -> None:
        self._labels = labels
        self._expressions = expressions
        self._nothing = nothing

    @property
    def key(self) -> Hashable:
        """What the selector selects, hashable: equal keys select alike (``None`` for a
        selector that matches nothing). For caches kept per selector."""
        return None if self._nothing else (self._labels, self._expressions)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``Selector.Matches``: whether ``labels`` satisfy every requirement."""
        if self._nothing:
            return False
        for key, value in self._labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self._expressions:
            if operator == "In":
                if labels.get(key) not in values:
                    return False
            elif operator == "NotIn":
                have = labels.get(key)
                if have is not None and have in values:
                    return False
            elif operator == "Exists":
                if key not in labels:
                    return False
            elif key in labels:  # DoesNotExist
                return False
        return True


NOTHING = Selector(nothing=True)
"""``labels.Nothing()``: what a ``None`` LabelSelector, or one with an invalid requirement,
compiles to."""


def label_selector_as_selector(selector: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: ``None`` matches nothing, ``{}`` everything.

    A requirement that is not well formed (:func:`label_selector_is_valid`) makes the whole
    selector match nothing: Kubernetes returns an error there, and the callers that do not
    check validity first treat the error as "no match".
    """
    if selector is None:
        return NOTHING
    requirements = selector.match_expressions
    if requirements and not label_selector_is_valid(selector):
        return NOTHING
    # Sorted, so that the key does not depend on the order of the pairs; most selectors have
    # one pair or none, and :func:`label_selector_matches` compiles for a single match.
    pairs = selector.match_labels.items()
    return Selector(
        tuple(sorted(pairs)) if len(pairs) > 1 else tuple(pairs),
        tuple((r.key, r.operator, frozenset(r.values)) for r in requirements)
        if requirements
        else (),
    )


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``, for a selector used once."""
    return label_selector_as_selector(selector).matches(labels)


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


def node_fields(name: str) -> dict[str, str]:
    """The fields of the node ``name`` a matchFields requirement may name (v1.14:
    ``metadata.name``)."""
    return {"metadata.name": name}


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


def node_selector_terms_match(
    terms: Sequence[NodeSelectorTerm], labels: Mapping[str, str], fields: Mapping[str, str]
) -> bool:
    """``v1helper.MatchNodeSelectorTerms(terms, nodeLabels, nodeFields)``: the terms are ORed."""
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


# --------------------------------------------------------------------------- selector strings


class _Token(enum.Enum):
    """The lexer's tokens (selector.go ``Token``); the value is how a message names them."""

    END = "end of string"
    CLOSED_PAR = "')'"
    COMMA = "','"
    DOES_NOT_EXIST = "'!'"
    DOUBLE_EQUALS = "'=='"
    EQUALS = "'='"
    GREATER_THAN = "'>'"
    IDENTIFIER = "identifier"
    IN = "'in'"
    LESS_THAN = "'<'"
    NOT_EQUALS = "'!='"
    NOT_IN = "'notin'"
    OPEN_PAR = "'('"


_SYMBOLS = {
    ")": _Token.CLOSED_PAR,
    ",": _Token.COMMA,
    "!": _Token.DOES_NOT_EXIST,
    "==": _Token.DOUBLE_EQUALS,
    "=": _Token.EQUALS,
    ">": _Token.GREATER_THAN,
    "<": _Token.LESS_THAN,
    "!=": _Token.NOT_EQUALS,
    "(": _Token.OPEN_PAR,
}
_KEYWORDS = {"in": _Token.IN, "notin": _Token.NOT_IN}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


class _Item(NamedTuple):
    token: _Token
    literal: str
    position: int

    def found(self) -> str:
        """``'==' at position 4``, for a message."""
        what = "end of string" if self.token is _Token.END else repr(self.literal)
        return f"found {what} at position {self.position}"


def _lex(text: str) -> list[_Item]:
    """Split a selector string into tokens (selector.go ``Lexer.Lex``), ending with END.

    Whitespace separates tokens; ``=!(),><`` start a symbol (the longest of ``==``/``!=`` or a
    single character); anything else runs to the next symbol or whitespace and is ``in``,
    ``notin`` or an identifier.
    """
    items: list[_Item] = []
    position, size = 0, len(text)
    while True:
        while position < size and text[position] in _WHITESPACE:
            position += 1
        if position == size:
            items.append(_Item(_Token.END, "", position))
            return items
        if text[position] in _SPECIAL:
            symbol = text[position : position + 2]
            if symbol not in ("==", "!="):
                symbol = text[position]
            items.append(_Item(_SYMBOLS[symbol], symbol, position))
            position += len(symbol)
            continue
        start = position
        while (
            position < size and text[position] not in _SPECIAL and text[position] not in _WHITESPACE
        ):
            position += 1
        literal = text[start:position]
        items.append(_Item(_KEYWORDS.get(literal, _Token.IDENTIFIER), literal, start))


class _Requirement(NamedTuple):
    key: str
    operator: str  # "=", "==", "!=", "in", "notin", "exists", "!", ">", "<"
    values: list[str]  # sorted and unique, as sets.String.List() gives them
    position: int


class _Parser:
    """selector.go ``Parser``: a recursive descent over the scanned tokens.

    ``in`` and ``notin`` are operators after a key but plain identifiers where a value (or a
    key) is expected: ``a in (in, notin)`` and ``notin=in`` are valid.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.items = _lex(text)
        self.index = 0

    def error(self, detail: str) -> ValueError:
        return ValueError(f'couldn\'t parse the label selector "{self.text}": {detail}')

    def _lookahead(self, *, values: bool = True) -> _Item:
        return self._as_value(self.items[self.index]) if values else self.items[self.index]

    def _consume(self, *, values: bool = True) -> _Item:
        item = self._lookahead(values=values)
        self.index += 1
        return item

    @staticmethod
    def _as_value(item: _Item) -> _Item:
        if item.token in (_Token.IN, _Token.NOT_IN):
            return item._replace(token=_Token.IDENTIFIER)
        return item

    def parse(self) -> list[_Requirement]:
        requirements: list[_Requirement] = []
        while True:
            item = self._lookahead()
            if item.token is _Token.END:
                return requirements
            if item.token not in (_Token.IDENTIFIER, _Token.DOES_NOT_EXIST):
                raise self.error(f"{item.found()}, expected: !, identifier, or end of string")
            requirements.append(self._requirement())
            item = self._consume()
            if item.token is _Token.END:
                return requirements
            if item.token is not _Token.COMMA:
                raise self.error(f"{item.found()}, expected: ',' or end of string")
            item = self._lookahead()
            if item.token not in (_Token.IDENTIFIER, _Token.DOES_NOT_EXIST):
                raise self.error(f"{item.found()}, expected: identifier after ','")

    def _requirement(self) -> _Requirement:
        # parseKeyAndInferOperator: [!] KEY, and "exists" when a comma or the end follows.
        item = self._consume()
        operator = ""
        if item.token is _Token.DOES_NOT_EXIST:
            operator = "!"
            item = self._consume()
        if item.token is not _Token.IDENTIFIER:
            raise self.error(f"{item.found()}, expected: identifier")
        key, position = item.literal, item.position
        if not is_qualified_name(key):
            raise self.error(
                f"invalid label key {key!r} at position {position}: a key is [prefix/]name, "
                "the name at most 63 characters of [-A-Za-z0-9_.] beginning and ending "
                "alphanumeric, the prefix a DNS subdomain"
            )
        if operator == "!" or self._lookahead().token in (_Token.END, _Token.COMMA):
            return self._checked(key, operator or "exists", {}, position)
        operator_item = self._consume(values=False)
        operator = {
            _Token.IN: "in",
            _Token.NOT_IN: "notin",
            _Token.EQUALS: "=",
            _Token.DOUBLE_EQUALS: "==",
            _Token.NOT_EQUALS: "!=",
            _Token.GREATER_THAN: ">",
            _Token.LESS_THAN: "<",
        }.get(operator_item.token, "")
        if not operator:
            raise self.error(f"{operator_item.found()}, expected: '=', '!=', '==', 'in', 'notin'")
        values = self._values() if operator in ("in", "notin") else self._exact_value()
        return self._checked(key, operator, values, position)

    def _values(self) -> dict[str, int]:
        """parseValues: ``( v1, v2 )``; an empty entry is the empty value ``""``."""
        item = self._consume()
        if item.token is not _Token.OPEN_PAR:
            raise self.error(f"{item.found()}, expected: '('")
        item = self._lookahead()
        if item.token is _Token.CLOSED_PAR:  # "()"
            self._consume()
            return {"": item.position}
        if item.token not in (_Token.IDENTIFIER, _Token.COMMA):
            raise self.error(f"{item.found()}, expected: ',', ')' or identifier")
        values = self._identifiers()
        item = self._consume()
        if item.token is not _Token.CLOSED_PAR:
            raise self.error(f"{item.found()}, expected: ')'")
        return values

    def _identifiers(self) -> dict[str, int]:
        """parseIdentifiersList: comma-separated, possibly empty, identifiers."""
        values: dict[str, int] = {}
        while True:
            item = self._consume()
            if item.token is _Token.IDENTIFIER:
                values.setdefault(item.literal, item.position)
                after = self._lookahead()
                if after.token is _Token.CLOSED_PAR:
                    return values
                if after.token is not _Token.COMMA:
                    raise self.error(f"{after.found()}, expected: ',' or ')'")
            elif item.token is _Token.COMMA:
                if not values:
                    values[""] = item.position  # "(,"
                after = self._lookahead()
                if after.token is _Token.CLOSED_PAR:
                    values.setdefault("", after.position)  # ",)"
                    return values
                if after.token is _Token.COMMA:
                    self._consume()
                    values.setdefault("", after.position)  # ",,"
            else:
                raise self.error(f"{item.found()}, expected: ',' or identifier")

    def _exact_value(self) -> dict[str, int]:
        """parseExactValue: one identifier, or nothing (the empty value) before ',' or the end."""
        item = self._lookahead()
        if item.token in (_Token.END, _Token.COMMA):
            return {"": item.position}
        item = self._consume()
        if item.token is not _Token.IDENTIFIER:
            raise self.error(f"{item.found()}, expected: identifier")
        return {item.literal: item.position}

    def _checked(
        self, key: str, operator: str, values: dict[str, int], position: int
    ) -> _Requirement:
        """NewRequirement's checks: valid label values; an integer for ``>``/``<``."""
        for value, at in values.items():
            if not is_valid_label_value(value):
                raise self.error(
                    f"invalid label value {value!r} for key {key!r} at position {at}: a value "
                    "is empty or at most 63 characters of [-A-Za-z0-9_.] beginning and ending "
                    "alphanumeric"
                )
        if operator in (">", "<") and (len(values) != 1 or parse_int64(next(iter(values))) is None):
            raise self.error(
                f"for '>' and '<' the value must be an integer (key {key!r} at position {position})"
            )
        return _Requirement(key, operator, sorted(values), position)


def parse_selector(text: str) -> LabelSelector:
    """Parse Kubernetes' label selector string syntax into a :class:`LabelSelector`.

    The syntax of ``labels.Parse`` (k8s.io/apimachinery/pkg/labels/selector.go@v1.14)::

        <selector>    ::= <requirement> | <requirement> "," <selector>
        <requirement> ::= [!] KEY [ ("in" | "notin") "(" VALUE {"," VALUE} ")"
                                  | ("=" | "==" | "!=") VALUE ]

    e.g. ``app=web,tier!=db,env in (a,b),!legacy``; whitespace between tokens is ignored, and
    an empty string (or only whitespace) selects everything. The result follows metav1's
    ``ParseToLabelSelector``: ``a=b`` and ``a==b`` go to ``matchLabels``; ``a in (x,y)``,
    ``a notin (x,y)``, ``a`` (Exists) and ``!a`` (DoesNotExist) to ``matchExpressions``, and
    ``a!=b`` becomes ``a NotIn [b]`` (same meaning: a missing key matches). Requirements are
    ordered by key and values sorted, as ``Parse`` orders them; a second ``a=c`` for a key
    already in ``matchLabels`` becomes ``a In [c]`` so that both still have to hold.

    Raises:
        ValueError: the text breaks the grammar (the message names the token and its
            position), a key is not a qualified name, a value not a valid label value, or the
            selector uses ``>``/``<``, which a LabelSelector cannot express.
    """
    parser = _Parser(text)
    requirements = sorted(parser.parse(), key=lambda r: r.key)
    match_labels: dict[str, str] = {}
    expressions: list[LabelSelectorRequirement] = []
    for r in requirements:
        if r.operator in ("=", "=="):
            value = r.values[0]
            if match_labels.setdefault(r.key, value) != value:
                expressions.append(
                    LabelSelectorRequirement(key=r.key, operator="In", values=[value])
                )
        elif r.operator == "in":
            expressions.append(LabelSelectorRequirement(key=r.key, operator="In", values=r.values))
        elif r.operator in ("notin", "!="):
            expressions.append(
                LabelSelectorRequirement(key=r.key, operator="NotIn", values=r.values)
            )
        elif r.operator == "exists":
            expressions.append(LabelSelectorRequirement(key=r.key, operator="Exists"))
        elif r.operator == "!":
            expressions.append(LabelSelectorRequirement(key=r.key, operator="DoesNotExist"))
        else:
            raise parser.error(
                f"operator {r.operator!r} of key {r.key!r} at position {r.position} is not "
                "supported: a label selector has =, ==, !=, in, notin, KEY and !KEY"
            )
    return LabelSelector(match_labels=match_labels, match_expressions=expressions)
