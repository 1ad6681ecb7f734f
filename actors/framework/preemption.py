"""Preemption and nominated pods: the pure core (no actors, no I/O).

Kubernetes counterparts:

- pkg/scheduler/core/generic_scheduler.go@v1.14: ``Preempt``, ``podEligibleToPreemptOthers``,
  ``nodesWherePreemptionMightHelp`` (with ``unresolvablePredicateFailureErrors``),
  ``selectNodesForPreemption``, ``selectVictimsOnNode``, ``filterPodsWithPDBViolation``,
  ``pickOneNodeForPreemption``, ``getLowerPriorityNominatedPods``, ``addNominatedPods`` and
  ``podFitsOnNode``'s two passes;
- pkg/scheduler/internal/queue/scheduling_queue.go@v1.14: ``nominatedPodMap``;
- pkg/scheduler/util/utils.go: ``GetPodStartTime``, ``GetEarliestPodStartTime`` (v1.14) and
  the later ``MoreImportantPod`` (v1.15+, see below);
- pkg/controller/disruption/disruption.go@v1.14: how a PodDisruptionBudget's
  ``disruptionsAllowed`` is computed, used here when a budget comes without a status;
- the FitError's ``preemption:`` part (adopted from later Kubernetes, docs/differences.md):
  pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go ``PostFilter``
  (``"preemption: " + msg``), pkg/scheduler/framework/preemption/preemption.go ``Preempt``
  and ``DryRunPreemption``, and framework/types.go ``FitError.Error`` since v1.28 (kubernetes
  PR #117588 dropped the doubled period): the filter's FitError, a space, then e.g.
  ``preemption: 0/5 nodes are available: 2 No preemption victims found for incoming pod,
  3 Preemption is not helpful for scheduling.``

How one preemption goes (:func:`preempt`, after an attempt ended in a FitError)::

    pod_eligible_to_preempt_others ── no ──▶ "preemption: not eligible due to ..."
              │ yes
    nodes_where_preemption_might_help(unresolvable nodes) ── none ──▶ clear the pod's nomination,
              │                                                    "... Preemption is not
              │                                                    helpful for scheduling."
    select_nodes_for_preemption: per node select_victims_on_node
              │   (remove every lower-priority pod; fits? then reprieve, PDB-violating
              │    pods first, each group most important first)
    pick_one_node_for_preemption ── none ──▶ "preemption: 0/N nodes are available: ..."
              │
    PreemptionResult(node, victims, lower-priority pods nominated there: clear them)

The predicates are re-run through a :data:`FitCheck` the caller provides, so the actor layer can
reuse its own filter code; :class:`PredicateFitCheck` is the default (the v1.14 predicates in
order on one node, first failure wins, with ``podFitsOnNode``'s two passes when pods are
nominated). Checks run on a working copy of the snapshot (:meth:`Snapshot.copy`) in which the
node under evaluation is swapped for a changed clone, so predicates that look at other nodes
(inter-pod affinity) see the cluster as it would be.

Where Podium differs from v1.14 (or guesses):

- victims are ordered by ``MoreImportantPod`` (priority, then earlier start time; v1.15+)
  rather than v1.14's unstable sort by priority alone, and the final victim list is sorted
  the same way (v1.14 listed PDB-violating victims first, so ``Pods[0]`` was not always the
  highest-priority victim that ``pickOneNodeForPreemption`` reads);
- a pod without ``status.startTime`` starts "now" in Kubernetes: here it sorts after every
  pod that has one;
- ties that Go leaves to map order (several nodes with no victims, equal on every criterion)
  go to the first node in snapshot (node-tree) order;
- ``preemptionPolicy: Never`` (v1.15+ NonPreemptingPriority) is honoured;
- a PodDisruptionBudget without a status gets one derived as the disruption controller would
  (:func:`disruptions_allowed`); v1.14 preemption itself only reads ``disruptionsAllowed``,
  and counts a victim as violating when its budget allows ``<= 0`` disruptions (later
  versions also decrement the budget per victim; Podium keeps v1.14's rule);
- Podium's cache drops terminating pods, so the "terminating pod on the nominated node" rule
  only matters for snapshots that keep them (tests, tools).

Pod groups (issue 24; the scheduler's gang preemption, actors/cycle/gangs.py, runs these steps
for each member that needs a node):

- a placed gang is one preemption unit (:class:`PreemptionUnits`, after KEP-5710's "Preemption
  unit"), for a lone pod's preemption and a gang's alike: when one of its members would be a
  victim, every member, on whatever node, is, and only when each member's priority is below
  the preemptor's; the node's victims then hold the whole gang, so ``pickOneNodeForPreemption``
  weighs all of it (count, priorities, PDB violations of each member); units are reprieved in
  Kubernetes v1.36's victim importance order (:func:`_unit_importance`);
- ``spared`` pods are never victims (a gang's preemption spares its own members,
  :func:`same_group`); each member's victims are chosen against the budgets the earlier
  members' victims left (:func:`spend_budgets`); a member that finds no victim on any node is
  answered without a fit check per node (:func:`without_victims_anywhere`).

Without pod groups on the nodes every unit is one pod and each step is v1.14's.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from podium.actors.framework.interface import (
    Code,
    FilterPlugin,
    PredicateError,
    fit_error_message,
    run_filter,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import (
    NominatedPods,
    add_nominated_pods,
    lower_priority_nominated_pods,
)
from podium.actors.framework.snapshot import Snapshot
from podium.protocol.gangs import min_count, pod_group_key
from podium.protocol.labels import label_selector_matches
from podium.protocol.objects import (
    Pod,
    PodDisruptionBudget,
    holds_resources,
    is_terminal,
    namespace_or_default,
)

__all__ = [
    "MSG_NOT_ELIGIBLE_NEVER",
    "MSG_NOT_ELIGIBLE_TERMINATING",
    "MSG_NO_VICTIMS",
    "MSG_PREEMPTION_NOT_HELPFUL",
    "PREEMPTION_PREFIX",
    "PREEMPT_NEVER",
    "DisruptionBudget",
    "FitCheck",
    "PlacedGang",
    "PredicateFitCheck",
    "PreemptionResult",
    "PreemptionSearch",
    "PreemptionUnits",
    "Spared",
    "Unit",
    "VictimSelection",
    "Victims",
    "disruption_budgets",
    "disruptions_allowed",
    "filter_pods_with_pdb_violation",
    "finish_preemption",
    "fit_error_with_preemption",
    "lowest_evictable_priority",
    "more_important_pod",
    "nodes_where_preemption_might_help",
    "pick_one_node_for_preemption",
    "pod_eligible_to_preempt_others",
    "preempt",
    "preemption_units",
    "same_group",
    "search_preemption",
    "select_nodes_for_preemption",
    "select_victims_on_node",
    "spend_budgets",
    "with_whole_gangs",
    "without_victims",
    "without_victims_anywhere",
]

PREEMPT_NEVER = "Never"
"""``v1.PreemptNever``: a pod with this ``preemptionPolicy`` never preempts others."""

PREEMPTION_PREFIX = "preemption: "
"""default_preemption.go ``PostFilter``: the prefix of the FitError's preemption part."""
MSG_PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
"""preemption.go: the status of a node whose failure removing pods cannot cure."""
MSG_NO_VICTIMS = "No preemption victims found for incoming pod"
"""default_preemption.go ``SelectVictimsOnNode``: a node without lower-priority pods."""
MSG_NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
"""default_preemption.go ``PodEligibleToPreemptOthers``."""
MSG_NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
"""default_preemption.go ``PodEligibleToPreemptOthers``."""

Spared = Callable[[PodInfo], bool]
"""``spared(pod)``: whether ``pod`` must never be a victim, whatever its priority."""

_PRIORITY_OFFSET = 2**31
"""pickOneNodeForPreemption adds MaxInt32+1 to every priority before summing, so that a node
with more negative-priority victims is not preferred over one with fewer."""


# --------------------------------------------------------------------------- importance


def _start_time(pod: PodInfo) -> float:
    """``status.startTime`` in seconds since the epoch; +inf when unset or unreadable.

    util.GetPodStartTime answers "now" for a pod that has not started, i.e. later than any pod
    that has; +inf keeps that order and is deterministic.
    """
    text = pod.pod.status.start_time
    if not text:
        return math.inf
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return math.inf


def _importance(pod: PodInfo) -> tuple[int, float]:
    """Sort key putting the most important pod first (``MoreImportantPod``)."""
    return (-pod.priority, _start_time(pod))


def more_important_pod(a: PodInfo, b: PodInfo) -> bool:
    """util.MoreImportantPod: higher priority, or equal priority and started earlier."""
    return _importance(a) < _importance(b)


# --------------------------------------------------------------------------- fit checks

FitCheck = Callable[[PodInfo, NodeInfo, Snapshot], tuple[str, ...]]
"""``fits(pod, node_info, snapshot)``: the reasons ``pod`` does not fit ``node_info`` (empty:
it fits). ``snapshot`` holds ``node_info`` in place of that node's own NodeInfo; the check may
swap other NodeInfos in with ``replace_node_info`` but must put ``node_info`` back."""


_NOT_MADE = object()


class PredicateFitCheck:
    """The default :data:`FitCheck`: v1.14 ``podFitsOnNode`` on one node.

    The predicates run in the given order and the first failing one's reasons are the answer
    (preemption never checks all predicates). With nominated pods of equal or higher priority
    on the node, the predicates run twice, as in v1.14: with those pods added, and, when that
    passes, without them (pod affinity may need them absent).

    A predicate error (``Code.ERROR`` or :class:`PredicateError`) counts as a misfit with its
    text as the reason: v1.14's ``selectVictimsOnNode`` logs it and treats the node as unfit.

    Args:
        filters: the predicates, in the order they run.
        nominated: the nominated pods (None: none).
    """

    def __init__(
        self, filters: Sequence[FilterPlugin[Any]], nominated: NominatedPods | None = None
    ) -> None:
        self.filters = list(filters)
        self.nominated = nominated
        # The node-local predicates' metadata depends on the pod alone: made once per pod,
        # not once per node examined (preemption may check every node several times).
        self._local = {id(p) for p in self.filters if p.node_local}
        self._metas: dict[int, Any] = {}
        self._metas_pod: PodInfo | None = None

    def __call__(self, pod: PodInfo, node_info: NodeInfo, snapshot: Snapshot) -> tuple[str, ...]:
        added, with_nominated = add_nominated_pods(pod, node_info, self.nominated)
        if added:
            snapshot.replace_node_info(with_nominated)
            try:
                reasons = self._run(pod, with_nominated, snapshot)
            finally:
                snapshot.replace_node_info(node_info)
            if reasons:
                return reasons
        return self._run(pod, node_info, snapshot)

    def _run(self, pod: PodInfo, node_info: NodeInfo, snapshot: Snapshot) -> tuple[str, ...]:
        if self._metas_pod is not pod:
            self._metas, self._metas_pod = {}, pod
        for plugin in self.filters:
            meta = self._metas.get(id(plugin), _NOT_MADE)
            if meta is _NOT_MADE:
                try:
                    meta = plugin.pre_filter(pod, snapshot)
                except PredicateError as exc:
                    return (str(exc),)
                if id(plugin) in self._local:
                    self._metas[id(plugin)] = meta
            try:
                status = run_filter(plugin, pod, meta, node_info)
            except PredicateError as exc:
                # As the class says (selectVictimsOnNode logs it): a misfit, not a crash.
                return (str(exc),)
            if status.code is not Code.SUCCESS:
                return status.reasons or (plugin.name,)
        return ()


# --------------------------------------------------------------------------- disruption budgets


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """A PodDisruptionBudget with the number of disruptions it allows now."""

    pdb: PodDisruptionBudget
    allowed: int

    def covers(self, pod: PodInfo) -> bool:
        """filterPodsWithPDBViolation's match: same namespace, and a selector that is neither
        absent nor empty (such a budget matches nothing there) and selects the pod's labels."""
        if namespace_or_default(self.pdb.metadata.namespace) != pod.namespace:
            return False
        selector = self.pdb.spec.selector
        if selector is None or not (selector.match_labels or selector.match_expressions):
            return False
        return label_selector_matches(selector, pod.labels)


def _scaled(value: int | str, total: int) -> int:
    """intstr.GetValueFromIntOrPercent with roundUp: a count, or ceil(percent * total / 100)."""
    if isinstance(value, int):
        return value
    return -(-int(value[:-1]) * total // 100)


def disruptions_allowed(pdb: PodDisruptionBudget, pods: Iterable[Pod]) -> int:
    """How many of ``pdb``'s pods may be disrupted now (v1.14 ``Status.PodDisruptionsAllowed``).

    A budget that carries a status is read as given (v1.14 preemption reads only that field).
    Without one (Podium has no disruption controller) it is derived as
    pkg/controller/disruption/disruption.go@v1.14 would, from ``pods`` (every pod Podium
    knows, bound or pending):

    - matching pods: same namespace, selected by ``spec.selector`` (absent: none; ``{}``:
      all, as the controller's pod lister selects);
    - healthy: matching pods bound to a node, not terminating, not Succeeded/Failed (Podium
      runs no kubelet, so "bound" stands for "Ready");
    - expected: ``minAvailable`` as a count: every matching pod (the controller's
      ``len(pods)``); otherwise the matching pods that are not Succeeded/Failed, standing for
      the controllers' scale the controller sums (Podium keeps no replica counts);
    - desired healthy: ``minAvailable`` (a percent of expected, rounded up), or expected minus
      ``maxUnavailable`` (a percent rounded up), at least 0; neither set: 0 with expected 0;
    - allowed = healthy - desired, and 0 when that is negative or nothing is expected.
    """
    if pdb.status is not None:
        return pdb.status.disruptions_allowed
    namespace = namespace_or_default(pdb.metadata.namespace)
    selector = pdb.spec.selector
    matching = [
        p
        for p in pods
        if namespace_or_default(p.metadata.namespace) == namespace
        and label_selector_matches(selector, p.metadata.labels)
    ]
    # Not "holds resources" on purpose: a terminating pod is still expected (the controller
    # replaces it), only a finished one is not; it is not healthy either way.
    live = [p for p in matching if not is_terminal(p)]
    healthy = sum(1 for p in matching if p.spec.node_name and holds_resources(p))
    spec = pdb.spec
    if spec.max_unavailable is not None:
        expected = len(live)
        desired = max(expected - _scaled(spec.max_unavailable, expected), 0)
    elif isinstance(spec.min_available, int):
        expected = len(matching)
        desired = spec.min_available
    elif spec.min_available is not None:
        expected = len(live)
        desired = _scaled(spec.min_available, expected)
    else:
        expected = desired = 0
    allowed = healthy - desired
    return allowed if expected > 0 and allowed > 0 else 0


def disruption_budgets(snapshot: Snapshot, pending: Iterable[Pod] = ()) -> list[DisruptionBudget]:
    """Every PodDisruptionBudget of ``snapshot`` with its allowed disruptions, by key.

    Args:
        snapshot: the cluster (its bound and assumed pods are the pods counted).
        pending: pods not on any node that budgets without a status should count too.
    """
    pdbs = snapshot.objects.pod_disruption_budgets
    by_namespace: dict[str, list[Pod]] = defaultdict(list)
    if any(pdb.status is None for pdb in pdbs.values()):
        # Only budgets without a status count pods: group them once, not per budget.
        for info in snapshot.node_infos:
            for p in info.pods:
                by_namespace[p.namespace].append(p.pod)
        for pod in pending:
            by_namespace[namespace_or_default(pod.metadata.namespace)].append(pod)
    out = []
    for key in sorted(pdbs):
        pdb = pdbs[key]
        pods = by_namespace.get(namespace_or_default(pdb.metadata.namespace), [])
        out.append(DisruptionBudget(pdb, disruptions_allowed(pdb, pods)))
    return out


def filter_pods_with_pdb_violation(
    pods: Iterable[PodInfo], budgets: Sequence[DisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """v1.14 ``filterPodsWithPDBViolation``: (violating, non-violating), order kept.

    A pod violates when a budget covering it allows no disruption (``allowed <= 0``); a pod
    without labels matches no budget.
    """
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        if pod.labels and any(b.allowed <= 0 and b.covers(pod) for b in budgets):
            violating.append(pod)
        else:
            non_violating.append(pod)
    return violating, non_violating


# --------------------------------------------------------------------------- preemption units


@dataclass(frozen=True, slots=True)
class PlacedGang:
    """A gang with members on nodes (bound or assumed): evicted whole or not at all.

    Attributes:
        key: ``namespace/name`` of its pod group.
        members: (node, member) for every member on a node of the snapshot, most important
            first.
        priority: its highest member's priority: only a preemptor above it may evict it (issue
            24 point 4: never members of a gang of higher or equal priority).
    """

    key: str
    members: tuple[tuple[str, PodInfo], ...]
    priority: int


class PreemptionUnits:
    """The placed gangs of a snapshot, by member: which pods preemption evicts together.

    KEP-5710 (kubernetes/enhancements keps/sig-scheduling/5710-workload-aware-preemption,
    "Preemption unit") makes the pod group scheduled as a gang the unit of preemption ("the
    group of pods that should be preempted together matches a group that was initially
    scheduled together as a gang"; its user story: an AI training job "will not be partially
    preempted"), and Kubernetes v1.36 does so for a PodGroup whose ``disruptionMode`` is
    ``PodGroup`` ("all pods from the PodGroup have to be disrupted together",
    kubernetes.io "Pod Group Disruption and Priority"). Podium has no ``disruptionMode``: every
    gang (``minCount``/``minMember``) is such a unit, and so is a group Podium does not know
    (it may be a gang; keeping it whole is the all-or-nothing side); a ``basic`` group's pods
    are ordinary pods. Unlike v1.36, a lone pod's preemption keeps gangs whole too
    (docs/differences.md).
    """

    __slots__ = ("_gangs", "_of", "_snapshot")

    def __init__(self, snapshot: Snapshot) -> None:
        # Built on the first question about a pod that names a group: a cluster without pod
        # groups pays a few lookups per pod asked about, never a scan.
        self._snapshot = snapshot
        self._gangs: dict[str, PlacedGang] | None = None
        self._of: dict[str, PlacedGang] = {}

    @property
    def gangs(self) -> dict[str, PlacedGang]:
        """Group key -> placed gang, for every gang with a member on a node."""
        if self._gangs is None:
            self._gangs = self._build()
            self._of = {p.key: g for g in self._gangs.values() for _, p in g.members}
        return self._gangs

    def _by_member(self) -> dict[str, PlacedGang]:
        """Member key -> its placed gang (built with :attr:`gangs`)."""
        if self._gangs is None:
            _ = self.gangs
        return self._of

    def _build(self) -> dict[str, PlacedGang]:
        snapshot = self._snapshot
        groups = snapshot.objects.pod_groups
        found: dict[str, list[tuple[str, PodInfo]]] = {}
        for info in snapshot.node_infos:
            for p in info.pods:
                if not p.names_a_group:
                    continue
                key = pod_group_key(p.pod)
                if key is None:
                    continue
                group = groups.get(key)
                if group is not None and min_count(group) is None:
                    continue  # basic: its pods are ordinary pods
                found.setdefault(key, []).append((info.name, p))
        return {
            key: PlacedGang(
                key,
                tuple(sorted(members, key=lambda m: _importance(m[1]))),
                max(p.priority for _, p in members),
            )
            for key, members in found.items()
        }

    def gang_of(self, pod: PodInfo) -> PlacedGang | None:
        """The placed gang ``pod`` is a member of, or None."""
        if not pod.names_a_group:
            return None
        return self._by_member().get(pod.key)


@dataclass(frozen=True, slots=True)
class Unit:
    """A preemption unit: the pods evicted together, each with the node it runs on.

    Attributes:
        pods: (node, pod): one pod, or every member of ``gang``.
        gang: the placed gang, or None for a lone pod.
    """

    pods: list[tuple[str, PodInfo]]
    gang: PlacedGang | None = None


def preemption_units(
    pod: PodInfo,
    node_info: NodeInfo,
    units: PreemptionUnits | None,
    spared: Spared | None = None,
) -> list[Unit]:
    """The units ``pod`` may evict to fit ``node_info``, in the node's pod order: each pod of
    a lower priority on the node that ``spared`` does not spare, alone, or, for a member of a
    placed gang, the whole gang (every member, on whatever node) when every member is of a
    lower priority and none is spared; a gang of higher or equal priority, or with a spared
    member, is no unit at all."""
    here = node_info.name
    out: list[Unit] = []
    seen: set[str] = set()
    for p in node_info.pods:
        if p.priority >= pod.priority or (spared is not None and spared(p)):
            continue
        gang = units.gang_of(p) if units is not None else None
        if gang is None:
            out.append(Unit([(here, p)]))
            continue
        if gang.key in seen:
            continue
        seen.add(gang.key)
        if gang.priority >= pod.priority or (
            spared is not None and any(spared(m) for _, m in gang.members)
        ):
            continue
        out.append(Unit(list(gang.members), gang))
    return out


def _unit_importance(unit: Unit) -> tuple[int, int, int, float]:
    """Sort key putting the most important unit first, as Kubernetes v1.36's workload-aware
    preemption ranks victims (kubernetes.io "Workload-Aware Preemption", "Victim importance
    hierarchy"): higher priority; at equal priority a pod group before a lone pod; of two
    groups the larger; then the earlier start. A lone pod's key orders as ``MoreImportantPod``.
    """
    if unit.gang is None:
        only = unit.pods[0][1]
        return (-only.priority, 1, -1, _start_time(only))
    pods = [p for _, p in unit.pods]
    return (-unit.gang.priority, 0, -len(pods), min(_start_time(p) for p in pods))


# --------------------------------------------------------------------------- the steps


def pod_eligible_to_preempt_others(pod: PodInfo, snapshot: Snapshot) -> tuple[bool, str]:
    """v1.14 ``podEligibleToPreemptOthers`` (with the later preemptionPolicy rule).

    Not eligible: ``preemptionPolicy: Never``; or the pod is already nominated to a node where
    a lower-priority pod is terminating (it preempted before and the victims are leaving).

    Returns:
        (eligible, why not: the later ``PodEligibleToPreemptOthers`` message, or "").
    """
    if pod.pod.spec.preemption_policy == PREEMPT_NEVER:
        return False, MSG_NOT_ELIGIBLE_NEVER
    nominated = pod.pod.status.nominated_node_name
    if nominated:
        info = snapshot.get(nominated)
        if info is not None and any(
            p.pod.metadata.deletion_timestamp is not None and p.priority < pod.priority
            for p in info.pods
        ):
            return False, MSG_NOT_ELIGIBLE_TERMINATING
    return True, ""


def nodes_where_preemption_might_help(
    unresolvable: Collection[str], snapshot: Snapshot
) -> list[NodeInfo]:
    """v1.14 ``nodesWherePreemptionMightHelp``: the nodes whose failure removing pods may cure.

    v1.14 looked each node's failure reasons up in ``unresolvablePredicateFailureErrors``; the
    plugins say it themselves, with ``Code.UNSCHEDULABLE_AND_UNRESOLVABLE`` (for exactly the
    reasons that list holds, and PodTopologySpread's missing topology label, adopted with it),
    and the filter stage carries their code with the node (later Kubernetes reads the code of
    each node's status the same way).

    Args:
        unresolvable: the nodes whose status was Unschedulable and unresolvable
            (``ScheduleResult.unresolvable`` from a filter run with ``explain``). Every other
            node is tried, a node the attempt did not examine included, as in v1.14.
        snapshot: the nodes, whose order is kept.
    """
    return [info for info in snapshot.node_infos if info.name not in unresolvable]


@dataclass(frozen=True, slots=True)
class Victims:
    """schedulerapi.Victims: the pods to evict on one node, most important first."""

    pods: tuple[PodInfo, ...] = ()
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class VictimSelection:
    """What :func:`select_victims_on_node` found.

    Attributes:
        victims: the pods to evict, most important first.
        num_pdb_violations: how many of them violate a PodDisruptionBudget.
        fits: whether the pod fits once the victims are gone.
        reasons: when it does not fit, why (the node's entry in the ``preemption:`` message).
    """

    victims: tuple[PodInfo, ...]
    num_pdb_violations: int
    fits: bool
    reasons: tuple[str, ...] = ()


def select_victims_on_node(
    pod: PodInfo,
    node_info: NodeInfo,
    snapshot: Snapshot,
    fits: FitCheck,
    budgets: Sequence[DisruptionBudget] = (),
    *,
    spared: Spared | None = None,
    units: PreemptionUnits | None = None,
) -> VictimSelection:
    """v1.14 ``selectVictimsOnNode``: the fewest pods to evict on ``node_info`` for ``pod``.

    Every lower-priority pod is removed; if ``pod`` then does not fit, the node is unsuitable.
    Otherwise the removed pods are put back one by one while ``pod`` still fits, PDB-violating
    ones first, each group most important first; those that cannot be put back are the
    victims. A higher-priority pod is never evicted while a lower-priority one could be.

    A placed gang (``units``, :class:`PreemptionUnits`) is removed and put back whole: when
    one of its members runs on this node, every member, on whatever node, goes with it, and
    only when all of them are of a lower priority than ``pod`` (:func:`preemption_units`).
    Without gangs on the node this is exactly v1.14's step.

    ``snapshot`` is changed during the call (the NodeInfos touched are swapped for working
    clones) and restored before it returns; ``node_info`` itself is never mutated.

    Args:
        pod: the preemptor.
        node_info: the node as the snapshot has it.
        snapshot: the snapshot holding the node (a working copy is best, see
            :meth:`Snapshot.copy`).
        fits: the predicate check (:class:`PredicateFitCheck` by default).
        budgets: the disruption budgets (:func:`disruption_budgets`).
        spared: pods never evicted, whatever their priority (a pod group's preemption spares
            its own members, :func:`same_group`); None: none. A gang with a spared member is
            spared whole.
        units: the placed gangs (None: every pod is its own unit).
    """
    original = snapshot.get(node_info.name)
    if original is None:
        return VictimSelection((), 0, False, (MSG_PREEMPTION_NOT_HELPFUL,))
    potential = [
        p for p in node_info.pods if p.priority < pod.priority and (spared is None or not spared(p))
    ]
    if units is not None and any(p.names_a_group for p in potential):
        return _select_units_on_node(
            pod, node_info, original, snapshot, fits, budgets, spared, units
        )
    work = node_info.clone()
    for p in potential:
        work.remove_pod(p)
    snapshot.replace_node_info(work)

    def take(p: PodInfo, *, off: bool) -> None:
        if off:
            work.remove_pod(p)
        else:
            work.add_pod(p)
        snapshot.replace_node_info(work)

    try:
        reasons = fits(pod, work, snapshot)
        if reasons:
            # The later DefaultPreemption names a node without candidates this way.
            return VictimSelection((), 0, False, reasons if potential else (MSG_NO_VICTIMS,))
        potential.sort(key=_importance)
        violating, non_violating = filter_pods_with_pdb_violation(potential, budgets)
        order = [(p, 1) for p in violating] + [(p, 0) for p in non_violating]
        victims, num_violations = _reprieve(order, take, lambda: bool(fits(pod, work, snapshot)))
    finally:
        snapshot.replace_node_info(original)
    victims.sort(key=_importance)
    return VictimSelection(tuple(victims), num_violations, True)


_T = TypeVar("_T")


def _reprieve(
    order: Sequence[tuple[_T, int]], take: Callable[..., None], misfit: Callable[[], bool]
) -> tuple[list[_T], int]:
    """selectVictimsOnNode's reprieve: put each removed item back in ``order`` (with how many
    PDB violations evicting it counts), keep it when the preemptor still fits
    (``misfit()`` false), else take it off again: it is a victim. Returns the victims and
    their violations."""
    victims: list[_T] = []
    violations = 0
    for item, bad in order:
        take(item, off=False)
        if misfit():
            take(item, off=True)
            victims.append(item)
            violations += bad
    return victims, violations


def _select_units_on_node(
    pod: PodInfo,
    node_info: NodeInfo,
    original: NodeInfo,
    snapshot: Snapshot,
    fits: FitCheck,
    budgets: Sequence[DisruptionBudget],
    spared: Spared | None,
    units: PreemptionUnits,
) -> VictimSelection:
    """:func:`select_victims_on_node` when a pod on the node names a group: the same steps over
    preemption units (:func:`preemption_units`), a placed gang removed and put back whole on
    every node it runs on."""
    here = node_info.name
    candidates = preemption_units(pod, node_info, units, spared)
    work = node_info.clone()
    works = {here: work}
    originals = {here: original}

    def touched(unit: Unit) -> list[NodeInfo]:
        out: dict[str, NodeInfo] = {}
        for name, _ in unit.pods:
            info = works.get(name)
            if info is None:
                originals[name] = snapshot.by_name[name]
                info = works[name] = originals[name].clone()
            out[name] = info
        return list(out.values())

    def take(unit: Unit, *, off: bool) -> None:
        infos = touched(unit)
        for name, p in unit.pods:
            if off:
                works[name].remove_pod(p)
            else:
                works[name].add_pod(p)
        for info in infos:
            snapshot.replace_node_info(info)

    for unit in candidates:
        touched(unit)
        for name, p in unit.pods:
            works[name].remove_pod(p)
    for info in works.values():
        snapshot.replace_node_info(info)
    try:
        reasons = fits(pod, work, snapshot)
        if reasons:
            return VictimSelection((), 0, False, reasons if candidates else (MSG_NO_VICTIMS,))
        candidates.sort(key=_unit_importance)
        violating: list[tuple[Unit, int]] = []
        non_violating: list[tuple[Unit, int]] = []
        for unit in candidates:
            bad = filter_pods_with_pdb_violation((p for _, p in unit.pods), budgets)[0]
            (violating if bad else non_violating).append((unit, len(bad)))
        chosen, num_violations = _reprieve(
            violating + non_violating, take, lambda: bool(fits(pod, work, snapshot))
        )
    finally:
        for info in originals.values():
            snapshot.replace_node_info(info)
    victims = sorted((p for unit in chosen for _, p in unit.pods), key=_importance)
    return VictimSelection(tuple(victims), num_violations, True)


def select_nodes_for_preemption(
    pod: PodInfo,
    snapshot: Snapshot,
    nodes: Iterable[str],
    fits: FitCheck,
    budgets: Sequence[DisruptionBudget] = (),
    *,
    spared: Spared | None = None,
    units: PreemptionUnits | None = None,
) -> tuple[dict[str, Victims], dict[str, tuple[str, ...]]]:
    """v1.14 ``selectNodesForPreemption`` over ``nodes`` (names; ones not in the snapshot are
    skipped, as v1.14 skips a node its cache does not have yet).

    ``snapshot`` is not changed: the work happens on a copy. ``units``: the snapshot's placed
    gangs (None: found here); a node's victims then hold every member of each gang evicted,
    on whatever node, so picking a node weighs the whole gang's cost (its members' count and
    priorities), as Kubernetes ranks the set of pods a preemption removes.

    Returns:
        (node -> victims, for the nodes where the pod fits after evicting them, in ``nodes``
        order; node -> why not, for the others).
    """
    work = snapshot.copy()
    if units is None:
        units = PreemptionUnits(snapshot)
    candidates: dict[str, Victims] = {}
    unfit: dict[str, tuple[str, ...]] = {}
    for name in nodes:
        info = work.get(name)
        if info is None:
            continue
        found = select_victims_on_node(pod, info, work, fits, budgets, spared=spared, units=units)
        if found.fits:
            candidates[name] = Victims(found.victims, found.num_pdb_violations)
        else:
            unfit[name] = found.reasons
    return candidates, unfit


def _narrow(nodes: list[str], score: Callable[[str], float]) -> list[str]:
    """The nodes with the highest score, in order."""
    best = max(score(n) for n in nodes)
    return [n for n in nodes if score(n) == best]


def _earliest_top_start(victims: Victims) -> float:
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    top = max(p.priority for p in victims.pods)
    return min(_start_time(p) for p in victims.pods if p.priority == top)


def pick_one_node_for_preemption(candidates: Mapping[str, Victims]) -> str | None:
    """v1.14 ``pickOneNodeForPreemption``.

    A node that needs no eviction wins at once. Otherwise, narrowing step by step: fewest PDB
    violations; lowest highest-victim priority; lowest sum of victim priorities (each offset
    by 2^31, so more negative-priority victims never look cheaper); fewest victims; latest
    earliest start time among the highest-priority victims; then the first in order.

    Returns:
        The chosen node, or None when there are no candidates.
    """
    if not candidates:
        return None
    for name, victims in candidates.items():
        if not victims.pods:
            return name
    nodes = list(candidates)
    steps: list[Callable[[str], float]] = [
        lambda n: -candidates[n].num_pdb_violations,
        lambda n: -max(p.priority for p in candidates[n].pods),
        lambda n: -sum(p.priority + _PRIORITY_OFFSET for p in candidates[n].pods),
        lambda n: -len(candidates[n].pods),
        lambda n: _earliest_top_start(candidates[n]),
    ]
    for score in steps:
        nodes = _narrow(nodes, score)
        if len(nodes) == 1:
            break
    return nodes[0]


@dataclass(frozen=True, slots=True)
class PreemptionResult:
    """What :func:`preempt` decided.

    Attributes:
        node: the node the preemptor is nominated to, or None when preemption found none.
        victims: the pods to evict there, most important first.
        num_pdb_violations: how many victims violate a PodDisruptionBudget.
        nominated_pods_to_clear: pods whose ``status.nominatedNodeName`` must be cleared: the
            lower-priority pods nominated to ``node``, or the preemptor itself when preemption
            cannot help on any node.
        message: when no node was found, the FitError's preemption part
            (``"preemption: ..."``); see :func:`fit_error_with_preemption`.
    """

    node: str | None = None
    victims: tuple[PodInfo, ...] = ()
    num_pdb_violations: int = 0
    nominated_pods_to_clear: tuple[PodInfo, ...] = ()
    message: str | None = None


def _preemption_message(num_nodes: int, reasons: Counter[str]) -> str:
    return PREEMPTION_PREFIX + fit_error_message(num_nodes, reasons)


@dataclass(frozen=True, slots=True)
class PreemptionSearch:
    """What :func:`search_preemption` found before a node is picked: the candidates an
    extender's preempt verb may narrow (v1.14 ``processPreemptionWithExtenders``).

    Attributes:
        done: the answer already (not eligible, or no node where preemption might help); the
            other fields are then empty.
        candidates: node -> victims, for the nodes where the pod fits after the evictions.
        unfit: node -> why the pod fits there even with every lower-priority pod gone.
        potential: how many nodes preemption might help on.
        units: the placed gangs the victims were chosen with (an extender's narrowed
            candidates are completed with them, :func:`with_whole_gangs`).
    """

    done: PreemptionResult | None = None
    candidates: Mapping[str, Victims] = dataclasses.field(default_factory=dict)
    unfit: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    potential: int = 0
    units: PreemptionUnits | None = None


def search_preemption(
    pod: PodInfo,
    snapshot: Snapshot,
    unresolvable: Collection[str],
    fits: FitCheck,
    *,
    budgets: Sequence[DisruptionBudget] | None = None,
    spared: Spared | None = None,
) -> PreemptionSearch:
    """The first half of :func:`preempt`: eligibility, the nodes where preemption might help,
    and the victims on each (``selectNodesForPreemption``; ``spared`` pods are never
    victims; a placed gang is a victim whole, :class:`PreemptionUnits`)."""
    eligible, why = pod_eligible_to_preempt_others(pod, snapshot)
    if not eligible:
        return PreemptionSearch(done=PreemptionResult(message=PREEMPTION_PREFIX + why))
    num_nodes = len(snapshot)
    if num_nodes == 0:
        # v1.14 answers ErrNoNodesAvailable; the attempt already said so.
        return PreemptionSearch(done=PreemptionResult())
    potential = nodes_where_preemption_might_help(unresolvable, snapshot)
    if not potential:
        return PreemptionSearch(
            done=PreemptionResult(
                nominated_pods_to_clear=(pod,),
                message=_preemption_message(
                    num_nodes, Counter({MSG_PREEMPTION_NOT_HELPFUL: num_nodes})
                ),
            )
        )
    if budgets is None:
        budgets = disruption_budgets(snapshot)
    units = PreemptionUnits(snapshot)
    candidates, unfit = select_nodes_for_preemption(
        pod, snapshot, (info.name for info in potential), fits, budgets, spared=spared, units=units
    )
    return PreemptionSearch(
        candidates=candidates, unfit=unfit, potential=len(potential), units=units
    )


def finish_preemption(
    pod: PodInfo,
    snapshot: Snapshot,
    search: PreemptionSearch,
    *,
    nominated: NominatedPods | None = None,
) -> PreemptionResult:
    """The second half of :func:`preempt`: ``pickOneNodeForPreemption`` among the (possibly
    narrowed) candidates, and the lower-priority nominations to clear there."""
    if search.done is not None:
        return search.done
    node = pick_one_node_for_preemption(search.candidates)
    if node is None:
        reasons: Counter[str] = Counter()
        for why_not in search.unfit.values():
            reasons.update(why_not)
        num_nodes = len(snapshot)
        reasons[MSG_PREEMPTION_NOT_HELPFUL] += num_nodes - search.potential
        return PreemptionResult(message=_preemption_message(num_nodes, +reasons))
    chosen = search.candidates[node]
    return PreemptionResult(
        node=node,
        victims=chosen.pods,
        num_pdb_violations=chosen.num_pdb_violations,
        nominated_pods_to_clear=tuple(lower_priority_nominated_pods(pod, node, nominated)),
    )


def preempt(
    pod: PodInfo,
    snapshot: Snapshot,
    unresolvable: Collection[str],
    fits: FitCheck,
    *,
    nominated: NominatedPods | None = None,
    budgets: Sequence[DisruptionBudget] | None = None,
) -> PreemptionResult:
    """v1.14 ``Preempt``: after ``pod`` fit nowhere, find a node where evicting lower-priority
    pods makes room, and the pods to evict (:func:`search_preemption`, then
    :func:`finish_preemption`; extenders with a preempt verb narrow the candidates in between,
    actors/cycle/extenders).

    Uses the attempt's own snapshot, as v1.14 does (so a node found without evictions is one
    the attempt saw full). ``snapshot`` is not changed.

    Args:
        pod: the preemptor, whose attempt ended in a FitError (not a predicate error).
        snapshot: the snapshot the attempt filtered.
        unresolvable: the nodes that failed that attempt unresolvably
            (``ScheduleResult.unresolvable``).
        fits: the predicate check (:class:`PredicateFitCheck` with the scheduler's filters
            and ``nominated``, by default).
        nominated: the nominated pods (for the pods whose nomination to clear).
        budgets: the disruption budgets; None: :func:`disruption_budgets` over the snapshot's
            pods (pass ``disruption_budgets(snapshot, pending)`` to count pending pods too).

    A node is evaluated only when it is not in ``unresolvable``; the failing
    ``preemption:`` message counts, per node, "Preemption is not helpful for scheduling"
    (unresolvable), "No preemption victims found for incoming pod" (no lower-priority pod
    there) or the reasons the pod still fails with once every lower-priority pod is gone.
    """
    search = search_preemption(pod, snapshot, unresolvable, fits, budgets=budgets)
    return finish_preemption(pod, snapshot, search, nominated=nominated)


def fit_error_with_preemption(fit_message: str, result: PreemptionResult) -> str:
    """The FitError text with the preemption part when preemption found no node: the filter's
    message, a space, then ``result.message`` (framework/types.go ``FitError.Error``, v1.28+).
    """
    if result.node is not None or not result.message:
        return fit_message
    return f"{fit_message} {result.message}"


# --------------------------------------------------------------------------- pod groups


def same_group(members: Iterable[PodInfo]) -> Spared:
    """The pods a pod group's preemption spares (issue 24): its own members (those already
    bound included), whatever their priority. Other gangs are victims whole or not at all
    (:class:`PreemptionUnits`), the pods of ``basic`` groups ordinary pods."""
    keys = {key for m in members if (key := pod_group_key(m.pod)) is not None}

    def spared(pod: PodInfo) -> bool:
        return bool(keys) and pod_group_key(pod.pod) in keys

    return spared


def with_whole_gangs(victims: Victims, units: PreemptionUnits | None) -> Victims:
    """``victims`` with every member of each placed gang one of them belongs to, most
    important first: an extender's preempt verb may hand back part of a gang, which would leave
    it partly running. The count of PDB violations stays the extender's."""
    if units is None:
        return victims
    have = {p.key for p in victims.pods}
    gangs: dict[str, PlacedGang] = {}
    for p in victims.pods:
        gang = units.gang_of(p)
        if gang is not None:
            gangs[gang.key] = gang
    added = [m for gang in gangs.values() for _, m in gang.members if m.key not in have]
    if not added:
        return victims
    return Victims(
        tuple(sorted((*victims.pods, *added), key=_importance)), victims.num_pdb_violations
    )


def lowest_evictable_priority(
    snapshot: Snapshot, spared: Spared | None = None, *, below: int | None = None
) -> int | None:
    """The lowest priority among the pods on ``snapshot``'s nodes that ``spared`` does not
    spare (None: no such pod): a preemptor of that priority or below finds no victim on any
    node. ``below``: only pods of a lower priority count (a preemptor's: the others can never
    be its victims, and are not asked whether they are spared)."""
    lowest: int | None = None
    for info in snapshot.node_infos:
        for p in info.pods:
            if below is not None and p.priority >= below:
                continue
            if (lowest is None or p.priority < lowest) and (spared is None or not spared(p)):
                lowest = p.priority
    return lowest


def without_victims_anywhere(
    pod: PodInfo, snapshot: Snapshot, unresolvable: Collection[str]
) -> PreemptionResult:
    """What :func:`preempt` answers for a pod that finds no victim on any node (no pod of a
    lower priority runs, or only spared ones), without a fit check per node: not eligible, or
    ``preemption: 0/N nodes are available: U Preemption is not helpful for scheduling, V No
    preemption victims found for incoming pod.`` (every node not in ``unresolvable`` has no
    victim; :func:`select_victims_on_node` would check that the pod still does not fit there,
    which the attempt that failed already said)."""
    eligible, why = pod_eligible_to_preempt_others(pod, snapshot)
    if not eligible:
        return PreemptionResult(message=PREEMPTION_PREFIX + why)
    num_nodes = len(snapshot)
    if num_nodes == 0:
        return PreemptionResult()
    hopeless = sum(1 for info in snapshot.node_infos if info.name in unresolvable)
    reasons = Counter({MSG_PREEMPTION_NOT_HELPFUL: hopeless, MSG_NO_VICTIMS: num_nodes - hopeless})
    return PreemptionResult(message=_preemption_message(num_nodes, +reasons))


def without_victims(
    snapshot: Snapshot, before: dict[str, NodeInfo], node: str, victims: Iterable[PodInfo]
) -> None:
    """Take ``victims`` off the nodes they run on in ``snapshot`` (``spec.nodeName``, else
    ``node``; a placed gang's members are on several), a changed clone of each swapped in, as
    preemption evaluates a node. ``before`` keeps each node's NodeInfo before its first
    change."""
    by_node: dict[str, list[PodInfo]] = defaultdict(list)
    for victim in victims:
        by_node[victim.pod.spec.node_name or node].append(victim)
    for name, pods in by_node.items():
        was = snapshot.by_name[name]
        before.setdefault(name, was)
        info = was.clone()
        for victim in pods:
            info.remove_pod(victim)
        snapshot.replace_node_info(info)


def spend_budgets(
    budgets: Sequence[DisruptionBudget], victims: Iterable[PodInfo]
) -> list[DisruptionBudget]:
    """``budgets`` once ``victims`` are evicted: each budget's allowed disruptions less the
    victims it covers. A pod group evicts for several members at once, so each member's
    victims are chosen against the budgets the earlier members' victims left (v1.14 preemption
    reads ``disruptionsAllowed`` as given for one pod; later versions decrement it per victim
    too)."""
    chosen = list(victims)
    return [
        dataclasses.replace(b, allowed=b.allowed - sum(1 for v in chosen if b.covers(v)))
        if any(b.covers(v) for v in chosen)
        else b
        for b in budgets
    ]
