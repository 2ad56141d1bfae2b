"""cubeloop's ``Agent`` with hookgate's middleware, its (always streamed) model behind the proxy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from cubeloop import Agent, tool
from cubeloop.providers.openai import OpenAIProvider

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate
from hookgate.sdk.adapters.cubeloop import HookgateMiddleware, on_payload
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver
from tests.sdk.harness import (
    GUARD,
    PII_AND_BUDGET,
    REFUSAL,
    assert_joined_trace,
    make_gate,
    traced_proxy,
    tracing,
)


@pytest_asyncio.fixture(autouse=True)
async def close_clients() -> AsyncIterator[None]:
    yield
    for provider in PROVIDERS:  # cubeloop has no public close; its client is an AsyncOpenAI
        await provider._client.close()
    PROVIDERS.clear()


PROVIDERS: list[OpenAIProvider] = []


def agent_with(gate: Gate, url: str, calls: list[str]) -> Agent:
    @tool
    async def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny in {city}; forecast by Siobhan O'Brien, siobhan@example.org"

    provider = OpenAIProvider(provider_id="proxy", api_key=CLIENT_KEY, base_url=url)
    PROVIDERS.append(provider)
    return Agent(
        model=provider.model("gpt-4o-mini"),
        tools=[get_weather],
        system_prompt="You are a weather bot.",
        middleware=[HookgateMiddleware(gate)],
        on_payload=on_payload,
    )


def final_text(agent: Agent) -> str:
    message = agent.state.messages[-1]
    return "".join(getattr(c, "text", "") for c in message.content)


async def test_blocked_tool_and_one_trace(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    agent = agent_with(gate, traced_proxy(make_proxy, receiver), calls)
    await agent.prompt("Weather in Paris?")
    await gate.aclose()
    assert gate._open == {}  # the run's reply closed in on_run_end
    assert calls == []
    assert upstream.requests[1].json()["messages"][-1]["content"] == REFUSAL
    assert final_text(agent) == f"The tool said: {REFUSAL}"
    assert_joined_trace(receiver, "get_weather", model_calls=2)


async def test_tool_result_redacted_and_budget_wraps_up(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, PII_AND_BUDGET)
    calls: list[str] = []
    agent = agent_with(gate, make_proxy(), calls)
    await agent.prompt("Weather in Paris?")
    await gate.aclose()
    assert calls == ["Paris"]
    second = upstream.requests[1].json()
    tool_message = second["messages"][-1]["content"]
    assert "Siobhan" not in tool_message and len(PATTERN.findall(tool_message)) == 2
    assert second["tool_choice"] == "none"  # turn 1 spent the budget: wrap up
    assert "budget for this reply is spent" in second["messages"][0]["content"]
    assert PATTERN.search(final_text(agent))  # cubeloop's own state keeps what the model wrote


async def test_two_runs_are_two_replies(upstream: FakeUpstream, tmp_path: Path) -> None:
    gate = make_gate(tmp_path, upstream, "  - reply_budget: {tokens: 20}\n")
    agent = agent_with(gate, upstream.base_url, [])  # SDK only: the headers reach it
    await agent.prompt("Weather in Paris?")
    await agent.prompt("Weather in Rome?")
    await gate.aclose()
    replies = [r.headers["x-hookgate-reply-id"] for r in upstream.requests]
    assert len(set(replies)) == 2 and replies[0] == replies[1] != replies[-1]
    # each run had its own budget: both were told to wrap up after their first turn
    assert sum(r.json().get("tool_choice") == "none" for r in upstream.requests) == 2
