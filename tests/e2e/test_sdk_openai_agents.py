"""The OpenAI Agents SDK governed by hookgate (``hookgate.sdk.adapters.openai_agents.run``)."""

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

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk.adapters.openai_agents import StoppedReply, run, run_streamed
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver
from tests.sdk.harness import (
    GUARD,
    PII_AND_BUDGET,
    REFUSAL,
    assert_joined_trace,
    assert_redacted_and_wrapped_up,
    assert_refused,
    make_gate,
    traced_proxy,
    tracing,
)

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
    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    url = traced_proxy(make_proxy, receiver)
    async with AsyncOpenAI(base_url=url, api_key=CLIENT_KEY, max_retries=0) as client:
        result = await run(gate, make_agent(client, calls, kind), "Weather in Paris?")
    await gate.aclose()
    assert_refused(upstream, calls)
    assert result.final_output == f"The tool said: {REFUSAL}"
    assert_joined_trace(receiver, "get_weather", model_calls=2)


async def test_redacted_tool_result_wrap_up_and_stop(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, PII_AND_BUDGET)
    calls: list[str] = []
    async with AsyncOpenAI(base_url=make_proxy(), api_key=CLIENT_KEY, max_retries=0) as client:
        result = await run(gate, make_agent(client, calls), "Weather in Paris?")
        assert_redacted_and_wrapped_up(upstream)
        assert PATTERN.search(result.final_output)
        stopper = make_gate(
            tmp_path, upstream, "  - model_call_limit: {max_calls: 1, on_limit: stop}\n"
        )
        stopped = await run(stopper, make_agent(client, calls), "Weather in Paris?")
    assert isinstance(stopped, StoppedReply) and calls == ["Paris"]  # no second tool run


async def test_streamed_run_is_one_governed_reply(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    url = traced_proxy(make_proxy, receiver)
    async with AsyncOpenAI(base_url=url, api_key=CLIENT_KEY, max_retries=0) as client:
        result = await run_streamed(gate, make_agent(client, calls), "Weather in Paris?")
        kinds = [event.type async for event in result.stream_events()]
    await gate.aclose()
    assert "raw_response_event" in kinds
    assert_refused(upstream, calls)
    assert result.final_output == f"The tool said: {REFUSAL}"
    assert all(r.json()["stream"] is True for r in upstream.requests)
    assert_joined_trace(receiver, "get_weather", model_calls=2)
