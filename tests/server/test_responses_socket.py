"""The Responses API's WebSocket mode (``GET /v1/responses`` upgraded), through a real
proxy on a port, driven by aiohttp's WebSocket client as Codex CLI drives it: a warm-up
(``generate: false``), a turn continuing it, then the tool's output continuing the turn
(``previous_response_id`` with only the new input). The scripted upstream is called over
HTTP; it records what each turn sent."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson

from hookgate.config.loader import load_text
from hookgate.redaction.placeholders import placeholder
from hookgate.server.app import create_app
from hookgate.store.sqlite import SQLiteStore
from hookgate.wire import synth
from tests.conftest import ProxyFactory, config_text
from tests.fakes import Events, FakeUpstream, LoopThread, RunningApp, Status
from tests.waits import eventually

SECRET = "socket-test-secret-0123456789"
EMAIL = "jane.doe@example.com"
STAND_IN = placeholder(SECRET.encode(), "EMAIL_ADDRESS", EMAIL)
TOOL = {
    "type": "function", "name": "exec_command", "description": "Runs a shell command.",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                   "required": ["cmd"]},
}  # fmt: skip
CODEX_HEADERS = {
    "openai-beta": "responses_websockets=2026-02-06",
    "originator": "codex_exec",
    "session-id": "codex-session-1",
    "x-codex-window-id": "codex-session-1:0",
    "authorization": "Bearer sk-client-credential",
}

Frames = list[dict[str, Any]]


def socket_url(proxy: str) -> str:
    return proxy.replace("http://", "ws://") + "/responses"


def create(**fields: Any) -> dict[str, Any]:
    """A ``response.create`` frame as Codex sends one."""
    return {"type": "response.create", "model": "gpt-test", "stream": True, "store": False,
            "tools": [TOOL], "tool_choice": "auto", **fields}  # fmt: skip


async def turn(socket: aiohttp.ClientWebSocketResponse, frame: dict[str, Any]) -> Frames:
    """Send ``frame`` and read the frames of its answer up to its terminal event."""
    await socket.send_str(json.dumps(frame))
    received: Frames = []
    while not received or received[-1]["type"] not in ("response.completed", "error"):
        received.append(orjson.loads(await socket.receive_str(timeout=10)))
    return received


def completed(frames: Frames) -> dict[str, Any]:
    assert frames[-1]["type"] == "response.completed", frames[-1]
    response: dict[str, Any] = frames[-1]["response"]
    return response


Talk = Callable[[aiohttp.ClientWebSocketResponse], Awaitable[Any]]


def talk(loop_thread: LoopThread, url: str, script: Talk, query: str = "") -> Any:
    """Run ``script`` on a WebSocket connection to the proxy at ``url``."""

    async def run() -> Any:
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(socket_url(url) + query, headers=CODEX_HEADERS) as socket,
        ):
            return await script(socket)

    return loop_thread.run(run())


def test_a_codex_conversation_over_the_socket_is_governed_turn_by_turn(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread, tmp_path: Path
) -> None:
    db = tmp_path / "hookgate.db"
    url = make_proxy(f"store: 'sqlite:///{db}'\npolicies:\n  - pii: {{secret: '{SECRET}'}}\n")
    call = orjson.dumps({"cmd": f"echo {STAND_IN}"}).decode()
    upstream.push(
        synth.Reply(tool_calls=[synth.ToolCall("call_1", "exec_command", call)], pieces=7),
        synth.Reply(f"Your address is {STAND_IN}.", pieces=6),
    )
    developer = {"type": "message", "role": "developer", "content": "You are a coding agent."}
    user = {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": f"Print my address {EMAIL}."}]}  # fmt: skip

    async def conversation(socket: aiohttp.ClientWebSocketResponse) -> tuple[Frames, ...]:
        warm = await turn(socket, create(input=[developer], generate=False))
        first = await turn(socket, create(input=[user], previous_response_id=completed(warm)["id"]))
        output = completed(first)["output"]
        result = {"type": "function_call_output", "call_id": "call_1", "output": f"{EMAIL}\n"}
        second = await turn(
            socket, create(input=[result], previous_response_id=completed(first)["id"])
        )
        return warm, first, second, output

    warm, first, second, output = talk(loop_thread, url, conversation)

    # the warm-up reached no model; each turn reached the upstream over HTTP, whole
    assert [f["type"] for f in warm] == ["response.created", "response.completed"]
    assert completed(warm)["output"] == []
    assert [(r.method, r.path) for r in upstream.requests] == [("POST", "/v1/responses")] * 2
    bodies = [r.json() for r in upstream.requests]
    for body in bodies:
        assert "previous_response_id" not in body and "type" not in body
        assert "generate" not in body and body["stream"] is True
        assert EMAIL not in json.dumps(body)  # only its placeholder went upstream
    assert bodies[0]["input"][0] == developer and STAND_IN in json.dumps(bodies[0]["input"][1])
    assert [i.get("type") for i in bodies[1]["input"]] == [
        "message", "message", "function_call", "function_call_output"
    ]  # fmt: skip
    assert bodies[1]["input"][3]["output"] == f"{STAND_IN}\n"
    # the client reads real values: the tool call's arguments and the answer
    (item,) = output
    assert item["type"] == "function_call" and json.loads(item["arguments"]) == {
        "cmd": f"echo {EMAIL}"
    }
    deltas = "".join(f["delta"] for f in first if f["type"].endswith("arguments.delta"))
    assert json.loads(deltas) == {"cmd": f"echo {EMAIL}"}
    text = "".join(f["delta"] for f in second if f["type"] == "response.output_text.delta")
    assert text == f"Your address is {EMAIL}."
    assert STAND_IN not in json.dumps([warm, first, second])
    # the agent's own headers reach the upstream (the socket's beta does not) and name
    # the session; each turn has its own audit record
    sent = upstream.requests[0].headers
    assert sent["session-id"] == "codex-session-1" and sent["originator"] == "codex_exec"
    assert sent["x-codex-window-id"] == "codex-session-1:0"
    assert "openai-beta" not in sent and "sk-client-credential" not in json.dumps(sent)
    store = SQLiteStore(f"sqlite:///{db}")
    records: list[dict[str, Any]] = []

    def recorded() -> bool:
        records[:] = loop_thread.run(store.audit_records(0))
        return len(records) == 2

    eventually(recorded)
    assert [(r["api"], r["status"], r["session"]) for r in records] == [
        ("responses", 200, "codex-session-1")
    ] * 2
    ids = [r["request_id"] for r in records]
    assert ids[0].endswith(".2") and ids[1].endswith(".3")  # frames 2 and 3 of one socket
    assert ids[0].removesuffix(".2") == ids[1].removesuffix(".3")
    assert EMAIL not in json.dumps(records)


def test_a_response_the_connection_does_not_hold_is_continued_upstream(
    proxy_url: str, upstream: FakeUpstream, loop_thread: LoopThread
) -> None:
    async def script(socket: aiohttp.ClientWebSocketResponse) -> Frames:
        return await turn(socket, create(input="go on", previous_response_id="resp_elsewhere"))

    completed(talk(loop_thread, proxy_url, script, query="?api-version=2026-01-01"))
    body = upstream.last.json()
    assert body["previous_response_id"] == "resp_elsewhere" and body["input"] == "go on"
    assert upstream.last.query == "api-version=2026-01-01"  # the upgrade's query, as on HTTP


def test_a_failed_turn_is_an_error_frame_and_the_connection_goes_on(
    proxy_url: str, upstream: FakeUpstream, loop_thread: LoopThread
) -> None:
    limited = {"error": {"message": "slow down", "type": "requests", "param": None,
                         "code": "rate_limit_exceeded"}}  # fmt: skip
    stream = list(synth.response_stream("gpt-test", synth.Reply("Hello there, friend.")))
    upstream.push(Status(429, limited, {"retry-after": "7"}), Events(stream[:5]))  # then cut

    async def script(socket: aiohttp.ClientWebSocketResponse) -> tuple[Frames, ...]:
        failed = await turn(socket, create(input="hello"))
        cut = await turn(socket, create(input="hello", tools=[]))
        cut_id = cut[0]["response"]["id"]
        continued = await turn(socket, create(input="on", previous_response_id=cut_id, tools=[]))
        await socket.send_str("not json")
        broken = orjson.loads(await socket.receive_str(timeout=10))
        unknown = await turn(socket, {"type": "session.update"})
        served = await turn(socket, create(input="hello again", tools=[]))
        return failed, cut, continued, [broken], unknown, served

    failed, cut, continued, broken, unknown, served = talk(loop_thread, proxy_url, script)
    # a stream cut mid-way: the events that came, then the error (not a short "success")
    assert [f["type"] for f in cut][:2] == ["response.created", "response.in_progress"]
    assert cut[-1]["type"] == "error" and cut[-1]["status"] == 502
    completed(continued)  # a failed turn is not kept: its id goes upstream as it came
    assert upstream.requests[2].json()["previous_response_id"] == cut[0]["response"]["id"]
    (error,) = failed
    assert error["type"] == "error" and error["status"] == 429
    assert error["error"] == limited["error"] and error["headers"]["retry-after"] == "7"
    assert broken[0]["status"] == 400 and "not JSON" in broken[0]["error"]["message"]
    assert unknown[0]["status"] == 400 and unknown[0]["error"]["param"] == "type"
    assert completed(served)["output"][0]["content"][0]["text"] == "Hello from the fake upstream."


def test_a_fault_of_hookgate_is_a_500_frame_and_the_connection_goes_on(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread
) -> None:
    url = make_proxy("policies:\n  - tests.policies_for_tests:Buggy: {word: trigger}\n")

    async def script(socket: aiohttp.ClientWebSocketResponse) -> tuple[Frames, Frames]:
        failed = await turn(socket, create(input="trigger the bug"))
        return failed, await turn(socket, create(input="hello", tools=[]))

    (error,), served = talk(loop_thread, url, script)
    assert error["status"] == 500 and error["error"]["type"] == "server_error"
    assert error["error"]["message"].startswith("internal error (request ")
    assert "a bug" not in error["error"]["message"]  # no internals to the client
    completed(served)


def test_the_socket_refused_by_config_is_a_426_and_plain_gets_are_relayed(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread
) -> None:
    url = make_proxy("server: {responses_websocket: false}\n")

    async def refused() -> tuple[int, dict[str, Any]]:
        async with aiohttp.ClientSession() as session:
            try:
                await session.ws_connect(socket_url(url), headers=CODEX_HEADERS)
            except aiohttp.WSServerHandshakeError as exc:
                answer = await session.get(
                    url + "/responses",
                    headers={"connection": "upgrade", "upgrade": "websocket",
                             "sec-websocket-version": "13",
                             "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="},
                )  # fmt: skip
                return exc.status, await answer.json()
        raise AssertionError("the upgrade was accepted")

    status, body = loop_thread.run(refused())
    assert status == 426
    assert body["error"]["code"] == "websocket_disabled"
    assert "POST /v1/responses" in body["error"]["message"]
    assert not upstream.requests
    relayed = httpx.get(url + "/responses")  # no upgrade: the relay, as before
    assert relayed.json()["method"] == "GET" and upstream.last.path == "/v1/responses"


def test_agents_session_headers_name_the_session_and_go_upstream(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread, tmp_path: Path
) -> None:
    db = tmp_path / "hookgate.db"
    url = make_proxy(f"store: 'sqlite:///{db}'\nserver: {{forward_headers: [x-team-*]}}\n")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    opencode = {"x-session-id": "ses_1", "x-session-affinity": "ses_1",
                "x-parent-session-id": "ses_0", "x-team-name": "blue"}  # fmt: skip
    assert httpx.post(f"{url}/chat/completions", json=body, headers=opencode).is_success
    sent = upstream.last.headers
    assert (sent["x-session-id"], sent["x-session-affinity"]) == ("ses_1", "ses_1")
    assert (sent["x-parent-session-id"], sent["x-team-name"]) == ("ses_0", "blue")
    both = {"x-hookgate-session-id": "mine", "session-id": "codex"}
    assert httpx.post(f"{url}/chat/completions", json=body, headers=both).is_success
    unprintable = {"session-id": "x" * 300, "x-session-id": "ses_2"}  # passed over, not refused
    assert httpx.post(f"{url}/chat/completions", json=body, headers=unprintable).is_success
    store = SQLiteStore(f"sqlite:///{db}")
    sessions: list[str | None] = []

    def recorded() -> bool:
        sessions[:] = [r["session"] for r in loop_thread.run(store.audit_records(0))]
        return len(sessions) == 3

    eventually(recorded)
    assert sessions == ["ses_1", "mine", "ses_2"]


def test_at_shutdown_idle_sockets_close_at_once_and_busy_ones_after_their_turn(
    loop_thread: LoopThread, upstream: FakeUpstream
) -> None:
    upstream.stream_delay = 0.05  # the turn takes about half a second
    server = loop_thread.run(
        RunningApp(create_app(load_text(config_text(upstream.base_url)))).start()
    )

    async def scenario() -> tuple[aiohttp.WSMessage, Frames, aiohttp.WSMessage, float]:
        async with aiohttp.ClientSession() as session:
            url = socket_url(f"{server.url}/v1")
            idle = await session.ws_connect(url)
            busy = await session.ws_connect(url)
            await busy.send_str(json.dumps(create(input="hello", tools=[])))
            received = [orjson.loads(await busy.receive_str(timeout=10))]  # the turn is on
            started = time.monotonic()
            stopping = asyncio.create_task(server.stop())
            closed = await idle.receive(timeout=5)
            idle_s = time.monotonic() - started
            while (message := await busy.receive(timeout=10)).type is aiohttp.WSMsgType.TEXT:
                received.append(orjson.loads(message.data))
            await stopping
            return closed, received, message, idle_s

    closed, received, last, idle_s = loop_thread.run(scenario())
    assert (closed.type, closed.data) == (aiohttp.WSMsgType.CLOSE, 1001) and idle_s < 0.4
    assert received[-1]["type"] == "response.completed"  # the busy turn ended whole
    assert (last.type, last.data) == (aiohttp.WSMsgType.CLOSE, 1001)


def test_a_provider_without_the_responses_api_serves_the_socket_by_translation(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread
) -> None:
    claude = f"{{type: anthropic, base_url: '{upstream.base_url}', api_key: sk-ant-up}}"
    url = make_proxy(
        loaded=load_text(
            f'providers:\n  claude: {claude}\nmodels:\n  "*": [{{provider: claude}}]\n'
        )
    )
    upstream.push(synth.Reply("Hello from Claude."), synth.Reply("Still here."))

    async def script(socket: aiohttp.ClientWebSocketResponse) -> tuple[Frames, Frames]:
        first = await turn(socket, create(input="hi", tools=[]))
        again = create(input="and now?", tools=[], previous_response_id=completed(first)["id"])
        return first, await turn(socket, again)

    first, second = talk(loop_thread, url, script)
    assert completed(first)["output"][0]["content"][0]["text"] == "Hello from Claude."
    assert completed(second)["output"][0]["content"][0]["text"] == "Still here."
    assert [r.path for r in upstream.requests] == ["/v1/messages"] * 2
    said = [m["content"] for m in upstream.last.json()["messages"]]
    assert "hi" in json.dumps(said) and "Hello from Claude." in json.dumps(said)
