"""The offline simulation (the daemon's actors in process): queue order, retries after helpful
placements, what is scheduled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from builders import decode, make_node, make_pod, make_pod_group
from gangs import member, pod_group

from podium.actors.simulation.cluster import (
    PodOutcome,
    SimulationError,
    build_cluster,
    group_outcomes,
)
from podium.actors.simulation.run import simulate
from podium.actors.supervisor.supervisor import load_plugin_set
from podium.protocol import objects as o
from podium.protocol.config import SchedulerConfig

CONFIG = SchedulerConfig()
PLUGINS = load_plugin_set(CONFIG)


def run(objs: Sequence[o.KubeObject]) -> list[PodOutcome]:
    return simulate(objs, CONFIG, PLUGINS, seed=1)


def _node(name: str, zone: str, cpu: str = "4") -> o.Node:
    return (
        make_node(name)
        .capacity(cpu=cpu, memory="8Gi", pods=110)
        .label("topology.kubernetes.io/zone", zone)
        .label("kubernetes.io/hostname", name)
        .condition("Ready", "True")
        .obj()
    )


AFFINITY_TO_DB: dict[str, Any] = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "topologyKey": "topology.kubernetes.io/zone",
                "labelSelector": {"matchLabels": {"app": "db"}},
            }
        ]
    }
}


def _class(name: str, value: int) -> o.PriorityClass:
    return decode(
        o.PriorityClass, {"kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    )


def test_higher_priority_first_then_file_order() -> None:
    objs = [
        _node("n1", "a"),
        _class("high", 10),
        _class("mid", 5),
        make_pod("low").req(cpu="1").obj(),
        make_pod("high").req(cpu="1").spec(priorityClassName="high").obj(),
        make_pod("mid").req(cpu="1").spec(priorityClassName="mid").obj(),
    ]
    outcomes = run(objs)
    assert [x.pod.name for x in outcomes] == ["high", "mid", "low"]


def test_pod_waiting_for_affinity_is_retried_once_its_peer_is_placed() -> None:
    objs = [
        _node("n1", "a"),
        _node("n2", "b"),
        _class("first", 100),
        make_pod("web")
        .label("app", "web")
        .affinity(AFFINITY_TO_DB)
        .spec(priorityClassName="first")
        .obj(),
        make_pod("db").label("app", "db").node_selector({"topology.kubernetes.io/zone": "b"}).obj(),
    ]
    outcomes = run(objs)
    by_name = {x.pod.name: x for x in outcomes}
    assert [x.pod.name for x in outcomes] == ["db", "web"]  # order of the final attempts
    assert by_name["web"].attempts == 2
    assert by_name["web"].node == "n2"


def test_unplaceable_pod_is_tried_once_and_keeps_its_message() -> None:
    objs = [_node("n1", "a", cpu="1"), make_pod("big").req(cpu="2").obj()]
    (outcome,) = run(objs)
    assert outcome.node is None
    assert outcome.attempts == 1
    assert (
        outcome.message
        == "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_capacity_used_by_earlier_placements_is_seen_by_later_pods() -> None:
    objs = [_node("n1", "a", cpu="2"), *(make_pod(f"p{i}").req(cpu="1").obj() for i in range(3))]
    outcomes = run(objs)
    assert [x.node for x in outcomes] == ["n1", "n1", None]


def test_finished_terminating_foreign_and_bound_pods_are_not_scheduled() -> None:
    terminating = make_pod("gone").req(cpu="1").dict()
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    objs = [
        _node("n1", "a", cpu="2"),
        make_pod("done").req(cpu="2").phase("Succeeded").obj(),
        decode(o.Pod, terminating),
        make_pod("other").req(cpu="1").spec(schedulerName="volcano").obj(),
        make_pod("bound").req(cpu="1").node("n1").obj(),
        make_pod("new").req(cpu="1").obj(),
    ]
    cluster = build_cluster(objs)
    assert [p.name for p in cluster.pending] == ["new"]
    assert cluster.infos["n1"].requested.milli_cpu == 1000  # only "bound" holds resources
    assert [x.node for x in run(objs)] == ["n1"]


def test_scheduler_name_selects_the_pods() -> None:
    objs = [
        _node("n1", "a"),
        make_pod("mine").spec(schedulerName="volcano").obj(),
        make_pod("theirs").obj(),
    ]
    assert [p.name for p in build_cluster(objs, scheduler_name="volcano").pending] == ["mine"]


def test_bound_pod_on_unknown_node_is_kept_with_a_warning() -> None:
    cluster = build_cluster([_node("n1", "a"), make_pod("lost").node("ghost").obj()])
    assert cluster.warnings == [
        "pod default/lost is bound to unknown node ghost; it is kept but holds nothing"
    ]


def test_priority_class_resolution_and_unknown_class() -> None:
    pc = decode(
        o.PriorityClass, {"kind": "PriorityClass", "metadata": {"name": "gold"}, "value": 1000}
    )
    default = decode(
        o.PriorityClass,
        {"kind": "PriorityClass", "metadata": {"name": "std"}, "value": 7, "globalDefault": True},
    )
    cluster = build_cluster(
        [pc, default, make_pod("a").spec(priorityClassName="gold").obj(), make_pod("b").obj()]
    )
    assert {p.name: p.priority for p in cluster.pending} == {"a": 1000, "b": 7}
    # The store's rule (store/admission.py): the API server's built-in classes need no object.
    system = build_cluster([make_pod("d").spec(priorityClassName="system-node-critical").obj()])
    assert [p.priority for p in system.pending] == [2000001000]
    with pytest.raises(
        SimulationError,
        match=r"pod default/c: no PriorityClass with name nope was found \(\$.spec.priorityClassName\)",
    ) as caught:
        build_cluster([pc, make_pod("c").spec(priorityClassName="nope").obj()])
    # The object's position, the reason without its name and the path, for the CLI to name
    # the object's file (podium simulate).
    assert caught.value.objects == (
        (1, "no PriorityClass with name nope was found", "$.spec.priorityClassName"),
    )
    with pytest.raises(
        SimulationError, match=r"objects\[0\] Pod default/c: \$.spec.priorityClassName"
    ) as caught:
        run([make_pod("c").spec(priorityClassName="nope").obj()])
    assert [(at, path) for at, _, path in caught.value.objects] == [(0, "$.spec.priorityClassName")]


def test_later_object_with_the_same_name_replaces_the_earlier() -> None:
    objs = [_node("n1", "a", cpu="1"), _node("n1", "a", cpu="8"), make_pod("p").req(cpu="4").obj()]
    assert [x.node for x in run(objs)] == ["n1"]


def test_a_high_priority_pod_preempts_and_its_entry_names_the_evicted() -> None:
    objs = [
        _node("n1", "a", cpu="2"),
        _class("low", 10),
        _class("high", 1000),
        make_pod("low-a").req(cpu="1").spec(priorityClassName="low").node("n1").obj(),
        make_pod("low-b").req(cpu="1").spec(priorityClassName="low").node("n1").obj(),
        make_pod("urgent").req(cpu="1500m").spec(priorityClassName="high").obj(),
    ]
    (outcome,) = run(objs)
    assert outcome.pod.name == "urgent"
    assert sorted(outcome.preempted) == ["default/low-a", "default/low-b"]
    # Evicted, then retried when the victims' deletion moved it back: placed on n1.
    assert (outcome.node, outcome.attempts) == ("n1", 2)


def test_preemption_policy_never_keeps_the_pod_pending() -> None:
    never = decode(
        o.PriorityClass,
        {
            "kind": "PriorityClass",
            "metadata": {"name": "high-never"},
            "value": 1000,
            "preemptionPolicy": "Never",
        },
    )
    objs = [
        _node("n1", "a", cpu="1"),
        _class("low", 10),
        never,
        make_pod("low-a").req(cpu="1").spec(priorityClassName="low").node("n1").obj(),
        make_pod("polite").req(cpu="1").spec(priorityClassName="high-never").obj(),
    ]
    (outcome,) = run(objs)
    assert outcome.node is None and not outcome.preempted
    assert outcome.message is not None
    assert outcome.message.startswith("0/1 nodes are available: 1 Insufficient cpu. preemption: ")


def test_pod_groups_are_cluster_objects_and_their_pods_are_scheduled() -> None:
    # PodGroups are read and kept for the scheduler; a group of one places its pod as today.
    group = make_pod_group("train").ns("ml").gang(1).obj()
    volcano = make_pod_group("tf").ns("ml").min_member(1, "scheduling.volcano.sh/v1beta1").obj()
    objs = [
        _node("n1", "a"),
        group,
        volcano,
        make_pod("w0").ns("ml").req(cpu="1").group("train").obj(),
        make_pod("w1").ns("ml").req(cpu="1").group("tf", "volcano").obj(),
    ]
    cluster = build_cluster(objs)
    assert cluster.objects.pod_groups == {"ml/train": group, "ml/tf": volcano}
    # Each group is a unit of the queue: seen together, they go by key (ml/tf, then ml/train).
    assert [(x.pod.name, x.node) for x in run(objs)] == [("w1", "n1"), ("w0", "n1")]


def test_a_pod_naming_a_group_in_another_namespace_is_refused_with_its_field() -> None:
    objs = [_node("n1", "a"), make_pod("w0").ns("ml").group("other/train").obj()]
    with pytest.raises(SimulationError) as caught:
        run(objs)
    [(at, reason, path)] = caught.value.objects
    assert (at, path) == (1, "$.spec.schedulingGroup.podGroupName")
    assert "a pod group is in the pod's own namespace (ml)" in reason


def test_members_of_a_gang_short_of_min_count_are_reported_waiting() -> None:
    """The queue holds them (issue 24): never tried, but reported pending with why, as gated
    pods are, instead of missing from the outcomes."""
    members = [member(f"w{i}", "train") for i in range(2)]
    lost = member("x0", "missing")
    fits = [member(f"f{i}", "fits") for i in range(2)]
    outcomes = run(
        [_node("n1", "a"), pod_group("train", 3), pod_group("fits", 2), *members, lost, *fits]
    )
    got = {o.pod.key: (o.node is not None, o.message, o.attempts) for o in outcomes}
    assert got == {
        "ml/f0": (True, None, 1),
        "ml/f1": (True, None, 1),
        "ml/w0": (False, "waiting for pod group ml/train: 2 of 3 pods exist", 0),
        "ml/w1": (False, "waiting for pod group ml/train: 2 of 3 pods exist", 0),
        "ml/x0": (False, "waiting for pod group ml/missing: the group does not exist", 0),
    }


def test_a_gang_short_of_room_is_not_placed_and_says_which_member_blocked_it() -> None:
    """Two of three members fit one node of 2 CPU: the group is not placed; as explain shows
    it, two members would have gone to n1 and the third blocks it, with its hint."""
    objs = [
        _node("n1", "a", cpu="2"),
        pod_group("train", 3),
        *(member(f"w{i}", "train") for i in range(3)),
    ]
    outcomes = simulate(objs, CONFIG, PLUGINS, seed=1, explain=True)
    assert all(o.node is None and o.gang is not None for o in outcomes)
    assert {(o.gang.fit, o.gang.members, o.gang.placed) for o in outcomes if o.gang} == {
        (2, 3, False)
    }
    (group,) = group_outcomes(objs, outcomes).values()
    assert (group.key, group.verdict, group.bound) == ("ml/train", "not placed", 0)
    g = group.placement()
    assert (g.fit, g.needed, g.placed, g.blocking) == (2, 3, False, ["ml/w2"])
    assert [(m.name, m.node) for m in g.members] == [("w0", "n1"), ("w1", "n1"), ("w2", None)]
    assert [(h.resource, h.missing) for h in g.hints["ml/w2"]] == [("cpu", "1")]
    assert g.message is not None and g.message.startswith(
        "pod group ml/train: 2 of 3 members fit, minCount 3; ml/w2: 0/1 nodes are available"
    )


def test_a_groups_verdict_counts_the_members_bound_in_the_input() -> None:
    bound = member("w0", "train", node="n1")
    objs = [_node("n1", "a", cpu="4"), pod_group("train", 2), bound, member("w1", "train")]
    outcomes = run(objs)
    (group,) = group_outcomes(objs, outcomes).values()
    assert (group.bound, group.verdict, [o.pod.name for o in group.members]) == (
        1,
        "placed",
        ["w1"],
    )
