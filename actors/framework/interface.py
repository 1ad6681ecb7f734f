"""The plugin framework: Code, Status, CycleState and the predicate/priority Protocols.

Kubernetes counterparts: pkg/scheduler/algorithm/predicates (FitPredicate, PredicateMetadata),
pkg/scheduler/algorithm/priorities (PriorityMapFunction/ReduceFunction) at v1.14, written in the
shape of the later framework (pkg/scheduler/framework/interface.go).

A predicate is a :class:`FilterPlugin`. Per pod, the scheduler calls ``pre_filter`` once (the
v1.14 "predicate metadata"), then ``filter`` per node. A plugin that can answer for every node
at once over the numpy node columns also implements ``filter_columns`` (a
:class:`VectorFilterPlugin`); both forms must give the same answer and the same reasons, and
the tests hold them to it.

A priority is a :class:`ScorePlugin`: ``pre_score`` once per pod, ``score`` (the map step)
per feasible node, ``normalize`` (the reduce step) once over all feasible nodes, giving
integers in [0, MAX_PRIORITY]. ``score_columns`` is the vector form of the map step.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from podium.protocol.errors import PodiumError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from podium.actors.framework.columns import NodeColumns
    from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
    from podium.actors.framework.snapshot import Snapshot

__all__ = [
    "MAX_PRIORITY",
    "NO_NODES_AVAILABLE",
    "SKIP",
    "SUCCESS",
    "ArrayNormalizePlugin",
    "Code",
    "CycleState",
    "FilterPlugin",
    "PluginArgs",
    "PredicateError",
    "ReasonMasks",
    "ScorePlugin",
    "Status",
    "VectorFilterPlugin",
    "VectorScorePlugin",
    "fit_error_message",
    "unschedulable",
]

MAX_PRIORITY = 10
"""Kubernetes v1.14 ``schedulerapi.MaxPriority``: every normalised score lies in [0, 10]."""


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


class _Skip:
    """Returned by ``pre_filter``/``pre_score`` when the plugin has nothing to do for this pod."""

    def __repr__(self) -> str:
        return "SKIP"


SKIP = _Skip()
"""A ``pre_filter`` result meaning "this predicate passes on every node for this pod";
a ``pre_score`` result meaning "this priority gives every node the same map score (0)"."""


@dataclass(slots=True)
class CycleState:
    """Per-pod data shared by the calls of one scheduling attempt, keyed by plugin name."""

    data: dict[str, object] = field(default_factory=dict)


# (reason, fail_mask) pairs in the order the scalar form appends its reasons. A node fails the
# predicate when any mask is True at its row; its reasons are the masks True at its row, in order.
ReasonMasks = list[tuple[str, "npt.NDArray[np.bool_]"]]


@runtime_checkable
class FilterPlugin(Protocol):
    """A predicate (v1.14 FitPredicate).

    A predicate whose answer for a node depends only on the pod's spec and that node's
    NodeInfo sets the class attribute ``node_local = True``: pods with the same spec then share
    its verdicts (:mod:`podium.actors.core.equivalence`).
    """

    name: str

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> object:
        """Compute what ``filter`` needs for this pod (v1.14 predicate metadata).

        Returns:
            Anything, handed back to ``filter`` as ``meta``; or :data:`SKIP` when the predicate
            passes on every node for this pod (no volumes, no affinity, ...).

        Raises:
            PredicateError: the predicate cannot be evaluated (the attempt's result is error).
        """
        ...

    def filter(self, pod: PodInfo, meta: object, node: NodeInfo) -> Status:
        """The scalar reference form: can ``pod`` go on ``node``?"""
        ...


@runtime_checkable
class VectorFilterPlugin(FilterPlugin, Protocol):
    """A predicate that can also answer for every node at once."""

    def filter_columns(self, pod: PodInfo, meta: object, cols: NodeColumns) -> ReasonMasks:
        """For every row of ``cols``: the reasons it fails, as (reason, mask) pairs.

        Must agree with :meth:`filter` on every row, reasons and their order included.
        """
        ...


@runtime_checkable
class ScorePlugin(Protocol):
    """A priority (v1.14 PriorityConfig with Map and Reduce)."""

    name: str

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> object:
        """Compute what ``score`` needs for this pod over the feasible ``nodes``."""
        ...

    def score(self, pod: PodInfo, meta: object, node: NodeInfo) -> int:
        """The map step: this node's raw score."""
        ...

    def normalize(
        self, pod: PodInfo, meta: object, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        """The reduce step: raw scores (one per node, in ``nodes`` order) to [0, 10]."""
        ...


@runtime_checkable
class VectorScorePlugin(ScorePlugin, Protocol):
    """A priority whose map step can run over the node columns."""

    def score_columns(
        self, pod: PodInfo, meta: object, cols: NodeColumns, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64]:
        """Raw map scores for ``rows`` of ``cols``; must equal :meth:`score` row by row."""
        ...


@runtime_checkable
class ArrayNormalizePlugin(Protocol):
    """A vector priority whose reduce step also runs on an array of map scores."""

    def normalize_columns(
        self,
        pod: PodInfo,
        meta: object,
        nodes: Sequence[NodeInfo],
        scores: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        """The normalised scores; must equal :meth:`ScorePlugin.normalize` element by element."""
        ...


class PredicateError(PodiumError):
    """A predicate could not be evaluated; the attempt fails with result=error and this text."""


def reasons_of(masks: Sequence[tuple[str, npt.NDArray[np.bool_]]], row: int) -> tuple[str, ...]:
    """The reasons a row fails, from a :data:`ReasonMasks` list."""
    return tuple(reason for reason, mask in masks if mask[row])


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
    """

    name: str
    labels: tuple[str, ...] = ()
    presence: bool = False
    label: str = ""
    hard_pod_affinity_symmetric_weight: int = 10


NO_NODES_AVAILABLE = "no nodes available to schedule pods"
"""Kubernetes' ErrNoNodesAvailable text (core/generic_scheduler.go@v1.14)."""


def fit_error_message(num_all_nodes: int, reasons: Counter[str]) -> str:
    """Kubernetes' FitError text: ``0/5 nodes are available: 2 Insufficient cpu, ...``.

    Each reason is counted over the nodes, formatted ``"<count> <reason>"``, and the entries
    are sorted as strings (core/generic_scheduler.go@v1.14 FitError.Error).
    """
    if num_all_nodes == 0:
        return NO_NODES_AVAILABLE
    entries = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(entries)}."
