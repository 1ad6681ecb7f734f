"""The scheduler Policy: protocol/policy.py (shape), actors/plugins/policy.py (names, order), the registry.

Rules from README.md "Policies and configuration" (names, defaults); v1.14 behaviour from
pkg/scheduler/factory/plugins.go and pkg/scheduler/api/validation/validation.go@v1.14.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import pytest
from repo_paths import EXAMPLES

from podium.actors.framework.interface import SUCCESS, FilterPlugin, PluginArgs, ScorePlugin, Status
from podium.actors.plugins import names, registry
from podium.actors.plugins.policy import (
    OrderKey,
    ResolvedPolicy,
    build_plugins,
    default_policy,
    load_resolved_policy,
    resolve_policy,
)
from podium.protocol.errors import PolicyError
from podium.protocol.policy import MAX_WEIGHT, Policy, decode_policy, load_policy

SEED_000 = EXAMPLES / "policy-seed-000.json"
SEED_004 = EXAMPLES / "policy-seed-004.json"

SEED_PREDICATES = (
    names.HOST_NAME,
    names.POD_FITS_HOST_PORTS,
    names.POD_FITS_RESOURCES,
    names.POD_TOLERATES_NODE_TAINTS,
    names.NO_DISK_CONFLICT,
    names.MATCH_NODE_SELECTOR,
)
SEED_PRIORITIES = (
    (names.LEAST_REQUESTED, 1),
    (names.BALANCED_RESOURCE_ALLOCATION, 1),
    (names.SERVICE_SPREADING, 1),
    (names.EQUAL_PRIORITY, 1),
)


def resolve(raw: dict[str, Any], **kwargs: Any) -> ResolvedPolicy:
    loaded = decode_policy(raw)
    return resolve_policy(loaded.policy, warnings=loaded.warnings, **kwargs)


# --------------------------------------------------------------------------- the seeds


def test_seed_000_resolves_to_its_order_and_priorities() -> None:
    resolved = load_resolved_policy(SEED_000)
    assert resolved.predicate_names == SEED_PREDICATES
    assert [key.order for key, _, _ in resolved.predicates] == [1, 2, 3, 4, 5, 6]
    assert resolved.priority_weights == SEED_PRIORITIES
    assert resolved.hard_pod_affinity_symmetric_weight == 10
    assert resolved.always_check_all_predicates is False
    assert resolved.warnings == ()


def test_seed_004_aliases_resolve_exactly_as_seed_000() -> None:
    seed_004 = load_resolved_policy(SEED_004)
    assert seed_004.predicate_names == SEED_PREDICATES
    assert seed_004.priority_weights == SEED_PRIORITIES
    assert seed_004 == load_resolved_policy(SEED_000)


def test_seed_004_keeps_its_spelling_before_resolution() -> None:
    policy = load_policy(path=SEED_004).policy
    assert policy.kind == "SchedulingPolicy"
    assert policy.affinity_weight == 10
    assert policy.hard_pod_affinity_symmetric_weight is None
    assert policy.symmetric_weight == 10
    assert [p.name for p in policy.predicates or ()][:2] == [
        "NodePortAvailability",
        "ResourceSufficiency",
    ]


def test_seed_000_reads_the_same_as_yaml() -> None:
    text = (
        "kind: Policy\napiVersion: v1\npredicates:\n"
        "- {name: PodFitsHostPorts, order: 2}\n- {name: PodFitsResources, order: 3}\n"
        "- {name: NoDiskConflict, order: 5}\n- {name: PodToleratesNodeTaints, order: 4}\n"
        "- {name: MatchNodeSelector, order: 6}\n- {name: PodFitsHost, order: 1}\n"
        "priorities:\n- {name: LeastRequestedPriority, weight: 1}\n"
        "- {name: BalancedResourceAllocation, weight: 1}\n- {name: ServiceSpreadingPriority, weight: 1}\n"
        "- {name: EqualPriority, weight: 1}\nhardPodAffinitySymmetricWeight: 10\n"
    )
    assert load_policy(text, path="policy.yaml") == load_policy(path=SEED_000)


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class Resolve:
    name: str
    policy: dict[str, Any]
    predicates: tuple[str, ...] | None = None
    priorities: tuple[tuple[str, int], ...] | None = None


DEFAULT_ORDER = tuple(n for n in names.PREDICATES_ORDERING if n in names.DEFAULT_PREDICATES)

RESOLVES = [
    Resolve("no keys: the defaults", {}, DEFAULT_ORDER, names.DEFAULT_PRIORITIES),
    Resolve(
        "null lists: the defaults",
        {"predicates": None, "priorities": None},
        DEFAULT_ORDER,
        names.DEFAULT_PRIORITIES,
    ),
    Resolve("empty lists: none", {"predicates": [], "priorities": []}, (), ()),
    Resolve(
        "no order: canonical order whatever the input order",
        {
            "predicates": [
                {"name": "MatchInterPodAffinity"},
                {"name": "PodFitsResources"},
                {"name": "CheckNodeCondition"},
            ]
        },
        ("CheckNodeCondition", "PodFitsResources", "MatchInterPodAffinity"),
    ),
    Resolve(
        "ordered entries first, the rest in canonical order",
        {
            "predicates": [
                {"name": "CheckNodeCondition"},
                {"name": "MatchInterPodAffinity", "order": 2},
                {"name": "GeneralPredicates"},
                {"name": "NoDiskConflict", "order": 1},
            ]
        },
        ("NoDiskConflict", "MatchInterPodAffinity", "CheckNodeCondition", "GeneralPredicates"),
    ),
    Resolve(
        "equal orders fall back to canonical order",
        {
            "predicates": [
                {"name": "PodToleratesNodeTaints", "order": 1},
                {"name": "HostName", "order": 1},
                {"name": "CheckNodeUnschedulable", "order": 2},
                {"name": "PodFitsResources", "order": 1},
            ]
        },
        ("HostName", "PodFitsResources", "PodToleratesNodeTaints", "CheckNodeUnschedulable"),
    ),
    Resolve(
        "large and sparse orders",
        {
            "predicates": [
                {"name": "HostName", "order": 1000},
                {"name": "PodFitsHostPorts", "order": 7},
            ]
        },
        ("PodFitsHostPorts", "HostName"),
    ),
    Resolve(
        "MaxPDVolumeCountPredicate expands to the four volume counts, keeping its order",
        {"predicates": [{"name": "HostName"}, {"name": "MaxPDVolumeCountPredicate", "order": 1}]},
        (
            "MaxEBSVolumeCount",
            "MaxGCEPDVolumeCount",
            "MaxAzureDiskVolumeCount",
            "MaxCinderVolumeCount",
            "HostName",
        ),
    ),
    Resolve(
        "seed 000 static-order spellings",
        {
            "predicates": [
                {"name": "InterPodAffinityMatches"},
                {"name": "CheckNodeDiskPressurePredicate"},
                {"name": "CheckNodeMemoryPressurePredicate"},
                {"name": "VolumeZonePredicate"},
                {"name": "VolumeNodePredicate"},
                {"name": "PodMatchNodeSelector"},
                {"name": "CheckNodeConditionPredicate"},
                {"name": "PodFitsHost"},
            ]
        },
        (
            "CheckNodeCondition",
            "HostName",
            "MatchNodeSelector",
            "CheckVolumeBinding",
            "NoVolumeZoneConflict",
            "CheckNodeMemoryPressure",
            "CheckNodeDiskPressure",
            "MatchInterPodAffinity",
        ),
    ),
    Resolve(
        "seed 004 spellings of every predicate",
        {
            "predicates": [
                {"name": n}
                for n in (
                    "InterPodAffinity",
                    "DiskPressureCheck",
                    "PIDPressureCheck",
                    "MemoryPressureCheck",
                    "VolumeZoneConflict",
                    "VolumeBindingCheck",
                    "MaxCSIVolumeCount",
                    "MaxGCEPDVolumeCount",
                    "MaxEBSVolumeCount",
                    "NoExecuteTaintTolerance",
                    "TaintTolerance",
                    "StorageCompatibility",
                    "ResourceSufficiency",
                    "NodeSelectorCompliance",
                    "NodePortAvailability",
                    "HostnameMatch",
                    "GeneralPredicate",
                    "CheckNodeSchedulable",
                    "ValidateNodeCondition",
                )
            ]
        },
        (
            "CheckNodeCondition",
            "CheckNodeUnschedulable",
            "GeneralPredicates",
            "HostName",
            "PodFitsHostPorts",
            "MatchNodeSelector",
            "PodFitsResources",
            "NoDiskConflict",
            "PodToleratesNodeTaints",
            "PodToleratesNodeNoExecuteTaints",
            "MaxEBSVolumeCount",
            "MaxGCEPDVolumeCount",
            "MaxCSIVolumeCountPred",
            "CheckVolumeBinding",
            "NoVolumeZoneConflict",
            "CheckNodeMemoryPressure",
            "CheckNodePIDPressure",
            "CheckNodeDiskPressure",
            "MatchInterPodAffinity",
        ),
    ),
    Resolve(
        "v1.0's PodFitsPorts", {"predicates": [{"name": "PodFitsPorts"}]}, ("PodFitsHostPorts",)
    ),
    Resolve(
        "argument entries report under the user's name, at their type's canonical place",
        {
            "predicates": [
                {"name": "MatchInterPodAffinity"},
                {"name": "RackAffinity", "argument": {"serviceAffinity": {"labels": ["rack"]}}},
                {
                    "name": "zone-present",
                    "argument": {"labelsPresence": {"labels": ["zone"], "presence": True}},
                },
                {"name": "CheckNodeCondition"},
            ]
        },
        ("CheckNodeCondition", "zone-present", "RackAffinity", "MatchInterPodAffinity"),
    ),
    Resolve(
        "two argument entries of one type keep the policy's order",
        {
            "predicates": [
                {"name": "b", "argument": {"labelsPresence": {"labels": ["b"]}}},
                {"name": "a", "argument": {"labelsPresence": {"labels": ["a"]}}},
            ]
        },
        ("b", "a"),
    ),
    Resolve(
        "priorities keep the policy's order and weights; aliases resolved",
        {
            "priorities": [
                {"name": "UniformPriority", "weight": 3},
                {"name": "MostRequestedPriority", "weight": 2},
                {"name": "SelectorSpreadPriority", "weight": 1},
                {"name": "ServiceSpreading", "weight": 5},
                {"name": "NodePreferAvoidPodsPriority", "weight": 10000},
            ]
        },
        priorities=(
            ("EqualPriority", 3),
            ("MostRequestedPriority", 2),
            ("SelectorSpreadPriority", 1),
            ("ServiceSpreadingPriority", 5),
            ("NodePreferAvoidPodsPriority", 10000),
        ),
    ),
    Resolve(
        "priority argument entries report under the user's name",
        {
            "priorities": [
                {
                    "name": "prefer-ssd",
                    "weight": 2,
                    "argument": {"labelPreference": {"label": "ssd", "presence": True}},
                },
                {
                    "name": "spread-racks",
                    "weight": 4,
                    "argument": {"serviceAntiAffinity": {"label": "rack"}},
                },
            ]
        },
        priorities=(("prefer-ssd", 2), ("spread-racks", 4)),
    ),
    Resolve(
        "the largest weight v1.14 allows",
        {"priorities": [{"name": "EqualPriority", "weight": MAX_WEIGHT - 1}]},
        priorities=(("EqualPriority", MAX_WEIGHT - 1),),
    ),
]


@pytest.mark.parametrize("case", RESOLVES, ids=attrgetter("name"))
def test_resolve(case: Resolve) -> None:
    resolved = resolve(case.policy)
    if case.predicates is not None:
        assert resolved.predicate_names == case.predicates
        keys = [key for key, _, _ in resolved.predicates]
        assert keys == sorted(keys)
    if case.priorities is not None:
        assert resolved.priority_weights == case.priorities


def test_argument_entries_carry_their_arguments() -> None:
    resolved = resolve(
        {
            "predicates": [
                {
                    "name": "zone-present",
                    "argument": {"labelsPresence": {"labels": ["zone", "rack"], "presence": True}},
                },
                {"name": "RackAffinity", "argument": {"serviceAffinity": {"labels": ["rack"]}}},
                {
                    "name": "CheckNodeLabelPresence",
                    "argument": {"labelsPresence": {"labels": ["gpu"]}},
                },
            ],
            "priorities": [
                {
                    "name": "prefer-ssd",
                    "weight": 2,
                    "argument": {"labelPreference": {"label": "ssd", "presence": True}},
                },
                {
                    "name": "spread",
                    "weight": 1,
                    "argument": {"serviceAntiAffinity": {"label": "zone"}},
                },
            ],
            "hardPodAffinitySymmetricWeight": 7,
        }
    )
    assert [(args, canonical) for _, args, canonical in resolved.predicates] == [
        (
            PluginArgs(
                "zone-present",
                labels=("zone", "rack"),
                presence=True,
                hard_pod_affinity_symmetric_weight=7,
            ),
            names.CHECK_NODE_LABEL_PRESENCE,
        ),
        (
            PluginArgs(
                "CheckNodeLabelPresence",
                labels=("gpu",),
                presence=False,
                hard_pod_affinity_symmetric_weight=7,
            ),
            names.CHECK_NODE_LABEL_PRESENCE,
        ),
        (
            PluginArgs("RackAffinity", labels=("rack",), hard_pod_affinity_symmetric_weight=7),
            names.CHECK_SERVICE_AFFINITY,
        ),
    ]
    rank = names.PREDICATES_ORDERING.index(names.CHECK_NODE_LABEL_PRESENCE)
    assert [key for key, _, _ in resolved.predicates][:2] == [
        OrderKey(1, 0, rank, 0),
        OrderKey(1, 0, rank, 2),
    ]
    assert list(resolved.priorities) == [
        (
            PluginArgs(
                "prefer-ssd", label="ssd", presence=True, hard_pod_affinity_symmetric_weight=7
            ),
            names.NODE_LABEL,
            2,
        ),
        (
            PluginArgs("spread", label="zone", hard_pod_affinity_symmetric_weight=7),
            names.SERVICE_ANTI_AFFINITY,
            1,
        ),
    ]


@dataclass(frozen=True)
class Weight:
    name: str
    policy: dict[str, Any]
    configured: int
    want: int


WEIGHTS = [
    Weight("absent: the configured value", {}, 10, 10),
    Weight("absent with another configured value", {}, 3, 3),
    Weight("0 means absent", {"hardPodAffinitySymmetricWeight": 0}, 4, 4),
    Weight("the policy's value wins", {"hardPodAffinitySymmetricWeight": 100}, 4, 100),
    Weight("alias affinityWeight", {"affinityWeight": 1}, 10, 1),
    Weight(
        "both spellings, same value",
        {"affinityWeight": 5, "hardPodAffinitySymmetricWeight": 5},
        10,
        5,
    ),
]


@pytest.mark.parametrize("case", WEIGHTS, ids=attrgetter("name"))
def test_hard_pod_affinity_symmetric_weight(case: Weight) -> None:
    resolved = resolve(case.policy, hard_pod_affinity_symmetric_weight=case.configured)
    assert resolved.hard_pod_affinity_symmetric_weight == case.want
    assert {args.hard_pod_affinity_symmetric_weight for _, args, _ in resolved.predicates} == {
        case.want
    }
    assert {args.hard_pod_affinity_symmetric_weight for args, _, _ in resolved.priorities} == {
        case.want
    }


def test_always_check_all_predicates_and_defaults() -> None:
    assert resolve({"alwaysCheckAllPredicates": True}).always_check_all_predicates is True
    assert default_policy() == resolve_policy(None) == resolve({})
    assert default_policy().always_check_all_predicates is False


# --------------------------------------------------------------------------- rejected


@dataclass(frozen=True)
class Rejected:
    name: str
    policy: dict[str, Any]
    problems: list[tuple[str, str]]


SHAPE_REJECTED = [
    Rejected(
        "order 0",
        {"predicates": [{"name": "PodFitsHost", "order": 0}]},
        [("predicates[0].order", "predicate 'PodFitsHost': order must be an integer >= 1, got 0")],
    ),
    Rejected(
        "negative order",
        {"predicates": [{"name": "HostName"}, {"name": "PodFitsHostPorts", "order": -3}]},
        [
            (
                "predicates[1].order",
                "predicate 'PodFitsHostPorts': order must be an integer >= 1, got -3",
            )
        ],
    ),
    Rejected(
        "order not an integer",
        {"predicates": [{"name": "HostName", "order": "1"}]},
        [("predicates[0].order", "Expected `int | null`, got `str`")],
    ),
    Rejected(
        "fractional order",
        {"predicates": [{"name": "HostName", "order": 1.5}]},
        [("predicates[0].order", "Expected `int | null`, got `float`")],
    ),
    Rejected(
        "weight 0",
        {
            "priorities": [
                {"name": "EqualPriority", "weight": 1},
                {"name": "LeastRequestedPriority", "weight": 1},
                {"name": "BalancedResourceAllocation", "weight": 0},
            ]
        },
        [
            (
                "priorities[2].weight",
                "priority 'BalancedResourceAllocation' should have a positive weight applied to it or it has "
                f"overflown: weight must be an integer in 1-{MAX_WEIGHT - 1}, got 0",
            )
        ],
    ),
    Rejected(
        "weight that overflows",
        {"priorities": [{"name": "EqualPriority", "weight": MAX_WEIGHT}]},
        [
            (
                "priorities[0].weight",
                "priority 'EqualPriority' should have a positive weight applied to it or it has "
                f"overflown: weight must be an integer in 1-{MAX_WEIGHT - 1}, got {MAX_WEIGHT}",
            )
        ],
    ),
    Rejected(
        "weight missing",
        {"priorities": [{"name": "EqualPriority"}]},
        [
            (
                "priorities[0].weight",
                "priority 'EqualPriority': weight is required (an integer >= 1)",
            )
        ],
    ),
    Rejected(
        "weight not an integer",
        {"priorities": [{"name": "EqualPriority", "weight": True}]},
        [("priorities[0].weight", "Expected `int | null`, got `bool`")],
    ),
    Rejected(
        "hardPodAffinitySymmetricWeight above 100",
        {"hardPodAffinitySymmetricWeight": 101},
        [
            (
                "hardPodAffinitySymmetricWeight",
                "hardPodAffinitySymmetricWeight must be in 1-100 (0 means the default, 10), got 101",
            )
        ],
    ),
    Rejected(
        "negative affinityWeight",
        {"affinityWeight": -1},
        [("affinityWeight", "affinityWeight must be in 1-100 (0 means the default, 10), got -1")],
    ),
    Rejected(
        "both spellings, different values",
        {"affinityWeight": 5, "hardPodAffinitySymmetricWeight": 6},
        [
            (
                "affinityWeight",
                "affinityWeight (5) is an alias of hardPodAffinitySymmetricWeight (6); give one of them",
            )
        ],
    ),
    Rejected(
        "kind",
        {"kind": "Config"},
        [("kind", "kind must be Policy or SchedulingPolicy, got 'Config'")],
    ),
    Rejected(
        "apiVersion", {"apiVersion": "v2"}, [("apiVersion", "apiVersion must be v1, got 'v2'")]
    ),
    Rejected("unknown top-level key", {"predicate": []}, [("predicate", "unknown field")]),
    Rejected(
        "unknown key in an entry",
        {"predicates": [{"name": "HostName", "ordr": 1}]},
        [("predicates[0].ordr", "unknown field")],
    ),
    Rejected(
        "predicates not a list",
        {"predicates": {"name": "HostName"}},
        [("predicates", "Expected `array | null`, got `object`")],
    ),
    Rejected(
        "entry without a name",
        {"predicates": [{"order": 1}]},
        [("predicates[0].name", "missing required field")],
    ),
    Rejected(
        "empty names",
        {"predicates": [{"name": ""}], "priorities": [{"name": "", "weight": 1}]},
        [
            ("predicates[0].name", "a predicate needs a name"),
            ("priorities[0].name", "a priority needs a name"),
        ],
    ),
    Rejected(
        "empty predicate argument",
        {"predicates": [{"name": "custom", "argument": {}}]},
        [
            (
                "predicates[0].argument",
                "predicate 'custom': exactly 1 predicate argument is required (labelsPresence or serviceAffinity), got 0",
            )
        ],
    ),
    Rejected(
        "two predicate arguments",
        {
            "predicates": [
                {
                    "name": "custom",
                    "argument": {
                        "labelsPresence": {"labels": []},
                        "serviceAffinity": {"labels": []},
                    },
                }
            ]
        },
        [
            (
                "predicates[0].argument",
                "predicate 'custom': exactly 1 predicate argument is required (labelsPresence or serviceAffinity), got 2",
            )
        ],
    ),
    Rejected(
        "two priority arguments",
        {
            "priorities": [
                {
                    "name": "c",
                    "weight": 1,
                    "argument": {
                        "labelPreference": {"label": "a"},
                        "serviceAntiAffinity": {"label": "b"},
                    },
                }
            ]
        },
        [
            (
                "priorities[0].argument",
                "priority 'c': exactly 1 priority argument is required (labelPreference or serviceAntiAffinity), got 2",
            )
        ],
    ),
    Rejected(
        "unsupported priority argument (requestedToCapacityRatio)",
        {
            "priorities": [
                {"name": "c", "weight": 1, "argument": {"requestedToCapacityRatioArguments": {}}}
            ]
        },
        [("priorities[0].argument.requestedToCapacityRatioArguments", "unknown field")],
    ),
    Rejected(
        "every rule problem is reported",
        {
            "kind": "Plicy",
            "predicates": [
                {"name": "HostName", "order": 0},
                {"name": "PodFitsHostPorts", "order": 0},
            ],
            "priorities": [{"name": "EqualPriority", "weight": 0}],
        },
        [
            ("kind", "kind must be Policy or SchedulingPolicy, got 'Plicy'"),
            ("predicates[0].order", "predicate 'HostName': order must be an integer >= 1, got 0"),
            (
                "predicates[1].order",
                "predicate 'PodFitsHostPorts': order must be an integer >= 1, got 0",
            ),
            (
                "priorities[0].weight",
                "priority 'EqualPriority' should have a positive weight applied to it or it has "
                f"overflown: weight must be an integer in 1-{MAX_WEIGHT - 1}, got 0",
            ),
        ],
    ),
]


@pytest.mark.parametrize("case", SHAPE_REJECTED, ids=attrgetter("name"))
def test_shape_rejected(case: Rejected) -> None:
    with pytest.raises(PolicyError) as caught:
        decode_policy(case.policy, source="policy.json")
    assert list(caught.value.problems) == case.problems
    assert caught.value.path == case.problems[0][0]
    assert caught.value.source == "policy.json"


NAME_REJECTED = [
    Rejected(
        "unknown predicate, with a suggestion",
        {
            "predicates": [
                {"name": "HostName"},
                {"name": "PodFitHost"},
                {"name": "NoDiskConflict"},
                {"name": "Frobnicate"},
            ]
        },
        [
            ("predicates[1].name", "unknown predicate 'PodFitHost'; did you mean 'PodFitsHost'?"),
            ("predicates[3].name", "unknown predicate 'Frobnicate'"),
        ],
    ),
    Rejected(
        "unknown priority",
        {
            "priorities": [
                {"name": "EqualPriority", "weight": 1},
                {"name": "LeastRequested", "weight": 1},
            ]
        },
        [
            (
                "priorities[1].name",
                "unknown priority 'LeastRequested'; did you mean 'LeastRequestedPriority'?",
            )
        ],
    ),
    Rejected(
        "a priority name used as a predicate",
        {"predicates": [{"name": "EqualPriority"}]},
        [("predicates[0].name", "unknown predicate 'EqualPriority'")],
    ),
    Rejected(
        "argument-only predicate without its argument",
        {"predicates": [{"name": "CheckNodeLabelPresence"}, {"name": "checkServiceAffinity"}]},
        [
            (
                "predicates[0].argument",
                "predicate 'CheckNodeLabelPresence' (CheckNodeLabelPresence) exists only with an argument: "
                "give argument.labelsPresence",
            ),
            (
                "predicates[1].argument",
                "predicate 'checkServiceAffinity' (CheckServiceAffinity) exists only with an argument: "
                "give argument.serviceAffinity",
            ),
        ],
    ),
    Rejected(
        "argument-only priority without its argument",
        {
            "priorities": [
                {"name": "NodeLabelPriority", "weight": 1},
                {"name": "ServiceAntiAffinityPriority", "weight": 1},
            ]
        },
        [
            (
                "priorities[0].argument",
                "priority 'NodeLabelPriority' (NodeLabelPriority) exists only with an argument: "
                "give argument.labelPreference",
            ),
            (
                "priorities[1].argument",
                "priority 'ServiceAntiAffinityPriority' (ServiceAntiAffinityPriority) exists only with an "
                "argument: give argument.serviceAntiAffinity",
            ),
        ],
    ),
    Rejected(
        "duplicate through an alias",
        {
            "predicates": [
                {"name": "PodFitsHost", "order": 1},
                {"name": "HostName", "order": 2},
                {"name": "HostnameMatch"},
            ]
        },
        [
            ("predicates[1].name", "predicate 'HostName' is already given at predicates[0]"),
            (
                "predicates[2].name",
                "predicate 'HostnameMatch' (HostName) is already given at predicates[0]",
            ),
        ],
    ),
    Rejected(
        "duplicate inside the MaxPDVolumeCountPredicate group",
        {"predicates": [{"name": "MaxGCEPDVolumeCount"}, {"name": "MaxPDVolumeCountPredicate"}]},
        [
            (
                "predicates[1].name",
                "predicate 'MaxPDVolumeCountPredicate' (MaxGCEPDVolumeCount) is already given at predicates[0]",
            )
        ],
    ),
    Rejected(
        "duplicate argument name",
        {
            "predicates": [
                {"name": "zone", "argument": {"labelsPresence": {"labels": ["a"]}}},
                {"name": "zone", "argument": {"serviceAffinity": {"labels": ["b"]}}},
            ]
        },
        [("predicates[1].name", "predicate 'zone' is already given at predicates[0]")],
    ),
    Rejected(
        "duplicate priority through an alias",
        {
            "priorities": [
                {"name": "ResourceOptimization", "weight": 1},
                {"name": "LeastRequestedPriority", "weight": 2},
            ]
        },
        [
            (
                "priorities[1].name",
                "priority 'LeastRequestedPriority' is already given at priorities[0]",
            )
        ],
    ),
    Rejected(
        "every name problem is reported",
        {
            "predicates": [{"name": "Nope"}, {"name": "HostName"}, {"name": "PodFitsHost"}],
            "priorities": [{"name": "Nada", "weight": 1}],
        },
        [
            ("predicates[0].name", "unknown predicate 'Nope'"),
            (
                "predicates[2].name",
                "predicate 'PodFitsHost' (HostName) is already given at predicates[1]",
            ),
            ("priorities[0].name", "unknown priority 'Nada'"),
        ],
    ),
]


@pytest.mark.parametrize("case", NAME_REJECTED, ids=attrgetter("name"))
def test_name_rejected(case: Rejected) -> None:
    policy = decode_policy(case.policy).policy
    with pytest.raises(PolicyError) as caught:
        resolve_policy(policy, source="policy.json")
    assert list(caught.value.problems) == case.problems


def test_policy_error_text() -> None:
    with pytest.raises(PolicyError) as one:
        resolve_policy(
            decode_policy({"predicates": [{"name": "Frobnicate"}]}).policy, source="p.json"
        )
    assert str(one.value) == "p.json: predicates[0].name: unknown predicate 'Frobnicate'"
    with pytest.raises(PolicyError) as two:
        decode_policy({"predicates": [{"name": "a", "order": 0}], "affinityWeight": 300})
    assert str(two.value) == (
        "2 problems in this policy:\n"
        "  predicates[0].order: predicate 'a': order must be an integer >= 1, got 0\n"
        "  affinityWeight: affinityWeight must be in 1-100 (0 means the default, 10), got 300"
    )
    assert two.value.code == "invalid"


# --------------------------------------------------------------------------- files


@dataclass(frozen=True)
class File:
    name: str
    text: str
    error: str | None = None
    warnings: tuple[str, ...] = ()
    path: str = "policy.yaml"


FILES = [
    File("empty file: the default policy", ""),
    File("YAML", "kind: SchedulingPolicy\npredicates: [{name: HostnameMatch}]\n"),
    File("JSON", '{"kind": "Policy", "predicates": [{"name": "HostName"}]}', path="policy.json"),
    File(
        "extenders are read, their keys case-insensitively (v1.14 caseInsensitiveExtenderConfig)",
        '{"kind": "Policy", "extenders": [{"URLPrefix": "http://127.0.0.1:8888/", "filterVerb": "filter", '
        '"BindVerb": "bind", "weight": 1, "enableHttps": false, "nodeCacheCapable": true, "managedResources": '
        '[{"Name": "example.com/foo", "ignoredByScheduler": true}]}]}',
        path="policy.json",
    ),
    File(
        "an unknown extender key is an error, as everywhere in a policy",
        '{"kind": "Policy", "extenders": [{"urlPrefix": "http://127.0.0.1:8888/", "somethingNew": 1}]}',
        error="policy.json: extenders[0].somethingNew: unknown field",
        path="policy.json",
    ),
    File(
        "extender rules of v1.14 validation, every problem listed",
        '{"extenders": [{"urlPrefix": "http://a/", "prioritizeVerb": "p", "bindVerb": "b", '
        '"managedResources": [{"name": "example.com/gpu"}, {"name": "cpu"}]}, '
        '{"urlPrefix": "ftp://b/", "bindVerb": "b", "httpTimeout": "soon", '
        '"managedResources": [{"name": "example.com/gpu"}]}]}',
        error="policy.json: 6 problems in this policy:\n"
        "  extenders[0].weight: Priority for extender http://a/ should have a positive weight applied to it\n"
        "  extenders[0].managedResources[1].name: cpu is an invalid extended resource name\n"
        "  extenders[1].urlPrefix: urlPrefix must be an http:// or https:// URL, got 'ftp://b/'\n"
        "  extenders[1].managedResources[0].name: Duplicate extender managed resource name example.com/gpu\n"
        "  extenders[1].httpTimeout: invalid duration 'soon' (e.g. 5s, 250ms, or nanoseconds)\n"
        "  extenders[1].bindVerb: Only one extender can implement bind, found 2",
        path="policy.json",
    ),
    File(
        "not JSON",
        '{"kind": "Policy",}',
        error="policy.json: not valid JSON: JSON is malformed: trailing comma in object (line 1, column 19)",
        path="policy.json",
    ),
    File(
        "two documents",
        "kind: Policy\n---\nkind: Policy\n",
        error="policy.yaml: expected one document, found 2",
    ),
    File(
        "not a mapping", "- name: HostName\n", error="policy.yaml: Expected `object`, got `array`"
    ),
]


@pytest.mark.parametrize("case", FILES, ids=attrgetter("name"))
def test_policy_files(case: File) -> None:
    if case.error is not None:
        with pytest.raises(PolicyError) as caught:
            load_policy(case.text, path=case.path)
        assert str(caught.value) == case.error
        return
    loaded = load_policy(case.text, path=case.path)
    assert loaded.warnings == case.warnings
    if case.warnings:
        assert resolve_policy(loaded.policy, warnings=loaded.warnings).warnings == case.warnings


def test_extenders_are_kept_in_order_with_their_settings() -> None:
    loaded = load_policy(
        '{"extenders": [{"urlPrefix": "http://x/", "prioritizeVerb": "p", "weight": 2, '
        '"httpTimeout": 250000000}, {"urlPrefix": "https://y/", "TLSConfig": {"Insecure": true}, '
        '"httpTimeout": "1m30s"}, {"urlPrefix": "http://z/"}]}',
        path="p.json",
    )
    resolved = resolve_policy(loaded.policy, warnings=loaded.warnings)
    assert [(e.url_prefix, e.weight, e.timeout_seconds) for e in resolved.extenders] == [
        ("http://x/", 2, 0.25),
        ("https://y/", 0, 90.0),
        ("http://z/", 0, 5.0),
    ]
    tls = resolved.extenders[1].tls_config
    assert tls is not None and tls.insecure
    assert loaded.warnings == ()


def test_missing_policy_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as caught:
        load_resolved_policy(tmp_path / "none.json")
    assert str(caught.value) == f"{tmp_path / 'none.json'}: cannot read: No such file or directory"


def test_policy_is_frozen() -> None:
    policy = Policy()
    with pytest.raises(AttributeError):
        policy.kind = "x"  # type: ignore[misc]  # mypy: proving the struct is frozen


# --------------------------------------------------------------------------- plugins


@dataclass
class FakeFilter(FilterPlugin[None]):
    name: str
    canonical: str
    args: PluginArgs

    def pre_filter(self, pod: object, snapshot: object) -> None:
        return None

    def filter(self, pod: object, meta: None, node: object) -> Status:
        return SUCCESS


@dataclass
class FakeScorer(ScorePlugin[None]):
    name: str
    canonical: str
    args: PluginArgs

    def pre_score(self, pod: object, snapshot: object, nodes: Sequence[object]) -> None:
        return None

    def score(self, pod: object, meta: None, node: object) -> int:
        return 0

    def normalize(
        self, pod: object, meta: object, nodes: Sequence[object], scores: list[int]
    ) -> list[int]:
        return scores


@dataclass
class FakeRegistry:
    asked: list[str] = field(default_factory=list)

    def predicate(self, canonical: str) -> Any:
        self.asked.append(canonical)
        return lambda args: FakeFilter(args.name, canonical, args)

    def priority(self, canonical: str) -> Any:
        self.asked.append(canonical)
        return lambda args: FakeScorer(args.name, canonical, args)


def test_build_plugins_in_policy_order_under_reported_names() -> None:
    resolved = resolve(
        {
            "predicates": [
                {"name": "GeneralPredicate"},
                {
                    "name": "zone-present",
                    "argument": {"labelsPresence": {"labels": ["zone"]}},
                    "order": 1,
                },
            ],
            "priorities": [
                {
                    "name": "prefer-ssd",
                    "weight": 3,
                    "argument": {"labelPreference": {"label": "ssd"}},
                },
                {"name": "UniformPriority", "weight": 2},
            ],
        }
    )
    fake = FakeRegistry()
    filters, scorers = build_plugins(
        resolved, predicate_factory=fake.predicate, priority_factory=fake.priority
    )
    assert [(f.name, f.canonical) for f in filters if isinstance(f, FakeFilter)] == [
        ("zone-present", names.CHECK_NODE_LABEL_PRESENCE),
        ("GeneralPredicates", names.GENERAL_PREDICATES),
    ]
    assert [(s.name, s.canonical, w) for s, w in scorers if isinstance(s, FakeScorer)] == [
        ("prefer-ssd", names.NODE_LABEL, 3),
        ("EqualPriority", names.EQUAL_PRIORITY, 2),
    ]
    assert all(isinstance(f, FilterPlugin) for f in filters)
    assert all(isinstance(s, ScorePlugin) for s, _ in scorers)


def test_build_plugins_refuses_a_factory_that_returns_no_plugin() -> None:
    resolved = resolve({"predicates": [{"name": "HostName"}], "priorities": []})
    with pytest.raises(
        TypeError, match="the factory of predicate HostName returned 42, not a FilterPlugin"
    ):
        build_plugins(resolved, predicate_factory=_not_a_plugin)


def _not_a_plugin(canonical: str) -> Any:
    return lambda args: 42


def test_registry_knows_a_module_for_every_name() -> None:
    predicates = {n for owned in registry.PREDICATE_MODULES.values() for n in owned}
    priorities = {n for owned in registry.PRIORITY_MODULES.values() for n in owned}
    assert predicates == set(names.PREDICATES_ORDERING)
    assert priorities == {*names.PRIORITIES, *names.ARGUMENT_PRIORITIES.values()}
    assert predicates.isdisjoint(priorities)


def test_registry_names_a_missing_module() -> None:
    with pytest.raises(registry.PluginModuleMissing) as caught:
        registry.module_factories("no_such_plugin")
    assert str(caught.value) == (
        "plugin module podium.actors.plugins.no_such_plugin is missing; it should provide FACTORIES for "
    )
    assert caught.value.name == "podium.actors.plugins.no_such_plugin"


def test_registry_refuses_a_module_without_factories() -> None:
    with pytest.raises(
        registry.RegistryError,
        match=r"^plugin module podium\.actors\.plugins\.names has no FACTORIES dict$",
    ):
        registry.module_factories("names")


def test_registry_refuses_an_unknown_name() -> None:
    with pytest.raises(
        registry.RegistryError, match="no plugin module provides the priority 'HostName'"
    ):
        registry.priority_factory(names.HOST_NAME)


# The real plugin modules: every one the registry lists must exist and provide its names.


def test_every_plugin_module_loads() -> None:
    merged = registry.factories()
    assert {
        *names.PREDICATES_ORDERING,
        *names.PRIORITIES,
        names.NODE_LABEL,
        names.SERVICE_ANTI_AFFINITY,
    } <= set(merged)


@pytest.mark.parametrize("path", [SEED_000, SEED_004], ids=["seed 000", "seed 004"])
def test_seed_policies_build_real_plugins(path: Path) -> None:
    filters, scorers = build_plugins(load_resolved_policy(path))
    assert tuple(f.name for f in filters) == SEED_PREDICATES
    assert tuple((s.name, w) for s, w in scorers) == SEED_PRIORITIES


def test_default_policy_builds_real_plugins() -> None:
    filters, scorers = build_plugins(default_policy())
    assert tuple(f.name for f in filters) == DEFAULT_ORDER
    assert tuple((s.name, w) for s, w in scorers) == names.DEFAULT_PRIORITIES
