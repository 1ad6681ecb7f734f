"""PodInfo and NodeInfo: the scheduler's per-pod and per-node aggregates.

Kubernetes counterparts: pkg/scheduler/nodeinfo/node_info.go and
pkg/scheduler/algorithm/predicates/predicates.go ``GetResourceRequest`` (v1.14), with the
later, consistent counting of init containers and overhead on both the pod and the node side
(docs/differences.md):

    request = max(sum(containers), max(each init container)) + overhead

per resource. ``non_zero`` requests (used by the resource priorities) give a container that
names no cpu request 100m and no memory request 200 MiB, as ``GetNonzeroRequests`` does.
Requests default to limits where only a limit is set (the API server's defaulting).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import msgspec

from podium.protocol.gangs import names_a_group
from podium.protocol.objects import (
    Container,
    Node,
    NodeCondition,
    Pod,
    Taint,
    enc_hook,
    namespace_or_default,
    namespaced_key,
)
from podium.protocol.quantity import Quantity

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "HostPort",
    "NodeInfo",
    "PodInfo",
    "Resource",
    "is_scalar_resource_name",
    "same_for_scheduling",
]

_STAMPS = itertools.count(1)

_SPEC_ENCODER = msgspec.msgpack.Encoder(enc_hook=enc_hook)
"""Encodes a pod's spec (:meth:`PodInfo.encoded_spec`)."""

DEFAULT_MILLI_CPU_REQUEST = 100
"""priorityutil.DefaultMilliCPURequest: 0.1 core for a container with no cpu request."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""priorityutil.DefaultMemoryRequest: 200 MiB for a container with no memory request."""

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"


def is_scalar_resource_name(name: str) -> bool:
    """``v1helper.IsScalarResourceName``: extended, hugepages-*, attachable-volumes-* or a
    prefixed native resource (any name containing ``kubernetes.io/``, IsPrefixedNativeResource)."""
    if name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name:
        return True
    # IsExtendedResourceName: not native (a "/" outside the kubernetes.io/ domain) and not
    # a quota "requests." name.
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


@dataclass(slots=True)
class Resource:
    """schedulernodeinfo.Resource: cpu in millicores, everything else in integer units."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: Mapping[str, Quantity]) -> Resource:
        r = cls()
        r.add_list(resources)
        return r

    def add_list(self, resources: Mapping[str, Quantity]) -> None:
        for name, q in resources.items():
            if name == CPU:
                self.milli_cpu += q.milli_value()
            elif name == MEMORY:
                self.memory += q.int_value()
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += q.int_value()
            elif name == PODS:
                self.allowed_pod_number += q.int_value()
            elif is_scalar_resource_name(name):
                self.scalar[name] = self.scalar.get(name, 0) + q.int_value()

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.scalar)

    def copy(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )


def _requests(c: Container) -> Mapping[str, Quantity]:
    """A container's requests, defaulted from its limits where only a limit is given."""
    req, lim = c.resources.requests, c.resources.limits
    if not lim or all(k in req for k in lim):
        return req
    merged = dict(lim)
    merged.update(req)
    return merged


def _non_zero(req: Mapping[str, Quantity]) -> tuple[int, int]:
    cpu = req[CPU].milli_value() if CPU in req else DEFAULT_MILLI_CPU_REQUEST
    mem = req[MEMORY].int_value() if MEMORY in req else DEFAULT_MEMORY_REQUEST
    return cpu, mem


@dataclass(frozen=True, slots=True)
class HostPort:
    """One host port a pod asks for: (hostIP, protocol, port), hostIP "" meaning 0.0.0.0."""

    ip: str
    protocol: str
    port: int


class PodInfo:
    """A pod with its scheduling-relevant aggregates computed once.

    Attributes:
        pod: the object itself.
        key: ``namespace/name``.
        namespace, name, labels: shortcuts into the metadata.
        request: what the pod requests (containers, init containers, overhead).
        non_zero_milli_cpu, non_zero_memory: the requests the priorities use.
        host_ports: the host ports its containers ask for (hostPort > 0).
        priority: ``spec.priority`` (0 when unset).
        names_a_group: whether the pod may belong to a pod group (:func:`names_a_group`), so
            that scans over every pod (preemption's) skip the others with one attribute read.
        spec_bytes: the spec encoded (:meth:`encoded_spec`), None until first asked for.
        stamp: what predicates and priorities can see of the pod, as a number: a fresh one
            per PodInfo, kept by :meth:`with_pod` for a revision that differs only in
            ``metadata.resourceVersion`` and ``status`` (a confirmed binding), which no
            predicate or priority reads of a pod on a node (:func:`same_for_scheduling`).
    """

    __slots__ = (
        "host_ports",
        "key",
        "labels",
        "name",
        "names_a_group",
        "namespace",
        "non_zero_memory",
        "non_zero_milli_cpu",
        "pod",
        "priority",
        "request",
        "spec_bytes",
        "stamp",
    )

    def __init__(self, pod: Pod) -> None:
        self.stamp = next(_STAMPS)
        self.pod = pod
        self.namespace = namespace_or_default(pod.metadata.namespace)
        self.name = pod.metadata.name
        self.key = namespaced_key(self.namespace, self.name)
        self.labels = pod.metadata.labels
        self.names_a_group = names_a_group(pod)
        spec = pod.spec
        request = Resource()
        nz_cpu = nz_mem = 0
        for c in spec.containers:
            req = _requests(c)
            request.add_list(req)
            cpu, mem = _non_zero(req)
            nz_cpu += cpu
            nz_mem += mem
        for c in spec.init_containers:
            req = _requests(c)
            request.set_max(Resource.from_list(req))
            cpu, mem = _non_zero(req)
            nz_cpu, nz_mem = max(nz_cpu, cpu), max(nz_mem, mem)
        if spec.overhead:
            over = Resource.from_list(spec.overhead)
            request.add(over)
            nz_cpu += over.milli_cpu
            nz_mem += over.memory
        request.allowed_pod_number = 0
        self.request = request
        self.non_zero_milli_cpu = nz_cpu
        self.non_zero_memory = nz_mem
        self.host_ports = tuple(
            HostPort(p.host_ip, p.protocol or "TCP", p.host_port)
            for c in spec.containers
            for p in c.ports
            if p.host_port > 0
        )
        self.priority = spec.priority or 0
        self.spec_bytes: bytes | None = None

    @property
    def node_name(self) -> str:
        return self.pod.spec.node_name

    def encoded_spec(self) -> bytes:
        """The pod's spec as msgpack (quantities as written), encoded on first need and kept:
        what the equivalence classes' keys are made of, asked for by the filter stage and
        by the plugins that key their state by class, several times an attempt."""
        encoded = self.spec_bytes
        if encoded is None:
            encoded = self.spec_bytes = _SPEC_ENCODER.encode(self.pod.spec)
        return encoded

    def _sharing_aggregates(self, pod: Pod) -> PodInfo:
        """A PodInfo of ``pod`` holding this one's aggregates (requests, non-zero requests,
        host ports, priority), which come from the containers, the overhead and the
        priority: for a revision of the pod whose spec differs in none of them. The caller
        sets the metadata shortcuts, the stamp and the encoded spec."""
        info = PodInfo.__new__(PodInfo)
        info.pod = pod
        info.request = self.request
        info.non_zero_milli_cpu = self.non_zero_milli_cpu
        info.non_zero_memory = self.non_zero_memory
        info.host_ports = self.host_ports
        info.priority = self.priority
        return info

    def with_pod(self, pod: Pod) -> PodInfo:
        """``pod``, another revision of this pod, as a PodInfo: the aggregates, which come from
        the spec alone, are reused when its spec equals this one's (a confirmed binding, a
        status change), so only the metadata shortcuts are taken again."""
        if pod.spec != self.pod.spec:
            return PodInfo(pod)
        info = self._sharing_aggregates(pod)
        info.namespace = namespace_or_default(pod.metadata.namespace)
        info.name = pod.metadata.name
        info.key = (
            self.key
            if info.namespace == self.namespace and info.name == self.name
            else namespaced_key(info.namespace, info.name)
        )
        info.labels = pod.metadata.labels
        info.names_a_group = names_a_group(pod)  # labels and annotations may name one
        info.spec_bytes = self.spec_bytes
        meta, mine = pod.metadata, self.pod.metadata
        if meta is mine or (
            msgspec.structs.replace(meta, resource_version=mine.resource_version) == mine
        ):
            info.stamp = self.stamp
        else:
            info.stamp = next(_STAMPS)
        return info

    def on_node(self, node: str) -> PodInfo:
        """This pod with ``spec.nodeName`` set to ``node`` (as an assume counts it): a new
        PodInfo (a fresh stamp), the aggregates and the metadata shortcuts reused (the
        node's name changes none of them)."""
        pod = self.pod
        info = self._sharing_aggregates(
            msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))
        )
        info.stamp = next(_STAMPS)
        info.namespace = self.namespace
        info.name = self.name
        info.key = self.key
        info.labels = self.labels
        info.names_a_group = self.names_a_group
        info.spec_bytes = None
        return info

    @property
    def has_affinity(self) -> bool:
        a = self.pod.spec.affinity
        return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


class NodeInfo:
    """A node with the pods on it and their aggregates (schedulernodeinfo.NodeInfo).

    Attributes:
        node: the Node object (``None`` for a node that pods name but that is not known).
        name: the node's name.
        pods: the pods on it, bound and assumed, in arrival order.
        requested: the sum of their requests.
        non_zero_milli_cpu, non_zero_memory: the sum of their non-zero requests.
        allocatable: the node's allocatable (capacity where allocatable is absent).
        used_ports: (ip, protocol, port) triples taken by its pods.
        pods_with_affinity: its pods that carry pod (anti-)affinity.
        generation: bumped on every change, so snapshots can copy only what changed.
    """

    __slots__ = (
        "allocatable",
        "generation",
        "name",
        "node",
        "non_zero_memory",
        "non_zero_milli_cpu",
        "pods",
        "pods_with_affinity",
        "requested",
        "used_ports",
    )

    def __init__(
        self, node: Node | None = None, pods: Iterable[PodInfo] = (), *, name: str = ""
    ) -> None:
        self.node = node
        self.name = node.metadata.name if node is not None else name
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.requested = Resource()
        self.non_zero_milli_cpu = 0
        self.non_zero_memory = 0
        self.used_ports: dict[HostPort, int] = {}
        self.generation = 0
        self.allocatable = Resource()
        if node is not None:
            self.set_node(node)
        for p in pods:
            self.add_pod(p)

    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node.metadata.name
        status = node.status
        self.allocatable = Resource.from_list(status.allocatable or status.capacity)
        self.generation += 1

    @property
    def taints(self) -> list[Taint]:
        return self.node.spec.taints if self.node is not None else []

    @property
    def labels(self) -> dict[str, str]:
        return self.node.metadata.labels if self.node is not None else {}

    @property
    def conditions(self) -> list[NodeCondition]:
        return self.node.status.conditions if self.node is not None else []

    @property
    def unschedulable(self) -> bool:
        """``spec.unschedulable`` (a cordoned node)."""
        return self.node is not None and self.node.spec.unschedulable

    def add_pod(self, pod: PodInfo) -> None:
        self.pods.append(pod)
        if pod.has_affinity:
            self.pods_with_affinity.append(pod)
        self.requested.add(pod.request)
        self.non_zero_milli_cpu += pod.non_zero_milli_cpu
        self.non_zero_memory += pod.non_zero_memory
        for hp in pod.host_ports:
            self.used_ports[hp] = self.used_ports.get(hp, 0) + 1
        self.generation += 1

    def remove_pod(self, pod: PodInfo) -> None:
        """Remove the pod with ``pod.key``; raises KeyError when it is not on this node."""
        # From the end: the pod removed is most often one added lately (an assumed pod being
        # confirmed); keys are unique on a node, so the index is the same either way.
        key, pods = pod.key, self.pods
        i = next((j for j in range(len(pods) - 1, -1, -1) if pods[j].key == key), None)
        if i is None:
            raise KeyError(f"pod {pod.key} is not on node {self.name}")
        p = self.pods.pop(i)
        if p.has_affinity:
            self.pods_with_affinity = [q for q in self.pods_with_affinity if q.key != p.key]
        self.requested.sub(p.request)
        self.non_zero_milli_cpu -= p.non_zero_milli_cpu
        self.non_zero_memory -= p.non_zero_memory
        for hp in p.host_ports:
            n = self.used_ports[hp] - 1
            if n:
                self.used_ports[hp] = n
            else:
                del self.used_ports[hp]
        self.generation += 1

    def clone(self) -> NodeInfo:
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.requested = self.requested.copy()
        c.non_zero_milli_cpu = self.non_zero_milli_cpu
        c.non_zero_memory = self.non_zero_memory
        c.used_ports = dict(self.used_ports)
        c.generation = self.generation
        c.allocatable = self.allocatable.copy()
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


def same_for_scheduling(old: NodeInfo, new: NodeInfo) -> bool:
    """Whether ``new`` holds what every predicate and priority reads of ``old``'s row: the same
    Node object and, as a multiset, pods of the same stamps (:attr:`PodInfo.stamp`).

    Then the node's aggregates (requested, non-zero requests, ports, pod count) are equal, and
    so is everything a predicate or priority reads of a pod on a node (its spec, namespace,
    name, labels, annotations, deletionTimestamp); only the pods' order may differ (a
    confirmed pod is counted again at the end), which the node-local predicates and the
    per-row priorities do not see (they count, sum or look for any). The cache's NodeInfo
    after an assume the scheduler folded in itself holds the very same PodInfos (one identity
    comparison of the lists, in C); after a confirmation, a revision of the assumed pod with
    its stamp. A NodeInfo changed in place (``old is new``) is not judged here: the caller
    cannot tell what changed.
    """
    if old.node is not new.node:
        return False
    a, b = old.pods, new.pods
    if a == b:  # PodInfo has no __eq__: element identity
        return True
    if len(a) != len(b):
        return False
    return sorted(p.stamp for p in a) == sorted(p.stamp for p in b)
