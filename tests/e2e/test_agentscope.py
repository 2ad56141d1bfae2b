"""AgentScope 2's ``Agent`` on ``OpenAIChatModel`` does a tool round trip through the proxy.

The ReAct agent asks the model (the fake upstream behind a real hookgate proxy) about the
weather, runs the tool call it gets back, sends the tool result and ends with the model's
text. Streamed and non-streamed chat completions are both covered, and the client's
credential must never reach the upstream. Everything stays in-process on loopback: the
agent keeps its state in memory and AgentScope's tracing is opt-in (not enabled here).
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

QUESTION = "What's the weather in Paris?"
RESULT = "sunny, 21C in Paris"


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
    # Function tools ask the user for confirmation unless explicitly allowed.
    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="allowed in test")
    # FunctionTool turns a plain ``str`` return into a ToolChunk, but its type omits it.
    tool = FunctionTool(get_weather, permission=allow)  # type: ignore[arg-type]
    agent = Agent(
        name="assistant",
        system_prompt="You are a helpful assistant.",
        model=model,
        toolkit=Toolkit(tools=[tool]),
        react_config=ReActConfig(max_iters=3),
    )
    try:
        reply = await agent.reply(UserMsg(name="user", content=QUESTION))
    finally:
        await model.client.close()

    assert calls == ["Paris"]
    assert reply.get_text_content() == f"The tool said: {RESULT}"
    assert reply.usage is not None and reply.usage.output_tokens > 0  # usage was relayed

    assert [r.path for r in upstream.requests] == ["/v1/chat/completions"] * 2
    for recorded in upstream.requests:
        assert recorded.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
        assert CLIENT_KEY not in str(recorded.headers)
        assert CLIENT_KEY.encode() not in recorded.body
    first: dict[str, Any] = upstream.requests[0].json()
    second: dict[str, Any] = upstream.requests[1].json()
    for body in (first, second):
        assert body["model"] == "gpt-4o-mini"
        assert body["stream"] is stream
        assert body.get("stream_options") == ({"include_usage": True} if stream else None)
        assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
        # Named messages with part-array content, then AgentScope's runtime-state reminder.
        assert [m["role"] for m in body["messages"][:3]] == ["system", "user", "user"]
        assert body["messages"][1] == {
            "role": "user",
            "name": "user",
            "content": [{"type": "text", "text": QUESTION}],
        }
    assert len(first["messages"]) == 3
    assistant, tool_msg = second["messages"][3:]
    assert assistant["role"] == "assistant" and assistant["content"] is None
    assert assistant["tool_calls"] == [
        {
            "id": "call_fake_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        }
    ]
    assert tool_msg == {
        "role": "tool",
        "tool_call_id": "call_fake_1",
        "name": "get_weather",
        "content": RESULT,
    }
