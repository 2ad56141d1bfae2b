"""The proxy's half of span export: batch finished spans and ship them to a worker process.

Why a process: in CPython, turning a span into OTLP protobuf costs ~100 µs (the SDK's
encoder builds a message per attribute), more than the rest of a proxied request, and an
exporter thread holds the GIL while it does so — it competes with the event loop and
adds its batches to the tail latency. The proxy therefore hands each finished span, as
a compact record, to :class:`SpanShipper`, which batches records and writes them from a
sender thread (the write releases the GIL) to ``python -m hookgate.telemetry.worker``. That
worker encodes them (:mod:`hookgate.telemetry.otlp`, ~3x cheaper than rebuilding SDK spans
for the SDK's encoder) and exports them with the SDK's own exporters (OTLP over HTTP or gRPC,
or the console), on whatever core the OS gives it, at a lower scheduling priority than the
proxy.

The shipper is a span processor (``on_end``) for spans made with the SDK's tracer, and
takes records directly (:meth:`SpanShipper.submit`) from the proxy's per-request span,
which never builds an SDK span at all. Export stays a side channel: the queue is bounded
and never waited on (spans that do not fit are dropped and counted), and a worker that
dies is restarted for the next batch. The worker reports back, on its stdout, how many
spans it failed to export, and those count as dropped too.

The pipe's format is :mod:`hookgate.telemetry.frames`; the worker is
:mod:`hookgate.telemetry.worker`.
"""

from __future__ import annotations

import collections
import logging
import subprocess
import sys
import threading
import time
from typing import Any

import orjson
from opentelemetry.context import Context as OtelContext
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from hookgate.telemetry.frames import LENGTH, Record, record_of, write_frame

log = logging.getLogger("hookgate")

RESTART_AFTER_S = 1.0
"""A worker that died is restarted at most this often."""
SHUTDOWN_S = 4.0
"""The most a shutdown waits for queued spans to be exported."""
FRAME_RECORDS = 32
"""Records per frame to the worker."""


class SpanShipper(SpanProcessor):
    """Batches span records and writes them to an export worker (see the module docstring).

    ``settings`` is the worker's exporter configuration (:func:`~hookgate.telemetry.worker.main`
    reads it).
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
            write_frame(worker.stdin, payload)
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
                [sys.executable, "-m", "hookgate.telemetry.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
            )
            assert worker.stdin is not None
            write_frame(worker.stdin, self._settings)
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
            while (head := worker.stdout.read(LENGTH.size)) and len(head) == LENGTH.size:
                with self._lock:
                    self._dropped += LENGTH.unpack(head)[0]


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
