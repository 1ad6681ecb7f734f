"""The queue-side gang tables of scheduler-plugins' Coscheduling and of Kubernetes'
GangScheduling plugin, ported to the queue core (issue 24, "Tests"; Apache-2.0, see NOTICE).

Sources, each table naming its own test and commit:

- kubernetes-sigs/scheduler-plugins pkg/coscheduling/coscheduling_test.go at 2d2031088032
  (its go.mod: Kubernetes v1.29.4): ``TestLess``, ``TestPodGroupBackoffTime``;
- kubernetes-sigs/scheduler-plugins pkg/coscheduling/core/core_test.go at d7ae0994b813:
  ``TestPreFilter``; pkg/coscheduling/coscheduling.go at fae4102fb12d (``Less``' three steps);
- kubernetes/kubernetes pkg/scheduler/framework/plugins/gangscheduling/gangscheduling_test.go
  at 037891575693 (after v1.36: PodGroup ``scheduling.k8s.io/v1beta1``, pods joining with
  ``spec.schedulingGroup.podGroupName``): ``TestPreEnqueue``, ``Test_isSchedulableAfterPodAdded``,
  ``Test_isSchedulableAfterPodGroupAdded``, ``Test_isSchedulableAfterPodGroupUpdated``.

How a plugin's verdict reads in Podium's queue (actors/queue/core.py, "Pod groups"):

- QueueSort ``Less(p1, p2)`` is the order :meth:`SchedulingQueue.pop_batch` hands them out:
  a gang is a unit ordered by its priority, then when the queue saw its group, then the
  group's ``creationTimestamp``, then its key;
- PreEnqueue and Coscheduling's PreFilter passing is the pod being popped (alone, or with its
  unit); failing on a group's size or absence is the pod *waiting* before the queue, with
  :meth:`SchedulingQueue.waiting_message` saying why;
- a queueing hint's ``Queue`` is the event taking a waiting member to activeQ, ``QueueSkip``
  the member staying where it was.

Where Podium decides otherwise on purpose, the row says so in ``differs`` and
docs/differences.md ("Gang scheduling") says why. Rows about CompositePodGroups (Kubernetes
after v1.36) are not ported: Podium has no CompositePodGroup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import pytest
from builders import make_pod, make_pod_group
from gangs import pod_group

from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.queue.core import PoppedGang, SchedulingQueue
from podium.protocol import objects as o

PLUGINS = "scheduling.x-k8s.io/v1alpha1"
"""scheduler-plugins' PodGroup API version (its ``v1alpha1.PodGroupLabel`` form of joining)."""


def _created(seconds: float) -> str:
    """An RFC 3339 creationTimestamp ``seconds`` after a fixed instant (Coscheduling's
    ``now.Add(time.Second * n)``)."""
    return f"2026-01-01T00:00:{int(seconds):02d}Z"


def coscheduling_group(name: str, ns: str, min_member: int, created: float = 0.0) -> o.PodGroup:
    """A scheduler-plugins PodGroup (``tu.MakePodGroup().Name(..).Namespace(..)``)."""
    b = make_pod_group(name).ns(ns).min_member(min_member, PLUGINS)
    b.d["metadata"]["creationTimestamp"] = _created(created)
    b.d["metadata"]["uid"] = f"uid-pg-{ns}-{name}"
    return b.obj()


def coscheduling_pod(
    name: str, ns: str, group: str | None = None, priority: int = 0, node: str = ""
) -> PodInfo:
    """A pod labelled ``scheduling.x-k8s.io/pod-group`` (``st.MakePod()...Label(
    v1alpha1.PodGroupLabel, group)``)."""
    b = make_pod(name).ns(ns).uid(f"uid-{ns}-{name}").priority(priority)
    if group is not None:
        b.group(group, "coscheduling")
    if node:
        b.node(node)
    return b.info()


def kubernetes_pod(name: str, ns: str, group: str | None = None, node: str = "") -> PodInfo:
    """A pod joining ``group`` by ``spec.schedulingGroup.podGroupName`` (``st.MakePod()
    ...PodGroupName(group)``)."""
    b = make_pod(name).ns(ns).uid(f"uid-{ns}-{name}")
    if group is not None:
        b.group(group)
    if node:
        b.node(node)
    return b.info()


def drain(q: SchedulingQueue, now: float) -> list[tuple[list[str], PoppedGang | None]]:
    """Every batch :meth:`SchedulingQueue.pop_batch` hands out, one pod at a time for pods
    (a unit comes whole), until activeQ is empty."""
    batches: list[tuple[list[str], PoppedGang | None]] = []
    while True:
        popped, gangs = q.pop_batch(now, 1)
        if not popped:
            return batches
        assert len(gangs) <= 1  # one unit a batch of one
        batches.append(([p.pod.name for p in popped], gangs[0] if gangs else None))


def popped_names(q: SchedulingQueue, now: float) -> list[str]:
    return [name for names, _ in drain(q, now) for name in names]


# --------------------------------------------------------------------------- QueueSort


@dataclass(frozen=True)
class Pod:
    name: str
    ns: str
    priority: int
    group: str | None = None
    added: float = 1.0  # InitialAttemptTimestamp (when the source leaves it nil: any time)


@dataclass(frozen=True)
class Group:
    name: str
    ns: str
    created: float = 0.0  # tu.MakePodGroup() without .Time(): the zero time, first


@dataclass(frozen=True)
class LessCase:
    """One ``TestLess`` row: ``less`` is the source's ``want`` (``Less(p1, p2)``: p1 first);
    ``order`` the order Podium pops them when it differs from that, ``waiting`` the pods it
    holds before the queue instead, and ``differs`` why."""

    name: str
    p1: Pod
    p2: Pod
    groups: tuple[Group, ...]
    less: bool
    order: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    differs: str = ""


LOW, HIGH = 10, 100

# coscheduling_test.go@2d2031088032 TestLess. Each group is seen by the queue at its
# creationTimestamp (its put is committed then), each pod at its InitialAttemptTimestamp.
LESS = [
    LessCase(
        "p1.priority less than p2.priority",
        Pod("p1", "ns1", LOW),
        Pod("p2", "ns2", HIGH),
        (),
        less=False,
    ),
    LessCase(
        "p1.priority greater than p2.priority",
        Pod("p1", "ns1", HIGH),
        Pod("p2", "ns2", LOW),
        (),
        less=True,
    ),
    LessCase(
        "equal priority. p1 is added to schedulingQ earlier than p2",
        Pod("p1", "ns1", HIGH, added=1),
        Pod("p2", "ns2", HIGH, added=2),
        (),
        less=True,
    ),
    LessCase(
        "equal priority. p2 is added to schedulingQ earlier than p1",
        Pod("p1", "ns1", HIGH, added=2),
        Pod("p2", "ns2", HIGH, added=1),
        (),
        less=False,
    ),
    LessCase(
        "p1.priority less than p2.priority, p1 belongs to pg1",
        Pod("p1", "ns1", LOW, "pg1"),
        Pod("p2", "ns2", HIGH),
        (Group("pg1", "ns1"),),
        less=False,
    ),
    LessCase(
        "p1.priority greater than p2.priority, p1 belongs to pg1",
        Pod("p1", "ns1", HIGH, "pg1"),
        Pod("p2", "ns2", LOW),
        (Group("pg1", "ns1"),),
        less=True,
    ),
    LessCase(
        "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1",
        Pod("p1", "ns1", HIGH, "pg1", added=1),
        Pod("p2", "ns2", HIGH, added=2),
        (Group("pg1", "ns1", created=1),),
        less=True,
    ),
    LessCase(
        "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg1",
        Pod("p1", "ns1", HIGH, "pg1", added=2),
        Pod("p2", "ns2", HIGH, added=1),
        (Group("pg1", "ns1", created=2),),
        less=False,
    ),
    LessCase(
        "p1.priority less than p2.priority, p1 belongs to pg1 and p2 belongs to pg2",
        Pod("p1", "ns1", LOW, "pg1"),
        Pod("p2", "ns2", HIGH, "pg2"),
        (Group("pg1", "ns1", created=1), Group("pg2", "ns2", created=2)),
        less=False,
    ),
    LessCase(
        # The source labels p2 "pg1" although the name says pg2: p2 names ns2/pg1, which does
        # not exist.
        "p1.priority greater than p2.priority, p1 belongs to pg1 and and p2 belongs to pg2",
        Pod("p1", "ns1", HIGH, "pg1"),
        Pod("p2", "ns2", LOW, "pg1"),
        (Group("pg1", "ns1", created=1), Group("pg2", "ns2", created=2)),
        less=True,
        order=("p1",),
        waiting=("p2",),
        differs="a pod naming a group that does not exist waits for it (Kubernetes' "
        "GangScheduling PreEnqueue); Coscheduling sorts it by its own timestamp and lets it in",
    ),
    LessCase(
        "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1 and p2 "
        "belongs to pg2",
        Pod("p1", "ns1", HIGH, "pg1", added=1),
        Pod("p2", "ns2", HIGH, "pg2", added=2),
        (Group("pg1", "ns1", created=1), Group("pg2", "ns2", created=2)),
        less=True,
    ),
    LessCase(
        "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg2 and p2 "
        "belongs to pg1",
        Pod("p1", "ns", LOW, "pg2", added=1),
        Pod("p2", "ns", HIGH, "pg1", added=2),
        (Group("pg1", "ns", created=1), Group("pg2", "ns", created=2)),
        less=False,
    ),
    LessCase(
        # Both pods are labelled pg2; only ns2 has one, so p1's group does not exist.
        "equal priority and creation time, p1 belongs pg1 and p2 belong to pg2",
        Pod("p1", "ns1", HIGH, "pg2", added=1),
        Pod("p2", "ns2", HIGH, "pg2", added=1),
        (Group("pg1", "ns1", created=1), Group("pg2", "ns2", created=2)),
        less=True,
        order=("p2",),
        waiting=("p1",),
        differs="p1's group ns1/pg2 does not exist: Podium holds p1 until it does, where "
        "Coscheduling falls back to p1's own timestamp and sorts it first",
    ),
    LessCase(
        "equal priority and creation time, and p2 belong to pg2",
        Pod("p1", "ns1", HIGH, added=1),
        Pod("p2", "ns2", HIGH, "pg2", added=1),
        (Group("pg2", "ns2", created=2),),
        less=True,
    ),
    # coscheduling.go@fae4102fb12d Less, step 3 ("Compare the keys of PodGroups/Pods"): equal
    # priority and creation, so the keys decide. Podium compares the groups' keys
    # (ns/pg-a < ns/pg-b); Coscheduling the pods' (ns/p1 < ns/p2): the same order here.
    LessCase(
        "Less step 3: equal priority and creation time, the keys decide",
        Pod("p1", "ns", HIGH, "pg-a", added=1),
        Pod("p2", "ns", HIGH, "pg-b", added=1),
        (Group("pg-b", "ns", created=1), Group("pg-a", "ns", created=1)),
        less=True,
    ),
]


@pytest.mark.parametrize("case", LESS, ids=attrgetter("name"))
def test_coscheduling_less(case: LessCase) -> None:
    q = SchedulingQueue()
    events: list[tuple[float, int, str]] = []
    events += [(g.created, 0, g.name + "/" + g.ns) for g in case.groups]
    events += [(p.added, 1, p.name) for p in (case.p1, case.p2)]
    pods = {p.name: p for p in (case.p1, case.p2)}
    groups = {g.name + "/" + g.ns: g for g in case.groups}
    for at, kind, name in sorted(events):
        if kind == 0:
            g = groups[name]
            # minMember 1: each pod is its group's quorum (Less does not look at the size).
            q.group_changed(f"{g.ns}/{g.name}", coscheduling_group(g.name, g.ns, 1, at), at)
        else:
            p = pods[name]
            q.add(coscheduling_pod(p.name, p.ns, p.group, p.priority), at)
    want = case.order or (("p1", "p2") if case.less else ("p2", "p1"))
    assert tuple(popped_names(q, 10.0)) == want
    for name in case.waiting:
        p = pods[name]
        assert q.lookup(f"{p.ns}/{name}")[0] == "waiting"
        assert q.waiting_message(f"{p.ns}/{name}").endswith(": the group does not exist")


# --------------------------------------------------------------------------- PreFilter


@dataclass(frozen=True)
class PreFilterCase:
    """One ``TestPreFilter`` row: the pod under test is ``ns/<pod>``; ``success`` is the
    source's ``expectedSuccess``; ``waiting`` the message Podium holds the pod with instead of
    popping it ("" when it is popped)."""

    name: str
    pod: PodInfo
    pending: tuple[PodInfo, ...]
    groups: tuple[o.PodGroup, ...]
    success: bool
    waiting: str = ""
    differs: str = ""


def _pg(name: str, min_member: int, min_resources: dict[str, str] | None = None) -> o.PodGroup:
    b = make_pod_group(name).ns("ns").min_member(min_member, PLUGINS)
    if min_resources:
        b.spec(minResources=min_resources)
    return b.obj()


_P1B_P1C = (coscheduling_pod("p1b", "ns", "pg1"), coscheduling_pod("p1c", "ns", "pg1"))
_MIN_RESOURCES = (
    "minResources is read but not used: Podium decides a gang by placing its members (every "
    "predicate, on one snapshot), not by a cluster-wide sum first; Coscheduling's own TODO says "
    "its sum cannot catch affinity or taints anyway"
)

# core/core_test.go@d7ae0994b813 TestPreFilter (two nodes of 4 CPUs).
PREFILTER = [
    PreFilterCase(
        "pod does not belong to any pg",
        coscheduling_pod("p", "ns"),
        (coscheduling_pod("p1", "ns", "pg1"), coscheduling_pod("p2", "ns", "pg2")),
        (_pg("pg1", 1), _pg("pg2", 1)),
        success=True,
    ),
    PreFilterCase(
        "pod belongs to a non-existent pg",
        coscheduling_pod("p", "ns", "pg-non-existent"),
        (),
        (_pg("pg1", 1),),
        success=True,
        waiting="waiting for pod group ns/pg-non-existent: the group does not exist",
        differs="Kubernetes' GangScheduling PreEnqueue and its Scheduling Group page: a pod "
        "naming a missing group stays pending; Coscheduling passes it here and refuses it at "
        "Permit (TestPermit, 'pod specifies a non-existent pg': PodGroupNotFound)",
    ),
    PreFilterCase(
        "pod count less than minMember",
        coscheduling_pod("p", "ns", "pg1"),
        (coscheduling_pod("pg2-1", "ns", "pg2"),),
        (_pg("pg1", 2), _pg("pg2", 2)),
        success=False,
        waiting="waiting for pod group ns/pg1: 1 of 2 pods exist",
    ),
    # The source's "equal" and "more" rows hold the same three pods for minMember 2.
    PreFilterCase(
        "pod count equal minMember",
        coscheduling_pod("p1a", "ns", "pg1"),
        _P1B_P1C,
        (_pg("pg1", 2), _pg("pg2", 2)),
        success=True,
    ),
    PreFilterCase(
        "pod count more than minMember",
        coscheduling_pod("p1a", "ns", "pg1"),
        _P1B_P1C,
        (_pg("pg1", 2), _pg("pg2", 2)),
        success=True,
    ),
    PreFilterCase(
        "cluster's resource satisfies minResource",
        coscheduling_pod("p1a", "ns", "pg1"),
        _P1B_P1C,
        (_pg("pg1", 2, {"cpu": "6"}),),
        success=True,
    ),
    PreFilterCase(
        "cluster's resource cannot satisfy minResource",
        coscheduling_pod("p1a", "ns", "pg1"),
        _P1B_P1C,
        (_pg("pg1", 2, {"cpu": "10"}),),
        success=False,
        differs=_MIN_RESOURCES,
    ),
]


@pytest.mark.parametrize("case", PREFILTER, ids=attrgetter("name"))
def test_coscheduling_prefilter(case: PreFilterCase) -> None:
    q = SchedulingQueue()
    for group in case.groups:
        q.group_changed(f"ns/{group.metadata.name}", group, 0.0)
    for pod in (*case.pending, case.pod):
        q.add(pod, 0.0)
    popped = popped_names(q, 0.0)
    if case.waiting:
        assert case.pod.name not in popped
        assert q.lookup(case.pod.key)[0] == "waiting"
        assert q.waiting_message(case.pod.key) == case.waiting
    else:
        assert case.pod.name in popped


def test_coscheduling_pod_group_backoff_time() -> None:
    """coscheduling_test.go@2d2031088032 TestPodGroupBackoffTime, "prevent pod falling into
    infinite scheduling loop": three pods of pg1 (minMember 3); pod1 waits at Permit and
    activates pod2 and pod3; pod2 fails (PostFilter), which backs the group off (1 s); then
    pod3's PreFilter answers UnschedulableAndUnresolvable, "podGroup ns/pg1 failed recently".

    In Podium the siblings are never apart to be activated: the unit's one pop hands out all
    three. A failed attempt backs off the unit as one pod would be (the group's own attempts
    and backoff, 1 s first): no member is popped until it ends, then all three together."""
    q = SchedulingQueue(pod_initial_backoff_seconds=1.0)
    q.group_changed("ns/pg1", coscheduling_group("pg1", "ns", 3), 0.0)
    pods = [coscheduling_pod(f"pod{i}", "ns", "pg1") for i in (1, 2, 3)]
    for pod in pods:
        q.add(pod, 0.0)
    popped, (gang,) = q.pop_batch(0.0, 1)
    assert [p.pod.name for p in popped] == ["pod1", "pod2", "pod3"]  # pod1's siblings came along
    assert (gang.key, gang.min_count, gang.members) == ("ns/pg1", 3, 3)
    # pod2 failed: the group is requeued whole (a move request arrived meanwhile: backoffQ).
    q.move_all_to_active_queue(0.0)
    assert q.requeue_group("ns/pg1", pods, popped[0].cycle, "unschedulable", 0.0) == (
        "backoff",
        3,
    )
    assert {q.lookup(p.key)[0] for p in pods} == {"backoff"}
    assert {q.backoff_expiry(p.key) for p in pods} == {1.0}
    # "failed recently": pod3 is not tried while the group backs off ...
    assert q.pop_batch(0.5, 1) == ([], [])
    # ... and afterwards the whole group is, once.
    assert [names for names, _ in drain(q, 1.0)] == [["pod1", "pod2", "pod3"]]


# --------------------------------------------------------------------------- PreEnqueue


@dataclass(frozen=True)
class PreEnqueueCase:
    """One ``TestPreEnqueue`` row: ``waiting`` "" is PreEnqueue's nil status (the pod is
    popped), else the message Podium holds it with (the source's UnschedulableAndUnresolvable
    status message is given in a comment)."""

    name: str
    pod: PodInfo
    initial: tuple[PodInfo, ...]
    groups: tuple[o.PodGroup, ...]
    waiting: str = ""


def _k8s_pod(name: str, group: str | None = None) -> PodInfo:
    return kubernetes_pod(name, "ns1", group)


_GANG_PG1 = pod_group("pg1", 3, ns="ns1")
_GANG_PG2 = pod_group("pg2", 4, ns="ns1")
_BASIC_PG3 = pod_group("pg3", None, ns="ns1")

# gangscheduling_test.go@037891575693 TestPreEnqueue, its rows without CompositePodGroups.
PRE_ENQUEUE = [
    PreEnqueueCase(
        "non-gang pod succeeds immediately",
        _k8s_pod("non-gang"),
        (),
        (_GANG_PG1, _GANG_PG2, _BASIC_PG3),
    ),
    PreEnqueueCase(
        "basic policy pod succeeds immediately",
        _k8s_pod("basic-pod", "pg3"),
        (),
        (_GANG_PG1, _GANG_PG2, _BASIC_PG3),
    ),
    # `waiting for pod's pod group "pg1" to appear in scheduling queue`
    PreEnqueueCase(
        "gang pod fails PreEnqueue when pod group is not yet created",
        _k8s_pod("p1", "pg1"),
        (
            _k8s_pod("p2", "pg1"),
            _k8s_pod("p3", "pg1"),
            _k8s_pod("p4", "pg2"),
            _k8s_pod("p5", "pg2"),
        ),
        (),
        waiting="waiting for pod group ns1/pg1: the group does not exist",
    ),
    # "waiting for minCount pods from a gang to appear in scheduling queue"
    PreEnqueueCase(
        "gang pod fails PreEnqueue when quorum is not met",
        _k8s_pod("p1", "pg1"),
        (_k8s_pod("p2", "pg1"), _k8s_pod("p4", "pg2"), _k8s_pod("p5", "pg2")),
        (_GANG_PG1, _GANG_PG2),
        waiting="waiting for pod group ns1/pg1: 2 of 3 pods exist",
    ),
    PreEnqueueCase(
        "gang pod passes PreEnqueue",
        _k8s_pod("p1", "pg1"),
        (
            _k8s_pod("p2", "pg1"),
            _k8s_pod("p3", "pg1"),
            _k8s_pod("p4", "pg2"),
            _k8s_pod("p5", "pg2"),
        ),
        (_GANG_PG1, _GANG_PG2),
    ),
]


@pytest.mark.parametrize("case", PRE_ENQUEUE, ids=attrgetter("name"))
def test_gang_scheduling_pre_enqueue(case: PreEnqueueCase) -> None:
    q = SchedulingQueue()
    for group in case.groups:
        q.group_changed(f"ns1/{group.metadata.name}", group, 0.0)
    for pod in (*case.initial, case.pod):
        q.add(pod, 0.0)
    key = case.pod.key
    if case.waiting:
        assert q.lookup(key)[0] == "waiting"
        assert q.waiting_message(key) == case.waiting
        assert case.pod.name not in popped_names(q, 0.0)
    else:
        assert q.lookup(key)[0] == "active"
        assert case.pod.name in popped_names(q, 0.0)


# --------------------------------------------------------------------------- queueing hints


@dataclass(frozen=True)
class HintCase:
    """One queueing-hint row: a member ``pod`` waits (its group has fewer pods than minCount,
    or does not exist); then ``event`` happens. ``queue`` is the source's hint (``Queue``:
    the event may make the pod schedulable); in Podium, ``Queue`` is the member leaving
    waiting for activeQ, ``QueueSkip`` its staying where it was."""

    name: str
    pod: PodInfo
    before: tuple[o.PodGroup, ...]
    event: PodInfo | o.PodGroup
    queue: bool


def _default(name: str, group: str | None = None, ns: str = "default", node: str = "") -> PodInfo:
    return kubernetes_pod(name, ns, group, node)


# gangscheduling_test.go@037891575693 Test_isSchedulableAfterPodAdded, rows without
# CompositePodGroups. The source's pod has no PodGroup in some rows (the hint looks at the
# event alone); here its group exists with minCount 2, so that one more member is a quorum
# and the hint's effect shows.
POD_ADDED = [
    HintCase(
        "add a newPod which matches the pod's scheduling group",
        _default("p", "pg"),
        (pod_group("pg", 2, ns="default"),),
        _default("new", "pg"),
        queue=True,
    ),
    HintCase(
        "add a newPod with NodeName set which matches the pod's scheduling group",
        _default("p", "pg"),
        (pod_group("pg", 2, ns="default"),),
        _default("new", "pg", node="node1"),
        queue=True,
    ),
    HintCase(
        "add a newPod which doesn't match the pod's namespace",
        _default("p", "pg"),
        (pod_group("pg", 2, ns="default"), pod_group("pg", 2, ns="foo")),
        _default("new", "pg", ns="foo"),
        queue=False,
    ),
    HintCase(
        "add a newPod which doesn't match the pod's pod group name",
        _default("p", "pg1"),
        (pod_group("pg1", 2, ns="default"), pod_group("pg2", 2, ns="default")),
        _default("new", "pg2"),
        queue=False,
    ),
]

# Test_isSchedulableAfterPodGroupAdded, rows without CompositePodGroups (MinCount(1)).
GROUP_ADDED = [
    HintCase(
        "add a pod group which matches the pod's pod group name",
        _default("p", "pg"),
        (),
        pod_group("pg", 1, ns="default"),
        queue=True,
    ),
    HintCase(
        "add a pod group which doesn't match the pod's scheduling group name",
        _default("p", "pg1"),
        (),
        pod_group("pg2", 1, ns="default"),
        queue=False,
    ),
    HintCase(
        "add a pod group which doesn't match the pod's scheduling group namespace",
        _default("p", "pg", ns="ns1"),
        (),
        pod_group("pg", 1, ns="ns2"),
        queue=False,
    ),
]

# Test_isSchedulableAfterPodGroupUpdated, the rows on a gang. The pod's group has 3 pods (the
# pod and two siblings) in every row, so minCount 4 holds them and 3 lets them in.
GROUP_UPDATED = [
    HintCase(
        "minCount decreased matches target pod",
        _default("p", "pg", ns="ns1"),
        (pod_group("pg", 4, ns="ns1"),),
        pod_group("pg", 3, ns="ns1"),
        queue=True,
    ),
    HintCase(
        "minCount increased matches target pod",
        _default("p", "pg", ns="ns1"),
        (pod_group("pg", 4, ns="ns1"),),
        pod_group("pg", 5, ns="ns1"),
        queue=False,
    ),
    HintCase(
        "minCount unchanged matches target pod",
        _default("p", "pg", ns="ns1"),
        (pod_group("pg", 4, ns="ns1"),),
        pod_group("pg", 4, ns="ns1"),
        queue=False,
    ),
    HintCase(
        "minCount decreased but pod group name doesn't match target pod",
        _default("p", "pg-other", ns="ns1"),
        (pod_group("pg", 4, ns="ns1"), pod_group("pg-other", 4, ns="ns1")),
        pod_group("pg", 3, ns="ns1"),
        queue=False,
    ),
    HintCase(
        "minCount decreased but pod group namespace doesn't match target pod",
        _default("p", "pg", ns="ns-other"),
        (pod_group("pg", 4, ns="ns1"), pod_group("pg", 4, ns="ns-other")),
        pod_group("pg", 3, ns="ns1"),
        queue=False,
    ),
]


def _run_hint(case: HintCase, siblings: Sequence[PodInfo] = ()) -> None:
    q = SchedulingQueue()
    for group in case.before:
        q.group_changed(f"{group.metadata.namespace}/{group.metadata.name}", group, 0.0)
    for pod in (*siblings, case.pod):
        q.add(pod, 0.0)
    assert q.lookup(case.pod.key)[0] == "waiting"
    event = case.event
    if isinstance(event, o.PodGroup):
        q.group_changed(f"{event.metadata.namespace}/{event.metadata.name}", event, 1.0)
    elif event.pod.spec.node_name:
        q.assigned_member(event, 1.0)  # a bound pod: one of its group's members bound
    else:
        q.add(event, 1.0)
    assert q.lookup(case.pod.key)[0] == ("active" if case.queue else "waiting")


@pytest.mark.parametrize("case", POD_ADDED, ids=attrgetter("name"))
def test_gang_scheduling_hint_after_pod_added(case: HintCase) -> None:
    _run_hint(case)


@pytest.mark.parametrize("case", GROUP_ADDED, ids=attrgetter("name"))
def test_gang_scheduling_hint_after_pod_group_added(case: HintCase) -> None:
    _run_hint(case)


@pytest.mark.parametrize("case", GROUP_UPDATED, ids=attrgetter("name"))
def test_gang_scheduling_hint_after_pod_group_updated(case: HintCase) -> None:
    group = case.pod.pod.spec.scheduling_group
    assert group is not None
    ns = case.pod.namespace
    _run_hint(case, [_default(f"s{i}", group.pod_group_name, ns=ns) for i in (1, 2)])


@dataclass(frozen=True)
class UpdatedCase:
    """A Test_isSchedulableAfterPodGroupUpdated row where the pod is what a queueing hint is
    asked about: unschedulable, its gang (3 pods, minCount 3) tried and failed. ``queue``:
    the source's hint; in Podium ``Queue`` is the unit leaving the unschedulable pods for
    activeQ (or backoffQ), ``QueueSkip`` its not going there."""

    name: str
    group: str  # the pod's group, in ns1
    updated: tuple[str, str, int]  # the group put: namespace, name, minCount
    queue: bool
    after: str  # where the pod is then


UNSCHEDULABLE_UPDATED = [
    UpdatedCase("minCount decreased matches target pod", "pg", ("ns1", "pg", 2), True, "active"),
    # Raised above the pods there are, the members wait for more (not tried before).
    UpdatedCase("minCount increased matches target pod", "pg", ("ns1", "pg", 4), False, "waiting"),
    UpdatedCase(
        "minCount unchanged matches target pod", "pg", ("ns1", "pg", 3), False, "unschedulable"
    ),
    UpdatedCase(
        "minCount decreased but pod group name doesn't match target pod",
        "pg-other",
        ("ns1", "pg", 2),
        False,
        "unschedulable",
    ),
    UpdatedCase(
        "minCount decreased but pod group namespace doesn't match target pod",
        "pg",
        ("ns-other", "pg", 2),
        False,
        "unschedulable",
    ),
]


@pytest.mark.parametrize("case", UNSCHEDULABLE_UPDATED, ids=attrgetter("name"))
def test_gang_scheduling_hint_after_pod_group_updated_unschedulable(case: UpdatedCase) -> None:
    q = SchedulingQueue()
    for ns, name in {("ns1", case.group), case.updated[:2]}:
        q.group_changed(f"{ns}/{name}", pod_group(name, 3, ns=ns), 0.0)
    pods = [_default(p, case.group, ns="ns1") for p in ("p", "s1", "s2")]
    for p in pods:
        q.add(p, 0.0)
    popped, (gang,) = q.pop_batch(0.0, 1)
    assert len(popped) == 3
    assert q.requeue_group(gang.key, pods, popped[0].cycle, "unschedulable", 0.0)[0] == (
        "unschedulable"
    )
    ns, name, count = case.updated
    q.group_changed(f"{ns}/{name}", pod_group(name, count, ns=ns), 30.0)  # backoff long over
    assert q.lookup(pods[0].key)[0] == case.after
    if case.queue:
        [(names, unit)] = drain(q, 30.0)
        assert unit is not None and (sorted(names), unit.min_count) == (["p", "s1", "s2"], count)


def test_gang_scheduling_hint_min_count_decreased_in_flight() -> None:
    """ "minCount decreased" while the gang is being tried: the attempt, decided for the old
    minCount, fails; the unit goes straight back to activeQ, as a pod updated in flight does
    (Kubernetes records the event in flight and its hint requeues the pod)."""
    q = SchedulingQueue()
    q.group_changed("ns1/pg", pod_group("pg", 3, ns="ns1"), 0.0)
    pods = [_default(p, "pg", ns="ns1") for p in ("p", "s1", "s2")]
    for p in pods:
        q.add(p, 0.0)
    popped, (gang,) = q.pop_batch(0.0, 1)
    q.group_changed("ns1/pg", pod_group("pg", 2, ns="ns1"), 0.5)
    assert q.requeue_group(gang.key, pods, popped[0].cycle, "unschedulable", 1.0) == ("active", 3)
    [(_, unit)] = drain(q, 1.0)
    assert unit is not None and unit.min_count == 2


def test_gang_scheduling_hint_after_basic_pod_group_updated() -> None:
    """Test_isSchedulableAfterPodGroupUpdated, "update Basic policy": QueueSkip. A basic
    group's pods are ordinary pods, queued as soon as their group exists; an update of the
    group moves none of them."""
    q = SchedulingQueue()
    q.group_changed("ns1/pg", pod_group("pg", None, ns="ns1"), 0.0)
    pod = _default("p", "pg", ns="ns1")
    q.add(pod, 0.0)
    [(names, gang)] = drain(q, 0.0)
    assert (names, gang) == (["p"], None)
    q.add_unschedulable_if_not_present(pod, q.scheduling_cycle, 0.0)
    assert q.lookup(pod.key)[0] == "unschedulable"
    q.group_changed("ns1/pg", pod_group("pg", None, ns="ns1"), 1.0)
    assert q.lookup(pod.key)[0] == "unschedulable"


def test_gang_scheduling_hint_pod_without_a_group() -> None:
    """Test_isSchedulableAfterPodGroupUpdated, "pod without a scheduling group is skipped":
    a pod naming no group is untouched by a group's update."""
    q = SchedulingQueue()
    q.group_changed("ns1/pg", pod_group("pg", 4, ns="ns1"), 0.0)
    pod = _default("p", ns="ns1")
    q.add(pod, 0.0)
    assert q.lookup(pod.key)[0] == "active"
    q.group_changed("ns1/pg", pod_group("pg", 3, ns="ns1"), 1.0)
    assert q.lookup(pod.key)[0] == "active"
    assert drain(q, 1.0) == [(["p"], None)]
