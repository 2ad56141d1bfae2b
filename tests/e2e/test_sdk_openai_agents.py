"""The OpenAI Agents SDK with hookgate attached to the agent (``openai_agents.attach``), run
by the SDK's own ``Runner.run``, ``run_streamed`` and ``run_sync``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.mcp import MCPServerStdio
from openai import AsyncOpenAI

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk.adapters.openai_agents import attach
from hookgate.sdk.driver import STOPPED
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import Echo, FakeUpstream
from tests.otlp import OtlpReceiver
from tests.sdk.harness import (
    GUARD,
    PII_AND_BUDGET,
    REFUSAL,
    SECRET,
    assert_joined_trace,
    assert_redacted_and_wrapped_up,
    assert_refused,
    call_the_denied_tool,
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
    call_the_denied_tool(upstream)
    url = traced_proxy(make_proxy, receiver)
    async with AsyncOpenAI(base_url=url, api_key=CLIENT_KEY, max_retries=0) as client:
        result = await Runner.run(attach(gate, make_agent(client, calls, kind)), "Weather?")
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
        result = await Runner.run(attach(gate, make_agent(client, calls)), "Weather in Paris?")
        assert_redacted_and_wrapped_up(upstream)
        assert "siobhan@example.org" in result.final_output  # the model quoted a placeholder
        assert not PATTERN.search(result.final_output)
        stopper = make_gate(
            tmp_path, upstream, "  - model_call_limit: {max_per_reply: 1, on_limit: end}\n"
        )
        stopped = await Runner.run(attach(stopper, make_agent(client, calls)), "Weather?")
    # the stopping turn's tool call still ran; the model was not called again
    assert stopped.final_output == STOPPED and calls == ["Paris", "Paris"]
    assert len(upstream.requests) == 3


async def test_streamed_run_is_one_governed_reply(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, tracing(receiver) + GUARD)
    calls: list[str] = []
    call_the_denied_tool(upstream)
    url = traced_proxy(make_proxy, receiver)
    async with AsyncOpenAI(base_url=url, api_key=CLIENT_KEY, max_retries=0) as client:
        result = Runner.run_streamed(attach(gate, make_agent(client, calls)), "Weather?")
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
        result = await Runner.run(attach(gate, triage), "Weather in Paris?")
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
        if expect_refusal:  # not offered, but a model may still name it
            forecast = synth.ToolCall("call_f", "get_forecast", '{"city": "Paris"}')
            upstream.push(synth.Reply(tool_calls=[forecast]))
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
            await Runner.run(attach(gate, agent), "Forecast for Paris?")
        await gate.aclose()
        second = upstream.requests[1].body.decode()
        assert ("get_forecast" in upstream.requests[0].body.decode()) is not expect_refusal
        if expect_refusal:
            assert "Tool call refused: the tool 'get_forecast' is not allowed" in second
        else:
            assert "rain in Paris" in second  # the server ran
            assert "Siobhan" not in second and "siobhan@example.org" not in second
            assert PATTERN.search(second)


EMAIL = "maria.garcia@example.com"


async def test_with_the_sdk_alone_the_model_never_reads_pii_and_the_user_never_a_placeholder(
    upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    """No proxy: the model talks straight to the provider. The user's own e-mail and the
    one a tool returned reach the model as placeholders; the answer (run and streamed)
    carries both values; each model call is a span under the reply."""
    gate = make_gate(tmp_path, upstream, f"  - pii: {{secret: '{SECRET}'}}\n" + tracing(receiver))
    calls: list[str] = []
    prompt = f"Weather in Paris? Mail it to {EMAIL}."
    async with AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0) as client:
        for kind in ("chat", "responses"):
            upstream.requests.clear()
            agent = attach(gate, make_agent(client, calls, kind))
            result = await Runner.run(agent, prompt)
            sent = b"".join(r.body for r in upstream.requests).decode()
            assert EMAIL not in sent and "siobhan@example.org" not in sent
            assert "siobhan@example.org" in result.final_output
            assert not PATTERN.search(result.final_output)
        streamed = Runner.run_streamed(attach(gate, make_agent(client, calls)), prompt)
        deltas = [
            event.data.delta
            async for event in streamed.stream_events()
            if event.type == "raw_response_event" and hasattr(event.data, "delta")
        ]
    await gate.aclose()
    assert "siobhan@example.org" in "".join(str(d) for d in deltas)
    assert not any(PATTERN.search(str(d)) for d in deltas)
    assert not PATTERN.search(streamed.final_output)
    spans = receiver.wait_until(lambda s: len([x for x in s if x.name.startswith("chat ")]) >= 6)
    replies = {s.span_id for s in spans if s.name == "invoke_agent assistant"}
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(replies) == 3 and all(c.parent_span_id in replies for c in chats)
    assert all(c.attributes["gen_ai.usage.output_tokens"] > 0 for c in chats)


async def test_concurrent_runs_are_separate_replies(upstream: FakeUpstream, tmp_path: Path) -> None:
    gate = make_gate(tmp_path, upstream, GUARD)
    calls: list[str] = []
    for _ in range(4):
        call_the_denied_tool(upstream)
    async with AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0) as client:
        agent = make_agent(client, calls)
        results = await asyncio.gather(
            *(Runner.run(attach(gate, agent, session_id=f"s-{i}"), f"Weather {i}?")
              for i in range(4))
        )  # fmt: skip
    await gate.aclose()
    assert all(r.final_output == f"The tool said: {REFUSAL}" for r in results)
    by_reply: dict[str, set[str]] = {}
    for request in upstream.requests:
        headers = request.headers
        by_reply.setdefault(headers["x-hookgate-reply-id"], set()).add(
            headers["x-hookgate-session-id"]
        )
    assert len(by_reply) == 4 and all(len(s) == 1 for s in by_reply.values())
    assert len(upstream.requests) == 8


def test_run_sync(upstream: FakeUpstream, tmp_path: Path) -> None:
    gate = make_gate(tmp_path, upstream, GUARD)
    calls: list[str] = []
    call_the_denied_tool(upstream)
    client = AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0)
    result = Runner.run_sync(attach(gate, make_agent(client, calls)), "Weather in Paris?")
    loop = asyncio.get_event_loop_policy().get_event_loop()  # the loop run_sync ran on
    loop.run_until_complete(client.close())
    loop.run_until_complete(gate.aclose())
    loop.close()
    asyncio.set_event_loop(None)
    assert calls == [] and result.final_output == f"The tool said: {REFUSAL}"
    assert REFUSAL in upstream.requests[1].body.decode()


async def test_an_agent_used_as_a_tool_runs_inside_the_calling_reply(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """``attach(gate, researcher).as_tool(...)``: the inner run shares the calling run's
    trace, so its tool calls are governed and belong to the calling reply."""
    gate = make_gate(tmp_path, upstream, GUARD)
    calls: list[str] = []
    ask = synth.ToolCall("call_r", "ask_researcher", '{"input": "Weather in Paris?"}')
    upstream.push(synth.Reply(tool_calls=[ask]))  # the outer agent asks the researcher
    call_the_denied_tool(upstream)  # the researcher names the denied tool
    async with AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0) as client:
        researcher = attach(gate, make_agent(client, calls))
        outer = Agent(
            name="assistant",
            instructions="Ask the researcher.",
            tools=[researcher.as_tool("ask_researcher", "Ask the researcher.")],
            model=OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client),
        )
        result = await Runner.run(attach(gate, outer), "Weather in Paris?")
    await gate.aclose()
    assert calls == []
    assert REFUSAL in upstream.requests[2].body.decode()  # the researcher's model read it
    assert REFUSAL in result.final_output
    assert len({r.headers["x-hookgate-reply-id"] for r in upstream.requests}) == 1
    assert gate.driver._open == {}


async def test_an_unattached_agent_used_as_a_tool_is_named_in_a_warning(
    caplog: pytest.LogCaptureFixture, upstream: FakeUpstream, tmp_path: Path
) -> None:
    gate = make_gate(tmp_path, upstream, GUARD)
    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    inner = make_agent(client, [])
    outer = Agent(name="outer", tools=[inner.as_tool("ask_inner", "Ask.")], model="m")
    with caplog.at_level("WARNING", logger="hookgate"):
        attach(gate, outer)
    assert "'ask_inner' runs agent 'assistant'" in caplog.text
    with caplog.at_level("WARNING", logger="hookgate"):
        caplog.clear()
        attach(gate, Agent(name="o", tools=[attach(gate, inner).as_tool("a", "b")]))
    assert "runs agent" not in caplog.text
    await gate.aclose()


async def test_output_pii_is_masked_in_a_streamed_run(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """pii ``output`` on the governed client (SDK alone), through ``Runner.run_streamed``:
    a number the model made up is masked in every delta the user streams and in the final
    output; the user's own e-mail, which the prompt held, comes back whole."""
    policy = f"  - pii: {{secret: '{SECRET}', output: {{action: mask}}}}\n"
    gate = make_gate(tmp_path, upstream, policy)
    prefix = "Our desk will call you back on 212-555-0187 later today.\nYou said: "
    upstream.push(Echo(prefix=prefix, pieces=40))  # the model quotes the prompt's placeholder
    prompt = f"Mail {EMAIL} about my refund."
    async with AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0) as client:
        streamed = Runner.run_streamed(attach(gate, make_agent(client, [])), prompt)
        deltas = [
            str(event.data.delta)
            async for event in streamed.stream_events()
            if event.type == "raw_response_event" and hasattr(event.data, "delta")
        ]
    await gate.aclose()
    assert EMAIL not in upstream.requests[0].body.decode()
    expected = (prefix + prompt).replace("212-555-0187", "********0187")
    assert "".join(deltas) == streamed.final_output == expected
    assert not any("555-01" in d for d in deltas)
