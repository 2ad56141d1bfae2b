"""The MCP gateway when servers and clients misbehave: answers that never come, answers
too large or of the wrong shape, sessions closed under a waiting call, streams cut
midway, concurrent starts, calls that try to skip the policies. Each ends in a clear
JSON-RPC answer (with the request's id) at once, and no server process is left behind."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from hookgate.config.loader import load_text
from hookgate.config.schema import McpServerConfig
from hookgate.server.mcp.stdio import SessionGone, StdioSessions
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream, LoopThread, RunningApp
from tests.mcp_servers import McpServer
from tests.server.test_mcp_gateway import ADMIN, GUARD, SERVER_TOKEN, gateway, new_key

FAULTS = Path(__file__).parents[1] / "mcp_stdio_faults.py"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "raw-http", "version": "1"},
}


def rpc(id: int | None, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    return message if id is None else {**message, "id": id}


def faulty(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, mode: str, **server: Any
) -> tuple[str, Path]:
    """A proxy fronting ``tests/mcp_stdio_faults.py MODE`` as ``/mcp/faults``; its URL and
    the file the server processes write their pids to."""
    pids = tmp_path / "pids"
    command = [sys.executable, str(FAULTS), mode, str(pids)]
    settings = {"command": command, **server}
    extra = (
        f"store: 'sqlite:///{tmp_path / 'g.db'}'\nkeys: {{required: true, admin_key: {ADMIN}}}\n"
        f"mcp_servers: {{faults: {json.dumps(settings)}}}\n"
        "policies:\n  - tool_guard: {deny: ['delete_*']}\n"
    )
    base = make_proxy(loaded=load_text(config_text(upstream.base_url, extra))).removesuffix("/v1")
    return f"{base}/mcp/faults", pids


def started(pids: Path) -> list[int]:
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def alive(pids: Path) -> list[int]:
    running = []
    for pid in started(pids):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        running.append(pid)
    return running


def initialized(url: str, key: str) -> dict[str, str]:
    """A new session's request headers."""
    auth = {**HEADERS, "authorization": f"Bearer {key}"}
    answer = httpx.post(url, json=rpc(1, "initialize", INIT), headers=auth, timeout=30)
    assert answer.status_code == 200, answer.text
    return {**auth, "mcp-session-id": answer.headers["mcp-session-id"]}


def test_an_initialize_the_server_never_answers_stops_its_process(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    url, pids = faulty(make_proxy, upstream, tmp_path, "silent", timeout={"read_s": 1})
    auth = {**HEADERS, "authorization": f"Bearer {new_key(url.removesuffix('/mcp/faults'))}"}
    answer = httpx.post(url, json=rpc(7, "initialize", INIT), headers=auth, timeout=30)
    assert answer.status_code == 502
    assert (
        answer.json()["id"] == 7 and "did not answer within 1s" in answer.json()["error"]["message"]
    )
    assert len(started(pids)) == 1 and alive(pids) == []  # the client never got its id


async def test_concurrent_sessions_stay_within_max_sessions(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    url, pids = faulty(make_proxy, upstream, tmp_path, "null", max_sessions=2)
    auth = {**HEADERS, "authorization": f"Bearer {new_key(url.removesuffix('/mcp/faults'))}"}
    async with httpx.AsyncClient(timeout=30) as http:
        answers = await asyncio.gather(
            *(http.post(url, json=rpc(1, "initialize", INIT), headers=auth) for _ in range(6))
        )
    assert [a.status_code for a in answers] == [200] * 6
    assert len(started(pids)) == 6 and len(alive(pids)) == 2  # the least recently used closed


def test_a_result_that_is_not_an_object_is_an_error_with_the_request_id(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    url, _ = faulty(make_proxy, upstream, tmp_path, "null")
    session = initialized(url, new_key(url.removesuffix("/mcp/faults")))
    call = rpc(5, "tools/call", {"name": "anything", "arguments": {}})
    answer = httpx.post(url, json=call, headers=session, timeout=30)
    assert answer.status_code == 200
    assert answer.json()["id"] == 5 and answer.json()["error"]["code"] == -32000
    assert "not an object" in answer.json()["error"]["message"]
    bare = {k: v for k, v in session.items() if k != "mcp-session-id"}
    missing = httpx.post(url, json=rpc(6, "ping"), headers=bare, timeout=30)
    assert missing.status_code == 400 and missing.json()["id"] == 6  # no session named


def test_an_answer_over_the_line_limit_ends_the_session_at_once(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    url, pids = faulty(make_proxy, upstream, tmp_path, "bigline", timeout={"read_s": 60})
    session = initialized(url, new_key(url.removesuffix("/mcp/faults")))
    begun = time.monotonic()
    call = rpc(2, "tools/call", {"name": "big", "arguments": {}})
    answer = httpx.post(url, json=call, headers=session, timeout=60)
    assert "'faults' exited" in answer.json()["error"]["message"]
    assert time.monotonic() - begun < 30  # not the 60 s read timeout
    after = httpx.post(url, json=rpc(3, "ping"), headers=session, timeout=30)
    assert after.status_code == 404 and alive(pids) == []


async def test_a_cancelled_call_is_answered_at_once(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    url, _ = faulty(make_proxy, upstream, tmp_path, "stall", timeout={"read_s": 60})
    session = initialized(url, new_key(url.removesuffix("/mcp/faults")))
    async with httpx.AsyncClient(timeout=60, headers=session) as http:
        call = asyncio.create_task(
            http.post(url, json=rpc(9, "tools/call", {"name": "slow", "arguments": {}}))
        )
        await asyncio.sleep(0.3)
        cancel = await http.post(url, json=rpc(None, "notifications/cancelled", {"requestId": 9}))
        assert cancel.status_code == 202
        async with asyncio.timeout(10):
            answer = await call
    assert answer.json()["id"] == 9 and "cancelled" in answer.json()["error"]["message"]


async def test_closing_a_session_ends_its_waiting_requests_at_once(tmp_path: Path) -> None:
    """DELETE, idle reaping and eviction close sessions while calls wait on them."""
    sessions = StdioSessions()
    silent = McpServerConfig(command=[sys.executable, str(FAULTS), "silent", str(tmp_path / "p")])
    for _ in range(3):  # the close races the session's reader: try it more than once
        session = await sessions.start("silent", silent)
        waiting = asyncio.create_task(session.request(rpc(1, "ping"), 30))
        await asyncio.sleep(0.2)
        begun = time.monotonic()
        await sessions.end(session)
        with pytest.raises(SessionGone):
            await waiting
        assert time.monotonic() - begun < 10
        async with asyncio.timeout(1):
            assert [m async for m in session.outbox.stream()] == []  # its GET streams end


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[McpServer]:
    server = McpServer(tmp_path, token=SERVER_TOKEN)
    yield server
    server.stop()


def test_a_tools_call_without_an_id_is_refused_never_relayed(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    """As a notification it would get no answer, and a lax server might run it unguarded."""
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", GUARD)
    session = initialized(f"{base}/mcp/crm", new_key(base))
    for id in (None, "null"):
        call = rpc(None, "tools/call", {"name": "delete_files", "arguments": {"path": "/"}})
        if id == "null":
            call["id"] = None
        answer = httpx.post(f"{base}/mcp/crm", json=call, headers=session, timeout=30)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == -32600
    assert not mcp_server.calls()


def test_a_tools_call_in_a_session_the_server_no_longer_knows_is_a_404(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    """404 is how a client learns to start a new session, on tools/call as on any method."""
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", GUARD)
    stale = {**HEADERS, "authorization": f"Bearer {new_key(base)}", "mcp-session-id": "dead"}
    call = rpc(4, "tools/call", {"name": "get_weather", "arguments": {"city": "Oslo"}})
    answer = httpx.post(f"{base}/mcp/crm", json=call, headers=stale, timeout=30)
    assert answer.status_code == 404 and answer.json()["id"] == 4


async def test_a_tools_list_stream_cut_midway_ends_with_an_error_event(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread, tmp_path: Path
) -> None:
    """The events already relayed started a 200 stream: the error goes on it, as an event
    answering the request, never as a second HTTP response inside the first."""

    async def cut(request: web.Request) -> web.StreamResponse:
        out = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await out.prepare(request)
        note = rpc(None, "notifications/message", {"level": "info", "data": "listing"})
        await out.write(b"event: message\ndata: " + json.dumps(note).encode() + b"\n\n")
        assert request.transport is not None
        request.transport.abort()
        return out

    app = web.Application()
    app.router.add_post("/mcp", cut)
    server = loop_thread.run(RunningApp(app).start())
    extra = (
        f"store: 'sqlite:///{tmp_path / 'g.db'}'\nkeys: {{required: true, admin_key: {ADMIN}}}\n"
        f"mcp_servers: {{cut: {{url: '{server.url}/mcp'}}}}\n"
        f"policies:\n{GUARD}"
    )
    base = make_proxy(loaded=load_text(config_text(upstream.base_url, extra))).removesuffix("/v1")
    auth = {**HEADERS, "authorization": f"Bearer {new_key(base)}"}
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(f"{base}/mcp/cut", json=rpc(3, "tools/list"), headers=auth)
    loop_thread.run(server.stop())
    assert answer.status_code == 200
    events = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
    assert events[0]["method"] == "notifications/message"
    assert events[-1]["id"] == 3 and events[-1]["error"]["code"] == -32000


def test_a_response_with_an_id_of_the_wrong_type_is_dropped_not_fatal(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """From the server (a list id before the real answer) or the client (a cancel naming
    a list): the session goes on."""
    url, _ = faulty(make_proxy, upstream, tmp_path, "oddid", timeout={"read_s": 10})
    session = initialized(url, new_key(url.removesuffix("/mcp/faults")))
    cancel = rpc(None, "notifications/cancelled", {"requestId": [1]})
    assert httpx.post(url, json=cancel, headers=session, timeout=30).status_code == 202
    for id in (2, 3):
        call = rpc(id, "tools/call", {"name": "anything", "arguments": {}})
        answer = httpx.post(url, json=call, headers=session, timeout=30).json()
        assert answer["result"]["content"][0]["text"] == "small"


def test_a_tools_call_without_an_id_never_reaches_a_stdio_server(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """As for a URL server: taken as a notification it would be written to the process
    past the policies (``tool_guard`` denies ``delete_*`` here)."""
    url, _ = faulty(make_proxy, upstream, tmp_path, "null")
    session = initialized(url, new_key(url.removesuffix("/mcp/faults")))
    call = rpc(None, "tools/call", {"name": "delete_files", "arguments": {"path": "/"}})
    answer = httpx.post(url, json=call, headers=session, timeout=30)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == -32600
