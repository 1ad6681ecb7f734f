"""The Kubernetes documentation's rules on updating a PodGroup, each row quoting its source,
checked where Podium keeps them: the store's put (store/core.py, "Pod groups"). Issue 24,
"Tests"; the rules on a group's shape and a pod's membership are in
tests/unit/protocol/test_gang_docs_ported.py.

Sources, as read in April 2026: the API reference's field descriptions of
``scheduling.k8s.io/v1alpha3`` PodGroupSchedulingPolicy and GangSchedulingPolicy (Kubernetes
v1.37), and kubernetes.io "PodGroup Lifecycle" (concepts/workloads/podgroup-api/lifecycle,
the v1.36 ``v1alpha2`` page). The two disagree on minCount: v1.36 says it is immutable, v1.37
that it "remains mutable after group creation" and that a change "do[es] not affect
already-scheduled pods". Podium allows the change while no member is bound and refuses it
after (docs/differences.md, "The store": the scheduler placed the bound members for the size
the group had).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from operator import attrgetter

import pytest
from builders import make_node, make_pod, make_pod_group

from podium.protocol import objects as o
from podium.store.core import StoreCore, StoreRejected


@dataclass(frozen=True)
class Update:
    """A source's sentence, the group stored (with ``pods``) and the put: ``refused`` at
    ``path`` (with a message starting ``message``), or replaced."""

    says: str
    stored: o.PodGroup
    put: o.PodGroup
    pods: list[o.Pod] = field(default_factory=list)
    path: str = ""
    message: str = ""
    differs: str = ""


def _group() -> o.PodGroup:
    return make_pod_group("train").ns("ml").gang(3).obj()


def _pending(name: str) -> o.Pod:
    pod: o.Pod = make_pod(name).ns("ml").group("train").obj()
    return pod


def _bound(name: str) -> o.Pod:
    pod: o.Pod = make_pod(name).ns("ml").group("train").node("n1").obj()
    return pod


_POLICY = "spec.schedulingPolicy: Invalid value: "
_SIZE = "spec.schedulingPolicy.gang.minCount: Forbidden: "

UPDATES = [
    Update(
        # PodGroupSchedulingPolicy: "The policy is chosen at creation time ... The PodGroup may
        # not change policy after creation." gang: "this field cannot be set or unset
        # afterward".
        "gang unset",
        _group(),
        make_pod_group("train").ns("ml").basic().obj(),
        path="$.spec.schedulingPolicy",
        message=_POLICY + '{"basic":{}}: field is immutable',
    ),
    Update(
        # basic: "this field cannot be changed afterward".
        "basic changed to gang",
        make_pod_group("train").ns("ml").basic().obj(),
        _group(),
        path="$.spec.schedulingPolicy",
        message=_POLICY + '{"gang":{"minCount":3}}: field is immutable',
    ),
    Update(
        # GangSchedulingPolicy.minCount (v1.37): "This field is mutable to support workload
        # scaling." PodGroup Lifecycle (v1.36): "The spec.schedulingPolicy.gang.minCount field
        # on a PodGroup is immutable."
        "minCount changed, no pod yet",
        _group(),
        make_pod_group("train").ns("ml").gang(4).obj(),
        differs="v1.36 refuses it; Podium follows v1.37 while nothing is bound",
    ),
    Update(
        "minCount changed, its pods pending",
        _group(),
        make_pod_group("train").ns("ml").gang(2).obj(),
        [_pending("w0"), _pending("w1"), _pending("w2")],
        differs="v1.36 refuses it; Podium follows v1.37 while nothing is bound",
    ),
    Update(
        # v1.37: "modifications to this field do not affect already-scheduled pods, applying
        # only to those evaluated in future cycles."
        "minCount changed under a scheduled pod",
        _group(),
        make_pod_group("train").ns("ml").gang(2).obj(),
        [_bound("w0"), _pending("w1")],
        path="$.spec.schedulingPolicy.gang.minCount",
        message=_SIZE + "1 member of pod group ml/train is bound to a node",
        differs="v1.37 accepts it; Podium refuses it (as v1.36 does): a gang it placed for "
        "one size is not judged against another",
    ),
]


@pytest.mark.parametrize("case", UPDATES, ids=attrgetter("says"))
def test_a_pod_group_update_as_the_docs_define_it(case: Update) -> None:
    uids = (f"uid-{i}" for i in itertools.count(1))
    core = StoreCore(wall_clock=lambda: 0.0, new_uid=lambda: next(uids))
    core.write([make_node("n1").obj(), case.stored, *case.pods])
    if not case.path:
        [status] = core.write([case.put])[1]
        assert status.action == "replaced"
        return
    revision = core.revision
    with pytest.raises(StoreRejected) as info:
        core.write([case.put])
    assert core.revision == revision
    [error] = info.value.errors
    assert (error.kind, error.path) == ("PodGroup", case.path)
    assert error.message.startswith("PodGroup ml/train is invalid: " + case.message), error.message
