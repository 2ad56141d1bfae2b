"""The OpenAI Agents SDK governed by hookgate (``proxy.sdk.adapters.openai_agents.run``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from proxy.redaction.placeholders import PATTERN
from proxy.sdk.adapters.openai_agents import StoppedReply, run
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver
from tests.sdk.harness import (
    SECRET,
    assert_joined_trace,
    make_gate,
    receiver,
    traced_proxy,
    tracing,
)

__all__ = ["receiver"]

set_tracing_disabled(True)  # the SDK would export its own traces to OpenAI


def make_agent(client: AsyncOpenAI, calls: list[str], kind: str = "chat") -> Agent:
    @function_tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny in {city}; forecast by Siobhan O'Brien, siobhan@example.org"

    model = (
        OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=client)
        if kind == "responses"
        else OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client)
    )
    return Agent(name="assistant", instructions="Use tools.", tools=[get_weather], model=model)


@pytest.mark.parametrize("kind", ["chat", "responses"])
async def test_blocked_tool_and_one_trace(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    receiver: OtlpReceiver,
    tmp_path: Path,
    kind: str,
) -> None:
    guard = "  - tool_guard: {deny: [get_weather]}\n"
    gate = make_gate(tmp_path, upstream, tracing(receiver) + guard)
    calls: list[str] = []
    url = traced_proxy(make_proxy, receiver)
    async with AsyncOpenAI(base_url=url, api_key=CLIENT_KEY, max_retries=0) as client:
        result = await run(gate, make_agent(client, calls, kind), "Weather in Paris?")
    await gate.aclose()
    refusal = "Tool call refused: the tool 'get_weather' is not allowed"
    assert calls == []
    assert result.final_output == f"The tool said: {refusal}"
    assert refusal in upstream.requests[1].body.decode()
    assert_joined_trace(receiver, "get_weather", model_calls=2)


async def test_redacted_tool_result_wrap_up_and_stop(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    policies = f"  - pii: {{secret: '{SECRET}'}}\n  - reply_budget: {{tokens: 20}}\n"
    gate = make_gate(tmp_path, upstream, policies)
    calls: list[str] = []
    async with AsyncOpenAI(base_url=make_proxy(), api_key=CLIENT_KEY, max_retries=0) as client:
        result = await run(gate, make_agent(client, calls), "Weather in Paris?")
        second = upstream.requests[1].json()
        tool_message = second["messages"][-1]["content"]
        assert "Siobhan" not in tool_message and len(PATTERN.findall(tool_message)) == 2
        assert second["tool_choice"] == "none"  # turn 1 spent the budget
        assert "budget for this reply is spent" in second["messages"][0]["content"]
        assert PATTERN.search(result.final_output)
        stopper = make_gate(
            tmp_path, upstream, "  - model_call_limit: {max_calls: 1, on_limit: stop}\n"
        )
        stopped = await run(stopper, make_agent(client, calls), "Weather in Paris?")
    assert isinstance(stopped, StoppedReply) and calls == ["Paris"]  # no second tool run
