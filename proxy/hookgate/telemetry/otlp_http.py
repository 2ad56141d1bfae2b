"""The export worker's OTLP/HTTP exporter, sending requests already encoded."""

from __future__ import annotations

import logging

from opentelemetry.exporter.otlp.proto.http._common import _is_request_too_large
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as SdkHttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult

log = logging.getLogger("hookgate")


class HttpExporter(SdkHttpExporter):
    """The SDK's OTLP/HTTP span exporter, sending requests already encoded.

    :meth:`export_request` is the SDK's ``export`` from its serialisation on: the same size
    limit, then the same client (session, headers, compression, timeout, retries). It reads
    the SDK exporter's ``_client`` and ``_max_request_size``, which its public interface does
    not offer; ``tests/telemetry/test_otlp.py`` sends through it to a collector. The
    exporter's own metrics are not recorded: the worker has no meter provider, so they went
    nowhere.
    """

    def export_request(self, request: ExportTraceServiceRequest) -> SpanExportResult:
        data = request.SerializePartialToString()
        if _is_request_too_large(data, self._max_request_size):
            log.warning(
                "Dropping span batch: serialized size %d bytes exceeds max_request_size %d bytes.",
                len(data),
                self._max_request_size,
            )
            return SpanExportResult.FAILURE
        if self._client.export(data).success:
            return SpanExportResult.SUCCESS
        return SpanExportResult.FAILURE
