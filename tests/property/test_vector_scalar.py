"""The vector and scalar forms of every predicate and priority agree, on random clusters.

Three comparisons per random cluster and incoming pod:

1. every predicate with a ``filter_columns``: row by row, the reasons its masks give equal
   ``filter(...).reasons`` (and so pass/fail agrees), both run as the framework runs them; a
   predicate whose ``pre_filter`` says SKIP must pass every node;
2. every priority with a ``score_columns``: the map scores over all rows (and over a shuffled
   subset of rows) equal ``score(...)`` node by node;
3. the whole decision, filter stage then score stage (the default policy, and a policy naming
   every predicate and every priority, argument ones included): the vector walk and the
   per-node loop (the same plugins behind thin adapters that hide the vector methods) give the
   same ScheduleResult and the same next start index.

The scalar form is the reference (Kubernetes v1.14 semantics). Besides fresh snapshots, about
a third of the cases edit a few rows through ``Snapshot.replace_node_info`` after every
on-demand column was built (so ``NodeColumns.update_row`` is on trial too), non-argument
plugins are shared across examples (caches kept between pods), and the filter stage runs with
a lowered ``MIN_FEASIBLE_NODES_TO_FIND`` so that the walk's early stop happens on small clusters.

Generation: Hypothesis draws the node count, the incoming pod and the knobs (all shrinkable);
each node with its pods, and the Services/controllers, come from a seeded ``random.Random``
(one drawn seed each), which keeps 200 examples of up to 40 nodes within a few seconds.
Hypothesis prints the failing example (every object as JSON) and how to reproduce it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from unittest import mock

import msgspec
import numpy as np
from builders import decode, make_node, make_pod
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stages import decide

from podium.actors.core import generic_scheduler
from podium.actors.core.generic_scheduler import FilterStage, ScheduleResult, ScoreStage
from podium.actors.core.policy import build_plugins, default_policy, resolve_policy
from podium.actors.framework.interface import (
    SKIP,
    FilterPlugin,
    PluginArgs,
    PredicateError,
    ScorePlugin,
    Skip,
    Status,
    VectorFilterPlugin,
    VectorScorePlugin,
    reasons_of,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.framework.zones import LABEL_REGION_BETA, LABEL_ZONE_BETA, LABEL_ZONE_GA
from podium.actors.plugins import names, registry
from podium.protocol import objects as o
from podium.protocol.policy import decode_policy

T = TypeVar("T")
M = TypeVar("M")

# --------------------------------------------------------------------------- vocabularies

HOSTNAME = "kubernetes.io/hostname"
ZONES = ("z1", "z2", "z3")
NAMESPACES = ("default", "other")
NODE_LABELS: dict[str, tuple[str, ...]] = {
    "disk": ("ssd", "hdd"),
    "env": ("prod", "dev", ""),
    "rack": ("r1", "r2", "r3"),
    "cores": ("1", "4", "16", "-3", "+5", "x", "0x10", "99999999999999999999"),
}
POD_LABELS: dict[str, tuple[str, ...]] = {
    "app": ("web", "db", "cache"),
    "tier": ("fe", "be"),
    "team": ("a", "b"),
}
TOPOLOGY_KEYS = (HOSTNAME, HOSTNAME, LABEL_ZONE_GA, LABEL_ZONE_BETA, "rack", "", "absent")
SELECTOR_KEYS = (*NODE_LABELS, LABEL_ZONE_GA, LABEL_ZONE_BETA, HOSTNAME, "absent")
BOUNDS = ("2", "8", "-1", "+3", "0", "abc")
TAINT_KEYS = ("dedicated", "gpu", "spot")
TAINT_VALUES = ("", "a", "b")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CONDITION_TYPES = (
    "Ready",
    "Ready",
    "Ready",
    "MemoryPressure",
    "DiskPressure",
    "PIDPressure",
    "NetworkUnavailable",
    "OutOfDisk",
)
GPU = "example.com/gpu"
HUGEPAGES = "hugepages-2Mi"
MIB = 1024 * 1024
IMAGES = ("nginx", "nginx:1.17", "redis", "gcr.io:5000/app", "busybox:1.0")
NODE_IMAGES = ("nginx:latest", "nginx:1.17", "redis:latest", "gcr.io:5000/app:latest", "busybox")
IMAGE_SIZES = (10 * MIB, 100 * MIB, 300 * MIB, 800 * MIB, 2000 * MIB)
AVOID_ANNOTATION = "scheduler.alpha.kubernetes.io/preferAvoidPods"
CONTROLLERS = (("ReplicaSet", "rs-uid-1"), ("ReplicationController", "rc-uid-1"))


def avoid_pods(kind: str, uid: str) -> str:
    entry = {"podSignature": {"podController": {"kind": kind, "uid": uid, "name": "c"}}}
    return json.dumps({"preferAvoidPods": [entry]})


# --------------------------------------------------------------------------- random choices


class Pick:
    """The random choices the generators make; a subclass says where they come from."""

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def choice(self, seq: Sequence[T]) -> T:
        return seq[self.integer(0, len(seq) - 1)]

    def coin(self, p: float = 0.5) -> bool:
        """True with probability ``p`` (False is the simpler value)."""
        return self.integer(0, 99) >= round(100 * (1 - p))

    def some(self, seq: Sequence[T], most: int, least: int = 0) -> list[T]:
        """Up to ``most`` distinct elements of ``seq``, in ``seq``'s order."""
        pool = list(seq)
        out = []
        for _ in range(self.integer(least, min(most, len(pool)))):
            out.append(pool.pop(self.integer(0, len(pool) - 1)))
        return out

    def many(self, seq: Sequence[T], most: int, least: int = 0) -> list[T]:
        """Up to ``most`` elements of ``seq``, repeats allowed."""
        return [self.choice(seq) for _ in range(self.integer(least, most))]


class DrawPick(Pick):
    """Choices drawn through Hypothesis (shrinkable)."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(_integers(lo, hi))


class RandomPick(Pick):
    """Choices from a seeded ``random.Random`` (fast: the bulk of a cluster comes from here)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


@functools.cache
def _integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


# --------------------------------------------------------------------------- generators


def label_selector(pick: Pick) -> dict[str, Any] | None:
    """A pod label selector: absent, empty, matchLabels and/or matchExpressions."""
    kind = pick.integer(0, 9)
    if kind == 0:
        return None
    if kind == 1:
        return {}
    out: dict[str, Any] = {}
    keys = pick.some(list(POD_LABELS), 2)
    if keys:
        out["matchLabels"] = {k: pick.choice(POD_LABELS[k]) for k in keys}
    exprs = []
    for _ in range(pick.integer(0, 2)):
        key = pick.choice([*POD_LABELS, "absent"])
        op = pick.choice(("In", "NotIn", "Exists", "DoesNotExist"))
        values: list[str] = []
        if op in ("In", "NotIn"):
            # Now and then no values: an invalid selector (the attempt fails with an error).
            values = pick.many(POD_LABELS.get(key, ("x",)), 2, least=0 if pick.coin(0.03) else 1)
        exprs.append({"key": key, "operator": op, "values": values})
    if exprs:
        out["matchExpressions"] = exprs
    return out


def pod_affinity_term(pick: Pick) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": pick.choice(TOPOLOGY_KEYS)}
    selector = label_selector(pick)
    if selector is not None:
        term["labelSelector"] = selector
    namespaces = pick.choice(([], [], ["default"], ["other"], list(NAMESPACES)))
    if namespaces:
        term["namespaces"] = namespaces
    return term


def pod_affinity(pick: Pick, chance: float) -> dict[str, Any]:
    """``podAffinity``/``podAntiAffinity`` with required and preferred terms, or nothing."""
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if not pick.coin(chance):
            continue
        required = [pod_affinity_term(pick) for _ in range(pick.integer(0, 2))]
        preferred = [
            {"weight": pick.integer(1, 100), "podAffinityTerm": pod_affinity_term(pick)}
            for _ in range(pick.integer(0, 2))
        ]
        out[kind] = {
            "requiredDuringSchedulingIgnoredDuringExecution": required,
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        }
    return out


def node_selector_requirement(pick: Pick, node_names: Sequence[str]) -> dict[str, Any]:
    key = pick.choice(SELECTOR_KEYS)
    op = pick.choice(("In", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    if key in (LABEL_ZONE_GA, LABEL_ZONE_BETA):
        vocab: Sequence[str] = ZONES
    elif key == HOSTNAME:
        vocab = node_names
    else:
        vocab = NODE_LABELS.get(key, ("x",))
    values: list[str]
    if op in ("In", "NotIn"):
        values = pick.many([*vocab, "nope"], 3, least=1)
        if pick.coin(0.03):
            values = []  # invalid: In/NotIn need values
    elif op in ("Gt", "Lt"):
        values = [pick.choice(BOUNDS)]
        if pick.coin(0.03):
            values.append("1")  # invalid: Gt/Lt take exactly one value
        key = "cores" if pick.coin(0.8) else key
    else:
        values = ["x"] if pick.coin(0.03) else []  # invalid: Exists takes no values
    return {"key": key, "operator": op, "values": values}


def node_selector_term(pick: Pick, node_names: Sequence[str]) -> dict[str, Any]:
    term: dict[str, Any] = {}
    exprs = [node_selector_requirement(pick, node_names) for _ in range(pick.integer(0, 3))]
    if exprs:
        term["matchExpressions"] = exprs
    if pick.coin(0.25):
        key = "metadata.name" if pick.coin(0.9) else "spec.unschedulable"
        op = pick.choice(("In", "NotIn", "In", "Exists"))
        count = 1 if op != "Exists" and pick.coin(0.9) else pick.integer(0, 2)
        values = [pick.choice([*node_names, "nope"]) for _ in range(count)]
        term["matchFields"] = [{"key": key, "operator": op, "values": values}]
    return term


def node_affinity(pick: Pick, node_names: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if pick.coin(0.3):
        terms = [node_selector_term(pick, node_names) for _ in range(pick.integer(0, 3))]
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if pick.coin(0.5):
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": pick.integer(0, 100), "preference": node_selector_term(pick, node_names)}
            for _ in range(pick.integer(1, 3))
        ]
    return out


RESOURCE_CHOICES = (
    ("cpu", ("100m", "250m", "1", "2", "0"), 0.6),
    ("memory", ("128Mi", "1Gi", "3Gi"), 0.6),
    ("ephemeral-storage", ("1Gi", "20Gi"), 0.15),
    (GPU, ("1", "2"), 0.15),
    (HUGEPAGES, ("2Mi", "1Gi"), 0.03),
)


def resource_list(pick: Pick) -> dict[str, str]:
    return {name: pick.choice(choices) for name, choices, p in RESOURCE_CHOICES if pick.coin(p)}


def host_ports(pick: Pick) -> list[dict[str, Any]]:
    ports = []
    for _ in range(pick.integer(0, 2)):
        port: dict[str, Any] = {"containerPort": 80, "hostPort": pick.choice((80, 80, 8080, 0))}
        protocol = pick.choice(("", "TCP", "UDP"))
        if protocol:
            port["protocol"] = protocol
        ip = pick.choice(("", "", "0.0.0.0", "127.0.0.1", "10.0.0.1"))
        if ip:
            port["hostIP"] = ip
        ports.append(port)
    return ports


def containers(pick: Pick, port_chance: float) -> list[dict[str, Any]]:
    out = []
    for i in range(pick.integer(0, 2)):
        c: dict[str, Any] = {"name": f"c{i}", "image": pick.choice(IMAGES)}
        resources: dict[str, Any] = {}
        requests = resource_list(pick)
        if requests:
            resources["requests"] = requests
        if pick.coin(0.15):
            resources["limits"] = resource_list(pick)
        if resources:
            c["resources"] = resources
        ports = host_ports(pick) if pick.coin(port_chance) else []
        if ports:
            c["ports"] = ports
        out.append(c)
    return out


def tolerations(pick: Pick) -> list[dict[str, Any]]:
    out = []
    for _ in range(pick.integer(0, 3)):
        t: dict[str, Any] = {}
        kind = pick.integer(0, 9)
        if kind == 1:
            t = {"operator": "Exists"}  # tolerates every taint (of its effect)
        elif kind == 2:
            t = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}
        elif kind == 3:
            t = {"operator": "Equal", "value": pick.choice(TAINT_VALUES)}  # any key, this value
        else:
            t["key"] = pick.choice(TAINT_KEYS)
            op = pick.choice(("", "Equal", "Exists"))
            if op:
                t["operator"] = op
            if op != "Exists":
                value = pick.choice(TAINT_VALUES)
                if value:
                    t["value"] = value
        effect = pick.choice(("", "", *EFFECTS))
        if effect:
            t["effect"] = effect
        out.append(t)
    return out


def pod_labels(pick: Pick) -> dict[str, str]:
    return {k: pick.choice(POD_LABELS[k]) for k in pick.some(list(POD_LABELS), 3)}


def owner_refs(pick: Pick) -> list[dict[str, Any]]:
    if not pick.coin(0.35):
        return []
    kind, uid = pick.choice((*CONTROLLERS, ("StatefulSet", "ss-uid-1")))
    return [
        {"apiVersion": "v1", "kind": kind, "name": "c", "uid": uid, "controller": pick.coin(0.85)}
    ]


def existing_pod(pick: Pick, name: str, node: str) -> o.Pod:
    spec: dict[str, Any] = {"nodeName": node, "containers": containers(pick, 0.25)}
    affinity = pod_affinity(pick, 0.15)
    if affinity:
        spec["affinity"] = affinity
    meta: dict[str, Any] = {"name": name, "namespace": pick.choice(NAMESPACES)}
    labels = pod_labels(pick)
    if labels:
        meta["labels"] = labels
    owners = owner_refs(pick)
    if owners:
        meta["ownerReferences"] = owners
    if pick.coin(0.03):
        meta["deletionTimestamp"] = "2019-04-01T00:00:00Z"
    pod: o.Pod = decode(o.Pod, {"kind": "Pod", "metadata": meta, "spec": spec})
    return pod


def node(pick: Pick, name: str) -> o.Node:
    b = make_node(name)
    if pick.coin(0.9):
        b.label(HOSTNAME, name)
    zone = pick.integer(0, 5)
    if zone in (1, 2, 3):
        b.label(LABEL_ZONE_GA, pick.choice(ZONES))
    if zone in (3, 4):
        b.label(LABEL_ZONE_BETA, pick.choice((*ZONES, "")))
    if zone == 5 and pick.coin():
        b.label(LABEL_REGION_BETA, "r")
    for key in pick.some(list(NODE_LABELS), 4):
        b.label(key, pick.choice(NODE_LABELS[key]))
    capacity: dict[str, Any] = {
        "cpu": pick.choice(("500m", "1", "2", "4", "8")),
        "memory": pick.choice(("512Mi", "1Gi", "4Gi", "16Gi", "0")),
        "pods": pick.choice((1, 2, 3, 5, 110, 110)),
    }
    if pick.coin(0.6):
        capacity["ephemeral-storage"] = pick.choice(("10Gi", "100Gi"))
    if pick.coin(0.3):
        capacity[GPU] = pick.choice(("1", "2", "4"))
    if pick.coin(0.05):
        capacity[HUGEPAGES] = pick.choice(("0", "1Gi"))
    b.capacity_map(capacity)
    if pick.coin(0.5):
        allocatable = dict(capacity)
        allocatable["cpu"] = pick.choice(("0", "300m", "1500m", capacity["cpu"]))
        b.allocatable(allocatable)
    for _ in range(pick.integer(0, 2) if pick.coin(0.5) else 0):
        b.taint(pick.choice(TAINT_KEYS), pick.choice(TAINT_VALUES), pick.choice(EFFECTS))
    if pick.coin(0.1):
        b.unschedulable()
    # Usually one Ready condition, anywhere among a few others (types may repeat).
    conditions = [
        (pick.choice(CONDITION_TYPES), pick.choice(("True", "False", "Unknown")))
        for _ in range(pick.integer(0, 2) if pick.coin(0.4) else 0)
    ]
    if pick.coin(0.9):
        ready = "True" if pick.coin(0.9) else pick.choice(("False", "Unknown"))
        conditions.insert(pick.integer(0, len(conditions)), ("Ready", ready))
    for ctype, status in conditions:
        b.condition(ctype, status)
    for _ in range(pick.integer(0, 2)):
        b.image(pick.many(NODE_IMAGES, 2, least=1), pick.choice(IMAGE_SIZES))
    if pick.coin(0.15):
        kind, uid = pick.choice(CONTROLLERS)
        b.annotation(AVOID_ANNOTATION, pick.choice((avoid_pods(kind, uid), "{not json")))
    made: o.Node = b.obj()
    return made


def incoming_pod(pick: Pick, node_names: Sequence[str]) -> o.Pod:
    b = make_pod("incoming").ns(pick.choice(NAMESPACES))
    b.labels(pod_labels(pick))
    b.spec(containers=containers(pick, 0.4))
    if pick.coin(0.2):
        b.init_req(resource_list(pick))
    if pick.coin(0.1):
        b.overhead(resource_list(pick))
    if pick.coin(0.15):
        selector = {}
        for key in pick.some((*NODE_LABELS, LABEL_ZONE_GA, LABEL_ZONE_BETA), 2, least=1):
            vocab = ZONES if key in (LABEL_ZONE_GA, LABEL_ZONE_BETA) else NODE_LABELS[key]
            selector[key] = pick.choice(vocab)
        b.node_selector(selector)
    affinity = pod_affinity(pick, 0.25)
    if pick.coin(0.5):
        affinity["nodeAffinity"] = node_affinity(pick, node_names)
    if affinity:
        b.affinity(affinity)
    for t in tolerations(pick):
        b.d["spec"].setdefault("tolerations", []).append(t)
    if pick.coin(0.08):
        b.node(pick.choice([*node_names, "nope"]))
    owners = owner_refs(pick)
    if owners:
        b.d["metadata"]["ownerReferences"] = owners
    pod: o.Pod = b.obj()
    return pod


def owner_selector(pick: Pick, pod: o.Pod) -> dict[str, str]:
    """A selector over pod labels: often a part of ``pod``'s, so that it selects the pod."""
    own = pod.metadata.labels
    if own and pick.coin(0.6):
        return {k: own[k] for k in pick.some(sorted(own), 2, least=1)}
    return {k: pick.choice(POD_LABELS[k]) for k in pick.some(list(POD_LABELS), 2, least=1)}


def owner_namespace(pick: Pick, pod: o.Pod) -> str:
    return pod.metadata.namespace if pick.coin(0.8) else pick.choice(NAMESPACES)


def owner_label_selector(pick: Pick, pod: o.Pod) -> o.LabelSelector | None:
    raw = label_selector(pick) if pick.coin(0.4) else {"matchLabels": owner_selector(pick, pod)}
    return None if raw is None else decode(o.LabelSelector, raw)


def cluster_objects(pick: Pick, pod: o.Pod) -> ClusterObjects:
    """Services, ReplicaSets, and now and then a ReplicationController and a StatefulSet,
    in the incoming pod's namespace and selecting it more often than not."""
    objects = ClusterObjects()
    for i in range(pick.integer(0, 3)):
        ns = owner_namespace(pick, pod)
        objects.services[f"{ns}/svc{i}"] = o.Service(
            metadata=o.ObjectMeta(name=f"svc{i}", namespace=ns),
            spec=o.ServiceSpec(selector=owner_selector(pick, pod) if pick.coin(0.9) else {}),
        )
    for i in range(pick.integer(0, 2)):
        ns = owner_namespace(pick, pod)
        objects.replica_sets[f"{ns}/rs{i}"] = o.ReplicaSet(
            metadata=o.ObjectMeta(name=f"rs{i}", namespace=ns),
            spec=o.SelectorSpec(selector=owner_label_selector(pick, pod)),
        )
    if pick.coin(0.2):
        ns = owner_namespace(pick, pod)
        objects.replication_controllers[f"{ns}/rc"] = o.ReplicationController(
            metadata=o.ObjectMeta(name="rc", namespace=ns),
            spec=o.ReplicationControllerSpec(selector=owner_selector(pick, pod)),
        )
    if pick.coin(0.1):
        ns = owner_namespace(pick, pod)
        objects.stateful_sets[f"{ns}/ss"] = o.StatefulSet(
            metadata=o.ObjectMeta(name="ss", namespace=ns),
            spec=o.SelectorSpec(selector=owner_label_selector(pick, pod)),
        )
    return objects


@dataclass(frozen=True)
class Case:
    """One random cluster, the pod to place and the knobs of the comparison."""

    snapshot: Snapshot
    pod: PodInfo
    presence_labels: tuple[str, ...]
    presence: bool
    affinity_labels: tuple[str, ...]
    preference_label: str
    edits: tuple[tuple[int, int], ...]
    start: int
    seed: int
    check_all: bool
    percentage: int
    min_feasible: int

    def __repr__(self) -> str:
        lines = [
            f"Case(start={self.start}, seed={self.seed}, check_all={self.check_all},",
            f"  edits={self.edits} (the nodes below are after the edits),",
            f"  percentage={self.percentage}, min_feasible={self.min_feasible},",
            f"  presence={self.presence_labels}/{self.presence}, affinity={self.affinity_labels},",
            f"  preference={self.preference_label!r},",
            f"  pod={_dump(self.pod.pod)},",
        ]
        objects = self.snapshot.objects
        for table in (
            objects.services,
            objects.replica_sets,
            objects.replication_controllers,
            objects.stateful_sets,
        ):
            lines.extend(f"  object={_dump(obj)}," for obj in table.values())
        for info in fresh_snapshot(self).node_infos:
            lines.append(f"  node={_dump(info.node)},")
            lines.extend(f"    pod={_dump(p.pod)}," for p in info.pods)
        return "\n".join([*lines, ")"])

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How Hypothesis prints a failing example: every object, as JSON."""
        printer.text(repr(self))


def _dump(obj: object) -> str:
    return msgspec.json.encode(obj, enc_hook=o.enc_hook).decode()


LABEL_KEYS = (*NODE_LABELS, LABEL_ZONE_GA, HOSTNAME)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A cluster of 1-40 nodes (each from its own seed) and an incoming pod drawn directly."""
    pick = DrawPick(draw)
    count = pick.integer(1, 40)
    node_names = [f"n{i}" for i in range(count)]
    pod = incoming_pod(pick, node_names)
    infos = []
    for name in node_names:
        bulk = RandomPick(pick.integer(0, 2**32 - 1))
        pods = [
            PodInfo(existing_pod(bulk, f"{name}-p{j}", name))
            for j in range(bulk.integer(0, 3) if bulk.coin(0.6) else 0)
        ]
        infos.append(NodeInfo(node(bulk, name), pods))
    objects = cluster_objects(RandomPick(pick.integer(0, 2**32 - 1)), pod)
    return Case(
        snapshot=Snapshot(infos, objects),
        pod=PodInfo(pod),
        presence_labels=tuple(pick.some(LABEL_KEYS, 1 if pick.coin(0.8) else 2)),
        presence=pick.coin(),
        affinity_labels=tuple(pick.some((LABEL_ZONE_GA, "rack", "disk"), 2, least=1)),
        preference_label=pick.choice(LABEL_KEYS),
        edits=tuple(
            (pick.integer(0, count - 1), pick.integer(0, 2**32 - 1))
            for _ in range(pick.integer(1, 3) if pick.coin(0.3) else 0)
        ),
        start=pick.integer(0, count - 1),
        seed=pick.integer(0, 2**32 - 1),
        check_all=pick.coin(),
        percentage=pick.choice((0, 0, 10, 50, 100)),
        min_feasible=pick.choice((100, 1, 3, 10)),
    )


# --------------------------------------------------------------------------- plugins


def predicate(case: Case, canonical: str) -> FilterPlugin:
    """The predicate, configured from the case when it takes an argument."""
    factory = registry.predicate_factory(canonical)
    if canonical == names.CHECK_NODE_LABEL_PRESENCE:
        return factory(PluginArgs("presence", labels=case.presence_labels, presence=case.presence))
    if canonical == names.CHECK_SERVICE_AFFINITY:
        return factory(PluginArgs("affinity", labels=case.affinity_labels))
    return shared_predicate(canonical)


def priority(case: Case, canonical: str) -> ScorePlugin:
    """The priority, configured from the case when it takes an argument."""
    factory = registry.priority_factory(canonical)
    if canonical == names.NODE_LABEL:
        return factory(
            PluginArgs("preference", label=case.preference_label, presence=case.presence)
        )
    if canonical == names.SERVICE_ANTI_AFFINITY:
        return factory(PluginArgs("spread", label=case.affinity_labels[0]))
    return shared_priority(canonical)


ALL_PRIORITIES = (*names.PRIORITIES, names.NODE_LABEL, names.SERVICE_ANTI_AFFINITY)


def full_policy(case: Case) -> dict[str, Any]:
    """Every predicate and every priority, argument ones included."""
    predicates: list[dict[str, Any]] = [
        {"name": name}
        for name in names.PREDICATES_ORDERING
        if name not in (names.CHECK_NODE_LABEL_PRESENCE, names.CHECK_SERVICE_AFFINITY)
    ]
    predicates.append(
        {
            "name": "presence",
            "argument": {
                "labelsPresence": {"labels": list(case.presence_labels), "presence": case.presence}
            },
        }
    )
    predicates.append(
        {
            "name": "affinity",
            "argument": {"serviceAffinity": {"labels": list(case.affinity_labels)}},
        }
    )
    priorities: list[dict[str, Any]] = [
        {"name": name, "weight": 1 + i % 3} for i, name in enumerate(names.PRIORITIES)
    ]
    priorities.append(
        {
            "name": "preference",
            "weight": 2,
            "argument": {
                "labelPreference": {"label": case.preference_label, "presence": case.presence}
            },
        }
    )
    priorities.append(
        {
            "name": "spread",
            "weight": 3,
            "argument": {"serviceAntiAffinity": {"label": case.affinity_labels[0]}},
        }
    )
    return {
        "kind": "Policy",
        "apiVersion": "v1",
        "predicates": predicates,
        "priorities": priorities,
        "alwaysCheckAllPredicates": case.check_all,
    }


class ScalarFilter(FilterPlugin[M]):
    """A predicate with its vector form hidden: the same contract, pre_filter and filter."""

    def __init__(self, inner: FilterPlugin[M]) -> None:
        self.inner = inner
        self.name = inner.name
        self.node_local = inner.node_local
        self.missing_node = inner.missing_node

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> M | Skip:
        return self.inner.pre_filter(pod, snapshot)

    def filter(self, pod: PodInfo, meta: M, node: NodeInfo) -> Status:
        return self.inner.filter(pod, meta, node)


class ScalarScore(ScorePlugin[M]):
    """A priority with its vector form hidden: the same contract, pre_score, score, normalize."""

    def __init__(self, inner: ScorePlugin[M]) -> None:
        self.inner = inner
        self.name = inner.name
        self.node_local = inner.node_local

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> M | Skip:
        return self.inner.pre_score(pod, snapshot, nodes)

    def score(self, pod: PodInfo, meta: M, node: NodeInfo) -> int:
        return self.inner.score(pod, meta, node)

    def normalize(
        self, pod: PodInfo, meta: M | Skip, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return self.inner.normalize(pod, meta, nodes, scores)


def fresh_snapshot(case: Case) -> Snapshot:
    """The case's cluster in a new Snapshot, with the case's edits applied.

    With edits, every on-demand column is built first and the edits then go through
    ``Snapshot.replace_node_info``, so the vector forms read columns kept in step by
    ``NodeColumns.update_row`` rather than freshly built ones.
    """
    snapshot = Snapshot(case.snapshot.node_infos, case.snapshot.objects)
    if not case.edits:
        return snapshot
    cols = snapshot.columns
    for key in (*NODE_LABELS, LABEL_ZONE_GA, LABEL_ZONE_BETA, LABEL_REGION_BETA, HOSTNAME):
        cols.label(key)
    cols.scalar(GPU)
    cols.scalar(HUGEPAGES)
    cols.annotation(AVOID_ANNOTATION)
    for image in NODE_IMAGES:
        cols.image_sizes(image)
    snapshot.image_states()
    for row, seed in case.edits:
        pick = RandomPick(seed)
        old = snapshot.node_infos[row]
        kind = pick.integer(0, 2)
        if kind == 2:
            new = NodeInfo(node(pick, old.name), old.pods)  # a new Node object
        else:
            new = old.clone()
            if kind == 1 and new.pods:
                new.remove_pod(pick.choice(new.pods))
            else:
                new.add_pod(PodInfo(existing_pod(pick, f"{old.name}-x{seed}", old.name)))
        snapshot.replace_node_info(new)
    return snapshot


@functools.cache
def shared_default_plugins() -> tuple[list[FilterPlugin], list[tuple[ScorePlugin, int]]]:
    return build_plugins(default_policy())


@functools.cache
def shared_predicate(canonical: str) -> FilterPlugin:
    """One instance per predicate for the whole run, so caches kept between pods are used."""
    return registry.predicate_factory(canonical)(PluginArgs(canonical))


@functools.cache
def shared_priority(canonical: str) -> ScorePlugin:
    return registry.priority_factory(canonical)(PluginArgs(canonical))


# --------------------------------------------------------------------------- comparisons


def check_predicates(case: Case) -> None:
    snapshot = fresh_snapshot(case)
    cols = snapshot.columns
    infos = snapshot.node_infos
    pod = case.pod
    for canonical in names.PREDICATES_ORDERING:
        plugin = predicate(case, canonical)
        if not isinstance(plugin, VectorFilterPlugin):
            continue
        try:
            meta = plugin.pre_filter(pod, snapshot)
        except PredicateError:
            continue
        if meta is SKIP:
            for info in infos:
                status = run_filter(plugin, pod, meta, info)
                assert status.is_success, (canonical, info.name, status)
            continue
        masks = run_filter_columns(plugin, pod, meta, cols)
        for mask_reason, mask in masks:
            assert mask.dtype == np.bool_ and mask.shape == (cols.n,), (canonical, mask_reason)
        for row, info in enumerate(infos):
            status = run_filter(plugin, pod, meta, info)
            vector = reasons_of(masks, row)
            assert vector == status.reasons, (canonical, info.name, vector, status)
            assert (not vector) == status.is_success, (canonical, info.name, vector, status)


def check_priorities(case: Case) -> None:
    snapshot = fresh_snapshot(case)
    cols = snapshot.columns
    infos = snapshot.node_infos
    pod = case.pod
    rng = random.Random(case.seed)
    every = np.arange(len(infos), dtype=np.intp)
    subset = np.asarray(rng.sample(range(len(infos)), rng.randint(1, len(infos))), dtype=np.intp)
    for canonical in ALL_PRIORITIES:
        plugin = priority(case, canonical)
        if not isinstance(plugin, VectorScorePlugin):
            continue
        try:
            meta = plugin.pre_score(pod, snapshot, infos)
        except PredicateError:
            continue
        if meta is SKIP:
            continue
        scalar = [plugin.score(pod, meta, info) for info in infos]
        for rows in (every, subset):
            vector = plugin.score_columns(pod, meta, cols, rows)
            assert vector.dtype == np.int64, canonical
            want = [scalar[r] for r in rows.tolist()]
            assert vector.tolist() == want, (canonical, rows.tolist(), vector.tolist(), want)


def schedule(
    case: Case, policy: dict[str, Any] | None, *, scalar: bool
) -> tuple[ScheduleResult, int]:
    """Schedule the case's pod; the result and the start index the next pod would get."""
    if policy is None:
        resolved = default_policy()
    else:
        resolved = resolve_policy(decode_policy(policy).policy)
    if policy is None and not scalar:
        filters, scorers = shared_default_plugins()  # kept across pods, caches and all
    else:
        filters, scorers = build_plugins(resolved)
    if scalar:
        filters = [ScalarFilter(f) for f in filters]
        scorers = [(ScalarScore(s), w) for s, w in scorers]
        assert not any(isinstance(f, VectorFilterPlugin) for f in filters)
    stage = FilterStage(
        filters,
        percentage_of_nodes_to_score=case.percentage,
        always_check_all_predicates=resolved.always_check_all_predicates or case.check_all,
    )
    stage.next_start_index = case.start
    scores = ScoreStage(scorers, rng=random.Random(case.seed))
    # A smaller floor than Kubernetes' 100 makes the walk stop early on these small clusters.
    with mock.patch.object(generic_scheduler, "MIN_FEASIBLE_NODES_TO_FIND", case.min_feasible):
        result = decide(stage, scores, case.pod, fresh_snapshot(case), explain=True)
    return result, stage.next_start_index


# Every field of the result (node, message, error, evaluated, feasible, reasons, failed,
# feasible_nodes, scores, totals, ...), so a field added later is compared too.
RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(ScheduleResult))


def check_decision(case: Case) -> None:
    for policy in (None, full_policy(case)):
        label = "default" if policy is None else "full"
        vector, vector_next = schedule(case, policy, scalar=False)
        loop, loop_next = schedule(case, policy, scalar=True)
        for field in RESULT_FIELDS:
            assert getattr(vector, field) == getattr(loop, field), (label, field)
        assert vector_next == loop_next, label
        if not vector.error:  # (an error while scoring comes after the walk has moved on)
            assert vector_next == (case.start + vector.evaluated) % len(case.snapshot), label


@settings(
    max_examples=200,
    deadline=None,
    derandomize=False,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases())
def test_vector_and_scalar_forms_agree(case: Case) -> None:
    check_predicates(case)
    check_priorities(case)
    check_decision(case)


def test_adapters_hide_the_vector_forms() -> None:
    """The loop side really is scalar: the adapters are plugins but not vector plugins."""
    filters, scorers = build_plugins(default_policy())
    assert any(isinstance(f, VectorFilterPlugin) for f in filters)
    for f in filters:
        wrapped = ScalarFilter(f)
        assert isinstance(wrapped, FilterPlugin)
        assert not isinstance(wrapped, VectorFilterPlugin)
    for s, _ in scorers:
        assert not isinstance(ScalarScore(s), VectorScorePlugin)
