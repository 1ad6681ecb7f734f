"""Every predicate and priority name Podium knows: canonical v1.14 names, aliases, order, defaults.

Sources: pkg/scheduler/algorithm/predicates/predicates.go (names, ``predicatesOrdering``) and
pkg/scheduler/algorithmprovider/defaults/defaults.go at v1.14; the aliases are seed 000's and
004's spellings (README.md, "Policies and configuration").
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_PREDICATES",
    "DEFAULT_PRIORITIES",
    "PREDICATES_ORDERING",
    "PREDICATE_ALIASES",
    "PRIORITIES",
    "PRIORITY_ALIASES",
    "canonical_predicate",
    "canonical_priority",
]

# --------------------------------------------------------------------------- predicates
CHECK_NODE_CONDITION = "CheckNodeCondition"
CHECK_NODE_UNSCHEDULABLE = "CheckNodeUnschedulable"
GENERAL_PREDICATES = "GeneralPredicates"
HOST_NAME = "HostName"
POD_FITS_HOST_PORTS = "PodFitsHostPorts"
MATCH_NODE_SELECTOR = "MatchNodeSelector"
POD_FITS_RESOURCES = "PodFitsResources"
NO_DISK_CONFLICT = "NoDiskConflict"
POD_TOLERATES_NODE_TAINTS = "PodToleratesNodeTaints"
POD_TOLERATES_NODE_NO_EXECUTE_TAINTS = "PodToleratesNodeNoExecuteTaints"
CHECK_NODE_LABEL_PRESENCE = "CheckNodeLabelPresence"
CHECK_SERVICE_AFFINITY = "CheckServiceAffinity"
MAX_EBS_VOLUME_COUNT = "MaxEBSVolumeCount"
MAX_GCE_PD_VOLUME_COUNT = "MaxGCEPDVolumeCount"
MAX_CSI_VOLUME_COUNT = "MaxCSIVolumeCountPred"
MAX_AZURE_DISK_VOLUME_COUNT = "MaxAzureDiskVolumeCount"
MAX_CINDER_VOLUME_COUNT = "MaxCinderVolumeCount"
CHECK_VOLUME_BINDING = "CheckVolumeBinding"
NO_VOLUME_ZONE_CONFLICT = "NoVolumeZoneConflict"
CHECK_NODE_MEMORY_PRESSURE = "CheckNodeMemoryPressure"
CHECK_NODE_PID_PRESSURE = "CheckNodePIDPressure"
CHECK_NODE_DISK_PRESSURE = "CheckNodeDiskPressure"
EVEN_PODS_SPREAD = "EvenPodsSpread"
"""PodTopologySpread's filter, adopted from later Kubernetes (docs/differences.md)."""
MATCH_INTER_POD_AFFINITY = "MatchInterPodAffinity"

PREDICATES_ORDERING: tuple[str, ...] = (
    CHECK_NODE_CONDITION,
    CHECK_NODE_UNSCHEDULABLE,
    GENERAL_PREDICATES,
    HOST_NAME,
    POD_FITS_HOST_PORTS,
    MATCH_NODE_SELECTOR,
    POD_FITS_RESOURCES,
    NO_DISK_CONFLICT,
    POD_TOLERATES_NODE_TAINTS,
    POD_TOLERATES_NODE_NO_EXECUTE_TAINTS,
    CHECK_NODE_LABEL_PRESENCE,
    CHECK_SERVICE_AFFINITY,
    MAX_EBS_VOLUME_COUNT,
    MAX_GCE_PD_VOLUME_COUNT,
    MAX_CSI_VOLUME_COUNT,
    MAX_AZURE_DISK_VOLUME_COUNT,
    MAX_CINDER_VOLUME_COUNT,
    CHECK_VOLUME_BINDING,
    NO_VOLUME_ZONE_CONFLICT,
    CHECK_NODE_MEMORY_PRESSURE,
    CHECK_NODE_PID_PRESSURE,
    CHECK_NODE_DISK_PRESSURE,
    EVEN_PODS_SPREAD,
    MATCH_INTER_POD_AFFINITY,
)
"""v1.14 ``predicatesOrdering``: the canonical static order, with EvenPodsSpread (adopted from
later Kubernetes) just before MatchInterPodAffinity, where v1.16+ ``predicatesOrdering`` put it."""

PREDICATE_ALIASES: dict[str, str] = {
    "ValidateNodeCondition": CHECK_NODE_CONDITION,
    "CheckNodeConditionPredicate": CHECK_NODE_CONDITION,
    "CheckNodeSchedulable": CHECK_NODE_UNSCHEDULABLE,
    "GeneralPredicate": GENERAL_PREDICATES,
    "HostnameMatch": HOST_NAME,
    "PodFitsHost": HOST_NAME,
    "NodePortAvailability": POD_FITS_HOST_PORTS,
    "PodFitsPorts": POD_FITS_HOST_PORTS,
    "NodeSelectorCompliance": MATCH_NODE_SELECTOR,
    "PodMatchNodeSelector": MATCH_NODE_SELECTOR,
    "ResourceSufficiency": POD_FITS_RESOURCES,
    "StorageCompatibility": NO_DISK_CONFLICT,
    "TaintTolerance": POD_TOLERATES_NODE_TAINTS,
    "NoExecuteTaintTolerance": POD_TOLERATES_NODE_NO_EXECUTE_TAINTS,
    "LabelPresenceCheck": CHECK_NODE_LABEL_PRESENCE,
    "ServiceAffinity": CHECK_SERVICE_AFFINITY,
    "checkServiceAffinity": CHECK_SERVICE_AFFINITY,
    "MaxCSIVolumeCount": MAX_CSI_VOLUME_COUNT,
    "VolumeBindingCheck": CHECK_VOLUME_BINDING,
    "VolumeNodePredicate": CHECK_VOLUME_BINDING,
    "VolumeZoneConflict": NO_VOLUME_ZONE_CONFLICT,
    "VolumeZonePredicate": NO_VOLUME_ZONE_CONFLICT,
    "MemoryPressureCheck": CHECK_NODE_MEMORY_PRESSURE,
    "CheckNodeMemoryPressurePredicate": CHECK_NODE_MEMORY_PRESSURE,
    "DiskPressureCheck": CHECK_NODE_DISK_PRESSURE,
    "CheckNodeDiskPressurePredicate": CHECK_NODE_DISK_PRESSURE,
    "PIDPressureCheck": CHECK_NODE_PID_PRESSURE,
    "InterPodAffinity": MATCH_INTER_POD_AFFINITY,
    "InterPodAffinityMatches": MATCH_INTER_POD_AFFINITY,
    "PodTopologySpread": EVEN_PODS_SPREAD,
}

MAX_PD_VOLUME_COUNT_GROUP = "MaxPDVolumeCountPredicate"
"""Seed 000's name for the volume-count limits: it expands to the four Max*VolumeCount below."""
MAX_PD_VOLUME_COUNT_MEMBERS: tuple[str, ...] = (
    MAX_EBS_VOLUME_COUNT,
    MAX_GCE_PD_VOLUME_COUNT,
    MAX_AZURE_DISK_VOLUME_COUNT,
    MAX_CINDER_VOLUME_COUNT,
)

DEFAULT_PREDICATES: tuple[str, ...] = (
    NO_VOLUME_ZONE_CONFLICT,
    MAX_EBS_VOLUME_COUNT,
    MAX_GCE_PD_VOLUME_COUNT,
    MAX_AZURE_DISK_VOLUME_COUNT,
    MAX_CSI_VOLUME_COUNT,
    MAX_CINDER_VOLUME_COUNT,
    MATCH_INTER_POD_AFFINITY,
    NO_DISK_CONFLICT,
    GENERAL_PREDICATES,
    CHECK_NODE_CONDITION,
    CHECK_NODE_UNSCHEDULABLE,
    CHECK_NODE_MEMORY_PRESSURE,
    CHECK_NODE_DISK_PRESSURE,
    CHECK_NODE_PID_PRESSURE,
    POD_TOLERATES_NODE_TAINTS,
    CHECK_VOLUME_BINDING,
)
"""v1.14 DefaultProvider predicates, with the node-condition predicates kept (docs/differences.md)."""

# Predicates that exist only with a policy argument (their entry may bear any name).
ARGUMENT_PREDICATES = {
    "labelsPresence": CHECK_NODE_LABEL_PRESENCE,
    "serviceAffinity": CHECK_SERVICE_AFFINITY,
}

# --------------------------------------------------------------------------- priorities
EQUAL_PRIORITY = "EqualPriority"
MOST_REQUESTED = "MostRequestedPriority"
SELECTOR_SPREAD = "SelectorSpreadPriority"
SERVICE_SPREADING = "ServiceSpreadingPriority"
INTER_POD_AFFINITY = "InterPodAffinityPriority"
LEAST_REQUESTED = "LeastRequestedPriority"
BALANCED_RESOURCE_ALLOCATION = "BalancedResourceAllocation"
NODE_PREFER_AVOID_PODS = "NodePreferAvoidPodsPriority"
NODE_AFFINITY = "NodeAffinityPriority"
TAINT_TOLERATION = "TaintTolerationPriority"
IMAGE_LOCALITY = "ImageLocalityPriority"
NODE_LABEL = "NodeLabelPriority"
SERVICE_ANTI_AFFINITY = "ServiceAntiAffinityPriority"
EVEN_PODS_SPREAD_PRIORITY = "EvenPodsSpreadPriority"
"""PodTopologySpread's score on the 0-10 scale, adopted from later Kubernetes (not a default)."""

PRIORITIES: tuple[str, ...] = (
    EQUAL_PRIORITY,
    MOST_REQUESTED,
    SELECTOR_SPREAD,
    SERVICE_SPREADING,
    INTER_POD_AFFINITY,
    LEAST_REQUESTED,
    BALANCED_RESOURCE_ALLOCATION,
    NODE_PREFER_AVOID_PODS,
    NODE_AFFINITY,
    TAINT_TOLERATION,
    IMAGE_LOCALITY,
    EVEN_PODS_SPREAD_PRIORITY,
)
"""Priorities that can be named without an argument."""

PRIORITY_ALIASES: dict[str, str] = {
    "ResourceOptimization": LEAST_REQUESTED,
    "NodeResourcesLeastAllocated": LEAST_REQUESTED,
    "BalancedDistribution": BALANCED_RESOURCE_ALLOCATION,
    "ServiceSpreading": SERVICE_SPREADING,
    "UniformPriority": EQUAL_PRIORITY,
    "PodTopologySpread": EVEN_PODS_SPREAD_PRIORITY,
}

# Priorities that exist only with a policy argument (their entry may bear any name).
ARGUMENT_PRIORITIES = {"labelPreference": NODE_LABEL, "serviceAntiAffinity": SERVICE_ANTI_AFFINITY}

DEFAULT_PRIORITIES: tuple[tuple[str, int], ...] = (
    (SELECTOR_SPREAD, 1),
    (INTER_POD_AFFINITY, 1),
    (LEAST_REQUESTED, 1),
    (BALANCED_RESOURCE_ALLOCATION, 1),
    (NODE_PREFER_AVOID_PODS, 10000),
    (NODE_AFFINITY, 1),
    (TAINT_TOLERATION, 1),
    (IMAGE_LOCALITY, 1),
)
"""v1.14 DefaultProvider priorities and weights."""


def canonical_predicate(name: str) -> str | None:
    """The canonical v1.14 name for a predicate name or alias, or ``None`` if unknown."""
    if name in PREDICATES_ORDERING:
        return name
    return PREDICATE_ALIASES.get(name)


def canonical_priority(name: str) -> str | None:
    """The canonical v1.14 name for a priority name or alias, or ``None`` if unknown."""
    if name in PRIORITIES:
        return name
    return PRIORITY_ALIASES.get(name)
