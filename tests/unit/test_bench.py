"""``podium bench``'s arithmetic, workloads and table (its runs: tests/e2e/test_bench.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from podium.actors.bench import workload as bench
from podium.actors.bench.scheduler_perf import histogram_quantile, window_stats
from podium.actors.bench.workload import WORKLOADS
from podium.actors.cli.bench import render_table
from podium.actors.cli.main import build_parser, main
from podium.actors.core.policy import resolve_policy
from podium.protocol.policy import decode_policy

INF = math.inf


@dataclass(frozen=True)
class WindowCase:
    name: str
    windows: tuple[float, ...]
    want: dict[str, float]


# scheduler_perf util.go throughputCollector.collect: the mean of the windows, and percentile p
# at index ceil(len * p / 100) - 1 of the sorted windows.
WINDOW_CASES = [
    WindowCase("no window", (), {"average": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}),
    WindowCase("one window", (7.0,), {"average": 7.0, "p50": 7.0, "p90": 7.0, "p99": 7.0}),
    WindowCase(
        "four windows", (3.0, 1.0, 2.0, 4.0), {"average": 2.5, "p50": 2.0, "p90": 4.0, "p99": 4.0}
    ),
    WindowCase(
        "ten windows",
        tuple(float(x) for x in range(10, 0, -1)),
        {"average": 5.5, "p50": 5.0, "p90": 9.0, "p99": 10.0},
    ),
]


@pytest.mark.parametrize("case", WINDOW_CASES, ids=lambda c: c.name)
def test_window_stats_follow_scheduler_perf(case: WindowCase) -> None:
    assert window_stats(case.windows) == case.want


@dataclass(frozen=True)
class QuantileCase:
    name: str
    q: float
    buckets: tuple[tuple[float, float], ...]
    want: float


# Prometheus histogram_quantile: linear inside the bucket holding the rank; a rank in the +Inf
# bucket answers the highest finite bound.
QUANTILE_CASES = [
    QuantileCase("top of a bucket", 0.5, ((0.001, 0), (0.002, 10), (0.004, 20), (INF, 20)), 0.002),
    QuantileCase("inside a bucket", 0.75, ((0.001, 0), (0.002, 10), (0.004, 20), (INF, 20)), 0.003),
    QuantileCase("first bucket from zero", 0.5, ((0.001, 4), (INF, 4)), 0.0005),
    QuantileCase("in the +Inf bucket", 0.9, ((1.0, 5), (INF, 10)), 1.0),
]


@pytest.mark.parametrize("case", QUANTILE_CASES, ids=lambda c: c.name)
def test_histogram_quantile_matches_prometheus(case: QuantileCase) -> None:
    assert histogram_quantile(case.q, case.buckets) == pytest.approx(case.want)


def test_an_empty_histogram_has_no_quantile() -> None:
    assert math.isnan(histogram_quantile(0.5, ((0.001, 0), (INF, 0))))
    assert math.isnan(histogram_quantile(0.5, ()))


def test_every_workload_has_its_sizes_and_fits_its_default_pods() -> None:
    assert set(WORKLOADS) == {
        "SchedulingBasic",
        "SchedulingPodAntiAffinity",
        "SchedulingPodAffinity",
        "SchedulingNodeAffinity",
        "TopologySpreading",
        "Unschedulable",
        "SchedulingWithMixedChurn",
    }
    assert WORKLOADS["SchedulingBasic"].sizes == (500, 1000, 5000, 15000)
    for workload in WORKLOADS.values():
        assert {500, 1000, 5000} <= set(workload.sizes)
        for nodes in workload.sizes:
            assert 0 < workload.measured(nodes) <= workload.capacity(nodes)


def test_the_spreading_policy_is_a_valid_policy_with_pod_topology_spread() -> None:
    policy = bench.spreading_policy()
    resolved = resolve_policy(decode_policy(policy).policy)
    assert "EvenPodsSpread" in [canonical for _, _, canonical in resolved.predicates]
    assert "EvenPodsSpreadPriority" in [canonical for _, canonical, _ in resolved.priorities]


def test_templates_follow_scheduler_perf() -> None:
    pod = bench.DEFAULT_POD
    (container,) = pod.spec.containers
    assert str(container.resources.requests["cpu"]) == "100m"
    assert str(container.resources.requests["memory"]) == "500Mi"
    node = bench.make_node(3, "zone1")
    assert node.metadata.labels == {bench.ZONE_KEY: "zone1", bench.HOSTNAME_KEY: "node-3"}
    assert str(node.status.capacity["pods"]) == "110"
    pods = bench.make_pods(bench.ANTI_AFFINITY_POD, "pod", "sched-1", 3)
    assert [(p.metadata.namespace, p.metadata.name) for p in pods] == [
        ("sched-1", "pod-0"),
        ("sched-1", "pod-1"),
        ("sched-1", "pod-2"),
    ]


def test_more_pods_than_the_cluster_can_place_is_refused_before_running(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["bench", "--workload", "SchedulingPodAntiAffinity", "--nodes", "5", "--pods", "6"])
    assert code == 1
    assert "can place at most 5 measured pods; use --pods 5 or fewer" in capsys.readouterr().err


def test_help_names_every_workload() -> None:
    text = build_parser()._subparsers._group_actions[0].choices["bench"].format_help()  # type: ignore[union-attr]
    for name in WORKLOADS:
        assert name in text


def test_the_table_has_one_row_per_result() -> None:
    result = {
        "workload": "SchedulingBasic",
        "nodes": 500,
        "pods": 1000,
        "throughput": {"average": 812.4, "p50": 800.0, "p90": 900.0, "p99": 950.0},
        "attempt_latency_ms": {"p50": 0.8, "p90": 1.2, "p99": 2.5},
        "peak_rss_bytes": 100 * 2**20,
        "cpu_seconds": 3.25,
        "recovery_seconds": 0.12,
    }
    lines = render_table([result]).splitlines()
    assert lines[0].split()[:3] == ["WORKLOAD", "NODES", "PODS"]
    assert lines[1].split() == [
        "SchedulingBasic", "500", "1000", "812", "800", "900", "950", "0.80", "2.50", "100", "3.2", "0.12",
    ]  # fmt: skip
