"""The MCP gateway: the official ``mcp`` client and the OpenAI Agents SDK reach MCP
servers written with the ``mcp`` SDK through hookgate, with the tool policies in the path."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import orjson
import pytest
from httpx_sse import aconnect_sse
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import McpError

from hookgate.config.loader import load_text
from hookgate.pipeline import registry
from hookgate.redaction.placeholders import placeholder
from hookgate.sdk import Gate
from hookgate.store.sqlite import SQLiteStore
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream
from tests.mcp_servers import McpServer
from tests.otlp import OtlpReceiver
from tests.spend import audited
from tests.waits import eventually_async

ADMIN = "admin-secret-for-tests"
SERVER_TOKEN = "mcp-server-secret-token-123"
EMAIL = "ann.lee@example.com"
SECRET = "a-fixed-secret-for-placeholders"


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[McpServer]:
    server = McpServer(tmp_path, token=SERVER_TOKEN)
    yield server
    server.stop()


def gateway(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    server: McpServer,
    db: Path,
    policies: str,
    keys: str = f"{{required: true, admin_key: {ADMIN}}}",
) -> str:
    """A proxy fronting ``server`` as ``/mcp/crm``; its base URL (no /v1)."""
    extra = (
        f"store: 'sqlite:///{db}'\nkeys: {keys}\n"
        "mcp_servers:\n"
        f"  crm: {{url: '{server.url}', headers: {{authorization: 'Bearer {SERVER_TOKEN}'}}}}\n"
        f"policies:\n{policies}"
    )
    return make_proxy(loaded=load_text(config_text(upstream.base_url, extra))).removesuffix("/v1")


def new_key(base: str, team: str = "support") -> str:
    created = httpx.post(
        f"{base}/admin/keys", json={"team": team}, headers={"authorization": f"Bearer {ADMIN}"}
    )
    assert created.status_code == 201, created.text
    return str(created.json()["key"])


@asynccontextmanager
async def session(url: str, key: str, **headers: str) -> AsyncIterator[ClientSession]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}", **headers})
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


GUARD = "  - tool_guard: {deny: ['delete_*'], arguments: [{tool: send_email, pattern: 'rival'}]}\n"


async def test_only_allowed_tools_are_listed_and_a_denied_call_is_refused_by_name(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", GUARD)
    key = new_key(base)
    async with session(f"{base}/mcp/crm", key) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "delete_files" not in names and {"get_weather", "send_email"} <= names
        refused = await client.call_tool("delete_files", {"path": "/"})
        assert refused.isError and "delete_files" in refused.content[0].text  # type: ignore[union-attr]
        bad = await client.call_tool("send_email", {"to": "boss@rival.com", "body": "hi"})
        assert bad.isError
        fine = await client.call_tool("get_weather", {"city": "Paris"})
        assert not fine.isError and fine.content[0].text == "sunny in Paris"  # type: ignore[union-attr]
    calls = mcp_server.calls()
    assert [c["tool"] for c in calls] == ["get_weather"]  # the refused ones never ran
    # the server got its own credentials, never the client's hookgate key
    assert calls[0]["headers"]["authorization"] == f"Bearer {SERVER_TOKEN}"
    assert key not in json.dumps(calls)


async def test_pii_from_a_tool_result_reaches_the_agent_as_a_placeholder_and_comes_back(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    base = gateway(
        make_proxy, upstream, mcp_server, tmp_path / "g.db", f"  - pii: {{secret: '{SECRET}'}}\n"
    )
    key = new_key(base)
    stand_in = placeholder(SECRET.encode(), "EMAIL_ADDRESS", EMAIL)
    async with session(f"{base}/mcp/crm", key, **{"x-hookgate-session-id": "s1"}) as client:
        found = await client.call_tool("lookup_contact", {"name": "Ann"})
        text = found.content[0].text  # type: ignore[union-attr]
        assert EMAIL not in text and stand_in in text
        assert found.structuredContent == {"result": text}  # redacted alike
        structured = await client.call_tool("structured_contact", {"name": "Ann"})
        ann = placeholder(SECRET.encode(), "PERSON", "Ann")  # a name under a "name" key
        assert structured.structuredContent == {"name": ann, "email": stand_in}
        sent = await client.call_tool("send_email", {"to": stand_in, "body": "Hello"})
        assert not sent.isError
    last = mcp_server.calls()[-1]
    assert last["tool"] == "send_email" and last["arguments"]["to"] == EMAIL


async def test_parallel_calls_of_one_session_keep_each_other_s_placeholders_and_counts(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    """Two calls at once (an agent's parallel tool calls) each read the session's state
    before the other wrote it: both placeholders still come back, and both calls count."""
    policies = f"  - pii: {{secret: '{SECRET}'}}\n  - tool_guard: {{max_per_session: 3}}\n"
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", policies)
    ann, bob = (placeholder(SECRET.encode(), "EMAIL_ADDRESS", f"{n}@example.com") for n in "ab")
    async with session(f"{base}/mcp/crm", new_key(base)) as client:
        found = await asyncio.gather(
            *(client.call_tool("slow_contact", {"name": n, "seconds": 0.3}) for n in "ab")
        )
        assert [r.content[0].text for r in found] == [f"a: {ann}", f"b: {bob}"]  # type: ignore[union-attr]
        sent = await client.call_tool("send_email", {"to": f"{ann}, {bob}", "body": "Hi"})
        assert not sent.isError
        over = await client.call_tool("get_weather", {"city": "Oslo"})
        assert over.isError  # the fourth call of a session allowed three
    assert [c["tool"] for c in mcp_server.calls()][-1] == "send_email"
    assert mcp_server.calls()[-1]["arguments"]["to"] == "a@example.com, b@example.com"


async def test_a_call_is_a_span_of_the_agent_s_trace_and_a_row_of_the_audit_log(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    mcp_server: McpServer,
    receiver: OtlpReceiver,
    tmp_path: Path,
) -> None:
    db = tmp_path / "g.db"
    tracing = f"  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05}}\n"
    base = gateway(make_proxy, upstream, mcp_server, db, tracing + GUARD)
    key = new_key(base)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = f"00-{trace_id}-00f067aa0ba902b7-01"
    async with session(f"{base}/mcp/crm", key, **{"x-hookgate-agent": "planner"}) as client:
        await client.call_tool("get_weather", {"city": "Paris"}, meta={"traceparent": parent})
        await client.call_tool("delete_files", {"path": "/"})
    spans = receiver.wait_until(lambda s: sum(x.name.startswith("execute_tool") for x in s) >= 2)
    weather = next(s for s in spans if s.name == "execute_tool get_weather")
    assert weather.trace_id == trace_id
    assert weather.attributes["gen_ai.tool.name"] == "get_weather"
    await eventually_async(lambda: audited(db)[2] == 2)  # written in the background
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT api, model, target, status, error, team, agent, decisions FROM audit"
            " ORDER BY ts"
        ).fetchall()
    assert [row[:-1] for row in rows] == [
        ("mcp.tools/call", "get_weather", "mcp/crm", 200, None, "support", "planner"),
        ("mcp.tools/call", "delete_files", "mcp/crm", 200, "refused", "support", "planner"),
    ]
    # each tool-call policy's decision, in the model calls' vocabulary
    assert [json.loads(row[-1]) for row in rows] == [
        {"tracing": "allow", "tool_guard": "allow"},
        {"tracing": "allow", "tool_guard": "block"},
    ]
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(f"{base}/metrics")).text
    assert (
        'hookgate_mcp_tool_calls_total{outcome="refused",server="crm",tool="delete_files"} 1.0'
        in metrics
    )


def post(base: str, key: str | None, body: bytes, path: str = "/mcp/crm") -> httpx.Response:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    return httpx.post(f"{base}{path}", content=body, headers=headers, timeout=30)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}', -32602),
    ],
)
def test_bad_json_rpc_gets_json_rpc_errors(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    mcp_server: McpServer,
    tmp_path: Path,
    body: bytes,
    code: int,
) -> None:
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", GUARD)
    answer = post(base, new_key(base), body)
    assert answer.status_code == 400
    assert answer.json()["jsonrpc"] == "2.0" and answer.json()["error"]["code"] == code
    assert not mcp_server.calls()


def test_an_unknown_server_or_a_missing_key_is_refused_in_json_rpc_shape(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", GUARD)
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    unknown = post(base, new_key(base), ping, path="/mcp/nope")
    assert unknown.status_code == 404 and "nope" in unknown.json()["error"]["message"]
    anonymous = post(base, None, ping)
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == -32000
    probe = post(base, None, ping, path="/mcp/nope")  # no key: which servers exist is not said
    assert probe.status_code == 401


async def test_a_server_that_dies_mid_call_or_is_down_is_an_error_never_a_hang(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", GUARD)
    key = new_key(base)
    async with session(f"{base}/mcp/crm", key) as client:
        started = time.monotonic()
        with pytest.raises(Exception) as crashed:  # the client raises the JSON-RPC error
            await client.call_tool("crash", {})
        assert "crm" in str(crashed.value) and time.monotonic() - started < 10
        assert SERVER_TOKEN not in str(crashed.value)
    mcp_server.stop()
    down = post(base, key, b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}')
    assert down.status_code == 502
    assert "could not be reached" in down.json()["error"]["message"]
    assert SERVER_TOKEN not in down.text


async def test_tool_calls_over_a_rate_are_refused_and_never_run(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    rates = "  - rate_limit: {tool_limits: [{scope: tool, rpm: 2}, {scope: key, rpm: 100}]}\n"
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", rates)
    async with session(f"{base}/mcp/crm", new_key(base)) as client:
        for city in ("Paris", "Rome"):
            assert not (await client.call_tool("get_weather", {"city": city})).isError
        third = await client.call_tool("get_weather", {"city": "Oslo"})
        assert third.isError
        assert "2 tool calls per minute reached for tool=get_weather" in third.content[0].text  # type: ignore[union-attr]
        assert not (await client.call_tool("send_email", {"to": "a@b.c", "body": "x"})).isError
    assert [c["arguments"].get("city") for c in mcp_server.calls()] == ["Paris", "Rome", None]


WEATHER = Path(__file__).parents[1] / "e2e" / "mcp_weather_server.py"


def stdio_gateway(
    make_proxy: ProxyFactory, upstream: FakeUpstream, db: Path, command: list[str]
) -> str:
    extra = (
        f"store: 'sqlite:///{db}'\nkeys: {{required: true, admin_key: {ADMIN}}}\n"
        f"mcp_servers: {{weather: {{command: {json.dumps(command)}, max_sessions: 2}}}}\n"
        f"policies:\n  - tool_guard: {{deny: ['nothing']}}\n  - pii: {{secret: '{SECRET}'}}\n"
    )
    return make_proxy(loaded=load_text(config_text(upstream.base_url, extra))).removesuffix("/v1")


async def test_a_stdio_server_hookgate_starts_is_served_with_the_policies(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """``command``: one process per client session, the policies as for a URL server;
    a session ended with DELETE (the client's close) is gone."""
    base = stdio_gateway(make_proxy, upstream, tmp_path / "g.db", [sys.executable, str(WEATHER)])
    key = new_key(base)
    async with session(f"{base}/mcp/weather", key) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["get_forecast"]
        result = await client.call_tool("get_forecast", {"city": "Paris"})
        text = result.content[0].text  # type: ignore[union-attr]
        assert text.startswith("rain in Paris") and "siobhan@example.org" not in text
        assert "<EMAIL_ADDRESS_" in text
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    headers = {"authorization": f"Bearer {key}", "mcp-session-id": "no-such-session"}
    async with httpx.AsyncClient() as http:
        stale = await http.post(f"{base}/mcp/weather", content=ping, headers=headers)
    assert stale.status_code == 404 and stale.json()["error"]["code"] == -32000


def test_a_stdio_server_that_exits_is_a_clear_error(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    command = [sys.executable, "-c", "import sys; sys.exit(3)"]
    base = stdio_gateway(make_proxy, upstream, tmp_path / "g.db", command)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    answer = post(base, new_key(base), json.dumps(init).encode(), path="/mcp/weather")
    assert answer.status_code == 502
    assert "'weather' exited (status 3)" in answer.json()["error"]["message"]


@pytest.mark.parametrize("header", ["x-hookgate-session-id", "session-id"])
async def test_a_session_limit_counts_across_mcp_sessions_of_one_conversation(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path,
    header: str,
) -> None:  # fmt: skip
    """The counts live in the store under the conversation's session (the SDK's own
    record) — ``x-hookgate-session-id``, or the agent's own header (Codex's
    ``session-id``) as on the model routes — so a client reconnecting with a new MCP
    session is still held to the limit; another conversation is not."""
    guard = "  - tool_guard: {max_per_session: 2}\n"
    base = gateway(make_proxy, upstream, mcp_server, tmp_path / "g.db", guard)
    key = new_key(base)
    outcomes = []
    for conversation in ("c-1", "c-1", "c-2"):
        async with session(f"{base}/mcp/crm", key, **{header: conversation}) as c:
            result = await c.call_tool("get_weather", {"city": "Paris"})
            outcomes.append(result.isError)
            if conversation == "c-1" and not result.isError:
                outcomes.append((await c.call_tool("get_weather", {"city": "Rome"})).isError)
    assert outcomes == [False, False, True, False]
    assert len(mcp_server.calls()) == 3


async def test_an_sdk_reply_that_ends_after_gateway_calls_keeps_their_counts(
    make_proxy: ProxyFactory, upstream: FakeUpstream, mcp_server: McpServer, tmp_path: Path
) -> None:
    """The agent's SDK and the gateway keep one record per conversation
    (``session:{id}``). A reply that read it before the agent called tools through the
    gateway, and ends after, writes back what it changed, merged: the gateway's counts
    stand, so the session's limit still holds."""
    db = tmp_path / "g.db"
    base = gateway(make_proxy, upstream, mcp_server, db, "  - tool_guard: {max_per_session: 2}\n")
    key, url, conversation = new_key(base), f"{base}/mcp/crm", {"x-hookgate-session-id": "c-1"}
    store = SQLiteStore(f"sqlite:///{db}")  # the gateway's store, as the agent's gate opens it
    gate = Gate([registry.build("model_call_limit", {"max_per_session": 5})], store=store)
    async with gate.reply(session_id="c-1"):
        assert not await gate.driver.after_turn(None)  # the reply's model call, counted
        async with session(url, key, **conversation) as client:
            for city in ("Paris", "Rome"):  # the session's two tool calls
                assert not (await client.call_tool("get_weather", {"city": city})).isError
    async with session(url, key, **conversation) as client:  # after the reply ended
        assert (await client.call_tool("get_weather", {"city": "Oslo"})).isError
    kept = orjson.loads(await store.load_state("session:c-1") or b"{}")
    assert kept["model_call_limit"] == {"calls": 1} and kept["tool_guard"] == {"calls": 3}
    assert [c["tool"] for c in mcp_server.calls()] == ["get_weather"] * 2
    await gate.aclose()


async def test_idle_and_unconfigured_stdio_sessions_are_reaped(tmp_path: Path) -> None:
    """The sessions' supervisor on its own: an idle session and one of a server that left
    the config are stopped; a fresh one of a configured server keeps running."""
    from hookgate.config.schema import McpServerConfig
    from hookgate.server.mcp.stdio import StdioSessions

    sessions = StdioSessions()
    quick = McpServerConfig(command=[sys.executable, str(WEATHER)], idle_timeout_s=0.2)
    idle = await sessions.start("quick", quick)
    gone = await sessions.start("old", quick)
    await asyncio.sleep(0.3)
    await sessions.reap({"quick": quick, "old": quick.model_copy(update={"idle_timeout_s": 60})})
    assert not idle.alive and gone.alive  # only the idle one
    fresh = await sessions.start("quick", quick)
    await sessions.reap({"quick": quick})
    assert not gone.alive and fresh.alive  # "old" left the config
    assert sessions.get("quick", fresh.id) is fresh and sessions.get("quick", idle.id) is None
    await sessions.close()
    assert not fresh.alive


async def test_a_stdio_session_s_stream_resumes_after_the_last_event_the_client_got(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """What the server sends unasked (here a log line per call) goes on the session's GET
    stream as numbered events; a client whose stream dropped reconnects with Last-Event-ID
    and gets the rest, each message once."""
    base = stdio_gateway(make_proxy, upstream, tmp_path / "g.db", [sys.executable, str(WEATHER)])
    auth = {"authorization": f"Bearer {new_key(base)}"}
    url = f"{base}/mcp/weather"
    async with httpx.AsyncClient(timeout=10) as http:
        started = await http.post(url, json=rpc(1, "initialize", INIT), headers=auth)
        assert started.status_code == 200, started.text
        ours = {**auth, "mcp-session-id": started.headers["mcp-session-id"]}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(url, json=initialized, headers=ours)).status_code == 202
        for number, city in enumerate(["Paris", "Rome", "Oslo"], start=2):
            call = rpc(number, "tools/call", {"name": "get_forecast", "arguments": {"city": city}})
            assert (await http.post(url, json=call, headers=ours)).status_code == 200

        async def logged(headers: dict[str, str], count: int) -> list[tuple[str, str]]:
            """The ids and log lines of the first ``count`` events of a GET stream."""
            got: list[tuple[str, str]] = []
            async with asyncio.timeout(5), aconnect_sse(http, "GET", url, headers=headers) as s:
                async for event in s.aiter_sse():
                    got.append((event.id, event.json()["params"]["data"]))
                    if len(got) == count:
                        return got
            return got

        first = await logged(ours, 1)
        assert first == [("1", "forecast asked for Paris")]
        rest = await logged({**ours, "last-event-id": "1"}, 2)
        assert rest == [("2", "forecast asked for Rome"), ("3", "forecast asked for Oslo")]


INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "raw-http", "version": "1"},
}


def rpc(id: int, method: str, params: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


async def test_an_outbox_sends_each_message_on_one_stream_and_replays_only_what_was_taken() -> None:
    from hookgate.server.mcp.stdio import Outbox

    outbox = Outbox(keep=4)
    for n in range(1, 6):
        outbox.put({"n": n})  # 5 messages, 4 kept: the first is dropped undelivered
    one, two = outbox.stream(), outbox.stream()
    taken = [await anext(one), await anext(two), await anext(one)]
    assert taken == [(2, {"n": 2}), (3, {"n": 3}), (4, {"n": 4})]
    resumed = outbox.stream(after=2)  # one's: replays 4, never 3 (two delivered it)
    outbox.close()
    assert [pair async for pair in resumed] == [(4, {"n": 4}), (5, {"n": 5})]
    assert [pair async for pair in one] == [] and [pair async for pair in two] == []


async def test_a_call_whose_stream_the_server_closes_is_resumed_with_last_event_id(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """The protocol's polling style: the server numbers its events, closes the call's
    stream midway and answers on the stream the client resumes with Last-Event-ID. The
    gateway, which holds the call for its policies, resumes it itself."""
    with McpServer(tmp_path, token=SERVER_TOKEN, resumable=True) as server:
        base = gateway(make_proxy, upstream, server, tmp_path / "g.db", GUARD)
        progress: list[float] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(done)

        async with session(f"{base}/mcp/crm", new_key(base)) as client:
            result = await client.call_tool("paused_answer", {}, progress_callback=on_progress)
        assert not result.isError
        assert result.content[0].text == "answered after a pause"  # type: ignore[union-attr]
        assert progress == [1.0]  # relayed before the stream closed
        assert [c["tool"] for c in server.calls()] == ["paused_answer"]


def provenance_sink(action: str) -> str:
    return (
        "  - provenance: {approval_timeout_s: 1, sinks: "
        f"[{{tool: send_email, argument: to, action: {action}}}]}}\n"
    )


@pytest.mark.parametrize("action", ["deny", "approval", "audit"])
async def test_a_value_an_earlier_call_read_is_denied_paused_or_audited_at_a_sink(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    mcp_server: McpServer,
    tmp_path: Path,
    action: str,
) -> None:
    """The session's earlier results are the evidence (the MCP session, no header); a
    value they never held (the user's) goes; the audit record and the metric name the
    source, the sink and the rule, never the value."""
    db = tmp_path / "g.db"
    base = gateway(make_proxy, upstream, mcp_server, db, provenance_sink(action))
    key = new_key(base)
    async with session(f"{base}/mcp/crm", key) as client:
        typed = await client.call_tool("send_email", {"to": "bob@mine.org", "body": "hi"})
        assert not typed.isError
        await client.call_tool("lookup_contact", {"name": "Ann"})  # ann.lee@example.com
        copied = {"to": "Ann.Lee+x@EXAMPLE.com", "body": "the code"}
        if action == "approval":
            with pytest.raises(McpError, match="no one approved"):
                await client.call_tool("send_email", copied)
        else:
            sent = await client.call_tool("send_email", copied)
            assert sent.isError == (action == "deny")
            if action == "deny":
                assert "lookup_contact" in sent.content[0].text  # type: ignore[union-attr]
    sends = [c["arguments"]["to"] for c in mcp_server.calls() if c["tool"] == "send_email"]
    assert sends == (["bob@mine.org"] if action != "audit" else ["bob@mine.org", copied["to"]])
    await eventually_async(lambda: audited(db)[2] == 3)
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT decisions, findings FROM audit ORDER BY ts").fetchall()
    decision = {"deny": "block", "approval": "block", "audit": "allow"}[action]
    assert json.loads(rows[-1][0]) == {"provenance": decision}
    (found,) = json.loads(rows[-1][1])
    assert found.startswith("provenance:lookup_contact.") and found.endswith(
        f">send_email.to:{action}"
    )
    assert "ann" not in found.casefold()
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(f"{base}/metrics")).text
    assert (
        f'hookgate_provenance_findings_total{{action="{action}",rule="send_email.to",'
        'sink="send_email.to",source_tool="lookup_contact"} 1.0'
    ) in metrics


async def test_a_refused_call_s_span_names_the_source_and_the_sink_never_the_value(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    mcp_server: McpServer,
    receiver: OtlpReceiver,
    tmp_path: Path,
) -> None:
    tracing = f"  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05}}\n"
    base = gateway(
        make_proxy, upstream, mcp_server, tmp_path / "g.db", tracing + provenance_sink("deny")
    )
    key = new_key(base)
    async with session(f"{base}/mcp/crm", key) as client:
        await client.call_tool("lookup_contact", {"name": "Ann"})
        refused = await client.call_tool("send_email", {"to": EMAIL, "body": "code"})
        assert refused.isError
    spans = receiver.wait_until(lambda s: any(x.name == "execute_tool send_email" for x in s))
    send = next(s for s in spans if s.name == "execute_tool send_email")
    (found,) = send.attributes["hookgate.findings"]
    assert found.startswith("provenance:lookup_contact.") and found.endswith(">send_email.to:deny")
    assert "ann" not in str(send.attributes).casefold()
