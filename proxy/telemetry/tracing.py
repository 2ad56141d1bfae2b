"""OpenTelemetry plumbing: a tracer provider per tracing config, and span adapters.

Export is a side channel: spans go to a :class:`CountingBatchProcessor` (the SDK's batch
processor with a bounded queue, exporting from its own thread), so an exporter that is
slow or down never slows or fails a request; spans that do not fit the queue are dropped
and counted.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Literal

from opentelemetry import trace
from opentelemetry.context import Context as OtelContext
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from proxy import __version__
from proxy.pipeline.observe import Attributes, Span

log = logging.getLogger("hookgate")

PROPAGATOR = TraceContextTextMapPropagator()

Protocol = Literal["http/protobuf", "grpc"]


class CountingBatchProcessor(BatchSpanProcessor):
    """``BatchSpanProcessor`` that counts the spans it drops because its queue is full.

    The SDK drops them (and logs once) but exposes no count without an OpenTelemetry
    meter; we read its queue length before each hand-off. ``take_dropped`` returns and
    resets the count since the last call.
    """

    def __init__(self, exporter: SpanExporter, *, max_queue_size: int, schedule_delay_ms: float,
                 max_export_batch_size: int) -> None:  # fmt: skip
        super().__init__(
            exporter,
            max_queue_size=max_queue_size,
            schedule_delay_millis=schedule_delay_ms,
            max_export_batch_size=min(max_export_batch_size, max_queue_size),
        )
        self._max_queue_size = max_queue_size
        self._dropped = 0
        self._lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        if len(self._batch_processor._queue) >= self._max_queue_size:
            with self._lock:
                self._dropped += 1
        super().on_end(span)

    def take_dropped(self) -> int:
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        return dropped


def make_exporter(
    kind: str, protocol: Protocol | None, endpoint: str | None, headers: dict[str, str],
    timeout_s: float,
) -> SpanExporter | None:  # fmt: skip
    """The configured exporter; ``OTEL_EXPORTER_OTLP_*`` fill in what the YAML leaves out."""
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter()
    protocol = protocol or _env_protocol()
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter(endpoint=endpoint, headers=headers or None, timeout=timeout_s)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )

    return HttpExporter(endpoint=endpoint, headers=headers or None, timeout=timeout_s)


def otlp_endpoint_in_env() -> bool:
    """True when the standard variables name an OTLP endpoint for traces."""
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


def _env_protocol() -> Protocol:
    value = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
    )
    return "grpc" if value.strip() == "grpc" else "http/protobuf"


def make_provider(
    service_name: str, sample_ratio: float, processor: CountingBatchProcessor | None
) -> TracerProvider:
    """A tracer provider of our own (never the global one)."""
    resource = Resource.create({"service.name": service_name, "service.version": __version__})
    provider = TracerProvider(
        resource=resource, sampler=ParentBased(TraceIdRatioBased(sample_ratio))
    )
    if processor is not None:
        provider.add_span_processor(processor)
    return provider


class OtelSpan:
    """:class:`~proxy.pipeline.observe.Span` over an OpenTelemetry span."""

    __slots__ = ("_span",)

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    @property
    def otel(self) -> trace.Span:
        return self._span

    def set_attributes(self, attributes: Attributes) -> None:
        self._span.set_attributes(attributes)

    def add_event(self, name: str, attributes: Attributes | None = None) -> None:
        self._span.add_event(name, attributes)

    def record_error(self, error_type: str, message: str) -> None:
        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, message))

    def trace_headers(self) -> dict[str, str]:
        carrier: dict[str, str] = {}
        PROPAGATOR.inject(carrier, context=trace.set_span_in_context(self._span))
        return carrier

    def end(self) -> None:
        self._span.end()


class OtelSpans:
    """:class:`~proxy.pipeline.observe.Spans`: children of one request span."""

    __slots__ = ("_parent", "_tracer")

    def __init__(self, tracer: trace.Tracer, parent: trace.Span) -> None:
        self._tracer = tracer
        self._parent = trace.set_span_in_context(parent)

    def start(self, name: str, attributes: Attributes | None = None) -> Span:
        kind = SpanKind.CLIENT if name.startswith("attempt ") else SpanKind.INTERNAL
        span = self._tracer.start_span(name, context=self._parent, kind=kind, attributes=attributes)
        return OtelSpan(span)


def parent_context(headers: dict[str, str]) -> OtelContext:
    """The client's trace context from ``traceparent``/``tracestate`` (empty if none)."""
    return PROPAGATOR.extract(headers)
