"""The compiled label selector: LabelSelectorAsSelector's rules, matched many times."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest

from podium.protocol.labels import (
    NOTHING,
    label_selector_as_selector,
    label_selector_matches,
)
from podium.protocol.objects import LabelSelector, LabelSelectorRequirement


def req(key: str, operator: str, *values: str) -> LabelSelectorRequirement:
    return LabelSelectorRequirement(key=key, operator=operator, values=list(values))  # type: ignore[arg-type]  # operator: a Literal, spelled as Kubernetes does


@dataclass(frozen=True)
class Case:
    name: str
    selector: LabelSelector | None
    labels: dict[str, str]
    want: bool


APP_WEB = {"app": "web", "tier": "front"}

CASES = [
    Case("nil selects nothing", None, APP_WEB, False),
    Case("nil selects nothing, not even no labels", None, {}, False),
    Case("empty selects everything", LabelSelector(), APP_WEB, True),
    Case("empty selects a pod without labels", LabelSelector(), {}, True),
    Case("matchLabels pair present", LabelSelector(match_labels={"app": "web"}), APP_WEB, True),
    Case("matchLabels value differs", LabelSelector(match_labels={"app": "db"}), APP_WEB, False),
    Case(
        "matchLabels pairs are ANDed",
        LabelSelector(match_labels={"app": "web", "tier": "back"}),
        APP_WEB,
        False,
    ),
    Case("In", LabelSelector(match_expressions=[req("app", "In", "db", "web")]), APP_WEB, True),
    Case("In, key missing", LabelSelector(match_expressions=[req("x", "In", "a")]), APP_WEB, False),
    Case("NotIn", LabelSelector(match_expressions=[req("app", "NotIn", "web")]), APP_WEB, False),
    Case(
        "NotIn matches a missing key",
        LabelSelector(match_expressions=[req("x", "NotIn", "a")]),
        APP_WEB,
        True,
    ),
    Case("Exists", LabelSelector(match_expressions=[req("tier", "Exists")]), APP_WEB, True),
    Case("Exists, key missing", LabelSelector(match_expressions=[req("x", "Exists")]), {}, False),
    Case(
        "DoesNotExist",
        LabelSelector(match_expressions=[req("tier", "DoesNotExist")]),
        APP_WEB,
        False,
    ),
    Case(
        "DoesNotExist matches a missing key",
        LabelSelector(match_expressions=[req("x", "DoesNotExist")]),
        APP_WEB,
        True,
    ),
    Case(
        "labels and expressions are ANDed",
        LabelSelector(match_labels={"app": "web"}, match_expressions=[req("tier", "In", "back")]),
        APP_WEB,
        False,
    ),
    Case(
        "In without values is invalid: the selector selects nothing",
        LabelSelector(match_expressions=[req("x", "NotIn", "a"), req("app", "In")]),
        APP_WEB,
        False,
    ),
    Case(
        "Exists with values is invalid",
        LabelSelector(match_expressions=[req("app", "Exists", "web")]),
        APP_WEB,
        False,
    ),
    Case(
        "an invalid key is invalid",
        LabelSelector(match_expressions=[req("bad key", "DoesNotExist")]),
        APP_WEB,
        False,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_selector_matches(case: Case) -> None:
    selector = label_selector_as_selector(case.selector)
    assert selector.matches(case.labels) is case.want
    assert selector.matches(case.labels) is case.want  # compiled once, matched again
    assert label_selector_matches(case.selector, case.labels) is case.want


def test_key_names_what_is_selected() -> None:
    web = LabelSelector(
        match_labels={"app": "web", "tier": "front"},
        match_expressions=[req("env", "In", "a", "b")],
    )
    same = LabelSelector(
        match_labels={"tier": "front", "app": "web"},
        match_expressions=[req("env", "In", "b", "a")],
    )
    assert label_selector_as_selector(web).key == label_selector_as_selector(same).key
    assert label_selector_as_selector(web).key != label_selector_as_selector(LabelSelector()).key
    assert label_selector_as_selector(None) is NOTHING
    assert NOTHING.key is None
    assert label_selector_as_selector(LabelSelector()).key is not None
