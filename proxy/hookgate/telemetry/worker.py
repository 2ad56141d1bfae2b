"""The span export worker: ``python -m hookgate.telemetry.worker``, started by the proxy's
:class:`~hookgate.telemetry.shipper.SpanShipper`.

It reads the exporter's settings, then batches of span records, from stdin (see
:mod:`hookgate.telemetry.frames`); exports them at a lower scheduling priority than the
proxy — for OTLP (HTTP or gRPC) encoded straight from the records
(:mod:`hookgate.telemetry.otlp`) and sent by the SDK's exporters, for the console as SDK
``ReadableSpan`` objects rebuilt from the records; and reports on its stdout how many spans
it failed to export. It exits when stdin closes, after exporting what it holds.
"""

from __future__ import annotations

import logging
import os
import select
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExportResult

from hookgate.telemetry.frames import LENGTH, Record, read_frame
from hookgate.telemetry.settings import Protocol as OtlpProtocol
from hookgate.telemetry.settings import env_protocol
from hookgate.version import __version__

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

log = logging.getLogger("hookgate")

NICENESS = 10
LOG_REPEAT_S = 30.0
"""The worker logs a repeated message (a collector that is down) at most this often."""
"""The worker's scheduling niceness: below the proxy's, so it runs when the proxy waits."""


class RequestExporter(Protocol):
    """An OTLP exporter of encoded requests (:mod:`hookgate.telemetry.otlp`)."""

    def export_request(self, request: ExportTraceServiceRequest) -> SpanExportResult: ...

    def shutdown(self) -> None: ...


def make_exporter(
    kind: str, protocol: OtlpProtocol | None, endpoint: str | None, headers: dict[str, str],
    timeout_s: float | None,
) -> RequestExporter | ConsoleSpanExporter | None:  # fmt: skip
    """The configured exporter; ``OTEL_EXPORTER_OTLP_*`` fill in what the YAML leaves out
    (the exporters read them for a ``None`` endpoint, empty headers, a ``None`` timeout)."""
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter()
    protocol = protocol or env_protocol()
    if protocol == "grpc":
        from hookgate.telemetry.otlp_grpc import GrpcExporter

        return GrpcExporter(endpoint=endpoint, headers=headers or None, timeout=timeout_s)
    from hookgate.telemetry.otlp_http import HttpExporter

    return HttpExporter(endpoint=endpoint, headers=headers or None, timeout=timeout_s)


def readable_spans(records: Sequence[Record], resource: Any, version: str) -> list[ReadableSpan]:
    """SDK spans from records (the worker's half of
    :func:`~hookgate.telemetry.frames.record_of`), for the console exporter."""
    from opentelemetry.sdk.trace import Event
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
    from opentelemetry.trace.span import TraceState

    scopes: dict[str, InstrumentationScope] = {}
    spans = []
    for (name, kind, trace_id, span_id, parent_id, parent_remote, flags, state, start, end,
         attributes, events, status_code, description, scope) in records:  # fmt: skip
        trace_state = TraceState.from_header([state]) if state else None
        tid = int(trace_id, 16)
        context = SpanContext(tid, int(span_id, 16), False, TraceFlags(flags), trace_state)
        parent = (
            None
            if parent_id is None
            else SpanContext(tid, int(parent_id, 16), parent_remote, TraceFlags(flags))
        )
        if scope not in scopes:
            scopes[scope] = InstrumentationScope(scope, version)
        spans.append(
            ReadableSpan(
                name=name,
                context=context,
                parent=parent,
                resource=resource,
                attributes=attributes,
                events=[Event(n, a, t) for n, t, a in events],
                kind=SpanKind(kind),
                status=Status(StatusCode(status_code), description),
                start_time=start,
                end_time=end,
                instrumentation_scope=scopes[scope],
            )
        )
    return spans


def _sender(
    exporter: RequestExporter | ConsoleSpanExporter, resource: Any
) -> Callable[[list[Record]], SpanExportResult]:
    """Export a batch of records: OTLP encoded from the records, the console from SDK spans."""
    if isinstance(exporter, ConsoleSpanExporter):
        console = exporter
        return lambda records: console.export(readable_spans(records, resource, __version__))
    from hookgate.telemetry.otlp import RecordEncoder

    encoder, otlp = RecordEncoder(resource, __version__), exporter
    return lambda records: otlp.export_request(encoder.encode(records))


class _Quieted(logging.Filter):
    """Let each distinct message through once per ``interval_s``, then say how many repeats
    were held back. A dead collector makes the SDK's exporters log one error per batch —
    hundreds a second under load; its failures are counted as dropped spans already."""

    def __init__(self, interval_s: float) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._seen: dict[tuple[str, int, object], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, record.msg)
        now = time.monotonic()
        last, held = self._seen.get(key, (-self.interval_s, 0))
        if now - last < self.interval_s:
            self._seen[key] = (last, held + 1)
            return False
        self._seen[key] = (now, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like it in the last {self.interval_s:g} s)"
        return True


def main() -> None:
    """The worker: read settings, then export every batch until stdin closes."""
    from opentelemetry.sdk.resources import Resource

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_Quieted(LOG_REPEAT_S))
    # Yield the CPU to the proxy: where they share a core, a request never waits behind
    # an export batch; under saturation the queue fills and spans are dropped (counted).
    os.nice(NICENESS)
    # The report pipe is stdout's descriptor, kept apart: whatever else writes to stdout
    # (the console exporter, a library's print) goes to stderr, the proxy's log, and so
    # can never be read as a failure count.
    stdin, stdout = sys.stdin.buffer, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    first = read_frame(stdin)
    if first is None:
        return
    settings = orjson.loads(first)
    exporter = make_exporter(
        settings["kind"], settings["protocol"], settings["endpoint"], settings["headers"],
        settings["timeout_s"],
    )  # fmt: skip
    assert exporter is not None
    resource = Resource(settings["resource"])  # as the proxy resolved it
    send = _sender(exporter, resource)

    def export(records: list[Record]) -> None:
        try:
            result = send(records)
        except Exception:  # a bad batch loses that batch only
            log.exception("hookgate span export worker: a batch was not exported")
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            stdout.write(LENGTH.pack(len(records)))
            stdout.flush()

    batch: list[Record] = []
    try:
        while (frame := read_frame(stdin)) is not None:
            batch += orjson.loads(frame)
            # Export when the batch is full or nothing more is waiting to be read.
            if len(batch) >= settings["max_batch"] or not select.select([stdin], [], [], 0)[0]:
                export(batch)
                batch = []
        if batch:
            export(batch)
    finally:
        exporter.shutdown()


if __name__ == "__main__":
    main()
