"""The store's state machine: every object, the event log and its revisions (sync, sans-IO).

Kubernetes counterpart: the API server's registry over etcd (one revision per change, watch from
a revision, ``410 Gone`` for a compacted one: staging/src/k8s.io/apiserver/pkg/storage/etcd3/
store.go@v1.14), the pod ``binding`` subresource (pkg/registry/core/pod/storage/storage.go@v1.14
``assignPod``: the pod must exist, match the binding's uid and not be bound yet), the Priority
admission plugin (whose rule is store/admission.py's), the volume binder's API updates
(pkg/controller/volume/persistentvolume/scheduler_binder.go@v1.14 ``bindAPIUpdate``) and the
API calls of a preemption (pkg/scheduler/scheduler.go@v1.14 ``preempt``:
``SetNominatedNodeName`` on the preemptor, then ``DeletePod`` per victim with a ``Preempted``
event; here one transaction).

Owns: every object by kind and ``(namespace, name)``; the append-only log of
:class:`~podium.store.mail.Change` (at most ``retention`` kept); the revision; the last
Unschedulable message recorded per pending pod.

Rules (docs/protocol.md, "Messages"; docs/reliability.md):

- A put creates or replaces by kind/namespace/name; a put with only ``generateName`` creates
  an object named generateName + 5 random characters of Kubernetes' alphabet (another draw
  when the name is taken, as the API server's generator). Namespaced kinds get namespace
  ``default`` when it is empty, cluster-scoped kinds namespace ``""``. A create assigns uid and
  creationTimestamp; a replace keeps them. Every change gets its own revision (previous + 1),
  and the changed object's resourceVersion is that revision. A put equal to the stored object
  once the store's own fields are carried over is ``unchanged``: no revision, no change.
- The store's own fields, carried over on a replace that leaves them unset, so that applying
  the same file twice changes nothing: uid, resourceVersion and creationTimestamp (always);
  a pod's ``spec.nodeName``, ``spec.priority``/``spec.preemptionPolicy`` (when its
  priorityClassName is unchanged), its status (when the put has none); a claim's
  ``spec.volumeName`` and binding annotations, a volume's ``spec.claimRef``, and with either
  binding its status (also when the put has one: a dump says Pending or Available); a
  PodDisruptionBudget's and a PodGroup's status (the scheduler writes neither: a put with a
  status stores it, so re-applying a dump is ``unchanged``).
- What the scheduler owns in an existing pod's status is never written by a put, whatever the
  put says: the PodScheduled condition and ``status.nominatedNodeName`` stay the stored ones
  (the API server's pod update keeps the status: pkg/registry/core/pod/strategy.go@v1.14
  ``PrepareForUpdate``), so re-applying what ``kubectl get -o yaml`` printed, with the old
  cluster's Unschedulable message or nomination, is ``unchanged``. The rest of a put's status
  (phase, startTime, other conditions: the kubelet's in Kubernetes) is written. A put that
  itself binds a pending pod sets PodScheduled True (``assignPod``), or its own True one.
  A create stores the status as given (a dump's terminal phase, its nomination).
- Node ``status.allocatable`` defaults to ``status.capacity``.
- A bound pod's spec is immutable; its status, labels and annotations may change. A pod put
  with ``spec.nodeName`` is stored bound as given.
- Pod groups (protocol/gangs.py): a pod names at most one group, of its own namespace, and
  keeps it (``membership_errors``). A PodGroup keeps its policy form (``schedulingPolicy.basic``,
  ``schedulingPolicy.gang`` or ``minMember``), and its size (``gang.minCount``, ``minMember``)
  while any member pod is bound and running. Each refusal names the field.
- Priority admission (store/admission.py) on pod create and on a replace that changes the
  priority fields, with the classes stored or put in the same request. A second globalDefault
  PriorityClass is refused as Kubernetes does.
- One write is atomic: every object is checked first and one :class:`ObjectError` is collected
  per bad object; any error and nothing is written. Deleting a missing object fails the request
  with ``not_found``. Deleting a node leaves its pods.
- Each lone binding of a bind batch stands alone: a refused one changes nothing of its own
  (its volumes included) and the others still commit. The bindings of one pod group
  (``Binding.group``) are one transaction: if any member is refused, none of the group is
  bound (their volumes included), and every member fails, the others naming the one refused.
- An eviction is one transaction: the preemptor must exist with its uid and be unbound, or
  nothing is written; victims gone, re-created or moved since are skipped; the preemptor's
  nomination is written only when it changes.

Object flow of one pod (revisions are those of the changes)::

    put ──▶ Added (pending) ──record_unschedulable──▶ Unschedulable (a message the pod
                 │                                            │       does not already say)
                 └────────────── bind ──▶ Bound ◀─────────────┘
    put with spec.nodeName ──▶ Added (bound as given)
    any state ── delete ──▶ Deleted
    bound ── evict (a victim) ──▶ Preempted (gone, as a delete)
    pending ── evict (the preemptor) ──▶ Modified (status.nominatedNodeName, when it changes)

The actor (store/actor.py, with its durability: store/memory.py keeps nothing, store/sqlite.py
a SQLite file) only receives, calls this core, commits, publishes and replies.
"""

from __future__ import annotations

import bisect
import functools
import math
import os
import random
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal, TypeVar

import msgspec

from podium.protocol.errors import ErrorCode, InvalidObject, PodiumError
from podium.protocol.gangs import membership_errors, pod_group_name
from podium.protocol.labels import label_selector_matches
from podium.protocol.objects import (
    KINDS,
    NAMESPACED_KINDS,
    KubeObject,
    LabelSelector,
    Node,
    ObjectMeta,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    PodGroup,
    PodStatus,
    PriorityClass,
    is_terminal,
    namespace_or_default,
    pod_key,
    scoped_namespace,
)
from podium.protocol.validation import (
    GENERATED_SUFFIX_ALPHABET,
    GENERATED_SUFFIX_LENGTH,
    MAX_GENERATED_NAME_LENGTH,
    SCHEDULING_GATED,
    SCHEDULING_GATED_MESSAGE,
    metadata_errors,
    scheduling_gates_errors,
)
from podium.protocol.wire import EventType, ObjectError, ObjectRef, ObjectStatus
from podium.store.admission import DEFAULT_PRIORITY, admit_pod, check_single_default, known_classes
from podium.store.mail import (
    BindFailure,
    Binding,
    Change,
    Preemptor,
    StoreFailure,
    StoreStats,
    Victim,
)

__all__ = [
    "ANNOTATION_BIND_COMPLETED",
    "ANNOTATION_SELECTED_NODE",
    "KIND_ORDER",
    "StoreCore",
    "StoreRejected",
    "bind_units",
    "group_failures",
]

ANNOTATION_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
"""Set ``"yes"`` on a claim once the store bound it (pv_controller.go@v1.14 annBindCompleted)."""
ANNOTATION_SELECTED_NODE = "volume.kubernetes.io/selected-node"
"""The node a WaitForFirstConsumer claim is to be provisioned for (annSelectedNode)."""

KIND_ORDER: tuple[str, ...] = (
    "Node",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "PriorityClass",
    "PodDisruptionBudget",
    "PodGroup",
    "Pod",
)
"""The order of :meth:`StoreCore.all_objects`: nodes first, pods last (Recovered)."""

Key = tuple[str, str]
"""``(namespace, name)``; namespace ``""`` for cluster-scoped kinds."""

_T = TypeVar("_T", bound=KubeObject)
_Slot = tuple[str, str, str]  # (kind, namespace, name)

_POD_SCHEDULED = "PodScheduled"
_RANDOM = random.Random()
_NAME_ATTEMPTS = 8

assert set(KIND_ORDER) == set(KINDS), "KIND_ORDER must list every kind of protocol.objects"


class StoreRejected(PodiumError):
    """The store refused something, and nothing of it was written.

    A whole request (its reply is :meth:`failure`), or one object or binding of it: a write
    collects its objects' refusals into one of the request (``errors``, one per object, each
    with the object's ``path``); a refused binding becomes a
    :class:`~podium.store.mail.BindFailure` and the others of its batch still commit (but
    for the other members of its pod group, which fail with it).

    Args:
        code: the ErrorReply code (invalid, not_found, conflict, gone).
        message: one line naming the object(s) and the rule.
        errors: one entry per rejected object of a write.
        revision: for ``gone``, the oldest revision still kept.
        path: for one object's refusal, the field that breaks the rule (msgspec style).
        leader: for ``not_leader``, the address of the replica that leads.
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        errors: Sequence[ObjectError] = (),
        revision: int | None = None,
        path: str | None = None,
        leader: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.errors = list(errors)
        self.revision = revision
        self.path = path
        self.leader = leader

    def failure(self) -> StoreFailure:
        """The :class:`~podium.store.mail.StoreFailure` reply carrying this rejection."""
        return StoreFailure(
            code=self.code,
            message=self.message,
            errors=self.errors,
            revision=self.revision,
            leader=self.leader,
        )


def _utc(seconds: float) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes writes metav1.Time.

    The text is made once a second (a pod's creation and its binding each take one: ~5 us of
    gmtime and strftime, ~10 us a pod, docs/benchmarks.md "half the machinery")."""
    return _utc_second(math.floor(seconds))  # gmtime's own rounding of a float


@functools.lru_cache(maxsize=4)
def _utc_second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))


_UID_POOL_BYTES = 16 * 256
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


class _RandomUids:
    """Random (version 4) UUIDs in ``uuid.uuid4``'s text, from the same source
    (``os.urandom``) read 256 uids at a time: ``str(uuid.uuid4())`` took ~12 us, a system
    call and a ``uuid.UUID`` a created object; this takes ~3 us. One pool per StoreCore (the
    store's task only)."""

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def __call__(self) -> str:
        at = self._at
        if at >= len(self._pool):
            self._pool, at = os.urandom(_UID_POOL_BYTES), 0
        self._at = at + 16
        value = int.from_bytes(self._pool[at : at + 16], "big") & _UUID4_CLEAR | _UUID4_SET
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _new_suffix() -> str:
    return "".join(_RANDOM.choices(GENERATED_SUFFIX_ALPHABET, k=GENERATED_SUFFIX_LENGTH))


def _ref(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _with_meta(obj: _T, **fields: object) -> _T:
    meta: ObjectMeta = msgspec.structs.replace(obj.metadata, **fields)
    return msgspec.structs.replace(obj, metadata=meta)


def _claim_key(claim: str, default_namespace: str) -> Key:
    namespace, sep, name = claim.partition("/")
    return (namespace, name) if sep else (default_namespace, claim)


def bind_units(bindings: Sequence[Binding]) -> list[list[Binding]]:
    """The bindings of a batch as they stand or fall: each lone binding alone, the bindings
    of one pod group together (at the place of the group's first member, in their order)."""
    units: list[list[Binding]] = []
    groups: dict[str, list[Binding]] = {}
    for binding in bindings:
        if not binding.group:
            units.append([binding])
        elif (members := groups.get(binding.group)) is not None:
            members.append(binding)
        else:
            groups[binding.group] = members = [binding]
            units.append(members)
    return units


def group_failures(
    unit: Sequence[Binding], cause: Binding, code: ErrorCode, message: str
) -> list[BindFailure]:
    """Every binding of ``unit`` refused because ``cause`` was (``message``, ``code``): the
    cause with its own message, each other member of its pod group with one naming the group
    and the cause."""
    who = f"{namespace_or_default(cause.namespace)}/{cause.name}"
    because = f"pod group {cause.group}: not bound, because {who} could not be: {message}"
    return [
        BindFailure(binding=b, code=code, message=message if b is cause else because) for b in unit
    ]


class _Transaction:
    """The staged effect of one write, one binding or one pod group's bindings over the
    committed objects.

    Revisions are handed out in order from the committed revision; nothing touches the core
    until :meth:`StoreCore._commit`, so an abandoned transaction leaves no trace.
    """

    def __init__(self, core: StoreCore) -> None:
        self._core = core
        self.staged: dict[_Slot, KubeObject | None] = {}
        self.changes: list[Change] = []

    def get(self, kind: str, key: Key) -> KubeObject | None:
        slot = (kind, *key)
        if slot in self.staged:
            return self.staged[slot]
        return self._core._objects[kind].get(key)

    def next_revision(self) -> int:
        return self._core._revision + len(self.changes) + 1

    def record(
        self,
        type_: EventType,
        obj: KubeObject,
        old: KubeObject | None,
        *,
        deleted: bool = False,
        node: str = "",
        message: str = "",
        metadata: Mapping[str, object] | None = None,
    ) -> KubeObject:
        """Stage ``obj`` (or its deletion) with the next revision; returns it as stored.
        ``metadata``: other metadata fields to set with the resource version (one copy)."""
        revision = self.next_revision()
        obj = _with_meta(obj, resource_version=str(revision), **(metadata or {}))
        kind = type(obj).__name__
        meta = obj.metadata
        self.staged[(kind, meta.namespace, meta.name)] = None if deleted else obj
        self.changes.append(
            Change(
                revision=revision,
                type=type_,
                kind=kind,
                namespace=meta.namespace,
                name=meta.name,
                object=obj,
                old=old,
                node=node,
                message=message,
            )
        )
        return obj


class StoreCore:
    """Every object in memory, the event log and the revision (see the module docstring).

    Args:
        retention: how many changes the log keeps (older ones answer ``gone``).
        wall_clock: seconds since the epoch, for creationTimestamp and condition times.
        new_uid: a fresh uid for each created object (default: a random version-4 UUID).
        new_suffix: the random suffix of a generated name (5 characters of Kubernetes'
            alphabet, as util/rand ``String(5)``).
    """

    def __init__(
        self,
        *,
        retention: int = 1_000_000,
        wall_clock: Callable[[], float] = time.time,
        new_uid: Callable[[], str] | None = None,
        new_suffix: Callable[[], str] = _new_suffix,
    ) -> None:
        if retention < 1:
            raise ValueError(f"retention must be at least 1 change, not {retention}")
        self._wall_clock = wall_clock
        self._new_uid = _RandomUids() if new_uid is None else new_uid
        self._new_suffix = new_suffix
        self._objects: dict[str, dict[Key, KubeObject]] = {kind: {} for kind in KIND_ORDER}
        # A kind's keys in order, for lists; dropped when a key comes or goes (not when an
        # object changes: bindings do not touch it).
        self._sorted_keys: dict[str, list[Key]] = {}
        self._log: deque[Change] = deque(maxlen=retention)
        self._revision = 0

    # ----------------------------------------------------------------------- state

    @property
    def revision(self) -> int:
        """The revision of the last committed change (0 before any)."""
        return self._revision

    @property
    def oldest_revision(self) -> int:
        """The revision of the oldest change kept (the current revision when none is kept)."""
        return self._log[0].revision if self._log else self._revision

    def get(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        """The stored object, or None (``namespace`` as stored: ``""`` for cluster kinds)."""
        return self._objects[kind].get((namespace, name))

    def restore(self, revision: int, objects: Iterable[KubeObject]) -> None:
        """Load a recovered state (the SQLite store's, at start) into an empty core.

        The log starts empty: the durable log stays on disk, read there by a watcher resuming
        from before the restart.

        Args:
            revision: the last committed revision.
            objects: every object, as stored (metadata already assigned).
        """
        if self._revision or any(self._objects.values()):
            raise ValueError("restore needs an empty store core")
        for obj in objects:
            kind = type(obj).__name__
            self._objects[kind][(obj.metadata.namespace, obj.metadata.name)] = obj
            self._sorted_keys.pop(kind, None)
        self._revision = revision

    def follow(self, changes: Sequence[Change]) -> list[Change]:
        """Apply changes another replica committed (read from the shared log, in revision
        order, all after :attr:`revision`): a follower's core stays the leader's.

        Returns:
            The changes with ``old`` set from this core's state, as published ones carry it.

        Raises:
            ValueError: a change is not after the current revision.
        """
        out: list[Change] = []
        for change in changes:
            if change.revision <= self._revision:
                raise ValueError(f"change {change.revision} is not after revision {self._revision}")
            table = self._objects[change.kind]
            key = (change.namespace, change.name)
            old = table.get(key)
            if change.type in ("Deleted", "Preempted"):
                if table.pop(key, None) is not None:
                    self._sorted_keys.pop(change.kind, None)
            else:
                if old is None:
                    self._sorted_keys.pop(change.kind, None)
                table[key] = change.object
            self._log.append(change)
            self._revision = change.revision
            out.append(msgspec.structs.replace(change, old=old) if old is not None else change)
        return out

    # ----------------------------------------------------------------------- writes

    def write(
        self, puts: Sequence[KubeObject], deletes: Sequence[ObjectRef] = ()
    ) -> tuple[int, list[ObjectStatus], list[Change]]:
        """Create-or-replace ``puts`` then delete ``deletes``, atomically.

        Returns:
            The revision after the write, one status per object (puts first, then deletes),
            and the changes in revision order (a Deleted change's object is the last state,
            with the deletion's resourceVersion; ``old`` is the object as it was stored).

        Raises:
            StoreRejected: ``invalid`` or ``not_found`` (when every error is a missing object),
                with one :class:`ObjectError` per bad object; nothing was written.
        """
        tx = _Transaction(self)
        classes = self._classes_for(puts)
        statuses: list[ObjectStatus] = []
        errors: list[tuple[ErrorCode, ObjectError]] = []
        for index, obj in enumerate(puts):
            kind = type(obj).__name__
            namespace = scoped_namespace(kind, obj.metadata.namespace)
            try:
                statuses.append(self._put(tx, obj, classes))
            except (StoreRejected, InvalidObject) as exc:
                errors.append(
                    (
                        exc.code,
                        ObjectError(
                            index=index,
                            kind=kind,
                            namespace=namespace,
                            name=obj.metadata.name,
                            path=exc.path,
                            message=exc.message,
                        ),
                    )
                )
        for offset, ref in enumerate(deletes):
            try:
                statuses.append(self._delete(tx, ref))
            except StoreRejected as exc:
                errors.append(
                    (
                        exc.code,
                        ObjectError(
                            index=len(puts) + offset,
                            kind=ref.kind,
                            namespace=scoped_namespace(ref.kind, ref.namespace),
                            name=ref.name,
                            path=exc.path,
                            message=exc.message,
                        ),
                    )
                )
        if errors:
            raise _rejection(errors, len(puts) + len(deletes))
        self._commit(tx)
        return self._revision, statuses, tx.changes

    def _classes_for(self, puts: Sequence[KubeObject]) -> dict[str, PriorityClass]:
        """The PriorityClasses a pod of this request may name: stored, or put in the request
        (anywhere in it: ``kubectl get pods,priorityclass`` lists the classes last)."""
        stored = self._objects["PriorityClass"].values()
        return known_classes(pc for pc in (*stored, *puts) if isinstance(pc, PriorityClass))

    def _put(
        self, tx: _Transaction, obj: KubeObject, classes: dict[str, PriorityClass]
    ) -> ObjectStatus:
        kind = type(obj).__name__
        namespace = scoped_namespace(kind, obj.metadata.namespace)
        _validate_metadata(kind, namespace, obj.metadata)
        name = obj.metadata.name or self._generate_name(tx, kind, namespace, obj)
        if namespace != obj.metadata.namespace or name != obj.metadata.name:
            obj = _with_meta(obj, namespace=namespace, name=name)
        if isinstance(obj, Node) and not obj.status.allocatable:
            status = msgspec.structs.replace(obj.status, allocatable=dict(obj.status.capacity))
            obj = msgspec.structs.replace(obj, status=status)
        if isinstance(obj, PriorityClass) and obj.global_default:
            check_single_default(obj, classes)
        old = tx.get(kind, (namespace, name))
        if isinstance(obj, Pod):
            _check_pod(obj, old if isinstance(old, Pod) else None)
        elif isinstance(obj, PodGroup) and isinstance(old, PodGroup):
            self._check_group_update(tx, obj, old)
        if old is None:
            if isinstance(obj, Pod):
                obj = _gated_condition(admit_pod(obj, classes))
            created = {"uid": self._new_uid(), "creation_timestamp": _utc(self._wall_clock())}
            stored = tx.record("Added", obj, None, metadata=created)
            action: Literal["created", "replaced", "unchanged"] = "created"
        else:
            obj = _with_meta(
                obj,
                uid=old.metadata.uid,
                resource_version=old.metadata.resource_version,
                creation_timestamp=old.metadata.creation_timestamp,
            )
            obj = _carry_over(obj, old, classes, _utc(self._wall_clock()))
            if obj == old:
                stored, action = old, "unchanged"
            else:
                stored, action = tx.record("Modified", obj, old), "replaced"
        return ObjectStatus(
            kind=kind,
            namespace=namespace,
            name=name,
            uid=stored.metadata.uid,
            resource_version=stored.metadata.resource_version,
            action=action,
        )

    def _generate_name(self, tx: _Transaction, kind: str, namespace: str, obj: KubeObject) -> str:
        """generateName + a random suffix no object of the kind holds yet (the API server's
        rest.BeforeCreate with names.SimpleNameGenerator: the prefix is cut to 58 characters)."""
        base = obj.metadata.generate_name[:MAX_GENERATED_NAME_LENGTH]
        for _ in range(_NAME_ATTEMPTS):
            name = base + self._new_suffix()
            if tx.get(kind, (namespace, name)) is None:
                return name
        raise StoreRejected(
            "conflict",
            f"no free name for generateName {base!r} after {_NAME_ATTEMPTS} attempts; try again",
            path="$.metadata.generateName",
        )

    def _check_group_update(self, tx: _Transaction, group: PodGroup, old: PodGroup) -> None:
        """A PodGroup's update rules: its policy form stays (``_group_form``), and its size
        stays while any member pod is bound and running (the scheduler placed those pods for
        the size it had)."""
        meta = group.metadata
        form, old_form = _group_form(group), _group_form(old)
        errors: list[tuple[str, str]] = []
        if form != old_form:
            value = msgspec.json.encode(group.spec.scheduling_policy).decode()
            errors.append(
                (
                    "$.spec.schedulingPolicy",
                    f"spec.schedulingPolicy: Invalid value: {value}: field is immutable: pod "
                    f"group {meta.namespace}/{meta.name} has {_form_text(old)}; delete the group "
                    "and create it again to change its policy",
                )
            )
        elif (size := _group_size(group)) != _group_size(old) and size is not None:
            bound = self._bound_members(tx, meta.namespace, meta.name)
            if bound:
                ref = f"{meta.namespace}/{meta.name}"
                said = (
                    f"1 member of pod group {ref} is bound to a node; the group cannot change "
                    "under it"
                    if bound == 1
                    else f"{bound} members of pod group {ref} are bound to nodes; the group "
                    "cannot change under them"
                )
                field = _size_field(group)
                errors.append((f"$.{field}", f"{field}: Forbidden: {said}"))
        _invalid("PodGroup", meta.namespace, meta, errors)

    def _bound_members(self, tx: _Transaction, namespace: str, group: str) -> int:
        """How many pods of ``namespace`` name the pod group ``group`` and are bound and not
        finished, as this transaction sees them (committed, or staged before it)."""

        def counts(pod: KubeObject | None) -> bool:
            return (
                isinstance(pod, Pod)
                and bool(pod.spec.node_name)
                and not is_terminal(pod)
                and pod_group_name(pod) == group
            )

        keys = self._keys("Pod")
        start = bisect.bisect_left(keys, (namespace,))
        end = bisect.bisect_left(keys, (namespace + "\0",), start)
        seen = set(keys[start:end])
        bound = sum(1 for key in keys[start:end] if counts(tx.get("Pod", key)))
        return bound + sum(
            1
            for (kind, ns, name), obj in tx.staged.items()
            if kind == "Pod" and ns == namespace and (ns, name) not in seen and counts(obj)
        )

    def _keys(self, kind: str) -> list[Key]:
        """The committed keys of a kind, sorted (kept until a key comes or goes)."""
        keys = self._sorted_keys.get(kind)
        if keys is None:
            keys = self._sorted_keys[kind] = sorted(self._objects[kind])
        return keys

    def _delete(self, tx: _Transaction, ref: ObjectRef) -> ObjectStatus:
        if ref.kind not in KINDS:
            raise StoreRejected("invalid", _unknown_kind(ref.kind), path="$.kind")
        namespace = scoped_namespace(ref.kind, ref.namespace)
        old = tx.get(ref.kind, (namespace, ref.name))
        if old is None:
            raise StoreRejected(
                "not_found", f"{_ref(ref.kind, namespace, ref.name)} not found; cannot delete it"
            )
        stored = tx.record("Deleted", old, old, deleted=True)
        return ObjectStatus(
            kind=ref.kind,
            namespace=namespace,
            name=ref.name,
            uid=old.metadata.uid,
            resource_version=stored.metadata.resource_version,
            action="deleted",
        )

    def _commit(self, tx: _Transaction) -> None:
        """Make a transaction's staged objects and changes the committed state."""
        for (kind, namespace, name), obj in tx.staged.items():
            table = self._objects[kind]
            key = (namespace, name)
            if obj is None:
                if table.pop(key, None) is not None:
                    self._sorted_keys.pop(kind, None)
            else:
                if key not in table:
                    self._sorted_keys.pop(kind, None)
                table[key] = obj
        # The log keeps each change without ``old``: the previous object is only needed by the
        # views fed at commit time, and keeping it would double what a long log holds.
        self._log.extend(
            msgspec.structs.replace(c, old=None) if c.old is not None else c for c in tx.changes
        )
        if tx.changes:
            self._revision = tx.changes[-1].revision

    def undo(self, changes: Sequence[Change]) -> None:
        """Take back the newest committed ``changes`` (a batch whose commit the backend
        refused, :class:`~podium.protocol.errors.CommitRefused`): each object is what the
        change's ``old`` says (absent when None), and the revision goes back before them.

        The log's entries for them are dropped; entries the log let go to make room for them
        stay gone (readers behind the memory go to the durable log, as before).

        Raises:
            ValueError: ``changes`` are not the newest, in revision order.
        """
        for change in reversed(changes):
            if change.revision != self._revision:
                raise ValueError(
                    f"change {change.revision} is not the newest (revision {self._revision})"
                )
            table = self._objects[change.kind]
            key = (change.namespace, change.name)
            if change.old is None:
                table.pop(key, None)
                self._sorted_keys.pop(change.kind, None)
            else:
                if key not in table:
                    self._sorted_keys.pop(change.kind, None)
                table[key] = change.old
            if self._log and self._log[-1].revision == change.revision:
                self._log.pop()
            self._revision = change.revision - 1

    # ----------------------------------------------------------------------- bindings

    def bind(self, bindings: Sequence[Binding]) -> tuple[int, list[Change], list[BindFailure]]:
        """Bind each pod (with its volumes) to its node; a lone binding stands alone, the
        bindings of one pod group stand or fall together.

        For a binding: the pod must exist with that uid, be unbound, not terminating and not
        terminated, and the node must exist. Each claim of ``volumes`` must exist and be unbound
        (or already bound to that volume), and its volume must exist and be free (or claimed by
        that claim); each claim of ``provisions`` must exist and be unbound. Changes, in order:
        each volume then its claim (Modified), each provisioned claim (Modified), then the pod
        (Bound, with ``spec.nodeName`` and condition PodScheduled=True).

        The bindings naming one :attr:`~podium.store.mail.Binding.group` are one transaction,
        applied where the group's first member stands, its members in their order (each sees
        what the ones before it staged: two members cannot take one volume). The first member
        refused ends it: nothing of the group is applied, that member fails with its own
        reason, and every other member with ``pod group NS/NAME: not bound, because NS/POD
        could not be: <reason>`` (the same code).

        Returns:
            The revision after the batch, the changes, and the refused bindings (``not_found``
            or ``conflict``, naming the pod, the node and why; a group's together, where its
            first member stands).
        """
        if any(b.group for b in bindings):
            return self._bind_groups(bindings)
        changes: list[Change] = []
        failed: list[BindFailure] = []
        for binding in bindings:
            tx = _Transaction(self)
            try:
                self._bind_one(tx, binding)
            except StoreRejected as exc:
                failed.append(BindFailure(binding=binding, code=exc.code, message=exc.message))
                continue
            self._commit(tx)
            changes.extend(tx.changes)
        return self._revision, changes, failed

    def _bind_groups(
        self, bindings: Sequence[Binding]
    ) -> tuple[int, list[Change], list[BindFailure]]:
        """:meth:`bind` for a batch with pod groups: one transaction per unit (a lone
        binding, or every binding of one group)."""
        changes: list[Change] = []
        failed: list[BindFailure] = []
        for unit in bind_units(bindings):
            tx = _Transaction(self)
            for binding in unit:
                try:
                    self._bind_one(tx, binding)
                except StoreRejected as exc:
                    failed += group_failures(unit, binding, exc.code, exc.message)
                    break
            else:
                self._commit(tx)
                changes.extend(tx.changes)
        return self._revision, changes, failed

    def _bind_one(self, tx: _Transaction, b: Binding) -> None:
        namespace = namespace_or_default(b.namespace)
        pod_ref = f"pod {namespace}/{b.name}"
        why = f"cannot bind it to node {b.node}"
        pod = tx.get("Pod", (namespace, b.name))
        if not isinstance(pod, Pod):
            raise StoreRejected("not_found", f"{pod_ref} not found; {why}")
        if pod.metadata.uid != b.uid:
            raise StoreRejected(
                "conflict",
                f"{pod_ref} has uid {pod.metadata.uid}, not {b.uid} (deleted and re-created); {why}",
            )
        if pod.spec.node_name:
            raise StoreRejected(
                "conflict", f"{pod_ref} is already bound to node {pod.spec.node_name}; {why}"
            )
        # holds_resources() in two steps: each refusal names its own reason.
        if pod.metadata.deletion_timestamp is not None:
            raise StoreRejected("conflict", f"{pod_ref} is being deleted; {why}")
        if is_terminal(pod):
            raise StoreRejected(
                "conflict", f"{pod_ref} has terminated (phase {pod.status.phase}); {why}"
            )
        if tx.get("Node", ("", b.node)) is None:
            raise StoreRejected(
                "not_found", f"node {b.node} not found; cannot bind {pod_ref} to it"
            )
        for claim, volume in b.volumes.items():
            self._bind_volume(tx, _claim_key(claim, namespace), volume, pod_ref, b.node)
        for claim in b.provisions:
            self._select_node(tx, _claim_key(claim, namespace), pod_ref, b.node)
        now = _utc(self._wall_clock())
        status = _set_scheduled_condition(pod.status, "True", "", "", now)
        spec = msgspec.structs.replace(pod.spec, node_name=b.node)
        tx.record("Bound", msgspec.structs.replace(pod, spec=spec, status=status), pod, node=b.node)

    @staticmethod
    def _bind_volume(tx: _Transaction, key: Key, volume: str, pod_ref: str, node: str) -> None:
        claim_ref = f"PersistentVolumeClaim {key[0]}/{key[1]}"
        why = f"cannot bind {pod_ref} to node {node}"
        pvc = tx.get("PersistentVolumeClaim", key)
        if not isinstance(pvc, PersistentVolumeClaim):
            raise StoreRejected("not_found", f"{claim_ref} not found; {why}")
        if pvc.spec.volume_name and pvc.spec.volume_name != volume:
            raise StoreRejected(
                "conflict",
                f"{claim_ref} is already bound to PersistentVolume {pvc.spec.volume_name}, "
                f"not {volume}; {why}",
            )
        pv = tx.get("PersistentVolume", ("", volume))
        if not isinstance(pv, PersistentVolume):
            raise StoreRejected("not_found", f"PersistentVolume {volume} not found; {why}")
        ref = pv.spec.claim_ref
        if ref is not None and (
            (ref.namespace, ref.name) != key or (ref.uid and ref.uid != pvc.metadata.uid)
        ):
            raise StoreRejected(
                "conflict",
                f"PersistentVolume {volume} is already claimed by {ref.namespace}/{ref.name}, "
                f"not {key[0]}/{key[1]}; {why}",
            )
        new_ref = ObjectReference(
            kind="PersistentVolumeClaim",
            namespace=key[0],
            name=key[1],
            uid=pvc.metadata.uid,
        )
        pv_spec = msgspec.structs.replace(pv.spec, claim_ref=new_ref)
        pv_status = msgspec.structs.replace(pv.status, phase="Bound")
        new_pv = msgspec.structs.replace(pv, spec=pv_spec, status=pv_status)
        if new_pv != pv:
            tx.record("Modified", new_pv, pv)
        annotations = {**pvc.metadata.annotations, ANNOTATION_BIND_COMPLETED: "yes"}
        new_pvc = msgspec.structs.replace(
            _with_meta(pvc, annotations=annotations),
            spec=msgspec.structs.replace(pvc.spec, volume_name=volume),
            status=msgspec.structs.replace(pvc.status, phase="Bound"),
        )
        if new_pvc != pvc:
            tx.record("Modified", new_pvc, pvc)

    @staticmethod
    def _select_node(tx: _Transaction, key: Key, pod_ref: str, node: str) -> None:
        claim_ref = f"PersistentVolumeClaim {key[0]}/{key[1]}"
        why = f"cannot provision it for {pod_ref} on node {node}"
        pvc = tx.get("PersistentVolumeClaim", key)
        if not isinstance(pvc, PersistentVolumeClaim):
            raise StoreRejected("not_found", f"{claim_ref} not found; {why}")
        if pvc.spec.volume_name:
            raise StoreRejected(
                "conflict",
                f"{claim_ref} is already bound to PersistentVolume {pvc.spec.volume_name}; {why}",
            )
        if pvc.metadata.annotations.get(ANNOTATION_SELECTED_NODE) == node:
            return
        annotations = {**pvc.metadata.annotations, ANNOTATION_SELECTED_NODE: node}
        tx.record("Modified", _with_meta(pvc, annotations=annotations), pvc)

    # ----------------------------------------------------------------------- preemption

    def evict(
        self,
        preemptor: Victim,
        node: str,
        victims: Sequence[Victim],
        group: Sequence[Preemptor] = (),
    ) -> tuple[int, list[Change], list[str]]:
        """Evict ``victims`` from ``node`` and nominate ``preemptor`` to it, atomically.

        As kube-scheduler's ``preempt`` (scheduler.go@v1.14) does through the API: the
        preemptor's ``status.nominatedNodeName`` and the victims' deletion, here in one
        transaction. Each victim that still exists with its uid and is bound to ``node`` is
        deleted with a Preempted change (its last state with the deletion's resourceVersion,
        ``node``, and ``message`` "preempted by NS/NAME (priority P)"); a victim gone,
        re-created or not on ``node`` is skipped (so with ``node`` "" none is evicted). Then the
        preemptor's ``status.nominatedNodeName`` is set to ``node`` ("" clears it) with a
        Modified change, only when that changes it. A victim naming its own node
        (``Victim.node``: a member of a placed gang evicted whole, issue 24) is evicted from
        that node instead, in the same transaction.

        A pod group's preemption (issue 24) names its other members in ``group``: each is
        checked as ``preemptor`` is, before anything is written, and in the same transaction
        its victims are evicted from its node and it is nominated there; every victim's
        Preempted change comes before the first nomination.

        Args:
            preemptor: the pod to nominate (its namespace, name and uid).
            node: the node the victims are evicted from and the preemptor is nominated to.
            victims: the pods to evict, in order.
            group: more preemptors (a pod group's other members), in order.

        Returns:
            The revision after the eviction, its changes in revision order, and the
            ``namespace/name`` of each victim evicted.

        Raises:
            StoreRejected: ``conflict`` when a preemptor is missing, re-created or bound;
                nothing was written.
        """
        steps = [(preemptor, node, victims)] + [
            (Victim(namespace=p.namespace, name=p.name, uid=p.uid), p.node, p.victims)
            for p in group
        ]
        # Every preemptor first: one refused, nothing is written.
        pods = [self._preemptor(who, where, bool(group)) for who, where, _ in steps]
        tx = _Transaction(self)
        evicted: list[str] = []
        for pod, (_, where, chosen) in zip(pods, steps, strict=True):
            priority = pod.spec.priority if pod.spec.priority is not None else DEFAULT_PRIORITY
            message = f"preempted by {pod_key(pod)} (priority {priority})"
            for victim in chosen:
                key = (namespace_or_default(victim.namespace), victim.name)
                old = tx.get("Pod", key)
                on = victim.node or where
                if (
                    not isinstance(old, Pod)
                    or old.metadata.uid != victim.uid
                    or not old.spec.node_name
                    or old.spec.node_name != on
                ):
                    continue  # gone, re-created or moved since the decision: nothing to evict
                tx.record("Preempted", old, old, deleted=True, node=on, message=message)
                evicted.append(f"{key[0]}/{key[1]}")
        for pod, (_, where, _) in zip(pods, steps, strict=True):
            now = tx.get("Pod", (namespace_or_default(pod.metadata.namespace), pod.metadata.name))
            assert isinstance(now, Pod)
            if now.status.nominated_node_name != where:
                status = msgspec.structs.replace(now.status, nominated_node_name=where)
                tx.record("Modified", msgspec.structs.replace(now, status=status), now)
        self._commit(tx)
        return self._revision, tx.changes, evicted

    def _preemptor(self, preemptor: Victim, node: str, grouped: bool) -> Pod:
        """The stored pod an eviction nominates, checked: it exists with that uid, unbound.

        Raises:
            StoreRejected: ``conflict``, naming the pod and what cannot be done.
        """
        namespace = namespace_or_default(preemptor.namespace)
        pod_ref = f"pod {namespace}/{preemptor.name}"
        why = (
            f"cannot nominate it to node {node} nor evict for it"
            if node
            else "cannot clear its nomination"
        )
        if grouped:
            why += " (nor for the other members of its pod group: nothing was evicted)"
        pod = self._objects["Pod"].get((namespace, preemptor.name))
        if not isinstance(pod, Pod):
            raise StoreRejected("conflict", f"{pod_ref} not found; {why}")
        if pod.metadata.uid != preemptor.uid:
            raise StoreRejected(
                "conflict",
                f"{pod_ref} has uid {pod.metadata.uid}, not {preemptor.uid} (deleted and "
                f"re-created); {why}",
            )
        if pod.spec.node_name:
            raise StoreRejected(
                "conflict", f"{pod_ref} is already bound to node {pod.spec.node_name}; {why}"
            )
        return pod

    # ----------------------------------------------------------------------- unschedulable

    def record_unschedulable(
        self, namespace: str, name: str, uid: str, message: str
    ) -> Change | None:
        """Record a failed attempt's FitError ``message`` on a pending pod.

        Only when the pod with ``uid`` exists, is unbound, and does not already say
        ``message`` (its PodScheduled condition False, reason Unschedulable, with that
        message): the condition becomes that, and an Unschedulable change is committed. The
        pod's own condition is what is compared, not a memory of the last message recorded, so
        a put that replaced the condition (or a restart) cannot hide a later attempt's message.

        Returns:
            The change, or None when nothing was written.
        """
        key = (namespace_or_default(namespace), name)
        pod = self._objects["Pod"].get(key)
        if not isinstance(pod, Pod) or pod.metadata.uid != uid or pod.spec.node_name:
            return None
        said = _scheduled_condition(pod.status)
        if said is not None and (said.status, said.reason, said.message) == (
            "False",
            "Unschedulable",
            message,
        ):
            return None
        now = _utc(self._wall_clock())
        status = _set_scheduled_condition(pod.status, "False", "Unschedulable", message, now)
        tx = _Transaction(self)
        tx.record(
            "Unschedulable", msgspec.structs.replace(pod, status=status), pod, message=message
        )
        self._commit(tx)
        return tx.changes[0]

    # ----------------------------------------------------------------------- reads

    def read(
        self,
        kind: str,
        name: str = "",
        namespace: str | None = None,
        selector: LabelSelector | None = None,
    ) -> tuple[int, list[KubeObject]]:
        """Read one object (``name``) or list a kind, sorted by (namespace, name).

        ``namespace`` None lists every namespace, and a read by name then looks in
        ``default``; namespaces are ignored for cluster-scoped kinds. ``selector`` (None: every
        object) filters by labels, also a read by name (which then may return no item).

        Raises:
            StoreRejected: ``invalid`` for an unknown kind, ``not_found`` for a missing name.
        """
        if not name:
            revision, items, _ = self.read_page(kind, namespace, selector)
            return revision, items
        if kind not in KINDS:
            raise StoreRejected("invalid", _unknown_kind(kind))
        ns = scoped_namespace(kind, namespace)
        obj = self._objects[kind].get((ns, name))
        if obj is None:
            raise StoreRejected("not_found", f"{_ref(kind, ns, name)} not found")
        if selector is not None and not label_selector_matches(selector, obj.metadata.labels):
            return self._revision, []
        return self._revision, [obj]

    def read_page(
        self,
        kind: str,
        namespace: str | None = None,
        selector: LabelSelector | None = None,
        after: Key | None = None,
        limit: int = 0,
    ) -> tuple[int, list[KubeObject], int | None]:
        """List a kind (as :meth:`read`) a page at a time: the first ``limit`` objects (0: all)
        whose (namespace, name) sorts after ``after``, and how many more match: 0 when none
        do, None when some may (with a selector: counting would match the whole rest).

        Raises:
            StoreRejected: ``invalid`` for an unknown kind.
        """
        if kind not in KINDS:
            raise StoreRejected("invalid", _unknown_kind(kind))
        table = self._objects[kind]
        keys = self._keys(kind)
        start, end = 0, len(keys)
        if kind in NAMESPACED_KINDS and namespace is not None:
            ns = namespace_or_default(namespace)
            # (ns,) sorts before every (ns, name), and (ns + NUL,) after them all.
            start = bisect.bisect_left(keys, (ns,))
            end = bisect.bisect_left(keys, (ns + "\0",), start)
        if after is not None:
            start = max(start, bisect.bisect_right(keys, after, start, end))
        if selector is None:
            stop = end if limit == 0 else min(end, start + limit)
            return self._revision, [table[key] for key in keys[start:stop]], end - stop
        items: list[KubeObject] = []
        for index in range(start, end):
            obj = table[keys[index]]
            if label_selector_matches(selector, obj.metadata.labels):
                if len(items) == limit > 0:
                    return self._revision, items, None
                items.append(obj)
        return self._revision, items, 0

    def keeps_changes_after(self, after: int) -> bool:
        """Whether the kept log holds every change after ``after`` (none dropped)."""
        return after >= self.oldest_revision - (1 if self._log else 0)

    def events_after(self, after: int) -> tuple[int, list[Change]]:
        """The kept changes with revision > ``after``, and the current revision.

        Changes read back from the log carry no ``old`` (only the published ones do).

        Raises:
            StoreRejected: ``gone`` (with the oldest revision kept) when a change after
                ``after`` was dropped from the log; ``invalid`` when ``after`` is negative or
                beyond the current revision.
        """
        if after < 0 or after > self._revision:
            raise StoreRejected(
                "invalid",
                f"revision {after} is not a store revision; the current revision is "
                f"{self._revision}",
            )
        if not self.keeps_changes_after(after):
            raise StoreRejected(
                "gone",
                f"revision {after} is no longer kept; the oldest revision kept is "
                f"{self.oldest_revision}: list again, then watch from the list's revision",
                revision=self.oldest_revision,
            )
        out: list[Change] = []
        # Walk back from the newest: a watcher resumes near the end of a long log.
        for change in reversed(self._log):
            if change.revision <= after:
                break
            out.append(change)
        out.reverse()
        return self._revision, out

    def all_objects(self) -> list[KubeObject]:
        """Every object: nodes first, then PVs, PVCs, StorageClasses, Services, RCs, RSs,
        StatefulSets, PriorityClasses, PodDisruptionBudgets, pods last; each kind sorted by
        (namespace, name)."""
        out: list[KubeObject] = []
        for kind in KIND_ORDER:
            table = self._objects[kind]
            out.extend(table[key] for key in sorted(table))
        return out

    def stats(self) -> StoreStats:
        """Counts by kind, bound pods, and the revision range the log holds."""
        pods = self._objects["Pod"].values()
        return StoreStats(
            revision=self._revision,
            oldest_revision=self.oldest_revision,
            objects={kind: len(self._objects[kind]) for kind in KIND_ORDER},
            bound_pods=sum(1 for p in pods if isinstance(p, Pod) and p.spec.node_name),
        )


# --------------------------------------------------------------------------- rules


def _unknown_kind(kind: str) -> str:
    return f"unknown kind {kind!r}; expected one of {', '.join(sorted(KINDS))}"


def _invalid(kind: str, namespace: str, meta: ObjectMeta, errors: list[tuple[str, str]]) -> None:
    """Raise Kubernetes' ``Pod "a/b" is invalid: [...]`` for ``errors`` (path, message): every
    message of the object in one, at the first error's path."""
    if errors:
        name = meta.name or f"{meta.generate_name}(generated)"
        messages = "; ".join(message for _, message in errors)
        raise InvalidObject(
            f"{_ref(kind, namespace, name)} is invalid: {messages}", path=errors[0][0]
        )


def _check_pod(pod: Pod, old: Pod | None) -> None:
    """Scheduling gates' rules (protocol/validation.py ``scheduling_gates_errors``) and pod
    group membership's (protocol/gangs.py ``membership_errors``), every message in one."""
    errors: list[tuple[str, str]] = []
    gates = [g.name for g in pod.spec.scheduling_gates]
    if gates or (old is not None and old.spec.scheduling_gates):
        before = None if old is None else [g.name for g in old.spec.scheduling_gates]
        errors += scheduling_gates_errors(gates, pod.spec.node_name, before)
    errors += membership_errors(pod, old)
    meta = pod.metadata
    _invalid("Pod", namespace_or_default(meta.namespace), meta, errors)


_GroupForm = Literal["basic", "gang", "minMember"]


def _group_form(group: PodGroup) -> _GroupForm:
    """A PodGroup's policy form: Kubernetes' ``schedulingPolicy.basic`` or ``.gang``, or the
    ``minMember`` of scheduler-plugins and Volcano (by its API group, as the struct checks it)."""
    if not group.api_version.startswith("scheduling.k8s.io/"):
        return "minMember"
    policy = group.spec.scheduling_policy
    return "gang" if policy is not None and policy.gang is not None else "basic"


def _group_size(group: PodGroup) -> int | None:
    """How many members must be placed at once, read in the group's own form (None: basic)."""
    match _group_form(group):
        case "gang":
            policy = group.spec.scheduling_policy
            return policy.gang.min_count if policy is not None and policy.gang else None
        case "minMember":
            return group.spec.min_member
    return None


def _size_field(group: PodGroup) -> str:
    form = _group_form(group)
    return "spec.minMember" if form == "minMember" else "spec.schedulingPolicy.gang.minCount"


def _form_text(group: PodGroup) -> str:
    """The form a stored group was created with, as an error message names it."""
    match _group_form(group):
        case "gang":
            return f"schedulingPolicy.gang (minCount {_group_size(group)})"
        case "basic":
            return "schedulingPolicy.basic"
    return f"minMember {group.spec.min_member} ({group.api_version})"


def _gated_condition(pod: Pod) -> Pod:
    """A gated pod is created with PodScheduled False, reason SchedulingGated, unless it
    carries a PodScheduled condition (strategy.go ``applySchedulingGatedCondition``)."""
    if not pod.spec.scheduling_gates or any(
        c.type == _POD_SCHEDULED for c in pod.status.conditions
    ):
        return pod
    condition = PodCondition(
        type=_POD_SCHEDULED,
        status="False",
        reason=SCHEDULING_GATED,
        message=SCHEDULING_GATED_MESSAGE,
    )
    status = msgspec.structs.replace(pod.status, conditions=[*pod.status.conditions, condition])
    return msgspec.structs.replace(pod, status=status)


def _validate_metadata(kind: str, namespace: str, meta: ObjectMeta) -> None:
    """Kubernetes' rules on the name, namespace, labels and annotations (protocol/validation.py),
    every message of the object in one (``Pod "a/b" is invalid: [...]`` in Kubernetes)."""
    errors = metadata_errors(
        kind, meta.name, meta.generate_name, namespace, meta.labels, meta.annotations
    )
    if errors:
        name = meta.name or f"{meta.generate_name}(generated)"
        messages = "; ".join(message for _, message in errors)
        raise InvalidObject(
            f"{_ref(kind, namespace, name)} is invalid: {messages}", path=errors[0][0]
        )


def _rejection(errors: list[tuple[ErrorCode, ObjectError]], total: int) -> StoreRejected:
    code: ErrorCode = "not_found" if all(c == "not_found" for c, _ in errors) else "invalid"
    items = [e for _, e in errors]
    if len(items) == 1:
        message = f"{items[0].message}; nothing was written"
    else:
        message = (
            f"{len(items)} of {total} objects rejected, nothing was written; "
            f"first: {items[0].message}"
        )
    return StoreRejected(code, message, errors=items)


def _carry_over(
    obj: KubeObject, old: KubeObject, classes: dict[str, PriorityClass], now: str
) -> KubeObject:
    """Keep the store's own fields a replace leaves unset, and check a pod's rules."""
    if isinstance(obj, Pod) and isinstance(old, Pod):
        return _replace_pod(obj, old, classes, now)
    if isinstance(obj, PersistentVolumeClaim) and isinstance(old, PersistentVolumeClaim):
        spec = obj.spec
        status = obj.status if obj.status.phase else old.status
        if not spec.volume_name and old.spec.volume_name:
            # The binding is the store's, and so is the phase Bound that goes with it: a dump
            # of the claim says Pending (persistentvolumeclaim/strategy.go@v1.14
            # ``PrepareForUpdate`` keeps the status on an update).
            spec = msgspec.structs.replace(spec, volume_name=old.spec.volume_name)
            status = old.status
        annotations = dict(obj.metadata.annotations)
        for key in (ANNOTATION_BIND_COMPLETED, ANNOTATION_SELECTED_NODE):
            if key not in annotations and key in old.metadata.annotations:
                annotations[key] = old.metadata.annotations[key]
        return msgspec.structs.replace(
            _with_meta(obj, annotations=annotations), spec=spec, status=status
        )
    if isinstance(obj, PersistentVolume) and isinstance(old, PersistentVolume):
        pv_spec = obj.spec
        pv_status = obj.status if obj.status.phase else old.status
        if pv_spec.claim_ref is None and old.spec.claim_ref is not None:
            # As a claim's: the store's binding keeps its phase (a dump says Available).
            pv_spec = msgspec.structs.replace(pv_spec, claim_ref=old.spec.claim_ref)
            pv_status = old.status
        return msgspec.structs.replace(obj, spec=pv_spec, status=pv_status)
    # As the API server's status subresource: a put without a status keeps the stored one.
    if (
        isinstance(obj, PodDisruptionBudget)
        and isinstance(old, PodDisruptionBudget)
        and obj.status is None
        and old.status is not None
    ):
        return msgspec.structs.replace(obj, status=old.status)
    if (
        isinstance(obj, PodGroup)
        and isinstance(old, PodGroup)
        and obj.status is None
        and old.status is not None
    ):
        return msgspec.structs.replace(obj, status=old.status)
    return obj


def _replace_pod(pod: Pod, old: Pod, classes: dict[str, PriorityClass], now: str) -> Pod:
    spec = pod.spec
    if not spec.node_name and old.spec.node_name:
        # A put never unbinds: the file a pod came from does not name the node Podium chose.
        spec = msgspec.structs.replace(spec, node_name=old.spec.node_name)
    if spec.priority_class_name == old.spec.priority_class_name:
        # admission.go on Update: the priority set at create is preserved.
        if spec.priority is None:
            spec = msgspec.structs.replace(spec, priority=old.spec.priority)
        if spec.preemption_policy is None:
            spec = msgspec.structs.replace(spec, preemption_policy=old.spec.preemption_policy)
    binds = bool(spec.node_name) and not old.spec.node_name
    status = _pod_status(pod.status, old.status, binds=binds, now=now)
    pod = msgspec.structs.replace(pod, spec=spec, status=status)
    if old.spec.node_name:
        if spec != old.spec:
            raise StoreRejected(
                "invalid",
                f"pod {old.metadata.namespace}/{old.metadata.name} is bound to node "
                f"{old.spec.node_name}; its spec is immutable (only its status, labels and "
                "annotations may change)",
                path="$.spec",
            )
        return pod
    unchanged_priority = (
        spec.priority_class_name == old.spec.priority_class_name
        and spec.priority == old.spec.priority
        and spec.preemption_policy == old.spec.preemption_policy
    )
    # A pending pod may change its spec; new priority fields are admitted as on create (and a
    # pod whose class was deleted since keeps its priority, as in Kubernetes).
    return pod if unchanged_priority else admit_pod(pod, classes)


def _pod_status(put: PodStatus, old: PodStatus, *, binds: bool, now: str) -> PodStatus:
    """A replaced pod's status: the scheduler's part always the stored one, the rest the put's.

    The API server treats status as a subresource an update of the pod does not write
    (pkg/registry/core/pod/strategy.go@v1.14 ``PrepareForUpdate``: ``newPod.Status =
    oldPod.Status``), so what ``kubectl get -o yaml`` printed, applied again, never takes back
    what the scheduler wrote: the PodScheduled condition (a pending pod's Unschedulable message,
    a bound pod's True) and ``nominatedNodeName`` are the stored ones, whatever the put says.
    The rest (phase, startTime, the other conditions) is the kubelet's in Kubernetes, written
    through the status subresource; Podium has neither, so a put with a status writes it (a
    pod marked Succeeded frees its node) and a put without one keeps the stored status whole
    (docs/differences.md).

    ``binds``: the put itself binds the pending pod (it names a node): as the binding
    subresource does (pkg/registry/core/pod/storage/storage.go@v1.14 ``assignPod``), the
    PodScheduled condition becomes True, or the put's own when it says True.
    """
    base = old if put == PodStatus() else put
    scheduled = [c for c in old.conditions if c.type == _POD_SCHEDULED]
    if binds:
        # A dump of a bound pod carries PodScheduled True with the old cluster's time.
        put_true = [c for c in put.conditions if c.type == _POD_SCHEDULED and c.status == "True"]
        if put_true:
            scheduled = put_true[:1]
        else:
            mark = _set_scheduled_condition(PodStatus(conditions=scheduled), "True", "", "", now)
            scheduled = mark.conditions
    # The stored condition takes the place the put's had (or comes last), so a put of what
    # ``get`` printed, in its order, equals the stored object.
    conditions: list[PodCondition] = []
    placed = False
    for cond in base.conditions:
        if cond.type != _POD_SCHEDULED:
            conditions.append(cond)
        elif not placed:
            conditions.extend(scheduled)
            placed = True
    if not placed:
        conditions.extend(scheduled)
    return msgspec.structs.replace(
        base, nominated_node_name=old.nominated_node_name, conditions=conditions
    )


def _scheduled_condition(status: PodStatus) -> PodCondition | None:
    """The pod's PodScheduled condition: the first of that type, the one
    :func:`_set_scheduled_condition` sets (podutil.GetPodCondition)."""
    return next((c for c in status.conditions if c.type == _POD_SCHEDULED), None)


def _set_scheduled_condition(
    status: PodStatus, value: str, reason: str, message: str, now: str
) -> PodStatus:
    """Set the PodScheduled condition in place of an older one (podutil.UpdatePodCondition:
    lastTransitionTime moves only when the status flips)."""
    conditions = list(status.conditions)
    for i, cond in enumerate(conditions):
        if cond.type == _POD_SCHEDULED:
            since = cond.last_transition_time if cond.status == value else now
            conditions[i] = PodCondition(
                type=_POD_SCHEDULED,
                status=value,
                reason=reason,
                message=message,
                last_transition_time=since or now,
            )
            break
    else:
        conditions.append(
            PodCondition(
                type=_POD_SCHEDULED,
                status=value,
                reason=reason,
                message=message,
                last_transition_time=now,
            )
        )
    return msgspec.structs.replace(status, conditions=conditions)
