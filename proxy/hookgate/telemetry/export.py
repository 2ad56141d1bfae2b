"""Span export in a worker process: the proxy records spans, a child process encodes them.

Why a process: in CPython, turning a span into OTLP protobuf costs ~100 µs (the SDK's
encoder builds a message per attribute), more than the rest of a proxied request, and an
exporter thread holds the GIL while it does so — it competes with the event loop and
adds its batches to the tail latency. The proxy therefore hands each finished span, as
a compact record, to :class:`SpanShipper`, which batches records and writes them from a
sender thread (the write releases the GIL) to ``python -m hookgate.telemetry.export``. That
worker rebuilds SDK ``ReadableSpan`` objects and exports them with the SDK's own
exporters (OTLP over HTTP or gRPC, or the console), on whatever core the OS gives it,
at a lower scheduling priority than the proxy.

The shipper is a span processor (``on_end``) for spans made with the SDK's tracer, and
takes records directly (:meth:`SpanShipper.submit`) from the proxy's per-request span,
which never builds an SDK span at all. Export stays a side channel: the queue is bounded
and never waited on (spans that do not fit are dropped and counted), and a worker that
dies is restarted for the next batch. The worker reports back, on its stdout, how many
spans it failed to export, and those count as dropped too.

Wire format (stdin of the worker): frames of a 4-byte big-endian length and an orjson
document. The first frame is the exporter's settings, every other frame a list of
records (see :func:`record_of`). Provider keys never travel here; collector headers do,
over the pipe (never argv or the environment).
"""

from __future__ import annotations

import collections
import logging
import os
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

import orjson
from opentelemetry.context import Context as OtelContext
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import SpanContext

log = logging.getLogger("hookgate")

Record = list[Any]
"""``[name, kind, trace_id, span_id, parent_id, parent_remote, flags, trace_state,
start_ns, end_ns, attributes, events, status_code, status_description, scope]``; ids as
hex strings, ``events`` as ``[name, time_ns, attributes]`` triples."""

_LENGTH = struct.Struct(">I")
RESTART_AFTER_S = 1.0
"""A worker that died is restarted at most this often."""
SHUTDOWN_S = 4.0
"""The most a shutdown waits for queued spans to be exported."""
FRAME_RECORDS = 32
"""Records per frame to the worker."""
NICENESS = 10
LOG_REPEAT_S = 30.0
"""The worker logs a repeated message (a collector that is down) at most this often."""
"""The worker's scheduling niceness: below the proxy's, so it runs when the proxy waits."""


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


class SpanShipper(SpanProcessor):
    """Batches span records and writes them to an export worker (see the module docstring).

    ``settings`` is the worker's exporter configuration (:func:`main` reads it).
    """

    def __init__(
        self,
        settings: dict[str, Any],
        *,
        max_queue_size: int,
        max_batch: int,
        schedule_delay_s: float,
    ) -> None:
        self._settings = orjson.dumps(settings)
        self._max_queue = max_queue_size
        self._max_batch = max(1, min(max_batch, max_queue_size))
        self._delay = schedule_delay_s
        self._queue: collections.deque[Record] = collections.deque()
        self._dropped = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._closing = False
        self._worker: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._started_at = 0.0
        self._thread = threading.Thread(target=self._run, name="hookgate-span-shipper", daemon=True)
        self._thread.start()

    # -- the proxy's side -------------------------------------------------------------

    def submit(self, record: Record) -> None:
        """Queue one record; never blocks (a full queue drops it and counts the drop)."""
        if len(self._queue) >= self._max_queue or self._closing:
            with self._lock:
                self._dropped += 1
            return
        self._queue.append(record)
        self._idle.clear()
        if len(self._queue) >= self._max_batch:
            self._wake.set()

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None and span.context.trace_flags.sampled:
            self.submit(record_of(span))

    def on_start(self, span: Any, parent_context: OtelContext | None = None) -> None:
        return None

    def take_dropped(self) -> int:
        """Spans dropped since the last call."""
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        return dropped

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Hand everything queued to the worker (True when done within the timeout)."""
        self._wake.set()
        return self._idle.wait(timeout_millis / 1000)

    def shutdown(self) -> None:
        """Hand over what is queued and let the worker export it, within
        :data:`SHUTDOWN_S` in all; a worker still busy then is killed. Idempotent."""
        if self._closing:
            return
        deadline = time.monotonic() + SHUTDOWN_S
        self._closing = True
        self._wake.set()
        self._thread.join(SHUTDOWN_S / 2)
        worker = self._worker
        if worker is None:
            return
        if self._thread.is_alive():  # blocked writing to a worker that does not keep up
            worker.kill()
        _stop(worker, max(0.0, deadline - time.monotonic()))
        if self._reader is not None:
            self._reader.join(1)

    # -- the sender thread ------------------------------------------------------------

    def _run(self) -> None:
        while not self._closing:
            self._wake.wait(self._delay)
            self._wake.clear()
            self._drain()
        self._drain()

    def _drain(self) -> None:
        # Small frames: encoding one holds the GIL (~5 µs a record), and the event loop
        # must not wait behind a whole batch; the worker joins them into export batches.
        while self._queue:
            frame: list[Record] = []
            while self._queue and len(frame) < FRAME_RECORDS:
                frame.append(self._queue.popleft())
            try:
                payload = orjson.dumps(frame)
            except TypeError as exc:  # a value orjson cannot encode: lose this frame only
                log.error("tracing: %d spans could not be encoded: %s", len(frame), exc)
                payload = None
            if payload is None or not self._send(payload):
                with self._lock:
                    self._dropped += len(frame)
        self._idle.set()

    def _send(self, payload: bytes) -> bool:
        worker = self._running_worker()
        if worker is None or worker.stdin is None:
            return False
        try:
            _write_frame(worker.stdin, payload)
        except OSError as exc:
            log.warning("tracing: the span export worker is gone (%s); restarting it", exc)
            return False
        return True

    def _running_worker(self) -> subprocess.Popen[bytes] | None:
        worker = self._worker
        if worker is not None:
            if worker.poll() is None:
                return worker
            _stop(worker)
            self._worker = None
        if time.monotonic() - self._started_at < RESTART_AFTER_S:
            return None
        self._started_at = time.monotonic()
        try:
            worker = subprocess.Popen(
                [sys.executable, "-m", "hookgate.telemetry.export"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
            )
            assert worker.stdin is not None
            _write_frame(worker.stdin, self._settings)
        except OSError as exc:
            log.error("tracing: cannot start the span export worker: %s", exc)
            return None
        self._reader = threading.Thread(
            target=self._count_failures, args=(worker,), name="hookgate-span-failures", daemon=True
        )
        self._reader.start()
        self._worker = worker
        return worker

    def _count_failures(self, worker: subprocess.Popen[bytes]) -> None:
        """Add the spans the worker could not export to the dropped count."""
        assert worker.stdout is not None
        with worker.stdout:
            while (head := worker.stdout.read(_LENGTH.size)) and len(head) == _LENGTH.size:
                with self._lock:
                    self._dropped += _LENGTH.unpack(head)[0]


def _stop(worker: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """Close the worker's input (it exports what it has, then exits) and reap it; kill it
    if it is still running after ``timeout`` seconds."""
    try:
        if worker.stdin is not None:
            worker.stdin.close()
        worker.wait(timeout)
    except (OSError, subprocess.TimeoutExpired):
        worker.kill()
        worker.wait()


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_LENGTH.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> bytes | None:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    body = stream.read(length)
    return body if len(body) == length else None


# -- the worker -------------------------------------------------------------------------


def readable_spans(records: Sequence[Record], resource: Any, version: str) -> list[ReadableSpan]:
    """SDK spans from records (the worker's half of :func:`record_of`)."""
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
    from opentelemetry.sdk.trace.export import SpanExportResult

    from hookgate import __version__
    from hookgate.telemetry.tracing import make_exporter

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
    first = _read_frame(stdin)
    if first is None:
        return
    settings = orjson.loads(first)
    exporter = make_exporter(
        settings["kind"], settings["protocol"], settings["endpoint"], settings["headers"],
        settings["timeout_s"],
    )  # fmt: skip
    assert exporter is not None
    resource = Resource.create(
        {"service.name": settings["service_name"], "service.version": __version__}
    )

    def export(records: list[Record]) -> None:
        try:
            result = exporter.export(readable_spans(records, resource, __version__))
        except Exception:  # a bad batch loses that batch only
            log.exception("hookgate span export worker: a batch was not exported")
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            stdout.write(_LENGTH.pack(len(records)))
            stdout.flush()

    batch: list[Record] = []
    try:
        while (frame := _read_frame(stdin)) is not None:
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
