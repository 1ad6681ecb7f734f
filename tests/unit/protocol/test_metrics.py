"""The metrics registry against its checked-in table (README.md, "Watch it run"), the label helpers,
and the generic scheduler's hooks that feed ``scheduler_plugin_execution_duration_seconds`` and
``scheduler_unschedulable_pods``."""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from builders import make_node, make_pod
from prometheus_client import ProcessCollector, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from repo_paths import FIXTURES

from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    Code,
    FilterPlugin,
    ReasonMasks,
    ScorePlugin,
    Skip,
    Status,
    VectorFilterPlugin,
    unschedulable,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.protocol import metrics

TABLE = FIXTURES / "metrics.tsv"


@dataclass(frozen=True)
class Row:
    name: str
    type: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...]


def _buckets(spec: str) -> tuple[float, ...]:
    if spec == "-":
        return ()
    assert spec.startswith("exponential(") and spec.endswith(")"), spec
    start, factor, count = spec[len("exponential(") : -1].split(",")
    return tuple(float(start) * float(factor) ** i for i in range(int(count)))


def _table() -> dict[str, Row]:
    lines = [line for line in TABLE.read_text().splitlines() if not line.startswith("#")]
    header, *body = lines
    assert header.split("\t") == ["name", "type", "labels", "buckets"]
    rows = {}
    for line in body:
        name, type_, labels, buckets = line.split("\t")
        rows[name] = Row(
            name, type_, () if labels == "-" else tuple(labels.split(",")), _buckets(buckets)
        )
    return rows


def _registry() -> dict[str, Row]:
    """The registry's metrics (the process collector's aside), read off the collectors."""
    rows = {}
    collectors: dict[Any, Any] = metrics.REGISTRY._collector_to_names
    for collector in collectors:
        if isinstance(collector, ProcessCollector):
            continue
        assert isinstance(collector, MetricWrapperBase)
        kind = collector._type
        name = collector._name + ("_total" if kind == "counter" else "")
        bounds = tuple(collector._upper_bounds[:-1]) if kind == "histogram" else ()
        rows[name] = Row(name, kind, tuple(collector._labelnames), bounds)
    return rows


def test_registry_matches_the_checked_in_table() -> None:
    table, registry = _table(), _registry()
    assert sorted(registry) == sorted(table)
    for name, want in table.items():
        got = registry[name]
        assert (got.type, got.labels) == (want.type, want.labels), name
        assert got.buckets == pytest.approx(want.buckets, rel=1e-12), name


def test_every_metric_is_rendered_with_its_type() -> None:
    text = generate_latest(metrics.REGISTRY).decode()
    for row in _table().values():
        assert f"# TYPE {row.name} {row.type}\n" in text
    assert "_created" not in text  # Kubernetes exposes no *_created series


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ProcessCollector reads /proc")
def test_process_metrics_are_exported() -> None:
    names = {family.name for family in metrics.REGISTRY.collect()}
    assert {"process_resident_memory_bytes", "process_cpu_seconds"} <= names


def test_bound_children_carry_the_kubernetes_labels() -> None:
    assert metrics.ATTEMPTS_SCHEDULED is metrics.SCHEDULE_ATTEMPTS.labels(
        result="scheduled", profile="default-scheduler"
    )
    assert metrics.RESERVE_SUCCESS is metrics.EXTENSION_POINT_DURATION.labels(
        extension_point="Reserve", status="Success", profile="default-scheduler"
    )
    assert metrics.PENDING_UNSCHEDULABLE is metrics.PENDING_PODS.labels(queue="unschedulable")
    assert metrics.ASSUMED_PODS is metrics.CACHE_SIZE.labels(type="assumed_pods")


def test_the_cache_gauge_is_set_under_todays_name_and_the_older_one() -> None:
    # kube-scheduler v1.35 pkg/scheduler/metrics: subsystem "scheduler", name "cache_size".
    metrics.set_cache_size(nodes=3, pods=7, assumed_pods=2)
    for name in ("scheduler_cache_size", "scheduler_scheduler_cache_size"):
        got = {
            kind: metrics.REGISTRY.get_sample_value(name, {"type": kind})
            for kind in ("nodes", "pods", "assumed_pods")
        }
        assert got == {"nodes": 3, "pods": 7, "assumed_pods": 2}, name


@pytest.mark.parametrize(
    ("attempts", "label"), [(1, "1"), (2, "2"), (14, "14"), (15, "15+"), (99, "15+")]
)
def test_attempts_label_is_capped_as_kubernetes_does(attempts: int, label: str) -> None:
    assert metrics.attempts_label(attempts) == label
    assert metrics.sli_duration(attempts) is metrics.POD_SCHEDULING_SLI_DURATION.labels(
        attempts=label
    )


def test_exponential_buckets() -> None:
    assert metrics.exponential_buckets(1, 2, 5) == [1, 2, 4, 8, 16]
    with pytest.raises(ValueError, match="count >= 1"):
        metrics.exponential_buckets(1, 1, 3)


def test_observe_plugin_records_one_sample() -> None:
    labels = {"plugin": "TestPlugin", "extension_point": "Filter", "status": "Success"}
    name = "scheduler_plugin_execution_duration_seconds"
    before = metrics.REGISTRY.get_sample_value(f"{name}_count", labels) or 0.0
    metrics.observe_plugin("TestPlugin", "Filter", "Success", 0.002)
    metrics.observe_plugin("TestPlugin", "Filter", "Success", 0.003)
    assert metrics.REGISTRY.get_sample_value(f"{name}_count", labels) == before + 2


# --------------------------------------------------------------------------- stage hooks


class _ScalarOdd(FilterPlugin[None]):
    """Rejects odd-numbered nodes (scalar only)."""

    name = "Odd"
    REASON = "node(s) are odd"

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        return unschedulable(self.REASON) if int(node.name[1:]) % 2 else Status()


class _Odd(_ScalarOdd, VectorFilterPlugin[None]):
    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        return [
            (
                self.REASON,
                np.array([int(n[1:]) % 2 == 1 for n in cols.names]),
                Code.UNSCHEDULABLE,
            )
        ]


class _Never(VectorFilterPlugin[None]):
    """Rejects nothing (vector form)."""

    name = "Never"

    def pre_filter(self, pod: PodInfo, snapshot: Snapshot) -> None:
        return None

    def filter(self, pod: PodInfo, meta: None, node: NodeInfo) -> Status:
        return Status()

    def filter_columns(self, pod: PodInfo, meta: None, cols: NodeColumns) -> ReasonMasks:
        return [("never", np.zeros(cols.n, dtype=bool), Code.UNSCHEDULABLE)]


class _Flat(ScorePlugin[None]):
    name = "Flat"

    def pre_score(self, pod: PodInfo, snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> None:
        return None

    def score(self, pod: PodInfo, meta: None, node: NodeInfo) -> int:
        return 1

    def normalize(
        self, pod: PodInfo, meta: Skip | None, nodes: Sequence[NodeInfo], scores: list[int]
    ) -> list[int]:
        return scores


def _snapshot(n: int) -> Snapshot:
    return Snapshot([make_node(f"n{i}").capacity(cpu="4").info() for i in range(n)])


Observed = list[tuple[str, str, str]]


def _recorder() -> tuple[Observed, Any]:
    seen: Observed = []

    def observe(plugin: str, point: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        seen.append((plugin, point, status))

    return seen, observe


@pytest.mark.parametrize("odd", [_Odd(), _ScalarOdd()], ids=["vector", "loop"])
def test_filter_stage_names_the_rejecting_predicates_and_times_each(odd: _ScalarOdd) -> None:
    stage = FilterStage([_Never(), odd])
    seen, observe = _recorder()
    result, feasible = stage.run(make_pod().info(), _snapshot(4), observe=observe)
    assert [i % 2 for i in feasible] == [0, 0]
    assert result.failed_plugins == {"Odd"}
    assert sorted(seen) == [("Never", "Filter", "Success"), ("Odd", "Filter", "Unschedulable")]


@pytest.mark.parametrize("odd", [_Odd(), _ScalarOdd()], ids=["vector", "loop"])
def test_filter_stage_records_failed_plugins_without_sampling(odd: _ScalarOdd) -> None:
    result, feasible = FilterStage([odd]).run(make_pod().info(), _snapshot(3))
    assert result.failed_plugins == {"Odd"}
    assert feasible == [0, 2]
    nothing, _ = FilterStage([_Never()]).run(make_pod().info(), _snapshot(3))
    assert nothing.failed_plugins == set()


def test_score_stage_times_each_priority() -> None:
    snap = _snapshot(3)
    filtered, feasible = FilterStage([]).run(make_pod().info(), snap)
    seen, observe = _recorder()
    stage = ScoreStage([(_Flat(), 1)], rng=random.Random(1))
    result = stage.run(make_pod().info(), snap, filtered, feasible, observe=observe)
    assert result.node is not None
    assert seen == [("Flat", "Score", "Success")]
