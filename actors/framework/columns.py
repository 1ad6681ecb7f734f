"""Node columns: one numpy row per node, in node-tree order, for the vector predicates/priorities.

The reference truth is the list of :class:`NodeInfo`; the columns are a derived view kept in
step with it row by row (``update_row`` costs a few microseconds). Vector forms of predicates
and priorities read only these arrays, so a pod costs a handful of numpy operations over all
nodes instead of a Python loop per node.

Columns (all of length ``n``, row ``i`` is ``node_infos[i]``):

==========================  ================================================================
``alloc_milli_cpu`` ...     allocatable cpu (millicores), memory, ephemeral storage, pods
``req_milli_cpu`` ...       requested cpu, memory, ephemeral storage by the node's pods
``pod_count``               number of pods on the node
``nz_milli_cpu``/``nz_memory``  the non-zero requests the resource priorities use
``unschedulable``           ``spec.unschedulable``
``not_ready`` ...           the node conditions CheckNodeCondition and the pressure
                            predicates read (see ``_CONDITION_COLUMNS``)
``has_node``                False for a row whose Node object is unknown
``duplicate_conditions``    True where the node lists a condition type of
                            ``_CONDITION_COLUMNS`` more than once: the boolean condition
                            columns cannot reproduce Kubernetes' per-condition walk there,
                            so vector forms re-check those rows with their scalar form
``network_before_ready``    True where NetworkUnavailable is listed before Ready (the order
                            in which CheckNodeCondition reports the two)
``has_used_ports``          True where the node's pods hold host ports (PodFitsHostPorts)
``taint_set``               an id into ``taint_sets`` (distinct taint lists)
==========================  ================================================================

Scalar (extended) resources and label values are built on demand per name/key and cached
until a row changes them; so are annotation values (``annotation(key)``) and per-image sizes
(``image_sizes(name)``), dropped with the label cache when a row's Node object changes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from podium.actors.framework.nodeinfo import NodeInfo
from podium.protocol.objects import Taint

__all__ = ["NodeColumns"]

I64 = np.int64
_INT64_MAX = 2**63 - 1
_EPOCHS = itertools.count(1)

JOURNAL = 4096
"""Row stamps kept for :meth:`NodeColumns.changed_since` (past it, the older half goes)."""

# column name -> (condition type, the status that makes the flag True, or "!" + the status that
# keeps it False: the flag is set when the condition is present with any other status).
_CONDITION_COLUMNS: dict[str, tuple[str, str]] = {
    "not_ready": ("Ready", "!True"),
    "out_of_disk": ("OutOfDisk", "!False"),
    "network_unavailable": ("NetworkUnavailable", "!False"),
    "memory_pressure": ("MemoryPressure", "True"),
    "disk_pressure": ("DiskPressure", "True"),
    "pid_pressure": ("PIDPressure", "True"),
}


def _condition_quirks(info: NodeInfo) -> tuple[bool, bool]:
    """(a tracked condition type is listed twice, NetworkUnavailable is listed before Ready)."""
    if info.node is None:
        return False, False
    tracked = {ctype for ctype, _ in _CONDITION_COLUMNS.values()}
    seen: dict[str, int] = {}
    duplicate = False
    for index, cond in enumerate(info.node.status.conditions):
        if cond.type in tracked:
            duplicate = duplicate or cond.type in seen
            seen.setdefault(cond.type, index)
    network, ready = seen.get("NetworkUnavailable"), seen.get("Ready")
    return duplicate, network is not None and ready is not None and network < ready


def _condition_flags(info: NodeInfo) -> dict[str, bool]:
    flags = dict.fromkeys(_CONDITION_COLUMNS, False)
    if info.node is None:
        return flags
    for cond in info.node.status.conditions:
        for col, (ctype, want) in _CONDITION_COLUMNS.items():
            if cond.type != ctype:
                continue
            if want.startswith("!"):
                flags[col] = flags[col] or cond.status != want[1:]
            else:
                flags[col] = flags[col] or cond.status == want
    return flags


def _codes(values: Iterable[str | None], n: int) -> tuple[npt.NDArray[np.int32], dict[str, int]]:
    """``n`` values as integer codes in order of first appearance (-1 for None), and the table
    from value to code."""
    vocab: dict[str, int] = {}
    codes = np.full(n, -1, dtype=np.int32)
    for i, v in enumerate(values):
        if v is not None:
            code = vocab.get(v)
            if code is None:
                code = vocab[v] = len(vocab)
            codes[i] = code
    return codes, vocab


class NodeColumns:
    """Numpy columns over a list of NodeInfo (see the module docstring)."""

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self.infos = list(infos)
        n = len(self.infos)
        self.n = n
        # Change tracking for equivalence classes: a fresh epoch per set of rows, a version
        # bumped by every update_row and stamped on the row it changed.
        self.epoch = next(_EPOCHS)
        self.version = 0
        self.row_version = np.zeros(n, dtype=np.int64)
        # The row each version stamped, from version ``_journal_base + 1`` on (the last
        # JOURNAL of them): the rows changed since a recent version without a scan of
        # ``row_version``.
        self._journal: list[int] = []
        self._journal_base = 0
        self.names = [i.name for i in self.infos]
        self.index = {name: i for i, name in enumerate(self.names)}

        def z() -> npt.NDArray[np.int64]:
            return np.zeros(n, dtype=I64)

        self.alloc_milli_cpu, self.alloc_memory, self.alloc_ephemeral, self.alloc_pods = (
            z(),
            z(),
            z(),
            z(),
        )
        self.req_milli_cpu, self.req_memory, self.req_ephemeral, self.pod_count = z(), z(), z(), z()
        self.nz_milli_cpu, self.nz_memory = z(), z()
        self.unschedulable = np.zeros(n, dtype=bool)
        self.has_node = np.zeros(n, dtype=bool)
        self.has_used_ports = np.zeros(n, dtype=bool)
        self.not_ready = np.zeros(n, dtype=bool)
        self.out_of_disk = np.zeros(n, dtype=bool)
        self.network_unavailable = np.zeros(n, dtype=bool)
        self.memory_pressure = np.zeros(n, dtype=bool)
        self.disk_pressure = np.zeros(n, dtype=bool)
        self.pid_pressure = np.zeros(n, dtype=bool)
        self.duplicate_conditions = np.zeros(n, dtype=bool)
        self.network_before_ready = np.zeros(n, dtype=bool)
        self.taint_set = np.zeros(n, dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        self._taint_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self._scalar: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
        self._labels: dict[str, tuple[npt.NDArray[np.int32], dict[str, int]]] = {}
        self._annotations: dict[str, tuple[npt.NDArray[np.int32], dict[str, int]]] = {}
        self._image_sizes: dict[str, npt.NDArray[np.int64]] = {}
        for i, info in enumerate(self.infos):
            self._fill(i, info)

    # ------------------------------------------------------------------ rows

    def _fill(self, i: int, info: NodeInfo) -> None:
        self._fill_pods(i, info)
        a = info.allocatable
        self.alloc_milli_cpu[i] = a.milli_cpu
        self.alloc_memory[i] = a.memory
        self.alloc_ephemeral[i] = a.ephemeral_storage
        self.alloc_pods[i] = a.allowed_pod_number
        node = info.node
        self.has_node[i] = node is not None
        self.unschedulable[i] = node is not None and node.spec.unschedulable
        for col, flag in _condition_flags(info).items():
            getattr(self, col)[i] = flag
        self.duplicate_conditions[i], self.network_before_ready[i] = _condition_quirks(info)
        taints = tuple(node.spec.taints) if node is not None else ()
        tid = self._taint_ids.get(taints)
        if tid is None:
            tid = self._taint_ids[taints] = len(self.taint_sets)
            self.taint_sets.append(taints)
        self.taint_set[i] = tid

    def _fill_pods(self, i: int, info: NodeInfo) -> None:
        """The columns that follow the node's pods (the others follow its Node object)."""
        r = info.requested
        # Sums over a node's pods may pass int64 (each quantity saturates there alone): they
        # saturate too, instead of raising OverflowError for every attempt on the cluster.
        self.req_milli_cpu[i] = min(r.milli_cpu, _INT64_MAX)
        self.req_memory[i] = min(r.memory, _INT64_MAX)
        self.req_ephemeral[i] = min(r.ephemeral_storage, _INT64_MAX)
        self.pod_count[i] = len(info.pods)
        self.nz_milli_cpu[i] = min(info.non_zero_milli_cpu, _INT64_MAX)
        self.nz_memory[i] = min(info.non_zero_memory, _INT64_MAX)
        self.has_used_ports[i] = bool(info.used_ports)

    def update_row(
        self, i: int, info: NodeInfo, *, labels_changed: bool = True, pods_only: bool = False
    ) -> None:
        """Refresh row ``i`` from ``info`` (after a pod was added/removed or the node changed).

        ``pods_only``: ``info`` holds the same Node object as the row had (only its pods
        changed, as in a fold or a binding), so the columns that follow the Node object are
        left as they are.
        """
        self.version += 1
        self.row_version[i] = self.version
        journal = self._journal
        journal.append(i)
        if len(journal) > JOURNAL:
            dropped = len(journal) - JOURNAL // 2
            del journal[:dropped]
            self._journal_base += dropped
        self.infos[i] = info
        if pods_only:
            self._fill_pods(i, info)
        else:
            self._fill(i, info)
        for name, (alloc, req) in self._scalar.items():
            alloc[i] = info.allocatable.scalar.get(name, 0)
            req[i] = min(info.requested.scalar.get(name, 0), _INT64_MAX)
        if labels_changed and self._labels:
            self._labels.clear()
        if labels_changed:
            self._annotations.clear()
            self._image_sizes.clear()

    def changed_since(self, version: int) -> list[int]:
        """The rows stamped after ``version`` (``row_version > version``), ascending: from
        the journal in O(stamps since) when ``version`` is recent, else by a scan of
        ``row_version``."""
        if version >= self.version:
            return []
        if version >= self._journal_base:
            return sorted(set(self._journal[version - self._journal_base :]))
        return np.flatnonzero(self.row_version > version).tolist()

    def replace_row(self, i: int, info: NodeInfo) -> None:
        """Point row ``i`` at ``info``, which holds what every column and every predicate and
        priority reads of the row's NodeInfo
        (:func:`~podium.actors.framework.nodeinfo.same_for_scheduling`): no column changes
        and the row is not stamped (``row_version``), so verdicts made on it stay valid."""
        self.infos[i] = info

    # ------------------------------------------------------------------ on-demand columns

    def scalar(self, name: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(allocatable, requested) of an extended/scalar resource, 0 where absent."""
        cols = self._scalar.get(name)
        if cols is None:
            alloc = np.fromiter(
                (i.allocatable.scalar.get(name, 0) for i in self.infos), I64, self.n
            )
            req = np.fromiter(
                (min(i.requested.scalar.get(name, 0), _INT64_MAX) for i in self.infos), I64, self.n
            )
            cols = self._scalar[name] = (alloc, req)
        return cols

    def label(self, key: str) -> tuple[npt.NDArray[np.int32], dict[str, int]]:
        """The values of label ``key`` as integer codes (-1 where absent) and the code table."""
        cached = self._labels.get(key)
        if cached is None:
            values = (info.labels.get(key) for info in self.infos)
            cached = self._labels[key] = _codes(values, self.n)
        return cached

    def annotation(self, key: str) -> tuple[npt.NDArray[np.int32], dict[str, int]]:
        """The values of node annotation ``key`` as integer codes (-1 where absent) and the table."""
        cached = self._annotations.get(key)
        if cached is None:
            values = (
                info.node.metadata.annotations.get(key) if info.node is not None else None
                for info in self.infos
            )
            cached = self._annotations[key] = _codes(values, self.n)
        return cached

    def image_sizes(self, name: str) -> npt.NDArray[np.int64]:
        """Per row, the size in bytes of the node's first image listed under ``name`` (-1 if none)."""
        cached = self._image_sizes.get(name)
        if cached is None:
            cached = np.full(self.n, -1, dtype=I64)
            for i, info in enumerate(self.infos):
                if info.node is None:
                    continue
                for image in info.node.status.images:
                    if name in image.names:
                        cached[i] = image.size_bytes
                        break
            self._image_sizes[name] = cached
        return cached
