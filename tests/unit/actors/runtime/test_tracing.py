"""Attempt traces (actors/runtime/tracing.py): spans, parents, explicit times, links, sampling, the
console exporter, the optional OTLP extra and shutdown from trio.

Times are trio-clock seconds under the autojump clock (which starts at 0) and the wall clock is
a fixed ``WALL``, so every span's nanoseconds are compared exactly.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
import trio
import trio.testing
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import SpanKind, StatusCode, get_current_span

from podium.actors.runtime.tracing import (
    ASSUME,
    ATTEMPT,
    BIND,
    COMMIT,
    DISABLED,
    FILTER,
    GROUP_ATTEMPT,
    NO_ATTEMPT,
    QUEUE_WAIT,
    SCORE,
    SELECT,
    Tracing,
    setup_tracing,
)
from podium.protocol.config import TracingSettings
from podium.protocol.errors import ConfigError

WALL = 1_700_000_000_000_000_000
POD = "default/web-1"


def ns(t: float) -> int:
    """Trio time ``t`` in the wall-clock nanoseconds the spans carry (anchored at t=0)."""
    return WALL + round(t * 1_000_000_000)


def traced(ratio: float = 1.0) -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing = setup_tracing(
        TracingSettings(sample_ratio=ratio),
        processors=[SimpleSpanProcessor(exporter)],
        now_ns=lambda: WALL,
    )
    return tracing, exporter


def by_name(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    found = {s.name: s for s in spans}
    assert len(found) == len(spans), [s.name for s in spans]
    return found


async def one_pod(tracing: Tracing) -> None:
    """What the gateway, scheduler and binder do for one pod, at fixed trio times.

    0.00-0.25 Put request; 0.25 enqueued; 1.00 popped; filter 1.00-1.50, score 1.50-1.75,
    select 1.75-2.00 (times that came back in the Decision); assume 2.00-2.50 (live); the
    attempt ends at 2.50; bind 2.50-3.00 with the store's commit 2.75-3.00.
    """
    assert trio.current_time() == 0
    with tracing.request_span("Put", {"podium.objects": 1}):
        submitted = tracing.inject()
        await trio.sleep(0.25)
    await trio.sleep_until(1.0)
    # The unsampled request of another Put that touched the pod brings None: skipped.
    links = [submitted, None]
    with tracing.attempt(POD, links=links, arrived_at=0.25, popped_at=1.0, attempts=1) as attempt:
        await trio.sleep_until(2.0)
        attempt.record(FILTER, 1.0, 1.5)
        attempt.record(SCORE, 1.5, 1.75)
        attempt.record(SELECT, 1.75, 2.0, {"podium.node": "n1"})
        with attempt.phase(ASSUME):
            await trio.sleep(0.5)
        attempt.outcome("scheduled", node="n1", nodes_examined=3, nodes_feasible=2)
        carrier = tracing.carrier_of(attempt)
    await trio.sleep_until(3.0)
    tracing.span_from(carrier, BIND, 2.5, 3.0, {"podium.pod": POD, "podium.node": "n1"})
    tracing.span_from(carrier, COMMIT, 2.75, 3.0, {"podium.pod": POD})


async def test_one_attempt_records_the_root_and_every_phase(autojump_clock: object) -> None:
    tracing, exporter = traced()
    await one_pod(tracing)
    spans = by_name(exporter.get_finished_spans())
    assert set(spans) == {
        "Put",
        ATTEMPT,
        QUEUE_WAIT,
        FILTER,
        SCORE,
        SELECT,
        ASSUME,
        BIND,
        COMMIT,
    }
    root = spans[ATTEMPT]
    assert root.parent is None
    assert (root.start_time, root.end_time) == (ns(0.25), ns(2.5))
    assert dict(root.attributes or {}) == {
        "podium.pod": POD,
        "podium.attempts": 1,
        "podium.result": "scheduled",
        "podium.node": "n1",
        "podium.nodes_examined": 3,
        "podium.nodes_feasible": 2,
    }
    assert root.status.status_code is StatusCode.UNSET
    times = {
        QUEUE_WAIT: (0.25, 1.0),
        FILTER: (1.0, 1.5),
        SCORE: (1.5, 1.75),
        SELECT: (1.75, 2.0),
        ASSUME: (2.0, 2.5),
        BIND: (2.5, 3.0),
        COMMIT: (2.75, 3.0),
    }
    root_ctx = root.get_span_context()
    assert root_ctx is not None
    for name, (start, end) in times.items():
        span = spans[name]
        ctx = span.get_span_context()
        assert span.parent is not None and ctx is not None, name
        assert span.parent.span_id == root_ctx.span_id, name
        assert ctx.trace_id == root_ctx.trace_id, name
        assert (span.start_time, span.end_time) == (ns(start), ns(end)), name
        assert (span.attributes or {})["podium.pod"] == POD, name
    assert (spans[SELECT].attributes or {})["podium.node"] == "n1"
    assert (spans[BIND].attributes or {})["podium.node"] == "n1"


async def test_the_attempt_links_to_the_request_that_submitted_the_pod(
    autojump_clock: object,
) -> None:
    tracing, exporter = traced()
    await one_pod(tracing)
    spans = by_name(exporter.get_finished_spans())
    request, root = spans["Put"], spans[ATTEMPT]
    assert request.kind is SpanKind.SERVER and request.parent is None
    assert (request.start_time, request.end_time) == (ns(0), ns(0.25))
    assert (request.attributes or {})["podium.objects"] == 1
    assert len(root.links) == 1
    link, request_ctx = root.links[0].context, request.get_span_context()
    assert request_ctx is not None
    assert (link.trace_id, link.span_id) == (request_ctx.trace_id, request_ctx.span_id)
    # A link, not a parent: the request and the attempt are separate traces.
    root_ctx = root.get_span_context()
    assert root_ctx is not None and root_ctx.trace_id != request_ctx.trace_id


async def test_an_attempt_without_an_enqueue_time_has_no_queue_wait(
    autojump_clock: object,
) -> None:
    tracing, exporter = traced()
    with tracing.attempt(POD, arrived_at=None, popped_at=0.0):
        await trio.sleep(1)
    [root] = exporter.get_finished_spans()
    assert (root.name, root.start_time, root.end_time, root.links) == (ATTEMPT, ns(0), ns(1), ())


@dataclass(frozen=True)
class EndCase:
    name: str
    error: type[BaseException]
    status: StatusCode
    result: str | None


END_CASES = [
    EndCase("an exception marks the attempt failed", RuntimeError, StatusCode.ERROR, None),
    EndCase("cancellation abandons the attempt", trio.Cancelled, StatusCode.UNSET, "abandoned"),
]


@pytest.mark.parametrize("case", END_CASES, ids=lambda c: c.name)
async def test_an_attempt_cut_short_still_ends_its_spans(
    case: EndCase, autojump_clock: object
) -> None:
    tracing, exporter = traced()
    with trio.CancelScope() as scope:
        try:
            attempt = tracing.attempt(POD, arrived_at=None, popped_at=0.0)
            with attempt, attempt.phase(ASSUME):
                if case.error is trio.Cancelled:
                    scope.cancel()
                    await trio.sleep(1)
                raise case.error("the cache went away")
        except RuntimeError:
            pass
    spans = by_name(exporter.get_finished_spans())
    root, assume = spans[ATTEMPT], spans[ASSUME]
    assert root.status.status_code is case.status
    assert assume.status.status_code is case.status
    assert (root.attributes or {}).get("podium.result") == case.result
    assert root.end_time == assume.end_time == ns(0)


async def test_an_error_outcome_sets_the_error_status(autojump_clock: object) -> None:
    tracing, exporter = traced()
    with tracing.attempt(POD, arrived_at=None, popped_at=0.0) as attempt:
        attempt.outcome("error", nodes_examined=0, message="predicate Foo failed")
    [root] = exporter.get_finished_spans()
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description == "predicate Foo failed"
    assert (root.attributes or {})["podium.result"] == "error"


@dataclass(frozen=True)
class OffCase:
    name: str
    tracing: Tracing


def _off_cases() -> list[OffCase]:
    return [
        OffCase("tracing off by default", setup_tracing(TracingSettings())),
        OffCase("the disabled tracer", DISABLED),
        OffCase("sample ratio 0", traced(ratio=0.0)[0]),
    ]


@pytest.mark.parametrize("case", _off_cases(), ids=lambda c: c.name)
async def test_unsampled_tracing_records_nothing(case: OffCase, autojump_clock: object) -> None:
    tracing = case.tracing
    assert not tracing.enabled
    with tracing.request_span("Put") as request:
        assert not request.is_recording()
        assert tracing.inject() is None
    attempt = tracing.attempt(POD, links=[], arrived_at=0.0, popped_at=1.0)
    assert attempt is NO_ATTEMPT and not attempt.sampled
    with attempt:
        attempt.record(FILTER, 0.0, 1.0)
        with attempt.phase(ASSUME):
            pass
        attempt.outcome("scheduled", node="n1")
        assert tracing.carrier_of(attempt) is None
    # A carrier from elsewhere is ignored too: nothing is exported.
    sampled, exporter = traced()
    with sampled.request_span("Put"):
        foreign = sampled.inject()
    tracing.span_from(foreign, BIND, 0.0, 1.0)
    assert [s.name for s in exporter.get_finished_spans()] == ["Put"]


async def test_sampling_zero_exports_nothing(autojump_clock: object) -> None:
    tracing, exporter = traced(ratio=0.0)
    await one_pod(tracing)
    assert exporter.get_finished_spans() == ()


async def test_the_sampling_decision_is_the_ratio_samplers(autojump_clock: object) -> None:
    """Podium decides before the SDK; the SDK's TraceIdRatioBased must agree on every root."""
    tracing, exporter = traced(ratio=0.5)
    sampled = 0
    for _ in range(200):
        with tracing.attempt(POD, arrived_at=None, popped_at=0.0) as attempt:
            sampled += attempt.sampled
    roots = exporter.get_finished_spans()
    assert 0 < sampled < 200
    assert len(roots) == sampled
    bound = TraceIdRatioBased.get_bound_for_rate(0.5)
    for root in roots:
        ctx = root.get_span_context()
        assert ctx is not None and ctx.trace_flags.sampled
        assert ctx.trace_id & TraceIdRatioBased.TRACE_ID_LIMIT < bound


async def test_carriers_round_trip_and_bad_ones_are_none(autojump_clock: object) -> None:
    tracing, _ = traced()
    assert tracing.inject() is None  # no current span
    with tracing.request_span("Put") as request:
        carrier = tracing.inject()
    assert carrier is not None and set(carrier) == {"traceparent"}
    context = tracing.extract(carrier)
    assert context is not None
    remote = get_current_span(context).get_span_context()
    assert remote.is_remote
    assert (remote.trace_id, remote.span_id) == (
        request.get_span_context().trace_id,
        request.get_span_context().span_id,
    )
    assert tracing.inject() is None  # the request span is no longer current
    for bad in (None, {}, {"traceparent": "not-a-traceparent"}):
        assert tracing.extract(bad) is None


async def test_the_wall_clock_is_read_once_and_offset(autojump_clock: object) -> None:
    reads: list[int] = []

    def now_ns() -> int:
        reads.append(WALL + len(reads))
        return reads[-1]

    tracing = setup_tracing(TracingSettings(console=True, sample_ratio=0), now_ns=now_ns)
    await trio.sleep(2)
    first = tracing.wall_ns(trio.current_time())
    await trio.sleep(1.5)
    assert tracing.wall_ns(trio.current_time()) - first == 1_500_000_000
    assert first == WALL and len(reads) == 1


async def test_the_console_exporter_prints_one_pods_trace_to_stderr(
    autojump_clock: object, capsys: pytest.CaptureFixture[str]
) -> None:
    tracing = setup_tracing(TracingSettings(sample_ratio=1.0, console=True), now_ns=lambda: WALL)
    await one_pod(tracing)
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    names = [line.split()[1] for line in lines]
    assert names == ["Put", QUEUE_WAIT, FILTER, SCORE, SELECT, ASSUME, ATTEMPT, BIND, COMMIT]
    [root] = [line for line in lines if line.startswith(f"span {ATTEMPT} ")]
    assert f"podium.pod={POD}" in root
    assert "podium.result=scheduled" in root and "podium.node=n1" in root
    assert "duration_ms=2250.000" in root
    assert "links=" in root
    trace_id = root.split()[2]
    # grep the pod: every span of its attempt; grep its trace id: the same spans.
    assert [line for line in lines if POD in line] == [
        line for line in lines if trace_id in line.split()
    ]


@pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry.exporter") is not None,
    reason="the OTLP exporter is installed",
)
def test_an_endpoint_without_the_otlp_package_names_the_extra() -> None:
    with pytest.raises(ConfigError) as raised:
        setup_tracing(TracingSettings(endpoint="http://127.0.0.1:4317"))
    assert raised.value.path == "podium.tracing.endpoint"
    assert "pip install 'podium[otlp]'" in str(raised.value)


class RecordingExporter(InMemorySpanExporter):
    """An in-memory exporter that remembers being shut down."""

    def __init__(self) -> None:
        super().__init__()
        self.shut_down = False

    def shutdown(self) -> None:
        self.shut_down = True
        super().shutdown()


async def test_aclose_flushes_the_batch_and_shuts_down_in_a_thread() -> None:
    exporter = RecordingExporter()
    tracing = setup_tracing(
        TracingSettings(sample_ratio=1.0),
        # A batch that would wait a minute: only the shutdown's flush exports it.
        processors=[BatchSpanProcessor(exporter, schedule_delay_millis=60_000)],
    )
    now = trio.current_time()
    with tracing.attempt(POD, arrived_at=now, popped_at=now):
        pass
    with trio.fail_after(10):
        await tracing.aclose()
    assert exporter.shut_down
    assert sorted(s.name for s in exporter.get_finished_spans()) == [QUEUE_WAIT, ATTEMPT]
    assert not tracing.enabled
    assert tracing.attempt(POD, arrived_at=now, popped_at=now) is NO_ATTEMPT
    await tracing.aclose()  # twice is harmless


async def test_a_gang_attempt_is_one_root_span_with_its_group(autojump_clock: object) -> None:
    tracing, exporter = traced()
    tracing.group_attempt(
        "ml/train", members=8, placed=0, result="unschedulable", start=0.5, end=1.0
    )
    DISABLED.group_attempt("ml/train", members=8, placed=8, result="scheduled", start=0, end=1)
    (span,) = exporter.get_finished_spans()
    assert (span.name, span.parent, span.start_time, span.end_time) == (
        GROUP_ATTEMPT,
        None,
        ns(0.5),
        ns(1.0),
    )
    assert dict(span.attributes or {}) == {
        "podium.pod_group": "ml/train",
        "podium.members": 8,
        "podium.placed": 0,
        "podium.result": "unschedulable",
    }
