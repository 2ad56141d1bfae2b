"""The MCP test harness (tests/mcp_servers.py) against the official clients, without hookgate:
the ``mcp`` SDK's Streamable HTTP client and the OpenAI Agents SDK's MCP server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from agents.mcp import MCPServerStreamableHttp
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from mcp.types import TextContent

from tests.mcp_servers import McpServer

TOOLS = {
    "lookup_contact",
    "send_email",
    "delete_files",
    "get_weather",
    "structured_contact",
    "crash",
    "slow",
    "slow_contact",
    "paused_answer",
}


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[McpServer]:
    with McpServer(tmp_path) as server:
        yield server


@asynccontextmanager
async def session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized client session over Streamable HTTP."""
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(10, read=30)) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


def text(content: object) -> str:
    assert isinstance(content, TextContent), content
    return content.text


async def test_tools_listed_and_called(upstream: McpServer) -> None:
    assert upstream.url.endswith("/mcp")
    async with session(upstream.url, {"X-Trace": "t-1"}) as client:
        listed = await client.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        schemas = {tool.name: tool.outputSchema for tool in listed.tools}
        assert schemas["structured_contact"] is not None
        assert schemas["get_weather"] is None
        assert schemas["lookup_contact"] is not None  # FastMCP's default for a str result

        result = await client.call_tool("lookup_contact", {"name": "Ann"})
        assert not result.isError
        contact = "Ann: ann.lee@example.com, +1 415 555 0100"
        assert [text(c) for c in result.content] == [contact]
        assert result.structuredContent == {"result": contact}

        result = await client.call_tool("structured_contact", {"name": "Ann"})
        assert result.structuredContent == {"name": "Ann", "email": "ann.lee@example.com"}
        assert json.loads(text(result.content[0])) == result.structuredContent

    calls = upstream.calls()
    assert [(c["tool"], c["arguments"]) for c in calls] == [
        ("lookup_contact", {"name": "Ann"}),
        ("structured_contact", {"name": "Ann"}),
    ]
    headers = calls[0]["headers"]
    assert headers["x-trace"] == "t-1"
    assert headers["host"] == f"127.0.0.1:{upstream.port}"
    assert headers["mcp-session-id"] == calls[1]["headers"]["mcp-session-id"]


async def test_token_required(tmp_path: Path) -> None:
    with McpServer(tmp_path, token="s3cret") as upstream:
        assert upstream.token == "s3cret"
        async with httpx.AsyncClient() as http:
            assert (await http.post(upstream.url, json={})).status_code == 401
        for headers in (None, {"Authorization": "Bearer wrong"}):
            with pytest.raises(ExceptionGroup) as refused:
                async with session(upstream.url, headers):
                    pass
            assert refused.group_contains(httpx.HTTPStatusError, match="401 Unauthorized")

        async with session(upstream.url, {"Authorization": "Bearer s3cret"}) as client:
            result = await client.call_tool("send_email", {"to": "bob@example.com", "body": "hi"})
            assert [text(c) for c in result.content] == ["sent to bob@example.com"]
        [call] = upstream.calls()
        assert call["headers"]["authorization"] == "Bearer s3cret"


async def test_crash_then_restart(upstream: McpServer) -> None:
    async with session(upstream.url) as client:
        # The SDK's client does not notice the connection dropping mid-call: it times out.
        with pytest.raises(McpError):
            await client.call_tool("crash", {}, read_timeout_seconds=timedelta(seconds=1))
    assert upstream.process.wait(10) == 1

    upstream.restart()
    async with session(upstream.url) as client:
        result = await client.call_tool("slow", {"seconds": 0.1})
        assert [text(c) for c in result.content] == ["done"]
    assert [c["tool"] for c in upstream.calls()] == ["crash", "slow"]

    upstream.stop()
    assert upstream.process.returncode is not None
    async with httpx.AsyncClient() as http:
        with pytest.raises(httpx.ConnectError):
            await http.post(upstream.url, json={})


@pytest.mark.filterwarnings(
    # Agents SDK 0.24 on mcp 1.x calls mcp's deprecated streamablehttp_client: its call, not ours
    "ignore:Use `streamable_http_client` instead:DeprecationWarning",
)
async def test_agents_sdk(upstream: McpServer) -> None:
    server = MCPServerStreamableHttp(params={"url": upstream.url}, name="upstream")
    await server.connect()  # type: ignore[no-untyped-call]
    try:
        tools = await server.list_tools()
        assert {tool.name for tool in tools} == TOOLS
        result = await server.call_tool("get_weather", {"city": "Paris"})
        assert [text(c) for c in result.content] == ["sunny in Paris"]
    finally:
        await server.cleanup()  # type: ignore[no-untyped-call]
    [call] = upstream.calls()
    assert (call["tool"], call["arguments"]) == ("get_weather", {"city": "Paris"})
