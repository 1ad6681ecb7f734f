"""PodGroups in the store core: stored, listed and deleted as every kind is, their status kept as
a dump gives it, and the rules a put must pass (store/core.py, "Pod groups"): a pod's membership
(protocol/gangs.py ``membership_errors``), a group's policy form, and its size while members are
bound.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import pytest
from builders import PodGroupBuilder, make_node, make_pod, make_pod_group

from podium.protocol import objects as o
from podium.protocol.wire import ObjectRef
from podium.store.core import StoreCore, StoreRejected

T0 = 1795341600.0  # 2026-11-22T10:00:00Z


@pytest.fixture
def core() -> StoreCore:
    uids = (f"uid-{i}" for i in itertools.count(1))
    return StoreCore(wall_clock=lambda: T0, new_uid=lambda: next(uids))


def _rejected(core: StoreCore, puts: list[Any]) -> StoreRejected:
    revision = core.revision
    with pytest.raises(StoreRejected) as info:
        core.write(puts)
    assert core.revision == revision, "a refused write wrote something"
    return info.value


def _group(core: StoreCore, name: str, namespace: str = "ml") -> o.PodGroup:
    group = core.get("PodGroup", namespace, name)
    assert isinstance(group, o.PodGroup)
    return group


# --------------------------------------------------------------------------- a kind as any other


def test_groups_of_every_form_are_stored_listed_and_deleted(core: StoreCore) -> None:
    groups = [
        make_pod_group("train").ns("ml").gang(8).obj(),
        make_pod_group("serve").ns("ml").basic().obj(),
        make_pod_group("nginx").ns("web").min_member(3).obj(),
        make_pod_group("tf").ns("ml").min_member(4, "scheduling.volcano.sh/v1beta1").obj(),
        make_pod_group("solo").ns("").gang(1).obj(),
    ]
    _, statuses, changes = core.write(groups)
    assert [(s.namespace, s.name, s.action) for s in statuses] == [
        ("ml", "train", "created"),
        ("ml", "serve", "created"),
        ("web", "nginx", "created"),
        ("ml", "tf", "created"),
        ("default", "solo", "created"),
    ]
    assert {(c.type, c.kind) for c in changes} == {("Added", "PodGroup")}
    stored = _group(core, "train")
    assert (stored.metadata.uid, stored.metadata.resource_version) == ("uid-1", "1")
    assert stored.metadata.creation_timestamp == "2026-11-22T10:00:00Z"
    assert stored.spec == groups[0].spec

    _, listed = core.read("PodGroup", namespace="ml")
    assert [g.metadata.name for g in listed] == ["serve", "tf", "train"]
    _, every = core.read("PodGroup")
    assert [f"{g.metadata.namespace}/{g.metadata.name}" for g in every] == [
        "default/solo",
        "ml/serve",
        "ml/tf",
        "ml/train",
        "web/nginx",
    ]
    assert core.read_page("PodGroup", "ml", limit=2)[1:] == (listed[:2], 1)
    assert core.stats().objects["PodGroup"] == 5

    _, [status], [change] = core.write((), [ObjectRef(kind="PodGroup", namespace="ml", name="tf")])
    assert (status.action, change.type, change.kind) == ("deleted", "Deleted", "PodGroup")
    assert core.get("PodGroup", "ml", "tf") is None
    with pytest.raises(StoreRejected) as missing:
        core.read("PodGroup", "tf", "ml")
    assert missing.value.code == "not_found"


def test_groups_come_after_the_other_kinds_and_before_the_pods(core: StoreCore) -> None:
    core.write(
        [
            make_pod("w").ns("ml").group("train").obj(),
            make_pod_group("train").ns("ml").gang(1).obj(),
            make_node("n1").obj(),
        ]
    )
    assert [type(x).__name__ for x in core.all_objects()] == ["Node", "PodGroup", "Pod"]


def test_a_group_is_read_back_from_the_log_as_it_was_written(core: StoreCore) -> None:
    group = make_pod_group("train").ns("ml").gang(2).obj()
    core.write([group])
    _, [change] = core.events_after(0)
    assert isinstance(change.object, o.PodGroup)
    assert change.object.spec == group.spec


# --------------------------------------------------------------------------- re-applying


def test_reapplying_a_group_is_unchanged_and_its_status_is_kept(core: StoreCore) -> None:
    # What `kubectl get podgroup -o yaml` printed: the group's controller wrote its status.
    dumped = (
        make_pod_group("tf")
        .ns("ml")
        .min_member(4, "scheduling.volcano.sh/v1beta1")
        .status(phase="Running", running=4)
    )
    core.write([dumped.obj()])
    revision = core.revision
    assert core.write([dumped.obj()])[1][0].action == "unchanged"
    # The file it came from, without a status: the stored status stays (Podium writes none).
    bare = make_pod_group("tf").ns("ml").min_member(4, "scheduling.volcano.sh/v1beta1")
    assert core.write([bare.obj()])[1][0].action == "unchanged"
    assert core.revision == revision
    status = _group(core, "tf").status
    assert status is not None and (status.phase, status.running) == ("Running", 4)
    # A put with another status writes it.
    later = bare.status(phase="Completed", succeeded=4)
    assert core.write([later.obj()])[1][0].action == "replaced"
    status = _group(core, "tf").status
    assert status is not None and (status.phase, status.succeeded) == ("Completed", 4)


# --------------------------------------------------------------------------- pods


@dataclass(frozen=True)
class PodCase:
    name: str
    stored: list[o.KubeObject]
    put: o.Pod
    path: str
    message: str


_NOT_A_SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of"

POD_CASES = [
    PodCase(
        "a group in another namespace",
        [],
        make_pod("w").ns("ml").group("other/train").obj(),
        "$.spec.schedulingGroup.podGroupName",
        'Pod ml/w is invalid: spec.schedulingGroup.podGroupName: Invalid value: "other/train": '
        "a pod group is in the pod's own namespace (ml); name it without a namespace",
    ),
    PodCase(
        "an annotation naming a group in another namespace",
        [],
        make_pod("w").group("ml/train", "volcano").obj(),
        "$.metadata.annotations['scheduling.k8s.io/group-name']",
        "Pod default/w is invalid: metadata.annotations[scheduling.k8s.io/group-name]: Invalid "
        'value: "ml/train": a pod group is in the pod\'s own namespace (default); name it '
        "without a namespace",
    ),
    PodCase(
        "a label's name not a DNS subdomain (a good label value)",
        [],
        make_pod("w").ns("ml").group("Train", "coscheduling").obj(),
        "$.metadata.labels['scheduling.x-k8s.io/pod-group']",
        "Pod ml/w is invalid: metadata.labels[scheduling.x-k8s.io/pod-group]: Invalid value: "
        f'"Train": {_NOT_A_SUBDOMAIN}',
    ),
    PodCase(
        "two forms naming two groups",
        [],
        make_pod("w").ns("ml").group("train").group("eval", "coscheduling").obj(),
        "$.metadata.labels['scheduling.x-k8s.io/pod-group']",
        "Pod ml/w is invalid: metadata.labels[scheduling.x-k8s.io/pod-group]: Invalid value: "
        '"eval": a pod belongs to one pod group; it names '
        'spec.schedulingGroup.podGroupName="train", '
        'metadata.labels[scheduling.x-k8s.io/pod-group]="eval"',
    ),
    PodCase(
        "a pending pod moved to another group",
        [make_pod("w").ns("ml").group("train").obj()],
        make_pod("w").ns("ml").group("eval").obj(),
        "$.spec.schedulingGroup.podGroupName",
        'Pod ml/w is invalid: spec.schedulingGroup.podGroupName: Invalid value: "eval": field '
        'is immutable (the pod was in pod group "train")',
    ),
    PodCase(
        "a bound pod's label moved to another group (labels may change, the group not)",
        [
            make_node("n1").obj(),
            make_pod("w").ns("ml").group("train", "coscheduling").node("n1").obj(),
        ],
        make_pod("w").ns("ml").group("eval", "coscheduling").obj(),
        "$.metadata.labels['scheduling.x-k8s.io/pod-group']",
        "Pod ml/w is invalid: metadata.labels[scheduling.x-k8s.io/pod-group]: Invalid value: "
        '"eval": field is immutable (the pod was in pod group "train")',
    ),
    PodCase(
        "a pod put in a group",
        [make_pod("w").ns("ml").obj()],
        make_pod("w").ns("ml").group("train", "volcano").obj(),
        "$.metadata.annotations['scheduling.k8s.io/group-name']",
        "Pod ml/w is invalid: metadata.annotations[scheduling.k8s.io/group-name]: Invalid "
        'value: "train": field is immutable (the pod was in no pod group)',
    ),
    PodCase(
        "a pod taken out of its group",
        [make_pod("w").ns("ml").group("train").obj()],
        make_pod("w").ns("ml").obj(),
        "$.spec.schedulingGroup.podGroupName",
        "Pod ml/w is invalid: spec.schedulingGroup.podGroupName: Invalid value: null: field is "
        'immutable (the pod was in pod group "train")',
    ),
    PodCase(
        "a gate's error and a group's, in one message at the first's path",
        [],
        make_pod("w")
        .ns("ml")
        .spec(schedulingGates=[{"name": "a"}, {"name": "a"}])
        .group("x/y")
        .obj(),
        "$.spec.schedulingGates[1].name",
        'Pod ml/w is invalid: spec.schedulingGates[1]: Duplicate value: "a"; '
        'spec.schedulingGroup.podGroupName: Invalid value: "x/y": a pod group is in the pod\'s '
        "own namespace (ml); name it without a namespace",
    ),
]


@pytest.mark.parametrize("case", POD_CASES, ids=attrgetter("name"))
def test_a_pods_membership_is_checked_at_put(core: StoreCore, case: PodCase) -> None:
    if case.stored:
        core.write(case.stored)
    [error] = _rejected(core, [make_node("n9").obj(), case.put]).errors
    assert (error.index, error.kind, error.path) == (1, "Pod", case.path)
    assert error.message.startswith(case.message), error.message


def test_a_member_needs_no_group_yet_and_keeps_its_group_in_another_form(
    core: StoreCore,
) -> None:
    # The group may come after its pods (the queue waits for it); the form may change.
    core.write([make_pod("w").ns("ml").group("train").obj()])
    put = make_pod("w").ns("ml").group("train").group("train", "volcano").obj()
    assert core.write([put])[1][0].action == "replaced"
    assert core.write([put])[1][0].action == "unchanged"


# --------------------------------------------------------------------------- group updates


def _bound(name: str, group: str, form: str = "kubernetes", namespace: str = "ml") -> o.Pod:
    return make_pod(name).ns(namespace).group(group, form).node("n1").obj()


def _pending(name: str, group: str, form: str = "kubernetes") -> o.Pod:
    return make_pod(name).ns("ml").group(group, form).obj()


def _train() -> PodGroupBuilder:
    return make_pod_group("train").ns("ml")


_THREE_BOUND = [_bound("w0", "train"), _bound("w1", "train"), _bound("w2", "train")]
_PLUGINS = "scheduling.x-k8s.io/v1alpha1"
_VOLCANO = "scheduling.volcano.sh/v1beta1"
_REDO = "delete the group and create it again to change its policy"


@dataclass(frozen=True)
class Update:
    name: str
    stored: o.PodGroup
    put: o.PodGroup
    pods: list[o.Pod] = field(default_factory=list)
    action: str = "replaced"
    path: str = ""
    message: str = ""


UPDATES = [
    Update(
        "the same gang", _train().gang(3).obj(), _train().gang(3).obj(), _THREE_BOUND, "unchanged"
    ),
    Update("a gang's size, no member yet", _train().gang(3).obj(), _train().gang(4).obj()),
    Update(
        "a gang's size, its members pending",
        _train().gang(3).obj(),
        _train().gang(2).obj(),
        [_pending("w0", "train"), _pending("w1", "train")],
    ),
    Update(
        "a gang's size under 3 bound members",
        _train().gang(3).obj(),
        _train().gang(4).obj(),
        _THREE_BOUND,
        path="$.spec.schedulingPolicy.gang.minCount",
        message="PodGroup ml/train is invalid: spec.schedulingPolicy.gang.minCount: Forbidden: "
        "3 members of pod group ml/train are bound to nodes; the group cannot change under them",
    ),
    Update(
        "a gang's size under 1 bound member",
        _train().gang(3).obj(),
        _train().gang(1).obj(),
        [_bound("w0", "train"), _pending("w1", "train")],
        path="$.spec.schedulingPolicy.gang.minCount",
        message="PodGroup ml/train is invalid: spec.schedulingPolicy.gang.minCount: Forbidden: "
        "1 member of pod group ml/train is bound to a node; the group cannot change under it",
    ),
    Update(
        "a gang's size beside bound pods of another group, another namespace or finished",
        _train().gang(3).obj(),
        _train().gang(4).obj(),
        [
            _bound("e0", "eval"),
            _bound("w0", "train", namespace="other"),
            make_pod("done").ns("ml").group("train").node("n1").phase("Succeeded").obj(),
        ],
    ),
    Update(
        "scheduler-plugins' minMember under a bound labelled member",
        _train().min_member(3).obj(),
        _train().min_member(5).obj(),
        [_bound("w0", "train", "coscheduling")],
        path="$.spec.minMember",
        message="PodGroup ml/train is invalid: spec.minMember: Forbidden: 1 member of pod group "
        "ml/train is bound to a node; the group cannot change under it",
    ),
    Update(
        "Volcano's minMember under annotated members, counted in any form",
        _train().min_member(3, _VOLCANO).obj(),
        _train().min_member(2, _VOLCANO).obj(),
        [_bound("w0", "train", "volcano"), _bound("w1", "train")],
        path="$.spec.minMember",
        message="PodGroup ml/train is invalid: spec.minMember: Forbidden: 2 members of pod group "
        "ml/train are bound to nodes; the group cannot change under them",
    ),
    Update(
        "other fields under bound members",
        _train().min_member(3).obj(),
        _train().min_member(3).spec(scheduleTimeoutSeconds=60, priorityClassName="high").obj(),
        [_bound("w0", "train", "coscheduling")],
    ),
    Update(
        "a later version of the same form",
        _train().gang(3).obj(),
        _train().gang(3).api_version("scheduling.k8s.io/v1beta1").obj(),
        _THREE_BOUND,
    ),
    Update(
        "scheduler-plugins' to Volcano's, the same minMember",
        _train().min_member(3).obj(),
        _train().min_member(3, _VOLCANO).obj(),
        [_bound("w0", "train", "coscheduling")],
    ),
    Update(
        "gang to basic",
        _train().gang(3).obj(),
        _train().basic().obj(),
        path="$.spec.schedulingPolicy",
        message='PodGroup ml/train is invalid: spec.schedulingPolicy: Invalid value: {"basic":{}}: '
        f"field is immutable: pod group ml/train has schedulingPolicy.gang (minCount 3); {_REDO}",
    ),
    Update(
        "basic to gang",
        _train().basic().obj(),
        _train().gang(2).obj(),
        path="$.spec.schedulingPolicy",
        message="PodGroup ml/train is invalid: spec.schedulingPolicy: Invalid value: "
        '{"gang":{"minCount":2}}: field is immutable: pod group ml/train has '
        f"schedulingPolicy.basic; {_REDO}",
    ),
    Update(
        "Kubernetes' form to scheduler-plugins'",
        _train().gang(3).obj(),
        _train().min_member(3).obj(),
        path="$.spec.schedulingPolicy",
        message="PodGroup ml/train is invalid: spec.schedulingPolicy: Invalid value: null: field "
        f"is immutable: pod group ml/train has schedulingPolicy.gang (minCount 3); {_REDO}",
    ),
    Update(
        "Volcano's form to Kubernetes'",
        _train().min_member(3, _VOLCANO).obj(),
        _train().gang(3).obj(),
        path="$.spec.schedulingPolicy",
        message="PodGroup ml/train is invalid: spec.schedulingPolicy: Invalid value: "
        '{"gang":{"minCount":3}}: field is immutable: pod group ml/train has minMember 3 '
        f"(scheduling.volcano.sh/v1beta1); {_REDO}",
    ),
]


@pytest.mark.parametrize("case", UPDATES, ids=attrgetter("name"))
def test_a_group_update(core: StoreCore, case: Update) -> None:
    core.write([make_node("n1").obj(), case.stored, *case.pods])
    if not case.path:
        [status] = core.write([case.put])[1]
        assert status.action == case.action
        return
    [error] = _rejected(core, [case.put]).errors
    assert (error.kind, error.namespace, error.name, error.path) == (
        "PodGroup",
        "ml",
        "train",
        case.path,
    )
    assert error.message == case.message
    # Deleting the group is always allowed, and a new one may then take any form and size.
    core.write((), [ObjectRef(kind="PodGroup", namespace="ml", name="train")])
    assert core.write([case.put])[1][0].action == "created"


def test_a_member_bound_earlier_in_the_same_write_counts(core: StoreCore) -> None:
    core.write([make_node("n1").obj(), _train().gang(2).obj(), _pending("w0", "train")])
    w0 = make_pod("w0").ns("ml").group("train").node("n1").obj()
    [error] = _rejected(core, [w0, _train().gang(3).obj()]).errors
    assert (error.index, error.path) == (1, "$.spec.schedulingPolicy.gang.minCount")
    assert "1 member of pod group ml/train is bound to a node" in error.message


def test_a_group_created_under_bound_pods_is_not_an_update(core: StoreCore) -> None:
    # A dump's bound members may come before their group: the size is the group's first.
    core.write([make_node("n1").obj(), *_THREE_BOUND])
    assert core.write([_train().gang(8).obj()])[1][0].action == "created"
