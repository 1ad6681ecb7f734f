"""Random clusters for the property tests: nodes with their pods, an incoming pod, and the
Services and controllers around them, in the shapes every predicate and priority reads.

A :class:`Pick` makes the choices: :class:`DrawPick` through Hypothesis (shrinkable) or
:class:`RandomPick` from a seeded ``random.Random`` (fast, for the bulk of a cluster). Shared by
tests/property/test_vector_scalar.py and tests/property/test_equivalence.py.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from typing import Any, TypeVar

from builders import decode, make_node, make_pod
from hypothesis import strategies as st

from podium.actors.framework.snapshot import ClusterObjects
from podium.actors.framework.zones import LABEL_REGION_BETA, LABEL_ZONE_BETA, LABEL_ZONE_GA
from podium.protocol import objects as o

__all__ = [
    "AVOID_ANNOTATION",
    "BOUNDS",
    "CONDITION_TYPES",
    "CONTROLLERS",
    "EFFECTS",
    "GPU",
    "HOSTNAME",
    "HUGEPAGES",
    "IMAGES",
    "IMAGE_SIZES",
    "MIB",
    "NAMESPACES",
    "NODE_IMAGES",
    "NODE_LABELS",
    "POD_LABELS",
    "RESOURCE_CHOICES",
    "SELECTOR_KEYS",
    "TAINT_KEYS",
    "TAINT_VALUES",
    "TOPOLOGY_KEYS",
    "ZONES",
    "DrawPick",
    "Pick",
    "RandomPick",
    "avoid_pods",
    "cluster_objects",
    "containers",
    "existing_pod",
    "host_ports",
    "incoming_pod",
    "label_selector",
    "node",
    "node_affinity",
    "node_selector_requirement",
    "node_selector_term",
    "owner_label_selector",
    "owner_namespace",
    "owner_refs",
    "owner_selector",
    "pod_affinity",
    "pod_affinity_term",
    "pod_labels",
    "resource_list",
    "tolerations",
]


T = TypeVar("T")

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
