"""The plugin framework: Code, Status, the predicate/priority Protocols and the rules that run them.

Kubernetes counterparts: pkg/scheduler/algorithm/predicates (FitPredicate, PredicateMetadata),
pkg/scheduler/algorithm/priorities (PriorityMapFunction/ReduceFunction) at v1.14, written in the
shape of the later framework (pkg/scheduler/framework/interface.go, whose ``runFilterPlugin``
:func:`run_filter` mirrors).

A predicate is a :class:`FilterPlugin` generic over its metadata type ``M`` (a plugin declares
``class PodMatchNodeSelector(VectorFilterPlugin[NodeConstraints])``). Per pod, the scheduler
calls ``pre_filter`` once (the v1.14 "predicate metadata"), then ``filter`` per node. A plugin
that can answer for every node at once over the numpy node columns also implements
``filter_columns`` (a :class:`VectorFilterPlugin`); both forms must give the same answer and
the same reasons, and the tests hold them to it.

A priority is a :class:`ScorePlugin`: ``pre_score`` once per pod, ``score`` (the map step)
per feasible node, ``normalize`` (the reduce step) once over all feasible nodes, giving
integers in [0, MAX_PRIORITY]. ``score_columns`` is the vector form of the map step.

The contract, which the framework keeps (every caller goes through :func:`run_filter`,
:func:`run_filter_columns`, :func:`run_score` and :func:`run_score_columns`):

- ``pre_filter``/``pre_score`` answer ``M`` or :data:`SKIP`. After SKIP, ``filter`` and
  ``filter_columns`` are not called (the predicate passes on every node), nor are ``score``
  and ``score_columns`` (every map score is 0); ``normalize`` and ``normalize_columns`` are,
  and are handed SKIP as their ``meta``.
- Otherwise ``filter``/``score`` and their vector forms get exactly what ``pre_filter``/
  ``pre_score`` answered for this pod: never ``None`` in its place, never another pod's.
- A row without a Node object (a NodeInfo whose ``node`` is None: pods name a node the cache
  does not know, v1.14's "node not found") is answered by the framework for a predicate that
  declares :attr:`FilterPlugin.missing_node`, without calling it; every other predicate is
  called and judges the row as a node without labels, conditions or taints.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, TypeVar, runtime_checkable

import numpy as np

from podium.protocol.errors import PodiumError

if TYPE_CHECKING:
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "ERR_NODE_NOT_FOUND",
    "ERR_REASON_UNKNOWN_CONDITION",
    "MAX_PRIORITY",
    "NODE_NOT_FOUND",
    "NODE_UNKNOWN_CONDITION",
    "NO_NODES_AVAILABLE",
    "SKIP",
    "SUCCESS",
    "ArrayNormalizePlugin",
    "Code",
    "FilterPlugin",
    "PluginArgs",
    "PredicateError",
    "ReasonMasks",
    "ScorePlugin",
    "Skip",
    "Status",
    "VectorFilterPlugin",
    "VectorScorePlugin",
    "fit_error_message",
    "run_filter",
    "run_filter_columns",
    "run_score",
    "run_score_columns",
    "status_of",
    "unschedulable",
]

MAX_PRIORITY = 10
"""Kubernetes v1.14 ``schedulerapi.MaxPriority``: every normalised score lies in [0, 10]."""

M = TypeVar("M")
"""A plugin's metadata type: what its ``pre_filter``/``pre_score`` hands its other calls."""


class Code(enum.IntEnum):
    """The outcome of one plugin call (framework/interface.go)."""

    SUCCESS = 0
    """The plugin ran and the pod may go on this node."""
    ERROR = 1
    """An internal error: the whole attempt fails with result=error and the status's text."""
    UNSCHEDULABLE = 2
    """The pod does not fit this node; preemption might help."""
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    """The pod does not fit this node and removing pods cannot change that."""


@dataclass(frozen=True, slots=True)
class Status:
    """What a filter said about one node: a code and the reasons, in Kubernetes' words."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS


SUCCESS = Status()


def unschedulable(*reasons: str, resolvable: bool = True) -> Status:
    """A rejection carrying ``reasons`` (verbatim Kubernetes reason strings)."""
    code = Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return Status(code, reasons)


ERR_NODE_NOT_FOUND = "node not found"
"""The error v1.14's predicates return for a NodeInfo without a Node (``fmt.Errorf``)."""

NODE_NOT_FOUND = Status(Code.ERROR, (ERR_NODE_NOT_FOUND,))
"""The :attr:`FilterPlugin.missing_node` of a predicate that reads the Node object."""

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
"""v1.14 ``ErrNodeUnknownCondition`` (predicates/error.go)."""

NODE_UNKNOWN_CONDITION = unschedulable(ERR_REASON_UNKNOWN_CONDITION, resolvable=False)
"""The :attr:`FilterPlugin.missing_node` of CheckNodeCondition, CheckNodeUnschedulable and
PodToleratesNodeTaints: v1.14 rejects a nil node with ``ErrNodeUnknownCondition`` there."""


class Skip(enum.Enum):
    """The type of :data:`SKIP` (one member, so that ``meta is SKIP`` narrows ``M | Skip``)."""

    SKIP = "SKIP"

    def __repr__(self) -> str:
        return "SKIP"


SKIP: Final = Skip.SKIP
"""A ``pre_filter`` result meaning "this predicate passes on every node for this pod";
a ``pre_score`` result meaning "this priority gives every node the same map score (0)"."""


# (reason, fail_mask, code) entries in the order the scalar form appends its reasons. A node
# fails the predicate when any mask is True at its row; its reasons are the masks True at its
# row, in order; its status's code is the highest code among them (UNSCHEDULABLE_AND_UNRESOLVABLE
# when any of them is, as the scalar form's status says: v1.14 ``unresolvablePredicateExists``).
ReasonMasks = list[tuple[str, "npt.NDArray[np.bool_]", "Code"]]


@runtime_checkable
class FilterPlugin(Protocol[M]):
    """A predicate (v1.14 FitPredicate) whose metadata is an ``M``."""

    name: str
    """The name it reports under (a rejection's plugin, the plugin metrics)."""

    node_local: bool = False
    """True when the answer for a node depends only on the pod's spec and that node's
    NodeInfo (not on other nodes, pods elsewhere or cluster objects): pods with the same spec
    then share its verdicts (:mod:`podium.actors.cycle.equivalence`), and its metadata is made
    once per pod however many what-if snapshots preemption checks."""

    missing_node: Status | None = None
    """What the predicate answers for a row without a Node object, or ``None`` when it reads
    only what a NodeInfo keeps without one (its pods, ports, requests) and is called for such a
    row as for any other. :data:`NODE_NOT_FOUND` (v1.14's error) fails the attempt: the scalar
    walk counts it per node, the vector walk fails at once. An unschedulable status gives
    those rows its reasons. Either way ``filter`` and ``filter_columns`` never see such a row."""

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> M | Skip:
        """Compute what ``filter`` needs for this pod (v1.14 predicate metadata).

        Returns:
            The metadata handed to ``filter`` as ``meta``; or :data:`SKIP` when the predicate
            passes on every node for this pod (no volumes, no affinity, ...).

        Raises:
            PredicateError: the predicate cannot be evaluated (the attempt's result is error).
        """
        ...

    def filter(self, pod: PodInfo, meta: M, node: NodeInfo) -> Status:
        """The scalar reference form: can ``pod`` go on ``node``?"""
        ...


@runtime_checkable
class VectorFilterPlugin(FilterPlugin[M], Protocol[M]):
    """A predicate that can also answer for every node at once."""

    def filter_columns(self, pod: PodInfo, meta: M, cols: NodeColumns) -> ReasonMasks:
        """For every row of ``cols``: the reasons it fails, as (reason, mask, code) entries.

        Must agree with :meth:`filter` on every row, reasons, their order and the status's
        code included (rows without a Node object aside, see :attr:`FilterPlugin.missing_node`).
        """
        ...


@runtime_checkable
class ScorePlugin(Protocol[M]):
    """A priority (v1.14 PriorityConfig with Map and Reduce) whose metadata is an ``M``."""

    name: str
    """The name it reports under (explain's scores, the plugin metrics)."""

    node_local: bool = False
    """True when a node's map score depends only on the pod's spec and that node: it is then
    kept per class of pods with the same spec (:class:`~podium.actors.cycle.equivalence.ScoreCache`)."""

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> M | Skip:
        """Compute what ``score`` needs for this pod over the feasible ``nodes``; :data:`SKIP`
        when every node's map score is 0."""
        ...

    def score(self, pod: PodInfo, meta: M, node: NodeInfo) -> int:
        """The map step: this node's raw score."""
        ...

    def normalize(
        self, pod: PodInfo, meta: M | Skip, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        """The reduce step: raw scores (one per node, in ``nodes`` order) to [0, 10]."""
        ...

    def reduces_row_by_row(
        self, pod: PodInfo, meta: M | Skip, scores: npt.NDArray[np.int64]
    ) -> bool:
        """Whether, the map scores of some rows being ``scores``, the reduce step gives each
        of those rows the same score in any window of them (the feasible nodes one attempt
        examines), as it does applied to that row alone, a score that depends on the row's map
        score only: True for no reduce step, or one that reads no other row for such scores
        (all zero after SKIP, say). The map step must read the pod only through its spec and
        ``meta`` (pods of one class share totals while their metadata is equal). It must hold for a set
        of rows whenever it holds for each of its rows: the score stage asks once over every
        feasible row of a class, then for each row that changes (``ScoreStage.run``).

        False (this default) for a reduce step scaled by the window (``NormalizeReduce``'s
        highest score, the spread over the window's zones): each attempt then reduces over
        its own window.
        """
        return False


@runtime_checkable
class VectorScorePlugin(ScorePlugin[M], Protocol[M]):
    """A priority whose map step can run over the node columns."""

    def score_columns(
        self, pod: PodInfo, meta: M, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        """Raw map scores for ``rows`` of ``cols``; must equal :meth:`score` row by row."""
        ...


@runtime_checkable
class ArrayNormalizePlugin(VectorScorePlugin[M], Protocol[M]):
    """A vector priority whose reduce step also runs on an array of map scores."""

    def normalize_columns(
        self,
        pod: PodInfo,
        meta: M | Skip,
        nodes: Sequence[NodeInfo],
        scores: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        """The normalised scores; must equal :meth:`ScorePlugin.normalize` element by element."""
        ...


class PredicateError(PodiumError):
    """A predicate could not be evaluated; the attempt fails with result=error and this text."""


# --------------------------------------------------------------------------- running plugins


def run_filter(plugin: FilterPlugin[M], pod: PodInfo, meta: M | Skip, node: NodeInfo) -> Status:
    """One predicate on one row, as the framework runs it (see the module docstring).

    Args:
        plugin: the predicate.
        pod: the pod being scheduled.
        meta: what ``plugin.pre_filter`` answered for ``pod``.
        node: the row.

    Returns:
        SUCCESS after SKIP; the predicate's :attr:`~FilterPlugin.missing_node` for a row
        without a Node object; else the predicate's own answer.
    """
    if meta is SKIP:
        return SUCCESS
    if node.node is None and plugin.missing_node is not None:
        return plugin.missing_node
    return plugin.filter(pod, meta, node)


def run_filter_columns(
    plugin: VectorFilterPlugin[M], pod: PodInfo, meta: M | Skip, cols: NodeColumns
) -> ReasonMasks:
    """One predicate's vector form over every row, as the framework runs it.

    Raises:
        PredicateError: some row lacks a Node object and the predicate's
            :attr:`~FilterPlugin.missing_node` is an error (its text).
    """
    if meta is SKIP:
        return []
    missing = plugin.missing_node
    if missing is None or cols.has_node.all():
        return plugin.filter_columns(pod, meta, cols)
    if missing.code is Code.ERROR:
        raise PredicateError("; ".join(missing.reasons))
    has_node = cols.has_node
    without = ~has_node
    masks: ReasonMasks = [(reason, without, missing.code) for reason in missing.reasons]
    masks.extend(
        (reason, fails & has_node, code)
        for reason, fails, code in plugin.filter_columns(pod, meta, cols)
    )
    return masks


def run_score(
    plugin: ScorePlugin[M], pod: PodInfo, meta: M | Skip, nodes: Sequence[NodeInfo]
) -> list[int]:
    """One priority's map step over ``nodes``: 0 for every node after SKIP."""
    if meta is SKIP:
        return [0] * len(nodes)
    return [plugin.score(pod, meta, node) for node in nodes]


def run_score_columns(
    plugin: VectorScorePlugin[M],
    pod: PodInfo,
    meta: M | Skip,
    cols: NodeColumns,
    rows: npt.NDArray[np.intp],
) -> npt.NDArray[np.int64]:
    """One priority's vector map step over ``rows``: 0 for every row after SKIP."""
    if meta is SKIP:
        return np.zeros(len(rows), dtype=np.int64)
    return plugin.score_columns(pod, meta, cols, rows)


def status_of(masks: ReasonMasks, row: int) -> Status:
    """The status a row gets, from a :data:`ReasonMasks` list: its reasons, and the highest
    code among them (:data:`SUCCESS` when none is True there)."""
    hit = [(reason, code) for reason, mask, code in masks if mask[row]]
    if not hit:
        return SUCCESS
    return Status(max(code for _, code in hit), tuple(reason for reason, _ in hit))


@dataclass(frozen=True, slots=True)
class PluginArgs:
    """What a policy entry hands a plugin factory.

    Attributes:
        name: the name the plugin reports under: the canonical name, or the user's name for an
            entry that carries an ``argument`` (legacy Policy API).
        labels: ``labelsPresence.labels`` or ``serviceAffinity.labels``.
        presence: ``labelsPresence.presence`` or ``labelPreference.presence``.
        label: ``labelPreference.label`` or ``serviceAntiAffinity.label``.
        hard_pod_affinity_symmetric_weight: the policy's weight (1-100, default 10).
        ignored_extended_resources: extended resources an extender manages with
            ``ignoredByScheduler`` (PodFitsResources does not check them; v1.14
            ``predicateMetadata.ignoredExtendedResources``).
    """

    name: str
    labels: tuple[str, ...] = ()
    presence: bool = False
    label: str = ""
    hard_pod_affinity_symmetric_weight: int = 10
    ignored_extended_resources: frozenset[str] = frozenset()


NO_NODES_AVAILABLE = "no nodes available to schedule pods"
"""Kubernetes' ErrNoNodesAvailable text (core/generic_scheduler.go@v1.14)."""


def fit_error_message(num_all_nodes: int, reasons: Mapping[str, int]) -> str:
    """Kubernetes' FitError text: ``0/5 nodes are available: 2 Insufficient cpu, ...``.

    Each reason is counted over the nodes, formatted ``"<count> <reason>"``, and the entries
    are sorted as strings (core/generic_scheduler.go@v1.14 FitError.Error).
    """
    if num_all_nodes == 0:
        return NO_NODES_AVAILABLE
    entries = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(entries)}."
