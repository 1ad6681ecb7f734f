"""PodGroups in their three forms as files give them (protocol/objects.py ``PodGroup``), and a
pod's membership as the store checks it (protocol/gangs.py ``membership_errors``).

The forms: Kubernetes' own (scheduling.k8s.io ``PodGroup``, ``spec.schedulingPolicy``; pods join
with ``spec.schedulingGroup.podGroupName``), scheduler-plugins' Coscheduling
(scheduling.x-k8s.io, ``spec.minMember``; the label ``scheduling.x-k8s.io/pod-group``) and
Volcano's (scheduling.volcano.sh, ``spec.minMember``; the annotation
``scheduling.k8s.io/group-name``).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_pod
from repo_paths import FIXTURES

from podium.protocol import objects as o
from podium.protocol.errors import LoadErrors
from podium.protocol.gangs import membership_errors, min_count, names_a_group, pod_group_key
from podium.protocol.loader import load_all, load_text


@dataclass(frozen=True)
class Good:
    name: str
    text: str
    api_version: str
    min_count: int | None


GOOD = [
    Good(
        "Kubernetes gang",
        "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\n"
        "metadata: {name: train, namespace: ml}\n"
        "spec: {schedulingPolicy: {gang: {minCount: 8}}}",
        "scheduling.k8s.io/v1alpha2",
        8,
    ),
    Good(
        "Kubernetes basic",
        "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\n"
        "metadata: {name: serve, namespace: ml}\nspec: {schedulingPolicy: {basic: {}}}",
        "scheduling.k8s.io/v1alpha2",
        None,
    ),
    Good(
        "Kubernetes, a later version of the same shape",
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\n"
        "metadata: {name: train, namespace: ml}\nspec: {schedulingPolicy: {gang: {minCount: 1}}}",
        "scheduling.k8s.io/v1beta1",
        1,
    ),
    Good(
        "no apiVersion is Kubernetes' v1alpha2",
        "kind: PodGroup\nmetadata: {name: train}\nspec: {schedulingPolicy: {gang: {minCount: 2}}}",
        "scheduling.k8s.io/v1alpha2",
        2,
    ),
    Good(
        "scheduler-plugins, with its timeout and minimum resources",
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
        "metadata: {name: nginx, namespace: default}\n"
        "spec: {minMember: 3, scheduleTimeoutSeconds: 10, minResources: {cpu: '3'}}",
        "scheduling.x-k8s.io/v1alpha1",
        3,
    ),
    Good(
        "scheduler-plugins before v0.24",
        "apiVersion: scheduling.sigs.k8s.io/v1alpha1\nkind: PodGroup\n"
        "metadata: {name: nginx}\nspec: {minMember: 2}",
        "scheduling.sigs.k8s.io/v1alpha1",
        2,
    ),
    Good(
        "Volcano, with its queue and a status its controller wrote",
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: tf-job, namespace: ml}\n"
        "spec: {minMember: 4, queue: default, priorityClassName: high}\n"
        "status: {phase: Running, running: 4}",
        "scheduling.volcano.sh/v1beta1",
        4,
    ),
]


@pytest.mark.parametrize("case", GOOD, ids=attrgetter("name"))
def test_each_form_decodes_with_its_size(case: Good) -> None:
    [group] = load_text(case.text, source="g.yaml")
    assert isinstance(group, o.PodGroup)
    assert group.api_version == case.api_version
    assert min_count(group) == case.min_count
    assert group.metadata.namespace  # namespaced: "default" when not given


@dataclass(frozen=True)
class Bad:
    name: str
    text: str
    path: str
    reason: str


_K8S = (
    "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
)
_PLUGINS = "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\n"
_VOLCANO = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g}\n"
_SUPPORTED = (
    '"scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1beta1", '
    '"scheduling.x-k8s.io/v1alpha1", "scheduling.sigs.k8s.io/v1alpha1", '
    '"scheduling.volcano.sh/v1beta1"'
)

BAD = [
    Bad(
        "minCount 0",
        _K8S + "spec: {schedulingPolicy: {gang: {minCount: 0}}}",
        "$.spec.schedulingPolicy.gang.minCount",
        "spec.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than zero",
    ),
    Bad(
        "a gang without minCount is minCount 0",
        _K8S + "spec: {schedulingPolicy: {gang: {}}}",
        "$.spec.schedulingPolicy.gang.minCount",
        "spec.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than zero",
    ),
    Bad(
        "both basic and gang",
        _K8S + "spec: {schedulingPolicy: {basic: {}, gang: {minCount: 2}}}",
        "$.spec.schedulingPolicy",
        "spec.schedulingPolicy: Invalid value: exactly one of basic or gang must be set",
    ),
    Bad(
        "no policy",
        _K8S + "spec: {}",
        "$.spec.schedulingPolicy",
        "spec.schedulingPolicy: Invalid value: exactly one of basic or gang must be set",
    ),
    Bad(
        "minMember in Kubernetes' form says which apiVersion reads it",
        "kind: PodGroup\nmetadata: {name: g}\nspec: {minMember: 3}",
        "$.spec.schedulingPolicy",
        "spec.schedulingPolicy: Invalid value: exactly one of basic or gang must be set "
        "(spec.minMember is scheduler-plugins' and Volcano's: give apiVersion "
        "scheduling.x-k8s.io/v1alpha1 or scheduling.volcano.sh/v1beta1)",
    ),
    Bad(
        "minCount not an integer",
        _K8S + "spec: {schedulingPolicy: {gang: {minCount: all}}}",
        "$.spec.schedulingPolicy.gang.minCount",
        "Expected `int`, got `str`",
    ),
    Bad(
        "scheduler-plugins without minMember",
        _PLUGINS + "spec: {scheduleTimeoutSeconds: 10}",
        "$.spec.minMember",
        "spec.minMember: Required value",
    ),
    Bad(
        "scheduler-plugins minMember 0",
        _PLUGINS + "spec: {minMember: 0}",
        "$.spec.minMember",
        "spec.minMember: Invalid value: 0: must be greater than zero",
    ),
    Bad(
        "scheduler-plugins timeout 0",
        _PLUGINS + "spec: {minMember: 2, scheduleTimeoutSeconds: 0}",
        "$.spec.scheduleTimeoutSeconds",
        "spec.scheduleTimeoutSeconds: Invalid value: 0: must be greater than zero",
    ),
    Bad(
        "Volcano minMember negative",
        _VOLCANO + "spec: {minMember: -1, queue: default}",
        "$.spec.minMember",
        "spec.minMember: Invalid value: -1: must be greater than zero",
    ),
    Bad(
        "Volcano minMember past int32",
        _VOLCANO + "spec: {minMember: 3000000000}",
        "$.spec.minMember",
        "Expected `int` <= 2147483647",
    ),
    Bad(
        "Volcano minResources not a quantity",
        _VOLCANO + "spec: {minMember: 2, minResources: {cpu: lots}}",
        "$.spec.minResources['cpu']",
        "quantity 'lots' does not match the Kubernetes quantity grammar",
    ),
    Bad(
        "another group's PodGroup",
        "apiVersion: example.com/v1\nkind: PodGroup\nmetadata: {name: g}\nspec: {minMember: 2}",
        "$.apiVersion",
        f'apiVersion: Unsupported value: "example.com/v1": supported values: {_SUPPORTED}',
    ),
]


@pytest.mark.parametrize("case", BAD, ids=attrgetter("name"))
def test_a_bad_group_is_refused_naming_the_field(case: Bad) -> None:
    with pytest.raises(LoadErrors) as caught:
        load_text(case.text, source="g.yaml")
    [error] = caught.value.errors
    assert (error.path, error.kind) == (case.path, "PodGroup")
    assert error.reason.startswith(case.reason), error.reason


# --------------------------------------------------------------------------- membership


@dataclass(frozen=True)
class Membership:
    name: str
    pod: o.Pod
    old: o.Pod | None
    key: str | None
    errors: list[tuple[str, str]]


_LABEL = "metadata.labels[scheduling.x-k8s.io/pod-group]"
_ANNOTATION = "metadata.annotations[scheduling.k8s.io/group-name]"
_FIELD = "spec.schedulingGroup.podGroupName"


def _in(name: str, form: str = "kubernetes", *more: tuple[str, str]) -> o.Pod:
    pod = make_pod("w").ns("ml").group(name, form)
    for other, other_form in more:
        pod = pod.group(other, other_form)
    return pod.obj()


MEMBERSHIP = [
    Membership("no group", make_pod("w").ns("ml").obj(), None, None, []),
    Membership("Kubernetes' field", _in("train"), None, "ml/train", []),
    Membership("scheduler-plugins' label", _in("train", "coscheduling"), None, "ml/train", []),
    Membership("Volcano's annotation", _in("train", "volcano"), None, "ml/train", []),
    Membership(
        "scheduler-plugins' label before v0.24",
        make_pod("w").ns("ml").label("pod-group.scheduling.sigs.k8s.io", "train").obj(),
        None,
        "ml/train",
        [],
    ),
    Membership(
        "Volcano's own annotation",
        make_pod("w").ns("ml").annotation("scheduling.volcano.sh/group-name", "train").obj(),
        None,
        "ml/train",
        [],
    ),
    Membership(
        "two forms naming one group",
        _in("train", "kubernetes", ("train", "coscheduling"), ("train", "volcano")),
        None,
        "ml/train",
        [],
    ),
    Membership("the same group again on update", _in("train"), _in("train"), "ml/train", []),
    Membership(
        "the same group in another form on update",
        _in("train", "volcano"),
        _in("train", "coscheduling"),
        "ml/train",
        [],
    ),
    Membership(
        "a group in another namespace",
        _in("other/train"),
        None,
        "ml/other/train",
        [
            (
                "$.spec.schedulingGroup.podGroupName",
                f'{_FIELD}: Invalid value: "other/train": a pod group is in the pod\'s own '
                "namespace (ml); name it without a namespace",
            )
        ],
    ),
    Membership(
        "a label naming a group in another namespace",
        _in("other/train", "coscheduling"),
        None,
        "ml/other/train",
        [
            (
                "$.metadata.labels['scheduling.x-k8s.io/pod-group']",
                f'{_LABEL}: Invalid value: "other/train": a pod group is in the pod\'s own '
                "namespace (ml); name it without a namespace",
            )
        ],
    ),
    Membership(
        "a name that is no DNS subdomain",
        _in("Train_1", "volcano"),
        None,
        "ml/Train_1",
        [
            (
                "$.metadata.annotations['scheduling.k8s.io/group-name']",
                f'{_ANNOTATION}: Invalid value: "Train_1": a lowercase RFC 1123 subdomain must '
                "consist of lower case alphanumeric characters, '-' or '.', and must start and "
                "end with an alphanumeric character (e.g. 'example.com', regex used for "
                "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            )
        ],
    ),
    Membership(
        "two forms naming two groups",
        _in("train", "kubernetes", ("eval", "volcano")),
        None,
        "ml/train",
        [
            (
                "$.metadata.annotations['scheduling.k8s.io/group-name']",
                f'{_ANNOTATION}: Invalid value: "eval": a pod belongs to one pod group; it names '
                f'{_FIELD}="train", {_ANNOTATION}="eval"',
            )
        ],
    ),
    Membership(
        "the group changed on update",
        _in("eval", "coscheduling"),
        _in("train", "coscheduling"),
        "ml/eval",
        [
            (
                "$.metadata.labels['scheduling.x-k8s.io/pod-group']",
                f'{_LABEL}: Invalid value: "eval": field is immutable (the pod was in pod group '
                '"train")',
            )
        ],
    ),
    Membership(
        "the group dropped on update",
        make_pod("w").ns("ml").obj(),
        _in("train"),
        None,
        [
            (
                "$.spec.schedulingGroup.podGroupName",
                f'{_FIELD}: Invalid value: null: field is immutable (the pod was in pod group "train")',
            )
        ],
    ),
    Membership(
        "a group added on update",
        _in("train", "volcano"),
        make_pod("w").ns("ml").obj(),
        "ml/train",
        [
            (
                "$.metadata.annotations['scheduling.k8s.io/group-name']",
                f'{_ANNOTATION}: Invalid value: "train": field is immutable (the pod was in no '
                "pod group)",
            )
        ],
    ),
]


@pytest.mark.parametrize("case", MEMBERSHIP, ids=attrgetter("name"))
def test_membership(case: Membership) -> None:
    assert pod_group_key(case.pod) == case.key
    assert membership_errors(case.pod, case.old) == case.errors
    # The quick test scans use agrees: every pod naming a group is one that may.
    assert names_a_group(case.pod) or case.key is None


def test_a_pod_with_labels_and_annotations_of_its_own_names_no_group() -> None:
    pod = make_pod("w").ns("ml").labels({"app": "x"}).annotation("note", "y").obj()
    assert not names_a_group(pod) and pod_group_key(pod) is None


# --------------------------------------------------------------------------- real-shaped files

POD_GROUPS = FIXTURES / "real-shaped" / "pod-groups"


@dataclass(frozen=True)
class Dump:
    file: str
    skipped: dict[str, int]
    groups: dict[str, tuple[str, int | None]]  # key -> (apiVersion, min_count)
    members: dict[str, int]  # group key -> its pods in the file
    loners: int  # pods in no group


DUMPS = [
    Dump(
        "kubernetes-v1alpha2.json",
        {"Job": 1},
        {
            "ml/eval": ("scheduling.k8s.io/v1alpha2", None),
            "ml/train": ("scheduling.k8s.io/v1alpha2", 4),
        },
        {"ml/eval": 2, "ml/train": 4},
        0,
    ),
    Dump(
        "coscheduling.yaml",
        {},
        {
            "default/nginx": ("scheduling.x-k8s.io/v1alpha1", 3),
            "batch/spark-pi": ("scheduling.sigs.k8s.io/v1alpha1", 2),
        },
        {"default/nginx": 3, "batch/spark-pi": 2},
        1,
    ),
    Dump(
        "volcano-vcjob.yaml",
        {"Job": 1},
        {
            "ml/tf-mnist-5f0c9a7e-3b1d-4c58-9a2e-7d41c0b6e2f3": (
                "scheduling.volcano.sh/v1beta1",
                3,
            )
        },
        {"ml/tf-mnist-5f0c9a7e-3b1d-4c58-9a2e-7d41c0b6e2f3": 3},
        0,
    ),
]


@pytest.mark.parametrize("dump", DUMPS, ids=attrgetter("file"))
def test_a_real_shaped_file_loads_its_groups_and_their_members(dump: Dump) -> None:
    loaded = load_all([POD_GROUPS / dump.file])
    assert dict(loaded.skipped) == dump.skipped and loaded.warnings == []
    groups = {
        f"{g.metadata.namespace}/{g.metadata.name}": (g.api_version, min_count(g))
        for g in loaded.objects
        if isinstance(g, o.PodGroup)
    }
    assert groups == dump.groups
    pods = [p for p in loaded.objects if isinstance(p, o.Pod)]
    keys = [pod_group_key(p) for p in pods]
    assert {k: keys.count(k) for k in groups} == dump.members
    assert keys.count(None) == dump.loners
    assert all(membership_errors(p, None) == [] for p in pods)
