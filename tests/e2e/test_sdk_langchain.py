"""LangChain v1 ``create_agent`` with hookgate's middleware, its model behind the proxy."""

from __future__ import annotations

from pathlib import Path

import orjson
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate
from hookgate.sdk.adapters.langchain import HookgateMiddleware
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


def agent_with(gate: Gate, url: str, calls: list[str]):  # type: ignore[no-untyped-def]
    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny in {city}; forecast by Siobhan O'Brien, siobhan@example.org"

    model = ChatOpenAI(model="gpt-4.1-mini", base_url=url, api_key=CLIENT_KEY, max_retries=0)  # type: ignore[arg-type]
    return create_agent(model, tools=[get_weather], middleware=[HookgateMiddleware(gate)])


QUESTION = {"messages": [{"role": "user", "content": "Weather in Paris?"}]}


async def test_blocked_tool_and_one_trace(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    agent = agent_with(gate, traced_proxy(make_proxy, receiver), calls)
    result = await HookgateMiddleware.ainvoke(gate, agent, QUESTION, session_id="s-1")
    await gate.aclose()
    assert calls == []  # the tool never ran
    assert result["messages"][-1].text == f"The tool said: {REFUSAL}"
    assert upstream.requests[1].json()["messages"][-1]["content"] == REFUSAL
    assert_joined_trace(receiver, "get_weather", model_calls=2)
    proxied = [s for s in receiver.spans if s.name.startswith("chat ")]
    assert {s.attributes["gen_ai.conversation.id"] for s in proxied} == {"s-1"}


async def test_tool_result_is_redacted_before_the_model_reads_it(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n")
    calls: list[str] = []
    agent = agent_with(gate, make_proxy(), calls)
    result = await HookgateMiddleware.ainvoke(gate, agent, QUESTION)
    await gate.aclose()
    assert calls == ["Paris"]
    tool_message = upstream.requests[1].json()["messages"][-1]["content"]
    assert "Siobhan" not in tool_message and "siobhan@example.org" not in tool_message
    assert len(PATTERN.findall(tool_message)) == 2
    assert PATTERN.search(result["messages"][-1].text)


def test_spent_budget_wraps_the_reply_up_synchronously(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    import asyncio

    gate = make_gate(tmp_path, upstream, "  - reply_budget: {tokens: 20}\n")  # turn 1 costs 30
    calls: list[str] = []
    agent = agent_with(gate, make_proxy(), calls)
    result = asyncio.run(HookgateMiddleware.invoke(gate, agent, QUESTION))
    second = upstream.requests[1].json()
    assert second["tool_choice"] == "none"
    assert "budget for this reply is spent" in second["messages"][0]["content"]
    assert isinstance(result["messages"][-1], AIMessage)
    assert orjson.dumps(second["messages"]).count(b"get_weather") >= 1  # the history is intact
