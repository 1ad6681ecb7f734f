"""Every Prometheus metric Podium exports, on one registry.

Kubernetes counterpart: pkg/scheduler/metrics/metrics.go (the names, types, labels and buckets
of the releases after v1.14, adopted on purpose so kube-scheduler dashboards work; README.md
"Watch it run", docs/differences.md "Metrics and traces"). Podium's own metrics are under
``podium_``.
tests/fixtures/metrics.tsv is the checked-in table tests/unit/protocol/test_metrics.py diffs
:data:`REGISTRY` against.

====================================================  =========  ================  =================
name                                                  type       labels            buckets
====================================================  =========  ================  =================
scheduler_schedule_attempts_total                     counter    result, profile
scheduler_scheduling_attempt_duration_seconds         histogram  result, profile   exp(0.001,2,15)
scheduler_pod_scheduling_sli_duration_seconds         histogram  attempts          exp(0.01,2,20)
scheduler_pod_scheduling_attempts                     histogram                    exp(1,2,5)
scheduler_pending_pods                                gauge      queue
scheduler_queue_incoming_pods_total                   counter    queue, event
scheduler_framework_extension_point_duration_seconds  histogram  extension_point,  exp(0.0001,2,12)
                                                                 status, profile
scheduler_plugin_execution_duration_seconds           histogram  plugin,           exp(1e-5,1.5,20)
                                                                 extension_point,
                                                                 status
scheduler_unschedulable_pods                          gauge      plugin, profile
scheduler_cache_size                                  gauge      type
scheduler_scheduler_cache_size                        gauge      type
scheduler_preemption_attempts_total                   counter
scheduler_preemption_victims                          histogram                    exp(1,2,7)
podium_store_commit_duration_seconds                  histogram                    exp(0.0001,2,16)
podium_store_commit_batch_size                        histogram                    exp(1,2,14)
podium_store_commit_errors_total                      counter
podium_store_revision                                 gauge
podium_protocol_connections                           gauge
podium_protocol_requests_total                        counter    type
podium_protocol_errors_total                          counter    type, code
podium_watchers                                       gauge
podium_watcher_lag_revisions                          gauge
podium_recovery_duration_seconds                      gauge
podium_extender_request_duration_seconds              histogram  extender, verb,   exp(0.0001,2,16)
                                                                 result
podium_extender_errors_total                          counter    extender, verb
podium_pod_groups_waiting                             gauge
podium_pod_group_attempts_total                       counter    result
podium_pod_group_scheduling_duration_seconds          histogram                    exp(0.01,2,20)
process_* (ProcessCollector)
====================================================  =========  ================  =================

``exp(start, factor, count)`` is Kubernetes' ``ExponentialBuckets``. The cache gauge is
``scheduler_cache_size``, today's name (kube-scheduler v1.35 pkg/scheduler/metrics/metrics.go
``CacheSize``: subsystem ``scheduler``, name ``cache_size``, label ``type``); the same values are
also exported as ``scheduler_scheduler_cache_size``, the name of the releases that spelled the
subsystem twice, so older dashboards still find it. Both are set by :func:`set_cache_size`.

Label values: ``profile`` is always ``default-scheduler``; ``result`` scheduled, unschedulable,
error (an assume the cache refused counts as error, as Kubernetes counts an assume failure; the
same three for a pod group's attempts);
``queue`` active, backoff, unschedulable; ``extension_point`` Filter, Score, Reserve, PreBind,
Bind; ``status`` Success, Unschedulable, Error; ``plugin`` the canonical predicate or priority
name; ``type`` (protocol) the request's wire tag, or ``frame`` for a frame that could not be
read; ``code`` an ErrorReply code.

Hot paths bind their labels once, here (``.labels()`` costs a dict lookup under a lock;
``Counter.inc`` ~0.7 us and ``Histogram.observe`` ~1.5 us once bound, STYLE.md). Rendering
``/metrics`` takes 16-25 ms: the HTTP actor renders in a worker thread.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)

__all__ = [
    "ASSUMED_PODS",
    "ATTEMPTS_ERROR",
    "ATTEMPTS_SCHEDULED",
    "ATTEMPTS_UNSCHEDULABLE",
    "ATTEMPT_DURATION_ERROR",
    "ATTEMPT_DURATION_SCHEDULED",
    "ATTEMPT_DURATION_UNSCHEDULABLE",
    "BIND_ERROR",
    "BIND_SUCCESS",
    "CACHE_NODES",
    "CACHE_PODS",
    "CACHE_SIZE",
    "ETCD_ERRORS",
    "ETCD_REQUEST_DURATION",
    "EXTENDER_ERRORS",
    "EXTENDER_REQUEST_DURATION",
    "EXTENSION_POINT_DURATION",
    "FILTER_ERROR",
    "FILTER_SUCCESS",
    "FILTER_UNSCHEDULABLE",
    "LEADER",
    "LEADER_TRANSITIONS",
    "MASTER_STATUS",
    "PENDING_ACTIVE",
    "PENDING_BACKOFF",
    "PENDING_PODS",
    "PENDING_UNSCHEDULABLE",
    "PLUGIN_EXECUTION_DURATION",
    "PLUGIN_METRICS_SAMPLE_PERCENT",
    "POD_GROUPS_WAITING",
    "POD_GROUP_ATTEMPTS",
    "POD_GROUP_ATTEMPTS_ERROR",
    "POD_GROUP_ATTEMPTS_SCHEDULED",
    "POD_GROUP_ATTEMPTS_UNSCHEDULABLE",
    "POD_GROUP_SCHEDULING_DURATION",
    "POD_SCHEDULING_ATTEMPTS",
    "POD_SCHEDULING_SLI_DURATION",
    "PREEMPTION_ATTEMPTS",
    "PREEMPTION_VICTIMS",
    "PROFILE",
    "PROTOCOL_CONNECTIONS",
    "PROTOCOL_ERRORS",
    "PROTOCOL_REQUESTS",
    "QUEUE_INCOMING_PODS",
    "RECOVERY_DURATION",
    "REGISTRY",
    "RESERVE_ERROR",
    "RESERVE_SUCCESS",
    "SCHEDULER_CACHE_SIZE",
    "SCHEDULE_ATTEMPTS",
    "SCHEDULING_ATTEMPT_DURATION",
    "SCORE_ERROR",
    "SCORE_SUCCESS",
    "STORE_COMMIT_BATCH_SIZE",
    "STORE_COMMIT_DURATION",
    "STORE_COMMIT_ERRORS",
    "STORE_REVISION",
    "UNSCHEDULABLE_PODS",
    "WATCHERS",
    "WATCHER_LAG",
    "attempts_label",
    "exponential_buckets",
    "observe_plugin",
    "set_cache_size",
    "sli_duration",
]

PROFILE: Final = "default-scheduler"
"""The one profile's name (the ``profile`` label)."""

PLUGIN_METRICS_SAMPLE_PERCENT: Final = 10
"""Percent of attempts whose per-plugin durations are recorded (Kubernetes'
``pluginMetricsSamplePercent``)."""


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Kubernetes' ``ExponentialBuckets``: ``count`` upper bounds ``start * factor**i``."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError(
            f"exponential buckets need count >= 1, start > 0, factor > 1; "
            f"got {count}, {start}, {factor}"
        )
    return [start * factor**i for i in range(count)]


# Kubernetes exposes no ``*_created`` series; they would double the series a scrape renders.
# (A process-wide prometheus_client setting: Podium has no other registry.)
disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated in prometheus_client

REGISTRY: Final = CollectorRegistry(auto_describe=True)
"""Podium's registry (no default collectors beyond the process one)."""

ProcessCollector(registry=REGISTRY)

# --------------------------------------------------------------------------- scheduler_

SCHEDULE_ATTEMPTS: Final = Counter(
    "scheduler_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could "
    "not be scheduled, while 'error' means an internal scheduler problem.",
    ["result", "profile"],
    registry=REGISTRY,
)
SCHEDULING_ATTEMPT_DURATION: Final = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (from pop to the hand-off to the binder).",
    ["result", "profile"],
    buckets=exponential_buckets(0.001, 2, 15),
    registry=REGISTRY,
)
POD_SCHEDULING_SLI_DURATION: Final = Histogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue "
    "and might involve multiple scheduling attempts.",
    ["attempts"],
    buckets=exponential_buckets(0.01, 2, 20),
    registry=REGISTRY,
)
POD_SCHEDULING_ATTEMPTS: Final = Histogram(
    "scheduler_pod_scheduling_attempts",
    "Number of attempts to successfully schedule a pod.",
    buckets=exponential_buckets(1, 2, 5),
    registry=REGISTRY,
)
PENDING_PODS: Final = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
    "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
    "unschedulablePods.",
    ["queue"],
    registry=REGISTRY,
)
QUEUE_INCOMING_PODS: Final = Counter(
    "scheduler_queue_incoming_pods_total",
    "Number of pods added to scheduling queues by event and queue type.",
    ["queue", "event"],
    registry=REGISTRY,
)
EXTENSION_POINT_DURATION: Final = Histogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"],
    buckets=exponential_buckets(0.0001, 2, 12),
    registry=REGISTRY,
)
PLUGIN_EXECUTION_DURATION: Final = Histogram(
    "scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point (sampled: "
    f"{PLUGIN_METRICS_SAMPLE_PERCENT}% of attempts).",
    ["plugin", "extension_point", "status"],
    buckets=exponential_buckets(0.00001, 1.5, 20),
    registry=REGISTRY,
)
UNSCHEDULABLE_PODS: Final = Gauge(
    "scheduler_unschedulable_pods",
    "The number of unschedulable pods broken down by plugin name. A pod will increment the "
    "gauge for all plugins that caused it to not schedule and so this metric have meaning only "
    "when broken down by plugin.",
    ["plugin", "profile"],
    registry=REGISTRY,
)
CACHE_SIZE: Final = Gauge(
    "scheduler_cache_size",
    "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
    ["type"],
    registry=REGISTRY,
)
SCHEDULER_CACHE_SIZE: Final = Gauge(
    "scheduler_scheduler_cache_size",
    "Number of nodes, pods, and assumed (bound) pods in the scheduler cache (the older name "
    "of scheduler_cache_size, kept for older dashboards).",
    ["type"],
    registry=REGISTRY,
)
PREEMPTION_ATTEMPTS: Final = Counter(
    "scheduler_preemption_attempts",
    "Total preemption attempts in the cluster till now",
    registry=REGISTRY,
)
PREEMPTION_VICTIMS: Final = Histogram(
    "scheduler_preemption_victims",
    "Number of selected preemption victims",
    buckets=exponential_buckets(1, 2, 7),
    registry=REGISTRY,
)

# --------------------------------------------------------------------------- podium_

EXTENDER_REQUEST_DURATION: Final = Histogram(
    "podium_extender_request_duration_seconds",
    "Duration of one call to a scheduler extender (HTTP round trip and decode), by extender "
    "(its urlPrefix), verb and result (ok, error).",
    ["extender", "verb", "result"],
    buckets=exponential_buckets(0.0001, 2, 16),
    registry=REGISTRY,
)
EXTENDER_ERRORS: Final = Counter(
    "podium_extender_errors_total",
    "Scheduler extender calls that failed (unreachable, timeout, status, bad reply, Error).",
    ["extender", "verb"],
    registry=REGISTRY,
)
STORE_COMMIT_DURATION: Final = Histogram(
    "podium_store_commit_duration_seconds",
    "Duration of one store commit (one durable transaction for SQLite).",
    buckets=exponential_buckets(0.0001, 2, 16),
    registry=REGISTRY,
)
STORE_COMMIT_BATCH_SIZE: Final = Histogram(
    "podium_store_commit_batch_size",
    "Changes per store commit (group commit).",
    buckets=exponential_buckets(1, 2, 14),
    registry=REGISTRY,
)
STORE_COMMIT_ERRORS: Final = Counter(
    "podium_store_commit_errors_total",
    "Store commits that failed (the daemon stops after one).",
    registry=REGISTRY,
)
ETCD_REQUEST_DURATION: Final = Histogram(
    "podium_etcd_request_duration_seconds",
    "Duration of one request to etcd (the etcd store), by operation and result (ok, error, "
    "timeout, lost, unavailable).",
    ["op", "result"],
    buckets=exponential_buckets(0.0001, 2, 18),
    registry=REGISTRY,
)
ETCD_ERRORS: Final = Counter(
    "podium_etcd_errors_total",
    "Requests to etcd that failed (each endpoint tried counts; the store retries elsewhere).",
    ["op"],
    registry=REGISTRY,
)
STORE_REVISION: Final = Gauge(
    "podium_store_revision",
    "The last committed store revision.",
    registry=REGISTRY,
)
PROTOCOL_CONNECTIONS: Final = Gauge(
    "podium_protocol_connections",
    "Open protocol connections.",
    registry=REGISTRY,
)
PROTOCOL_REQUESTS: Final = Counter(
    "podium_protocol_requests_total",
    "Protocol requests received, by type.",
    ["type"],
    registry=REGISTRY,
)
PROTOCOL_ERRORS: Final = Counter(
    "podium_protocol_errors_total",
    "Protocol error replies sent, by request type ('frame': a frame that could not be read) "
    "and error code.",
    ["type", "code"],
    registry=REGISTRY,
)
WATCHERS: Final = Gauge(
    "podium_watchers",
    "Open watches.",
    registry=REGISTRY,
)
WATCHER_LAG: Final = Gauge(
    "podium_watcher_lag_revisions",
    "The largest (store revision - last revision delivered) over open watches.",
    registry=REGISTRY,
)
LEADER: Final = Gauge(
    "podium_leader",
    "1 while this daemon leads (schedules and writes; always, without leader election), 0 "
    "while it follows.",
    registry=REGISTRY,
)
MASTER_STATUS: Final = Gauge(
    "leader_election_master_status",
    "Kubernetes' leader election gauge: 1 while this replica is the master of the lock name.",
    ["name"],
    registry=REGISTRY,
)
LEADER_TRANSITIONS: Final = Counter(
    "podium_leader_transitions_total",
    "Times this replica became leader.",
    registry=REGISTRY,
)
POD_GROUPS_WAITING: Final = Gauge(
    "podium_pod_groups_waiting",
    "Pod groups (gangs) whose pending members wait before the scheduling queue: the group "
    "does not exist yet, or it has fewer pods than its minCount.",
    registry=REGISTRY,
)
POD_GROUP_ATTEMPTS: Final = Counter(
    "podium_pod_group_attempts_total",
    "Attempts to place a pod group's members all or nothing in one batch, by result: "
    "'scheduled' (at least minCount placed, assumed and handed to the binder), "
    "'unschedulable' (fewer fit: none placed), 'error' (the cache refused a member).",
    ["result"],
    registry=REGISTRY,
)
POD_GROUP_SCHEDULING_DURATION: Final = Histogram(
    "podium_pod_group_scheduling_duration_seconds",
    "Seconds from a pod group's quorum (the group exists with minCount pods) to the bind of "
    "the last member its placing attempt placed, retries included.",
    buckets=exponential_buckets(0.01, 2, 20),
    registry=REGISTRY,
)
RECOVERY_DURATION: Final = Gauge(
    "podium_recovery_duration_seconds",
    "How long the last start's recovery took (0 for the in-memory store).",
    registry=REGISTRY,
)

# --------------------------------------------------------------------------- bound children

ATTEMPTS_SCHEDULED: Final = SCHEDULE_ATTEMPTS.labels(result="scheduled", profile=PROFILE)
ATTEMPTS_UNSCHEDULABLE: Final = SCHEDULE_ATTEMPTS.labels(result="unschedulable", profile=PROFILE)
ATTEMPTS_ERROR: Final = SCHEDULE_ATTEMPTS.labels(result="error", profile=PROFILE)

ATTEMPT_DURATION_SCHEDULED: Final = SCHEDULING_ATTEMPT_DURATION.labels(
    result="scheduled", profile=PROFILE
)
ATTEMPT_DURATION_UNSCHEDULABLE: Final = SCHEDULING_ATTEMPT_DURATION.labels(
    result="unschedulable", profile=PROFILE
)
ATTEMPT_DURATION_ERROR: Final = SCHEDULING_ATTEMPT_DURATION.labels(result="error", profile=PROFILE)

POD_GROUP_ATTEMPTS_SCHEDULED: Final = POD_GROUP_ATTEMPTS.labels(result="scheduled")
POD_GROUP_ATTEMPTS_UNSCHEDULABLE: Final = POD_GROUP_ATTEMPTS.labels(result="unschedulable")
POD_GROUP_ATTEMPTS_ERROR: Final = POD_GROUP_ATTEMPTS.labels(result="error")


def _extension_point(point: str, status: str) -> Histogram:
    return EXTENSION_POINT_DURATION.labels(extension_point=point, status=status, profile=PROFILE)


FILTER_SUCCESS: Final = _extension_point("Filter", "Success")
FILTER_UNSCHEDULABLE: Final = _extension_point("Filter", "Unschedulable")
FILTER_ERROR: Final = _extension_point("Filter", "Error")
SCORE_SUCCESS: Final = _extension_point("Score", "Success")
SCORE_ERROR: Final = _extension_point("Score", "Error")
RESERVE_SUCCESS: Final = _extension_point("Reserve", "Success")
RESERVE_ERROR: Final = _extension_point("Reserve", "Error")
BIND_SUCCESS: Final = _extension_point("Bind", "Success")
BIND_ERROR: Final = _extension_point("Bind", "Error")

PENDING_ACTIVE: Final = PENDING_PODS.labels(queue="active")
PENDING_BACKOFF: Final = PENDING_PODS.labels(queue="backoff")
PENDING_UNSCHEDULABLE: Final = PENDING_PODS.labels(queue="unschedulable")

CACHE_NODES: Final = CACHE_SIZE.labels(type="nodes")
CACHE_PODS: Final = CACHE_SIZE.labels(type="pods")
ASSUMED_PODS: Final = CACHE_SIZE.labels(type="assumed_pods")
_CACHE_SIZES: Final = [
    (gauge.labels(type="nodes"), gauge.labels(type="pods"), gauge.labels(type="assumed_pods"))
    for gauge in (CACHE_SIZE, SCHEDULER_CACHE_SIZE)
]


def set_cache_size(*, nodes: int, pods: int, assumed_pods: int) -> None:
    """Set the cache gauge under both its names (today's and the older one)."""
    for nodes_gauge, pods_gauge, assumed_gauge in _CACHE_SIZES:
        nodes_gauge.set(nodes)
        pods_gauge.set(pods)
        assumed_gauge.set(assumed_pods)


_MAX_ATTEMPTS_LABEL = 15


def attempts_label(attempts: int) -> str:
    """Kubernetes' ``getAttemptsLabel``: the attempts, capped at ``"15+"`` (cardinality)."""
    return "15+" if attempts >= _MAX_ATTEMPTS_LABEL else str(attempts)


# Bound on first use: 15 children of 20 buckets each would be 345 idle series per scrape.
_SLI_BY_ATTEMPTS: list[Histogram | None] = [None] * _MAX_ATTEMPTS_LABEL


def sli_duration(attempts: int) -> Histogram:
    """The bound SLI child for a pod bound after ``attempts`` attempts (at least 1)."""
    index = min(max(attempts, 1), _MAX_ATTEMPTS_LABEL) - 1
    child = _SLI_BY_ATTEMPTS[index]
    if child is None:
        child = POD_SCHEDULING_SLI_DURATION.labels(attempts=attempts_label(index + 1))
        _SLI_BY_ATTEMPTS[index] = child
    return child


_PLUGIN_CHILDREN: dict[tuple[str, str, str], Histogram] = {}


def observe_plugin(plugin: str, extension_point: str, status: str, seconds: float) -> None:
    """Record one plugin's time in a sampled attempt (children bound on first use)."""
    key = (plugin, extension_point, status)
    child = _PLUGIN_CHILDREN.get(key)
    if child is None:
        child = PLUGIN_EXECUTION_DURATION.labels(
            plugin=plugin, extension_point=extension_point, status=status
        )
        _PLUGIN_CHILDREN[key] = child
    child.observe(seconds)
