"""PraisonAI's ``Agent`` with hookgate's tool middleware, its model behind the proxy."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver
from tests.sdk.harness import (
    GUARD,
    REFUSAL,
    SECRET,
    assert_joined_trace,
    make_gate,
    traced_proxy,
    tracing,
)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DO_NOT_TRACK", "true")
    monkeypatch.setenv("PRAISONAI_TELEMETRY_DISABLED", "true")
    monkeypatch.setenv("OPENAI_API_KEY", CLIENT_KEY)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)


def make_agent(gate: Gate, url: str, calls: list[str], monkeypatch: pytest.MonkeyPatch) -> object:
    from praisonaiagents import Agent

    from hookgate.sdk.adapters.praisonai import instrument, tool_middleware

    monkeypatch.setenv("OPENAI_BASE_URL", url)

    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny in {city}; forecast by Siobhan O'Brien, siobhan@example.org"

    agent = Agent(
        name="assistant",
        instructions="Use tools.",
        model="gpt-4o-mini",
        tools=[get_weather],
        hooks=[tool_middleware(gate)],
    )
    return instrument(agent)


async def test_blocked_tool_and_one_trace(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    receiver: OtlpReceiver,
    tmp_path: Path,
    offline: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hookgate.sdk.adapters.praisonai import aclose, start

    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    agent = make_agent(gate, traced_proxy(make_proxy, receiver), calls, monkeypatch)
    answer = await start(gate, agent, "Weather in Paris?")
    await aclose(agent)
    await gate.aclose()
    assert calls == []
    assert REFUSAL in str(answer)
    assert REFUSAL in upstream.requests[1].body.decode()
    assert_joined_trace(receiver, "get_weather", model_calls=2)


async def test_tool_result_is_redacted(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    tmp_path: Path,
    offline: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hookgate.sdk.adapters.praisonai import aclose, start

    gate = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n")
    calls: list[str] = []
    agent = make_agent(gate, make_proxy(), calls, monkeypatch)
    await start(gate, agent, "Weather in Paris?")
    await aclose(agent)
    await gate.aclose()
    assert calls == ["Paris"]
    tool_message = upstream.requests[1].json()["messages"][-1]["content"]
    assert "Siobhan" not in tool_message and len(PATTERN.findall(tool_message)) == 2
