"""cubeloop's ``Agent`` with hookgate's middleware and its provider instrumented, run with
cubeloop's own ``agent.prompt`` (its model always streams)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest_asyncio
from cubeloop import Agent, tool
from cubeloop.providers.openai import OpenAIProvider

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate
from hookgate.sdk.adapters.cubeloop import HookgateMiddleware
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver
from tests.sdk.harness import (
    CAP_RESULTS,
    GUARD,
    PII_AND_BUDGET,
    REFUSAL,
    REPORT,
    assert_joined_trace,
    assert_refused,
    assert_result_capped,
    call_the_denied_tool,
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


def agent_with(gate: Gate, url: str, calls: list[str], extra: Sequence[Any] = ()) -> Agent[Any]:
    """The agent, with ``get_weather`` (``calls`` records its cities) and ``extra`` tools."""

    @tool
    async def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny in {city}; forecast by Siobhan O'Brien, siobhan@example.org"

    hookgate = HookgateMiddleware(gate)
    provider = hookgate.instrument(
        OpenAIProvider(provider_id="proxy", api_key=CLIENT_KEY, base_url=url)
    )
    PROVIDERS.append(provider)
    return Agent(
        model=provider.model("gpt-4o-mini"),
        tools=[get_weather, *extra],
        system_prompt="You are a weather bot.",
        middleware=[hookgate],
    )


def final_text(agent: Agent[Any]) -> str:
    message = agent.state.messages[-1]
    return "".join(getattr(c, "text", "") for c in message.content)


async def test_blocked_tool_and_one_trace(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    call_the_denied_tool(upstream)
    agent = agent_with(gate, traced_proxy(make_proxy, receiver), calls)
    await agent.prompt("Weather in Paris?")
    await gate.aclose()
    assert gate.driver._open == {}  # the run's reply closed in on_run_end
    assert calls == []
    assert_refused(upstream, calls)
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
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")["content"]
    assert "Siobhan" not in tool_message and len(PATTERN.findall(tool_message)) == 2
    assert second["tool_choice"] == "none"  # turn 1 spent the budget: wrap up
    assert "budget for this reply is spent" in second["messages"][-1]["content"]
    text = final_text(agent)  # cubeloop's own state: the model quoted placeholders
    assert "siobhan@example.org" in text and not PATTERN.search(text)


async def test_sdk_alone_redacts_the_prompt_and_streams_the_values(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    email = "maria.garcia@example.com"
    gate = make_gate(tmp_path, upstream, PII_AND_BUDGET)
    agent = agent_with(gate, upstream.base_url, [])
    deltas: list[str] = []

    def listen(event: Any, signal: Any) -> None:  # cubeloop's stream, as a UI reads it
        delta = getattr(getattr(event, "stream_event", None), "delta", None)
        if isinstance(delta, str):
            deltas.append(delta)

    agent.subscribe(listen)
    await agent.prompt(f"Weather in Paris? Mail it to {email}.")
    await gate.aclose()
    sent = b"".join(r.body for r in upstream.requests).decode()
    assert email not in sent and "siobhan@example.org" not in sent
    text = final_text(agent)
    assert "siobhan@example.org" in text and not PATTERN.search(text)
    assert "siobhan@example.org" in "".join(deltas)
    assert not any(PATTERN.search(d) for d in deltas)


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


async def test_a_system_prompt_template_reaches_every_model_call(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """system_prompt (cubeloop's ``transform_system_prompt``, on the instrumented
    provider's request): the agent's prompt, run through the template with the reply's
    facts, is the system message of each call."""
    template = "  - system_prompt: {template: '{prompt} Agent: {agent}; reply {reply_id}.'}\n"
    gate = make_gate(tmp_path, upstream, template)
    agent = agent_with(gate, upstream.base_url, [])
    await agent.prompt("Weather in Paris?")
    await gate.aclose()
    assert len(upstream.requests) == 2  # the tool call, then the answer
    for request in upstream.requests:
        reply_id = request.headers["x-hookgate-reply-id"]
        expected = f"You are a weather bot. Agent: assistant; reply {reply_id}."
        assert request.json()["messages"][0] == {"role": "system", "content": expected}


@tool
async def read_report() -> str:
    """The long weather report."""
    return REPORT


async def test_a_long_tool_result_is_capped_before_the_model_reads_it(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """context (cubeloop's ``transform_context``, on the instrumented provider's request):
    past the trigger, the tool result the next call sends is cut to ``tool_result_limit``;
    the system prompt stays, the call stays beside its result, and cubeloop's own state
    keeps the whole result."""
    gate = make_gate(tmp_path, upstream, CAP_RESULTS)
    agent = agent_with(gate, upstream.base_url, [], extra=[read_report])
    upstream.push(synth.Reply(tool_calls=[synth.ToolCall("call_r", "read_report", "{}")]))
    await agent.prompt("Read me the report.")
    await gate.aclose()
    sent = upstream.requests[1].json()["messages"]
    assert sent[0] == {"role": "system", "content": "You are a weather bot."}
    assert_result_capped(sent, "call_r")
    kept = [c.text for m in agent.state.messages for c in getattr(m, "content", [])
            if getattr(c, "text", None) == REPORT]  # fmt: skip
    assert kept == [REPORT]  # cubeloop's own state: whole


async def test_a_bad_json_answer_is_asked_again(upstream: FakeUpstream, tmp_path: Path) -> None:
    """output_check (cubeloop's ``after_model_response`` that loops back to the model): the
    invalid answer and the error go back to the model, and the run ends with the valid one."""
    check = "  - output_check: {json_schema: {type: object, required: [city]}}\n"
    gate = make_gate(tmp_path, upstream, check)
    upstream.push(synth.Reply(text="Sunny in Paris."), synth.Reply(text='{"city": "Paris"}'))
    agent = agent_with(gate, upstream.base_url, [])
    await agent.prompt("Weather in Paris, as JSON?")
    await gate.aclose()
    assert len(upstream.requests) == 2
    again = upstream.requests[1].json()["messages"]
    assert again[-2]["content"] == "Sunny in Paris." and "it is not JSON" in again[-1]["content"]
    assert final_text(agent) == '{"city": "Paris"}'
