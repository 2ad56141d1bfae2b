"""The pipe between the proxy and its span export worker: span records and frames.

A frame is a 4-byte big-endian length and an orjson document. The proxy's first frame
to the worker is the exporter's settings, every other frame a list of :data:`Record`s.
The worker answers with bare lengths: the number of spans it failed to export. Provider
keys never travel here; collector headers do, over the pipe (never argv or the
environment).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import IO, Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

Record = list[Any]
"""``[name, kind, trace_id, span_id, parent_id, parent_remote, flags, trace_state,
start_ns, end_ns, attributes, events, status_code, status_description, scope]``; ids as
hex strings, ``parent_remote`` False when there is no parent, ``trace_state`` as
``TraceState.to_header`` writes it (or None), ``events`` as ``[name, time_ns, attributes]``
triples. The worker's encoder (:mod:`hookgate.telemetry.otlp`) relies on these forms."""

LENGTH = struct.Struct(">I")
"""The frame header, and the whole of a failure report."""


def make_record(
    name: str,
    kind: int,
    context: SpanContext,
    parent: SpanContext | None,
    start_ns: int,
    end_ns: int,
    attributes: Mapping[str, Any],
    events: list[list[Any]],
    status: tuple[int, str | None],
    scope: str = "hookgate",
) -> Record:
    """The compact record of a finished span (the one place its layout is written)."""
    return [
        name,
        kind,
        format(context.trace_id, "032x"),
        format(context.span_id, "016x"),
        None if parent is None else format(parent.span_id, "016x"),
        parent is not None and parent.is_remote,
        int(context.trace_flags),
        context.trace_state.to_header() if context.trace_state else None,
        start_ns,
        end_ns,
        attributes,
        events,
        status[0],
        status[1],
        scope,
    ]


def record_of(span: ReadableSpan) -> Record:
    """The compact record of a finished SDK span."""
    context = span.get_span_context()
    assert context is not None and span.start_time is not None and span.end_time is not None
    return make_record(
        span.name, span.kind.value, context, span.parent, span.start_time, span.end_time,
        dict(span.attributes or {}),
        [[e.name, e.timestamp, dict(e.attributes or {})] for e in span.events],
        (span.status.status_code.value, span.status.description),
        span.instrumentation_scope.name if span.instrumentation_scope else "hookgate",
    )  # fmt: skip


def write_frame(stream: IO[bytes], payload: bytes) -> None:
    """Write one frame and flush it."""
    stream.write(LENGTH.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def read_frame(stream: IO[bytes]) -> bytes | None:
    """Read one frame; None at the end of the stream (or a frame cut short)."""
    head = stream.read(LENGTH.size)
    if len(head) < LENGTH.size:
        return None
    (length,) = LENGTH.unpack(head)
    body = stream.read(length)
    return body if len(body) == length else None
