"""The OpenAI Agents SDK, both its model classes, runs a tool loop through the proxy."""

from __future__ import annotations

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from hookgate.config.loader import load_text
from tests.conftest import CLIENT_KEY, TEST_STORE, UPSTREAM_KEY, ProxyFactory
from tests.fakes import FakeUpstream

set_tracing_disabled(True)  # the SDK would export its traces to OpenAI


def make_agent(client: AsyncOpenAI, kind: str, calls: list[str]) -> Agent:
    @function_tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny, 21C in {city}"

    model = (
        OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=client)
        if kind == "responses"
        else OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client)
    )
    return Agent(name="weather", instructions="Use tools.", tools=[get_weather], model=model)


@pytest.mark.parametrize("kind", ["responses", "chat"])
@pytest.mark.parametrize("streamed", [False, True])
async def test_tool_round_trip(
    proxy_url: str, upstream: FakeUpstream, kind: str, streamed: bool
) -> None:
    calls: list[str] = []
    async with AsyncOpenAI(base_url=proxy_url, api_key=CLIENT_KEY, max_retries=0) as client:
        agent = make_agent(client, kind, calls)
        if streamed:
            result = Runner.run_streamed(agent, "What is the weather in Paris?")
            events = [event.type async for event in result.stream_events()]
            assert "raw_response_event" in events
        else:
            result = await Runner.run(agent, "What is the weather in Paris?")  # type: ignore[assignment]
    assert calls == ["Paris"]
    assert result.final_output == "The tool said: sunny, 21C in Paris"
    path = "/v1/responses" if kind == "responses" else "/v1/chat/completions"
    assert [r.path for r in upstream.requests] == [path, path]
    assert all(r.json().get("stream", False) is streamed for r in upstream.requests)
    assert all(r.headers["authorization"] == f"Bearer {UPSTREAM_KEY}" for r in upstream.requests)
    first = upstream.requests[0].json()
    assert (
        first["tools"][0].get("name", first["tools"][0].get("function", {}).get("name"))
        == "get_weather"
    )


@pytest.mark.parametrize("streamed", [False, True])
async def test_the_responses_model_runs_on_a_claude_model(
    make_proxy: ProxyFactory, upstream: FakeUpstream, streamed: bool
) -> None:
    """The SDK's default model class (Responses API) on an alias served by Anthropic:
    every call is translated to Messages and back, tool loop included."""
    config = (
        f"providers: {{claude: {{type: anthropic, base_url: '{upstream.base_url}',"
        " api_key: 'sk-ant-upstream'}}\n"
        "models: {gpt-4.1-mini: [{provider: claude, model: claude-sonnet-4-6}]}\n"
        f"store: 'sqlite:///{TEST_STORE}'\n"
    )
    url = make_proxy(loaded=load_text(config))
    calls: list[str] = []
    async with AsyncOpenAI(base_url=url, api_key="sk-client", max_retries=0) as client:
        agent = make_agent(client, "responses", calls)
        if streamed:
            result = Runner.run_streamed(agent, "What is the weather in Paris?")
            events = [event async for event in result.stream_events()]
            deltas = [
                e.data.delta
                for e in events
                if e.type == "raw_response_event" and e.data.type == "response.output_text.delta"
            ]
            assert "".join(deltas) == "The tool said: sunny, 21C in Paris"
        else:
            result = await Runner.run(agent, "What is the weather in Paris?")  # type: ignore[assignment]
    assert calls == ["Paris"]
    assert result.final_output == "The tool said: sunny, 21C in Paris"
    assert [r.path for r in upstream.requests] == ["/v1/messages", "/v1/messages"]
    first, second = (r.json() for r in upstream.requests)
    assert first["system"] == [{"type": "text", "text": "Use tools."}]
    assert first["tools"][0]["name"] == "get_weather"
    assert second["messages"][-1]["content"][0]["content"] == "sunny, 21C in Paris"


async def test_the_responses_model_runs_on_a_gemini_model(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """Responses → chat → generateContent, the tool loop through both translations."""
    config = (
        f"providers: {{google: {{type: gemini, base_url: '{upstream.gemini_base_url}',"
        " api_key: 'AIza-upstream'}}\n"
        "models: {gpt-4.1-mini: [{provider: google, model: gemini-2.5-flash}]}\n"
        f"store: 'sqlite:///{TEST_STORE}'\n"
    )
    url = make_proxy(loaded=load_text(config))
    calls: list[str] = []
    async with AsyncOpenAI(base_url=url, api_key="sk-client", max_retries=0) as client:
        result = Runner.run_streamed(make_agent(client, "responses", calls), "Weather in Paris?")
        events = [event async for event in result.stream_events()]
    deltas = [
        e.data.delta
        for e in events
        if e.type == "raw_response_event" and e.data.type == "response.output_text.delta"
    ]
    assert calls == ["Paris"] and "".join(deltas) == "The tool said: sunny, 21C in Paris"
    assert [r.path for r in upstream.requests] == [
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    ] * 2
    first, second = (r.json() for r in upstream.requests)
    assert first["systemInstruction"] == {"parts": [{"text": "Use tools."}]}
    assert first["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    response = second["contents"][-1]["parts"][0]["functionResponse"]
    assert response == {"name": "get_weather", "response": {"output": "sunny, 21C in Paris"}}
