"""Span records straight to OTLP protobuf: the export worker's encoder.

The SDK's OTLP exporters take ``ReadableSpan`` objects and encode them with
``opentelemetry.exporter.otlp.proto.common``'s ``encode_spans``, which walks each span's
attributes through several Python calls and builds one protobuf message per value. In the
export worker, rebuilding the SDK spans from :data:`~hookgate.telemetry.frames.Record`s and
encoding them that way cost ~100 µs a span, most of the worker's CPU and, where the worker
shares the proxy's core, a large share of a traced request's cost.

:class:`RecordEncoder` builds the same ``ExportTraceServiceRequest`` from the records with
``opentelemetry-proto``'s messages: each span added in place to its scope's list, its
attributes given to the message as nested dicts (protobuf builds those in C), the resource
encoded once. It follows the SDK's encoder field for field — spans grouped by scope in the
order scopes first appear, span flags carrying only whether the parent is remote, a status
description kept only for ``ERROR``, an attribute the encoder cannot encode (an integer out of
int64's range) logged and left out — and ``tests/telemetry/test_otlp.py`` holds the two to
the same parsed messages.

:mod:`hookgate.telemetry.otlp_http` and :mod:`hookgate.telemetry.otlp_grpc` are the SDK's
exporters sending such requests.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, SpanFlags
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import StatusCode

from hookgate.telemetry.frames import Record

log = logging.getLogger("hookgate")

_KINDS = (
    Span.SPAN_KIND_INTERNAL,
    Span.SPAN_KIND_SERVER,
    Span.SPAN_KIND_CLIENT,
    Span.SPAN_KIND_PRODUCER,
    Span.SPAN_KIND_CONSUMER,
)
"""OTLP's span kind for each ``SpanKind`` value (the API's kinds count from 0, OTLP's from
UNSPECIFIED = 0)."""
_LOCAL_PARENT = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
_REMOTE_PARENT = _LOCAL_PARENT | SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
_ERROR = StatusCode.ERROR.value
_INT64 = range(-(2**63), 2**63)


def _value(value: Any) -> dict[str, Any]:
    """An ``AnyValue`` as the dict protobuf builds it from; raises ValueError for what the
    SDK's ``_encode_value`` cannot encode. Records hold JSON's types; a ``Resource`` holds
    tuples for lists."""
    kind = type(value)
    if kind is str:
        return {"string_value": value}
    if kind is bool:
        return {"bool_value": value}
    if kind is int:
        if value not in _INT64:
            raise ValueError(f"integer out of int64 range: {value}")
        return {"int_value": value}
    if kind is float:
        return {"double_value": value}
    if value is None:
        return {}
    if kind is list or kind is tuple:
        return {"array_value": {"values": [_value(v) for v in value]}}
    if kind is dict:
        return {"kvlist_value": {"values": [_key_value(str(k), v) for k, v in value.items()]}}
    raise ValueError(f"Invalid type {kind} of value {value}")


def _key_value(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": _value(value)}


def encode_attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``KeyValue``s as dicts; an attribute that cannot be encoded is logged and left out,
    as the SDK's encoder does."""
    encoded = []
    for key, value in attributes.items():
        try:
            encoded.append({"key": key, "value": _value(value)})
        except ValueError as error:
            log.error("span export: attribute %s not encoded: %s", key, error)
    return encoded


class RecordEncoder:
    """Records to an ``ExportTraceServiceRequest`` (see the module docstring): every span
    under ``resource``, in an instrumentation scope named by its record, of ``version``."""

    def __init__(self, resource: Resource, version: str) -> None:
        self._resource = {"attributes": encode_attributes(resource.attributes)}
        self._schema_url = resource.schema_url
        self._version = version

    def encode(self, records: Sequence[Record]) -> ExportTraceServiceRequest:
        request = ExportTraceServiceRequest()
        if not records:
            return request
        resource_spans = request.resource_spans.add(
            resource=self._resource, schema_url=self._schema_url
        )
        scopes: dict[str, Any] = {}  # scope name: its repeated Span field
        for (name, kind, trace_id, span_id, parent_id, parent_remote, _flags, state, start, end,
             attributes, events, status_code, description, scope) in records:  # fmt: skip
            spans = scopes.get(scope)
            if spans is None:
                scope_spans = resource_spans.scope_spans.add(
                    scope={"name": scope, "version": self._version}
                )
                spans = scopes[scope] = scope_spans.spans
            spans.add(
                trace_id=bytes.fromhex(trace_id),
                span_id=bytes.fromhex(span_id),
                trace_state=state,
                parent_span_id=None if parent_id is None else bytes.fromhex(parent_id),
                name=name,
                kind=_KINDS[kind],
                start_time_unix_nano=start,
                end_time_unix_nano=end,
                attributes=encode_attributes(attributes),
                events=[
                    {"name": n, "time_unix_nano": t, "attributes": encode_attributes(a)}
                    for n, t, a in events
                ],
                status={
                    "code": status_code,
                    "message": description if status_code == _ERROR else None,
                },
                flags=_REMOTE_PARENT if parent_remote else _LOCAL_PARENT,  # False with no parent
            )
        return request
