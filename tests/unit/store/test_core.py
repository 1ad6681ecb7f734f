"""The store core: puts, deletes, priority admission, bindings, Unschedulable records, the log.

Priority admission rows are copied from Kubernetes'
plugin/pkg/admission/priority/admission_test.go (TestPodAdmission, TestPriorityClassAdmission;
v1.14 plus the later preemptionPolicy rows) and keep their names.
"""

from __future__ import annotations

import itertools
import time
import uuid
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeVar

import msgspec
import pytest
from builders import decode, make_node, make_pod

from podium.protocol import objects as o
from podium.protocol.wire import ObjectError, ObjectRef
from podium.store.core import (
    ANNOTATION_BIND_COMPLETED,
    ANNOTATION_SELECTED_NODE,
    StoreCore,
    StoreRejected,
)
from podium.store.mail import Binding, Preemptor, StoreFailure, Victim

T0 = 1795341600.0  # 2026-11-22T10:00:00Z
T0_TEXT = "2026-11-22T10:00:00Z"


def _core(retention: int = 1_000_000) -> StoreCore:
    uids = (f"uid-{i}" for i in itertools.count(1))
    return StoreCore(retention=retention, wall_clock=lambda: T0, new_uid=lambda: next(uids))


@pytest.fixture
def core() -> StoreCore:
    return _core()


_T = TypeVar("_T")


def _decode(kind: type[_T], data: dict[str, Any]) -> _T:
    return msgspec.convert(data, kind, dec_hook=o.dec_hook)


def _pc(name: str, value: int, default: bool = False, policy: str | None = None) -> o.PriorityClass:
    data: dict[str, Any] = {
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": default,
    }
    if policy is not None:
        data["preemptionPolicy"] = policy
    return _decode(o.PriorityClass, data)


def _pv(name: str, claim_ref: dict[str, str] | None = None) -> o.PersistentVolume:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}}
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return _decode(
        o.PersistentVolume, {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}
    )


def _pvc(name: str, volume: str = "", namespace: str = "default") -> o.PersistentVolumeClaim:
    spec: dict[str, Any] = {"volumeName": volume} if volume else {}
    return _decode(
        o.PersistentVolumeClaim,
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        },
    )


_V = TypeVar("_V", o.PersistentVolume, o.PersistentVolumeClaim)


def _phase(obj: _V, phase: str) -> _V:
    return msgspec.structs.replace(obj, status=msgspec.structs.replace(obj.status, phase=phase))


def _service(name: str, namespace: str = "") -> o.Service:
    return _decode(
        o.Service, {"kind": "Service", "metadata": {"name": name, "namespace": namespace}}
    )


def _pod(core: StoreCore, name: str, namespace: str = "default") -> o.Pod:
    pod = core.get("Pod", namespace, name)
    assert isinstance(pod, o.Pod)
    return pod


def _rejected(
    core: StoreCore, puts: list[Any], deletes: list[ObjectRef] | None = None
) -> StoreRejected:
    with pytest.raises(StoreRejected) as info:
        core.write(puts, deletes or [])
    return info.value


# --------------------------------------------------------------------------- put


def test_create_assigns_uid_timestamp_namespace_and_revision(core: StoreCore) -> None:
    revision, statuses, changes = core.write([make_pod("web").obj(), make_node("n1").obj()])
    assert revision == 2
    assert [
        (s.kind, s.namespace, s.name, s.uid, s.resource_version, s.action) for s in statuses
    ] == [
        ("Pod", "default", "web", "uid-1", "1", "created"),
        ("Node", "", "n1", "uid-2", "2", "created"),
    ]
    assert [(c.revision, c.type, c.kind, c.namespace, c.name, c.old) for c in changes] == [
        (1, "Added", "Pod", "default", "web", None),
        (2, "Added", "Node", "", "n1", None),
    ]
    pod = _pod(core, "web")
    assert changes[0].object == pod
    assert pod.metadata.uid == "uid-1"
    assert pod.metadata.resource_version == "1"
    assert pod.metadata.creation_timestamp == T0_TEXT


def test_default_uids_are_distinct_random_version_4_uuids_in_uuid4s_text() -> None:
    core = StoreCore(wall_clock=lambda: T0)
    # More than one pool of random bytes (256 uids), so a refill is crossed.
    _, statuses, _ = core.write([make_pod(f"p{i}").obj() for i in range(600)])
    uids = [s.uid for s in statuses]
    assert len(set(uids)) == 600
    for text in uids:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)


@pytest.mark.parametrize(
    "seconds",
    [0.0, T0, T0 + 0.999, T0 + 1.0, T0 - 0.5, 951825599.5, -1.5],
    ids=[
        "epoch",
        "T0",
        "just-before-next-second",
        "next-second",
        "half-before",
        "leap-day",
        "negative",
    ],
)
def test_creation_timestamps_are_the_wall_clocks_second_in_rfc3339(seconds: float) -> None:
    clock = [T0 + 5.0]  # another second's text made first, so the made-once text is not reused
    core = StoreCore(wall_clock=lambda: clock[0])
    core.write([make_pod("before").obj()])
    clock[0] = seconds
    core.write([make_pod("web").obj()])
    expected = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
    assert _pod(core, "web").metadata.creation_timestamp == expected


@dataclass(frozen=True)
class ReputCase:
    name: str
    first: list[Any]
    second: Any
    action: str
    binds: list[Binding] = field(default_factory=list)


REPUT_CASES = [
    ReputCase(
        "same pod twice",
        [make_pod("p").req(cpu="1").obj()],
        make_pod("p").req(cpu="1").obj(),
        "unchanged",
    ),
    ReputCase(
        "pod with a new label",
        [make_pod("p").obj()],
        make_pod("p").label("a", "b").obj(),
        "replaced",
    ),
    ReputCase(
        "client-given uid and resourceVersion are the store's",
        [make_pod("p").obj()],
        make_pod("p").uid("x").spec(priority=0).obj(),
        "unchanged",
    ),
    ReputCase(
        "node twice, allocatable defaulted",
        [make_node("n").capacity(cpu="4").obj()],
        make_node("n").capacity(cpu="4").obj(),
        "unchanged",
    ),
    ReputCase(
        "node with more capacity",
        [make_node("n").capacity(cpu="4").obj()],
        make_node("n").capacity(cpu="8").obj(),
        "replaced",
    ),
    ReputCase(
        "pod bound by Podium, put again as written",
        [make_node("n").obj(), make_pod("p").obj()],
        make_pod("p").obj(),
        "unchanged",
        [Binding(namespace="default", name="p", uid="uid-2", node="n")],
    ),
    ReputCase(
        "pod bound by Podium, put again as kubectl get -o yaml wrote it first (phase Pending)",
        [make_node("n").obj(), make_pod("p").phase("Pending").obj()],
        make_pod("p").phase("Pending").obj(),
        "unchanged",
        [Binding(namespace="default", name="p", uid="uid-2", node="n")],
    ),
    ReputCase(
        "pod bound by Podium, put again as pending with a nomination of its own",
        [make_node("n").obj(), make_pod("p").obj()],
        make_pod("p").nominated("m").obj(),
        "unchanged",
        [Binding(namespace="default", name="p", uid="uid-2", node="n")],
    ),
    ReputCase(
        "pod bound by Podium, put again as Succeeded",
        [make_node("n").obj(), make_pod("p").phase("Pending").obj()],
        make_pod("p").phase("Succeeded").obj(),
        "replaced",
        [Binding(namespace="default", name="p", uid="uid-2", node="n")],
    ),
    ReputCase(
        "claim bound by Podium, put again as written",
        [make_node("n").obj(), _pv("pv1"), _pvc("c"), make_pod("p").pvc("c").obj()],
        _pvc("c"),
        "unchanged",
        [
            Binding(
                namespace="default", name="p", uid="uid-4", node="n", volumes={"default/c": "pv1"}
            )
        ],
    ),
    ReputCase(
        "volume bound by Podium, put again as written",
        [make_node("n").obj(), _pv("pv1"), _pvc("c"), make_pod("p").pvc("c").obj()],
        _pv("pv1"),
        "unchanged",
        [
            Binding(
                namespace="default", name="p", uid="uid-4", node="n", volumes={"default/c": "pv1"}
            )
        ],
    ),
    ReputCase(
        "claim bound by Podium, put again as a dump printed it (phase Pending)",
        [make_node("n").obj(), _pv("pv1"), _pvc("c"), make_pod("p").pvc("c").obj()],
        _phase(_pvc("c"), "Pending"),
        "unchanged",
        [
            Binding(
                namespace="default", name="p", uid="uid-4", node="n", volumes={"default/c": "pv1"}
            )
        ],
    ),
    ReputCase(
        "volume bound by Podium, put again as a dump printed it (phase Available)",
        [make_node("n").obj(), _pv("pv1"), _pvc("c"), make_pod("p").pvc("c").obj()],
        _phase(_pv("pv1"), "Available"),
        "unchanged",
        [
            Binding(
                namespace="default", name="p", uid="uid-4", node="n", volumes={"default/c": "pv1"}
            )
        ],
    ),
    ReputCase(
        "unbound claim, put with a phase of its own",
        [_pvc("c")],
        _phase(_pvc("c"), "Lost"),
        "replaced",
    ),
    ReputCase("priority class twice", [_pc("gold", 10)], _pc("gold", 10), "unchanged"),
    ReputCase("priority class with a new value", [_pc("gold", 10)], _pc("gold", 11), "replaced"),
]


@pytest.mark.parametrize("case", REPUT_CASES, ids=attrgetter("name"))
def test_put_again(case: ReputCase) -> None:
    core = _core()
    core.write(case.first)
    _, _, failed = core.bind(case.binds)
    assert failed == []
    before = core.revision
    kind = type(case.second).__name__
    ns = "default" if kind in o.NAMESPACED_KINDS else ""
    stored = core.get(kind, ns, case.second.metadata.name)
    assert stored is not None
    revision, [status], changes = core.write([case.second])
    assert status.action == case.action
    assert status.uid == stored.metadata.uid
    if case.action == "unchanged":
        assert (revision, changes, status.resource_version) == (
            before,
            [],
            stored.metadata.resource_version,
        )
        assert core.get(kind, ns, case.second.metadata.name) == stored
    else:
        assert revision == before + 1
        [change] = changes
        assert (change.type, change.revision, change.old) == ("Modified", before + 1, stored)
        assert change.object.metadata.resource_version == str(before + 1)
        assert change.object.metadata.creation_timestamp == stored.metadata.creation_timestamp


@pytest.mark.parametrize(
    "second",
    [make_pod("p").obj(), make_pod("p").phase("Pending").obj()],
    ids=["no status", "phase Pending"],
)
def test_put_again_keeps_the_unschedulable_message_and_nomination(
    core: StoreCore, second: o.Pod
) -> None:
    core.write([make_node("n").obj(), make_pod("p").phase("Pending").obj()])
    assert core.record_unschedulable("default", "p", "uid-2", "0/1 nodes are available")
    core.evict(_v("p", "uid-2"), "n", [])
    stored = _pod(core, "p")
    before = core.revision
    revision, [status], changes = core.write([second])
    assert (status.action, revision, changes) == ("unchanged", before, [])
    assert _pod(core, "p") == stored
    # A real change keeps them too, and the dedupe still holds: no second Unschedulable.
    _, [status], _ = core.write([make_pod("p").phase("Pending").label("v", "2").obj()])
    pod = _pod(core, "p")
    assert (status.action, pod.status.nominated_node_name) == ("replaced", "n")
    [cond] = pod.status.conditions
    assert (cond.reason, cond.message) == ("Unschedulable", "0/1 nodes are available")
    assert core.record_unschedulable("default", "p", "uid-2", "0/1 nodes are available") is None


OLD_MESSAGE = (
    "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
    "1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate."
)
"""The old cluster's FitError, as a ``kubectl get -o yaml`` dump of a pending pod carries it."""
OLD_SINCE = "2021-07-07T16:14:55Z"
PODIUM_MESSAGE = "0/1 nodes are available: 1 Insufficient cpu."


def _dumped(name: str = "p") -> Any:
    """A pending pod as ``kubectl get -o yaml`` printed it in the old cluster."""
    return (
        make_pod(name)
        .req(cpu="1")
        .phase("Pending")
        .condition("PodScheduled", "False", "Unschedulable", OLD_MESSAGE, OLD_SINCE)
    )


@dataclass(frozen=True)
class StatusCase:
    """A pod put (``first``), what Podium then wrote, the same pod put again (``second``), and
    the pod's scheduler-owned state after it: (node, phase, PodScheduled (status, reason,
    message) or None, nominatedNodeName)."""

    name: str
    first: o.Pod
    second: o.Pod
    action: str
    want: tuple[str, str, tuple[str, str, str] | None, str]
    bind: bool = False
    unschedulable: str = ""
    nominate: str = ""


STATUS_CASES = [
    StatusCase(
        "bound by Podium, the dump says Pending with the old cluster's message",
        _dumped().obj(),
        _dumped().obj(),
        "unchanged",
        ("n", "Pending", ("True", "", ""), ""),
        bind=True,
    ),
    StatusCase(
        "bound by Podium, the dump names a nomination of its own",
        _dumped().obj(),
        _dumped().nominated("m").obj(),
        "unchanged",
        ("n", "Pending", ("True", "", ""), ""),
        bind=True,
    ),
    StatusCase(
        "pending with Podium's message, the dump carries the old cluster's",
        _dumped().obj(),
        _dumped().obj(),
        "unchanged",
        ("", "Pending", ("False", "Unschedulable", PODIUM_MESSAGE), ""),
        unschedulable=PODIUM_MESSAGE,
    ),
    StatusCase(
        "pending, the put's own PodScheduled condition is not written",
        make_pod("p").req(cpu="1").phase("Pending").obj(),
        make_pod("p")
        .req(cpu="1")
        .phase("Pending")
        .condition("PodScheduled", "False", "Mine")
        .obj(),
        "unchanged",
        ("", "Pending", ("False", "Unschedulable", PODIUM_MESSAGE), ""),
        unschedulable=PODIUM_MESSAGE,
    ),
    StatusCase(
        "pending, never tried: the dump's condition stays as created",
        _dumped().obj(),
        _dumped().obj(),
        "unchanged",
        ("", "Pending", ("False", "Unschedulable", OLD_MESSAGE), ""),
    ),
    StatusCase(
        "nominated by Podium, the dump names none",
        _dumped().obj(),
        _dumped().obj(),
        "unchanged",
        ("", "Pending", ("False", "Unschedulable", PODIUM_MESSAGE), "n"),
        unschedulable=PODIUM_MESSAGE,
        nominate="n",
    ),
    StatusCase(
        "nominated by Podium, the dump names another node",
        _dumped().nominated("m").obj(),
        _dumped().nominated("m").obj(),
        "unchanged",
        ("", "Pending", ("False", "Unschedulable", OLD_MESSAGE), "n"),
        nominate="n",
    ),
    StatusCase(
        "bound in the dump, Running, applied twice",
        make_pod("p").node("n").phase("Running").condition("Ready", "True").obj(),
        make_pod("p").node("n").phase("Running").condition("Ready", "True").obj(),
        "unchanged",
        ("n", "Running", None, ""),
    ),
    StatusCase(
        "bound by Podium, the put marks it Succeeded: the phase is written, not the condition",
        _dumped().obj(),
        _dumped().phase("Succeeded").obj(),
        "replaced",
        ("n", "Succeeded", ("True", "", ""), ""),
        bind=True,
    ),
    StatusCase(
        "pending, the put adds a condition of the kubelet's: written beside Podium's",
        _dumped().obj(),
        _dumped().condition("Ready", "False").obj(),
        "replaced",
        ("", "Pending", ("False", "Unschedulable", PODIUM_MESSAGE), ""),
        unschedulable=PODIUM_MESSAGE,
    ),
    StatusCase(
        "the put binds a pending pod: PodScheduled True, as the binding subresource sets it",
        _dumped().obj(),
        make_pod("p").req(cpu="1").node("n").obj(),
        "replaced",
        ("n", "Pending", ("True", "", ""), "n"),
        unschedulable=PODIUM_MESSAGE,
        nominate="n",
    ),
    StatusCase(
        "the put binds a pending pod with its own PodScheduled condition",
        _dumped().obj(),
        make_pod("p")
        .req(cpu="1")
        .node("n")
        .phase("Running")
        .condition("PodScheduled", "True", since=OLD_SINCE)
        .obj(),
        "replaced",
        ("n", "Running", ("True", "", ""), ""),
        unschedulable=PODIUM_MESSAGE,
    ),
]


@pytest.mark.parametrize("case", STATUS_CASES, ids=attrgetter("name"))
def test_a_put_never_writes_what_the_scheduler_owns(case: StatusCase) -> None:
    """pkg/registry/core/pod/strategy.go@v1.14 ``PrepareForUpdate`` keeps the old status: the
    PodScheduled condition, the nomination and the binding Podium wrote survive any put."""
    core = _core()
    core.write([make_node("n").obj(), make_node("m").obj(), case.first])
    uid = _pod(core, "p").metadata.uid
    if case.unschedulable:
        assert core.record_unschedulable("default", "p", uid, case.unschedulable) is not None
    if case.nominate:
        core.evict(_v("p", uid), case.nominate, [])
    if case.bind:
        _, _, failed = core.bind([Binding(namespace="default", name="p", uid=uid, node="n")])
        assert failed == []
    stored, before = _pod(core, "p"), core.revision
    revision, [status], changes = core.write([case.second])
    assert status.action == case.action
    pod = _pod(core, "p")
    if case.action == "unchanged":
        assert (revision, changes, pod) == (before, [], stored)
    else:
        assert [(c.type, c.revision) for c in changes] == [("Modified", before + 1)]
    scheduled = [
        (c.status, c.reason, c.message) for c in pod.status.conditions if c.type == "PodScheduled"
    ]
    assert (
        pod.spec.node_name,
        pod.status.phase,
        scheduled[0] if scheduled else None,
        pod.status.nominated_node_name,
    ) == case.want
    assert len(scheduled) <= 1
    # Applied a third time, the same put is a no-op whatever the second did.
    assert core.write([case.second])[2] == []


def test_a_put_that_binds_marks_the_condition_when_it_flips() -> None:
    """The binding's PodScheduled True gets the store's time (podutil.UpdatePodCondition), and
    keeps the condition's place among the kubelet's."""
    core = _core()
    core.write([_dumped().condition("Ready", "False").obj()])
    _, _, [change] = core.write([_dumped().condition("Ready", "False").spec(nodeName="n").obj()])
    assert isinstance(change.object, o.Pod)
    assert [
        (c.type, c.status, c.last_transition_time) for c in change.object.status.conditions
    ] == [
        ("PodScheduled", "True", T0_TEXT),
        ("Ready", "False", None),
    ]


def test_a_create_stores_the_dump_s_status_as_given(core: StoreCore) -> None:
    """The first apply of a dump keeps its status (a terminal phase frees no node it never
    held; the old cluster's message and nomination stand until Podium writes its own)."""
    _, [status], _ = core.write([_dumped().nominated("m").obj()])
    assert status.action == "created"
    pod = _pod(core, "p")
    assert (pod.status.phase, pod.status.nominated_node_name) == ("Pending", "m")
    [cond] = pod.status.conditions
    assert (cond.status, cond.reason, cond.message, cond.last_transition_time) == (
        "False",
        "Unschedulable",
        OLD_MESSAGE,
        OLD_SINCE,
    )


def test_replace_keeps_uid_and_timestamp_delete_then_create_gets_new_ones() -> None:
    clock = [T0]
    uids = (f"uid-{i}" for i in itertools.count(1))
    core = StoreCore(wall_clock=lambda: clock[0], new_uid=lambda: next(uids))
    core.write([make_pod("p").obj()])
    clock[0] = T0 + 60
    core.write([make_pod("p").label("v", "2").obj()])
    pod = _pod(core, "p")
    assert (pod.metadata.uid, pod.metadata.creation_timestamp) == ("uid-1", T0_TEXT)
    core.write([], [ObjectRef(kind="Pod", name="p")])
    core.write([make_pod("p").obj()])
    pod = _pod(core, "p")
    assert (pod.metadata.uid, pod.metadata.creation_timestamp) == ("uid-2", "2026-11-22T10:01:00Z")


def test_every_change_has_its_own_revision_strictly_increasing(core: StoreCore) -> None:
    seen: list[int] = []
    for batch in (
        [make_node("n1").obj(), make_node("n2").obj()],
        [make_pod("a").obj(), make_pod("a").label("x", "y").obj()],  # same pod twice: two changes
        [make_pod("b").obj()],
    ):
        _, _, changes = core.write(batch)
        seen.extend(c.revision for c in changes)
    _, _, changes = core.write(
        [], [ObjectRef(kind="Node", name="n1"), ObjectRef(kind="Pod", name="a")]
    )
    seen.extend(c.revision for c in changes)
    assert seen == list(range(1, 8))
    assert core.revision == 7
    assert _pod(core, "b").metadata.resource_version == "5"


@pytest.mark.parametrize(
    ("obj", "kind", "namespace"),
    [
        (decode(o.Pod, {"kind": "Pod", "metadata": {"name": "x"}}), "Pod", "default"),
        (
            decode(o.Pod, {"kind": "Pod", "metadata": {"name": "x", "namespace": "team"}}),
            "Pod",
            "team",
        ),
        (_service("x"), "Service", "default"),
        (_pvc("x", namespace=""), "PersistentVolumeClaim", "default"),
        (
            decode(o.Node, {"kind": "Node", "metadata": {"name": "x", "namespace": "team"}}),
            "Node",
            "",
        ),
        (
            decode(
                o.PersistentVolume,
                {"kind": "PersistentVolume", "metadata": {"name": "x", "namespace": "t"}},
            ),
            "PersistentVolume",
            "",
        ),
        (
            decode(
                o.StorageClass,
                {"kind": "StorageClass", "metadata": {"name": "x", "namespace": "t"}},
            ),
            "StorageClass",
            "",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_namespace_defaulting(core: StoreCore, obj: Any, kind: str, namespace: str) -> None:
    _, [status], [change] = core.write([obj])
    assert (status.namespace, change.namespace, change.object.metadata.namespace) == (
        namespace,
    ) * 3
    assert core.get(kind, namespace, "x") == change.object


def test_node_allocatable_defaults_to_capacity(core: StoreCore) -> None:
    core.write(
        [
            make_node("bare").capacity(cpu="4", memory="8Gi").obj(),
            make_node("given").capacity(cpu="4").allocatable({"cpu": "3500m"}).obj(),
        ]
    )
    bare, given = core.get("Node", "", "bare"), core.get("Node", "", "given")
    assert isinstance(bare, o.Node) and isinstance(given, o.Node)
    assert bare.status.allocatable == bare.status.capacity
    assert {k: str(v) for k, v in given.status.allocatable.items()} == {"cpu": "3500m"}


def test_one_request_is_atomic_with_one_error_per_bad_object(core: StoreCore) -> None:
    core.write([make_node("n0").obj()])
    exc = _rejected(
        core,
        [
            make_node("n1").obj(),
            make_pod("nope").ns("team").spec(priorityClassName="missing").obj(),
            make_pod("good").obj(),
            make_pod("greedy").priority(7).obj(),
        ],
    )
    assert exc.code == "invalid"
    assert exc.errors == [
        ObjectError(
            index=1,
            kind="Pod",
            namespace="team",
            name="nope",
            path="$.spec.priorityClassName",
            message="pod team/nope: no PriorityClass with name missing was found",
        ),
        ObjectError(
            index=3,
            kind="Pod",
            namespace="default",
            name="greedy",
            path="$.spec.priority",
            message=(
                "pod default/greedy: the integer value of priority (7) must not be provided in pod "
                "spec; priority admission controller computed 0 from the given PriorityClass name"
            ),
        ),
    ]
    assert exc.message.startswith(
        "2 of 4 objects rejected, nothing was written; first: pod team/nope"
    )
    assert exc.failure() == StoreFailure(code="invalid", message=exc.message, errors=exc.errors)
    assert core.revision == 1
    assert [x.metadata.name for x in core.all_objects()] == ["n0"]
    assert core.events_after(0)[1][-1].revision == 1


def test_delete_missing_fails_the_request_with_not_found(core: StoreCore) -> None:
    core.write([make_node("n1").obj()])
    exc = _rejected(
        core,
        [make_pod("p").obj()],
        [ObjectRef(kind="Node", name="n1"), ObjectRef(kind="Node", name="ghost")],
    )
    assert exc.code == "not_found"
    assert exc.message == "Node ghost not found; cannot delete it; nothing was written"
    assert [(e.index, e.kind, e.namespace, e.name, e.path) for e in exc.errors] == [
        (2, "Node", "", "ghost", None)
    ]
    assert core.revision == 1
    assert core.get("Node", "", "n1") is not None
    assert core.get("Pod", "default", "p") is None


def test_delete_of_unknown_kind_is_invalid(core: StoreCore) -> None:
    exc = _rejected(
        core, [], [ObjectRef(kind="Deployment", name="d"), ObjectRef(kind="Pod", name="x")]
    )
    assert exc.code == "invalid"  # one invalid error outweighs the not_found one
    assert [(e.index, e.path) for e in exc.errors] == [(0, "$.kind"), (1, None)]
    assert exc.errors[0].message.startswith("unknown kind 'Deployment'; expected one of Node, ")


def test_delete_reports_last_state_and_old(core: StoreCore) -> None:
    core.write([make_pod("p").obj()])
    stored = _pod(core, "p")
    _, [status], [change] = core.write([], [ObjectRef(kind="Pod", name="p", namespace="default")])
    assert (status.action, status.uid, status.resource_version) == ("deleted", "uid-1", "2")
    assert (change.type, change.revision, change.old) == ("Deleted", 2, stored)
    assert change.object == msgspec.structs.replace(
        stored, metadata=msgspec.structs.replace(stored.metadata, resource_version="2")
    )
    assert core.get("Pod", "default", "p") is None


def test_deleting_a_node_keeps_its_pods(core: StoreCore) -> None:
    core.write([make_node("n1").obj(), make_pod("p").node("n1").obj()])
    _, _, [change] = core.write([], [ObjectRef(kind="Node", name="n1")])
    assert change.type == "Deleted"
    assert _pod(core, "p").spec.node_name == "n1"


def test_pod_with_node_name_is_stored_bound_as_given(core: StoreCore) -> None:
    _, _, [change] = core.write([make_pod("p").node("elsewhere").obj()])
    assert (change.type, change.node) == ("Added", "")
    assert _pod(core, "p").spec.node_name == "elsewhere"
    assert core.stats().bound_pods == 1


# --------------------------------------------------------------------------- bound pods


def test_bound_pod_spec_is_immutable(core: StoreCore) -> None:
    core.write([make_pod("p").req(cpu="1").node("n1").obj()])
    exc = _rejected(core, [make_pod("p").req(cpu="2").node("n1").obj()])
    [err] = exc.errors
    assert (err.index, err.kind, err.namespace, err.name, err.path) == (
        0,
        "Pod",
        "default",
        "p",
        "$.spec",
    )
    assert err.message == (
        "pod default/p is bound to node n1; its spec is immutable (only its status, labels and "
        "annotations may change)"
    )
    moved = _rejected(core, [make_pod("p").req(cpu="1").node("n2").obj()])
    assert moved.errors[0].path == "$.spec"


def test_bound_pod_status_labels_annotations_may_change(core: StoreCore) -> None:
    core.write([make_pod("p").req(cpu="1").node("n1").obj()])
    done = make_pod("p").req(cpu="1").label("a", "b").annotation("k", "v").phase("Succeeded").obj()
    _, [status], [change] = core.write([done])
    assert (status.action, change.type) == ("replaced", "Modified")
    pod = _pod(core, "p")
    assert (pod.spec.node_name, pod.status.phase, pod.metadata.labels) == (
        "n1",
        "Succeeded",
        {"a": "b"},
    )


def test_pending_pod_spec_may_change(core: StoreCore) -> None:
    core.write([make_pod("p").req(cpu="1").obj()])
    _, [status], _ = core.write([make_pod("p").req(cpu="2").obj()])
    assert status.action == "replaced"


def test_a_put_with_node_name_binds_a_pending_pod_and_forgets_its_message(core: StoreCore) -> None:
    core.write([make_pod("p").obj()])
    assert core.record_unschedulable("default", "p", "uid-1", "0/0 nodes") is not None
    _, _, [change] = core.write([make_pod("p").node("n1").obj()])
    assert change.type == "Modified"
    assert core.record_unschedulable("default", "p", "uid-1", "0/0 nodes") is None  # bound


# --------------------------------------------------------------------------- priority admission

DEFAULT1 = _pc("default1", 1000, default=True)
DEFAULT2 = _pc("default2", 2000, default=True)
NONDEFAULT1 = _pc("nondefault1", 2000)
SYSTEM_CLUSTER_CRITICAL = _pc("system-cluster-critical", 2000000000, default=True)
PREEMPTION_POLICY_CLASS = _pc(
    "nopreemptionpolicy", 2000, default=True, policy="PreemptLowerPriority"
)


@dataclass(frozen=True)
class AdmissionCase:
    name: str
    classes: list[o.PriorityClass]
    pod: o.Pod
    priority: int | None = None
    preemption_policy: str | None = None
    path: str | None = None
    """The rejected field; None when the pod is admitted."""


def _p(name: str, **spec: Any) -> o.Pod:
    return make_pod(name).ns("namespace").spec(**spec).obj()


ADMISSION_CASES = [
    AdmissionCase(
        "Pod with priority class",
        [DEFAULT1, NONDEFAULT1],
        _p("pod-w-priorityclass", priorityClassName="default1"),
        1000,
        "PreemptLowerPriority",
    ),
    AdmissionCase(
        "Pod without priority class",
        [DEFAULT1],
        _p("pod-wo-priorityclass"),
        1000,
        "PreemptLowerPriority",
    ),
    AdmissionCase(
        "pod without priority class and no existing priority class",
        [],
        _p("pod-wo-priorityclass"),
        0,
    ),
    AdmissionCase(
        "pod without priority class and no default class",
        [NONDEFAULT1],
        _p("pod-wo-priorityclass"),
        0,
    ),
    AdmissionCase(
        "pod with a system priority class",
        [SYSTEM_CLUSTER_CRITICAL],
        _p("pod-w-system-priority", priorityClassName="system-cluster-critical"),
        2000000000,
        "PreemptLowerPriority",
    ),
    AdmissionCase(
        "Pod with non-existing priority class",
        [DEFAULT1, NONDEFAULT1],
        _p("pod-w-non-existing-priorityclass", priorityClassName="non-existing"),
        path="$.spec.priorityClassName",
    ),
    AdmissionCase(
        "pod with integer priority",
        [],
        _p("pod-w-integer-priority", priorityClassName="default1", priority=1000),
        path="$.spec.priorityClassName",
    ),
    AdmissionCase(
        "pod with priority that matches computed priority",
        [NONDEFAULT1],
        _p("pod-w-zero-priority-in-nonsystem-namespace", priority=0),
        0,
    ),
    AdmissionCase(
        "pod with priority that matches default priority",
        [DEFAULT2],
        _p("pod-w-priority-matching-default-priority", priority=2000),
        2000,
        "PreemptLowerPriority",
    ),
    AdmissionCase(
        "pod with priority that matches resolved priority",
        [SYSTEM_CLUSTER_CRITICAL],
        _p(
            "pod-w-priority-matching-resolved-default-priority",
            priorityClassName="system-cluster-critical",
            priority=2000000000,
        ),
        2000000000,
        "PreemptLowerPriority",
    ),
    AdmissionCase(
        "pod with nil preemtpion policy",
        [PREEMPTION_POLICY_CLASS],
        _p(
            "pod-never-preemption-policy-matching-resolved-preemption-policy",
            priorityClassName="nopreemptionpolicy",
            priority=2000,
        ),
        2000,
        "PreemptLowerPriority",
    ),
    AdmissionCase(
        "pod with preemtpion policy that matches resolved preemtpion policy",
        [PREEMPTION_POLICY_CLASS],
        _p(
            "pod-preemption-policy-matching-resolved-preemption-policy",
            priorityClassName="nopreemptionpolicy",
            priority=2000,
            preemptionPolicy="PreemptLowerPriority",
        ),
        2000,
        "PreemptLowerPriority",
    ),
    AdmissionCase(
        "pod with preemtpion policy that does't matches resolved preemtpion policy",
        [PREEMPTION_POLICY_CLASS],
        _p(
            "pod-preemption-policy-not-matching-resolved-preemption-policy",
            priorityClassName="nopreemptionpolicy",
            priority=2000,
            preemptionPolicy="Never",
        ),
        path="$.spec.preemptionPolicy",
    ),
    # Podium's own rows.
    AdmissionCase(
        "priority differing from the class is refused",
        [DEFAULT1],
        _p("greedy", priorityClassName="default1", priority=5),
        path="$.spec.priority",
    ),
    AdmissionCase(
        "pod without class keeps its own preemption policy",
        [],
        _p("never", preemptionPolicy="Never"),
        0,
        "Never",
    ),
    AdmissionCase(
        "class with preemption policy Never",
        [_pc("batch", 5, policy="Never")],
        _p("b", priorityClassName="batch"),
        5,
        "Never",
    ),
]


@pytest.mark.parametrize("case", ADMISSION_CASES, ids=attrgetter("name"))
def test_pod_admission(case: AdmissionCase) -> None:
    core = _core()
    core.write(case.classes)
    if case.path is not None:
        [err] = _rejected(core, [case.pod]).errors
        assert (err.index, err.path) == (0, case.path)
        assert core.get("Pod", "namespace", case.pod.metadata.name) is None
        return
    core.write([case.pod])
    pod = _pod(core, case.pod.metadata.name, "namespace")
    assert (pod.spec.priority, pod.spec.preemption_policy) == (
        case.priority,
        case.preemption_policy,
    )


def test_admission_messages_are_kubernetes_texts() -> None:
    core = _core()
    core.write([PREEMPTION_POLICY_CLASS])
    exc = _rejected(
        core,
        [
            _p("a", priorityClassName="nopreemptionpolicy", priority=1),
            _p("b", priorityClassName="nopreemptionpolicy", preemptionPolicy="Never"),
        ],
    )
    assert [e.message for e in exc.errors] == [
        "pod namespace/a: the integer value of priority (1) must not be provided in pod spec; "
        "priority admission controller computed 2000 from the given PriorityClass name",
        "pod namespace/b: the string value of PreemptionPolicy (Never) must not be provided in "
        "pod spec; priority admission controller computed PreemptLowerPriority from the given "
        "PriorityClass name",
    ]


def test_class_put_later_in_the_same_request_is_found(core: StoreCore) -> None:
    core.write([_p("a", priorityClassName="gold"), _pc("gold", 77)])
    assert _pod(core, "a", "namespace").spec.priority == 77


@pytest.mark.parametrize(
    ("name", "existing", "new", "error"),
    [
        # admission_test.go TestPriorityClassAdmission
        ("create operator with default class", [], DEFAULT1, False),
        ("create operator with one existing default class", [DEFAULT1], DEFAULT2, True),
        ("update operator with default class", [DEFAULT1], DEFAULT1, False),
        ("update operator with different default classes", [DEFAULT1], DEFAULT2, True),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_priority_class_admission(
    name: str, existing: list[o.PriorityClass], new: o.PriorityClass, error: bool
) -> None:
    core = _core()
    core.write(existing)
    if error:
        [err] = _rejected(core, [new]).errors
        assert (err.path, err.message) == (
            "$.globalDefault",
            "PriorityClass default1 is already marked as default. Only one default can exist",
        )
    else:
        core.write([new])


def test_replace_keeps_priority_even_after_the_class_is_gone(core: StoreCore) -> None:
    core.write([_pc("gold", 50), make_pod("p").spec(priorityClassName="gold").obj()])
    core.write([], [ObjectRef(kind="PriorityClass", name="gold")])
    _, [status], _ = core.write([make_pod("p").spec(priorityClassName="gold").obj()])
    assert status.action == "unchanged"
    assert _pod(core, "p").spec.priority == 50
    [err] = _rejected(core, [make_pod("p").spec(priorityClassName="silver").obj()]).errors
    assert err.path == "$.spec.priorityClassName"


# --------------------------------------------------------------------------- bind


def _volume_cluster(core: StoreCore) -> None:
    core.write(
        [
            make_node("n1").obj(),
            _pv("pv1"),
            _pv("pv2"),
            _pvc("c1"),
            _pvc("c2"),
            make_pod("p").pvc("c1").pvc("c2").obj(),  # uid-6
        ]
    )


def test_bind_commits_volumes_provisions_then_the_pod(core: StoreCore) -> None:
    _volume_cluster(core)
    pod_before = _pod(core, "p")
    binding = Binding(
        namespace="default",
        name="p",
        uid="uid-6",
        node="n1",
        volumes={"default/c1": "pv1"},
        provisions=["c2"],
    )
    revision, changes, failed = core.bind([binding])
    assert (revision, failed) == (10, [])
    assert [(c.revision, c.type, c.kind, c.name, c.node) for c in changes] == [
        (7, "Modified", "PersistentVolume", "pv1", ""),
        (8, "Modified", "PersistentVolumeClaim", "c1", ""),
        (9, "Modified", "PersistentVolumeClaim", "c2", ""),
        (10, "Bound", "Pod", "p", "n1"),
    ]
    pv = core.get("PersistentVolume", "", "pv1")
    assert isinstance(pv, o.PersistentVolume)
    assert pv.spec.claim_ref == o.ObjectReference(
        kind="PersistentVolumeClaim", namespace="default", name="c1", uid="uid-4"
    )
    assert pv.status.phase == "Bound"
    c1 = core.get("PersistentVolumeClaim", "default", "c1")
    assert isinstance(c1, o.PersistentVolumeClaim)
    assert (c1.spec.volume_name, c1.status.phase, c1.metadata.annotations) == (
        "pv1",
        "Bound",
        {ANNOTATION_BIND_COMPLETED: "yes"},
    )
    c2 = core.get("PersistentVolumeClaim", "default", "c2")
    assert isinstance(c2, o.PersistentVolumeClaim)
    assert (c2.spec.volume_name, c2.metadata.annotations) == ("", {ANNOTATION_SELECTED_NODE: "n1"})
    pod = _pod(core, "p")
    assert changes[-1].object == pod and changes[-1].old == pod_before
    assert pod.spec.node_name == "n1"
    assert pod.metadata.resource_version == "10"
    assert pod.status.conditions == [
        o.PodCondition(type="PodScheduled", status="True", last_transition_time=T0_TEXT)
    ]


@dataclass(frozen=True)
class BindCase:
    name: str
    binding: Binding
    code: str
    message: str
    setup: list[Any] = field(default_factory=list)


def _b(uid: str = "uid-6", node: str = "n1", name: str = "p", **kw: Any) -> Binding:
    return Binding(namespace="default", name=name, uid=uid, node=node, **kw)


BIND_CASES = [
    BindCase(
        "pod not found",
        _b(name="ghost"),
        "not_found",
        "pod default/ghost not found; cannot bind it to node n1",
    ),
    BindCase(
        "pod re-created",
        _b(uid="uid-0"),
        "conflict",
        "pod default/p has uid uid-6, not uid-0 (deleted and re-created); cannot bind it to node n1",
    ),
    BindCase(
        "pod already bound",
        _b(name="bound", uid="uid-7"),
        "conflict",
        "pod default/bound is already bound to node n1; cannot bind it to node n1",
        [make_pod("bound").node("n1").obj()],
    ),
    BindCase(
        "pod terminating",
        _b(name="t", uid="uid-7"),
        "conflict",
        "pod default/t is being deleted; cannot bind it to node n1",
        [decode(o.Pod, {"kind": "Pod", "metadata": {"name": "t", "deletionTimestamp": T0_TEXT}})],
    ),
    BindCase(
        "pod succeeded",
        _b(name="s", uid="uid-7"),
        "conflict",
        "pod default/s has terminated (phase Succeeded); cannot bind it to node n1",
        [make_pod("s").phase("Succeeded").obj()],
    ),
    BindCase(
        "pod failed",
        _b(name="f", uid="uid-7"),
        "conflict",
        "pod default/f has terminated (phase Failed); cannot bind it to node n1",
        [make_pod("f").phase("Failed").obj()],
    ),
    BindCase(
        "node not found",
        _b(node="n9"),
        "not_found",
        "node n9 not found; cannot bind pod default/p to it",
    ),
    BindCase(
        "claim not found",
        _b(volumes={"default/c9": "pv1"}),
        "not_found",
        "PersistentVolumeClaim default/c9 not found; cannot bind pod default/p to node n1",
    ),
    BindCase(
        "claim bound to another volume",
        _b(volumes={"default/c3": "pv1"}),
        "conflict",
        "PersistentVolumeClaim default/c3 is already bound to PersistentVolume pv2, not pv1; cannot bind pod default/p to node n1",
        [_pvc("c3", volume="pv2")],
    ),
    BindCase(
        "volume not found",
        _b(volumes={"default/c1": "pv9"}),
        "not_found",
        "PersistentVolume pv9 not found; cannot bind pod default/p to node n1",
    ),
    BindCase(
        "volume claimed by another claim",
        _b(volumes={"default/c1": "pv3"}),
        "conflict",
        "PersistentVolume pv3 is already claimed by other/c, not default/c1; cannot bind pod default/p to node n1",
        [_pv("pv3", {"namespace": "other", "name": "c"})],
    ),
    BindCase(
        "provisioned claim not found",
        _b(provisions=["c9"]),
        "not_found",
        "PersistentVolumeClaim default/c9 not found; cannot provision it for pod default/p on node n1",
    ),
    BindCase(
        "provisioned claim already bound",
        _b(provisions=["c3"]),
        "conflict",
        "PersistentVolumeClaim default/c3 is already bound to PersistentVolume pv2; cannot provision it for pod default/p on node n1",
        [_pvc("c3", volume="pv2")],
    ),
    # A failing later volume undoes nothing committed: the earlier volume was only staged.
    BindCase(
        "second volume fails, first not bound",
        _b(volumes={"default/c1": "pv1", "default/c2": "pv9"}),
        "not_found",
        "PersistentVolume pv9 not found; cannot bind pod default/p to node n1",
    ),
]


@pytest.mark.parametrize("case", BIND_CASES, ids=attrgetter("name"))
def test_bind_refused(case: BindCase) -> None:
    core = _core()
    _volume_cluster(core)
    core.write(case.setup)
    before, objects = core.revision, core.all_objects()
    revision, changes, [failure] = core.bind([case.binding])
    assert (failure.binding, failure.code, failure.message) == (
        case.binding,
        case.code,
        case.message,
    )
    assert (revision, changes) == (before, [])
    assert core.all_objects() == objects


def test_bindings_of_a_batch_stand_alone(core: StoreCore) -> None:
    core.write(
        [
            make_node("n1").obj(),
            _pv("pv1"),
            _pvc("a"),
            _pvc("b"),
            make_pod("x").obj(),
            make_pod("y").obj(),
        ]
    )
    first = Binding(
        namespace="default", name="x", uid="uid-5", node="n1", volumes={"default/a": "pv1"}
    )
    second = Binding(
        namespace="default", name="y", uid="uid-6", node="n1", volumes={"default/b": "pv1"}
    )
    again = Binding(namespace="default", name="x", uid="uid-5", node="n1")
    revision, changes, failed = core.bind([first, second, again])
    assert [(c.type, c.name) for c in changes] == [
        ("Modified", "pv1"),
        ("Modified", "a"),
        ("Bound", "x"),
    ]
    assert revision == changes[-1].revision
    assert [(f.binding, f.code) for f in failed] == [(second, "conflict"), (again, "conflict")]
    assert _pod(core, "y").spec.node_name == ""


def test_bind_to_a_volume_already_bound_to_that_claim_changes_only_the_pod(core: StoreCore) -> None:
    core.write(
        [
            make_node("n1").obj(),
            _pv("pv1", {"namespace": "default", "name": "c"}),
            _pvc("c"),
            make_pod("p").obj(),
        ]
    )
    b = Binding(namespace="default", name="p", uid="uid-4", node="n1", volumes={"default/c": "pv1"})
    core.bind([b])
    core.write([make_pod("q").obj()])
    _, changes, failed = core.bind(
        [
            Binding(
                namespace="default", name="q", uid="uid-5", node="n1", volumes={"default/c": "pv1"}
            )
        ]
    )
    assert failed == []
    assert [(c.type, c.name) for c in changes] == [("Bound", "q")]


# --------------------------------------------------------------------------- unschedulable


def test_record_unschedulable_dedupes_by_message(core: StoreCore) -> None:
    core.write([make_pod("p").obj()])
    first = core.record_unschedulable(
        "default", "p", "uid-1", "0/3 nodes are available: 3 Insufficient cpu."
    )
    assert first is not None
    assert (first.revision, first.type, first.message, first.old is not None) == (
        2,
        "Unschedulable",
        "0/3 nodes are available: 3 Insufficient cpu.",
        True,
    )
    assert (
        core.record_unschedulable(
            "default", "p", "uid-1", "0/3 nodes are available: 3 Insufficient cpu."
        )
        is None
    )
    second = core.record_unschedulable(
        "default", "p", "uid-1", "0/4 nodes are available: 4 Insufficient cpu."
    )
    assert second is not None and second.revision == 3
    pod = _pod(core, "p")
    assert pod.status.conditions == [
        o.PodCondition(
            type="PodScheduled",
            status="False",
            reason="Unschedulable",
            message="0/4 nodes are available: 4 Insufficient cpu.",
            last_transition_time=T0_TEXT,
        )
    ]
    assert pod.metadata.resource_version == "3"
    assert second.object == pod


def test_the_latest_attempts_message_is_recorded_after_a_put_changed_the_condition(
    core: StoreCore,
) -> None:
    # Issue 26: a put carrying an older message (a dump re-applied) replaced the condition; the
    # next attempt's message, the same as the one recorded before the put, was then deduped
    # away and `podium get pods -o wide` showed the older message for good.
    latest = "0/1 nodes are available: 1 Insufficient cpu."
    core.write([make_pod("p").obj()])
    assert core.record_unschedulable("default", "p", "uid-1", latest) is not None
    older = o.PodCondition(
        type="PodScheduled",
        status="False",
        reason="Unschedulable",
        message="0/5 nodes are available: 5 node(s) had taints that the pod didn't tolerate.",
    )
    pod = make_pod("p").phase("Pending").obj()
    core.write(
        [msgspec.structs.replace(pod, status=o.PodStatus(phase="Pending", conditions=[older]))]
    )
    core.record_unschedulable("default", "p", "uid-1", latest)
    [cond] = _pod(core, "p").status.conditions
    assert (cond.reason, cond.message) == ("Unschedulable", latest)
    # and once the pod says it, the same message again writes nothing
    assert core.record_unschedulable("default", "p", "uid-1", latest) is None


def test_record_unschedulable_dedupe_survives_a_restart() -> None:
    core = _core()
    core.write([make_pod("p").obj()])
    core.record_unschedulable("default", "p", "uid-1", "m")
    restored = _core()
    restored.restore(core.revision, [_pod(core, "p")])
    assert restored.record_unschedulable("default", "p", "uid-1", "m") is None
    assert restored.record_unschedulable("default", "p", "uid-1", "m2") is not None


def test_record_unschedulable_only_for_the_pending_pod_with_that_uid(core: StoreCore) -> None:
    core.write([make_node("n1").obj(), make_pod("p").obj()])
    assert core.record_unschedulable("default", "p", "uid-0", "m") is None
    assert core.record_unschedulable("default", "ghost", "uid-2", "m") is None
    core.bind([Binding(namespace="default", name="p", uid="uid-2", node="n1")])
    assert core.record_unschedulable("default", "p", "uid-2", "m") is None
    assert core.revision == 3


def test_record_unschedulable_is_forgotten_when_the_pod_is_deleted(core: StoreCore) -> None:
    core.write([make_pod("p").obj()])
    assert core.record_unschedulable("default", "p", "uid-1", "m") is not None
    core.write([], [ObjectRef(kind="Pod", name="p")])
    core.write([make_pod("p").obj()])
    assert core.record_unschedulable("default", "p", "uid-2", "m") is not None


def test_bind_replaces_the_unschedulable_condition(core: StoreCore) -> None:
    core.write([make_node("n1").obj(), make_pod("p").obj()])
    core.record_unschedulable("default", "p", "uid-2", "0/0 nodes")
    core.bind([Binding(namespace="default", name="p", uid="uid-2", node="n1")])
    [cond] = _pod(core, "p").status.conditions
    assert (cond.type, cond.status, cond.reason, cond.message) == ("PodScheduled", "True", "", "")


# --------------------------------------------------------------------------- log


def test_retention_gone_and_invalid() -> None:
    core = _core(retention=3)
    for i in range(5):
        core.write([make_node(f"n{i}").obj()])
    assert core.oldest_revision == 3
    with pytest.raises(StoreRejected) as gone:
        core.events_after(1)
    assert (gone.value.code, gone.value.revision) == ("gone", 3)
    assert gone.value.failure().revision == 3
    assert [c.revision for c in core.events_after(2)[1]] == [3, 4, 5]
    assert [c.revision for c in core.events_after(4)[1]] == [5]
    assert core.events_after(5) == (5, [])
    for bad in (6, -1):
        with pytest.raises(StoreRejected) as invalid:
            core.events_after(bad)
        assert invalid.value.code == "invalid"


def test_events_of_a_fresh_store() -> None:
    assert _core().events_after(0) == (0, [])


# --------------------------------------------------------------------------- reads


def _read_cluster(core: StoreCore) -> None:
    core.write(
        [
            make_pod("b").label("app", "web").obj(),
            make_pod("a").label("app", "db").obj(),
            make_pod("a").ns("alpha").label("app", "web").obj(),
            make_pod("c").ns("zeta").obj(),
            make_node("n2").obj(),
            make_node("n1").label("zone", "z1").obj(),
        ]
    )


WEB = o.LabelSelector(match_labels={"app": "web"})


@pytest.mark.parametrize(
    ("kind", "name", "namespace", "selector", "want"),
    [
        ("Pod", "", None, None, ["alpha/a", "default/a", "default/b", "zeta/c"]),
        ("Pod", "", "default", None, ["default/a", "default/b"]),
        ("Pod", "", "", None, ["default/a", "default/b"]),
        ("Pod", "", None, WEB, ["alpha/a", "default/b"]),
        ("Pod", "", "default", WEB, ["default/b"]),
        (
            "Pod",
            "",
            None,
            o.LabelSelector(
                match_expressions=[
                    o.LabelSelectorRequirement(key="app", operator="NotIn", values=["web"])
                ]
            ),
            ["default/a", "zeta/c"],
        ),
        ("Pod", "a", None, None, ["default/a"]),
        ("Pod", "a", "alpha", None, ["alpha/a"]),
        ("Pod", "a", None, WEB, []),
        ("Node", "", "default", None, ["/n1", "/n2"]),
        ("Node", "n1", "anything", None, ["/n1"]),
        ("Node", "", None, o.LabelSelector(match_labels={"zone": "z1"}), ["/n1"]),
        ("Service", "", None, None, []),
    ],
)
def test_read(
    core: StoreCore,
    kind: str,
    name: str,
    namespace: str | None,
    selector: o.LabelSelector | None,
    want: list[str],
) -> None:
    _read_cluster(core)
    revision, items = core.read(kind, name, namespace, selector)
    assert revision == 6
    assert [f"{i.metadata.namespace}/{i.metadata.name}" for i in items] == want


def test_read_errors(core: StoreCore) -> None:
    _read_cluster(core)
    with pytest.raises(StoreRejected) as missing:
        core.read("Pod", "c")  # in zeta, not default
    assert (missing.value.code, missing.value.message) == ("not_found", "Pod default/c not found")
    with pytest.raises(StoreRejected) as node:
        core.read("Node", "n9")
    assert node.value.message == "Node n9 not found"
    with pytest.raises(StoreRejected) as unknown:
        core.read("pods")
    assert unknown.value.code == "invalid"


@pytest.mark.parametrize(
    ("namespace", "selector", "after", "limit", "want", "remaining"),
    [
        (None, None, None, 2, ["alpha/a", "default/a"], 2),
        (None, None, ("default", "a"), 2, ["default/b", "zeta/c"], 0),
        (None, None, ("default", "a"), 1, ["default/b"], 1),
        (None, None, ("default", "aa"), 0, ["default/b", "zeta/c"], 0),  # a gone key
        (None, None, ("zeta", "c"), 2, [], 0),
        (None, None, None, 4, ["alpha/a", "default/a", "default/b", "zeta/c"], 0),
        ("default", None, None, 1, ["default/a"], 1),
        ("default", None, ("alpha", "z"), 5, ["default/a", "default/b"], 0),
        ("default", None, ("default", "b"), 5, [], 0),
        ("", None, ("default", "a"), 1, ["default/b"], 0),
        ("defaul", None, None, 5, [], 0),  # a prefix of a namespace is not it
        # A selector: Kubernetes' remainingItemCount is unset then, so is ``remaining``.
        (None, WEB, None, 1, ["alpha/a"], None),
        (None, WEB, ("alpha", "a"), 1, ["default/b"], 0),
        (None, WEB, None, 2, ["alpha/a", "default/b"], 0),
    ],
)
def test_read_page(
    core: StoreCore,
    namespace: str | None,
    selector: o.LabelSelector | None,
    after: tuple[str, str] | None,
    limit: int,
    want: list[str],
    remaining: int | None,
) -> None:
    _read_cluster(core)
    revision, items, left = core.read_page("Pod", namespace, selector, after, limit)
    assert revision == 6
    assert [f"{i.metadata.namespace}/{i.metadata.name}" for i in items] == want
    assert left == remaining


def test_pages_follow_keys_that_come_and_go_and_objects_that_change(core: StoreCore) -> None:
    def page(after: tuple[str, str] | None = None) -> list[str]:
        items = core.read_page("Pod", None, None, after, 10)[1]
        return [f"{i.metadata.namespace}/{i.metadata.name}:{i.spec.node_name}" for i in items]

    _read_cluster(core)
    assert page() == ["alpha/a:", "default/a:", "default/b:", "zeta/c:"]
    core.write([make_pod("aa").obj(), make_pod("b").node("n1").obj()])
    assert page(("alpha", "a")) == ["default/a:", "default/aa:", "default/b:n1", "zeta/c:"]
    core.write(
        [], [ObjectRef(kind="Pod", name="a"), ObjectRef(kind="Pod", name="c", namespace="zeta")]
    )
    assert page() == ["alpha/a:", "default/aa:", "default/b:n1"]


def test_all_objects_order_and_stats(core: StoreCore) -> None:
    core.write(
        [
            make_pod("p2").node("n1").obj(),
            _pc("gold", 1),
            _pvc("c"),
            make_pod("p1").obj(),
            _service("s"),
            make_node("n2").obj(),
            _pv("v"),
            decode(o.StorageClass, {"kind": "StorageClass", "metadata": {"name": "sc"}}),
            decode(
                o.ReplicationController,
                {"kind": "ReplicationController", "metadata": {"name": "rc"}},
            ),
            decode(o.ReplicaSet, {"kind": "ReplicaSet", "metadata": {"name": "rs"}}),
            decode(o.StatefulSet, {"kind": "StatefulSet", "metadata": {"name": "ss"}}),
            make_node("n1").obj(),
        ]
    )
    assert [(type(x).__name__, x.metadata.name) for x in core.all_objects()] == [
        ("Node", "n1"),
        ("Node", "n2"),
        ("PersistentVolume", "v"),
        ("PersistentVolumeClaim", "c"),
        ("StorageClass", "sc"),
        ("Service", "s"),
        ("ReplicationController", "rc"),
        ("ReplicaSet", "rs"),
        ("StatefulSet", "ss"),
        ("PriorityClass", "gold"),
        ("Pod", "p1"),
        ("Pod", "p2"),
    ]
    stats = core.stats()
    assert (stats.revision, stats.oldest_revision, stats.bound_pods) == (12, 1, 1)
    assert (
        stats.objects["Pod"] == 2
        and stats.objects["Node"] == 2
        and stats.objects["PriorityClass"] == 1
    )
    assert sum(stats.objects.values()) == 12


def test_restore_loads_state_and_the_unschedulable_memory() -> None:
    source = _core()
    source.write([make_pod("p").obj(), make_node("n").obj()])
    source.record_unschedulable("default", "p", "uid-1", "m")
    restored = _core()
    restored.restore(source.revision, source.all_objects())
    # The log starts empty at the restored revision (the durable one stays on disk).
    assert (restored.revision, restored.oldest_revision) == (3, 3)
    assert restored.events_after(3) == (3, [])
    assert restored.all_objects() == source.all_objects()
    assert restored.record_unschedulable("default", "p", "uid-1", "m") is None
    with pytest.raises(StoreRejected):
        restored.events_after(0)
    with pytest.raises(ValueError, match="empty store core"):
        restored.restore(0, [])


def test_the_log_keeps_changes_without_old(core: StoreCore) -> None:
    core.write([make_pod("p").obj()])
    _, _, [published] = core.write([make_pod("p").label("a", "b").obj()])
    assert published.old is not None
    [logged] = core.events_after(1)[1]
    assert logged == msgspec.structs.replace(published, old=None)


# --------------------------------------------------------------------------- evict (preemption)
#
# The API calls of kube-scheduler's preempt (pkg/scheduler/scheduler.go@v1.14): the preemptor's
# nominatedNodeName and the victims' deletion, here one transaction of the store.


def _evict_cluster(core: StoreCore) -> None:
    """uid-1 high, uid-2 low, uid-3 n1, uid-4 n2, uid-5 v1@n1, uid-6 v2@n1, uid-7 v3@n2,
    uid-8 other/v4@n1, uid-9 the pending preemptor hi (priority 1000)."""
    low = {"priorityClassName": "low"}
    core.write(
        [
            _pc("high", 1000),
            _pc("low", 10),
            make_node("n1").obj(),
            make_node("n2").obj(),
            make_pod("v1").spec(**low).node("n1").obj(),
            make_pod("v2").spec(**low).node("n1").obj(),
            make_pod("v3").spec(**low).node("n2").obj(),
            make_pod("v4").ns("other").spec(**low).node("n1").obj(),
            make_pod("hi").spec(priorityClassName="high").obj(),
        ]
    )


def _v(name: str, uid: str, namespace: str = "default") -> Victim:
    return Victim(namespace=namespace, name=name, uid=uid)


HI = _v("hi", "uid-9")
BY_HI = "preempted by default/hi (priority 1000)"


@dataclass(frozen=True)
class EvictCase:
    name: str
    node: str
    victims: list[Victim]
    changes: list[tuple[int, str, str, str, str, str]]  # revision, type, ns, name, node, message
    evicted: list[str]
    nominated_before: str = ""


EVICT_CASES = [
    EvictCase(
        "victims evicted then the preemptor nominated",
        "n1",
        [_v("v1", "uid-5"), _v("v2", "uid-6")],
        [
            (10, "Preempted", "default", "v1", "n1", BY_HI),
            (11, "Preempted", "default", "v2", "n1", BY_HI),
            (12, "Modified", "default", "hi", "", ""),
        ],
        ["default/v1", "default/v2"],
    ),
    EvictCase(
        "victims gone, re-created or on another node are skipped",
        "n1",
        [
            _v("ghost", "uid-0"),
            _v("v1", "uid-0"),
            _v("v3", "uid-7"),
            _v("v4", "uid-8", "other"),
            _v("v4", "uid-8", "other"),  # listed twice: gone the second time
        ],
        [
            (10, "Preempted", "other", "v4", "n1", BY_HI),
            (11, "Modified", "default", "hi", "", ""),
        ],
        ["other/v4"],
    ),
    EvictCase(
        "an empty victim namespace means default",
        "n2",
        [_v("v3", "uid-7", namespace="")],
        [
            (10, "Preempted", "default", "v3", "n2", BY_HI),
            (11, "Modified", "default", "hi", "", ""),
        ],
        ["default/v3"],
    ),
    EvictCase("nomination only", "n2", [], [(10, "Modified", "default", "hi", "", "")], []),
    EvictCase(
        "nomination unchanged: only the victims",
        "n1",
        [_v("v2", "uid-6")],
        [(11, "Preempted", "default", "v2", "n1", BY_HI)],
        ["default/v2"],
        nominated_before="n1",
    ),
    EvictCase("nomination unchanged, no victims: nothing", "n1", [], [], [], "n1"),
    EvictCase(
        "moved to another node",
        "n2",
        [_v("v3", "uid-7")],
        [
            (11, "Preempted", "default", "v3", "n2", BY_HI),
            (12, "Modified", "default", "hi", "", ""),
        ],
        ["default/v3"],
        nominated_before="n1",
    ),
    EvictCase(
        "cleared: no pod is bound to node '', so no victim is evicted",
        "",
        [_v("v1", "uid-5")],
        [(11, "Modified", "default", "hi", "", "")],
        [],
        nominated_before="n1",
    ),
    EvictCase("clearing no nomination: nothing", "", [], [], []),
]


@pytest.mark.parametrize("case", EVICT_CASES, ids=attrgetter("name"))
def test_evict(case: EvictCase) -> None:
    core = _core()
    _evict_cluster(core)
    if case.nominated_before:
        # A put cannot nominate an existing pod (the nomination is the scheduler's): evict does.
        core.evict(HI, case.nominated_before, [])
    before = core.revision
    stored = {
        (p.metadata.namespace, p.metadata.name): p
        for p in core.all_objects()
        if isinstance(p, o.Pod)
    }
    revision, changes, evicted = core.evict(HI, case.node, case.victims)
    assert [(c.revision, c.type, c.namespace, c.name, c.node, c.message) for c in changes] == (
        case.changes
    )
    assert evicted == case.evicted
    # One revision per change, following the last one; the log holds exactly these.
    assert [c.revision for c in changes] == list(range(before + 1, before + 1 + len(changes)))
    assert revision == core.revision == before + len(changes)
    assert core.events_after(before)[1] == [msgspec.structs.replace(c, old=None) for c in changes]
    for change in changes:
        old = stored[(change.namespace, change.name)]
        assert change.old == old
        assert change.object.metadata.resource_version == str(change.revision)
        if change.type == "Preempted":
            # The last state with the deletion's resourceVersion, and gone from the store.
            assert change.object == msgspec.structs.replace(
                old,
                metadata=msgspec.structs.replace(
                    old.metadata, resource_version=str(change.revision)
                ),
            )
            assert core.get("Pod", change.namespace, change.name) is None
    hi = _pod(core, "hi")
    assert hi.status.nominated_node_name == case.node
    assert hi.spec.node_name == ""
    if changes and changes[-1].type == "Modified":
        assert changes[-1].object == hi
    left = {key for key in stored if core.get("Pod", *key) is not None}
    assert left == set(stored) - {tuple(e.split("/")) for e in evicted}


@dataclass(frozen=True)
class EvictRefusedCase:
    name: str
    preemptor: Victim
    node: str
    message: str


EVICT_REFUSED_CASES = [
    EvictRefusedCase(
        "preemptor not found",
        _v("ghost", "uid-9"),
        "n1",
        "pod default/ghost not found; cannot nominate it to node n1 nor evict for it",
    ),
    EvictRefusedCase(
        "preemptor re-created",
        _v("hi", "uid-0"),
        "n1",
        "pod default/hi has uid uid-9, not uid-0 (deleted and re-created); cannot nominate it "
        "to node n1 nor evict for it",
    ),
    EvictRefusedCase(
        "preemptor bound",
        _v("v3", "uid-7"),
        "n1",
        "pod default/v3 is already bound to node n2; cannot nominate it to node n1 nor evict "
        "for it",
    ),
    EvictRefusedCase(
        "preemptor bound, clearing",
        _v("v3", "uid-7"),
        "",
        "pod default/v3 is already bound to node n2; cannot clear its nomination",
    ),
]


@pytest.mark.parametrize("case", EVICT_REFUSED_CASES, ids=attrgetter("name"))
def test_evict_refused_writes_nothing(case: EvictRefusedCase) -> None:
    core = _core()
    _evict_cluster(core)
    before, objects = core.revision, core.all_objects()
    with pytest.raises(StoreRejected) as info:
        core.evict(case.preemptor, case.node, [_v("v1", "uid-5"), _v("v2", "uid-6")])
    assert (info.value.code, info.value.message) == ("conflict", case.message)
    assert info.value.failure() == StoreFailure(code="conflict", message=case.message)
    assert (core.revision, core.all_objects()) == (before, objects)


def test_evict_priority_zero_without_classes_and_the_preemptors_memory_kept(
    core: StoreCore,
) -> None:
    core.write([make_node("n1").obj(), make_pod("v").node("n1").obj(), make_pod("p").obj()])
    assert core.record_unschedulable("default", "p", "uid-3", "0/1 nodes") is not None
    _, changes, evicted = core.evict(_v("p", "uid-3"), "n1", [_v("v", "uid-2")])
    assert [(c.type, c.name, c.message) for c in changes] == [
        ("Preempted", "v", "preempted by default/p (priority 0)"),
        ("Modified", "p", ""),
    ]
    assert evicted == ["default/v"]
    # The nomination keeps the pod's condition and its Unschedulable dedupe.
    nominated = changes[1].old
    assert isinstance(nominated, o.Pod)
    assert _pod(core, "p").status.conditions == nominated.status.conditions
    assert core.record_unschedulable("default", "p", "uid-3", "0/1 nodes") is None
    # An evicted pod's name starts afresh, as after a delete.
    core.write([make_pod("v").obj()])
    assert core.record_unschedulable("default", "v", "uid-4", "0/1 nodes") is not None
    assert core.stats().bound_pods == 0


def _group_cluster(core: StoreCore) -> None:
    """The eviction cluster, and two more pending pods of priority 1000 (hi2 uid-10, hi3
    uid-11) to nominate with hi as one pod group's members."""
    _evict_cluster(core)
    core.write(
        [
            make_pod("hi2").uid("uid-10").spec(priorityClassName="high").obj(),
            make_pod("hi3").uid("uid-11").spec(priorityClassName="high").obj(),
        ]
    )


def test_evict_for_a_group_evicts_on_every_node_then_nominates_every_member() -> None:
    """A gang's preemption (issue 24): each member's victims on its own node, all in one
    transaction, every Preempted change before the first nomination; a member with no victims
    is only nominated."""
    core = _core()
    _group_cluster(core)
    before = core.revision
    group = [
        Preemptor(
            namespace="default", name="hi2", uid="uid-10", node="n2", victims=[_v("v3", "uid-7")]
        ),
        Preemptor(namespace="default", name="hi3", uid="uid-11", node="n1"),
    ]
    revision, changes, evicted = core.evict(HI, "n1", [_v("v1", "uid-5")], group)
    assert [(c.type, c.name, c.node, c.message) for c in changes] == [
        ("Preempted", "v1", "n1", BY_HI),
        ("Preempted", "v3", "n2", "preempted by default/hi2 (priority 1000)"),
        ("Modified", "hi", "", ""),
        ("Modified", "hi2", "", ""),
        ("Modified", "hi3", "", ""),
    ]
    assert evicted == ["default/v1", "default/v3"]
    assert revision == core.revision == before + 5
    assert [_pod(core, n).status.nominated_node_name for n in ("hi", "hi2", "hi3")] == [
        "n1",
        "n2",
        "n1",
    ]
    assert core.get("Pod", "default", "v2") is not None


def test_evict_a_victim_on_its_own_node_for_a_preemptor_nominated_elsewhere() -> None:
    """A placed gang evicted whole (issue 24): the member on another node than the
    preemptor's names its node and is evicted there, in the same transaction; a victim naming a
    node it is not on is skipped, as one moved since the decision."""
    core = _core()
    _group_cluster(core)
    victims = [
        _v("v1", "uid-5"),
        msgspec.structs.replace(_v("v3", "uid-7"), node="n2"),
        msgspec.structs.replace(_v("v2", "uid-6"), node="n2"),
    ]
    _, changes, evicted = core.evict(HI, "n1", victims)
    assert [(c.type, c.name, c.node) for c in changes] == [
        ("Preempted", "v1", "n1"),
        ("Preempted", "v3", "n2"),
        ("Modified", "hi", ""),
    ]
    assert evicted == ["default/v1", "default/v3"]
    assert core.get("Pod", "default", "v2") is not None


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (
            Preemptor(namespace="default", name="ghost", uid="uid-0", node="n2"),
            "pod default/ghost not found; cannot nominate it to node n2 nor evict for it (nor "
            "for the other members of its pod group: nothing was evicted)",
        ),
        (
            Preemptor(namespace="default", name="v3", uid="uid-7", node="n1"),
            "pod default/v3 is already bound to node n2; cannot nominate it to node n1 nor "
            "evict for it (nor for the other members of its pod group: nothing was evicted)",
        ),
    ],
    ids=["member gone", "member bound"],
)
def test_evict_for_a_group_with_one_member_refused_writes_nothing(
    member: Preemptor, message: str
) -> None:
    core = _core()
    _group_cluster(core)
    before, objects = core.revision, core.all_objects()
    with pytest.raises(StoreRejected) as info:
        core.evict(HI, "n1", [_v("v1", "uid-5"), _v("v2", "uid-6")], [member])
    assert (info.value.code, info.value.message) == ("conflict", message)
    assert (core.revision, core.all_objects()) == (before, objects)


# --------------------------------------------------------------------------- names and gates


def _gated(name: str, *gates: str, node: str = "") -> o.Pod:
    pod = make_pod(name).spec(schedulingGates=[{"name": g} for g in gates])
    return (pod.node(node) if node else pod).obj()


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        (make_pod("a/b").obj(), "$.metadata.name"),
        (make_pod("x" * 10_000).obj(), "$.metadata.name"),
        (make_pod("ünicode").obj(), "$.metadata.name"),
        (make_pod("p").ns("Shop").obj(), "$.metadata.namespace"),
        (make_pod("p").label("a,b", "x").obj(), "$.metadata.labels['a,b']"),
        (make_pod("p").label("!x", "").obj(), "$.metadata.labels['!x']"),
        (make_pod("p").label("app", "a b").obj(), "$.metadata.labels['app']"),
        (make_node("Node_1").obj(), "$.metadata.name"),
        (_service("web.example"), "$.metadata.name"),
        (make_pod("p").annotation("a", "b" * 262_144).obj(), "$.metadata.annotations"),
        (_gated("p", "g", "g"), "$.spec.schedulingGates[1].name"),
        (_gated("p", "g", node="n"), "$.spec.nodeName"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_put_refuses_what_the_api_server_refuses(core: StoreCore, obj: Any, path: str) -> None:
    err = _rejected(core, [make_node("n").obj(), obj])
    assert err.code == "invalid"
    [e] = err.errors
    assert (e.index, e.path) == (1, path)
    assert " is invalid: " in e.message
    assert core.revision == 0


def test_invalid_message_is_kubernetes_field_error(core: StoreCore) -> None:
    [e] = _rejected(core, [make_pod("p").label("a,b", "x").obj()]).errors
    assert e.message.startswith(
        'Pod default/p is invalid: metadata.labels: Invalid value: "a,b": name part must consist'
    )


def test_generate_name_gets_a_random_suffix_and_another_on_a_clash() -> None:
    suffixes = iter(["abcde", "abcde", "xyz24"])
    core = StoreCore(wall_clock=lambda: T0, new_suffix=lambda: next(suffixes))
    web = decode(o.Pod, {"kind": "Pod", "metadata": {"generateName": "web-"}})
    _, statuses, changes = core.write([web, web])
    assert [(s.name, s.action) for s in statuses] == [
        ("web-abcde", "created"),
        ("web-xyz24", "created"),
    ]
    assert [c.object.metadata.name for c in changes] == ["web-abcde", "web-xyz24"]
    assert _pod(core, "web-abcde").metadata.generate_name == "web-"


def test_generate_name_is_cut_to_58_characters_and_uses_kubernetes_alphabet(
    core: StoreCore,
) -> None:
    long = decode(o.Pod, {"kind": "Pod", "metadata": {"generateName": "a" * 80}})
    _, [status], _ = core.write([long])
    assert status.name[:58] == "a" * 58 and len(status.name) == 63
    assert set(status.name[58:]) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_generate_name_gives_up_after_eight_clashes() -> None:
    core = StoreCore(wall_clock=lambda: T0, new_suffix=lambda: "bbbbb")
    web = decode(o.Pod, {"kind": "Pod", "metadata": {"generateName": "web-"}})
    core.write([web])
    [e] = _rejected(core, [web]).errors
    assert e.path == "$.metadata.generateName"


def test_gated_pod_is_created_with_the_scheduling_gated_condition(core: StoreCore) -> None:
    core.write([_gated("p", "example.com/quota")])
    [cond] = _pod(core, "p").status.conditions
    assert (cond.type, cond.status, cond.reason, cond.message) == (
        "PodScheduled",
        "False",
        "SchedulingGated",
        "Scheduling is blocked due to non-empty scheduling gates",
    )
    # Re-applied unchanged; gates may be removed but not added.
    assert core.write([_gated("p", "example.com/quota")])[1][0].action == "unchanged"
    [e] = _rejected(core, [_gated("p", "example.com/quota", "more")]).errors
    assert e.path == "$.spec.schedulingGates[1].name"
    assert "only deletion is allowed, but found new scheduling gate 'more'" in e.message
    assert core.write([make_pod("p").obj()])[1][0].action == "replaced"
    assert _pod(core, "p").spec.scheduling_gates == []
    [e] = _rejected(core, [_gated("p", "again")]).errors
    assert e.path == "$.spec.schedulingGates[0].name"


# --------------------------------------------------------------------------- undo


def test_undo_takes_back_the_newest_changes_as_if_never_made(core: StoreCore) -> None:
    core.write([make_node("n1").obj(), make_pod("p1").obj(), make_pod("p2").obj()])
    before = (core.revision, core.all_objects(), core.events_after(0))
    _, _, written = core.write(
        [make_pod("p1").label("app", "web").obj(), make_pod("p3").obj()],
        [ObjectRef(kind="Pod", namespace="default", name="p2")],
    )
    p1 = core.get("Pod", "default", "p1")
    assert p1 is not None
    _, bound, _ = core.bind(
        [Binding(namespace="default", name="p1", uid=p1.metadata.uid, node="n1")]
    )
    core.undo(written + bound)
    assert (core.revision, core.all_objects(), core.events_after(0)) == before
    assert [o.metadata.name for o in core.read("Pod")[1]] == ["p1", "p2"]
    # The revisions are handed out again.
    revision, _, _ = core.write([make_pod("p4").obj()])
    assert revision == 4


def test_undo_refuses_changes_that_are_not_the_newest(core: StoreCore) -> None:
    _, _, first = core.write([make_node("n1").obj()])
    core.write([make_node("n2").obj()])
    with pytest.raises(ValueError, match="change 1 is not the newest \\(revision 2\\)"):
        core.undo(first)
