"""The zone key (pkg/util/node/node.go GetZoneKey, with the GA labels as a fallback)."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest

from podium.actors.framework.zones import (
    LABEL_REGION_BETA,
    LABEL_REGION_GA,
    LABEL_ZONE_BETA,
    LABEL_ZONE_GA,
    zone_key,
)


@dataclass(frozen=True)
class Case:
    name: str
    labels: dict[str, str]
    want: str


CASES = [
    Case("no labels", {}, ""),
    Case("unrelated labels", {"zone": "z1"}, ""),
    Case("beta zone only", {LABEL_ZONE_BETA: "z1"}, ":\x00:z1"),
    Case("beta region only", {LABEL_REGION_BETA: "r1"}, "r1:\x00:"),
    Case("beta region and zone", {LABEL_REGION_BETA: "r1", LABEL_ZONE_BETA: "z1"}, "r1:\x00:z1"),
    Case("GA region and zone", {LABEL_REGION_GA: "r1", LABEL_ZONE_GA: "z1"}, "r1:\x00:z1"),
    Case("beta wins over GA", {LABEL_ZONE_BETA: "z1", LABEL_ZONE_GA: "z2"}, ":\x00:z1"),
    Case(
        "each part falls back alone", {LABEL_REGION_GA: "r2", LABEL_ZONE_BETA: "z1"}, "r2:\x00:z1"
    ),
    # A present beta label wins even when empty, as Kubernetes' `labels[key]; ok` reads it.
    Case("an empty beta label still wins", {LABEL_ZONE_BETA: "", LABEL_ZONE_GA: "z2"}, ""),
    Case("empty values are no zone", {LABEL_REGION_GA: "", LABEL_ZONE_GA: ""}, ""),
    Case(
        "a colon in a value stays apart", {LABEL_REGION_GA: "a:", LABEL_ZONE_GA: "b"}, "a::\x00:b"
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_zone_key(case: Case) -> None:
    assert zone_key(case.labels) == case.want
