"""The OpenAI Agents SDK governed by hookgate (``hookgate.sdk.adapters.openai_agents.run``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    function_tool,
    set_tracing_disabled,
)
from agents.mcp import MCPServerStdio
from openai import AsyncOpenAI

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk.adapters.openai_agents import StoppedReply, run, run_streamed
from hookgate.wire import synth
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


async def test_the_tools_of_a_handoff_target_are_governed(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Only the starting agent's tools were governed: a handoff target ran its tools
    past every policy."""
    gate = make_gate(tmp_path, upstream, GUARD)
    calls: list[str] = []
    handoff = synth.ToolCall("call_h", "transfer_to_assistant", "{}")
    weather_call = synth.ToolCall("call_w", "get_weather", '{"city": "Paris"}')
    upstream.push(synth.Reply(tool_calls=[handoff]), synth.Reply(tool_calls=[weather_call]))
    async with AsyncOpenAI(base_url=make_proxy(), api_key=CLIENT_KEY, max_retries=0) as client:
        weather = make_agent(client, calls)
        triage = Agent(
            name="triage",
            instructions="Hand weather questions off.",
            handoffs=[weather],
            model=OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client),
        )
        result = await run(gate, triage, "Weather in Paris?")
    await gate.aclose()
    assert calls == []  # the handoff target's tool never ran
    offered = [t["function"]["name"] for t in upstream.requests[0].json()["tools"]]
    assert offered == ["transfer_to_assistant"]
    assert REFUSAL in upstream.requests[2].body.decode()  # the target's model read it
    assert result.final_output == f"The tool said: {REFUSAL}"


async def test_the_tools_of_an_mcp_server_are_governed(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """A real stdio MCP server (the ``mcp`` SDK's FastMCP) behind the agent: its tool calls
    run through on_tool_call — denied by name, and their results redacted."""
    script = str(Path(__file__).with_name("mcp_weather_server.py"))
    guard = "  - tool_guard: {deny: [get_forecast]}\n"
    for policies, expect_refusal in ((guard, True), (PII_AND_BUDGET, False)):
        upstream.requests.clear()
        gate = make_gate(tmp_path, upstream, policies)
        server = MCPServerStdio(params={"command": sys.executable, "args": [script]})
        async with (
            server,
            AsyncOpenAI(base_url=make_proxy(), api_key=CLIENT_KEY, max_retries=0) as client,
        ):
            agent = Agent(
                name="assistant",
                instructions="Use tools.",
                mcp_servers=[server],
                model=OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client),
            )
            await run(gate, agent, "Forecast for Paris?")
        await gate.aclose()
        second = upstream.requests[1].body.decode()
        assert "get_forecast" in upstream.requests[0].body.decode()
        if expect_refusal:
            assert "Tool call refused: the tool 'get_forecast' is not allowed" in second
        else:
            assert "rain in Paris" in second  # the server ran
            assert "Siobhan" not in second and "siobhan@example.org" not in second
            assert PATTERN.search(second)
