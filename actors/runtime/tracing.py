"""OpenTelemetry traces: one trace per scheduling attempt, one span per phase of it.

Kubernetes counterpart: pkg/scheduler/core/generic_scheduler.go@v1.14 ``Schedule``, whose
``utiltrace.New("Scheduling ns/name")`` marks the steps "Computing predicates", "Prioritizing"
and "Selecting host" and logs them when the attempt takes over 100 ms. Podium records the same
steps (``filter``, ``score``, ``select``) as OpenTelemetry spans, with the pod's wait in the
queue before them and the assume, bind and commit after, sampled by the SDK's
``ParentBased(TraceIdRatioBased)`` (children follow their root's decision).

A trace of one attempt (the bind and commit spans end after the attempt has handed the pod to
the binder; the protocol request that submitted the pod is linked, not a parent)::

    scheduling_attempt  podium.pod, podium.attempts, podium.result, podium.node,
    │                   podium.nodes_examined, podium.nodes_feasible   ──link──▶ Put (request)
    ├── queue_wait      enqueue → pop
    ├── filter          } the filter actor's and the score actor's times, which come back in
    ├── score           } the Decision, recorded with explicit start and end
    ├── select          }
    ├── assume          live, around the cache round trip
    ├── bind            the binder: hand-off → the store's answer (after the attempt ended)
    └── commit          the store's part of it (the commit seconds it reports)

A gang's attempt (all its members decided in one batch) is one more root span of its own,
beside its members' attempts::

    pod_group_attempt   podium.pod_group, podium.members, podium.placed, podium.result
                        pop → the group's assume answered (or its members requeued)

Costs: a sampled span costs 25-60 us (STYLE.md), so spans are per phase, never per node or
plugin. Measured with timeit for one attempt's helper calls (attempt, three records, a phase,
the outcome, carrier_of, and the binder's two span_from; SDK 1.45, a noisy 2-core machine):
~1 us off, at ``sampleRatio: 0`` or unsampled; ~240 us sampled into a BatchSpanProcessor
(nine spans, nearly all of it the SDK's span creation); ~410 us with the console exporter;
~25 us on average at ratio 0.1. The sampling decision is taken *before* any
OpenTelemetry object is made: an unsampled attempt draws one random trace id, compares it with
the ratio's bound (exactly the test ``TraceIdRatioBased`` makes) and gets the shared no-op
:data:`NO_ATTEMPT`; a sampled one hands that same trace id to the SDK (a preset id generator),
whose sampler then agrees. Tracing off (no endpoint, no console) or ``sampleRatio: 0`` costs
one attribute check per call.

Context crosses tasks on its own (``start_soon``, ``nursery.start``, ``to_thread``) but not a
message on a channel: it travels as a *carrier*, the W3C ``traceparent`` headers in a
``dict[str, str]`` (:meth:`Tracing.inject` / :meth:`Tracing.extract`), only for sampled spans,
so an unsampled message carries ``None``.

Times: every span is timed with trio's clock, so spans recorded in one actor from times taken
in another line up, and tests under ``MockClock`` see exact times. OpenTelemetry wants
nanoseconds since the epoch: the first conversion reads ``time.time_ns()`` and
``trio.current_time()`` together once and keeps their difference as the offset
(``wall_ns = offset + round(trio_seconds * 1e9)``). Trio's clock is monotonic; a wall-clock
step after that moment (rare under NTP, which slews) shifts later spans by the step, never
their durations.

The provider is Podium's own, not the global one (``trace.set_tracer_provider`` is left
alone): nothing else in the process is traced through it, tests build as many as they like,
and its shutdown is explicit: :meth:`Tracing.aclose` runs it in a worker thread because the
BatchSpanProcessor's shutdown blocks while it flushes.

Owns: the TracerProvider and its span processors.
Mailbox: none (a library the scheduler, binder and gateway call).
Emits: spans to the console (stderr) and/or an OTLP endpoint.
"""

from __future__ import annotations

import contextlib
import importlib
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TypeAlias, cast

import trio
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from podium.protocol.config import TracingSettings
from podium.protocol.errors import ConfigError

__all__ = [
    "ASSUME",
    "ATTEMPT",
    "BIND",
    "COMMIT",
    "DISABLED",
    "EXTENDER",
    "FILTER",
    "GROUP_ATTEMPT",
    "NODE",
    "NO_ATTEMPT",
    "OBJECTS",
    "OTLP_EXTRA",
    "PUT",
    "QUEUE_WAIT",
    "RESULT",
    "SCORE",
    "SELECT",
    "Attempt",
    "Attributes",
    "Carrier",
    "Tracing",
    "extender_span",
    "format_span",
    "setup_tracing",
]

Carrier: TypeAlias = dict[str, str]
"""A span context in a message: W3C trace-context headers (``traceparent``, ``tracestate``)."""

Attributes: TypeAlias = Mapping[str, AttributeValue]

# Span names: the phases of an attempt drawn above, and the request an attempt links to.
ATTEMPT = "scheduling_attempt"
QUEUE_WAIT = "queue_wait"
FILTER = "filter"
SCORE = "score"
SELECT = "select"
ASSUME = "assume"
BIND = "bind"
COMMIT = "commit"
GROUP_ATTEMPT = "pod_group_attempt"
PUT = "Put"  # the gateway's request span, which each submitted pod's attempt links to

# Attribute names.
POD = "podium.pod"
NODE = "podium.node"
RESULT = "podium.result"
ATTEMPTS = "podium.attempts"
NODES_EXAMINED = "podium.nodes_examined"
NODES_FEASIBLE = "podium.nodes_feasible"
EXTENDER = "podium.extender"
OBJECTS = "podium.objects"
POD_GROUP = "podium.pod_group"
MEMBERS = "podium.members"
PLACED = "podium.placed"


def extender_span(verb: str) -> str:
    """The name of the span of one call to an extender's ``verb`` (filter, prioritize, bind...)."""
    return f"extender {verb}"


OTLP_EXTRA = "pip install 'podium[otlp]'"
"""How to get the OTLP exporter, named in the ConfigError when it is missing."""
_OTLP_MODULE = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"

_NS = 1_000_000_000
_TRACE_ID_LIMIT = TraceIdRatioBased.TRACE_ID_LIMIT
_PROPAGATOR = TraceContextTextMapPropagator()
_ROOT = Context()
"""An empty context: a span started in it is a root whatever span is current in the task."""


class _PresetTraceIds(RandomIdGenerator):
    """The SDK's random ids, except that the next trace id may be chosen beforehand.

    Podium draws a root's trace id itself to decide sampling without touching the SDK, then
    presets it here so the span gets that very id and the SDK's sampler takes the same decision.
    """

    def __init__(self) -> None:
        self.preset = 0

    def generate_trace_id(self) -> int:
        trace_id, self.preset = self.preset, 0
        return trace_id or super().generate_trace_id()


# --------------------------------------------------------------------------- attempts


class Attempt:
    """The trace of one scheduling attempt; this base class is the unsampled no-op.

    Use it as a context manager (``with tracing.attempt(...) as attempt:``); the root span
    ends when the block does. Every method is cheap on the no-op; build attribute mappings
    only when :attr:`sampled` if they cost anything to compute.
    """

    __slots__ = ()

    sampled = False

    def __enter__(self) -> Attempt:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def record(
        self, name: str, start: float, end: float, attributes: Attributes | None = None
    ) -> None:
        """A child span that ran from ``start`` to ``end`` (trio clock), e.g. in another actor:
        ``filter``, ``score``, ``select``."""

    def phase(
        self, name: str, attributes: Attributes | None = None
    ) -> AbstractContextManager[None]:
        """A child span timed around a ``with`` block (``assume``)."""
        return _NULL

    def outcome(
        self,
        result: str,
        *,
        node: str | None = None,
        nodes_examined: int | None = None,
        nodes_feasible: int | None = None,
        message: str = "",
    ) -> None:
        """Record how the attempt ended: ``result`` is scheduled, unschedulable, error,
        conflict, or given_back (decided, but its batch ended before it: a preemptor after the
        batch's first pod; not counted as an attempt); an ``error`` also sets the span's
        status to ERROR with ``message``."""

    def carrier(self) -> Carrier | None:
        """The root span's context for a message (the BindRequest); None when unsampled."""
        return None


_NULL: AbstractContextManager[None] = contextlib.nullcontext()

NO_ATTEMPT = Attempt()
"""The attempt every unsampled (or untraced) pod gets: all its methods do nothing."""


class _SampledAttempt(Attempt):
    """A recorded attempt: the root span and the context its children are started in."""

    __slots__ = ("_carrier", "_context", "_pod", "_result", "_root", "_tracing")

    sampled = True

    def __init__(
        self,
        tracing: Tracing,
        trace_id: int,
        pod_key: str,
        links: Sequence[Carrier | None],
        arrived_at: float | None,
        popped_at: float,
        attempts: int,
    ) -> None:
        self._tracing = tracing
        self._pod = pod_key
        self._result: str | None = None
        self._carrier: Carrier | None = None
        found = [Link(sc) for sc in map(_span_context, links) if sc is not None]
        attributes: dict[str, AttributeValue] = {POD: pod_key}
        if attempts:
            attributes[ATTEMPTS] = attempts
        # The root begins at the enqueue, so the queue wait is inside it in a trace viewer.
        start = popped_at if arrived_at is None else min(arrived_at, popped_at)
        self._root = tracing._start(
            ATTEMPT, _ROOT, start, attributes, trace_id=trace_id, links=found
        )
        self._context = trace.set_span_in_context(self._root)
        if arrived_at is not None:
            self.record(QUEUE_WAIT, arrived_at, popped_at)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        root = self._root
        if isinstance(exc, Exception):
            _record_error(root, exc)
        elif exc is not None and self._result is None:
            # Cancelled (shutdown): the attempt was abandoned; the pod stays pending.
            root.set_attribute(RESULT, "abandoned")
        root.end(end_time=self._tracing.wall_ns(trio.current_time()))

    def record(
        self, name: str, start: float, end: float, attributes: Attributes | None = None
    ) -> None:
        span = self._tracing._start(name, self._context, start, self._attributes(attributes))
        span.end(end_time=self._tracing.wall_ns(end))

    def phase(
        self, name: str, attributes: Attributes | None = None
    ) -> AbstractContextManager[None]:
        return self._live(name, attributes)

    @contextlib.contextmanager
    def _live(self, name: str, attributes: Attributes | None) -> Iterator[None]:
        tracing = self._tracing
        span = tracing._start(
            name, self._context, trio.current_time(), self._attributes(attributes)
        )
        try:
            yield
        except Exception as exc:
            _record_error(span, exc)
            raise
        finally:
            span.end(end_time=tracing.wall_ns(trio.current_time()))

    def outcome(
        self,
        result: str,
        *,
        node: str | None = None,
        nodes_examined: int | None = None,
        nodes_feasible: int | None = None,
        message: str = "",
    ) -> None:
        self._result = result
        attributes: dict[str, AttributeValue] = {RESULT: result}
        if node is not None:
            attributes[NODE] = node
        if nodes_examined is not None:
            attributes[NODES_EXAMINED] = nodes_examined
        if nodes_feasible is not None:
            attributes[NODES_FEASIBLE] = nodes_feasible
        self._root.set_attributes(attributes)
        if result == "error":
            self._root.set_status(Status(StatusCode.ERROR, message))

    def carrier(self) -> Carrier | None:
        if self._carrier is None:
            self._carrier = {}
            _PROPAGATOR.inject(self._carrier, context=self._context)
        return self._carrier

    def _attributes(self, attributes: Attributes | None) -> Attributes:
        # Every span of the attempt names the pod, so one grep of the console finds them all.
        return {POD: self._pod, **attributes} if attributes else {POD: self._pod}


def _record_error(span: Span, exc: Exception) -> None:
    """Mark ``span`` failed by ``exc``: the exception as an event, the status ERROR with it."""
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def _extract(carrier: Carrier | None) -> Context | None:
    """The context a carrier holds when its span is valid, else None."""
    if not carrier:
        return None
    found = _PROPAGATOR.extract(carrier)
    return found if trace.get_current_span(found).get_span_context().is_valid else None


def _span_context(carrier: Carrier | None) -> SpanContext | None:
    """The valid span context a carrier holds, or None."""
    found = _extract(carrier)
    return None if found is None else trace.get_current_span(found).get_span_context()


# --------------------------------------------------------------------------- the tracer


class Tracing:
    """Podium's tracer: makes attempt traces, request spans and carriers.

    Build it with :func:`setup_tracing`; share it with the actors that record spans (the
    scheduler, the binder, the gateway); close it with :meth:`aclose`. :data:`DISABLED` is a
    tracer that records nothing, the default for an actor given none.

    Args:
        provider: the TracerProvider (None: tracing off).
        sample_ratio: the fraction of root spans (attempts, requests) recorded.
        ids: the provider's id generator.
        now_ns: the wall clock in nanoseconds (tests pass a fixed one).

    Attributes:
        enabled: some span may be recorded (a provider, a ratio above 0, not closed).
    """

    def __init__(
        self,
        provider: TracerProvider | None,
        *,
        sample_ratio: float = 0.0,
        ids: _PresetTraceIds | None = None,
        now_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer("podium") if provider is not None else None
        self._ids = ids if ids is not None else _PresetTraceIds()
        self._bound = TraceIdRatioBased.get_bound_for_rate(sample_ratio)
        self._now_ns = now_ns
        self._offset: int | None = None
        self.enabled = provider is not None and self._bound > 0

    # ------------------------------------------------------------------ clock

    def wall_ns(self, t: float) -> int:
        """Trio clock seconds ``t`` as OpenTelemetry's nanoseconds since the epoch.

        The first call (inside trio) reads both clocks together; the offset is kept.
        """
        offset = self._offset
        if offset is None:
            offset = self._offset = self._now_ns() - round(trio.current_time() * _NS)
        return offset + round(t * _NS)

    # ------------------------------------------------------------------ spans

    def _sampled_trace_id(self) -> int:
        """A new root's trace id when the ratio samples it, else 0 (TraceIdRatioBased's test)."""
        trace_id = random.getrandbits(128)
        if trace_id & _TRACE_ID_LIMIT < self._bound:
            return trace_id
        return 0

    def _start(
        self,
        name: str,
        parent: Context,
        start: float,
        attributes: Attributes | None,
        *,
        trace_id: int = 0,
        links: Sequence[Link] = (),
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        assert self._tracer is not None
        self._ids.preset = trace_id
        return self._tracer.start_span(
            name,
            context=parent,
            kind=kind,
            attributes=attributes,
            links=links,
            start_time=self.wall_ns(start),
        )

    def attempt(
        self,
        pod_key: str,
        *,
        links: Sequence[Carrier | None] = (),
        arrived_at: float | None,
        popped_at: float,
        attempts: int = 0,
    ) -> Attempt:
        """Start the trace of one scheduling attempt (use as a context manager).

        Args:
            pod_key: ``namespace/name``.
            links: carriers of the protocol requests that submitted the pod (linked, not
                parents: one request may submit many pods, and a pod has many attempts);
                None entries (unsampled requests) are skipped.
            arrived_at: when the pod entered the queue for this attempt (trio clock); the
                ``queue_wait`` span runs from it to ``popped_at``. None: no queue_wait span.
                Popped.arrived_at is the *first* enqueue, so a retry's queue_wait then also
                covers its earlier attempts and backoff.
            popped_at: when the pod was popped (trio clock).
            attempts: the pod's attempts including this one (0: not recorded).

        Returns:
            :data:`NO_ATTEMPT` when tracing is off or this attempt is not sampled.
        """
        if not self.enabled:
            return NO_ATTEMPT
        trace_id = self._sampled_trace_id()
        if not trace_id:
            return NO_ATTEMPT
        return _SampledAttempt(self, trace_id, pod_key, links, arrived_at, popped_at, attempts)

    def group_attempt(
        self, key: str, *, members: int, placed: int, result: str, start: float, end: float
    ) -> None:
        """Record one gang attempt as a root span from ``start`` to ``end`` (trio clock): the
        group ``key``, how many members it decided and placed, and its result (scheduled,
        unschedulable, error). Sampled like an attempt; nothing when tracing is off."""
        if not self.enabled:
            return
        trace_id = self._sampled_trace_id()
        if not trace_id:
            return
        attributes: dict[str, AttributeValue] = {
            POD_GROUP: key,
            MEMBERS: members,
            PLACED: placed,
            RESULT: result,
        }
        span = self._start(GROUP_ATTEMPT, _ROOT, start, attributes, trace_id=trace_id)
        span.end(end_time=self.wall_ns(end))

    def carrier_of(self, attempt: Attempt) -> Carrier | None:
        """The attempt's context for the BindRequest (None when unsampled): the binder records
        ``bind`` and ``commit`` under it with :meth:`span_from`."""
        return attempt.carrier()

    def span_from(
        self,
        carrier: Carrier | None,
        name: str,
        start: float,
        end: float,
        attributes: Attributes | None = None,
    ) -> None:
        """Record a span from ``start`` to ``end`` (trio clock) as a child of the span whose
        carrier a message brought (``bind``, ``commit``); nothing when ``carrier`` is None."""
        if not self.enabled:
            return
        parent = _extract(carrier)
        if parent is None:
            return
        self._start(name, parent, start, attributes).end(end_time=self.wall_ns(end))

    def request_span(
        self, name: str, attributes: Attributes | None = None
    ) -> AbstractContextManager[Span]:
        """A SERVER span around one protocol request (the gateway's Put), current inside the
        block so :meth:`inject` gives its carrier. Yields the span (a non-recording one when
        unsampled) for attributes learnt later."""
        if not self.enabled:
            return _NO_REQUEST
        trace_id = self._sampled_trace_id()
        if not trace_id:
            return _NO_REQUEST
        return self._request(trace_id, name, attributes)

    @contextlib.contextmanager
    def _request(self, trace_id: int, name: str, attributes: Attributes | None) -> Iterator[Span]:
        span = self._start(
            name, _ROOT, trio.current_time(), attributes, trace_id=trace_id, kind=SpanKind.SERVER
        )
        # attach/detach happen in the same task (the with block), as contextvars require.
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield span
        except Exception as exc:
            _record_error(span, exc)
            raise
        finally:
            otel_context.detach(token)
            span.end(end_time=self.wall_ns(trio.current_time()))

    # ------------------------------------------------------------------ carriers

    def inject(self, context: Context | None = None) -> Carrier | None:
        """The current (or ``context``'s) span as a carrier; None when tracing is off or that
        span is not sampled, so unsampled messages stay small."""
        if not self.enabled:
            return None
        span = trace.get_current_span(context)
        if not span.get_span_context().trace_flags.sampled:
            return None
        carrier: Carrier = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        return carrier

    @staticmethod
    def extract(carrier: Carrier | None) -> Context | None:
        """The context a carrier holds (to start children in), or None when it holds none."""
        return _extract(carrier)

    # ------------------------------------------------------------------ lifecycle

    async def aclose(self) -> None:
        """Flush and shut the provider down, in a worker thread (the BatchSpanProcessor's
        shutdown blocks while it exports). Later calls record nothing. Not abandoned on
        cancellation: the flush finishes (bounded by the exporter's own timeout)."""
        provider, self._provider = self._provider, None
        self.enabled = False
        if provider is not None:
            await trio.to_thread.run_sync(provider.shutdown)


_NO_REQUEST: AbstractContextManager[Span] = contextlib.nullcontext(trace.INVALID_SPAN)

DISABLED = Tracing(None)
"""A tracer that records nothing (the default of an actor given no tracer)."""


# --------------------------------------------------------------------------- set-up


def format_span(span: ReadableSpan) -> str:
    """One line per finished span, for a person following one pod on stderr: name, ids, start,
    duration, status, attributes and links (grep the pod, then its trace id)."""
    ctx = span.get_span_context()
    parent = f"{span.parent.span_id:016x}" if span.parent is not None else "-"
    start = span.start_time or 0
    duration = ((span.end_time or start) - start) / 1e6
    when = datetime.fromtimestamp(start / _NS, tz=UTC).isoformat(timespec="microseconds")
    parts = [
        f"span {span.name}",
        f"trace={ctx.trace_id:032x}" if ctx is not None else "trace=-",
        f"id={ctx.span_id:016x}" if ctx is not None else "id=-",
        f"parent={parent}",
        f"start={when}",
        f"duration_ms={duration:.3f}",
    ]
    if span.status.status_code is not StatusCode.UNSET:
        parts.append(f"status={span.status.status_code.name}")
        if span.status.description:
            parts.append(f"status_message={span.status.description!r}")
    parts.extend(
        f"{key}={value if isinstance(value, str) else repr(value)}"
        for key, value in (span.attributes or {}).items()
    )
    if span.links:
        parts.append(
            "links="
            + ",".join(
                f"{link.context.trace_id:032x}/{link.context.span_id:016x}" for link in span.links
            )
        )
    return " ".join(parts) + "\n"


def _otlp_exporter(endpoint: str) -> SpanExporter:
    """The OTLP gRPC exporter, imported only when an endpoint is configured (an optional extra)."""
    try:
        module = importlib.import_module(_OTLP_MODULE)
    except ImportError as exc:
        raise ConfigError(
            [
                (
                    "podium.tracing.endpoint",
                    f"exporting traces to {endpoint} needs the OpenTelemetry OTLP exporter, "
                    f"which is not installed: {OTLP_EXTRA}",
                )
            ]
        ) from exc
    exporter_class: Any = module.OTLPSpanExporter
    return cast(SpanExporter, exporter_class(endpoint=endpoint))


def setup_tracing(
    settings: TracingSettings,
    *,
    processors: Sequence[SpanProcessor] = (),
    service_version: str | None = None,
    now_ns: Callable[[], int] = time.time_ns,
) -> Tracing:
    """Build the tracer ``podium.tracing`` asks for.

    With neither ``endpoint`` nor ``console`` (the default) tracing is off: no provider is
    made and every helper is a no-op. ``console`` prints each finished span to stderr as it
    ends (a SimpleSpanProcessor, one line per span: :func:`format_span`); ``endpoint`` exports
    in batches over OTLP/gRPC (``http://host:4317`` for plaintext, ``https://`` for TLS).

    Args:
        settings: ``podium.tracing``.
        processors: more span processors (tests: an InMemorySpanExporter behind a
            SimpleSpanProcessor); given any, tracing is on even with neither exporter.
        service_version: the ``service.version`` resource attribute.
        now_ns: the wall clock (tests pass a fixed one to compare span times exactly).

    Raises:
        ConfigError: an endpoint is configured but the OTLP exporter is not installed.
    """
    exporting: list[SpanProcessor] = list(processors)
    if settings.console:
        # sys.stderr is read now, not at import, so a redirected stderr is honoured.
        exporting.append(
            SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr, formatter=format_span))
        )
    if settings.endpoint is not None:
        exporting.append(BatchSpanProcessor(_otlp_exporter(settings.endpoint)))
    if not exporting:
        return Tracing(None, now_ns=now_ns)
    resource: dict[str, AttributeValue] = {"service.name": "podium"}
    if service_version is not None:
        resource["service.version"] = service_version
    ids = _PresetTraceIds()
    provider = TracerProvider(
        sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
        resource=Resource.create(resource),
        id_generator=ids,
        # aclose shuts it down; an atexit hook would shut it down a second time.
        shutdown_on_exit=False,
    )
    for processor in exporting:
        provider.add_span_processor(processor)
    return Tracing(provider, sample_ratio=settings.sample_ratio, ids=ids, now_ns=now_ns)
