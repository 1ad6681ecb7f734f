"""Label selector strings (protocol/labels.py ``parse_selector``).

Rows marked ``selector_test.go`` are ported from
k8s.io/apimachinery/pkg/labels/selector_test.go@v1.14 (TestSelectorParse, TestSetSelectorParser,
TestLexer, TestLexerSequence, TestSelectorMatches). Kubernetes' ``Parse`` returns requirements
sorted by key with sorted values; the conversion to a LabelSelector follows metav1's
``ParseToLabelSelector`` (``a!=b`` becomes ``a NotIn [b]``). ``>`` and ``<`` parse in Kubernetes
but a LabelSelector cannot express them, so Podium rejects them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from podium.protocol.labels import _lex, _Token, label_selector_matches, parse_selector
from podium.protocol.objects import LabelSelector, LabelSelectorRequirement


def req(key: str, operator: str, *values: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator=operator, values=list(values))  # type: ignore[arg-type]  # operator: a str, not the Literal


def sel(labels: dict[str, str] | None = None, *exprs: LabelSelectorRequirement) -> LabelSelector:
    return LabelSelector(match_labels=labels or {}, match_expressions=list(exprs))


@dataclass(frozen=True)
class Good:
    name: str
    text: str
    want: LabelSelector


GOOD = [
    # TestSelectorParse testGoodStrings (selector_test.go)
    Good("equals list", "x=a,y=b,z=c", sel({"x": "a", "y": "b", "z": "c"})),
    Good("empty selects everything", "", sel()),
    Good("not equals is NotIn", "x!=a,y=b", sel({"y": "b"}, req("x", "NotIn", "a"))),
    Good("empty value", "x=", sel({"x": ""})),
    Good("empty value then space", "x= ", sel({"x": ""})),
    Good("two empty values", "x=,z= ", sel({"x": "", "z": ""})),
    Good("two empty values with spaces", "x= ,z= ", sel({"x": "", "z": ""})),
    Good("does not exist", "!x", sel({}, req("x", "DoesNotExist"))),
    # TestSetSelectorParser (selector_test.go)
    Good("carriage return is whitespace", "\rx", sel({}, req("x", "Exists"))),
    Good(
        "prefixed key exists",
        "this-is-a-dns.domain.com/key-with-dash",
        sel({}, req("this-is-a-dns.domain.com/key-with-dash", "Exists")),
    ),
    Good(
        "prefixed key in",
        "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        sel({}, req("this-is-another-dns.domain.com/key-with-dash", "In", "so", "what")),
    ),
    Good(
        "dotted values",
        "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
        sel({}, req("0.1.2.domain/99", "NotIn", "10.10.100.1", "tick.tack.clock")),
    ),
    Good("spaces and tab around in", "foo  in\t (abc)", sel({}, req("foo", "In", "abc"))),
    Good("newline after notin", "x notin\n (abc)", sel({}, req("x", "NotIn", "abc"))),
    Good("tabs after notin", "x  notin\t\t\t(abc,def)", sel({}, req("x", "NotIn", "abc", "def"))),
    Good("in two values", "x in (abc,def)", sel({}, req("x", "In", "abc", "def"))),
    Good("trailing comma is an empty value", "x in (abc,)", sel({}, req("x", "In", "", "abc"))),
    Good("empty parentheses are the empty value", "x in ()", sel({}, req("x", "In", ""))),
    Good(
        "mixed, sorted by key",
        "x notin (abc,,def),bar,z in (),w",
        sel(
            {},
            req("bar", "Exists"),
            req("w", "Exists"),
            req("x", "NotIn", "", "abc", "def"),
            req("z", "In", ""),
        ),
    ),
    Good("exists and in", "x,y in (a)", sel({}, req("x", "Exists"), req("y", "In", "a"))),
    Good("equals", "x=a", sel({"x": "a"})),
    Good("equals and not equals", "x=a,y!=b", sel({"x": "a"}, req("y", "NotIn", "b"))),
    Good(
        "equals, not equals, in",
        "x=a,y!=b,z in (h,i,j)",
        sel({"x": "a"}, req("y", "NotIn", "b"), req("z", "In", "h", "i", "j")),
    ),
    Good("notin with a space inside", "x notin ( )", sel({}, req("x", "NotIn", ""))),
    Good("leading comma in values", "x notin (, a)", sel({}, req("x", "NotIn", "", "a"))),
    Good("trailing space", "a ", sel({}, req("a", "Exists"))),
    Good(
        "in and notin are values inside parentheses",
        "a in (x,y,notin, z,in)",
        sel({}, req("a", "In", "in", "notin", "x", "y", "z")),
    ),
    # TestSelectorMatches (selector_test.go): "in and notin in exactMatch"
    Good("notin as a key, in as a value", "notin=in", sel({"notin": "in"})),
    # Podium's own rows
    Good("double equals", "a==b", sel({"a": "b"})),
    Good(
        "every operator in one selector",
        "app=web,tier!=db,env in (a,b),!legacy",
        sel(
            {"app": "web"},
            req("env", "In", "a", "b"),
            req("legacy", "DoesNotExist"),
            req("tier", "NotIn", "db"),
        ),
    ),
    Good(
        "whitespace everywhere",
        "  app = web ,\ttier != db , env in ( a , b ) , ! legacy ",
        sel(
            {"app": "web"},
            req("env", "In", "a", "b"),
            req("legacy", "DoesNotExist"),
            req("tier", "NotIn", "db"),
        ),
    ),
    Good("only whitespace", " \t\n", sel()),
    Good("duplicate values collapse", "a in (b,b,a)", sel({}, req("a", "In", "a", "b"))),
    Good("a repeated equal pair", "a=b,a=b", sel({"a": "b"})),
    Good(
        "a second value for a key stays a constraint",
        "a=b,a=c",
        sel({"a": "b"}, req("a", "In", "c")),
    ),
    Good("in as a key", "in in (in)", sel({}, req("in", "In", "in"))),
    Good("prefixed key equals", "example.com/tier=db", sel({"example.com/tier": "db"})),
    Good("63-character value", "a=" + "v" * 63, sel({"a": "v" * 63})),
]


@pytest.mark.parametrize("case", GOOD, ids=lambda c: c.name)
def test_parse_good_selectors(case: Good) -> None:
    assert parse_selector(case.text) == case.want


@dataclass(frozen=True)
class Bad:
    name: str
    text: str
    message: str


BAD = [
    # TestSelectorParse testBadStrings (selector_test.go)
    Bad("double bar", "x=a||y=b", "invalid label value 'a||y' for key 'x' at position 2"),
    Bad("two double equals", "x==a==b", "found '==' at position 4, expected: ',' or end of string"),
    Bad(
        "does not exist with a value",
        "!x=a",
        "found '=' at position 2, expected: ',' or end of string",
    ),
    Bad(
        "less than a word",
        "x<a",
        "for '>' and '<' the value must be an integer (key 'x' at position 0)",
    ),
    # TestSetSelectorParser invalid rows (selector_test.go)
    Bad("double comma", "x,,y", "found ',' at position 2, expected: identifier after ','"),
    Bad(
        "leading comma",
        ",x,y",
        "found ',' at position 0, expected: !, identifier, or end of string",
    ),
    Bad(
        "misspelled operator",
        "x nott in (y)",
        "found 'nott' at position 2, expected: '=', '!=', '==', 'in', 'notin'",
    ),
    Bad(
        "trailing comma",
        "a in (xyz),",
        "found end of string at position 11, expected: identifier after ','",
    ),
    Bad(
        "no comma between requirements",
        "a in (xyz)b notin ()",
        "found 'b' at position 10, expected: ',' or end of string",
    ),
    Bad(
        "no comma between values",
        "a in (xyz abc)",
        "found 'abc' at position 10, expected: ',' or ')'",
    ),
    Bad(
        "unclosed parenthesis",
        "a notin(",
        "found end of string at position 8, expected: ',', ')' or identifier",
    ),
    Bad(
        "parenthesis without operator",
        "a (",
        "found '(' at position 2, expected: '=', '!=', '==', 'in', 'notin'",
    ),
    Bad(
        "lone parenthesis",
        "(",
        "found '(' at position 0, expected: !, identifier, or end of string",
    ),
    # Operators Kubernetes parses but a LabelSelector cannot hold
    Bad("greater than", "x>1", "operator '>' of key 'x' at position 0 is not supported"),
    Bad("less than", "x>1,z<5", "operator '>' of key 'x' at position 0 is not supported"),
    # Podium's own rows
    Bad("in without parentheses", "a in b", "found 'b' at position 5, expected: '('"),
    Bad(
        "unclosed value list", "a in (b", "found end of string at position 7, expected: ',' or ')'"
    ),
    Bad(
        "operator as a value",
        "a in (=)",
        "found '=' at position 6, expected: ',', ')' or identifier",
    ),
    Bad(
        "operator after a comma in values",
        "a in (b,=)",
        "found '=' at position 8, expected: ',' or identifier",
    ),
    Bad("operator as an exact value", "a=(", "found '(' at position 2, expected: identifier"),
    Bad("two bangs", "!!a", "found '!' at position 1, expected: identifier"),
    Bad("uppercase-invalid key", "Foo_=1", "invalid label key 'Foo_' at position 0"),
    Bad("empty prefix", "/a=1", "invalid label key '/a' at position 0"),
    Bad("64-character name", "a" * 64, f"invalid label key '{'a' * 64}' at position 0"),
    Bad("bad value", "a=b_", "invalid label value 'b_' for key 'a' at position 2"),
    Bad(
        "bad value in a set",
        "a in (ok, -no)",
        "invalid label value '-no' for key 'a' at position 10",
    ),
    Bad("64-character value", "a=" + "v" * 64, "invalid label value"),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.name)
def test_parse_bad_selectors(case: Bad) -> None:
    with pytest.raises(ValueError, match=r"^couldn't parse the label selector ") as info:
        parse_selector(case.text)
    assert case.message in str(info.value)
    assert f'"{case.text}"' in str(info.value)


# --------------------------------------------------------------------------- lexer

LEXER = [
    # TestLexer (selector_test.go)
    ("", _Token.END),
    (",", _Token.COMMA),
    ("notin", _Token.NOT_IN),
    ("in", _Token.IN),
    ("=", _Token.EQUALS),
    ("==", _Token.DOUBLE_EQUALS),
    (">", _Token.GREATER_THAN),
    ("<", _Token.LESS_THAN),
    # "Note that Lex returns the longest valid token found"
    ("!", _Token.DOES_NOT_EXIST),
    ("!=", _Token.NOT_EQUALS),
    ("(", _Token.OPEN_PAR),
    (")", _Token.CLOSED_PAR),
    # "Non-"special" characters are considered part of an identifier"
    ("~", _Token.IDENTIFIER),
    ("||", _Token.IDENTIFIER),
]


@pytest.mark.parametrize(("text", "token"), LEXER, ids=[repr(t) for t, _ in LEXER])
def test_lexer_single_tokens(text: str, token: _Token) -> None:
    first = _lex(text)[0]
    assert first.token is token
    assert first.literal == text


ID, COMMA, OPEN, CLOSE = _Token.IDENTIFIER, _Token.COMMA, _Token.OPEN_PAR, _Token.CLOSED_PAR
LEXER_SEQUENCES = [
    # TestLexerSequence (selector_test.go)
    ("key in ( value )", [ID, _Token.IN, OPEN, ID, CLOSE]),
    ("key notin ( value )", [ID, _Token.NOT_IN, OPEN, ID, CLOSE]),
    ("key in ( value1, value2 )", [ID, _Token.IN, OPEN, ID, COMMA, ID, CLOSE]),
    ("key", [ID]),
    ("!key", [_Token.DOES_NOT_EXIST, ID]),
    ("()", [OPEN, CLOSE]),
    ("x in (),y", [ID, _Token.IN, OPEN, CLOSE, COMMA, ID]),
    (
        "== != (), = notin",
        [_Token.DOUBLE_EQUALS, _Token.NOT_EQUALS, OPEN, CLOSE, COMMA, _Token.EQUALS, _Token.NOT_IN],
    ),
    ("key>2", [ID, _Token.GREATER_THAN, ID]),
    ("key<1", [ID, _Token.LESS_THAN, ID]),
    # Podium's own: the longest symbol wins, then the rest
    ("===", [_Token.DOUBLE_EQUALS, _Token.EQUALS]),
    ("!==", [_Token.NOT_EQUALS, _Token.EQUALS]),
    ("=!", [_Token.EQUALS, _Token.DOES_NOT_EXIST]),
]


@pytest.mark.parametrize(("text", "tokens"), LEXER_SEQUENCES, ids=[t for t, _ in LEXER_SEQUENCES])
def test_lexer_sequences(text: str, tokens: list[_Token]) -> None:
    items = _lex(text)
    assert [item.token for item in items] == [*tokens, _Token.END]


def test_lexer_positions() -> None:
    items = _lex(" a  in\t(b,c)")
    assert [(i.literal, i.position) for i in items] == [
        ("a", 1),
        ("in", 4),
        ("(", 7),
        ("b", 8),
        (",", 9),
        ("c", 10),
        (")", 11),
        ("", 12),
    ]


# --------------------------------------------------------------------------- matching

MATCHES = [
    # TestSelectorMatches (selector_test.go), rows without > and <
    ("", {"x": "y"}, True),
    ("x=y", {"x": "y"}, True),
    ("x=y,z=w", {"x": "y", "z": "w"}, True),
    ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
    ("notin=in", {"notin": "in"}, True),
    ("x", {"x": "z"}, True),
    ("!x", {"y": "z"}, True),
    ("x=z", {}, False),
    ("x=y", {"x": "z"}, False),
    ("x=y,z=w", {"x": "w", "z": "w"}, False),
    ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
    ("x", {"y": "z"}, False),
    ("!x", {"x": "z"}, False),
    ("foo=bar", {"foo": "bar", "baz": "blah"}, True),
    ("baz=blah", {"foo": "bar", "baz": "blah"}, True),
    ("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}, True),
    ("foo=blah", {"foo": "bar", "baz": "blah"}, False),
    ("baz=bar", {"foo": "bar", "baz": "blah"}, False),
    ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    # Podium's own: != and notin match a missing key; a second value for a key never matches
    ("x!=y", {}, True),
    ("x notin (a,b)", {"x": "c"}, True),
    ("x in (a,b)", {"x": "b"}, True),
    ("x in (a,b)", {}, False),
    ("a=b,a=c", {"a": "b"}, False),
    ("a=b,a=c", {"a": "c"}, False),
]


@pytest.mark.parametrize(
    ("text", "labels", "want"), MATCHES, ids=[f"{t!r}-{lb}" for t, lb, _ in MATCHES]
)
def test_parsed_selectors_match_as_kubernetes(
    text: str, labels: dict[str, str], want: bool
) -> None:
    assert label_selector_matches(parse_selector(text), labels) is want


def test_parse_is_deterministic() -> None:
    # TestDeterministicParse (selector_test.go)
    assert parse_selector("x=a,a=x") == parse_selector("a=x,x=a")
