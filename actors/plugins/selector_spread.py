"""SelectorSpreadPriority and ServiceSpreadingPriority: spread a pod's siblings over nodes and zones.

Kubernetes sources (v1.14):

- pkg/scheduler/algorithm/priorities/selector_spreading.go@v1.14.0: ``CalculateSpreadPriorityMap``
  (the map step), ``CalculateSpreadPriorityReduce`` (the reduce step), ``countMatchingPods``;
- pkg/scheduler/algorithm/priorities/metadata.go@v1.14.0: ``getSelectors``;
- client-go listers (``GetPodServices``, ``GetPodControllers``, ``GetPodReplicaSets``,
  ``GetPodStatefulSets``), which decide which owners select the pod;
- pkg/scheduler/algorithmprovider/defaults/defaults.go@v1.14.0, which registers
  ``ServiceSpreadingPriority`` as this priority built with Services only.

A pod's *selectors* are those of the Services, ReplicationControllers, ReplicaSets and
StatefulSets in its namespace that select it. Its *siblings* are the existing pods in its
namespace, not being deleted, that match **every** one of those selectors.

Map: the number of siblings on the node. Reduce, over the feasible nodes::

    node_score = 10 * (max_count - count) / max_count          (10 when max_count == 0)
    zone_score = 10 * (max_zone - zone_count) / max_zone        (10 when max_zone == 0)
    score      = node_score / 3 + zone_score * 2 / 3            (nodes with a zone, when any
                                                                 feasible node has one)

as float64, truncated to int at the end. ``zone_count`` sums the map scores of the feasible
nodes in the zone (see :func:`podium.actors.core.zones.zone_key`).

Owner selection follows the client-go listers: a Service with no selector selects nothing (an
empty ``selector`` is read as none, since the API server drops empty maps); a
ReplicationController, ReplicaSet or StatefulSet with an empty or invalid selector selects
nothing, and none of them selects a pod without labels.

ServiceSpreadingPriority counts Services only, as v1.14 registers it (docs/parity.md). In v1.14 the
priority metadata, computed with every lister, overrides those selectors in the real scheduler,
so v1.14's ServiceSpreadingPriority in fact also counted controllers; Podium keeps the
registered, documented meaning (docs/parity.md, selector_spread).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from podium.actors.framework.interface import (
    MAX_PRIORITY,
    SKIP,
    PluginArgs,
    Skip,
    VectorScorePlugin,
)
from podium.actors.framework.snapshot import set_selector_selects
from podium.actors.framework.zones import zone_key
from podium.actors.plugins import names
from podium.protocol.labels import (
    Selector,
    label_selector_as_selector,
    label_selector_matches,
)
from podium.protocol.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    namespace_or_default,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import ClusterObjects, Snapshot

__all__ = [
    "FACTORIES",
    "NAME",
    "SERVICE_SPREADING_NAME",
    "ZONE_WEIGHTING",
    "CountMatchingPods",
    "SelectorSpread",
    "ServiceSpreading",
    "Siblings",
    "count_siblings_columns",
    "first_service_selector",
    "pod_selectors",
    "spread_reduce",
]

NAME = names.SELECTOR_SPREAD
SERVICE_SPREADING_NAME = names.SERVICE_SPREADING

ZONE_WEIGHTING = 2.0 / 3.0
"""selector_spreading.go ``zoneWeighting``: zone spreading weighs 2/3, node spreading 1/3."""

_MAX = float(MAX_PRIORITY)


# --------------------------------------------------------------------------- selectors


def first_service_selector(pod: PodInfo, objects: ClusterObjects) -> dict[str, str] | None:
    """The selector of the first Service (by name) in the pod's namespace that selects the pod.

    v1.14 ``getFirstServiceSelector`` took the lister's first; the informer's order is
    unspecified, so Podium takes the first by name (repeatable).
    """
    for key in sorted(objects.services):
        svc = objects.services[key]
        if set_selector_selects(svc.spec.selector, svc.metadata.namespace, pod):
            return svc.spec.selector
    return None


def pod_selectors(
    pod: PodInfo, objects: ClusterObjects, *, services_only: bool = False
) -> list[LabelSelector]:
    """v1.14 ``getSelectors``: the selectors of the owners in the pod's namespace selecting it.

    Args:
        pod: the pod being scheduled.
        objects: the cluster's Services, controllers and sets.
        services_only: count Services only (ServiceSpreadingPriority).

    Returns:
        One selector per selecting Service, ReplicationController, ReplicaSet and StatefulSet.
    """
    labels, namespace = pod.labels, pod.namespace
    found = [
        LabelSelector(match_labels=svc.spec.selector)
        for svc in objects.services.values()
        if set_selector_selects(svc.spec.selector, svc.metadata.namespace, pod)
    ]
    # The controller listers refuse a pod without labels ("no controllers found").
    if services_only or not labels:
        return found
    found.extend(
        LabelSelector(match_labels=rc.spec.selector)
        for rc in objects.replication_controllers.values()
        if set_selector_selects(rc.spec.selector, rc.metadata.namespace, pod)
    )
    for owners in (objects.replica_sets, objects.stateful_sets):
        for owner in owners.values():
            ls = owner.spec.selector
            # A nil or empty selector matches nothing here; an invalid one does not match.
            if (
                ls is not None
                and (ls.match_labels or ls.match_expressions)
                and namespace_or_default(owner.metadata.namespace) == namespace
                and label_selector_matches(ls, labels)
            ):
                found.append(ls)
    return found


@dataclass(frozen=True, slots=True)
class Siblings:
    """The pods that count: same namespace, not being deleted, matching every selector.

    The selectors are merged into one requirement set: ANDing them is ANDing their parts.

    Attributes:
        namespace: the pod's namespace.
        selector: the merged selector, compiled (``LabelSelectorAsSelector``).
    """

    namespace: str
    selector: Selector

    def __eq__(self, other: object) -> bool:
        # By what the selector selects (a Selector compiled afresh on every pre-score compares
        # by identity): the pods of one class then keep their class's scores from pod to pod.
        return (
            isinstance(other, Siblings)
            and self.namespace == other.namespace
            and self.selector.key == other.selector.key
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.selector.key))

    @classmethod
    def of(cls, namespace: str, selectors: Sequence[LabelSelector]) -> Siblings | None:
        """The merged selector, or ``None`` when no pod can match (no selectors, or a key
        required to hold two different values)."""
        if not selectors:
            return None
        required: dict[str, str] = {}
        exprs: list[LabelSelectorRequirement] = []
        for sel in selectors:
            for k, v in sel.match_labels.items():
                if required.setdefault(k, v) != v:
                    return None
            exprs.extend(sel.match_expressions)
        merged = LabelSelector(match_labels=required, match_expressions=exprs)
        return cls(namespace, label_selector_as_selector(merged))

    def count(self, node: NodeInfo) -> int:
        """v1.14 ``countMatchingPods``: the siblings on ``node``."""
        # This loop runs over every pod of every feasible node: the lookups are made once.
        namespace, selects = self.namespace, self.selector.matches
        n = 0
        for p in node.pods:
            if p.namespace == namespace and p.pod.metadata.deletion_timestamp is None:
                n += selects(p.labels)
        return n


def count_siblings_columns(
    siblings: Siblings | None, cols: NodeColumns, rows: npt.NDArray[np.intp]
) -> npt.NDArray[np.int64]:
    """Sibling counts for ``rows`` of ``cols``; only rows holding pods are visited."""
    out = np.zeros(len(rows), dtype=np.int64)
    if siblings is None or not len(rows):
        return out
    infos = cols.infos
    for i in np.flatnonzero(cols.pod_count[rows] > 0).tolist():
        out[i] = siblings.count(infos[int(rows[i])])
    return out


class CountMatchingPods:
    """The map step both spreading priorities share (v1.14 ``countMatchingPods``): the siblings
    on a node. A mixin: listed before the plugin's Protocol, with ``Siblings`` as its metadata."""

    def score(self, pod: PodInfo, meta: Siblings, node: NodeInfo) -> int:
        """The map step: the number of siblings on ``node``."""
        return meta.count(node)

    def score_columns(
        self, pod: PodInfo, meta: Siblings, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        """The map step for ``rows`` of ``cols`` (visits only rows holding pods)."""
        return count_siblings_columns(meta, cols, rows)


# --------------------------------------------------------------------------- reduce


def spread_reduce(scores: Sequence[int], zones: Sequence[str]) -> list[int]:
    """v1.14 ``CalculateSpreadPriorityReduce`` over the feasible nodes.

    Runs in numpy float64, whose elementwise operations round exactly as Go's float64 ones do;
    the operations and their order are Go's.

    Args:
        scores: the map scores (sibling counts), one per feasible node.
        zones: the nodes' zone keys ("" for a node without a zone), in the same order.

    Returns:
        The scores in [0, 10].
    """
    n = len(scores)
    if n == 0:
        return []
    counts = np.asarray(scores, dtype=np.int64)
    max_node = int(counts.max())
    if max_node > 0:
        f = _MAX * ((max_node - counts).astype(np.float64) / float(max_node))
    else:
        f = np.full(n, _MAX)
    codes: dict[str, int] = {}
    zone_of = np.fromiter(
        (codes.setdefault(z, len(codes)) if z else -1 for z in zones), dtype=np.int64, count=n
    )
    if codes:  # some feasible node has a zone
        zoned = zone_of >= 0
        by_zone = np.zeros(len(codes), dtype=np.int64)
        np.add.at(by_zone, zone_of[zoned], counts[zoned])
        max_zone = int(by_zone.max())
        if max_zone > 0:
            zone_score = _MAX * (
                (max_zone - by_zone[zone_of[zoned]]).astype(np.float64) / float(max_zone)
            )
        else:
            zone_score = np.full(int(zoned.sum()), _MAX)
        f[zoned] = (f[zoned] * (1.0 - ZONE_WEIGHTING)) + (ZONE_WEIGHTING * zone_score)
    out: list[int] = f.astype(np.int64).tolist()
    return out


# --------------------------------------------------------------------------- plugins


class SelectorSpread(CountMatchingPods, VectorScorePlugin[Siblings]):
    """SelectorSpreadPriority: prefer nodes, then zones, holding fewer of the pod's siblings."""

    services_only = False
    """Count Services only (ServiceSpreadingPriority)."""

    def __init__(self, args: PluginArgs) -> None:
        self.name = args.name

    def pre_score(
        self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]
    ) -> Siblings | Skip:
        """The pod's merged selector; :data:`SKIP` when no existing pod can count.

        With SKIP every map score is 0, and :meth:`normalize` gives every node 10, exactly as
        the reduce formula does for all-zero counts.
        """
        selectors = pod_selectors(pod, snapshot.objects, services_only=self.services_only)
        siblings = Siblings.of(pod.namespace, selectors)
        return SKIP if siblings is None else siblings

    def normalize(
        self, pod: PodInfo, meta: Siblings | Skip, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        """The reduce step: node and zone spreading blended 1/3 : 2/3."""
        if meta is SKIP or not any(scores):
            # All counts zero: the formula gives MAX_PRIORITY on every node, zoned or not.
            return [MAX_PRIORITY] * len(nodes)
        return spread_reduce(scores, [zone_key(n.labels) for n in nodes])

    def normalize_columns(
        self,
        pod: PodInfo,
        meta: Siblings | Skip,
        nodes: Sequence[NodeInfo],
        scores: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        if meta is SKIP or not scores.any():
            return np.full(len(nodes), MAX_PRIORITY, dtype=np.int64)
        return np.asarray(self.normalize(pod, meta, nodes, scores.tolist()), dtype=np.int64)

    def reduces_row_by_row(
        self, pod: PodInfo, meta: Siblings | Skip, scores: npt.NDArray[np.int64]
    ) -> bool:
        """All counts zero (or SKIP): every row gets ``MAX_PRIORITY`` in any window."""
        return meta is SKIP or not scores.any()


class ServiceSpreading(SelectorSpread):
    """ServiceSpreadingPriority: SelectorSpreadPriority counting Services only."""

    services_only = True


FACTORIES: dict[str, Callable[[PluginArgs], SelectorSpread]] = {
    NAME: SelectorSpread,
    SERVICE_SPREADING_NAME: ServiceSpreading,
}
