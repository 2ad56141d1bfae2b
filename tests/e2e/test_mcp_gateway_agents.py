"""An OpenAI Agents SDK agent uses an MCP server through hookgate's MCP gateway, its model
through hookgate's chat route: no hookgate code in the agent, only URLs and a key.

The agent sees only allowed tools (a call the model makes to a hidden one the Agents SDK
itself refuses; a client calling it by name anyway is refused by the gateway: see
tests/server/test_mcp_gateway.py); a tool result's e-mail reaches the model as a
placeholder and the next call's argument gets the original back; each call is a row of
the audit log.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from langchain.agents import create_agent
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI
from openai import AsyncOpenAI

from hookgate.config.loader import load_text
from hookgate.redaction.placeholders import placeholder
from hookgate.wire import synth
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream
from tests.mcp_servers import McpServer
from tests.waits import eventually_async

set_tracing_disabled(True)  # the SDK would export its traces to OpenAI

SECRET = "a-fixed-secret-for-placeholders"
EMAIL = "ann.lee@example.com"
CLIENT = "client-key-0123456789abcdef"


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[McpServer]:
    server = McpServer(tmp_path)
    yield server
    server.stop()


def gateway_config(upstream: FakeUpstream, server: McpServer, tmp_path: Path) -> str:
    """The model route and ``/mcp/crm``, behind a client key, with tool_guard and pii."""
    extra = (
        f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\nkeys: {{static: ['{CLIENT}']}}\n"
        f"mcp_servers: {{crm: {{url: '{server.url}'}}}}\n"
        "policies:\n"
        "  - tool_guard: {deny: ['delete_*']}\n"
        f"  - pii: {{secret: '{SECRET}'}}\n"
    )
    return config_text(upstream.base_url, extra)


def script(stand_in: str) -> list[synth.Reply]:
    """The model looks Ann up, mails the address it read (a placeholder), then answers."""
    mail = orjson.dumps({"to": stand_in, "body": "Hi"}).decode()
    return [
        synth.Reply(tool_calls=[synth.ToolCall("c1", "lookup_contact", '{"name": "Ann"}')]),
        synth.Reply(tool_calls=[synth.ToolCall("c2", "send_email", mail)]),
        synth.Reply("Mailed Ann."),
    ]


# the Agents SDK still calls the mcp SDK's deprecated streamablehttp_client
@pytest.mark.filterwarnings("ignore:Use `streamable_http_client` instead:DeprecationWarning")
@pytest.mark.parametrize("streamed", [False, True])
async def test_an_agent_s_mcp_tools_are_governed_by_the_gateway(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    mcp_server: McpServer,
    tmp_path: Path,
    streamed: bool,
) -> None:
    db = tmp_path / "hookgate.db"
    base = make_proxy(loaded=load_text(gateway_config(upstream, mcp_server, tmp_path)))
    stand_in = placeholder(SECRET.encode(), "EMAIL_ADDRESS", EMAIL)
    upstream.push(*script(stand_in))
    crm = MCPServerStreamableHttp(
        params={
            "url": f"{base.removesuffix('/v1')}/mcp/crm",
            "headers": {"Authorization": f"Bearer {CLIENT}", "x-hookgate-agent": "mailer"},
        },
        name="crm",
    )
    async with crm, AsyncOpenAI(base_url=base, api_key=CLIENT, max_retries=0) as client:
        agent = Agent(
            name="mailer",
            instructions="Use tools.",
            mcp_servers=[crm],
            model=OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client),
        )
        if streamed:
            run = Runner.run_streamed(agent, "Mail Ann hello.")
            async for _ in run.stream_events():
                pass
            final = run.final_output
        else:
            final = (await Runner.run(agent, "Mail Ann hello.")).final_output
    assert final == "Mailed Ann."

    requests = [r.json() for r in upstream.requests]
    offered = {t["function"]["name"] for t in requests[0]["tools"]}
    assert "delete_files" not in offered and {"lookup_contact", "send_email"} <= offered
    sent = b"".join(r.body for r in upstream.requests).decode()
    assert EMAIL not in sent and stand_in in sent  # the model read the placeholder only
    calls = mcp_server.calls()
    assert [c["tool"] for c in calls] == ["lookup_contact", "send_email"]
    assert calls[1]["arguments"] == {"to": EMAIL, "body": "Hi"}  # the original came back

    def audited_tool_calls() -> list[tuple[str, str | None, str]]:
        with sqlite3.connect(db) as connection:
            return connection.execute(
                "SELECT model, error, agent FROM audit WHERE api = 'mcp.tools/call' ORDER BY ts"
            ).fetchall()

    await eventually_async(lambda: len(audited_tool_calls()) == 2)  # written in the background
    rows = audited_tool_calls()
    assert rows == [("lookup_contact", None, "mailer"), ("send_email", None, "mailer")]


async def test_a_langchain_agent_s_mcp_tools_through_the_adapters_are_governed(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    """langchain-mcp-adapters opens an MCP session per call, so the agent names its
    conversation with ``x-hookgate-session-id``: the placeholders a result got are
    restored in a later call of the same conversation."""
    base = make_proxy(loaded=load_text(gateway_config(upstream, mcp_server, tmp_path)))
    stand_in = placeholder(SECRET.encode(), "EMAIL_ADDRESS", EMAIL)
    upstream.push(*script(stand_in))
    client = MultiServerMCPClient(
        {
            "crm": {
                "transport": "streamable_http",
                "url": f"{base.removesuffix('/v1')}/mcp/crm",
                "headers": {"Authorization": f"Bearer {CLIENT}", "x-hookgate-session-id": "t-1"},
            }
        }
    )
    tools = await client.get_tools()
    assert {t.name for t in tools} >= {"lookup_contact", "send_email"}
    assert "delete_files" not in {t.name for t in tools}
    model = ChatOpenAI(model="gpt-4.1-mini", base_url=base, api_key=CLIENT, max_retries=0)
    agent = create_agent(model, tools=tools)
    state = await agent.ainvoke({"messages": [{"role": "user", "content": "Mail Ann hello."}]})
    assert state["messages"][-1].text == "Mailed Ann."
    sent = b"".join(r.body for r in upstream.requests).decode()
    assert EMAIL not in sent and stand_in in sent
    calls = mcp_server.calls()
    assert [c["tool"] for c in calls] == ["lookup_contact", "send_email"]
    assert calls[1]["arguments"] == {"to": EMAIL, "body": "Hi"}
