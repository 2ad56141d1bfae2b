"""An Anthropic Messages client served by an OpenAI-compatible model: requests, answers,
streams and errors, with the answers parsed by the real ``anthropic`` SDK."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import anthropic
import orjson
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from hookgate.errors import InvalidRequest, UpstreamBadResponse
from hookgate.wire import sse
from hookgate.wire.translate import messages_to_chat
from tests.wire.translate.clients import anthropic_client

USER = {"role": "user", "content": "hi"}
EVENT = TypeAdapter[RawMessageStreamEvent](RawMessageStreamEvent)


def body(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "gpt-5", "max_tokens": 1024, "messages": list(messages), **fields}


# -- requests --------------------------------------------------------------------------


def test_a_claude_code_request_is_translated() -> None:
    """The top-level fields Claude Code always sends (docs/notes/claude-code-wire.md)."""
    user_id = orjson.dumps({"device_id": "d" * 64, "session_id": "5f1c"}).decode()
    request = {
        "model": "claude-opus-4-8",
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>date</system-reminder>"},
                {"type": "text", "text": "say hi", "cache_control": {"type": "ephemeral"}},
            ]},
            {"role": "system", "content": "Agent types: ..."},
        ],
        "system": [
            {"type": "text", "text": "billing line"},
            {"type": "text", "text": "You are Claude Code.",
             "cache_control": {"type": "ephemeral"}},
        ],
        "tools": [{"name": "Bash", "description": "Run a command",
                   "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                                    "required": ["command"], "additionalProperties": False},
                   "cache_control": {"type": "ephemeral"}}],
        "metadata": {"user_id": user_id},
        "max_tokens": 64000,
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"},
        "stream": True,
    }  # fmt: skip
    assert messages_to_chat.request(request) == {
        "model": "claude-opus-4-8",
        "messages": [
            {"role": "system", "content": "billing line\n\nYou are Claude Code."},
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>date</system-reminder>"},
                {"type": "text", "text": "say hi"},
            ]},
            {"role": "system", "content": "Agent types: ..."},
        ],
        "max_tokens": 64000,
        "user": hashlib.sha256(user_id.encode()).hexdigest(),
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {
            "name": "Bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                           "required": ["command"], "additionalProperties": False},
            "description": "Run a command",
        }}],
        "reasoning_effort": "high",
    }  # fmt: skip


def test_sampling_fields_and_hints() -> None:
    request = body(
        USER,
        system="Be brief.",
        stop_sequences=["END"],
        temperature=0.3,
        top_p=0.8,
        metadata={"user_id": "u-1"},
        stream=False,
        cache_control={"type": "ephemeral"},
        service_tier="auto",
        speed="fast",
        diagnostics={"previous_message_id": "msg_1"},
        workspace_id="wrkspc_1",
        user_profile_id="up_1",
    )
    assert messages_to_chat.request(request) == {
        "model": "gpt-5",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "max_tokens": 1024,
        "temperature": 0.3,
        "top_p": 0.8,
        "stop": ["END"],
        "user": "u-1",
    }


def test_a_tool_round_trip_with_parallel_calls_and_thinking() -> None:
    request = body(
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Two calls.", "signature": "EqQBCkYI"},
            {"type": "redacted_thinking", "data": "EmwKAhgB"},
            {"type": "text", "text": "Checking both."},
            {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_b", "name": "weather", "input": {"city": "Oslo"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "18C",
             "cache_control": {"type": "ephemeral"}},
            {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": True,
             "content": [{"type": "text", "text": "Oslo: "}, {"type": "text", "text": "timeout"}]},
            {"type": "text", "text": "Retry Oslo."},
        ]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_c"}]},
        tools=[{"name": "weather", "input_schema": {"type": "object"}, "type": "custom",
                "strict": True}],
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
    )  # fmt: skip
    out = messages_to_chat.request(request)
    assert out["messages"] == [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "content": "Checking both.", "tool_calls": [
            {"id": "toolu_a", "type": "function",
             "function": {"name": "weather", "arguments": '{"city":"Paris"}'}},
            {"id": "toolu_b", "type": "function",
             "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}},
        ]},
        {"role": "tool", "tool_call_id": "toolu_a", "content": "18C"},
        {"role": "tool", "tool_call_id": "toolu_b", "content": "Oslo: \n\ntimeout"},
        {"role": "user", "content": "Retry Oslo."},
        {"role": "tool", "tool_call_id": "toolu_c", "content": ""},
    ]  # fmt: skip
    assert out["tools"] == [
        {"type": "function",
         "function": {"name": "weather", "parameters": {"type": "object"}, "strict": True}}
    ]  # fmt: skip
    assert (out["tool_choice"], out["parallel_tool_calls"]) == ("required", False)


def test_images_and_text_documents_become_parts() -> None:
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                        "data": "The report."}, "title": "Q3",
         "context": "From finance."},
        {"type": "text", "text": "Compare."},
    ]  # fmt: skip
    assert messages_to_chat.request(body({"role": "user", "content": content}))["messages"] == [
        {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
            {"type": "text", "text": "Q3\n\nFrom finance.\n\nThe report."},
            {"type": "text", "text": "Compare."},
        ]}
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        (
            {"type": "tool", "name": "weather"},
            {"type": "function", "function": {"name": "weather"}},
        ),
    ],
)
def test_tool_choice(choice: dict[str, Any], expected: Any) -> None:
    tools = [{"name": "weather", "input_schema": {"type": "object"}}]
    out = messages_to_chat.request(body(USER, tools=tools, tool_choice=choice))
    assert out["tool_choice"] == expected and "parallel_tool_calls" not in out


@pytest.mark.parametrize(
    ("thinking", "effort", "expected"),
    [
        ({"type": "enabled", "budget_tokens": 1024}, None, "low"),
        ({"type": "enabled", "budget_tokens": 2048}, None, "medium"),
        ({"type": "enabled", "budget_tokens": 16383}, None, "medium"),
        ({"type": "enabled", "budget_tokens": 31999}, None, "high"),
        ({"type": "enabled", "budget_tokens": 31999}, "low", "low"),
        ({"type": "adaptive"}, None, None),
        ({"type": "adaptive", "display": "summarized"}, "max", "max"),
        ({"type": "disabled"}, "high", None),
        (None, "medium", "medium"),
    ],
)
def test_thinking_and_effort_become_reasoning_effort(
    thinking: dict[str, Any] | None, effort: str | None, expected: str | None
) -> None:
    request = body(USER, thinking=thinking, output_config={"effort": effort})
    assert messages_to_chat.request(request).get("reasoning_effort") == expected


def test_an_output_format_becomes_a_strict_json_schema_response_format() -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}},
              "required": ["title"], "additionalProperties": False}  # fmt: skip
    request = body(USER, output_config={"format": {"type": "json_schema", "schema": schema}})
    assert messages_to_chat.request(request)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }


def test_a_short_user_id_is_sent_as_it_is() -> None:
    out = messages_to_chat.request(body(USER, metadata={"user_id": "x" * 64}))
    assert out["user"] == "x" * 64


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "param", "code", "message"),
    [
        ({"top_k": 40}, "top_k", "unsupported_parameter",
         "'top_k' cannot be sent to an OpenAI-compatible model: it has no top-k sampling"),
        ({"container": "cntr_1"}, "container", "unsupported_parameter", "containers"),
        ({"mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}]}, "mcp_servers",
         "unsupported_parameter", "MCP connector"),
        ({"inference_geo": "us"}, "inference_geo", "unsupported_parameter", "region"),
        ({"betas": ["x"]}, "betas", "unknown_parameter",
         "unknown parameter 'betas': hookgate cannot translate it for an OpenAI-compatible model"),
        ({"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}},
         "context_management.edits[0].type", "unsupported_parameter",
         "context_management edit 'clear_tool_uses_20250919' cannot be applied"),
        ({"output_config": {"task_budget": 5}}, "output_config.task_budget",
         "unsupported_parameter", "'output_config.task_budget' cannot be sent"),
        ({"output_config": {"format": {"type": "regex"}}}, "output_config.format",
         "unsupported_value", "must be a json_schema format"),
        ({"thinking": {"type": "deep"}}, "thinking.type", "unsupported_value",
         "thinking type 'deep' cannot be sent"),
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0].type",
         "unsupported_value", "the Anthropic tool type 'web_search_20250305' cannot be sent"),
        ({"tools": [{"type": "bash_20250124", "name": "bash"}]}, "tools[0].type",
         "unsupported_value", "'bash_20250124'"),
        ({"tool_choice": {"type": "auto_please"}}, "tool_choice.type", "unsupported_value",
         "tool_choice type 'auto_please' cannot be sent"),
        ({"metadata": "user-1"}, "metadata", "invalid_request",
         "Input should be a valid dictionary"),
    ],
)  # fmt: skip
def test_fields_the_model_cannot_honour_are_refused(
    fields: dict[str, Any], param: str, code: str, message: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        messages_to_chat.request(body(USER, **fields))
    assert (caught.value.param, caught.value.code) == (param, code)
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("request_body", "param", "text"),
    [
        ({"model": "m", "max_tokens": 1, "messages": {"role": "user"}}, "messages",
         "messages: Input should be a valid list"),
        (body("hi"), "messages[0]", "messages[0]: Input should be a valid dictionary"),
        (body(USER, tools=["Bash"]), "tools[0]", "tools[0]: Input should be a valid dictionary"),
    ],
)  # fmt: skip
def test_malformed_requests_are_refused_naming_the_place(
    request_body: dict[str, Any], param: str, text: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        messages_to_chat.request(request_body)
    assert caught.value.param == param and text in caught.value.message


@pytest.mark.parametrize(
    ("message", "param", "text"),
    [
        ({"role": "user", "content": [{"type": "document", "source": {
            "type": "base64", "media_type": "application/pdf", "data": "JVBER"}}]},
         "messages[0].content[0].type",
         "messages[0].content[0]: a block of type 'document' with a 'base64' source cannot "
         "be sent"),
        ({"role": "user", "content": [{"type": "image", "source": {
            "type": "file", "file_id": "file_1"}}]},
         "messages[0].content[0].type", "a block of type 'image' with a 'file' source"),
        ({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]}]},
         "messages[0].content[0].content[0].type", "a block of type 'image' cannot be sent"),
        ({"role": "user", "content": [{"type": "search_result", "source": "s", "title": "t",
                                       "content": []}]},
         "messages[0].content[0].type", "a block of type 'search_result' cannot be sent"),
        ({"role": "assistant", "content": [{"type": "server_tool_use", "id": "srvtoolu_1",
                                            "name": "web_search", "input": {}}]},
         "messages[0].content[0].type", "a block of type 'server_tool_use' cannot be sent"),
        ({"role": "assistant", "content": [{"type": "web_search_tool_result",
                                            "tool_use_id": "srvtoolu_1", "content": []}]},
         "messages[0].content[0].type", "a block of type 'web_search_tool_result' cannot be sent"),
        ({"role": "system", "content": [{"type": "image", "source": {}}]},
         "messages[0].content[0].type", "a block of type 'image' cannot be sent"),
        ({"role": "tool", "content": "x"}, "messages[0].role", "unexpected role 'tool'"),
        ({"role": "user", "content": 7}, "messages[0].content",
         "Input should be a string or a list of blocks"),
    ],
)  # fmt: skip
def test_content_the_model_cannot_take_is_refused_naming_it(
    message: dict[str, Any], param: str, text: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        messages_to_chat.request(body(message))
    assert caught.value.param == param
    assert text in caught.value.message


# -- answers -------------------------------------------------------------------------------


def completion(
    message: dict[str, Any], finish_reason: str = "stop", **usage: Any
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-5-2025-08-07",
        "choices": [{"index": 0, "message": {"role": "assistant", **message},
                     "finish_reason": finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120, **usage},
    }  # fmt: skip


def test_an_answer_becomes_a_message_with_cache_usage() -> None:
    answer = completion(
        {"content": "It is sunny.", "refusal": None, "reasoning_content": "hmm"},
        prompt_tokens_details={"cached_tokens": 64},
    )
    message = Message.model_validate(messages_to_chat.response(answer, model="claude-alias"))
    assert message.id == "msg_chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"
    assert message.model == "claude-alias"
    assert [b.model_dump(exclude_none=True) for b in message.content] == [
        {"type": "text", "text": "It is sunny."}
    ]
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)
    assert message.usage.model_dump(exclude_none=True) == {
        "input_tokens": 36,
        "cache_read_input_tokens": 64,
        "cache_creation_input_tokens": 0,
        "output_tokens": 20,
    }


def test_parallel_tool_calls_become_tool_use_blocks() -> None:
    calls = [
        {"id": "call_a", "type": "function",
         "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "now", "arguments": ""}},
    ]  # fmt: skip
    answer = completion({"content": None, "tool_calls": calls}, "tool_calls")
    message = Message.model_validate(messages_to_chat.response(answer, model="m"))
    assert message.stop_reason == "tool_use"
    assert [b.model_dump(exclude_none=True) for b in message.content] == [
        {"type": "tool_use", "id": "call_a", "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "call_b", "name": "now", "input": {}},
    ]


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("tool_calls", "tool_use"),
     ("function_call", "tool_use"), ("content_filter", "refusal"), ("other", "end_turn")],
)  # fmt: skip
def test_finish_reasons(finish_reason: str, stop_reason: str) -> None:
    answer = completion({"content": "x"}, finish_reason)
    assert messages_to_chat.response(answer, model="m")["stop_reason"] == stop_reason


def test_a_refusal_is_text_with_stop_reason_refusal() -> None:
    answer = completion({"content": None, "refusal": "I can't help with that."})
    message = Message.model_validate(messages_to_chat.response(answer, model="m"))
    assert message.stop_reason == "refusal"
    assert message.content[0].model_dump(exclude_none=True) == {
        "type": "text",
        "text": "I can't help with that.",
    }


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ({"id": "x", "choices": []}, "no choice"),
        (completion({"tool_calls": [{"id": "c", "type": "function",
                                     "function": {"name": "f", "arguments": "{oops"}}]}),
         "not a JSON object"),
        (completion({"tool_calls": [{"id": "c", "type": "function",
                                     "function": {"name": "f", "arguments": "[1]"}}]}),
         "not a JSON object"),
    ],
)  # fmt: skip
def test_a_broken_answer_is_a_bad_upstream_response(answer: dict[str, Any], text: str) -> None:
    with pytest.raises(UpstreamBadResponse, match=text):
        messages_to_chat.response(answer, model="m")


# -- streams -------------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None,
          **extra: Any) -> bytes:  # fmt: skip
    choices = [] if delta is None else [
        {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
    ]  # fmt: skip
    data = {"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-5", "choices": choices, **extra}  # fmt: skip
    return sse.encode(data)


def pieces(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def chat_stream() -> list[bytes]:
    """A streamed answer: text then two parallel tool calls, in small deltas."""
    blocks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    blocks += [chunk({"content": p}) for p in pieces("Checking both, é ☀.", 2)]
    blocks.append(chunk({"reasoning_content": "ignored"}))
    for index, (call_id, city) in enumerate([("call_a", "Paris"), ("call_b", "Oslo")]):
        head = {"index": index, "id": call_id, "type": "function",
                "function": {"name": "weather", "arguments": ""}}  # fmt: skip
        blocks.append(chunk({"tool_calls": [head]}))
        blocks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
            for p in pieces(f'{{"city": "{city}"}}', 4)
        ]
    blocks.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 500, "completion_tokens": 42, "total_tokens": 542,
             "prompt_tokens_details": {"cached_tokens": 384}}  # fmt: skip
    blocks.append(chunk(usage=usage))
    blocks.append(sse.DONE)
    return blocks


def translated(blocks: Iterable[bytes]) -> list[bytes]:
    translator = messages_to_chat.StreamTranslator(model="claude-alias")
    out = []
    for block in blocks:
        out += translator.feed(block)
    assert translator.finished
    return out


def events(blocks: list[bytes]) -> list[dict[str, Any]]:
    """Each block's data, checked: its ``event:`` names its type, and the SDK parses it."""
    out = []
    for block in blocks:
        event = sse.parse(block)
        data = event.json()
        assert isinstance(data, dict) and event.event == data["type"]
        if data["type"] != "error":
            EVENT.validate_python(data)
        out.append(data)
    return out


def test_a_stream_becomes_events_the_anthropic_sdk_accumulates() -> None:
    blocks = translated(chat_stream())
    kinds = [e["type"] for e in events(blocks)]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 3
    assert kinds.count("content_block_delta") > 15  # the small deltas stay small

    client = anthropic_client(b"".join(blocks))
    with client.messages.stream(model="claude-alias", max_tokens=100, messages=[USER]) as stream:
        message = stream.get_final_message()
    assert message.model == "claude-alias" and message.id == "msg_chatcmpl-7"
    assert [b.model_dump(exclude_none=True) for b in message.content] == [
        {"type": "text", "text": "Checking both, é ☀."},
        {"type": "tool_use", "id": "call_a", "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "call_b", "name": "weather", "input": {"city": "Oslo"}},
    ]
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (116, 384)
    assert (message.usage.cache_creation_input_tokens, message.usage.output_tokens) == (0, 42)


def test_the_stream_ends_at_the_usage_chunk_and_ignores_what_follows() -> None:
    translator = messages_to_chat.StreamTranslator(model="m")
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    out = translator.feed(chunk({"content": "Hi"}))
    out += translator.feed(chunk({}, "length", usage=usage))
    assert translator.finished
    assert translator.feed(sse.DONE) == []
    assert [e["type"] for e in events(out)] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]  # fmt: skip
    assert events(out)[-2]["delta"]["stop_reason"] == "max_tokens"


def test_without_usage_the_stream_ends_at_done() -> None:
    out = translated([chunk({"role": "assistant"}), chunk({}, "stop"), sse.DONE])
    data = events(out)
    assert [e["type"] for e in data] == ["message_start", "message_delta", "message_stop"]
    assert data[1]["usage"] == {
        "input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "output_tokens": 0,
    }


def test_an_error_chunk_becomes_an_error_event_the_sdk_raises() -> None:
    translator = messages_to_chat.StreamTranslator(model="m")
    out = translator.feed(chunk({"content": "Hel"}))
    error = {"message": "The server had an error", "type": "server_error", "code": None}
    out += translator.feed(sse.encode({"error": error}))
    assert translator.finished
    assert events(out)[-1] == {
        "type": "error",
        "error": {"type": "api_error", "message": "The server had an error"},
    }
    client = anthropic_client(b"".join(out))
    with (
        pytest.raises(anthropic.APIStatusError, match="The server had an error"),
        client.messages.stream(model="m", max_tokens=10, messages=[USER]) as stream,
    ):
        stream.get_final_message()


def test_interleaved_tool_arguments_are_a_bad_upstream_response() -> None:
    translator = messages_to_chat.StreamTranslator(model="m")
    for index in (0, 1):
        head = {"index": index, "id": f"c{index}", "function": {"name": "f", "arguments": "{"}}
        translator.feed(chunk({"tool_calls": [head]}))
    with pytest.raises(UpstreamBadResponse, match="tool call 0's arguments arrived after"):
        translator.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}))


def test_a_chunk_that_is_not_json_is_a_bad_upstream_response() -> None:
    translator = messages_to_chat.StreamTranslator(model="m")
    assert translator.feed(b": OPENROUTER PROCESSING\n\n") == []
    with pytest.raises(UpstreamBadResponse):
        translator.feed(b"data: {oops\n\n")


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "invalid_request_error"), (401, "authentication_error"), (403, "permission_error"),
     (404, "not_found_error"), (413, "request_too_large"), (429, "rate_limit_error"),
     (500, "api_error"), (503, "api_error"), (529, "overloaded_error")],
)  # fmt: skip
def test_openai_errors_become_anthropic_errors(status: int, kind: str) -> None:
    error = {"error": {"message": "Nope.", "type": "x", "param": None, "code": None}}
    out = messages_to_chat.error(status, orjson.dumps(error))
    assert orjson.loads(out) == {"type": "error", "error": {"type": kind, "message": "Nope."}}


@pytest.mark.parametrize("body", [b"<html>Bad Gateway</html>", b'{"detail": "x"}'])
def test_other_error_bodies_pass_unchanged(body: bytes) -> None:
    assert messages_to_chat.error(502, body) == body
