"""Inter-pod affinity: the MatchInterPodAffinity predicate and InterPodAffinityPriority.

Kubernetes counterpart: pkg/scheduler/framework/plugins/interpodaffinity/ (plugin.go,
filtering.go, scoring.go), split the same way: :mod:`.common` (terms compiled against the pod
that defines them, counts kept per class of pods), :mod:`.filtering` (the predicate, v1.14's
predicates.go and metadata.go) and :mod:`.scoring` (the priority, v1.14's interpod_affinity.go).
``FACTORIES`` holds both names for the registry.
"""

from __future__ import annotations

from collections.abc import Callable

from podium.actors.framework.interface import PluginArgs
from podium.actors.plugins.inter_pod_affinity import filtering, scoring
from podium.actors.plugins.inter_pod_affinity.filtering import (
    ERR_REASON_AFFINITY_NOT_MATCH,
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
    InterPodAffinityMeta,
)
from podium.actors.plugins.inter_pod_affinity.scoring import (
    InterPodAffinityPriority,
    PairWeights,
    normalize_counts,
)

__all__ = [
    "ERR_REASON_AFFINITY_NOT_MATCH",
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "FACTORIES",
    "InterPodAffinity",
    "InterPodAffinityMeta",
    "InterPodAffinityPriority",
    "PairWeights",
    "normalize_counts",
]

FACTORIES: dict[str, Callable[[PluginArgs], InterPodAffinity | InterPodAffinityPriority]] = {
    **filtering.FACTORIES,
    **scoring.FACTORIES,
}
