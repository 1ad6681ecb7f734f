"""Fuzzing every request against the store core, and the scheduler on what it accepted.

Hypothesis writes sequences of requests the way a client sends them (a msgpack or JSON frame
through :class:`~podium.protocol.framing.Codec`) and applies them to a
:class:`~podium.store.core.StoreCore` as the store actor does: puts of every kind with
odd-but-typed fields (label maps of thousands of entries, selectors with every operator and
with keys, values and integers Kubernetes would refuse, quantities from ``0.0000000001`` to
``9999999999999999999Ei`` and past them to ``1e999``, ``-1`` and 200 digits, integers past
int32/int64), duplicate names within one request, pods naming missing claims, classes and
nodes; deletes of present, missing and unknown-kind objects; gets with selector strings; watches
from any revision.

Properties:

- a request is decoded, or refused with an :class:`InvalidRequest` naming ``$.objects[i]...``;
- a write is committed, or refused with :class:`StoreRejected` and then nothing changed: the
  revision, every object, the log and the counts are as before. Each :class:`ObjectError`
  names the object's index, kind and name; an ``invalid`` one names the field (``$.spec...``);
- an accepted object is stored as sent but for the store's own fields (uid, resourceVersion,
  creationTimestamp, namespace defaulting, admission's priority, the carried-over fields of a
  replace), and goes back over the wire (both encodings) unchanged;
- the store's invariants hold after every request (revisions, resourceVersions, uids, one
  default PriorityClass, every pod admitted, a bound pod's spec frozen);
- reads and watches answer or refuse (``invalid``, ``not_found``, ``gone``), never raise
  anything else;
- every pending pod of the result goes through one scheduling decision (the default policy as
  the daemon runs it, stopping at a node's first failing predicate; and every predicate and
  priority through their per-node forms, checking all), then preemption and the explain hints
  when it fits nowhere: a node, a FitError or a predicate error, never an exception.

CI runs a short form; ``PODIUM_FUZZ_EXAMPLES=20000`` runs the long one (docs/reliability.md,
"Fuzzing").
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import msgspec
import pytest
from frame_fuzzing import fuzz
from hypothesis import currently_in_test_context, event, given, note
from hypothesis import strategies as st
from request_strategies import (
    DeleteRequest,
    GetRequest,
    PutRequest,
    WatchRequest,
    objects,
    requests,
)
from scalar_plugins import ScalarFilter, ScalarScore
from stages import decide

from podium.actors.cycle.explain import hints
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.preemption import PredicateFitCheck, fit_error_with_preemption, preempt
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.policy import build_plugins, default_policy, resolve_policy
from podium.actors.simulation.cluster import build_cluster
from podium.protocol import objects as o
from podium.protocol.errors import InvalidRequest
from podium.protocol.framing import Codec
from podium.protocol.labels import parse_selector
from podium.protocol.policy import decode_policy
from podium.protocol.wire import Delete, GetReply, ObjectError, Put
from podium.store.core import (
    ANNOTATION_BIND_COMPLETED,
    ANNOTATION_SELECTED_NODE,
    StoreCore,
    StoreRejected,
)

# A failing example holding a megabyte string is printed whole: let the failure, not
# Hypothesis' warning about the size of its report, be what fails.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Generating overly large repr:hypothesis.errors.HypothesisWarning"
)

CODECS = {"json": Codec("json"), "msgpack": Codec("msgpack")}

# A cluster to start from, so that pods find nodes, claims and classes some of the time.
BASE: list[dict[str, Any]] = [
    {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": 110}},
    }
    for name, zone in (("n1", "a"), ("n2", "b"))
] + [
    {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    {"kind": "PriorityClass", "metadata": {"name": "low"}, "value": -5},
    {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "shop"},
        "spec": {"volumeName": "pv1"},
    },
    {"kind": "PersistentVolume", "metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": 1}}},
]

# --------------------------------------------------------------------------- the store


def new_core() -> StoreCore:
    uids = iter(range(1, 1 << 30))
    core = StoreCore(wall_clock=lambda: 1795341600.0, new_uid=lambda: f"uid-{next(uids)}")
    put = CODECS["json"].decode_request(_frame("json", {"msg": "put", "id": 0, "objects": BASE}))
    assert isinstance(put, Put)
    core.write(put.objects)
    return core


def _frame(encoding: str, message: dict[str, Any]) -> bytes:
    if encoding == "json":
        return msgspec.json.encode(message)
    return msgspec.msgpack.encode(message)


@dataclass
class State:
    """Everything a refused request must leave as it was."""

    revision: int
    objects: list[o.KubeObject]
    log: list[Any]
    stats: Any

    @classmethod
    def of(cls, core: StoreCore) -> State:
        return cls(
            core.revision,
            core.all_objects(),
            core.events_after(max(0, core.oldest_revision - 1))[1],
            core.stats(),
        )


@dataclass
class Tally:
    """What a run did, for Hypothesis' statistics (``--hypothesis-show-statistics``)."""

    decoded: int = 0
    refused_at_decode: int = 0
    committed: int = 0
    rejected: int = 0
    reads: int = 0
    decisions: int = 0
    frozen: dict[str, o.PodSpec] = field(default_factory=dict)  # bound pod uid -> its spec


def _event(text: str) -> None:
    """Count ``text`` in Hypothesis' statistics (the regression tests run outside Hypothesis)."""
    if currently_in_test_context():
        event(text)


def check_decode_error(exc: InvalidRequest, what: str) -> None:
    assert exc.request_id == 1, exc.message
    assert exc.path is not None and exc.path.startswith(f"$.{what}"), (exc.path, exc.message)
    assert len(exc.message) < 4096


def apply_put(core: StoreCore, request: PutRequest, encoding: str, tally: Tally) -> None:
    payload = _frame(encoding, {"msg": "put", "id": 1, "objects": request.objects})
    try:
        msg = CODECS[encoding].decode_request(payload)
    except InvalidRequest as exc:
        note(f"refused at decode: {exc.path}: {exc.message[:200]}")
        check_decode_error(exc, "objects[")
        _event(f"put refused at decode: {exc.message.split(' at ')[0][:40]}")
        tally.refused_at_decode += 1
        return
    assert isinstance(msg, Put)
    tally.decoded += 1
    before = State.of(core)
    try:
        revision, statuses, changes = core.write(msg.objects)
    except StoreRejected as exc:
        note(f"rejected: {exc.code}: {exc.message[:200]}")
        _event(f"put rejected at {exc.errors[0].path}")
        tally.rejected += 1
        assert State.of(core) == before, "a rejected put wrote something"
        check_rejection(exc, msg.objects, [])
        return
    tally.committed += 1
    check_committed(core, before, revision, changes)
    assert [(s.kind, s.name) for s in statuses] == [
        (type(x).__name__, x.metadata.name) for x in msg.objects
    ]
    last: dict[tuple[str, str, str], o.KubeObject] = {}
    for obj in msg.objects:
        kind = type(obj).__name__
        namespace = (obj.metadata.namespace or "default") if kind in o.NAMESPACED_KINDS else ""
        last[(kind, namespace, obj.metadata.name)] = obj
    for (kind, namespace, name), sent in last.items():
        stored = core.get(kind, namespace, name)
        assert stored is not None, (kind, namespace, name)
        assert stored == as_stored(sent, stored), (kind, namespace, name)
        check_round_trip(stored)


def apply_delete(core: StoreCore, request: DeleteRequest, encoding: str, tally: Tally) -> None:
    payload = _frame(encoding, {"msg": "delete", "id": 1, "refs": request.refs})
    msg = CODECS[encoding].decode_request(payload)
    assert isinstance(msg, Delete)
    before = State.of(core)
    try:
        revision, statuses, changes = core.write((), msg.refs)
    except StoreRejected as exc:
        tally.rejected += 1
        assert State.of(core) == before, "a rejected delete wrote something"
        check_rejection(exc, [], msg.refs)
        return
    tally.committed += 1
    check_committed(core, before, revision, changes)
    assert all(s.action == "deleted" for s in statuses)
    for ref in msg.refs:
        namespace = (ref.namespace or "default") if ref.kind in o.NAMESPACED_KINDS else ""
        assert core.get(ref.kind, namespace, ref.name) is None


def check_rejection(exc: StoreRejected, puts: Sequence[o.KubeObject], refs: Sequence[Any]) -> None:
    assert exc.errors, exc.message
    assert exc.code in ("invalid", "not_found"), exc.code
    assert exc.message.endswith("nothing was written") or "nothing was written" in exc.message
    missing = 0
    for error in exc.errors:
        assert isinstance(error, ObjectError)
        assert 0 <= error.index < len(puts) + len(refs), error
        if error.index < len(puts):
            obj = puts[error.index]
            assert (error.kind, error.name) == (type(obj).__name__, obj.metadata.name), error
            assert error.path is not None and error.path.startswith("$."), error
        else:
            ref = refs[error.index - len(puts)]
            assert (error.kind, error.name) == (ref.kind, ref.name), error
            if error.path is None:
                assert "not found" in error.message, error
                missing += 1
            else:
                assert error.path == "$.kind", error
        assert error.message
    assert (exc.code == "not_found") == (missing == len(exc.errors)), exc.code


def check_committed(core: StoreCore, before: State, revision: int, changes: Sequence[Any]) -> None:
    assert revision == core.revision
    assert [c.revision for c in changes] == list(range(before.revision + 1, revision + 1))


def as_stored(sent: o.KubeObject, stored: o.KubeObject) -> o.KubeObject:
    """``sent`` with the fields the store owns taken from ``stored`` (core.py's docstring)."""
    meta = msgspec.structs.replace(
        sent.metadata,
        namespace=stored.metadata.namespace,
        uid=stored.metadata.uid,
        resource_version=stored.metadata.resource_version,
        creation_timestamp=stored.metadata.creation_timestamp,
    )
    obj: Any = msgspec.structs.replace(sent, metadata=meta)
    if isinstance(obj, o.Node) and isinstance(stored, o.Node) and not obj.status.allocatable:
        obj = msgspec.structs.replace(
            obj, status=msgspec.structs.replace(obj.status, allocatable=stored.status.allocatable)
        )
    elif isinstance(obj, o.Pod) and isinstance(stored, o.Pod):
        spec = msgspec.structs.replace(
            obj.spec,
            priority=stored.spec.priority,
            preemption_policy=stored.spec.preemption_policy,
            node_name=obj.spec.node_name or stored.spec.node_name,
        )
        status = stored.status if obj.status == o.PodStatus() else obj.status
        obj = msgspec.structs.replace(obj, spec=spec, status=status)
    elif isinstance(obj, o.PersistentVolumeClaim) and isinstance(stored, o.PersistentVolumeClaim):
        spec = msgspec.structs.replace(
            obj.spec, volume_name=obj.spec.volume_name or stored.spec.volume_name
        )
        annotations = dict(obj.metadata.annotations)
        for key in (ANNOTATION_BIND_COMPLETED, ANNOTATION_SELECTED_NODE):
            if key not in annotations and key in stored.metadata.annotations:
                annotations[key] = stored.metadata.annotations[key]
        obj = msgspec.structs.replace(
            obj,
            spec=spec,
            status=obj.status if obj.status.phase else stored.status,
            metadata=msgspec.structs.replace(obj.metadata, annotations=annotations),
        )
    elif isinstance(obj, o.PersistentVolume) and isinstance(stored, o.PersistentVolume):
        spec = msgspec.structs.replace(
            obj.spec, claim_ref=obj.spec.claim_ref or stored.spec.claim_ref
        )
        status = obj.status if obj.status.phase else stored.status
        obj = msgspec.structs.replace(obj, spec=spec, status=status)
    elif (
        isinstance(obj, o.PodDisruptionBudget | o.PodGroup)
        and type(stored) is type(obj)
        and obj.status is None
    ):
        # The status subresource's rule: a put without a status keeps the stored one.
        obj = msgspec.structs.replace(obj, status=stored.status)
    result: o.KubeObject = obj
    return result


def check_round_trip(stored: o.KubeObject) -> None:
    """What the store accepted goes back to a client, in both encodings, unchanged."""
    reply = GetReply(id=1, revision=1, items=[stored])
    for codec in CODECS.values():
        assert codec.decode_reply(codec.encode(reply)) == reply


def check_invariants(core: StoreCore, tally: Tally) -> None:
    objects = core.all_objects()
    log = core.events_after(max(0, core.oldest_revision - 1))[1]
    revisions = [c.revision for c in log]
    assert revisions == sorted(set(revisions))
    assert not log or log[-1].revision == core.revision
    last_change = {(c.kind, c.namespace, c.name): c.revision for c in log}
    uids = [x.metadata.uid for x in objects]
    assert len(uids) == len(set(uids)), "two objects share a uid"
    defaults = 0
    counts: dict[str, int] = {}
    for obj in objects:
        kind = type(obj).__name__
        counts[kind] = counts.get(kind, 0) + 1
        meta = obj.metadata
        assert (meta.namespace != "") == (kind in o.NAMESPACED_KINDS), (kind, meta.namespace)
        assert meta.uid and meta.creation_timestamp
        assert int(meta.resource_version) == last_change[(kind, meta.namespace, meta.name)]
        assert core.get(kind, meta.namespace, meta.name) is obj
        if isinstance(obj, o.PriorityClass) and obj.global_default:
            defaults += 1
        if isinstance(obj, o.Node):
            assert obj.status.allocatable or not obj.status.capacity
        if isinstance(obj, o.Pod):
            assert obj.spec.priority is not None, "a stored pod was not admitted"
            if obj.spec.node_name:
                frozen = tally.frozen.setdefault(meta.uid, obj.spec)
                assert obj.spec == frozen, "a bound pod's spec changed"
    assert defaults <= 1, "two default PriorityClasses"
    stats = core.stats()
    assert stats.revision == core.revision
    assert {k: v for k, v in stats.objects.items() if v} == counts


def apply_get(core: StoreCore, request: GetRequest, tally: Tally) -> None:
    tally.reads += 1
    before = State.of(core)
    selector = parse_selector_or_none(request.selector)
    if selector is False:
        return
    outcome: tuple[int, list[o.KubeObject]] | StoreRejected
    try:
        outcome = core.read(request.kind, request.name, request.namespace, selector)
    except StoreRejected as exc:
        outcome = exc
    if isinstance(outcome, StoreRejected):
        if outcome.code == "invalid":
            assert request.kind not in o.KINDS
        else:
            assert (outcome.code, bool(request.name)) == ("not_found", True), outcome.code
    else:
        revision, items = outcome
        assert revision == core.revision
        assert all(type(x).__name__ == request.kind for x in items)
    assert State.of(core) == before


def parse_selector_or_none(text: str) -> o.LabelSelector | bool | None:
    """The parsed selector (None for ""), or False when it is refused (as it must be: with a
    ValueError naming the selector)."""
    if not text:
        return None
    refused: ValueError
    try:
        return parse_selector(text)
    except ValueError as exc:
        refused = exc
    assert "couldn't parse the label selector" in str(refused)
    return False


def apply_watch(core: StoreCore, request: WatchRequest, tally: Tally) -> None:
    tally.reads += 1
    outcome: tuple[int, list[Any]] | StoreRejected
    try:
        outcome = core.events_after(request.from_revision)
    except StoreRejected as exc:
        outcome = exc
    if isinstance(outcome, StoreRejected):
        valid = 0 <= request.from_revision <= core.revision
        assert outcome.code == ("gone" if valid else "invalid"), outcome.code
    else:
        revision, changes = outcome
        assert revision == core.revision
        assert all(c.revision > request.from_revision for c in changes)


# --------------------------------------------------------------------------- scheduling


@cache
def policies() -> list[tuple[list[Any], list[tuple[Any, int]]]]:
    """The default policy (vector forms), and every predicate and priority (scalar forms)."""
    default = build_plugins(default_policy())
    every = {
        "kind": "Policy",
        "apiVersion": "v1",
        "predicates": [
            {"name": name}
            for name in names.PREDICATES_ORDERING
            if name not in (names.CHECK_NODE_LABEL_PRESENCE, names.CHECK_SERVICE_AFFINITY)
        ]
        + [
            {
                "name": "presence",
                "argument": {"labelsPresence": {"labels": ["disk"], "presence": True}},
            },
            {"name": "affinity", "argument": {"serviceAffinity": {"labels": ["app"]}}},
        ],
        "priorities": [
            {"name": name, "weight": 1 + i % 3} for i, name in enumerate(names.PRIORITIES)
        ]
        + [
            {
                "name": "preference",
                "weight": 2,
                "argument": {"labelPreference": {"label": "disk", "presence": True}},
            },
            {"name": "spread", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "app"}}},
        ],
    }
    filters, scorers = build_plugins(resolve_policy(decode_policy(every).policy))
    return [
        default,
        ([ScalarFilter(f) for f in filters], [(ScalarScore(s), w) for s, w in scorers]),
    ]


def schedule_pending(core: StoreCore, tally: Tally, limit: int = 3) -> None:
    cluster = build_cluster(core.all_objects())
    _event(f"pending pods: {min(len(cluster.pending), limit)}")
    for pod in cluster.pending[:limit]:
        for check_all, (filters, scorers) in zip((False, True), policies(), strict=True):
            snapshot = Snapshot([cluster.infos[n] for n in cluster.tree.list()], cluster.objects)
            result = decide(
                FilterStage(filters, always_check_all_predicates=check_all),
                ScoreStage(scorers, rng=random.Random(1)),
                pod,
                snapshot,
                explain=True,
            )
            tally.decisions += 1
            check_result(result, snapshot)
            if result.node is None and not result.error:
                would = preempt(pod, snapshot, result.unresolvable, PredicateFitCheck(filters))
                assert would.node is None or snapshot.get(would.node) is not None
                assert fit_error_with_preemption(result.message or "", would)
                hints(pod, result, snapshot)


def check_result(result: ScheduleResult, snapshot: Snapshot) -> None:
    assert isinstance(result, ScheduleResult)
    if result.node is not None:
        assert snapshot.get(result.node) is not None
        assert not result.error
    else:
        assert result.message, result


# --------------------------------------------------------------------------- tests


@fuzz(30)
@given(
    encoding=st.sampled_from(["msgpack", "json"]),
    requests=st.lists(requests, min_size=1, max_size=8),
)
def test_requests_commit_or_change_nothing_and_the_scheduler_copes(
    encoding: str, requests: list[Any]
) -> None:
    core = new_core()
    tally = Tally()
    for request in requests:
        event(type(request).__name__)
        match request:
            case PutRequest():
                apply_put(core, request, encoding, tally)
            case DeleteRequest():
                apply_delete(core, request, encoding, tally)
            case GetRequest():
                apply_get(core, request, tally)
            case WatchRequest():
                apply_watch(core, request, tally)
        check_invariants(core, tally)
    schedule_pending(core, tally)
    event("puts committed", tally.committed)
    event("puts refused at decode", tally.refused_at_decode)
    event("writes rejected by the store", tally.rejected)
    event("scheduling decisions", tally.decisions)


@fuzz(80)
@given(encoding=st.sampled_from(["msgpack", "json"]), obj=objects)
def test_one_object_is_stored_as_sent_or_refused_with_its_path(
    encoding: str, obj: dict[str, Any]
) -> None:
    core = new_core()
    tally = Tally()
    apply_put(core, PutRequest([obj]), encoding, tally)
    event(
        "committed"
        if tally.committed
        else "rejected by the store"
        if tally.rejected
        else "refused at decode"
    )
    check_invariants(core, tally)
    if tally.committed:
        schedule_pending(core, tally, limit=1)


@fuzz(300)
@given(text=st.text(alphabet=st.sampled_from(list("ab=!(),<> inotx-/.0")), max_size=20) | st.text())
def test_any_selector_string_parses_or_is_a_value_error(text: str) -> None:
    parse_selector_or_none(text)


# --------------------------------------------------------------------------- regressions


def test_requests_summing_past_int64_on_one_node_leave_scheduling_working() -> None:
    """Found by this fuzzing: two pods bound to one node, each requesting
    ``9999999999999999999Ei`` cpu (saturated to int64 alone), sum past int64. Building the
    snapshot's columns raised OverflowError, so every attempt on the whole cluster failed."""
    huge = "9999999999999999999Ei"
    objects: list[dict[str, Any]] = [
        {"kind": "Node", "metadata": {"name": "n3"}, "status": {"capacity": {"cpu": huge}}},
        *(
            {
                "kind": "Pod",
                "metadata": {"name": name},
                "spec": {
                    "nodeName": "n3",
                    "containers": [
                        {"resources": {"requests": {"cpu": huge, "example.com/gpu": huge}}}
                    ],
                },
            }
            for name in ("a", "b")
        ),
        {
            "kind": "Pod",
            "metadata": {"name": "c"},
            "spec": {
                "containers": [{"resources": {"requests": {"cpu": "1", "example.com/gpu": 1}}}]
            },
        },
    ]
    core = new_core()
    tally = Tally()
    apply_put(core, PutRequest(objects), "json", tally)
    assert tally.committed == 1
    schedule_pending(core, tally)
    assert tally.decisions == 2


def test_preemption_counts_a_predicate_error_as_a_misfit() -> None:
    """Found by the daemon fuzzing: a pod with an unbound Immediate claim fails PodFitsResources
    everywhere (so the attempt never reaches the volume predicate); preemption then re-checks a
    node without its victims, the volume predicate raises PredicateError, and it escaped
    ``PredicateFitCheck``: the scheduler actor died, and the daemon with it. v1.14's
    ``selectVictimsOnNode`` logs such an error and treats the node as unfit."""
    objects: list[dict[str, Any]] = [
        {
            "kind": "Node",
            "metadata": {"name": "n3"},
            "status": {"capacity": {"cpu": "5", "memory": "1Gi", "pods": 10}},
        },
        {
            "kind": "Pod",
            "metadata": {"name": "victim"},
            "spec": {"nodeName": "n3", "containers": [{"resources": {"requests": {"cpu": "5"}}}]},
        },
        {"kind": "PersistentVolumeClaim", "metadata": {"name": "unbound"}},
        {
            "kind": "Pod",
            "metadata": {"name": "preemptor"},
            "spec": {
                "priorityClassName": "high",
                "containers": [{"resources": {"requests": {"cpu": "5"}}}],
                "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "unbound"}}],
            },
        },
    ]
    core = new_core()
    tally = Tally()
    apply_put(core, PutRequest(objects), "json", tally)
    assert tally.committed == 1
    schedule_pending(core, tally)
    assert tally.decisions == 2
