"""OTLP trace receivers on a loopback port (HTTP, and gRPC), decoding spans with
opentelemetry-proto."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
    TraceServiceServicer,
    add_TraceServiceServicer_to_server,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.fakes import RunningApp


@dataclass
class ReceivedSpan:
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    status_code: int
    events: list[str]
    start_ns: int
    end_ns: int
    resource: dict[str, Any]
    """The attributes of the resource the span was exported under."""


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


class OtlpReceiver:
    """Collects every span POSTed to ``/v1/traces``."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests: list[ExportTraceServiceRequest] = []
        """Every request as received."""
        self._lock = threading.Lock()
        app = web.Application()
        app.router.add_post("/v1/traces", self._traces)
        self.server = RunningApp(app)

    @property
    def endpoint(self) -> str:
        return f"{self.server.url}/v1/traces"

    async def _traces(self, request: web.Request) -> web.Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
        with self._lock:
            self.requests.append(message)
        for resource_spans in message.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received = ReceivedSpan(
                        name=span.name,
                        kind=span.kind,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        status_code=span.status.code,
                        events=[e.name for e in span.events],
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        resource=resource,
                    )
                    with self._lock:
                        self.spans.append(received)
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")

    def wait_until(
        self, done: Callable[[list[ReceivedSpan]], bool], timeout: float = 10
    ) -> list[ReceivedSpan]:
        """The spans received once ``done(spans)`` holds (fails after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                spans = list(self.spans)
            if done(spans):
                return spans
            time.sleep(0.05)
        raise AssertionError(f"spans never matched: {[s.name for s in self.spans]}")

    def wait_for(self, count: int, timeout: float = 10) -> list[ReceivedSpan]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.spans) >= count:
                    return list(self.spans)
            time.sleep(0.05)
        raise AssertionError(f"expected {count} spans, got {len(self.spans)}: {self.spans}")


class OtlpGrpcReceiver(TraceServiceServicer):
    """An OTLP/gRPC trace receiver on loopback (``endpoint``; ``stop()`` when done) that keeps
    every request as received."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self._lock = threading.Lock()
        self.server = grpc.server(ThreadPoolExecutor(2))
        add_TraceServiceServicer_to_server(self, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{port}"  # http: no TLS
        self.server.start()

    def Export(  # the service's method name
        self, request: ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> ExportTraceServiceResponse:
        with self._lock:
            self.requests.append(request)
        return ExportTraceServiceResponse()

    def stop(self) -> None:
        self.server.stop(None)
