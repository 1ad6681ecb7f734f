"""The gang tables of scheduler-plugins' Coscheduling and Kubernetes' GangScheduling plugin
that decide placements, and the Kubernetes documentation's gang behaviours, ported to the
daemon's own actors (issue 24, "Tests"; Apache-2.0, see NOTICE), under the autojump clock.

Sources, each table naming its own test and commit or page:

- kubernetes/kubernetes pkg/scheduler/framework/plugins/gangscheduling/gangscheduling_test.go
  at 037891575693 (after v1.36): ``TestPlacementFeasible``; at 57923d93d3c6 (v1.35, the
  Workload form): ``TestGangSchedulingFlow``;
- kubernetes-sigs/scheduler-plugins pkg/coscheduling/core/core_test.go at d7ae0994b813:
  ``TestPermit``; pkg/coscheduling/coscheduling_test.go at 2d2031088032: ``TestPermit``,
  ``TestPostFilter``; pkg/coscheduling/coscheduling.go at fae4102fb12d: ``PostFilter`` and
  ``Unreserve`` (no table of their own);
- kubernetes.io "Gang Scheduling" (concepts/scheduling-eviction/gang-scheduling, the v1alpha2
  PodGroup page), "Scheduling Group" (concepts/workloads/pods/scheduling-group) and "PodGroup
  Lifecycle" (concepts/workloads/podgroup-api/lifecycle), as read in April 2026.

A row is a cluster written at once (nodes, groups, pods: some bound already) and what Podium
ends with: the pods bound, the BindPods that carried a group, where each pending pod is
(``Lookup``: ``waiting`` with why, ``unschedulable``, ...) and its PodScheduled message. The
plugins wait at Permit, member by member, holding reservations; Podium decides a group's
members in one batch and binds them in one store transaction, or none of them (README, "Gang
scheduling"), so a Permit ``Wait`` has no counterpart: the row says what Podium does instead,
and docs/differences.md ("Gang scheduling") why. Preemption is off in these rows (gang
preemption is tested with it: tests/actor/test_gangs.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

import pytest
import trio
import trio.testing
from builders import make_node, make_pod, make_pod_group
from gang_cluster import GangCluster, condition_message, gang_cluster
from gangs import pod_group

from podium.protocol import objects as o

PLUGINS = "scheduling.x-k8s.io/v1alpha1"
UNFIT = {"fits": "no"}
"""A node selector no node matches: the member fails at Filter."""
SELECTOR = "0/1 nodes are available: 1 node(s) didn't match node selector."


def node(cpu: str = "8") -> o.Node:
    n: o.Node = (
        make_node("node")
        .capacity(cpu=cpu, memory="64Gi", pods=110)
        .label("kubernetes.io/hostname", "node")
        .obj()
    )
    return n


def pod(
    name: str,
    ns: str,
    group: str | None = None,
    *,
    form: str = "kubernetes",
    fits: bool = True,
    bound: bool = False,
    scheduler: str = "",
) -> o.Pod:
    """A pod asking for 1 CPU, in ``group`` by ``form``; one that does not ``fit`` selects no
    node; a ``bound`` one is on "node" already."""
    b = make_pod(name).ns(ns).uid(f"uid-{ns}-{name}").req(cpu="1")
    if group is not None:
        b.group(group, form)
    if not fits:
        b.node_selector(UNFIT)
    if bound:
        b.node("node")
    if scheduler:
        b.spec(schedulerName=scheduler)
    p: o.Pod = b.obj()
    return p


def plugins_group(name: str, ns: str, min_member: int) -> o.PodGroup:
    """scheduler-plugins' PodGroup (``tu.MakePodGroup().Name(..).Namespace(..).MinMember(..)``)."""
    group: o.PodGroup = make_pod_group(name).ns(ns).min_member(min_member, PLUGINS).obj()
    return group


def plugins_pod(
    name: str, ns: str, group: str | None = None, *, fits: bool = True, bound: bool = False
) -> o.Pod:
    """A pod labelled ``scheduling.x-k8s.io/pod-group`` (scheduler-plugins' form)."""
    return pod(name, ns, group, form="coscheduling", fits=fits, bound=bound)


@dataclass(frozen=True)
class Row:
    """A source's row and Podium's outcome: ``bound`` every pod bound in the end (those bound
    from the start included), ``together`` the pods of each BindPods that carried a group,
    ``queues`` where pending pods are (``Lookup``), ``waiting`` the message of a member held
    before the queue, ``messages`` the PodScheduled message of a pod tried; ``differs`` why
    Podium's outcome is not the source's."""

    name: str
    objects: tuple[o.KubeObject, ...]
    ns: str
    source: str = ""
    bound: tuple[str, ...] = ()
    together: tuple[tuple[str, ...], ...] = ()
    queues: dict[str, str] = field(default_factory=dict)
    waiting: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    differs: str = ""


async def check(c: GangCluster, row: Row) -> None:
    assert sorted(await c.bound(row.ns)) == sorted(row.bound)
    assert c.bound_together() == [sorted(t) for t in row.together]
    for name, queue in row.queues.items():
        assert (await c.lookup(f"{row.ns}/{name}")).queue == queue, name
    for name, message in row.waiting.items():
        got = await c.lookup(f"{row.ns}/{name}")
        assert (got.queue, got.message) == ("waiting", message), name
    pods = await c.pods(row.ns)
    for name, message in row.messages.items():
        assert condition_message(pods[name]) == message, name


async def run(row: Row) -> None:
    async with gang_cluster(*row.objects, disable_preemption=True) as c:
        await check(c, row)


# --------------------------------------------------------------------------- PlacementFeasible

PG = "test-pg"
NS = "default"


def feasible(
    name: str,
    min_count: int,
    fits: list[bool],
    scheduled: int,
    *,
    bound: tuple[str, ...],
    together: tuple[tuple[str, ...], ...] = (),
    queues: dict[str, str] | None = None,
    waiting: dict[str, str] | None = None,
    messages: dict[str, str] | None = None,
    differs: str = "",
) -> Row:
    """A ``TestPlacementFeasible`` row: a group of minCount ``min_count`` (0: basic) with
    ``scheduled`` members bound (s1, ...) and pending members p1, ... that fit or not, in that
    order (the source's ``podStatuses``; a member the source's loop never reached fits)."""
    group = pod_group(PG, min_count or None, ns=NS)
    pre = [pod(f"s{i + 1}", NS, PG, bound=True) for i in range(scheduled)]
    pending = [pod(f"p{i + 1}", NS, PG, fits=f) for i, f in enumerate(fits)]
    return Row(
        name,
        (node(), group, *pre, *pending),
        NS,
        bound=tuple(p.metadata.name for p in pre) + bound,
        together=together,
        queues=queues or {},
        waiting=waiting or {},
        messages=messages or {},
        differs=differs,
    )


def _group_failed(fit: int, tried: int, min_count: int, unfit: list[str], bound: int = 0) -> str:
    head = f"pod group {NS}/{PG}: {fit} of {tried} members fit, minCount {min_count}"
    if bound:
        head += f" ({bound} bound already)"
    return "; ".join([head, *(f"{NS}/{p}: {SELECTOR}" for p in unfit)])


_NO_EARLY_STOP = (
    "the source stops at the first verdict that settles the group (the members not reached "
    "are not tried); Podium decides every member in the batch, the outcome is the same"
)

# gangscheduling_test.go@037891575693 TestPlacementFeasible: minCount, the members' outcomes
# in order, the members scheduled before; the source's last expected status is the group's.
PLACEMENT_FEASIBLE = [
    feasible(
        "All pods succeed, minCount met at end",  # Wait, Success
        2,
        [True, True],
        0,
        bound=("p1", "p2"),
        together=(("p1", "p2"),),
    ),
    feasible(
        "First pod fails, minCount not satisfiable",  # Unschedulable
        3,
        [False, True, True],
        0,
        bound=(),
        queues={"p1": "unschedulable", "p2": "unschedulable", "p3": "unschedulable"},
        messages={p: _group_failed(2, 3, 3, ["p1"]) for p in ("p1", "p2", "p3")},
        differs=_NO_EARLY_STOP,
    ),
    feasible(
        "Second pod fails, minCount not satisfiable",  # Wait, Unschedulable
        2,
        [True, False],
        0,
        bound=(),
        queues={"p1": "unschedulable", "p2": "unschedulable"},
        messages={p: _group_failed(1, 2, 2, ["p2"]) for p in ("p1", "p2")},
    ),
    feasible(
        "Non-gang pod group with 0 scheduled pods fails",  # Unschedulable
        0,
        [False],
        0,
        bound=(),
        queues={"p1": "unschedulable"},
        messages={"p1": SELECTOR},
    ),
    feasible(
        "Non-gang pod group with succeeds once 1 pod is scheduled",  # Success
        0,
        [True],
        0,
        bound=("p1",),
    ),
    feasible(
        # The source's Success is the basic group's (it has a pod scheduled); p1 itself still
        # fails its Filter, as it does here, alone.
        "Non-gang pod group with 1 initially scheduled pod succeeds",
        0,
        [False],
        1,
        bound=(),
        queues={"p1": "unschedulable"},
        messages={"p1": SELECTOR},
    ),
    feasible(
        "More than minCount pods, all succeed",  # Wait, Success, Success
        2,
        [True, True, True],
        0,
        bound=("p1", "p2", "p3"),
        together=(("p1", "p2", "p3"),),
    ),
    feasible(
        # p1 did not fit: an ordinary pod now (the group has its minCount placed).
        "More than minCount pods, first fails",  # Wait, Wait, Success
        2,
        [False, True, True],
        0,
        bound=("p2", "p3"),
        together=(("p2", "p3"),),
        queues={"p1": "unschedulable"},
        messages={"p1": SELECTOR},
    ),
    feasible(
        "More than minCount pods, minCount not satisfiable",  # Wait, Unschedulable
        2,
        [False, False, True],
        0,
        bound=(),
        queues={"p1": "unschedulable", "p2": "unschedulable", "p3": "unschedulable"},
        messages={p: _group_failed(1, 3, 2, ["p1", "p2"]) for p in ("p1", "p2", "p3")},
        differs=_NO_EARLY_STOP,
    ),
    feasible(
        "1 pod scheduled, 2 unscheduled pods succeed, minCount 3 met",  # Wait, Success
        3,
        [True, True],
        1,
        bound=("p1", "p2"),
        together=(("p1", "p2"),),
    ),
    feasible(
        # The group has its minCount bound: p1 is an ordinary pod and fails alone.
        "minCount already met by scheduled pods",  # Success
        2,
        [False],
        2,
        bound=(),
        queues={"p1": "unschedulable"},
        messages={"p1": SELECTOR},
    ),
    feasible(
        "1 pod scheduled, minCount 3, first unscheduled fails, not enough remaining",
        3,
        [False, True],
        1,
        bound=(),
        queues={"p1": "unschedulable", "p2": "unschedulable"},
        messages={p: _group_failed(1, 2, 3, ["p1"], bound=1) for p in ("p1", "p2")},
        differs=_NO_EARLY_STOP,
    ),
    feasible(
        "1 pod scheduled, minCount 4, first unscheduled succeeds, not enough remaining",
        4,
        [True, True],
        1,
        bound=(),
        waiting=dict.fromkeys(("p1", "p2"), f"waiting for pod group {NS}/{PG}: 3 of 4 pods exist"),
        differs="3 pods exist for minCount 4: Podium's queue holds them before any attempt "
        "(as Kubernetes' PreEnqueue would; the source calls PlacementFeasible directly)",
    ),
]


@pytest.mark.parametrize("row", PLACEMENT_FEASIBLE, ids=attrgetter("name"))
async def test_gang_scheduling_placement_feasible(
    autojump_clock: trio.testing.MockClock, row: Row
) -> None:
    await run(row)


# --------------------------------------------------------------------------- Permit

_PERMIT_WAIT = (
    "Coscheduling places the pod and holds its node at Permit until minMember are placed or "
    "the timeout; Podium's queue holds it before any attempt, reserving nothing"
)
_NOT_FOUND = (
    "Coscheduling places the pod, then refuses it at Permit (PodGroupNotFound); Podium holds "
    "it before the queue until the group exists (Kubernetes' Scheduling Group page)"
)

PERMIT = [
    # core/core_test.go@d7ae0994b813 TestPermit (one node of 4 CPUs).
    Row(
        "pod does not belong to any pg",  # PodGroupNotSpecified
        (node("4"), plugins_group("pg1", "ns", 2), plugins_pod("p", "ns")),
        "ns",
        source="core_test.go TestPermit",
        bound=("p",),
    ),
    Row(
        "pod specifies a non-existent pg",  # PodGroupNotFound
        (node("4"), plugins_group("pg1", "ns", 2), plugins_pod("p", "ns", "pg-non-existent")),
        "ns",
        source="core_test.go TestPermit",
        waiting={"p": "waiting for pod group ns/pg-non-existent: the group does not exist"},
        differs=_NOT_FOUND,
    ),
    Row(
        "pod belongs to a pg that doesn't have quorum",  # Wait
        (node("4"), plugins_group("pg1", "ns", 2), plugins_pod("p", "ns", "pg1")),
        "ns",
        source="core_test.go TestPermit",
        waiting={"p": "waiting for pod group ns/pg1: 1 of 2 pods exist"},
        differs=_PERMIT_WAIT,
    ),
    Row(
        # p1b bound already counts: one more placed meets minMember 2, bound with the group.
        "pod belongs to a pg that have quorum satisfied",  # Success
        (
            node("4"),
            plugins_group("pg1", "ns", 2),
            plugins_pod("p1b", "ns", "pg1", bound=True),
            plugins_pod("p1a", "ns", "pg1"),
        ),
        "ns",
        source="core_test.go TestPermit",
        bound=("p1a", "p1b"),
        together=(("p1a",),),
    ),
    # coscheduling_test.go@2d2031088032 TestPermit (pg1 minMember 1, pg2 minMember 2).
    Row(
        "pods do not belong to any podGroup",  # Success
        (
            node("4"),
            plugins_group("pg1", "ns", 1),
            plugins_group("pg2", "ns", 2),
            plugins_pod("p", "ns"),
        ),
        "ns",
        source="coscheduling_test.go TestPermit",
        bound=("p",),
    ),
    Row(
        "pods belong to a pg1, but quorum not satisfied",  # Wait (the pod is pg2's)
        (
            node("4"),
            plugins_group("pg1", "ns", 1),
            plugins_group("pg2", "ns", 2),
            plugins_pod("p", "ns", "pg2"),
        ),
        "ns",
        source="coscheduling_test.go TestPermit",
        waiting={"p": "waiting for pod group ns/pg2: 1 of 2 pods exist"},
        differs=_PERMIT_WAIT,
    ),
    Row(
        "pods belong to a podGroup, and quorum satisfied",  # Success
        (
            node("4"),
            plugins_group("pg1", "ns", 1),
            plugins_group("pg2", "ns", 2),
            plugins_pod("p", "ns", "pg1"),
        ),
        "ns",
        source="coscheduling_test.go TestPermit",
        bound=("p",),
        together=(("p",),),
    ),
]


@pytest.mark.parametrize("row", PERMIT, ids=attrgetter("name"))
async def test_coscheduling_permit(autojump_clock: trio.testing.MockClock, row: Row) -> None:
    await run(row)


def _flow_pod(name: str, group: str | None = None) -> o.Pod:
    return pod(name, "ns1", group)


_FLOW_GROUPS = (pod_group("pg1", 3, ns="ns1"), pod_group("pg2", 4, ns="ns1"))
_PERMIT_FLOW = (
    "the source's members wait at Permit until the third is placed, then all are allowed; "
    "Podium decides p1, p2 and p3 in one batch and binds them in one BindPods"
)

# gangscheduling_test.go@57923d93d3c6 (v1.35) TestGangSchedulingFlow. Its pods join pod groups
# of a Workload (workloadRef); here they join PodGroups pg1 (minCount 3) and pg2 (minCount 4)
# by spec.schedulingGroup, as since v1.36. p5 (pg1 under replica key "2", another instance of
# the group) is left out: Podium has no replica keys.
GANG_FLOW = [
    Row(
        "non-gang pod succeeds immediately",
        (node(), *_FLOW_GROUPS, pod_group("pg3", None, ns="ns1"), _flow_pod("non-gang")),
        "ns1",
        bound=("non-gang",),
    ),
    Row(
        "basic policy pod succeeds immediately",
        (node(), *_FLOW_GROUPS, pod_group("pg3", None, ns="ns1"), _flow_pod("basic-pod", "pg3")),
        "ns1",
        bound=("basic-pod",),
    ),
    Row(
        "gang pod fails PreEnqueue when workload is not yet created",
        (
            node(),
            *(_flow_pod(p, "pg1") for p in ("p2", "p3", "p1")),
            _flow_pod("p4", "pg2"),
        ),
        "ns1",
        waiting={"p1": "waiting for pod group ns1/pg1: the group does not exist"},
    ),
    Row(
        "gang pod fails PreEnqueue when quorum is not met",
        (
            node(),
            *_FLOW_GROUPS,
            _flow_pod("p2", "pg1"),
            _flow_pod("p4", "pg2"),
            _flow_pod("p1", "pg1"),
        ),
        "ns1",
        waiting={"p1": "waiting for pod group ns1/pg1: 2 of 3 pods exist"},
    ),
    Row(
        "gang pod passes PreEnqueue, but waits at Permit",
        (node(), *_FLOW_GROUPS, *(_flow_pod(p, "pg1") for p in ("p2", "p3", "p1"))),
        "ns1",
        bound=("p1", "p2", "p3"),
        together=(("p1", "p2", "p3"),),
        differs=_PERMIT_FLOW,
    ),
    Row(
        "final gang pod arrives at Permit and allows all waiting pods from a gang",
        (
            node(),
            *_FLOW_GROUPS,
            *(_flow_pod(p, "pg1") for p in ("p2", "p3", "p1")),
            _flow_pod("p4", "pg2"),
        ),
        "ns1",
        bound=("p1", "p2", "p3"),
        together=(("p1", "p2", "p3"),),
        waiting={"p4": "waiting for pod group ns1/pg2: 1 of 4 pods exist"},
        differs=_PERMIT_FLOW,
    ),
]


@pytest.mark.parametrize("row", GANG_FLOW, ids=attrgetter("name"))
async def test_gang_scheduling_flow(autojump_clock: trio.testing.MockClock, row: Row) -> None:
    await run(row)


# --------------------------------------------------------------------------- PostFilter

# coscheduling_test.go@2d2031088032 TestPostFilter: PostFilter runs once the pod failed its
# Filter, so here the pod under test selects no node.
POSTFILTER = [
    Row(
        # "can not find pod group": Unschedulable, the pod alone.
        "pod does not belong to any pod group",
        (node("4"), plugins_group("pg1", "ns", 2), plugins_pod("p", "ns", fits=False)),
        "ns",
        queues={"p": "unschedulable"},
        messages={"p": SELECTOR},
    ),
    Row(
        # Unschedulable, the group not rejected: minMember 1 is bound already, so p is an
        # ordinary pod and fails alone.
        "enough pods assigned, do not reject all",
        (
            node("4"),
            plugins_group("pg1", "ns", 1),
            plugins_pod("p1", "ns", "pg1", bound=True),
            plugins_pod("p", "ns", "pg1", fits=False),
        ),
        "ns",
        bound=("p1",),
        queues={"p": "unschedulable"},
        messages={"p": SELECTOR},
    ),
    Row(
        # "PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even after PostFilter"
        "pod failed at filter phase, reject all pods",
        (
            node("4"),
            plugins_group("pg1", "ns", 2),
            plugins_pod("p1", "ns", "pg1", bound=True),
            plugins_pod("p", "ns", "pg1", fits=False),
        ),
        "ns",
        bound=("p1",),
        queues={"p": "unschedulable"},
        messages={
            "p": f"pod group ns/pg1: 0 of 1 members fit, minCount 2 (1 bound already); "
            f"ns/p: {SELECTOR}"
        },
    ),
    Row(
        # coscheduling.go@fae4102fb12d PostFilter rejects the members waiting at Permit when
        # one fails: here p1 and p2 fit and p3 does not, and none is bound.
        "a failing member rejects its waiting siblings (PostFilter)",
        (
            node("4"),
            plugins_group("pg1", "ns", 3),
            plugins_pod("p1", "ns", "pg1"),
            plugins_pod("p2", "ns", "pg1"),
            plugins_pod("p3", "ns", "pg1", fits=False),
        ),
        "ns",
        queues=dict.fromkeys(("p1", "p2", "p3"), "unschedulable"),
        messages=dict.fromkeys(
            ("p1", "p2", "p3"),
            f"pod group ns/pg1: 2 of 3 members fit, minCount 3; ns/p3: {SELECTOR}",
        ),
    ),
]


@pytest.mark.parametrize("row", POSTFILTER, ids=attrgetter("name"))
async def test_coscheduling_post_filter(autojump_clock: trio.testing.MockClock, row: Row) -> None:
    await run(row)


async def test_coscheduling_unreserve_rejects_the_siblings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """coscheduling.go@fae4102fb12d ``Unreserve``: when one member is rejected (its Permit
    timed out, its bind failed), the members waiting at Permit are rejected too. Podium's
    counterpart: the store refuses a group's bindings all together (one failing refuses
    every one), the cache forgets every member and the group goes back as one unit."""
    members = [plugins_pod(f"p{i}", "ns", "pg1") for i in (1, 2, 3)]
    async with gang_cluster(
        node("4"), plugins_group("pg1", "ns", 3), *members, refuse=True, disable_preemption=True
    ) as c:
        assert c.bound_together() == [["p1", "p2", "p3"]]  # handed to the store together ...
        assert await c.bound("ns") == {}  # ... and refused together
        assert {(await c.lookup(f"ns/p{i}")).queue for i in (1, 2, 3)} == {"unschedulable"}


# --------------------------------------------------------------------------- the documentation

# kubernetes.io "Gang Scheduling", "Scheduling Group" and "PodGroup Lifecycle".
DOCS = [
    Row(
        # Gang Scheduling, How it works, 1: "The scheduler holds Pods in the PreEnqueue phase
        # until: the referenced PodGroup object exists; the number of Pods created for the
        # PodGroup is at least equal to minCount."
        "pods are held until the PodGroup exists",
        (node(), pod("w0", "ml", "train"), pod("w1", "ml", "train")),
        "ml",
        waiting=dict.fromkeys(
            ("w0", "w1"), "waiting for pod group ml/train: the group does not exist"
        ),
    ),
    Row(
        "pods are held until minCount pods exist",
        (node(), pod_group("train", 3), pod("w0", "ml", "train"), pod("w1", "ml", "train")),
        "ml",
        waiting=dict.fromkeys(("w0", "w1"), "waiting for pod group ml/train: 2 of 3 pods exist"),
    ),
    Row(
        # 2-3: "If the scheduler finds valid placements for at least the minCount number of
        # Pods, it allows those successfully placed Pods to be bound": w2 fits nowhere; the
        # group has its minCount, so w2 goes on as an ordinary pod.
        "at least minCount placed: those placed bind",
        (
            node("2"),
            pod_group("train", 2),
            pod("w0", "ml", "train"),
            pod("w1", "ml", "train"),
            pod("w2", "ml", "train"),
        ),
        "ml",
        bound=("w0", "w1"),
        together=(("w0", "w1"),),
        queues={"w2": "unschedulable"},
        messages={"w2": "0/1 nodes are available: 1 Insufficient cpu."},
    ),
    Row(
        # "If it cannot find enough placements to satisfy the minCount requirement, none of the
        # Pods are scheduled. Instead, they are moved to the unschedulable queue."
        "fewer than minCount placed: none binds, all go to the unschedulable queue",
        (
            node("2"),
            pod_group("train", 3),
            pod("w0", "ml", "train"),
            pod("w1", "ml", "train"),
            pod("w2", "ml", "train"),
        ),
        "ml",
        queues=dict.fromkeys(("w0", "w1", "w2"), "unschedulable"),
        messages=dict.fromkeys(
            ("w0", "w1", "w2"),
            "pod group ml/train: 2 of 3 members fit, minCount 3; ml/w2: 0/1 nodes are "
            "available: 1 Insufficient cpu.",
        ),
    ),
    Row(
        # Scheduling Group: "If the PodGroup uses the basic policy, each Pod is scheduled
        # independently using standard Kubernetes behavior."
        "a basic group's pods are scheduled independently",
        (
            node("2"),
            pod_group("web", None),
            pod("p0", "ml", "web"),
            pod("p1", "ml", "web"),
            pod("p2", "ml", "web"),
        ),
        "ml",
        bound=("p0", "p1"),
        queues={"p2": "unschedulable"},
        messages={"p2": "0/1 nodes are available: 1 Insufficient cpu."},
    ),
    Row(
        # PodGroup Lifecycle, Limitations: "All Pods in a PodGroup must use the same
        # .spec.schedulerName. If a mismatch is detected, the scheduler rejects all Pods in
        # the group as unschedulable."
        "a member for another scheduler",
        (
            node(),
            pod_group("train", 2),
            pod("w0", "ml", "train"),
            pod("w1", "ml", "train", scheduler="other-scheduler"),
        ),
        "ml",
        waiting={"w0": "waiting for pod group ml/train: 1 of 2 pods exist"},
        differs="Podium never sees another scheduler's pending pods, so it cannot tell a "
        "mismatch from a missing member: w0 waits, counting 1 of 2, and nothing binds, as in "
        "Kubernetes; only the message differs",
    ),
]


@pytest.mark.parametrize("row", DOCS, ids=attrgetter("name"))
async def test_kubernetes_docs(autojump_clock: trio.testing.MockClock, row: Row) -> None:
    await run(row)


async def test_scheduling_group_missing_pod_group_is_reconsidered_once_created(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Scheduling Group, "Missing PodGroup reference": "If a Pod references a PodGroup that
    does not yet exist, the Pod remains pending. The scheduler automatically reconsiders the
    Pod once the PodGroup is created. This applies regardless of whether the eventual policy
    is basic or gang." (PodGroup Lifecycle says the same.)"""
    gang = [pod(f"w{i}", "ml", "train") for i in range(2)]
    async with gang_cluster(node(), *gang, pod("s0", "ml", "serve"), disable_preemption=True) as c:
        assert await c.bound("ml") == {}
        for name, group in (("w0", "train"), ("s0", "serve")):
            got = await c.lookup(f"ml/{name}")
            assert (got.queue, got.attempts) == ("waiting", 0)
            assert got.message == f"waiting for pod group ml/{group}: the group does not exist"
        await c.put(pod_group("serve", None))
        assert sorted(await c.bound("ml")) == ["s0"]
        assert c.bound_together() == []  # a basic group's pod is bound as a lone pod
        await c.put(pod_group("train", 2))
        assert sorted(await c.bound("ml")) == ["s0", "w0", "w1"]
        assert c.bound_together() == [["w0", "w1"]]


async def test_gang_scheduling_min_count_decreased_requeues_the_gang(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """gangscheduling_test.go@037891575693 Test_isSchedulableAfterPodGroupUpdated, "minCount
    decreased matches target pod": Queue. A gang of 3 on room for 2 fails and waits among the
    unschedulable pods; its PodGroup put again with minCount 2 (allowed: no member is bound)
    retries it at once, and two members bind, not after the 5-minute flush."""
    workers = [pod(f"w{i}", "ml", "train") for i in range(3)]
    async with gang_cluster(
        node("2"), pod_group("train", 3), *workers, disable_preemption=True
    ) as c:
        assert await c.bound("ml") == {}
        assert (await c.lookup("ml/w0")).queue == "unschedulable"
        await trio.sleep(60)
        changed = trio.current_time()
        await c.put(pod_group("train", 2))
        assert sorted(await c.bound("ml")) == ["w0", "w1"]
        assert trio.current_time() - changed <= 1.0
        assert c.bound_together() == [["w0", "w1"]]
        assert (await c.lookup("ml/w2")).queue == "unschedulable"
