"""Hypothesis strategies for requests a client may send: puts of every kind with odd-but-typed
fields, deletes, gets with selector strings, watches from any revision.

The vocabularies are small on purpose (a few names, namespaces, label keys and values, good and
bad quantities, integers at the edges of int32 and int64), so that objects of one request meet
those of another. Shared by tests/property/test_fuzz_requests.py (the store core and the
scheduler) and tests/e2e/test_fuzz_daemon.py (a real daemon).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from podium.protocol import objects as o

__all__ = [
    "BAD_QUANTITIES",
    "CLAIMS",
    "CLASSES",
    "GOOD_QUANTITIES",
    "GROUPS",
    "INT32",
    "INTEGER_TEXT",
    "INTS",
    "KIND_NAMES",
    "LABEL_KEYS",
    "LABEL_VALUES",
    "NAMES",
    "NAMESPACES",
    "NODE_NAMES",
    "RESOURCES",
    "DeleteRequest",
    "GetRequest",
    "PutRequest",
    "WatchRequest",
    "affinity",
    "affinity_term",
    "budgets",
    "claims",
    "container",
    "controllers",
    "int_or_percent",
    "kind",
    "label_selector",
    "labels",
    "metadata",
    "node_selector",
    "node_selector_term",
    "nodes",
    "objects",
    "pod_affinity",
    "pod_groups",
    "pods",
    "priority_classes",
    "quantities",
    "replica_sets",
    "requests",
    "requirement",
    "resource_lists",
    "services",
    "spread",
    "storage_classes",
    "toleration",
    "volume",
    "volumes",
    "weighted_term",
]


INT32 = 2**31 - 1
# --------------------------------------------------------------------------- vocabularies

NODE_NAMES = ("n1", "n2", "n3", "ghost")
CLAIMS = ("data", "logs", "missing")
CLASSES = ("high", "low", "missing", "system-node-critical")
NAMES = ("a", "b", "web-1", "data", "high", "x" * 300, "ü", "a.b")
NAMESPACES = ("", "default", "shop")
GROUPS = ("train", "eval", "shop/train", "Train", "")
"""Pod group names a pod may give (another namespace's and a bad one included)."""
LABEL_KEYS = (
    "app",
    "disk",
    "topology.kubernetes.io/zone",
    "kubernetes.io/hostname",
    "example.com/x",
    "a/b/c",
    "",
    "-bad",
    "k" * 70,
)
LABEL_VALUES = ("web", "db", "a", "", "ssd", "1", "-3", "99999999999999999999", "v" * 70, "x y")
INTEGER_TEXT = ("1", "-3", "+5", "0x10", "99999999999999999999", "x", "")
RESOURCES = (
    "cpu",
    "memory",
    "pods",
    "ephemeral-storage",
    "example.com/gpu",
    "hugepages-2Mi",
    "attachable-volumes-gce-pd",
    "requests.cpu",
    "",
)
GOOD_QUANTITIES: tuple[Any, ...] = (
    "0",
    "1",
    "100m",
    "1Gi",
    "0.5",
    "2e3",
    "1e64",
    "1e-64",
    "0.0000000001",
    "+1",
    ".5",
    "1.",
    "9999999999999999999Ei",
    "999999999999",
    4,
    0,
    0.25,
    2**63 - 1,
)
BAD_QUANTITIES: tuple[Any, ...] = ("1e999", "-1", "9" * 200, "abc", "1Ki1", "NaN", "", -1, True)
INTS = st.one_of(
    st.integers(-(2**31), INT32),
    st.sampled_from([0, 1, -1, 100, INT32, -(2**31)]),
    st.sampled_from([0, 1, -1, INT32, -(2**31), 2**31, 2**63 - 1, 2**64 - 1, -(2**63)]),
)

labels = st.one_of(
    st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=4),
    st.integers(100, 3000).map(lambda n: {f"k{i}": f"v{i}" for i in range(n)}),
)
# Mostly good: one bad quantity refuses the whole put at decode.
quantities = st.sampled_from(GOOD_QUANTITIES * 6 + BAD_QUANTITIES)
resource_lists = st.dictionaries(st.sampled_from(RESOURCES), quantities, max_size=4)


def metadata(names: Sequence[str] = NAMES) -> st.SearchStrategy[dict[str, Any]]:
    terminating = st.sampled_from([{}] * 8 + [{"deletionTimestamp": "2026-01-01T00:00:00Z"}])
    return st.tuples(_metadata(names), terminating).map(lambda parts: {**parts[0], **parts[1]})


def _metadata(names: Sequence[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"name": st.sampled_from(names)},
        optional={
            "namespace": st.sampled_from(NAMESPACES),
            "labels": labels,
            "annotations": st.dictionaries(st.sampled_from(LABEL_KEYS), st.text(max_size=5)),
            "uid": st.sampled_from(["", "forged"]),
            "resourceVersion": st.sampled_from(["", "99"]),
            "ownerReferences": st.lists(
                st.fixed_dictionaries(
                    {
                        "kind": st.sampled_from(["ReplicaSet", "StatefulSet", "Job", ""]),
                        "name": st.sampled_from(NAMES),
                    },
                    optional={"controller": st.booleans()},
                ),
                max_size=2,
            ),
        },
    )


def requirement(operators: Sequence[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "key": st.sampled_from(LABEL_KEYS),
            "operator": st.sampled_from([*operators * 4, "Bogus"]),
        },
        optional={
            "values": st.lists(st.sampled_from(LABEL_VALUES + INTEGER_TEXT), max_size=4)
            | st.integers(0, 500).map(lambda n: [f"v{i}" for i in range(n)])
        },
    )


label_selector = st.fixed_dictionaries(
    {},
    optional={
        "matchLabels": st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES)),
        "matchExpressions": st.lists(
            requirement(["In", "NotIn", "Exists", "DoesNotExist"]), max_size=5
        ),
    },
)
node_selector_term = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(
            requirement(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]), max_size=5
        ),
        "matchFields": st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.sampled_from(["metadata.name", "metadata.namespace", "x"]),
                    "operator": st.sampled_from(["In", "NotIn", "Exists", "Gt"]),
                    "values": st.lists(st.sampled_from(NODE_NAMES), max_size=2),
                }
            ),
            max_size=2,
        ),
    },
)
node_selector = st.fixed_dictionaries(
    {"nodeSelectorTerms": st.lists(node_selector_term, max_size=4)}
)
affinity_term = st.fixed_dictionaries(
    {"topologyKey": st.sampled_from(LABEL_KEYS)},
    optional={
        "labelSelector": label_selector | st.none(),
        "namespaces": st.lists(st.sampled_from(NAMESPACES), max_size=2),
    },
)
weighted_term = st.fixed_dictionaries({"weight": INTS, "podAffinityTerm": affinity_term})
pod_affinity = st.fixed_dictionaries(
    {},
    optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.lists(affinity_term, max_size=3),
        "preferredDuringSchedulingIgnoredDuringExecution": st.lists(weighted_term, max_size=3),
    },
)
affinity = st.fixed_dictionaries(
    {},
    optional={
        "nodeAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": node_selector,
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                    st.fixed_dictionaries({"weight": INTS, "preference": node_selector_term}),
                    max_size=3,
                ),
            },
        ),
        "podAffinity": pod_affinity,
        "podAntiAffinity": pod_affinity,
    },
)
container = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["c", "d", ""]),
        "image": st.sampled_from(["nginx", "app:1", ""]),
        "resources": st.fixed_dictionaries(
            {}, optional={"requests": resource_lists, "limits": resource_lists}
        ),
        "ports": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "containerPort": INTS,
                    "hostPort": st.sampled_from([0, 80, 8080, -1, 70000]) | INTS,
                    "protocol": st.sampled_from(["TCP", "UDP", "SCTP", "tcp", ""]),
                    "hostIP": st.sampled_from(["", "0.0.0.0", "127.0.0.1", "::", "bogus"]),
                },
            ),
            max_size=3,
        ),
    },
)
volume = st.fixed_dictionaries(
    {"name": st.sampled_from(["v", "w", ""])},
    optional={
        "persistentVolumeClaim": st.fixed_dictionaries({"claimName": st.sampled_from(CLAIMS)}),
        "gcePersistentDisk": st.fixed_dictionaries(
            {"pdName": st.sampled_from(["pd", ""])},
            optional={"readOnly": st.booleans(), "partition": INTS},
        ),
        "awsElasticBlockStore": st.fixed_dictionaries({"volumeID": st.sampled_from(["vol", ""])}),
        "rbd": st.fixed_dictionaries(
            {"monitors": st.lists(st.sampled_from(["m1", "m2"]), max_size=2)},
            optional={"image": st.just("img")},
        ),
        "iscsi": st.fixed_dictionaries(
            {"targetPortal": st.just("p"), "iqn": st.just("q")}, optional={"lun": INTS}
        ),
    },
)
toleration = st.fixed_dictionaries(
    {},
    optional={
        "key": st.sampled_from(LABEL_KEYS),
        "operator": st.sampled_from(["Equal", "Exists", "", "Bogus"]),
        "value": st.sampled_from(LABEL_VALUES),
        "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", "", "Bogus"]),
        "tolerationSeconds": INTS,
    },
)
spread = st.fixed_dictionaries(
    {
        "maxSkew": INTS,
        "topologyKey": st.sampled_from(LABEL_KEYS),
        "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway", "Bogus"]),
    },
    optional={"labelSelector": label_selector},
)


def kind(name: str, body: dict[str, Any], **meta: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"kind": st.just(name), "metadata": metadata(**meta)},
        optional=body,
    )


# A pod joins a group in any of protocol/gangs.py's forms, now and then in two of them.
_membership = st.fixed_dictionaries(
    {},
    optional={
        "schedulingGroup": st.fixed_dictionaries({"podGroupName": st.sampled_from(GROUPS)}),
        "labels": st.fixed_dictionaries({"scheduling.x-k8s.io/pod-group": st.sampled_from(GROUPS)}),
        "annotations": st.fixed_dictionaries(
            {"scheduling.k8s.io/group-name": st.sampled_from(GROUPS)}
        ),
    },
)


def _join(pod: dict[str, Any], membership: dict[str, Any]) -> dict[str, Any]:
    pod = {**pod, "metadata": dict(pod["metadata"])}
    if "schedulingGroup" in membership:
        pod["spec"] = {**pod.get("spec", {}), "schedulingGroup": membership["schedulingGroup"]}
    for field in ("labels", "annotations"):
        if field in membership:
            pod["metadata"][field] = {**pod["metadata"].get(field, {}), **membership[field]}
    return pod


_pods = kind(
    "Pod",
    {
        "spec": st.tuples(
            st.fixed_dictionaries(
                {},
                optional={
                    "containers": st.lists(container, max_size=3),
                    "initContainers": st.lists(container, max_size=2),
                    "overhead": resource_lists,
                    "nodeSelector": labels,
                    "affinity": affinity,
                    "tolerations": st.lists(toleration, max_size=3),
                    "volumes": st.lists(volume, max_size=3),
                    "priorityClassName": st.sampled_from(CLASSES),
                    "hostNetwork": st.booleans(),
                    "topologySpreadConstraints": st.lists(spread, max_size=2),
                },
            ),
            # A priority or preemptionPolicy the pod sets itself is refused by admission
            # unless it matches its class, and a bound or foreign pod is not scheduled:
            # rarely sent, so that most pods are admitted and pending.
            st.sampled_from([{}] * 6)
            | st.fixed_dictionaries(
                {},
                optional={
                    "priority": INTS,
                    "preemptionPolicy": st.sampled_from(["Never", "PreemptLowerPriority", "Bogus"]),
                    "nodeName": st.sampled_from(NODE_NAMES),
                    "schedulerName": st.sampled_from(["default-scheduler", "other"]),
                },
            ),
        ).map(lambda parts: {**parts[0], **parts[1]}),
        "status": st.fixed_dictionaries(
            {},
            optional={
                "phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed", ""]),
                "nominatedNodeName": st.sampled_from(NODE_NAMES),
                "startTime": st.sampled_from(["2026-01-01T00:00:00Z", "not a time"]),
            },
        ),
    },
)
pods = st.tuples(_pods, st.sampled_from([{}] * 3) | _membership).map(lambda p: _join(*p))
nodes = kind(
    "Node",
    {
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "unschedulable": st.booleans(),
                "taints": st.lists(
                    st.fixed_dictionaries(
                        {
                            "key": st.sampled_from(LABEL_KEYS),
                            "effect": st.sampled_from(["NoSchedule", "NoExecute", "Bogus", ""]),
                        },
                        optional={"value": st.sampled_from(LABEL_VALUES)},
                    ),
                    max_size=3,
                ),
            },
        ),
        "status": st.fixed_dictionaries(
            {},
            optional={
                "capacity": resource_lists,
                "allocatable": resource_lists,
                "conditions": st.lists(
                    st.fixed_dictionaries(
                        {
                            "type": st.sampled_from(
                                ["Ready", "MemoryPressure", "NetworkUnavailable", "OutOfDisk", "X"]
                            ),
                            "status": st.sampled_from(["True", "False", "Unknown", ""]),
                        }
                    ),
                    max_size=4,
                ),
                "images": st.lists(
                    st.fixed_dictionaries(
                        {
                            "names": st.lists(st.sampled_from(["nginx", "app:1", ""]), max_size=2),
                            "sizeBytes": INTS | st.just(2**63 - 1),
                        }
                    ),
                    max_size=3,
                ),
            },
        ),
    },
    names=NODE_NAMES,
)
volumes = kind(
    "PersistentVolume",
    {
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "capacity": resource_lists,
                "accessModes": st.lists(st.sampled_from(["ReadWriteOnce", "ReadOnlyMany", "X"])),
                "storageClassName": st.sampled_from(["fast", "", "missing"]),
                "claimRef": st.fixed_dictionaries(
                    {"namespace": st.sampled_from(NAMESPACES), "name": st.sampled_from(CLAIMS)}
                ),
                "nodeAffinity": st.fixed_dictionaries({"required": node_selector}),
                "gcePersistentDisk": st.fixed_dictionaries({"pdName": st.just("pd")}),
                "csi": st.fixed_dictionaries({"driver": st.sampled_from(["d", ""])}),
            },
        )
    },
    names=("pv1", "pv2"),
)
claims = kind(
    "PersistentVolumeClaim",
    {
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "volumeName": st.sampled_from(["pv1", "pv2", "ghost", ""]),
                "storageClassName": st.sampled_from(["fast", "", "missing"]) | st.none(),
                "resources": st.fixed_dictionaries({"requests": resource_lists}),
                "selector": label_selector,
                "accessModes": st.lists(st.sampled_from(["ReadWriteOnce", "X"]), max_size=2),
            },
        )
    },
    names=CLAIMS,
)
storage_classes = kind(
    "StorageClass",
    {
        "provisioner": st.sampled_from(["p", ""]),
        "volumeBindingMode": st.sampled_from(["Immediate", "WaitForFirstConsumer", "Bogus"]),
    },
    names=("fast", "slow"),
)
services = kind("Service", {"spec": st.fixed_dictionaries({}, optional={"selector": labels})})
controllers = kind(
    "ReplicationController", {"spec": st.fixed_dictionaries({}, optional={"selector": labels})}
)
replica_sets = st.sampled_from(["ReplicaSet", "StatefulSet"]).flatmap(
    lambda k: kind(k, {"spec": st.fixed_dictionaries({}, optional={"selector": label_selector})})
)
priority_classes = kind(
    "PriorityClass",
    {
        "value": INTS,
        "globalDefault": st.booleans(),
        "preemptionPolicy": st.sampled_from(["Never", "PreemptLowerPriority"]),
    },
    names=CLASSES,
)
int_or_percent = INTS | st.sampled_from(["0%", "50%", "100%", "101%", "5", "x%", "%", "-1%"])
budgets = kind(
    "PodDisruptionBudget",
    {
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "minAvailable": int_or_percent,
                "maxUnavailable": int_or_percent,
                "selector": label_selector | st.none(),
            },
        ),
        "status": st.fixed_dictionaries(
            {}, optional={"disruptionsAllowed": INTS, "expectedPods": INTS}
        ),
    },
)
# Mostly a size each form accepts, now and then one it refuses (0, negative, past int32).
_sizes = st.sampled_from([1, 2, 3, 8]) | INTS
_policies = st.sampled_from([{"basic": {}}, {}, {"basic": {}, "gang": {"minCount": 2}}]) | (
    _sizes.map(lambda n: {"gang": {"minCount": n}})
)
pod_groups = st.sampled_from(
    [
        "scheduling.k8s.io/v1alpha2",
        "scheduling.k8s.io/v1alpha2",
        "scheduling.k8s.io/v1beta1",
        "scheduling.x-k8s.io/v1alpha1",
        "scheduling.x-k8s.io/v1alpha1",
        "scheduling.volcano.sh/v1beta1",
        "scheduling.volcano.sh/v1beta1",
        "example.com/v1",
    ]
).flatmap(
    lambda api_version: st.fixed_dictionaries(
        {
            "kind": st.just("PodGroup"),
            "apiVersion": st.just(api_version),
            "metadata": metadata(GROUPS[:2]),
            "spec": st.fixed_dictionaries(
                {"schedulingPolicy": _policies}
                if api_version.startswith("scheduling.k8s.io/")
                else {"minMember": _sizes},
                optional={
                    "scheduleTimeoutSeconds": _sizes,
                    "minResources": resource_lists,
                    "queue": st.sampled_from(["default", ""]),
                    "priorityClassName": st.sampled_from(CLASSES),
                },
            ),
        },
        optional={
            "status": st.fixed_dictionaries(
                {},
                optional={
                    "phase": st.sampled_from(["Pending", "Running", ""]),
                    "running": INTS,
                },
            )
        },
    )
)
# one_of() would fold the repeats into one branch: sampled_from keeps the weights.
objects = st.sampled_from(
    [
        pods,
        pods,
        pods,
        pods,
        pods,
        pods,
        nodes,
        nodes,
        volumes,
        claims,
        storage_classes,
        services,
        controllers,
        replica_sets,
        priority_classes,
        budgets,
        pod_groups,
    ]
).flatmap(lambda strategy: strategy)

# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class PutRequest:
    objects: list[dict[str, Any]]


@dataclass(frozen=True)
class DeleteRequest:
    refs: list[dict[str, Any]]


@dataclass(frozen=True)
class GetRequest:
    kind: str
    name: str
    namespace: str | None
    selector: str


@dataclass(frozen=True)
class WatchRequest:
    from_revision: int


KIND_NAMES = (*o.KINDS, "Deployment", "pod", "")

requests = st.one_of(
    st.builds(PutRequest, st.lists(objects, min_size=1, max_size=6)),
    st.builds(PutRequest, st.lists(objects, min_size=1, max_size=6)),
    st.builds(
        DeleteRequest,
        st.lists(
            st.fixed_dictionaries(
                {"kind": st.sampled_from(KIND_NAMES), "name": st.sampled_from(NAMES + NODE_NAMES)},
                optional={"namespace": st.sampled_from(NAMESPACES)},
            ),
            min_size=1,
            max_size=3,
        ),
    ),
    st.builds(
        GetRequest,
        st.sampled_from(KIND_NAMES),
        st.sampled_from(("", *NAMES[:3], *NODE_NAMES[:2])),
        st.sampled_from((None, *NAMESPACES)),
        st.sampled_from(["", "app=web", "app in (web,db),!disk", "a in (", "x>1", "k" * 70])
        | st.text(max_size=12),
    ),
    st.builds(WatchRequest, st.integers(-5, 40) | st.just(2**63 - 1)),
)
