"""Tool calls a model returns are checked in the proxy (``tool_guard``'s
``returned_tool_call``): the real ``openai`` and ``anthropic`` clients, streamed and not,
chat, Responses and Messages, against the real proxy and a scripted upstream whose model
calls an allowed tool, a denied one, one it was not offered and one with forbidden
arguments, beside its text. The refused calls never reach the client as calls, the
client reads why, indices stay whole, the stop reason no longer waits for a result, and
the audit record and metrics say ``tool_guard`` blocked."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from hookgate.wire import synth
from tests.conftest import ProxyFactory, anthropic_client, openai_client
from tests.fakes import Events, FakeUpstream, Raw, Status
from tests.waits import eventually

GUARD = """
store: 'sqlite:///{db}'
policies:
  - tool_guard:
      deny: [send_money]
      arguments: [{{tool: run_shell, pattern: "rm\\\\s+-rf"}}]
"""

OFFERED = ("get_balance", "send_money", "run_shell")

CALLS = (
    synth.ToolCall("call_1", "send_money", '{"recipient": "DE89", "amount": 100}'),
    synth.ToolCall("call_2", "get_balance", '{"account": "main"}'),
    synth.ToolCall("call_3", "delete_file", '{"path": "/etc/passwd"}'),
    synth.ToolCall("call_4", "run_shell", '{"command": "rm -rf /"}'),
)

REFUSED = (
    "hookgate refused a call of send_money: the tool 'send_money' is not allowed",
    "hookgate refused a call of delete_file: the tool 'delete_file' was not offered",
    "hookgate refused a call of run_shell: these arguments are not allowed for 'run_shell'",
)


def _schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"x": {"type": "string"}}}


def _proxy(make_proxy: ProxyFactory, tmp_path: Path) -> str:
    return make_proxy(GUARD.format(db=tmp_path / "audit.db"))


def _audited(tmp_path: Path, tmp_count: int) -> list[dict[str, str]]:
    def rows() -> list[Any]:
        with sqlite3.connect(tmp_path / "audit.db") as db:
            try:
                return db.execute("SELECT decisions FROM audit ORDER BY ts").fetchall()
            except sqlite3.OperationalError:
                return []

    eventually(lambda: len(rows()) == tmp_count)
    return [json.loads(r[0]) for r in rows()]


def _refused_metric(url: str) -> float:
    text = httpx.get(url.removesuffix("/v1") + "/metrics").text
    for line in text.splitlines():
        if line.startswith('hookgate_tool_calls_refused_total{policy="tool_guard"}'):
            return float(line.split()[-1])
    return 0.0


@pytest.mark.parametrize("stream", [False, True])
def test_chat_keeps_only_the_allowed_call(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, stream: bool
) -> None:
    url = _proxy(make_proxy, tmp_path)
    upstream.push(synth.Reply(text="Let me do that.", tool_calls=CALLS))
    client = openai_client(url)
    tools: Any = [
        {"type": "function", "function": {"name": n, "parameters": _schema()}} for n in OFFERED
    ]
    messages: Any = [{"role": "user", "content": "pay the bill"}]
    if stream:
        with client.chat.completions.stream(model="m", messages=messages, tools=tools) as events:
            for _ in events:
                pass
            completion = events.get_final_completion()
    else:
        completion = client.chat.completions.create(model="m", messages=messages, tools=tools)
    choice = completion.choices[0]
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_2", "get_balance", '{"account": "main"}')
    ]
    assert choice.finish_reason == "tool_calls"
    content = choice.message.content or ""
    assert content.startswith("Let me do that.")
    assert all(r in content for r in REFUSED)
    assert _audited(tmp_path, 1) == [{"tool_guard": "block"}]
    assert _refused_metric(url) == 3


@pytest.mark.parametrize("stream", [False, True])
def test_chat_with_every_call_refused_stops(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, stream: bool
) -> None:
    url = _proxy(make_proxy, tmp_path)
    upstream.push(synth.Reply(tool_calls=CALLS[:1]))
    client = openai_client(url)
    tools: Any = [{"type": "function", "function": {"name": "send_money"}}]
    messages: Any = [{"role": "user", "content": "hi"}]
    if stream:
        with client.chat.completions.stream(model="m", messages=messages, tools=tools) as events:
            completion = events.get_final_completion()
    else:
        completion = client.chat.completions.create(model="m", messages=messages, tools=tools)
    choice = completion.choices[0]
    assert not choice.message.tool_calls
    assert choice.finish_reason == "stop"
    assert choice.message.content == REFUSED[0]


@pytest.mark.parametrize("stream", [False, True])
def test_responses_replaces_refused_calls_in_place(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, stream: bool
) -> None:
    url = _proxy(make_proxy, tmp_path)
    upstream.push(synth.Reply(text="Let me do that.", tool_calls=CALLS))
    client = openai_client(url)
    tools: Any = [{"type": "function", "name": n, "parameters": _schema()} for n in OFFERED]
    if stream:
        with client.responses.stream(model="m", input="pay the bill", tools=tools) as events:
            seen = [e for e in events]
            response = events.get_final_response()
        added = [e.item.type for e in seen if e.type == "response.output_item.added"]
        assert added == ["message", "message", "function_call", "message", "message"]
        indices = [e.output_index for e in seen if e.type == "response.output_item.done"]
        assert indices == [0, 1, 2, 3, 4]
        sent = "".join(e.delta for e in seen if e.type == "response.output_text.delta")
        assert all(r in sent for r in REFUSED)
    else:
        response = client.responses.create(model="m", input="pay the bill", tools=tools)
    calls = [i for i in response.output if i.type == "function_call"]
    assert [(c.call_id, c.name) for c in calls] == [("call_2", "get_balance")]
    assert response.output_text.startswith("Let me do that.")
    assert all(r in response.output_text for r in REFUSED)
    assert _audited(tmp_path, 1) == [{"tool_guard": "block"}]


@pytest.mark.parametrize("stream", [False, True])
def test_messages_replaces_refused_tool_use_blocks(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, stream: bool
) -> None:
    url = _proxy(make_proxy, tmp_path)
    upstream.push(synth.Reply(text="Let me do that.", tool_calls=CALLS))
    client = anthropic_client(url)
    tools: Any = [{"name": n, "input_schema": _schema()} for n in OFFERED]
    messages: Any = [{"role": "user", "content": "pay the bill"}]
    if stream:
        with client.messages.stream(
            model="claude", max_tokens=100, messages=messages, tools=tools
        ) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(
            model="claude", max_tokens=100, messages=messages, tools=tools
        )
    uses = [b for b in message.content if b.type == "tool_use"]
    assert [(u.id, u.name, u.input) for u in uses] == [
        ("call_2", "get_balance", {"account": "main"})
    ]
    texts = [b.text for b in message.content if b.type == "text"]
    assert texts == ["Let me do that.", *REFUSED]
    assert message.stop_reason == "tool_use"
    assert _audited(tmp_path, 1) == [{"tool_guard": "block"}]


@pytest.mark.parametrize("stream", [False, True])
def test_messages_with_every_call_refused_ends_the_turn(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, stream: bool
) -> None:
    url = _proxy(make_proxy, tmp_path)
    upstream.push(synth.Reply(tool_calls=CALLS[:1]))
    client = anthropic_client(url)
    tools: Any = [{"name": "send_money", "input_schema": _schema()}]
    messages: Any = [{"role": "user", "content": "hi"}]
    if stream:
        with client.messages.stream(
            model="claude", max_tokens=100, messages=messages, tools=tools
        ) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(
            model="claude", max_tokens=100, messages=messages, tools=tools
        )
    assert [b.type for b in message.content] == ["text"]
    assert message.stop_reason == "end_turn"


def test_an_allowed_answer_is_untouched(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    url = _proxy(make_proxy, tmp_path)
    upstream.push(synth.Reply(text="ok", tool_calls=CALLS[1:2]))
    tools: Any = [{"type": "function", "function": {"name": "get_balance"}}]
    completion = openai_client(url).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], tools=tools
    )
    assert completion.choices[0].message.content == "ok"
    assert _audited(tmp_path, 1) == [{"tool_guard": "allow"}]


def test_a_responses_call_of_a_built_in_client_tool_is_judged_by_its_type(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    url = make_proxy(GUARD.format(db=tmp_path / "audit.db") + "      allow: [get_balance]\n")
    shell = {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_9", "status": "completed",
             "action": {"type": "exec", "command": ["rm", "-rf", "/"], "env": {}}}  # fmt: skip
    answer = synth.response_object("m", synth.Reply(text="Cleaning up."))
    upstream.push(Status(200, {**answer, "output": [*answer["output"], shell]}))
    tools: Any = [{"type": "local_shell"}, {"type": "function", "name": "get_balance"}]
    response = openai_client(url).responses.create(model="m", input="tidy", tools=tools)
    assert [i.type for i in response.output] == ["message", "message"]
    assert response.output_text == (
        "Cleaning up.hookgate refused a call of local_shell: the tool 'local_shell' is not allowed"
    )


def _legacy_events(name: str, arguments: str) -> list[bytes]:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({**head, 'choices': [choice]})}\n\n".encode()

    return [
        chunk({"role": "assistant", "content": None,
               "function_call": {"name": name, "arguments": ""}}),
        chunk({"function_call": {"arguments": arguments[:10]}}),
        chunk({"function_call": {"arguments": arguments[10:]}}),
        chunk({}, "function_call"),
        b"data: [DONE]\n\n",
    ]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("name", "refused"), [("send_money", True), ("get_balance", False)])
def test_a_legacy_function_call_is_checked_too(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, stream: bool,
    name: str, refused: bool,
) -> None:  # fmt: skip
    """The deprecated ``functions`` parameter: the model answers ``message.function_call``
    (streamed: ``delta.function_call``); a denied one never reaches the client."""
    url = _proxy(make_proxy, tmp_path)
    arguments = '{"recipient": "DE89", "amount": 100}'
    if stream:
        upstream.push(Events(_legacy_events(name, arguments)))
    else:
        message = {"role": "assistant", "content": None,
                   "function_call": {"name": name, "arguments": arguments}}  # fmt: skip
        upstream.push(Raw(json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "function_call"}],
        }).encode()))  # fmt: skip
    client = openai_client(url)
    functions: Any = [{"name": n, "parameters": _schema()} for n in OFFERED]
    messages: Any = [{"role": "user", "content": "pay the bill"}]
    if stream:
        chunks = list(
            client.chat.completions.create(
                model="m", messages=messages, functions=functions, stream=True
            )
        )
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        called = "".join(d.function_call.arguments or "" for d in deltas if d.function_call)
        names = [d.function_call.name for d in deltas if d.function_call and d.function_call.name]
        content = "".join(d.content or "" for d in deltas)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
    else:
        choice = client.chat.completions.create(
            model="m", messages=messages, functions=functions
        ).choices[0]
        call = choice.message.function_call
        called, names = (call.arguments, [call.name]) if call else ("", [])
        content, finish = choice.message.content or "", choice.finish_reason
    if refused:
        assert (called, names, finish) == ("", [], "stop")
        assert content == REFUSED[0]
        assert _audited(tmp_path, 1) == [{"tool_guard": "block"}]
    else:
        assert json.loads(called) == json.loads(arguments)
        assert (names, finish) == ([name], "function_call")
        assert content == ""
