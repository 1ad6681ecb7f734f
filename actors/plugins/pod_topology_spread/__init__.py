"""EvenPodsSpread and EvenPodsSpreadPriority: Kubernetes' PodTopologySpread, on the 0-10 scale.

Adopted from later Kubernetes on purpose (docs/differences.md, "PodTopologySpread").
Kubernetes sources (release-1.19/1.20, the framework plugin):

- pkg/scheduler/framework/plugins/podtopologyspread/filtering.go: ``calPreFilterState``,
  ``Filter``, ``ErrReasonConstraintsNotMatch``, ``ErrReasonNodeLabelNotMatch``;
- .../podtopologyspread/scoring.go: ``initPreScoreState``, ``PreScore``, ``Score``,
  ``NormalizeScore``, ``topologyNormalizingWeight``, ``scoreForCount``;
- .../podtopologyspread/common.go: ``filterTopologySpreadConstraints``,
  ``nodeLabelsMatchSpreadConstraints``, ``countPodsMatchSelector``;
- the legacy pkg/scheduler/algorithm/priorities/even_pods_spread.go@v1.16 (MaxPriority 10),
  read for the 0-10 scale; its formula is *not* the one followed (see "Score").

Names: ``EvenPodsSpread`` (predicate) and ``EvenPodsSpreadPriority`` (priority), both aliased
``PodTopologySpread``; neither is in the default sets. No cluster-level default constraints.

Differences from Kubernetes 1.19, all at the edges: domains are counted per constraint, as
later releases do (1.19 pooled the counts of two constraints naming the same topology key);
every node is checked against the pod's node affinity on its own (1.19 counted the pods of a
non-matching node whose topology value some matching node shared); a row without a Node object
is judged as a node without labels (1.19: an error); an invalid label selector raises
:class:`PredicateError` (1.19: an error status). Preemption and nominated pods recompute
``pre_filter`` over the changed snapshot (Podium's protocol) instead of 1.19's
``AddPod``/``RemovePod`` updates, with the same counts.

Split as Kubernetes splits the plugin: :mod:`.common` (constraints, matching pods per domain),
:mod:`.filtering` (the filter) and :mod:`.scoring` (the score). ``FACTORIES`` holds both names
for the registry.
"""

from __future__ import annotations

from collections.abc import Callable

from podium.actors.framework.interface import PluginArgs
from podium.actors.plugins.pod_topology_spread import filtering, scoring
from podium.actors.plugins.pod_topology_spread.common import (
    DO_NOT_SCHEDULE,
    LABEL_HOSTNAME,
    NO_DOMAIN_MINIMUM,
    SCHEDULE_ANYWAY,
    DomainCounts,
    SpreadConstraint,
    hard_constraints_select,
    spread_constraints,
)
from podium.actors.plugins.pod_topology_spread.filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    EvenPodsSpread,
    PreFilterMeta,
)
from podium.actors.plugins.pod_topology_spread.scoring import NAME as PRIORITY_NAME
from podium.actors.plugins.pod_topology_spread.scoring import (
    EvenPodsSpreadPriority,
    PreScoreMeta,
    normalize_spread_scores,
)

__all__ = [
    "DO_NOT_SCHEDULE",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "FACTORIES",
    "LABEL_HOSTNAME",
    "NAME",
    "NO_DOMAIN_MINIMUM",
    "PRIORITY_NAME",
    "SCHEDULE_ANYWAY",
    "DomainCounts",
    "EvenPodsSpread",
    "EvenPodsSpreadPriority",
    "PreFilterMeta",
    "PreScoreMeta",
    "SpreadConstraint",
    "hard_constraints_select",
    "normalize_spread_scores",
    "spread_constraints",
]

FACTORIES: dict[str, Callable[[PluginArgs], EvenPodsSpread | EvenPodsSpreadPriority]] = {
    **filtering.FACTORIES,
    **scoring.FACTORIES,
}
