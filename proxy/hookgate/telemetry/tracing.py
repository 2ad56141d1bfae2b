"""OpenTelemetry plumbing: a tracer provider per tracing config, the model call's span,
and span adapters.

Export is a side channel: finished spans go to a
:class:`~hookgate.telemetry.shipper.SpanShipper`, which hands them to an export worker
process through a bounded queue, so an exporter that is slow or down never slows or fails
a request; spans that do not fit the queue are dropped and counted.

The model call's span (:class:`CallSpan`) is not an SDK span: every proxied request has
one, and the SDK's ``Span`` validates and copies each attribute under a lock, which costs
more than the rest of the request. It takes its ids from the SDK's id generator and its
sampling decision from the SDK's sampler, collects attributes in a dict, and when it ends
becomes one export record. Child spans (guardrails, failed attempts) and the SDK's agent
spans are ordinary SDK spans.
"""

from __future__ import annotations

import logging
import time

from opentelemetry import trace
from opentelemetry.context import Context as OtelContext
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, TraceIdRatioBased
from opentelemetry.trace import (
    INVALID_SPAN_CONTEXT,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from hookgate.pipeline.observe import Attributes, AttributeValue
from hookgate.telemetry.frames import make_record
from hookgate.telemetry.shipper import SpanShipper
from hookgate.version import __version__

log = logging.getLogger("hookgate")

PROPAGATOR = TraceContextTextMapPropagator()


DEFAULT_SERVICE_NAME = "hookgate"


def service_resource(service_name: str | None) -> Resource:
    """The resource of hookgate's spans. ``service.name``: the YAML's ``service_name`` when
    written, else ``OTEL_SERVICE_NAME``, else ``service.name`` in
    ``OTEL_RESOURCE_ATTRIBUTES``, else ``hookgate``. Every other attribute of
    ``OTEL_RESOURCE_ATTRIBUTES`` is kept; ``service.version`` defaults to hookgate's."""
    from_env = OTELResourceDetector().detect().attributes
    attributes: dict[str, AttributeValue] = {}
    if service_name is not None:
        attributes["service.name"] = service_name
    elif not from_env.get("service.name"):
        attributes["service.name"] = DEFAULT_SERVICE_NAME
    if "service.version" not in from_env:
        attributes["service.version"] = __version__
    return Resource.create(attributes)


def make_provider(
    resource: Resource, sample_ratio: float | None, processor: SpanProcessor | None
) -> TracerProvider:
    """A tracer provider of our own (never the global one). Without a ``sample_ratio``
    the sampler is the SDK's from ``OTEL_TRACES_SAMPLER``/``_ARG`` (default: parent-based,
    always on)."""
    sampler = None if sample_ratio is None else ParentBased(TraceIdRatioBased(sample_ratio))
    provider = TracerProvider(resource=resource, sampler=sampler)
    if processor is not None:
        provider.add_span_processor(processor)
    return provider


class OtelSpan:
    """:class:`~hookgate.pipeline.observe.Span` over an OpenTelemetry span."""

    __slots__ = ("_span",)

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    @property
    def otel(self) -> trace.Span:
        return self._span

    def set_attributes(self, attributes: Attributes) -> None:
        self._span.set_attributes(attributes)

    def add_event(
        self, name: str, attributes: Attributes | None = None, time_ns: int | None = None
    ) -> None:
        self._span.add_event(name, attributes, time_ns)

    def record_error(self, error_type: str, message: str) -> None:
        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, message))

    def trace_headers(self) -> dict[str, str]:
        carrier: dict[str, str] = {}
        PROPAGATOR.inject(carrier, context=trace.set_span_in_context(self._span))
        return carrier

    def end(self, end_ns: int | None = None) -> None:
        self._span.end(end_ns)


class OtelSpans:
    """:class:`~hookgate.pipeline.observe.Spans` under the model call's span: SDK spans.

    The OpenTelemetry context children start in is made when the first child starts
    (most calls have none); the trace headers are written from the span's ids."""

    __slots__ = ("_context", "_headers", "_parent", "_tracer")

    def __init__(self, tracer: trace.Tracer, parent: SpanContext) -> None:
        self._tracer = tracer
        self._parent = parent
        self._context: OtelContext | None = None
        self._headers: dict[str, str] | None = None

    def start(
        self,
        name: str,
        attributes: Attributes | None = None,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        start_ns: int | None = None,
    ) -> OtelSpan:
        if self._context is None:
            self._context = trace.set_span_in_context(NonRecordingSpan(self._parent))
        span = self._tracer.start_span(
            name, context=self._context, kind=kind, attributes=attributes, start_time=start_ns
        )
        return OtelSpan(span)

    def trace_headers(self) -> dict[str, str]:
        if self._headers is None:
            self._headers = w3c_headers(self._parent)
        return self._headers


def w3c_headers(context: SpanContext) -> dict[str, str]:
    """``traceparent`` (and ``tracestate`` when the context has one) continuing
    ``context``: what the W3C propagator injects for it, written without making an
    OpenTelemetry context first (every traced request sends them upstream)."""
    if context == INVALID_SPAN_CONTEXT:
        return {}
    headers = {
        "traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-"
        f"{context.trace_flags:02x}"
    }
    if context.trace_state:
        headers["tracestate"] = context.trace_state.to_header()
    return headers


def parent_context(headers: dict[str, str]) -> OtelContext:
    """The client's trace context from ``traceparent``/``tracestate`` (empty if none)."""
    return PROPAGATOR.extract(headers)


class CallSpan:
    """The model call's span, recorded without an SDK span (see the module docstring).

    Implements :class:`~hookgate.pipeline.observe.Span`. ``context`` is what children and
    the upstream continue; when the span is not sampled it is never exported.
    """

    __slots__ = ("_events", "_shipper", "_status", "attributes", "context", "name", "parent",
                 "start_ns")  # fmt: skip

    def __init__(
        self,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        attributes: dict[str, AttributeValue],
        shipper: SpanShipper | None,
    ) -> None:
        self.name = name
        self.context = context
        self.parent = parent
        self.attributes = attributes
        self.start_ns = time.time_ns()
        self._events: list[list[object]] = []
        self._status: tuple[int, str | None] = (StatusCode.UNSET.value, None)
        self._shipper = shipper if context.trace_flags.sampled else None

    def set_attributes(self, attributes: Attributes) -> None:
        self.attributes.update(attributes)

    def add_event(
        self, name: str, attributes: Attributes | None = None, time_ns: int | None = None
    ) -> None:
        self._events.append([name, time_ns or time.time_ns(), dict(attributes or {})])

    def record_error(self, error_type: str, message: str) -> None:
        self.attributes["error.type"] = error_type
        self._status = (StatusCode.ERROR.value, message)

    def trace_headers(self) -> dict[str, str]:
        return w3c_headers(self.context)

    def end(self, end_ns: int | None = None) -> None:
        if self._shipper is None:
            return
        self._shipper.submit(
            make_record(
                self.name, SpanKind.CLIENT.value, self.context, self.parent, self.start_ns,
                end_ns or time.time_ns(), self.attributes, self._events, self._status,
            )
        )  # fmt: skip
        self._shipper = None


def start_call_span(
    provider: TracerProvider,
    shipper: SpanShipper | None,
    name: str,
    parent: OtelContext,
    attributes: dict[str, AttributeValue],
) -> CallSpan:
    """A CLIENT :class:`CallSpan` under ``parent``, sampled by the provider's sampler."""
    parent_span = trace.get_current_span(parent).get_span_context()
    valid = parent_span is not INVALID_SPAN_CONTEXT and parent_span.is_valid
    ids = provider.id_generator
    trace_id = parent_span.trace_id if valid else ids.generate_trace_id()
    result = provider.sampler.should_sample(parent, trace_id, name, SpanKind.CLIENT, attributes)
    if result.attributes:
        attributes.update(result.attributes)
    sampled = result.decision is Decision.RECORD_AND_SAMPLE
    flags = TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
    context = SpanContext(trace_id, ids.generate_span_id(), False, flags, result.trace_state)
    return CallSpan(name, context, parent_span if valid else None, attributes, shipper)
