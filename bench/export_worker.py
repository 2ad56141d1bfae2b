"""What the span export worker costs per span: its CPU time, fed through the real process.

Run: ``python -m bench.export_worker [--spans 20000] [--rounds 3] [--max-batch 512]
[--before DIR]`` (from the repository root, in the venv). Each run starts ``python -m
hookgate.telemetry.worker`` as the proxy's :class:`~hookgate.telemetry.shipper.SpanShipper`
does, writes it the settings frame of an OTLP/HTTP exporter aimed at a sink on a loopback
port (in this process; ``--max-batch`` spans a post at most, the tracing policy's default),
then ``--spans`` records shaped like the proxy's call spans in frames of
:data:`~hookgate.telemetry.shipper.FRAME_RECORDS`, closes its stdin and reaps it. The
worker's CPU time (user + system, from ``wait4``) less that of a run given no record (its
start, imports and shutdown) is divided by the spans: µs per span.

With ``--before DIR`` (a ``proxy/`` directory, e.g. from ``git archive <commit> proxy``),
that source's worker runs in the same rounds, alternating with this one, and the sink
checks that both delivered the same spans: every span, its resource and its scope,
compared as deterministic protobuf bytes (batching may differ, content may not).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from hookgate.telemetry.frames import LENGTH, Record
from hookgate.telemetry.shipper import FRAME_RECORDS

ROOT = Path(__file__).resolve().parent.parent
RESOURCE = {"service.name": "hookgate", "service.version": "0.1.0", "host.name": "bench"}


def records(count: int) -> list[Record]:
    """Records like the proxy's call spans: ~15 attributes of each type, some with a remote
    parent, a trace state, an event, an error status; a few child spans of another scope."""
    out: list[Record] = []
    for i in range(count):
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
            "gen_ai.response.id": f"chatcmpl-{i:012d}",
            "gen_ai.request.max_tokens": 256,
            "gen_ai.request.temperature": 0.2,
            "gen_ai.usage.input_tokens": 120 + i % 50,
            "gen_ai.usage.output_tokens": 30 + i % 20,
            "gen_ai.response.finish_reasons": ["stop"],
            "server.address": "127.0.0.1",
            "server.port": 8080,
            "http.response.status_code": 200,
            "hookgate.request_id": f"req-{i:016x}",
            "hookgate.target": "openai",
        }
        error = i % 10 == 0
        if error:
            attributes["error.type"] = "UpstreamTimeout"
        events = [["gen_ai.choice", 1_700_000_000_500_000_000 + i, {"index": 0}]] if i % 4 else []
        remote = i % 2 == 0
        out.append([
            "chat gpt-4o-mini" if i % 5 else "attempt openai",
            2 if i % 5 else 0,
            f"{(i + 1) * 7919:032x}",
            f"{(i + 1) * 104729:016x}",
            f"{(i + 1) * 15485863:016x}" if remote or i % 3 else None,
            remote,
            1,
            "vendor=abc,other=1" if i % 7 == 0 else None,
            1_700_000_000_000_000_000 + i * 1000,
            1_700_000_000_900_000_000 + i * 1000,
            attributes,
            events,
            2 if error else 0,
            "upstream timed out" if error else None,
            "hookgate" if i % 5 else "hookgate.fallback",
        ])  # fmt: skip
    return out


class Sink:
    """An OTLP/HTTP receiver on a loopback port that keeps what each run delivered."""

    def __init__(self) -> None:
        self.received: Counter[bytes] = Counter()
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                got = []
                for resource_spans in request.resource_spans:
                    resource = resource_spans.resource.SerializeToString(deterministic=True)
                    for scope_spans in resource_spans.scope_spans:
                        scope = scope_spans.scope.SerializeToString(deterministic=True)
                        got += [
                            resource + b"|" + scope + b"|" + s.SerializeToString(deterministic=True)
                            for s in scope_spans.spans
                        ]
                with sink._lock:
                    sink.received.update(got)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self) -> Counter[bytes]:
        with self._lock:
            received, self.received = self.received, Counter()
        return received


def run_worker(python_path: str, endpoint: str, frames: list[bytes], max_batch: int) -> float:
    """Feed ``frames`` to one worker; its CPU seconds (user + system) from start to exit."""
    settings = {
        "kind": "otlp", "protocol": "http/protobuf", "endpoint": endpoint, "headers": {},
        "timeout_s": 10, "resource": RESOURCE, "max_batch": max_batch,
    }  # fmt: skip
    env = {**os.environ, "PYTHONPATH": python_path}
    worker = subprocess.Popen(
        [sys.executable, "-m", "hookgate.telemetry.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert worker.stdin is not None and worker.stdout is not None
    for payload in [orjson.dumps(settings), *frames]:
        worker.stdin.write(LENGTH.pack(len(payload)) + payload)
    worker.stdin.close()
    failures = worker.stdout.read()
    _, status, usage = os.wait4(worker.pid, 0)
    worker.returncode = os.waitstatus_to_exitcode(status)
    assert worker.returncode == 0 and not failures, (worker.returncode, failures)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-batch", type=int, default=512)
    parser.add_argument("--before", help="a hookgate proxy/ directory to compare with")
    args = parser.parse_args()
    batch = records(args.spans)
    frames = [
        orjson.dumps(batch[i : i + FRAME_RECORDS]) for i in range(0, len(batch), FRAME_RECORDS)
    ]
    trees = {"after": str(ROOT / "proxy")}
    if args.before:
        trees["before"] = str(Path(args.before).resolve())
    sink = Sink()
    per_span: dict[str, list[float]] = {name: [] for name in trees}
    delivered: dict[str, Counter[bytes]] = {}
    for _ in range(args.rounds):
        for name, path in trees.items():
            idle = run_worker(path, sink.endpoint, [], args.max_batch)
            sink.take()
            busy = run_worker(path, sink.endpoint, frames, args.max_batch)
            delivered[name] = sink.take()
            assert sum(delivered[name].values()) == args.spans, (name, delivered[name].total())
            per_span[name].append((busy - idle) / args.spans * 1e6)
    print(
        f"span export worker, OTLP/HTTP, {args.spans} spans, batches of {args.max_batch} at "
        f"most, {args.rounds} rounds"
    )
    for name, figures in per_span.items():
        listed = " ".join(f"{f:.1f}" for f in figures)
        print(f"  {name:6} CPU µs per span: median {statistics.median(figures):6.1f}  ({listed})")
    if "before" in trees:
        ratio = statistics.median(per_span["before"]) / statistics.median(per_span["after"])
        same = delivered["before"] == delivered["after"]
        print(f"  before/after: {ratio:.2f}x; the collector received the same spans: {same}")
        assert same


if __name__ == "__main__":
    main()
