"""AgentScope 2's ReAct ``Agent`` on ``OpenAIChatModel`` completes a tool round trip through the proxy.

The agent asks the model (the fake upstream behind a real hookgate proxy) for the weather,
runs the tool call it gets back, sends the tool result and ends with the model's text.
Streamed and non-streamed chat completions are both covered; the client credential must
never reach the upstream.
"""

from __future__ import annotations

from typing import Any

import pytest
from agentscope.agent import Agent, ReActConfig
from agentscope.credential import OpenAICredential
from agentscope.message import UserMsg
from agentscope.model import OpenAIChatModel
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit

from tests.conftest import CLIENT_KEY, UPSTREAM_KEY
from tests.fakes import FakeUpstream


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
async def test_agent_tool_round_trip(proxy_url: str, upstream: FakeUpstream, stream: bool) -> None:
    calls: list[str] = []

    def get_weather(city: str) -> str:
        """Get the current weather in a city.

        Args:
            city (`str`):
                The city name.
        """
        calls.append(city)
        return f"sunny, 21C in {city}"

    model = OpenAIChatModel(
        credential=OpenAICredential(api_key=CLIENT_KEY, base_url=proxy_url),
        model="gpt-4o-mini",
        stream=stream,
        max_retries=0,
    )
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="test tool")
    agent = Agent(
        name="assistant",
        system_prompt="You are a helpful assistant.",
        model=model,
        toolkit=Toolkit(tools=[FunctionTool(get_weather, permission=allow)]),
        react_config=ReActConfig(max_iters=3),
    )

    try:
        reply = await agent.reply(UserMsg(name="user", content="What's the weather in Paris?"))
    finally:
        await model.client.close()

    assert calls == ["Paris"]
    assert reply.get_text_content() == "The tool said: sunny, 21C in Paris"

    assert [r.path for r in upstream.requests] == ["/v1/chat/completions"] * 2
    for recorded in upstream.requests:
        assert recorded.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
        assert CLIENT_KEY.encode() not in recorded.body
    first: dict[str, Any] = upstream.requests[0].json()
    second: dict[str, Any] = upstream.requests[1].json()
    for body in (first, second):
        assert body["stream"] is stream
        assert ("stream_options" in body) is stream
        assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
    print(reply.usage, reply)
