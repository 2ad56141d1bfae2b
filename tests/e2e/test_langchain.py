"""LangChain v1: ``ChatOpenAI`` and ``create_agent`` with a tool, through the proxy."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests.conftest import CLIENT_KEY, UPSTREAM_KEY
from tests.fakes import FakeUpstream


def make_agent(proxy_url: str, streaming: bool, responses_api: bool, calls: list[str]):  # type: ignore[no-untyped-def]
    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"sunny, 21C in {city}"

    model = ChatOpenAI(
        model="gpt-4.1-mini",
        base_url=proxy_url,
        api_key=CLIENT_KEY,
        max_retries=0,  # type: ignore[arg-type]
        streaming=streaming,
        use_responses_api=responses_api,
    )
    return create_agent(model, tools=[get_weather], system_prompt="Use tools.")


@pytest.mark.parametrize("responses_api", [False, True])
@pytest.mark.parametrize("streaming", [False, True])
def test_create_agent_tool_round_trip(
    proxy_url: str, upstream: FakeUpstream, streaming: bool, responses_api: bool
) -> None:
    calls: list[str] = []
    agent = make_agent(proxy_url, streaming, responses_api, calls)
    result = agent.invoke({"messages": [{"role": "user", "content": "Weather in Paris?"}]})
    messages = result["messages"]
    assert calls == ["Paris"]
    assert isinstance(messages[-2], ToolMessage) and messages[-2].content == "sunny, 21C in Paris"
    assert isinstance(messages[-1], AIMessage)
    assert messages[-1].text == "The tool said: sunny, 21C in Paris"
    assert len(upstream.requests) == 2
    assert all(r.json().get("stream", False) is streaming for r in upstream.requests)
    assert all(r.headers["authorization"] == f"Bearer {UPSTREAM_KEY}" for r in upstream.requests)


async def test_astream_messages(proxy_url: str, upstream: FakeUpstream) -> None:
    calls: list[str] = []
    agent = make_agent(proxy_url, True, False, calls)
    tokens = []
    async for chunk, _meta in agent.astream(
        {"messages": [{"role": "user", "content": "Weather in Paris?"}]}, stream_mode="messages"
    ):
        if isinstance(chunk, AIMessage) and isinstance(chunk.content, str):
            tokens.append(chunk.content)
    assert calls == ["Paris"]
    assert "".join(tokens).endswith("The tool said: sunny, 21C in Paris")
    # langchain-openai does not ask for stream_options behind a custom base URL: nothing is added
    assert "stream_options" not in upstream.requests[0].json()
