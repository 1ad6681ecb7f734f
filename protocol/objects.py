"""Kubernetes-shaped objects: the v1 field names and JSON/YAML forms Podium reads.

Only the fields a predicate, priority or the store reads are declared; every other field
(``status.podIP``, ``spec.containers[].env``, ...) is ignored on input, so
kubectl's files load as they are (docs/protocol.md, "Objects").
Wrong JSON types and bad quantities are rejected with the path of the field.

Objects are frozen: the scheduler shares them between its views without copying.
Quantities are parsed once, at decode time, into :class:`~podium.protocol.quantity.Quantity`.

The domain rules every part of Podium reads the same way live here, once: where a namespaced
object without a namespace lives (:func:`namespace_or_default`, :func:`scoped_namespace`), how a
pod is keyed (:func:`pod_key`), and whether a pod counts against its node
(:func:`holds_resources`).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal, TypeAlias

import msgspec

from podium.protocol.quantity import Quantity, QuantityError

__all__ = [
    "DEFAULT_NAMESPACE",
    "KINDS",
    "NAMESPACED_KINDS",
    "POD_GROUP_API_VERSIONS",
    "TERMINAL_PHASES",
    "AWSElasticBlockStoreVolumeSource",
    "Affinity",
    "AzureDiskVolumeSource",
    "BasicSchedulingPolicy",
    "CSIPersistentVolumeSource",
    "CinderVolumeSource",
    "Container",
    "ContainerImage",
    "ContainerPort",
    "GCEPersistentDiskVolumeSource",
    "GangSchedulingPolicy",
    "ISCSIVolumeSource",
    "IntOrPercent",
    "KubeObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Node",
    "NodeAffinity",
    "NodeCondition",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "OwnerReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodCondition",
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "PodGroup",
    "PodGroupCondition",
    "PodGroupSchedulingPolicy",
    "PodGroupSpec",
    "PodGroupStatus",
    "PodSchedulingGate",
    "PodSchedulingGroup",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "RBDVolumeSource",
    "ReplicaSet",
    "ReplicationController",
    "ResourceRequirements",
    "Service",
    "StatefulSet",
    "StorageClass",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "Volume",
    "WeightedPodAffinityTerm",
    "dec_hook",
    "enc_hook",
    "encode_msgpack",
    "holds_resources",
    "is_terminal",
    "namespace_or_default",
    "namespaced_key",
    "pod_key",
    "scoped_namespace",
]

ResourceList: TypeAlias = dict[str, Quantity]
# Kubernetes' Go types bound every integer (an int32 priority, an int64 image size): a value
# beyond them is refused at decode, as the API server refuses it, and so never reaches the
# msgpack encoding of the store and the wire (64-bit at most).
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


@functools.lru_cache(maxsize=4096)
def _quantity(text: str) -> Quantity:
    """Quantities are values, never changed after parsing: one instance per text will do."""
    return Quantity(text)


def dec_hook(type_: type, obj: Any) -> Any:
    """msgspec decode hook: quantities from strings or JSON numbers."""
    if type_ is Quantity:
        if isinstance(obj, bool) or not isinstance(obj, (str, int, float)):
            raise TypeError(f"Expected a quantity (string or number), got `{type(obj).__name__}`")
        text = obj if isinstance(obj, str) else repr(obj) if isinstance(obj, float) else str(obj)
        try:
            return _quantity(text)
        except QuantityError as exc:
            raise ValueError(str(exc)) from None
    raise NotImplementedError(f"cannot decode {type_!r}")


def enc_hook(obj: Any) -> Any:
    """msgspec encode hook: quantities back to the text they were written as."""
    if isinstance(obj, Quantity):
        return obj.text
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


class _K8s(msgspec.Struct, rename="camel", frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Base of every Kubernetes-shaped struct: camelCase wire names, unknown fields ignored.

    Not tracked by the garbage collector (``gc=False``): an object is a tree of values that
    never refers back to itself, so it can be in no reference cycle, and a daemon holding
    150 000 pods otherwise walked every one of their structs in each full collection (~0.1 s
    apiece, several a run, issue 17's second round).
    """


# --------------------------------------------------------------------------- metadata


class OwnerReference(_K8s, frozen=True, kw_only=True):
    kind: str
    name: str
    api_version: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(_K8s, frozen=True, kw_only=True):
    """``name`` may be empty with a ``generateName``: the store fills it. Kubernetes' rules on
    names, namespaces, labels and annotations (protocol/validation.py) hold at the store's put,
    as in the API server: not at decode, so the scheduler's views take any object."""

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []

    def __post_init__(self) -> None:
        if not self.name and not self.generate_name:
            # objectmeta.go@v1.14 ValidateObjectMetaAccessor; the path below the struct is
            # joined to msgspec's by protocol.errors.split_validation_message.
            raise ValueError("name or generateName is required - at `.name`")


# --------------------------------------------------------------------------- selectors


class LabelSelectorRequirement(_K8s, frozen=True, kw_only=True):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = []


class LabelSelector(_K8s, frozen=True, kw_only=True):
    """A set-based label selector. ``None`` (absent) and ``{}`` differ: see protocol.labels."""

    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class NodeSelectorRequirement(_K8s, frozen=True, kw_only=True):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = []


class NodeSelectorTerm(_K8s, frozen=True, kw_only=True):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_K8s, frozen=True, kw_only=True):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_K8s, frozen=True, kw_only=True):
    weight: Int32
    preference: NodeSelectorTerm


class NodeAffinity(_K8s, frozen=True, kw_only=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(_K8s, frozen=True, kw_only=True):
    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []


class WeightedPodAffinityTerm(_K8s, frozen=True, kw_only=True):
    weight: Int32
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_K8s, frozen=True, kw_only=True):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class PodAntiAffinity(_K8s, frozen=True, kw_only=True):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(_K8s, frozen=True, kw_only=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


class Taint(_K8s, frozen=True, kw_only=True):
    key: str
    value: str = ""
    effect: str
    time_added: str | None = None


class Toleration(_K8s, frozen=True, kw_only=True):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


class TopologySpreadConstraint(_K8s, frozen=True, kw_only=True):
    max_skew: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None


# --------------------------------------------------------------------------- volumes


class GCEPersistentDiskVolumeSource(_K8s, frozen=True, kw_only=True):
    pd_name: str
    fs_type: str = ""
    partition: Int32 = 0
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(_K8s, frozen=True, kw_only=True):
    volume_id: str = msgspec.field(name="volumeID")
    fs_type: str = ""
    partition: Int32 = 0
    read_only: bool = False


class RBDVolumeSource(_K8s, frozen=True, kw_only=True):
    monitors: list[str] = []
    image: str = ""
    pool: str = "rbd"
    read_only: bool = False


class ISCSIVolumeSource(_K8s, frozen=True, kw_only=True):
    target_portal: str = ""
    iqn: str = ""
    lun: Int32 = 0
    read_only: bool = False


class AzureDiskVolumeSource(_K8s, frozen=True, kw_only=True):
    disk_name: str = ""
    disk_uri: str = msgspec.field(default="", name="diskURI")


class CinderVolumeSource(_K8s, frozen=True, kw_only=True):
    volume_id: str = msgspec.field(name="volumeID")


class CSIPersistentVolumeSource(_K8s, frozen=True, kw_only=True):
    driver: str
    volume_handle: str = ""


class PersistentVolumeClaimVolumeSource(_K8s, frozen=True, kw_only=True):
    claim_name: str
    read_only: bool = False


class Volume(_K8s, frozen=True, kw_only=True):
    name: str = ""
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    cinder: CinderVolumeSource | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None


# --------------------------------------------------------------------------- pods


class ContainerPort(_K8s, frozen=True, kw_only=True):
    container_port: Int32 = 0
    host_port: Int32 = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")


class ResourceRequirements(_K8s, frozen=True, kw_only=True):
    requests: ResourceList = {}
    limits: ResourceList = {}


class Container(_K8s, frozen=True, kw_only=True):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = ResourceRequirements()
    ports: list[ContainerPort] = []


class PodSchedulingGate(_K8s, frozen=True, kw_only=True):
    """A scheduling gate (Kubernetes 1.27+, not v1.14): the pod is not scheduled while any
    remains."""

    name: str


class PodSchedulingGroup(_K8s, frozen=True, kw_only=True):
    """``spec.schedulingGroup`` (Kubernetes v1.35+, GenericWorkload): the PodGroup of the pod's
    own namespace it belongs to (protocol/gangs.py reads every form of membership)."""

    pod_group_name: str = ""


class PodSpec(_K8s, frozen=True, kw_only=True):
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: ResourceList = {}
    node_name: str = ""
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    volumes: list[Volume] = []
    priority: Int32 | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    scheduler_name: str = "default-scheduler"
    host_network: bool = False
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    scheduling_gates: list[PodSchedulingGate] = []
    scheduling_group: PodSchedulingGroup | None = None


class PodCondition(_K8s, frozen=True, kw_only=True):
    """A pod condition; Podium writes ``PodScheduled`` (True when bound, False with reason
    ``Unschedulable`` and the FitError message while pending)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class PodStatus(_K8s, frozen=True, kw_only=True):
    phase: str = ""
    nominated_node_name: str = ""
    start_time: str | None = None
    conditions: list[PodCondition] = []


class Pod(_K8s, tag="Pod", tag_field="kind", frozen=True, kw_only=True):
    api_version: str = "v1"
    metadata: ObjectMeta
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()


# --------------------------------------------------------------------------- nodes


class NodeCondition(_K8s, frozen=True, kw_only=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class ContainerImage(_K8s, frozen=True, kw_only=True):
    names: list[str] = []
    size_bytes: NonNegativeInt = 0


class NodeSpec(_K8s, frozen=True, kw_only=True):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeStatus(_K8s, frozen=True, kw_only=True):
    capacity: ResourceList = {}
    allocatable: ResourceList = {}
    conditions: list[NodeCondition] = []
    images: list[ContainerImage] = []


class Node(_K8s, tag="Node", tag_field="kind", frozen=True, kw_only=True):
    api_version: str = "v1"
    metadata: ObjectMeta
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


# --------------------------------------------------------------------------- storage


class ObjectReference(_K8s, frozen=True, kw_only=True):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""


class VolumeNodeAffinity(_K8s, frozen=True, kw_only=True):
    required: NodeSelector | None = None


class PersistentVolumeSpec(_K8s, frozen=True, kw_only=True):
    capacity: ResourceList = {}
    access_modes: list[str] = []
    storage_class_name: str = ""
    claim_ref: ObjectReference | None = None
    node_affinity: VolumeNodeAffinity | None = None
    volume_mode: str = ""
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    cinder: CinderVolumeSource | None = None
    csi: CSIPersistentVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None


class PersistentVolumeStatus(_K8s, frozen=True, kw_only=True):
    phase: str = ""


class PersistentVolume(_K8s, tag="PersistentVolume", tag_field="kind", frozen=True, kw_only=True):
    api_version: str = "v1"
    metadata: ObjectMeta
    spec: PersistentVolumeSpec = PersistentVolumeSpec()
    status: PersistentVolumeStatus = PersistentVolumeStatus()


class PersistentVolumeClaimSpec(_K8s, frozen=True, kw_only=True):
    volume_name: str = ""
    storage_class_name: str | None = None
    access_modes: list[str] = []
    resources: ResourceRequirements = ResourceRequirements()
    selector: LabelSelector | None = None
    volume_mode: str = ""


class PersistentVolumeClaimStatus(_K8s, frozen=True, kw_only=True):
    phase: str = ""


class PersistentVolumeClaim(
    _K8s, tag="PersistentVolumeClaim", tag_field="kind", frozen=True, kw_only=True
):
    api_version: str = "v1"
    metadata: ObjectMeta
    spec: PersistentVolumeClaimSpec = PersistentVolumeClaimSpec()
    status: PersistentVolumeClaimStatus = PersistentVolumeClaimStatus()


class TopologySelectorLabelRequirement(_K8s, frozen=True, kw_only=True):
    key: str
    values: list[str] = []


class TopologySelectorTerm(_K8s, frozen=True, kw_only=True):
    match_label_expressions: list[TopologySelectorLabelRequirement] = []


class StorageClass(_K8s, tag="StorageClass", tag_field="kind", frozen=True, kw_only=True):
    api_version: str = "storage.k8s.io/v1"
    metadata: ObjectMeta
    provisioner: str = ""
    volume_binding_mode: Literal["Immediate", "WaitForFirstConsumer"] = "Immediate"
    allowed_topologies: list[TopologySelectorTerm] = []


# --------------------------------------------------------------------------- selector owners


class ServiceSpec(_K8s, frozen=True, kw_only=True):
    selector: dict[str, str] = {}


class Service(_K8s, tag="Service", tag_field="kind", frozen=True, kw_only=True):
    api_version: str = "v1"
    metadata: ObjectMeta
    spec: ServiceSpec = ServiceSpec()


class ReplicationControllerSpec(_K8s, frozen=True, kw_only=True):
    selector: dict[str, str] = {}


class ReplicationController(
    _K8s, tag="ReplicationController", tag_field="kind", frozen=True, kw_only=True
):
    api_version: str = "v1"
    metadata: ObjectMeta
    spec: ReplicationControllerSpec = ReplicationControllerSpec()


class SelectorSpec(_K8s, frozen=True, kw_only=True):
    selector: LabelSelector | None = None


class ReplicaSet(_K8s, tag="ReplicaSet", tag_field="kind", frozen=True, kw_only=True):
    api_version: str = "apps/v1"
    metadata: ObjectMeta
    spec: SelectorSpec = SelectorSpec()


class StatefulSet(_K8s, tag="StatefulSet", tag_field="kind", frozen=True, kw_only=True):
    api_version: str = "apps/v1"
    metadata: ObjectMeta
    spec: SelectorSpec = SelectorSpec()


class PriorityClass(_K8s, tag="PriorityClass", tag_field="kind", frozen=True, kw_only=True):
    api_version: str = "scheduling.k8s.io/v1"
    metadata: ObjectMeta
    value: Int32 = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


# --------------------------------------------------------------------------- disruption budgets

IntOrPercent: TypeAlias = Int32 | str
"""``intstr.IntOrString`` as a PodDisruptionBudget uses it: a count, or a percent like ``"50%"``."""


def _check_int_or_percent(field: str, value: IntOrPercent | None) -> None:
    """``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``
    (pkg/apis/policy/validation/validation.go@v1.14.0), with Kubernetes' messages."""
    if value is None:
        return
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{field}: must be greater than or equal to 0")
        return
    digits = value[:-1]
    if not value.endswith("%") or not digits.isdigit() or not digits.isascii():
        raise ValueError(
            f"{field}: a valid percent string must be a numeric string followed by an ending "
            "'%' (e.g. '1%', or '93%')"
        )
    # (len() first: int() refuses more than 4300 digits with a ValueError of its own.)
    if len(digits.lstrip("0")) > 3 or int(digits) > 100:
        raise ValueError(f"{field}: must not be greater than 100%")


class PodDisruptionBudgetSpec(_K8s, frozen=True, kw_only=True):
    """policy/v1 ``PodDisruptionBudgetSpec``: at most one of minAvailable and maxUnavailable."""

    min_available: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None
    selector: LabelSelector | None = None

    def __post_init__(self) -> None:
        # validation.go@v1.14.0 ValidatePodDisruptionBudgetSpec.
        if self.min_available is not None and self.max_unavailable is not None:
            raise ValueError("minAvailable and maxUnavailable cannot be both set")
        _check_int_or_percent("minAvailable", self.min_available)
        _check_int_or_percent("maxUnavailable", self.max_unavailable)


class PodDisruptionBudgetStatus(_K8s, frozen=True, kw_only=True):
    """policy/v1 ``PodDisruptionBudgetStatus`` (v1beta1 names the Go field
    ``PodDisruptionsAllowed``; both serialise it as ``disruptionsAllowed``)."""

    disruptions_allowed: Int32 = 0
    current_healthy: Int32 = 0
    desired_healthy: Int32 = 0
    expected_pods: Int32 = 0
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(
    _K8s, tag="PodDisruptionBudget", tag_field="kind", frozen=True, kw_only=True
):
    """A PodDisruptionBudget. ``status`` is ``None`` when the object came without one (Podium
    has no disruption controller): preemption then derives the allowed disruptions itself
    (actors/framework/preemption.py ``disruptions_allowed``)."""

    api_version: str = "policy/v1"
    metadata: ObjectMeta
    spec: PodDisruptionBudgetSpec = PodDisruptionBudgetSpec()
    status: PodDisruptionBudgetStatus | None = None


# --------------------------------------------------------------------------- pod groups

POD_GROUP_API_VERSIONS = (
    "scheduling.k8s.io/v1alpha2",
    "scheduling.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1beta1",
    "scheduling.x-k8s.io/v1alpha1",
    "scheduling.sigs.k8s.io/v1alpha1",
    "scheduling.volcano.sh/v1beta1",
)
"""The PodGroup forms Podium reads: Kubernetes' own (``spec.schedulingPolicy``; v1alpha2 as of
v1.36, v1alpha3 and v1beta1 after it, one shape), scheduler-plugins' Coscheduling
(``spec.minMember``; ``scheduling.sigs.k8s.io`` is its name before v0.24) and Volcano's
(``spec.minMember``)."""


class GangSchedulingPolicy(_K8s, frozen=True, kw_only=True):
    """scheduling.k8s.io ``GangSchedulingPolicy``: all-or-nothing for at least ``minCount``."""

    min_count: Int32 = 0


class BasicSchedulingPolicy(_K8s, frozen=True, kw_only=True):
    """scheduling.k8s.io ``BasicSchedulingPolicy``: each pod scheduled on its own."""


class PodGroupSchedulingPolicy(_K8s, frozen=True, kw_only=True):
    """Exactly one of ``basic`` and ``gang``."""

    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class PodGroupSpec(_K8s, frozen=True, kw_only=True):
    """The union of the three forms' specs: ``schedulingPolicy`` (Kubernetes), ``minMember``,
    ``scheduleTimeoutSeconds`` and ``minResources`` (scheduler-plugins), ``minMember``, ``queue``
    and ``minResources`` (Volcano); ``priorityClassName`` in all of them."""

    scheduling_policy: PodGroupSchedulingPolicy | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    min_member: Int32 | None = None
    schedule_timeout_seconds: Int32 | None = None
    min_resources: ResourceList = {}
    queue: str = ""


class PodGroupCondition(_K8s, frozen=True, kw_only=True):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class PodGroupStatus(_K8s, frozen=True, kw_only=True):
    """What a dump's PodGroup says of itself (Podium reads it back unchanged; it writes no
    PodGroup status)."""

    phase: str = ""
    conditions: list[PodGroupCondition] = []
    scheduled: Int32 = 0
    running: Int32 = 0
    succeeded: Int32 = 0
    failed: Int32 = 0


def _group_error(path: str, message: str) -> ValueError:
    # The path below the object is joined to msgspec's by protocol.errors.split_validation_message.
    return ValueError(f"{path}: {message} - at `.{path}`")


class PodGroup(_K8s, tag="PodGroup", tag_field="kind", frozen=True, kw_only=True):
    """A group of pods scheduled together (protocol/gangs.py: who belongs, and how many must fit
    at once). One struct reads every form of :data:`POD_GROUP_API_VERSIONS`; a form's rule on
    its size holds at decode, with the field it names."""

    api_version: str = "scheduling.k8s.io/v1alpha2"
    metadata: ObjectMeta
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus | None = None

    def __post_init__(self) -> None:
        if self.api_version not in POD_GROUP_API_VERSIONS:
            supported = ", ".join(f'"{v}"' for v in POD_GROUP_API_VERSIONS)
            raise _group_error(
                "apiVersion",
                f'Unsupported value: "{self.api_version}": supported values: {supported}',
            )
        spec = self.spec
        if self.api_version.startswith("scheduling.k8s.io/"):
            policy = spec.scheduling_policy
            if policy is None or (policy.basic is None) == (policy.gang is None):
                raise _group_error(
                    "spec.schedulingPolicy",
                    "Invalid value: exactly one of basic or gang must be set",
                )
            if policy.gang is not None and policy.gang.min_count < 1:
                raise _group_error(
                    "spec.schedulingPolicy.gang.minCount",
                    f"Invalid value: {policy.gang.min_count}: must be greater than zero",
                )
            return
        if spec.min_member is None:
            raise _group_error("spec.minMember", "Required value")
        if spec.min_member < 1:
            raise _group_error(
                "spec.minMember", f"Invalid value: {spec.min_member}: must be greater than zero"
            )
        if spec.schedule_timeout_seconds is not None and spec.schedule_timeout_seconds < 1:
            raise _group_error(
                "spec.scheduleTimeoutSeconds",
                f"Invalid value: {spec.schedule_timeout_seconds}: must be greater than zero",
            )


KubeObject: TypeAlias = (
    Node
    | Pod
    | PersistentVolume
    | PersistentVolumeClaim
    | StorageClass
    | Service
    | ReplicationController
    | ReplicaSet
    | StatefulSet
    | PriorityClass
    | PodDisruptionBudget
    | PodGroup
)

KINDS: dict[str, type[KubeObject]] = {
    cls.__name__: cls
    for cls in (
        Node,
        Pod,
        PersistentVolume,
        PersistentVolumeClaim,
        StorageClass,
        Service,
        ReplicationController,
        ReplicaSet,
        StatefulSet,
        PriorityClass,
        PodDisruptionBudget,
        PodGroup,
    )
}
NAMESPACED_KINDS = frozenset(
    {
        "Pod",
        "PersistentVolumeClaim",
        "Service",
        "ReplicationController",
        "ReplicaSet",
        "StatefulSet",
        "PodDisruptionBudget",
        "PodGroup",
    }
)


# --------------------------------------------------------------------------- domain rules

DEFAULT_NAMESPACE = "default"
"""metav1.NamespaceDefault: where a namespaced object that names no namespace lives."""

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
"""The pod phases a pod never leaves (v1.PodSucceeded, v1.PodFailed)."""


def namespace_or_default(namespace: str | None) -> str:
    """The namespace of a namespaced object: ``namespace``, or ``default`` when it is empty."""
    return namespace or DEFAULT_NAMESPACE


def scoped_namespace(kind: str, namespace: str | None) -> str:
    """The namespace an object of ``kind`` is stored under: defaulted for namespaced kinds,
    ``""`` for cluster-scoped ones (whatever the object says)."""
    return namespace_or_default(namespace) if kind in NAMESPACED_KINDS else ""


def namespaced_key(namespace: str | None, name: str) -> str:
    """``namespace/name`` of a namespaced object, the namespace defaulted."""
    return f"{namespace_or_default(namespace)}/{name}"


def pod_key(pod: Pod) -> str:
    """``namespace/name`` of a pod (the namespace defaulted): how every view keys a pod."""
    return namespaced_key(pod.metadata.namespace, pod.metadata.name)


def is_terminal(pod: Pod) -> bool:
    """Whether the pod has finished: phase Succeeded or Failed (terminating is not enough)."""
    return pod.status.phase in TERMINAL_PHASES


def holds_resources(pod: Pod) -> bool:
    """Whether a pod counts against its node (and may be scheduled): not finished and not
    terminating. Pods in phase Succeeded/Failed or with a deletionTimestamp hold no resources
    and are not scheduled."""
    return pod.status.phase not in TERMINAL_PHASES and pod.metadata.deletion_timestamp is None


_msgpack = msgspec.msgpack.Encoder(enc_hook=enc_hook)


def encode_msgpack(obj: KubeObject) -> bytes:
    """``obj`` in msgpack, tagged by kind, quantities as their text: the store's encoding
    (store/schema.py ``encode_object``), and what ``podium.maxObjectBytes`` measures."""
    return _msgpack.encode(obj)
