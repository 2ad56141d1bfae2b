"""Shared set-up of the SDK adapter tests: a gate from YAML, a traced proxy, trace checks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from proxy.sdk import Gate
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream, LoopThread
from tests.otlp import OtlpReceiver, ReceivedSpan

SECRET = "sdk-e2e-secret-0123456789"


@pytest.fixture
def receiver(loop_thread: LoopThread) -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    loop_thread.run(receiver.server.start())
    yield receiver
    loop_thread.run(receiver.server.stop())


def tracing(receiver: OtlpReceiver) -> str:
    return f"  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_ms: 50}}\n"


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
            sum(s.name.startswith("chat ") for s in spans) >= model_calls
            and any(s.name.startswith("invoke_agent") for s in spans)
        )
    )
    reply = one(spans, "invoke_agent assistant")
    assert reply.attributes["gen_ai.agent.name"] == "assistant"
    executed = one(spans, f"execute_tool {tool}")
    assert executed.attributes["gen_ai.tool.name"] == tool
    assert executed.attributes["gen_ai.tool.call.id"]
    assert executed.parent_span_id == reply.span_id
    proxied = [s for s in spans if s.name.startswith("chat ")]
    assert len(proxied) == model_calls
    assert all(s.parent_span_id == reply.span_id for s in proxied)
    assert {s.trace_id for s in [reply, executed, *proxied]} == {reply.trace_id}


def one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    (span,) = [s for s in spans if s.name == name]
    return span
