"""``podium bench``'s arithmetic, workloads and table (its runs: tests/e2e/test_bench.py)."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from podium.actors.plugins.policy import resolve_policy
from podium.cli.bench import workload as bench
from podium.cli.bench.command import (
    BaselineError,
    compare,
    load_baseline,
    render_comparison,
    render_table,
    run_line,
)
from podium.cli.bench.scheduler_perf import (
    RunResult,
    histogram_quantile,
    throughput_windows,
    window_stats,
)
from podium.cli.bench.workload import WORKLOADS
from podium.cli.common.output import Progress
from podium.cli.main import build_parser, main
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
class SampleCase:
    name: str
    samples: tuple[tuple[float, int], ...]
    want: tuple[float, ...]


# scheduler_perf util.go throughputCollector.run (kubernetes/kubernetes@0c5e832a): samples
# before the first bound pod are ignored, the first with one only starts the clock, a sample
# with no new pod is folded into the next that has some (its rate recorded once per window),
# and the last partial window is never sampled.
SAMPLE_CASES = [
    SampleCase("no sample", (), ()),
    SampleCase("nothing bound yet", ((1.0, 0), (2.0, 0)), ()),
    SampleCase("only the first window: skipped", ((1.0, 300),), ()),
    SampleCase(
        "the first window skipped, the rest each a window",
        ((1.0, 300), (2.0, 1300), (3.0, 2100)),
        (1000.0, 800.0),
    ),
    SampleCase(
        "the clock starts at the first bound pod, not at the first sample",
        ((1.0, 0), (2.0, 0), (3.0, 50), (4.0, 650)),
        (600.0,),
    ),
    SampleCase(
        "a window with no pod is folded into the next, once per window",
        ((1.0, 10), (2.0, 410), (3.0, 410), (4.0, 1010)),
        (400.0, 300.0, 300.0),
    ),
    SampleCase(
        "rates over the time actually elapsed",
        ((1.0, 100), (2.5, 700), (3.0, 900)),
        (400.0, 400.0),
    ),
    SampleCase("a run ending in an empty window records nothing for it", ((1.0, 5), (2.0, 5)), ()),
]


@pytest.mark.parametrize("case", SAMPLE_CASES, ids=lambda c: c.name)
def test_throughput_windows_follow_scheduler_perfs_collector(case: SampleCase) -> None:
    assert throughput_windows(case.samples) == pytest.approx(list(case.want))


def _run(windows: list[float], pods: int = 5000, seconds: float = 6.5) -> RunResult:
    stats = window_stats(windows)
    if not windows:
        stats = dict.fromkeys(stats, pods / seconds)
    return RunResult(
        "SchedulingBasic", 500, pods, stats, {"p50": 0.5, "p90": 0.8, "p99": 1.5}, 0, 4.0,
        seconds, windows,
    )  # fmt: skip


def test_a_run_line_says_how_its_throughput_was_taken() -> None:
    windowed = run_line("SchedulingBasic 500 nodes", _run([800.0, 760.0, 790.0, 810.0, 805.0]))
    assert windowed == (
        "SchedulingBasic 500 nodes: 5000 pods bound in 6.5 s, 793 pods/s (5 windows)"
    )
    short = run_line("SchedulingBasic 500 nodes", _run([], pods=400, seconds=0.5))
    assert short.endswith("800 pods/s (too short for a 1 s window: overall rate)")
    assert _run([], pods=400, seconds=0.5).as_json()["windowed"] is False


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_shows_pods_bound_and_the_rate_over_the_last_second() -> None:
    now = [0.0]
    stream = _Terminal()
    bar = Progress("SchedulingBasic 500 nodes", 1000, enabled=True, stream=stream,
                   rate="pods/s", clock=lambda: now[0])  # fmt: skip
    for t, done in ((0.0, 0), (0.5, 200), (1.0, 500), (1.5, 900)):
        now[0] = t
        bar.update(done)
    last = stream.getvalue().split("\r")[-1]
    # The rate is over the last second of updates: (900 - 200) / (1.5 - 0.5).
    assert last.strip() == "SchedulingBasic 500 nodes [" + "#" * 27 + "...] 900/1000  700 pods/s"


def test_the_progress_line_stays_off_a_stream_that_is_not_a_terminal() -> None:
    stream = io.StringIO()
    bar = Progress("x", 10, enabled=True, stream=stream, rate="pods/s")
    bar.update(5)
    bar.close()
    assert stream.getvalue() == ""


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
        # issue 24 (tests/unit/cli/bench/test_workload.py)
        "OneCPUPods",
        "Gang8",
        "Gang32",
        "Gang128",
        "Gang8Overfull",
        "Gang32Overfull",
        "Gang128Overfull",
    }
    assert WORKLOADS["SchedulingBasic"].sizes == (500, 1000, 5000, 15000)
    for workload in WORKLOADS.values():
        gang = workload.gangs is not None or workload.name == bench.BASELINE_WORKLOAD
        assert set(workload.sizes) >= ({500, 5000} if gang else {500, 1000, 5000})
        for nodes in workload.sizes:
            overfull = workload.gangs is not None and workload.gangs.overfull
            assert workload.measured(nodes) > 0
            assert overfull or workload.measured(nodes) <= workload.capacity(nodes)


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
    code = main(["bench", "--workload", "SchedulingPodAffinity", "--nodes", "6", "--pods", "81"])
    assert code == 1
    assert "can place at most 80 measured pods; use --pods 80 or fewer" in capsys.readouterr().err


def test_initial_pods_that_cannot_all_bind_are_refused_before_running(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # SchedulingBasic creates 1000 initial pods: 20 nodes hold 800 (the setup used to wait
    # 600 s for them).
    code = main(["bench", "--workload", "SchedulingBasic", "--nodes", "20", "--pods", "40"])
    assert code == 1
    assert (
        "SchedulingBasic at 20 nodes cannot place its 1000 initial and 40 measured pods "
        "(at most 800 pods of 100m CPU on 20 nodes); use more nodes"
    ) in capsys.readouterr().err


def test_the_affinity_workloads_measure_enough_pods_for_five_windows() -> None:
    # At the speeds measured before batching (docs/benchmarks.md: ~560 and ~660 pods/s at 5000
    # nodes), 7 s of binding give the skipped first window, five full ones and a partial one.
    assert WORKLOADS["SchedulingPodAntiAffinity"].measured(5000) >= 7 * 560
    assert WORKLOADS["SchedulingPodAffinity"].measured(5000) >= 7 * 660


@dataclass(frozen=True)
class SpreadCase:
    name: str
    nodes: int
    count: int
    want: dict[str, int]


# Anti-affinity by hostname within the pod's namespace: one pod per node per namespace.
SPREAD_CASES = [
    SpreadCase("one namespace holds them", 5000, 4500, {"sched-1": 4500}),
    SpreadCase("exactly one per node", 500, 500, {"sched-1": 500}),
    SpreadCase(
        "more than the nodes share further namespaces evenly",
        500,
        1201,
        {"sched-1": 401, "sched-1-1": 401, "sched-1-2": 399},
    ),
]


@pytest.mark.parametrize("case", SPREAD_CASES, ids=lambda c: c.name)
def test_anti_affinity_pods_beyond_one_per_node_go_to_further_namespaces(case: SpreadCase) -> None:
    pods = WORKLOADS["SchedulingPodAntiAffinity"].measured_pods(case.nodes, case.count)
    counts: dict[str, int] = {}
    for pod in pods:
        counts[pod.metadata.namespace] = counts.get(pod.metadata.namespace, 0) + 1
    assert counts == case.want
    assert len({(p.metadata.namespace, p.metadata.name) for p in pods}) == case.count


def test_other_workloads_keep_one_measured_namespace() -> None:
    pods = WORKLOADS["SchedulingBasic"].measured_pods(500, 10_000)
    assert {p.metadata.namespace for p in pods} == {"default"}
    assert len(pods) == 10_000


def test_help_names_every_workload() -> None:
    text = build_parser()._subparsers._group_actions[0].choices["bench"].format_help()  # type: ignore[union-attr]
    for name in WORKLOADS:
        assert name in text


def _result(**over: object) -> dict[str, object]:
    result: dict[str, object] = {
        "workload": "SchedulingBasic",
        "nodes": 500,
        "pods": 1000,
        "throughput": {"average": 812.4, "p50": 800.0, "p90": 900.0, "p99": 950.0},
        "windowed": True,
        "window_count": 5,
        "attempt_latency_ms": {"p50": 0.8, "p90": 1.2, "p99": 2.5},
        "peak_rss_bytes": 100 * 2**20,
        "cpu_seconds": 3.25,
        "recovery_seconds": 0.12,
    }
    result.update(over)
    return result


def test_the_table_has_one_row_per_result() -> None:
    lines = render_table([_result()]).splitlines()
    assert lines[0].split()[:3] == ["WORKLOAD", "NODES", "PODS"]
    assert lines[1].split() == [
        "SchedulingBasic", "500", "1000", "812", "800", "900", "950", "5", "0.80", "2.50", "100",
        "3.2", "3.250", "0.12",
    ]  # fmt: skip


def test_the_table_marks_an_overall_rate() -> None:
    short = _result(
        throughput=dict.fromkeys(("average", "p50", "p90", "p99"), 640.0),
        windowed=False,
        window_count=0,
    )
    assert render_table([short]).splitlines()[1].split()[3:8] == [
        "640*", "640*", "640*", "640*", "0",
    ]  # fmt: skip


def _save(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "base.json"
    path.write_text(json.dumps(doc))
    return path


def test_compare_gives_each_figure_as_a_ratio_to_the_saved_run(tmp_path: Path) -> None:
    saved = _result(
        throughput={"average": 406.2, "p50": 0, "p90": 0, "p99": 0},
        attempt_latency_ms={"p50": 1, "p90": 2, "p99": 5.0},
        cpu_seconds=6.5,
        peak_rss_bytes=80 * 2**20,
    )
    base = load_baseline(_save(tmp_path, {"results": [saved]}), [("SchedulingBasic", 500)])
    ratios = compare(_result(), base[("SchedulingBasic", 500)])
    assert ratios == pytest.approx(
        {
            "pods_per_second": 2.0,
            "attempt_p99_ms": 0.5,
            "cpu_per_pod_ms": 0.5,
            "peak_rss_bytes": 1.25,
        }
    )
    text = render_comparison([{**_result(), "compare": ratios}], "base.json").splitlines()
    assert text[0].split()[:3] == ["VS", "base.json", "NODES"]
    assert text[1].split() == [
        "SchedulingBasic", "500", "812", "2.00x", "2.50", "0.50x", "3.250", "0.50x", "100", "1.25x",
    ]  # fmt: skip


def test_a_figure_the_saved_run_lacks_has_no_ratio(tmp_path: Path) -> None:
    # A run with --server measures no latency, CPU or RSS (null in its JSON).
    saved = _result(attempt_latency_ms={"p50": None, "p90": None, "p99": None},
                    cpu_seconds=0.0, peak_rss_bytes=0)  # fmt: skip
    ratios = compare(_result(), saved)
    assert ratios["pods_per_second"] == pytest.approx(1.0)
    assert all(
        math.isnan(ratios[k]) for k in ("attempt_p99_ms", "cpu_per_pod_ms", "peak_rss_bytes")
    )


@dataclass(frozen=True)
class BaselineCase:
    name: str
    content: str | None  # None: no file
    want: str


BASELINE_CASES = [
    BaselineCase("no such file", None, "base.json: cannot read it: No such file or directory"),
    BaselineCase("not JSON", "SchedulingBasic 500 812", "base.json: not JSON"),
    BaselineCase("not a bench run", '{"items": []}', "base.json: not the output of `podium bench"),
    BaselineCase(
        "a result without its workload", '{"results": [{"nodes": 500}]}', "not the output of"
    ),
    BaselineCase(
        "the workload missing",
        json.dumps({"results": [_result(workload="Unschedulable")]}),
        "base.json has no SchedulingBasic at 500 nodes (it has: Unschedulable at 500 nodes)",
    ),
    BaselineCase(
        "the size missing",
        json.dumps({"results": [_result(nodes=5000)]}),
        "base.json has no SchedulingBasic at 500 nodes (it has: SchedulingBasic at 5000 nodes)",
    ),
]


@pytest.mark.parametrize("case", BASELINE_CASES, ids=lambda c: c.name)
def test_a_baseline_that_does_not_match_is_named_with_what_it_lacks(
    tmp_path: Path, case: BaselineCase
) -> None:
    path = tmp_path / "base.json"
    if case.content is not None:
        path.write_text(case.content)
    with pytest.raises(BaselineError, match=r"^--compare ") as caught:
        load_baseline(path, [("SchedulingBasic", 500)])
    assert str(path) in str(caught.value)
    assert case.want in str(caught.value)


def test_a_baseline_that_does_not_match_fails_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _save(tmp_path, {"results": [_result(nodes=5000)]})
    code = main(
        ["bench", "--workload", "SchedulingBasic", "--nodes", "500", "--compare", str(path)]
    )
    assert code == 1
    assert f"error: --compare {path} has no SchedulingBasic at 500 nodes" in capsys.readouterr().err
