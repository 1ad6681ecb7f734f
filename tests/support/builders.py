"""Fluent builders for test objects, after Kubernetes' ``st.MakePod()`` / ``st.MakeNode()``.

    pod = make_pod("p").ns("default").req(cpu="100m", memory="1Gi").obj()
    node = make_node("n1").capacity(cpu="4", memory="32Gi", pods=110).label("zone", "a").obj()

Objects are built as plain dicts and decoded the way files are, so quantities parse exactly as
they would from YAML.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.protocol import objects as o


def decode(kind: type[Any], data: dict[str, Any]) -> Any:
    return msgspec.convert(data, kind, dec_hook=o.dec_hook)


class PodBuilder:
    def __init__(self, name: str) -> None:
        self.d: dict[str, Any] = {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": []},
        }

    def _spec(self) -> dict[str, Any]:
        return self.d["spec"]

    def ns(self, namespace: str) -> PodBuilder:
        self.d["metadata"]["namespace"] = namespace
        return self

    def uid(self, uid: str) -> PodBuilder:
        self.d["metadata"]["uid"] = uid
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self.d["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> PodBuilder:
        self.d["metadata"].setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> PodBuilder:
        self.d["metadata"].setdefault("annotations", {})[key] = value
        return self

    def owner(self, kind: str, name: str, controller: bool = True) -> PodBuilder:
        self.d["metadata"].setdefault("ownerReferences", []).append(
            {"kind": kind, "name": name, "controller": controller, "apiVersion": "v1"}
        )
        return self

    def container(
        self,
        image: str = "",
        requests: dict[str, Any] | None = None,
        limits: dict[str, Any] | None = None,
        ports: list[dict[str, Any]] | None = None,
    ) -> PodBuilder:
        c: dict[str, Any] = {"name": f"c{len(self._spec()['containers'])}", "image": image}
        res: dict[str, Any] = {}
        if requests:
            res["requests"] = requests
        if limits:
            res["limits"] = limits
        if res:
            c["resources"] = res
        if ports:
            c["ports"] = ports
        self._spec()["containers"].append(c)
        return self

    def req(self, **requests: Any) -> PodBuilder:
        """One container requesting ``requests`` (use ``ephemeral_storage`` for ephemeral-storage)."""
        return self.container(requests={k.replace("_", "-"): v for k, v in requests.items()})

    def req_map(self, requests: dict[str, Any]) -> PodBuilder:
        return self.container(requests=requests)

    def init_req(self, requests: dict[str, Any]) -> PodBuilder:
        self._spec().setdefault("initContainers", []).append(
            {
                "name": f"i{len(self._spec().get('initContainers', []))}",
                "resources": {"requests": requests},
            }
        )
        return self

    def overhead(self, overhead: dict[str, Any]) -> PodBuilder:
        self._spec()["overhead"] = overhead
        return self

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "") -> PodBuilder:
        p: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            p["hostIP"] = host_ip
        return self.container(ports=[p])

    def node(self, name: str) -> PodBuilder:
        self._spec()["nodeName"] = name
        return self

    def node_selector(self, selector: dict[str, str]) -> PodBuilder:
        self._spec()["nodeSelector"] = selector
        return self

    def affinity(self, affinity: dict[str, Any]) -> PodBuilder:
        self._spec()["affinity"] = affinity
        return self

    def toleration(
        self, key: str = "", operator: str = "", value: str = "", effect: str = ""
    ) -> PodBuilder:
        t = {
            k: v
            for k, v in {"key": key, "operator": operator, "value": value, "effect": effect}.items()
            if v
        }
        self._spec().setdefault("tolerations", []).append(t)
        return self

    def volume(self, volume: dict[str, Any]) -> PodBuilder:
        self._spec().setdefault("volumes", []).append(volume)
        return self

    def pvc(self, claim: str) -> PodBuilder:
        return self.volume({"name": claim, "persistentVolumeClaim": {"claimName": claim}})

    def priority(self, value: int) -> PodBuilder:
        self._spec()["priority"] = value
        return self

    def spec(self, **fields: Any) -> PodBuilder:
        self._spec().update(fields)
        return self

    def phase(self, phase: str) -> PodBuilder:
        self.d.setdefault("status", {})["phase"] = phase
        return self

    def start_time(self, timestamp: str) -> PodBuilder:
        """``status.startTime`` (RFC 3339, e.g. ``2019-01-01T01:01:01Z``)."""
        self.d.setdefault("status", {})["startTime"] = timestamp
        return self

    def nominated(self, node: str) -> PodBuilder:
        """``status.nominatedNodeName``."""
        self.d.setdefault("status", {})["nominatedNodeName"] = node
        return self

    def condition(
        self, type_: str, status: str, reason: str = "", message: str = "", since: str = ""
    ) -> PodBuilder:
        """A ``status.conditions`` entry, as ``kubectl get -o yaml`` prints it."""
        cond: dict[str, Any] = {"type": type_, "status": status}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        if since:
            cond["lastTransitionTime"] = since
        self.d.setdefault("status", {}).setdefault("conditions", []).append(cond)
        return self

    def terminating(self, timestamp: str = "2019-01-01T00:00:00Z") -> PodBuilder:
        """``metadata.deletionTimestamp``: the pod is being deleted."""
        self.d["metadata"]["deletionTimestamp"] = timestamp
        return self

    def group(self, name: str, form: str = "kubernetes") -> PodBuilder:
        """Join pod group ``name`` in one of protocol/gangs.py's forms: ``kubernetes``
        (``spec.schedulingGroup.podGroupName``), ``coscheduling`` (scheduler-plugins' label)
        or ``volcano`` (Volcano's annotation)."""
        match form:
            case "kubernetes":
                self._spec()["schedulingGroup"] = {"podGroupName": name}
            case "coscheduling":
                self.label("scheduling.x-k8s.io/pod-group", name)
            case "volcano":
                self.annotation("scheduling.k8s.io/group-name", name)
            case _:
                raise ValueError(f"unknown pod group form {form!r}")
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.d)

    def obj(self) -> o.Pod:
        return decode(o.Pod, self.d)

    def info(self) -> PodInfo:
        return PodInfo(self.obj())


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self.d: dict[str, Any] = {
            "kind": "Node",
            "metadata": {"name": name},
            "spec": {},
            "status": {},
        }

    def label(self, key: str, value: str) -> NodeBuilder:
        self.d["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> NodeBuilder:
        self.d["metadata"].setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> NodeBuilder:
        self.d["metadata"].setdefault("annotations", {})[key] = value
        return self

    def capacity(self, **resources: Any) -> NodeBuilder:
        self.d["status"]["capacity"] = {k.replace("_", "-"): v for k, v in resources.items()}
        return self

    def capacity_map(self, resources: dict[str, Any]) -> NodeBuilder:
        self.d["status"]["capacity"] = dict(resources)
        return self

    def allocatable(self, resources: dict[str, Any]) -> NodeBuilder:
        self.d["status"]["allocatable"] = dict(resources)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        self.d["spec"].setdefault("taints", []).append(
            {"key": key, "value": value, "effect": effect}
        )
        return self

    def unschedulable(self, value: bool = True) -> NodeBuilder:
        self.d["spec"]["unschedulable"] = value
        return self

    def condition(self, type_: str, status: str) -> NodeBuilder:
        self.d["status"].setdefault("conditions", []).append({"type": type_, "status": status})
        return self

    def image(self, names: list[str], size: int) -> NodeBuilder:
        self.d["status"].setdefault("images", []).append({"names": names, "sizeBytes": size})
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.d)

    def obj(self) -> o.Node:
        return decode(o.Node, self.d)

    def info(self, *pods: o.Pod | PodInfo) -> NodeInfo:
        return NodeInfo(self.obj(), [p if isinstance(p, PodInfo) else PodInfo(p) for p in pods])


class PdbBuilder:
    """A PodDisruptionBudget: ``make_pdb("web").min_available(2).match_labels(app="web")``."""

    def __init__(self, name: str) -> None:
        self.d: dict[str, Any] = {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {},
        }

    def ns(self, namespace: str) -> PdbBuilder:
        self.d["metadata"]["namespace"] = namespace
        return self

    def min_available(self, value: int | str) -> PdbBuilder:
        self.d["spec"]["minAvailable"] = value
        return self

    def max_unavailable(self, value: int | str) -> PdbBuilder:
        self.d["spec"]["maxUnavailable"] = value
        return self

    def match_labels(self, **labels: str) -> PdbBuilder:
        self.d["spec"].setdefault("selector", {}).setdefault("matchLabels", {}).update(labels)
        return self

    def selector(self, selector: dict[str, Any] | None) -> PdbBuilder:
        self.d["spec"]["selector"] = selector
        return self

    def allowed(self, disruptions_allowed: int) -> PdbBuilder:
        """A status as the disruption controller would write it."""
        self.d["status"] = {"disruptionsAllowed": disruptions_allowed}
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.d)

    def obj(self) -> o.PodDisruptionBudget:
        return decode(o.PodDisruptionBudget, self.d)


class PodGroupBuilder:
    """A PodGroup in one of its three forms:
    ``make_pod_group("train").ns("ml").gang(4)`` (Kubernetes, scheduling.k8s.io),
    ``.basic()``, or ``.min_member(4, "scheduling.x-k8s.io/v1alpha1")`` (scheduler-plugins;
    ``"scheduling.volcano.sh/v1beta1"`` for Volcano's)."""

    def __init__(self, name: str) -> None:
        self.d: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"basic": {}}},
        }

    def ns(self, namespace: str) -> PodGroupBuilder:
        self.d["metadata"]["namespace"] = namespace
        return self

    def gang(self, min_count: int) -> PodGroupBuilder:
        self.d["apiVersion"] = "scheduling.k8s.io/v1alpha2"
        self.d["spec"] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
        return self

    def basic(self) -> PodGroupBuilder:
        self.d["apiVersion"] = "scheduling.k8s.io/v1alpha2"
        self.d["spec"] = {"schedulingPolicy": {"basic": {}}}
        return self

    def min_member(
        self, count: int, api_version: str = "scheduling.x-k8s.io/v1alpha1"
    ) -> PodGroupBuilder:
        self.d["apiVersion"] = api_version
        self.d["spec"] = {"minMember": count}
        return self

    def api_version(self, api_version: str) -> PodGroupBuilder:
        self.d["apiVersion"] = api_version
        return self

    def spec(self, **fields: Any) -> PodGroupBuilder:
        self.d["spec"].update(fields)
        return self

    def status(self, **fields: Any) -> PodGroupBuilder:
        """A status as the group's own controller would write it (Podium writes none)."""
        self.d["status"] = fields
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.d)

    def obj(self) -> o.PodGroup:
        return decode(o.PodGroup, self.d)


def make_pod(name: str = "pod") -> PodBuilder:
    return PodBuilder(name)


def make_pdb(name: str = "pdb") -> PdbBuilder:
    return PdbBuilder(name)


def make_pod_group(name: str = "group") -> PodGroupBuilder:
    return PodGroupBuilder(name)


def make_node(name: str = "node") -> NodeBuilder:
    return NodeBuilder(name)


def make_storage_class(
    name: str,
    *,
    provisioner: str = "kubernetes.io/no-provisioner",
    mode: str = "WaitForFirstConsumer",
) -> o.StorageClass:
    """A StorageClass: by default local volumes bound when their first pod is placed."""
    raw = {
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    made: o.StorageClass = decode(o.StorageClass, raw)
    return made


def make_volume(
    name: str, storage_class: str, *, size: str = "10Gi", node: str | None = None
) -> o.PersistentVolume:
    """A ReadWriteOnce PersistentVolume of ``storage_class``; with ``node``, usable only there
    (required node affinity on its hostname label)."""
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
    }
    if node is not None:
        term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}}
    raw = {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}
    made: o.PersistentVolume = decode(o.PersistentVolume, raw)
    return made


def make_claim(
    name: str, storage_class: str, *, namespace: str = "default", size: str = "1Gi"
) -> o.PersistentVolumeClaim:
    """An unbound ReadWriteOnce PersistentVolumeClaim of ``storage_class``."""
    raw = {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}},
        },
    }
    made: o.PersistentVolumeClaim = decode(o.PersistentVolumeClaim, raw)
    return made
