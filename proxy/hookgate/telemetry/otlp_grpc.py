"""The export worker's OTLP/gRPC exporter, sending requests already encoded (a module of its
own so that a worker exporting over HTTP never loads gRPC)."""

from __future__ import annotations

from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as SdkGrpcExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult


class GrpcExporter(SdkGrpcExporter):
    """The SDK's OTLP/gRPC span exporter (channel, credentials, headers, compression, timeout,
    retries) with :class:`~hookgate.telemetry.otlp.RecordEncoder`'s requests as its data.

    The SDK's gRPC exporters share one export loop and differ in two hooks,
    ``_translate_data`` (data to request) and ``_count_data``; here the data is the request.
    """

    def _translate_data(self, data: Any) -> ExportTraceServiceRequest:
        request: ExportTraceServiceRequest = data
        return request

    def _count_data(self, data: Any) -> int:
        return sum(len(s.spans) for r in data.resource_spans for s in r.scope_spans)

    def export_request(self, request: ExportTraceServiceRequest) -> SpanExportResult:
        result: SpanExportResult = self._export(request)
        return result
