"""A gang's pure pieces (actors/cycle/gangs.py): its message, the nominations its members see,
folding a member in (actors/cycle/steps.py, which the batches of pods share) and taking the
gang's changes back out."""

from __future__ import annotations

from builders import make_node, make_pod

from podium.actors.cycle.gangs import (
    gang_message,
    member_nominations,
    nominated_with,
    preemption_note,
    undo,
)
from podium.actors.cycle.steps import fold_member
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.actors.mail.messages import Decision, GangBatch

GANG = GangBatch(key="ml/train", min_count=8, bound=0, members=8)


def _member(name: str, nominated: str = "", priority: int = 0) -> PodInfo:
    b = make_pod(name).ns("ml").uid(f"uid-{name}").req(cpu="1").priority(priority)
    if nominated:
        b.nominated(nominated)
    return PodInfo(b.obj())


def test_the_message_lists_three_members_then_counts_the_rest_then_the_note() -> None:
    unfit = [(f"ml/w{i}", f"why {i}") for i in range(5)]
    assert gang_message(GANG, 8, 3, unfit, note="preemption: x") == (
        "pod group ml/train: 3 of 8 members fit, minCount 8; ml/w0: why 0; ml/w1: why 1; "
        "ml/w2: why 2; and 2 more; preemption: x"
    )
    bound = GangBatch(key="ml/train", min_count=8, bound=2, members=6)
    assert gang_message(bound, 6, 5, unfit[:1]) == (
        "pod group ml/train: 5 of 6 members fit, minCount 8 (2 bound already); ml/w0: why 0"
    )


def test_the_preemption_note_counts_pods() -> None:
    assert preemption_note(1, 3, 4) == (
        "preemption: evicting 1 pod would let 3 of the 4 members needed fit; nothing was evicted"
    )
    assert preemption_note(2, 3, 4).startswith("preemption: evicting 2 pods would")


def test_members_see_each_others_nominations_and_the_queues_view_is_not_changed() -> None:
    base = NominatedPods()
    other = _member("other", priority=5)
    base.add(other, "n9")
    members = [_member("w0", "n0"), _member("w1"), _member("w2", "n1")]
    nominations = member_nominations(members)
    assert {k: n for k, (_, n) in nominations.items()} == {"ml/w0": "n0", "ml/w2": "n1"}
    view = nominated_with(base, nominations)
    assert view is not base and view is not None
    assert sorted((n, p.key) for n, p in view) == [
        ("n0", "ml/w0"),
        ("n1", "ml/w2"),
        ("n9", "ml/other"),
    ]
    assert [(n, p.key) for n, p in base] == [("n9", "ml/other")]
    assert nominated_with(base, {}) is base
    assert nominated_with(None, {}) is None


def test_a_folded_member_and_its_undo() -> None:
    nodes = [NodeInfo(make_node(n).capacity(cpu="4", memory="8Gi", pods=110).obj()) for n in "ab"]
    snapshot = Snapshot(nodes)
    objects = snapshot.objects
    before: dict[str, NodeInfo] = {}
    for name in ("w0", "w1"):
        member = _member(name)
        decision = Decision(pod=member, node="a", result=ScheduleResult(node="a"), generation=1)
        assumed = fold_member(snapshot, before, member, decision)
        assert assumed.pod.spec.node_name == "a"
    assert [p.name for p in snapshot.by_name["a"].pods] == ["w0", "w1"]
    assert before == {"a": nodes[0]}
    undo(snapshot, before, objects)
    assert snapshot.by_name["a"] is nodes[0] and before == {}
    assert snapshot.objects is objects
