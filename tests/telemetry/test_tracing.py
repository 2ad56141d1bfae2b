"""Traces received over OTLP/HTTP: names, GenAI attributes, parent/child links, propagation."""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

import httpx
import openai
import orjson
import psutil
import pytest

import hookgate
from hookgate.wire import synth
from tests.conftest import ProxyFactory, openai_client
from tests.fakes import Events, FakeUpstream, Raw, Status
from tests.otlp import OtlpReceiver

SPAN_KIND_CLIENT = 3
STATUS_ERROR = 2


def tracing(endpoint: str, extra: str = ", schedule_delay_s: 0.05") -> str:
    return (
        "policies:\n"
        f"  - tracing: {{endpoint: '{endpoint}'{extra}}}\n"
        "  - system_prompt: {prepend: rules}\n"
    )


def test_span_continues_client_trace_with_genai_attributes(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver
) -> None:
    url = make_proxy(
        tracing(receiver.endpoint), models="  fast: [{provider: up, model: gpt-4o-mini}]"
    )
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    client = openai_client(
        url,
        default_headers={
            "traceparent": f"00-{trace_id}-{parent_id}-01",
            "tracestate": "vendor=1",
            "x-hookgate-session-id": "conv-7",
            "x-hookgate-agent": "planner",
        },
    )
    client.chat.completions.create(
        model="fast",
        messages=[{"role": "user", "content": "secret prompt"}],
        max_tokens=50,
        temperature=0.2,
        stop=["END"],
    )
    spans = receiver.wait_for(1)
    (span,) = [s for s in spans if s.name == "chat fast"]
    assert not [s for s in spans if s.name.startswith("attempt ")]  # one attempt, and it worked
    assert span.kind == SPAN_KIND_CLIENT
    assert span.trace_id == trace_id and span.parent_span_id == parent_id
    a = span.attributes
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "fast"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.max_tokens"] == 50 and a["gen_ai.request.temperature"] == 0.2
    assert "gen_ai.request.stop_sequences" not in a  # text the client wrote: content
    assert a["gen_ai.conversation.id"] == "conv-7" and a["hookgate.agent"] == "planner"
    assert a["gen_ai.response.model"] == "gpt-4o-mini"
    assert a["gen_ai.response.id"].startswith("chatcmpl-")
    assert a["gen_ai.response.finish_reasons"] == ["stop"]
    assert a["gen_ai.usage.input_tokens"] == 10 and a["gen_ai.usage.output_tokens"] == 5
    assert a["gen_ai.usage.cache_read.input_tokens"] == 0
    assert a["server.address"] == "127.0.0.1" and a["http.response.status_code"] == 200
    assert "gen_ai.input.messages" not in a  # content is off by default
    assert all("secret prompt" not in str(s.attributes) for s in spans)
    assert a["hookgate.target"] == "up/gpt-4o-mini"
    # the upstream continues from the model call's span
    assert upstream.last.headers["traceparent"] == f"00-{trace_id}-{span.span_id}-01"
    assert upstream.last.headers["tracestate"] == "vendor=1"


def test_with_nothing_to_export_the_call_span_still_gives_its_ids(
    make_proxy: ProxyFactory, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped default's tracing (no endpoint anywhere): no span leaves and none
    gathers attributes, but the upstream still continues the client's trace from the
    call's own span."""
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    url = make_proxy("policies:\n  - tracing: {}\n")
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    client = openai_client(url, default_headers={"traceparent": f"00-{trace_id}-{parent_id}-01"})
    client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )
    version, sent_trace, sent_span, flags = upstream.last.headers["traceparent"].split("-")
    assert (version, sent_trace, flags) == ("00", trace_id, "01")
    assert len(sent_span) == 16 and sent_span != parent_id  # the call's span, not the client's


def test_streamed_span_ends_after_the_stream_with_usage(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver
) -> None:
    url = make_proxy(tracing(receiver.endpoint))
    upstream.push(synth.Reply(text="streamed", input_tokens=7, output_tokens=3))
    stream = openai_client(url).chat.completions.create(
        model="m", messages=[], stream=True, stream_options={"include_usage": True}
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "streamed"
    (span,) = [s for s in receiver.wait_for(1) if s.name == "chat m"]
    assert span.attributes["gen_ai.usage.input_tokens"] == 7
    assert span.attributes["gen_ai.usage.output_tokens"] == 3
    assert span.attributes["gen_ai.response.finish_reasons"] == ["stop"]


def test_responses_and_embeddings_operations(
    make_proxy: ProxyFactory, receiver: OtlpReceiver
) -> None:
    url = make_proxy(tracing(receiver.endpoint))
    client = openai_client(url)
    client.responses.create(model="m", input="hi")
    client.embeddings.create(model="e", input="x")
    names = {s.name for s in receiver.wait_for(2)}
    assert {"chat m", "embeddings e"} <= names
    responses_span = next(s for s in receiver.spans if s.name == "chat m")
    assert responses_span.attributes["gen_ai.usage.input_tokens"] == 10


def test_errors_mark_the_span(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver
) -> None:
    url = make_proxy(tracing(receiver.endpoint))
    upstream.push(
        Status(503, {"error": {"message": "overloaded", "type": "x", "code": None, "param": None}})
    )
    with pytest.raises(openai.InternalServerError):
        openai_client(url).chat.completions.create(model="m", messages=[])
    spans = receiver.wait_for(2)
    span = next(s for s in spans if s.name == "chat m")
    attempt = next(s for s in spans if s.name.startswith("attempt"))
    assert span.status_code == STATUS_ERROR and span.attributes["error.type"] == "http_503"
    assert attempt.status_code == STATUS_ERROR and attempt.attributes["error.type"] == "http_503"
    assert attempt.parent_span_id == span.span_id
    assert span.start_ns <= attempt.start_ns <= attempt.end_ns <= span.end_ns


def test_content_capture_when_enabled(make_proxy: ProxyFactory, receiver: OtlpReceiver) -> None:
    url = make_proxy(tracing(receiver.endpoint, ", schedule_delay_s: 0.05, capture_content: true"))
    openai_client(url).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hello"}], stop="END"
    )
    span = next(s for s in receiver.wait_for(1) if s.name == "chat m")
    assert span.attributes["gen_ai.request.stop_sequences"] == ["END"]
    assert '"content":"hello"' in span.attributes["gen_ai.input.messages"]
    assert '"content":"rules"' in span.attributes["gen_ai.input.messages"]  # as the model saw it
    assert "Hello from the fake upstream." in span.attributes["gen_ai.output.messages"]


def test_dead_exporter_never_fails_requests_and_drops_are_counted(
    make_proxy: ProxyFactory, refused_port: int, capfd: pytest.CaptureFixture[str]
) -> None:
    dead = f"http://127.0.0.1:{refused_port}/v1/traces"
    url = make_proxy(tracing(dead, ", max_queue_size: 4, timeout_s: 0.5, schedule_delay_s: 60"))
    client = openai_client(url)

    def dropped() -> float:
        metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
        line = next(
            line
            for line in metrics.splitlines()
            if line.startswith("hookgate_trace_spans_dropped_total")
        )
        return float(line.split()[-1])

    # The export worker fails a batch of 4 each 0.5 s timeout and reports it; the queue
    # of 4 overflows meanwhile. Counts reach the metric with the next request.
    started = time.monotonic()
    while time.monotonic() - started < 3:
        assert client.chat.completions.create(model="m", messages=[]).choices
        time.sleep(0.05)
    assert dropped() >= 12
    # Several failed batches, yet the worker's log (the proxy's stderr) says so once.
    failures = [line for line in capfd.readouterr().err.splitlines() if "Failed to export" in line]
    assert len(failures) == 1, failures


def test_console_exporter_prints_spans_to_the_log_and_drops_none(
    make_proxy: ProxyFactory, capfd: pytest.CaptureFixture[str]
) -> None:
    url = make_proxy("policies:\n  - tracing: {exporter: console, schedule_delay_s: 0.02}\n")
    client = openai_client(url)
    for _ in range(5):
        assert client.chat.completions.create(model="m", messages=[]).choices
    printed = ""
    deadline = time.monotonic() + 10
    while printed.count('"name": "chat m"') < 5 and time.monotonic() < deadline:
        time.sleep(0.1)
        printed += capfd.readouterr().err
    assert printed.count('"name": "chat m"') == 5
    client.chat.completions.create(model="m", messages=[])  # brings the worker's reports in
    metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
    assert "hookgate_trace_spans_dropped_total 0.0" in metrics


def test_each_fallback_attempt_is_a_child_span(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver, refused_port: int
) -> None:
    from hookgate.config.loader import load_text
    from tests.conftest import TEST_STORE

    port = refused_port
    url = make_proxy(loaded=load_text(
        f"store: 'sqlite:///{TEST_STORE}'\n"
        f"providers:\n  dead: {{base_url: 'http://127.0.0.1:{port}/v1'}}\n"
        f"  up: {{base_url: '{upstream.base_url}'}}\n"
        "models:\n  m: [{provider: dead, model: a}, {provider: up, model: b}]\n"
        f"policies:\n  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05}}\n"
        "  - fallback: {retries: 1, backoff_base_s: 0.01}\n"
    ))  # fmt: skip
    openai_client(url).chat.completions.create(model="m", messages=[])
    spans = receiver.wait_for(4)
    parent = next(s for s in spans if s.name == "chat m")
    attempts = [s for s in spans if s.name.startswith("attempt ")]
    assert [s.name for s in attempts] == ["attempt dead/a", "attempt dead/a", "attempt up/b"]
    assert all(s.parent_span_id == parent.span_id for s in attempts)
    assert [s.status_code for s in attempts] == [STATUS_ERROR, STATUS_ERROR, 0]
    assert parent.attributes["hookgate.target"] == "up/b"


def _export_workers() -> list[int]:
    """Pids of this process's span export workers."""
    found = []
    for pid in (child.pid for child in psutil.Process(os.getpid()).children()):
        try:
            if b"hookgate.telemetry.worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:  # it exited meanwhile
            continue
    return found


def test_a_killed_export_worker_is_replaced(
    make_proxy: ProxyFactory, receiver: OtlpReceiver
) -> None:
    others = set(_export_workers())  # of earlier tests, still finishing
    url = make_proxy(tracing(receiver.endpoint))
    client = openai_client(url)
    client.chat.completions.create(model="m", messages=[])
    receiver.wait_for(1)
    (worker,) = set(_export_workers()) - others
    os.kill(worker, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while len(receiver.spans) < 2 and time.monotonic() < deadline:
        assert client.chat.completions.create(model="m", messages=[]).choices
        time.sleep(0.1)
    assert len(receiver.spans) >= 2  # spans after the kill arrive, through a new worker
    assert set(_export_workers()) - others - {worker}


@pytest.mark.parametrize(
    ("env", "written", "expected"),
    [
        ({"OTEL_SERVICE_NAME": "my-gateway"}, "", "my-gateway"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attributes"}, "", "from-attributes"),
        ({"OTEL_SERVICE_NAME": "my-gateway",
          "OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attributes"}, "", "my-gateway"),
        ({"OTEL_SERVICE_NAME": "my-gateway"}, ", service_name: from-yaml", "from-yaml"),
        ({}, "", "hookgate"),
    ],
    ids=["service-name", "resource-attributes", "name-beats-attributes", "yaml-wins", "default"],
)  # fmt: skip
def test_the_standard_otel_variables_name_the_service(
    make_proxy: ProxyFactory,
    receiver: OtlpReceiver,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    written: str,
    expected: str,
) -> None:
    for name in ("OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(
        "OTEL_RESOURCE_ATTRIBUTES",
        ",".join(filter(None, [env.get("OTEL_RESOURCE_ATTRIBUTES"), "deployment.environment=ci"])),
    )
    url = make_proxy(tracing(receiver.endpoint, f", schedule_delay_s: 0.05{written}"))
    openai_client(url).chat.completions.create(model="m", messages=[])
    (span,) = [s for s in receiver.wait_for(1) if s.name == "chat m"]
    assert span.resource["service.name"] == expected
    assert span.resource["deployment.environment"] == "ci"  # the rest of the attributes kept
    assert span.resource["service.version"] == hookgate.__version__


def test_the_otel_sampler_variables_apply_when_the_yaml_sets_no_ratio(
    make_proxy: ProxyFactory, receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    url = make_proxy(tracing(receiver.endpoint))
    openai_client(url).chat.completions.create(model="m", messages=[])
    written = make_proxy(tracing(receiver.endpoint, ", schedule_delay_s: 0.05, sample_ratio: 1.0"))
    openai_client(written).chat.completions.create(model="m", messages=[])
    spans = receiver.wait_for(1)
    time.sleep(0.5)  # the unsampled one would have arrived with it
    assert len([s for s in receiver.spans if s.name == "chat m"]) == 1, spans


HOSTED_OUTPUT = [
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "weather"}},
    {"type": "mcp_call", "id": "mcp_1", "name": "lookup", "server_label": "crm",
     "arguments": "{}", "status": "failed", "error": "boom"},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}]},
]  # fmt: skip


def _response(status: str = "completed") -> dict[str, object]:
    return {
        "id": "resp_1", "object": "response", "created_at": 1, "model": "m", "status": status,
        "output": HOSTED_OUTPUT, "usage": {"input_tokens": 4, "output_tokens": 2,
                                           "total_tokens": 6},
    }  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
def test_tools_the_provider_runs_are_spans_under_the_call(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver, stream: bool
) -> None:
    """Hosted tools (web search, a remote MCP server's tool) run at the provider, out of the
    agent's sight: each output item that says one ran is an execute_tool span."""
    url = make_proxy(tracing(receiver.endpoint))
    body = _response()
    if stream:
        created = {"type": "response.created", "response": {**_response("in_progress"),
                                                            "output": []}}  # fmt: skip
        done = {"type": "response.completed", "response": body}
        upstream.push(Events([
            b"event: response.created\ndata: " + orjson.dumps(created) + b"\n\n",
            b"event: response.completed\ndata: " + orjson.dumps(done) + b"\n\n",
        ]))  # fmt: skip
        events = openai_client(url).responses.create(
            model="m", input="weather?", tools=[{"type": "web_search"}], stream=True
        )
        assert [e.type for e in events][-1] == "response.completed"
    else:
        upstream.push(Raw(orjson.dumps(body)))
        openai_client(url).responses.create(
            model="m", input="weather?", tools=[{"type": "web_search"}]
        )
    spans = receiver.wait_for(3)
    (call,) = [s for s in spans if s.name == "chat m"]
    search = next(s for s in spans if s.name == "execute_tool web_search")
    mcp = next(s for s in spans if s.name == "execute_tool lookup")
    for span in (search, mcp):
        assert span.parent_span_id == call.span_id and span.trace_id == call.trace_id
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.type"] == "extension"
    assert search.attributes["gen_ai.tool.call.id"] == "ws_1"
    assert search.status_code != STATUS_ERROR and mcp.status_code == STATUS_ERROR


@pytest.mark.parametrize("sampled", [True, False])
@pytest.mark.parametrize("state", [None, [("vendor", "a1"), ("other", "b-2")]])
def test_trace_headers_are_what_the_w3c_propagator_injects(
    sampled: bool, state: list[tuple[str, str]] | None
) -> None:
    """The headers a traced call sends upstream are written from the span's ids without
    the propagator: they must be the propagator's, flags and tracestate included."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

    from hookgate.telemetry.tracing import PROPAGATOR, w3c_headers

    context = SpanContext(
        secrets.randbits(128) | 1,
        secrets.randbits(64) | 1,
        False,
        TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT),
        TraceState(state) if state is not None else None,
    )
    injected: dict[str, str] = {}
    PROPAGATOR.inject(injected, context=trace.set_span_in_context(NonRecordingSpan(context)))
    assert w3c_headers(context) == injected
    assert ("tracestate" in injected) is (state is not None)
