"""The Kubernetes scheduler's benchmark workloads: the objects ``podium bench`` and the load
generator create, and the table of workloads.

Kubernetes counterpart: ``test/integration/scheduler_perf/config/performance-config.yaml`` and
its templates (``config/templates/node-default.yaml``, ``pod-default.yaml``, the affinity,
spreading and large-CPU pods), at v1.14's pod shape. The gang workloads (issue 24 point 8:
``Gang8``... and their baseline ``OneCPUPods``) have no scheduler_perf counterpart: their pods
join Kubernetes' own PodGroups (``scheduling.k8s.io/v1alpha2``, ``spec.schedulingGroup``).

Owns: nothing; the templates are frozen objects and :func:`put_all` writes through the caller's
client.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from podium.actors.plugins import names
from podium.protocol import objects as o
from podium.protocol.client import Client

__all__ = [
    "AFFINITY_POD",
    "ANTI_AFFINITY_POD",
    "BASELINE_WORKLOAD",
    "CHURN_POD",
    "DEFAULT_POD",
    "GANG_NAMESPACE",
    "GANG_SIZES",
    "HOSTNAME_KEY",
    "LARGE_CPU_POD",
    "NODE_AFFINITY_POD",
    "NODE_CPU",
    "ONE_CPU_POD",
    "PODS_PER_NODE",
    "PUT_BATCH",
    "SIZES",
    "SPREADING_POD",
    "WORKLOADS",
    "ZONES",
    "ZONE_KEY",
    "Gangs",
    "Workload",
    "free_cpu",
    "make_node",
    "make_pod_group",
    "make_pods",
    "put_all",
    "spreading_policy",
]

PUT_BATCH = 500
"""Objects per Put request while loading the cluster and the measured pods."""

ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"
ZONES = ("zone1", "zone2", "zone3")


def _resources(cpu: str = "100m", memory: str = "500Mi", *, limits: bool = True) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory}
    return {"requests": requests, "limits": dict(requests)} if limits else {"requests": requests}


def _pod_template(
    spec_extra: dict[str, Any], labels: dict[str, str] | None = None, **res: Any
) -> o.Pod:
    """A scheduler_perf pod template (pause container, port 80, 100m / 500Mi)."""
    data = {
        "kind": "Pod",
        "metadata": {"name": "template", "labels": labels or {}},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.9",
                    "ports": [{"containerPort": 80}],
                    "resources": _resources(**res),
                }
            ],
            **spec_extra,
        },
    }
    return msgspec.convert(data, o.Pod, dec_hook=o.dec_hook)


# config/templates/pod-default.yaml
DEFAULT_POD = _pod_template({})
# config/pod-large-cpu.yaml: fits no 4-CPU node
LARGE_CPU_POD = _pod_template({}, cpu="9", limits=False)
# config/pod-with-pod-anti-affinity.yaml (namespaces left to the pod's own, so the term bites)
ANTI_AFFINITY_POD = _pod_template(
    {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"color": "green"}},
                        "topologyKey": HOSTNAME_KEY,
                    }
                ]
            }
        }
    },
    {"color": "green"},
)
# config/pod-with-pod-affinity.yaml
AFFINITY_POD = _pod_template(
    {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"color": "blue"}}, "topologyKey": ZONE_KEY}
                ]
            }
        }
    },
    {"color": "blue"},
)
# config/pod-with-node-affinity.yaml
NODE_AFFINITY_POD = _pod_template(
    {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE_KEY, "operator": "In", "values": ["zone1", "zone2"]}
                            ]
                        }
                    ]
                }
            }
        }
    }
)
# config/pod-with-topology-spreading.yaml
SPREADING_POD = _pod_template(
    {
        "topologySpreadConstraints": [
            {
                "maxSkew": 5,
                "topologyKey": ZONE_KEY,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ]
    },
    {"color": "blue"},
)
# The gang workloads' pod: pod-default.yaml asking 1 CPU (a node holds four) and a little memory
# (four hold 1 GiB of a node's 32: CPU alone decides where they fit).
ONE_CPU_POD = _pod_template({}, cpu="1", memory="256Mi")
# config/templates/pod-high-priority-large-cpu.yaml (churn): fits nowhere, tries preemption
CHURN_POD = msgspec.structs.replace(
    LARGE_CPU_POD,
    spec=msgspec.structs.replace(LARGE_CPU_POD.spec, priority_class_name="system-node-critical"),
)


def spreading_policy() -> dict[str, Any]:
    """The default provider's predicates and priorities plus PodTopologySpread (weight 1): what
    scheduler_perf's TopologySpreading runs with (its feature gate on)."""
    return {
        "kind": "Policy",
        "apiVersion": "v1",
        "predicates": [{"name": n} for n in (*names.DEFAULT_PREDICATES, "PodTopologySpread")],
        "priorities": [
            {"name": n, "weight": w}
            for n, w in (*names.DEFAULT_PRIORITIES, ("PodTopologySpread", 1))
        ],
    }


@dataclass(frozen=True)
class Workload:
    """One scheduler_perf workload.

    Attributes:
        name: scheduler_perf's name.
        sizes: the node counts run when no ``--nodes`` is given.
        measured: measured pods for a node count (``--pods`` overrides).
        init: pods created (and waited for) before measuring, for a node count.
        init_pod, measured_pod: the templates.
        init_binds: whether the initial pods bind (Unschedulable's never do).
        policy: a Policy for the daemon, or None for the default provider.
        churn: create and delete a node, a high-priority pod and a Service every second.
        namespaces: (initial, measured) namespaces.
        capacity: the most measured pods the cluster can place, for a node count.
        per_namespace: the most measured pods one namespace can place, for a node count
            (None: no bound but ``capacity``); more measured pods than that go to further
            namespaces (:meth:`measured_pods`).
        gangs: for a gang workload, its gangs (the measured pods are then whole gangs, each
            a PodGroup created before its members: :meth:`measured_objects`); None for the
            others.
    """

    name: str
    sizes: tuple[int, ...]
    measured: Callable[[int], int]
    init: Callable[[int], int]
    measured_pod: o.Pod
    init_pod: o.Pod = DEFAULT_POD
    init_binds: bool = True
    policy: Callable[[], dict[str, Any]] | None = None
    churn: bool = False
    namespaces: tuple[str, str] = ("default", "default")
    capacity: Callable[[int], int] = lambda n: n * PODS_PER_NODE
    per_namespace: Callable[[int], int] | None = None
    gangs: Gangs | None = None

    def measured_namespaces(self, nodes: int, count: int) -> list[str]:
        """The namespaces ``count`` measured pods at ``nodes`` nodes go to: the measured
        namespace, then ``<it>-1``, ``<it>-2``... as many as :attr:`per_namespace` asks."""
        base = self.namespaces[1]
        per = self.per_namespace(nodes) if self.per_namespace is not None else count
        spread = max(1, -(-count // max(per, 1)))
        return [base] + [f"{base}-{i}" for i in range(1, spread)]

    def measured_pods(self, nodes: int, count: int) -> list[o.Pod]:
        """The ``count`` measured pods at ``nodes`` nodes: ``pod-0``... in each of
        :meth:`measured_namespaces`, shared out evenly (the first ones take the remainder)."""
        if self.gangs is not None:
            return [obj for obj in self.measured_objects(nodes, count) if isinstance(obj, o.Pod)]
        spaces = self.measured_namespaces(nodes, count)
        per = -(-count // len(spaces))
        pods: list[o.Pod] = []
        for namespace in spaces:
            pods += make_pods(self.measured_pod, "pod", namespace, min(per, count - len(pods)))
        return pods

    def measured_objects(self, nodes: int, count: int) -> list[o.KubeObject]:
        """What the measured phase creates, in order: :meth:`measured_pods`; for a gang
        workload, ``count // gangs.size`` gangs in the measured namespace, each its PodGroup
        ``gang-G`` (:func:`make_pod_group`) followed by its members ``gang-G-0``... (joined by
        ``spec.schedulingGroup.podGroupName``). Put :data:`PUT_BATCH` at a time, a gang's
        members may span two Puts, as a client's would."""
        if self.gangs is None:
            return list(self.measured_pods(nodes, count))
        namespace, size = self.namespaces[1], self.gangs.size
        spec = self.measured_pod.spec
        objects: list[o.KubeObject] = []
        for g in range(count // size):
            group = f"gang-{g}"
            objects.append(make_pod_group(group, namespace, size))
            member = msgspec.structs.replace(
                self.measured_pod,
                spec=msgspec.structs.replace(
                    spec, scheduling_group=o.PodSchedulingGroup(pod_group_name=group)
                ),
            )
            objects += make_pods(member, group, namespace, size)
        return objects


SIZES = (500, 1000, 5000)
PODS_PER_NODE = 40
"""100m pods on a 4-CPU node."""
NODE_CPU = 4
"""CPUs of a node (:func:`make_node`): as many :data:`ONE_CPU_POD` as it holds."""
GANG_SIZES = (500, 5000)
"""The gang workloads' node counts (issue 24 point 8)."""
BASELINE_WORKLOAD = "OneCPUPods"
"""The gang workloads' pods without groups: the gangs' pods/s are reported over its."""
GANG_NAMESPACE = "gang"
"""The one namespace of every gang workload's pods and groups (scheduler-plugins'
Coscheduling lists every pod of a group's namespace on each attempt: one namespace is its
hardest case, and the issue's)."""


@dataclass(frozen=True)
class Gangs:
    """A gang workload's gangs.

    The cluster has no initial pods, so what is free is every node's :data:`NODE_CPU`, and
    as many 1-CPU pods fit as there are free CPUs whatever the nodes they land on (initial
    pods of 100m spread over the nodes would leave each 3.x CPUs, of which only three hold a
    1-CPU pod: "free CPU" would then overstate the room, and 0.8x of it might not fit).

    Attributes:
        size: pods per gang, each of 1 CPU; the group's ``minCount``.
        ask_percent: the gangs together ask this percent of the free CPU, rounded down to
            whole gangs (80: they all fit; 150: about a third cannot).
    """

    size: int
    ask_percent: int

    def groups(self, nodes: int) -> int:
        """How many gangs at ``nodes`` nodes: ``ask_percent`` of the free CPU in whole gangs."""
        return free_cpu(nodes) * self.ask_percent // (100 * self.size)

    @property
    def overfull(self) -> bool:
        """Whether the gangs ask more than the cluster has (some cannot be placed)."""
        return self.ask_percent > 100


def free_cpu(nodes: int) -> int:
    """The CPUs free for a gang workload's pods at ``nodes`` nodes (no initial pods)."""
    return nodes * NODE_CPU


def _gang_workload(name: str, size: int, ask_percent: int) -> Workload:
    gangs = Gangs(size, ask_percent)
    return Workload(
        name,
        GANG_SIZES,
        measured=lambda n: gangs.groups(n) * gangs.size,
        init=lambda n: 0,
        measured_pod=ONE_CPU_POD,
        namespaces=(GANG_NAMESPACE, GANG_NAMESPACE),
        capacity=free_cpu,
        gangs=gangs,
    )


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "SchedulingBasic",
            (*SIZES, 15000),
            # scheduler_perf measures 10 000; at 3000+ pods/s that is three 1 s windows, so as
            # many as the cluster holds up to 30 000 (19 000 at 500 nodes) for five or more.
            measured=lambda n: min(30_000, n * PODS_PER_NODE - 1000),
            init=lambda n: 1000,
            measured_pod=DEFAULT_POD,
        ),
        Workload(
            "SchedulingPodAntiAffinity",
            SIZES,
            # scheduler_perf measures 400 at 500 nodes, 1000 at 5000: under one second here,
            # too short for its 1 s windows. 12 000 gives at least five full windows at ~1500
            # pods/s; one namespace holds one pod per node (the term's topology is the
            # hostname, its namespaces the pod's own), so the measured pods fill several
            # namespaces, each one pod per node.
            measured=lambda n: 12_000,
            init=lambda n: n // 5,
            init_pod=ANTI_AFFINITY_POD,
            measured_pod=ANTI_AFFINITY_POD,
            namespaces=("sched-0", "sched-1"),
            capacity=lambda n: n * (PODS_PER_NODE - 1),  # room for the initial pod on a node
            per_namespace=lambda n: n,  # one per node
        ),
        Workload(
            "SchedulingPodAffinity",
            SIZES,
            # scheduler_perf measures 1000 (every pod counts every other one): under a second
            # here. Up to 15 000 (what one zone holds beside the initial pods, which gather in
            # one zone too): five full 1 s windows at ~1500 pods/s.
            measured=lambda n: min(15_000, (n // len(ZONES)) * PODS_PER_NODE - n),
            init=lambda n: n,
            init_pod=AFFINITY_POD,
            measured_pod=AFFINITY_POD,
            namespaces=("sched-0", "sched-1"),
            capacity=lambda n: (n // len(ZONES)) * PODS_PER_NODE,  # all in the first pod's zone
        ),
        Workload(
            "SchedulingNodeAffinity",
            SIZES,
            # Two zones of three hold the measured pods (and perhaps every initial one).
            measured=lambda n: min(30_000, (2 * n // len(ZONES)) * PODS_PER_NODE - 1000),
            init=lambda n: min(1000, n),
            measured_pod=NODE_AFFINITY_POD,
        ),
        Workload(
            "TopologySpreading",
            SIZES,
            measured=lambda n: 10_000,
            init=lambda n: 1000,
            measured_pod=SPREADING_POD,
            policy=spreading_policy,
        ),
        Workload(
            "Unschedulable",
            SIZES,
            init=lambda n: 200,
            init_pod=LARGE_CPU_POD,
            init_binds=False,
            measured=lambda n: min(30_000, n * PODS_PER_NODE - 1000),
            measured_pod=DEFAULT_POD,
        ),
        Workload(
            "SchedulingWithMixedChurn",
            SIZES,
            measured=lambda n: min(30_000, n * PODS_PER_NODE - 1000),
            init=lambda n: 0,
            measured_pod=DEFAULT_POD,
            churn=True,
        ),
        # Issue 24: the gangs' baseline, the same pods without groups (0.8x the free CPU).
        Workload(
            BASELINE_WORKLOAD,
            GANG_SIZES,
            measured=lambda n: free_cpu(n) * 80 // 100,
            init=lambda n: 0,
            measured_pod=ONE_CPU_POD,
            namespaces=(GANG_NAMESPACE, GANG_NAMESPACE),
            capacity=free_cpu,
        ),
        _gang_workload("Gang8", 8, 80),
        _gang_workload("Gang32", 32, 80),
        _gang_workload("Gang128", 128, 80),
        _gang_workload("Gang8Overfull", 8, 150),
        _gang_workload("Gang32Overfull", 32, 150),
        _gang_workload("Gang128Overfull", 128, 150),
    )
}


def make_node(index: int, zone: str) -> o.Node:
    """config/templates/node-default.yaml: 4 CPU, 32 GiB, 110 pods, a zone and a hostname."""
    name = f"node-{index}"
    return msgspec.convert(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": {ZONE_KEY: zone, HOSTNAME_KEY: name}},
            "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
        },
        o.Node,
        dec_hook=o.dec_hook,
    )


def make_pod_group(name: str, namespace: str, min_count: int) -> o.PodGroup:
    """A Kubernetes PodGroup (``scheduling.k8s.io/v1alpha2``): all-or-nothing for
    ``min_count`` pods (``spec.schedulingPolicy.gang.minCount``)."""
    return msgspec.convert(
        {
            "kind": "PodGroup",
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
        },
        o.PodGroup,
        dec_hook=o.dec_hook,
    )


def make_pods(template: o.Pod, prefix: str, namespace: str, count: int) -> list[o.Pod]:
    """``count`` copies of ``template`` named ``prefix-0`` ... in ``namespace``."""
    meta = template.metadata
    return [
        msgspec.structs.replace(
            template,
            metadata=msgspec.structs.replace(meta, name=f"{prefix}-{i}", namespace=namespace),
        )
        for i in range(count)
    ]


async def put_all(
    client: Client,
    objects: Sequence[o.KubeObject],
    on_reply: Callable[[Sequence[o.KubeObject]], None] | None = None,
) -> None:
    """Put ``objects`` :data:`PUT_BATCH` at a time, as a client loading a cluster would;
    ``on_reply`` is told each batch as its reply arrives (the objects now exist)."""
    for start in range(0, len(objects), PUT_BATCH):
        batch = objects[start : start + PUT_BATCH]
        await client.put(batch)
        if on_reply is not None:
            on_reply(batch)
