"""An OTLP/HTTP trace receiver on a loopback port, decoding spans with opentelemetry-proto."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
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
