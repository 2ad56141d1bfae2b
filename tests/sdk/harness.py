"""Shared set-up of the SDK adapter tests: a gate from YAML, a traced proxy, trace checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate
from hookgate.wire import synth
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver, ReceivedSpan

SECRET = "sdk-e2e-secret-0123456789"


def tracing(receiver: OtlpReceiver) -> str:
    return f"  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05}}\n"


def make_gate(tmp_path: Path, upstream: FakeUpstream, policies: str) -> Gate:
    """A gate loaded from a YAML file, as an application would (``Gate.from_config``)."""
    path = tmp_path / "agent.yaml"
    path.write_text(config_text(upstream.base_url, f"policies:\n{policies}"))
    return Gate.from_config(path, agent="assistant")


def traced_proxy(make_proxy: ProxyFactory, receiver: OtlpReceiver) -> str:
    return make_proxy(f"policies:\n{tracing(receiver)}")


def assert_joined_trace(receiver: OtlpReceiver, tool: str, model_calls: int) -> None:
    """One trace: ``invoke_agent`` (SDK) > ``execute_tool`` (SDK) and the proxy's model calls."""
    spans = receiver.wait_until(
        lambda spans: (
            len(_proxied(spans)) >= model_calls
            and any(s.name.startswith("invoke_agent") for s in spans)
        )
    )
    reply = one(spans, "invoke_agent assistant")
    assert reply.attributes["gen_ai.agent.name"] == "assistant"
    executed = one(spans, f"execute_tool {tool}")
    assert executed.attributes["gen_ai.tool.name"] == tool
    assert executed.attributes["gen_ai.tool.call.id"]
    assert executed.parent_span_id == reply.span_id
    proxied = _proxied(spans)
    assert len(proxied) == model_calls
    # the proxy's span continues the SDK's own model-call span where the SDK governs the
    # model in-process, else the reply's
    in_process = {s.span_id for s in spans if s not in proxied and s.name.startswith("chat ")}
    assert all(s.parent_span_id in in_process | {reply.span_id} for s in proxied)
    assert all(s.parent_span_id == reply.span_id for s in spans if s.span_id in in_process)
    assert {s.trace_id for s in [reply, executed, *proxied]} == {reply.trace_id}


def _proxied(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    """The proxy's model-call spans (the SDK's own in-process ones are ``call_...``)."""
    return [
        s
        for s in spans
        if s.name.startswith("chat ")
        and not str(s.attributes.get("hookgate.request_id", "")).startswith("call_")
    ]


def one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


GUARD = "  - tool_guard: {deny: [get_weather]}\n"
REFUSAL = "Tool call refused: the tool 'get_weather' is not allowed"
PII_AND_BUDGET = f"  - pii: {{secret: '{SECRET}'}}\n  - reply_budget: {{tokens: 20}}\n"
"""The fake model's first turn (10 in, 5 out: 30 weighted) spends a 20-token budget."""


def call_the_denied_tool(upstream: FakeUpstream) -> None:
    """Script the model to call ``get_weather`` although it is not offered (a model may
    name a tool it knows from its context): the call must still be refused."""
    call = synth.ToolCall("call_w", "get_weather", '{"city": "Paris"}')
    upstream.push(synth.Reply(tool_calls=[call]))


def assert_refused(upstream: FakeUpstream, calls: list[str], *, offered: bool = False) -> None:
    """The tool never ran and the model read the refusal as its result; unless
    ``offered``, the tool was not even offered to the model."""
    assert calls == []
    assert REFUSAL in upstream.requests[1].body.decode()
    if not offered:
        tools = upstream.requests[0].json().get("tools") or []
        assert "get_weather" not in str(tools)


def assert_redacted_and_wrapped_up(upstream: FakeUpstream, *, wrap_up: bool = True) -> None:
    """The second model request: a redacted tool result, and (``wrap_up``) no more tools."""
    second = upstream.requests[1].json()
    tool_message = str(next(m for m in second["messages"] if m["role"] == "tool")["content"])
    assert "Siobhan" not in tool_message and "siobhan@example.org" not in tool_message
    assert len(PATTERN.findall(tool_message)) == 2
    if wrap_up:
        assert second["tool_choice"] == "none"
        system = [str(m["content"]) for m in second["messages"] if m["role"] == "system"]
        assert any("budget for this reply is spent" in text for text in system)


REPORT = "Weather report: " + "sunny and mild with a light breeze, " * 200
"""A tool result long enough for ``CAP_RESULTS`` to cap."""
CAP_RESULTS = "  - context: {trigger: {tokens: 600}, tool_result_limit: 100, turns: null}\n"


def assert_result_capped(sent: list[dict[str, Any]], call_id: str) -> None:
    """The model read ``REPORT`` capped, and its call right before it."""
    (call,) = [m for m in sent if m.get("tool_calls")]
    (result,) = [m for m in sent if m["role"] == "tool"]
    assert call["tool_calls"][0]["id"] == result["tool_call_id"] == call_id
    assert sent.index(result) == sent.index(call) + 1
    text = str(result["content"])
    assert text.endswith("\n[truncated]") and len(text) < len(REPORT) // 5
    assert REPORT.startswith(text.removesuffix("\n[truncated]"))
