"""The export worker's OTLP encoder builds what the SDK's encoder builds from rebuilt spans,
and the worker process delivers exactly that to a collector, over HTTP and over gRPC."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import SpanContext, TraceFlags
from opentelemetry.trace.span import TraceState

from hookgate.telemetry.frames import LENGTH, Record, make_record
from hookgate.telemetry.otlp import RecordEncoder
from hookgate.telemetry.worker import readable_spans
from hookgate.version import __version__
from tests.otlp import OtlpGrpcReceiver, OtlpReceiver

RESOURCE = {
    "service.name": "hookgate",
    "service.version": "0.1.0",
    "deployment.replicas": 3,
    "host.tags": ["a", "b"],
}

ATTRIBUTES: dict[str, Any] = {
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.usage.input_tokens": 120,
    "gen_ai.request.temperature": 0.25,
    "hookgate.streamed": True,
    "hookgate.cached": False,
    "gen_ai.response.finish_reasons": ["stop", "length"],
    "hookgate.seeds": [1, -2, 2**62],
    "hookgate.weights": [0.5, 1e300],
    "hookgate.flags": [True, False],
    "hookgate.empty": [],
    "hookgate.negative": -(2**63),
    "hookgate.unicode": "é — 😀",
    "hookgate.none": None,  # not an attribute type, yet encodable: an empty AnyValue
    "hookgate.map": {"a": 1, "b": ["x", None]},  # likewise: a kvlist
    "hookgate.too_large": 2**64 - 1,  # out of int64 (JSON carries it): the SDK leaves it out
    "hookgate.too_large_in_list": [1, 2**63],
}


def _context(trace_id: int, span_id: int, remote: bool = False, state: str = "") -> SpanContext:
    trace_state = TraceState.from_header([state]) if state else None
    return SpanContext(trace_id, span_id, remote, TraceFlags(TraceFlags.SAMPLED), trace_state)


def records() -> list[Record]:
    """Records using every field: parents none, local and remote; trace states; events with
    attributes; every status code, with and without a description; every span kind; every
    attribute type; three scopes, interleaved."""
    trace = 0x0AF7651916CD43DD8448EB211C80319C
    local_parent = _context(trace, 0x00F067AA0BA902B7)
    remote_parent = _context(trace, 0x1111111111111111, remote=True)
    made = [
        make_record(
            "chat gpt-4o-mini", 2, _context(trace, 0x2222222222222222, state="vendor=abc,other=1"),
            remote_parent, 1_700_000_000_000_000_000, 1_700_000_000_900_000_000, ATTRIBUTES,
            [["gen_ai.choice", 1_700_000_000_500_000_000, {"index": 0, "finish": ["stop"]}],
             ["empty", 1_700_000_000_600_000_000, {}]],
            (2, "upstream timed out"),
        ),
        make_record(
            "attempt openai", 0, _context(trace, 0x3333333333333333), local_parent,
            1_700_000_000_100_000_000, 1_700_000_000_200_000_000, {"hookgate.target": "openai"},
            [], (1, None), "hookgate.fallback",
        ),
        make_record(
            "root", 1, _context(0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF), None,
            1, 2, {}, [], (0, None), "other.scope",
        ),
        make_record(
            "producer", 3, _context(trace, 0x4444444444444444, state="k=v"), local_parent,
            3, 4, {"n": 1}, [["e", 5, {"b": True, "f": 1.5, "s": ["x"]}]], (0, None),
        ),
        make_record(
            "consumer", 4, _context(trace, 0x5555555555555555), remote_parent, 5, 6,
            {"x": "y"}, [], (1, None), "hookgate.fallback",
        ),
    ]  # fmt: skip
    # A description with a status other than ERROR: the SDK's Status drops it.
    made.append([*made[4][:12], 0, "not an error", "other.scope"])
    # As the worker receives them: through the pipe's JSON.
    return list(orjson.loads(orjson.dumps(made)))


def sdk_encoded(batch: list[Record]) -> ExportTraceServiceRequest:
    """What the worker sent before it encoded records itself: the SDK's encoder over SDK
    spans rebuilt from the records."""
    return encode_spans(readable_spans(batch, Resource(RESOURCE), __version__))


def parsed(request: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    message = ExportTraceServiceRequest()
    message.ParseFromString(request.SerializeToString())
    return message


def test_the_encoder_builds_what_the_sdk_encodes_from_rebuilt_spans() -> None:
    batch = records()
    ours = parsed(RecordEncoder(Resource(RESOURCE), __version__).encode(batch))
    theirs = parsed(sdk_encoded(batch))
    assert MessageToDict(ours) == MessageToDict(theirs)  # a readable difference first
    assert ours == theirs
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
        deterministic=True
    )
    spans = [s for r in ours.resource_spans for ss in r.scope_spans for s in ss.spans]
    assert len(spans) == len(batch)
    keys = {a.key for a in spans[0].attributes}
    assert "hookgate.seeds" in keys and "hookgate.too_large" not in keys


def test_an_empty_batch_is_an_empty_request() -> None:
    encoder = RecordEncoder(Resource(RESOURCE), __version__)
    assert encoder.encode([]) == sdk_encoded([]) == ExportTraceServiceRequest()


@pytest.fixture
def grpc_receiver() -> Iterator[OtlpGrpcReceiver]:
    receiver = OtlpGrpcReceiver()
    yield receiver
    receiver.stop()


def _run_worker(protocol: str, endpoint: str, batch: list[Record]) -> bytes:
    """One worker process given ``batch`` as one frame (so one export); its failure reports."""
    settings = {
        "kind": "otlp", "protocol": protocol, "endpoint": endpoint, "headers": {},
        "timeout_s": 5, "resource": RESOURCE, "max_batch": 512,
    }  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "-m", "hookgate.telemetry.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert worker.stdin is not None and worker.stdout is not None
    for payload in (orjson.dumps(settings), orjson.dumps(batch)):
        worker.stdin.write(LENGTH.pack(len(payload)) + payload)
    worker.stdin.close()
    with worker.stdout:
        reports = worker.stdout.read()
    assert worker.wait(20) == 0
    return reports


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_the_worker_delivers_what_the_sdk_encodes(
    protocol: str, receiver: OtlpReceiver, grpc_receiver: OtlpGrpcReceiver
) -> None:
    batch = records()
    if protocol == "grpc":
        endpoint, received = grpc_receiver.endpoint, grpc_receiver.requests
    else:
        endpoint, received = receiver.endpoint, receiver.requests
    assert _run_worker(protocol, endpoint, batch) == b""  # no span failed
    (request,) = received
    assert request == parsed(sdk_encoded(batch))
