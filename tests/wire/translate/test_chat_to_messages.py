"""A Chat Completions client served by an Anthropic model: requests, answers, streams
and errors, with the answers parsed by the real ``openai`` SDK."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import openai
import orjson
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hookgate.errors import InvalidRequest, UpstreamBadResponse
from hookgate.wire import sse
from hookgate.wire.translate import chat_to_messages
from tests.wire.translate.clients import openai_client

SIGNATURE = "EqQBCkYIBxgCKkCtx6fEjzZeZrx9N7Qi40vReeIqNPfqMwkD+/XZeQsSUE88NSjt=="
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def translate(body: dict[str, Any], default_max_tokens: int = 4096) -> dict[str, Any]:
    return chat_to_messages.request(body, default_max_tokens=default_max_tokens)


def chat(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet", "messages": list(messages), **fields}


USER = {"role": "user", "content": "hi"}


# -- requests --------------------------------------------------------------------------


def test_fields_are_translated_and_hints_dropped() -> None:
    body = chat(
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "Use metric units."}]},
        {"role": "user", "content": "Weather?", "name": "ann"},
        max_completion_tokens=300,
        max_tokens=99,
        stop="END",
        temperature=0.2,
        top_p=0.9,
        user="user-7",
        stream=True,
        stream_options={"include_usage": True},
        store=True,
        metadata={"team": "a"},
        service_tier="auto",
        seed=3,
        prompt_cache_key="k",
        n=1,
        logprobs=False,
        presence_penalty=0,
        response_format={"type": "text"},
        modalities=["text"],
        logit_bias={},
    )
    assert translate(body) == {
        "model": "claude-sonnet",
        "system": [
            {"type": "text", "text": "Be brief."},
            {"type": "text", "text": "Use metric units."},
        ],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather?"}]}],
        "max_tokens": 300,
        "stop_sequences": ["END"],
        "temperature": 0.2,
        "top_p": 0.9,
        "metadata": {"user_id": "user-7"},
        "stream": True,
    }


def test_max_tokens_falls_back_to_max_tokens_then_the_default() -> None:
    assert translate(chat(USER, max_tokens=77))["max_tokens"] == 77
    assert translate(chat(USER), default_max_tokens=1234)["max_tokens"] == 1234
    assert translate(chat(USER, stop=["a", "b"]))["stop_sequences"] == ["a", "b"]
    both = chat(USER, user="old", safety_identifier="new")
    assert translate(both)["metadata"] == {"user_id": "new"}


def test_a_system_message_anywhere_joins_the_top_level_system_keeping_cache_control() -> None:
    cached = {"type": "text", "text": "Long rules.", "cache_control": {"type": "ephemeral"}}
    body = chat(
        {"role": "system", "content": [cached]},
        USER,
        {"role": "assistant", "content": "hello"},
        {"role": "system", "content": "Now answer in French."},
        {"role": "user", "content": "ok"},
    )
    out = translate(body)
    assert out["system"] == [cached, {"type": "text", "text": "Now answer in French."}]
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]


def test_a_multi_turn_tool_round_trip_with_parallel_calls_merges_the_results() -> None:
    calls = [
        {"id": "call_a", "type": "function",
         "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_b", "type": "function",
         "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}},
    ]  # fmt: skip
    body = chat(
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_a", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "4C"}]},
        {"role": "user", "content": "And tomorrow?"},
        {"role": "assistant", "content": None, "tool_calls": [calls[0]]},
        {"role": "tool", "tool_call_id": "call_a", "content": "20C"},
        tools=[WEATHER],
    )
    out = translate(body)
    assert out["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Oslo?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "call_a", "name": "weather",
                 "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_b", "name": "weather",
                 "input": {"city": "Oslo"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": "18C"},
                {"type": "tool_result", "tool_use_id": "call_b",
                 "content": [{"type": "text", "text": "4C"}]},
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_a", "name": "weather",
                         "input": {"city": "Paris"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_a",
                                      "content": "20C"}]},
    ]  # fmt: skip
    assert out["tools"] == [
        {
            "name": "weather",
            "description": "The weather in a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]


def test_consecutive_user_messages_are_one_turn_and_empty_text_is_left_out() -> None:
    body = chat(
        {"role": "user", "content": "one"},
        {
            "role": "user",
            "content": [{"type": "text", "text": ""}, {"type": "text", "text": "two"}],
        },
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": "three"},
    )
    assert translate(body)["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "three"}]},
    ]


def test_images_become_base64_or_url_sources() -> None:
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=",
                                            "detail": "high"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"},
         "cache_control": {"type": "ephemeral"}},
    ]  # fmt: skip
    assert translate(chat({"role": "user", "content": parts}))["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"},
         "cache_control": {"type": "ephemeral"}},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        ("auto", None, {"type": "auto"}),
        ("required", None, {"type": "any"}),
        ("none", None, {"type": "none"}),
        ({"type": "function", "function": {"name": "weather"}}, None,
         {"type": "tool", "name": "weather"}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
        ("none", False, {"type": "none"}),
        (None, True, None),
    ],
)  # fmt: skip
def test_tool_choice(choice: Any, parallel: bool | None, expected: dict[str, Any] | None) -> None:
    body = chat(USER, tools=[WEATHER], tool_choice=choice, parallel_tool_calls=parallel)
    assert translate(body).get("tool_choice") == expected


def test_a_tool_without_parameters_gets_an_empty_object_schema_and_keeps_strict() -> None:
    tool = {"type": "function", "function": {"name": "now", "strict": True}}
    assert translate(chat(USER, tools=[tool]))["tools"] == [
        {"name": "now", "input_schema": {"type": "object", "properties": {}}, "strict": True}
    ]


@pytest.mark.parametrize(
    ("effort", "max_tokens", "thinking", "expected_max"),
    [
        ("minimal", 64000, {"type": "enabled", "budget_tokens": 1024}, 64000),
        ("low", None, {"type": "enabled", "budget_tokens": 2048}, 4096),
        ("medium", 1000, {"type": "enabled", "budget_tokens": 8192}, 9216),
        ("high", 20000, {"type": "enabled", "budget_tokens": 24576}, 25600),
        ("none", 500, {"type": "disabled"}, 500),
    ],
)
def test_reasoning_effort_sets_a_thinking_budget_with_room_for_the_answer(
    effort: str, max_tokens: int | None, thinking: dict[str, Any], expected_max: int
) -> None:
    out = translate(chat(USER, reasoning_effort=effort, max_completion_tokens=max_tokens))
    assert (out["thinking"], out["max_tokens"]) == (thinking, expected_max)


# -- thinking blocks, byte for byte --------------------------------------------------------


def anthropic_message(*content: dict[str, Any], stop_reason: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 40},
    }


def test_thinking_blocks_survive_a_chat_round_trip_byte_for_byte() -> None:
    thinking = {"type": "thinking", "thinking": "The user wants Paris. ☀", "signature": SIGNATURE}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    tool_use = {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {"city": "Paris"}}
    answer = chat_to_messages.response(
        anthropic_message(thinking, redacted, tool_use, stop_reason="tool_use")
    )
    assistant = (
        ChatCompletion.model_validate(answer).choices[0].message.model_dump(exclude_none=True)
    )
    assert assistant["reasoning_content"] == "The user wants Paris. ☀"
    follow_up = chat(
        {"role": "user", "content": "Weather in Paris?"},
        assistant,
        {"role": "tool", "tool_call_id": "toolu_01", "content": "18C"},
        reasoning_effort="low",
    )
    sent = translate(follow_up)["messages"][1]["content"]
    assert orjson.dumps(sent[:2]) == orjson.dumps([thinking, redacted])
    assert sent[2] == tool_use


def test_reasoning_content_without_its_blocks_is_not_sent() -> None:
    assistant = {"role": "assistant", "content": "Paris.", "reasoning_content": "hmm"}
    out = translate(chat(USER, assistant))
    assert out["messages"][1]["content"] == [{"type": "text", "text": "Paris."}]


# -- answers -------------------------------------------------------------------------------


def test_an_answer_becomes_a_chat_completion_with_cache_usage() -> None:
    message = anthropic_message(
        {"type": "text", "text": "It is "},
        {"type": "text", "text": "sunny."},
        stop_reason="end_turn",
    )
    message["usage"] = {
        "input_tokens": 20,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 900,
        "output_tokens": 7,
        "output_tokens_details": {"thinking_tokens": 3},
    }
    completion = ChatCompletion.model_validate(chat_to_messages.response(message))
    assert completion.id == "chatcmpl-msg_01XFDUDYJgAACzvnptvVoYEL"
    assert completion.model == "claude-sonnet-4-5"
    assert completion.choices[0].message.content == "It is sunny."
    assert completion.choices[0].message.tool_calls is None
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens_details is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (1020, 7, 1027)
    assert usage.prompt_tokens_details.cached_tokens == 900
    assert usage.prompt_tokens_details.cache_write_tokens == 100
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 3


def test_tool_use_blocks_become_tool_calls_with_compact_arguments() -> None:
    message = anthropic_message(
        {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_b", "name": "weather", "input": {"city": "Oslo"}},
        stop_reason="tool_use",
    )
    choice = ChatCompletion.model_validate(chat_to_messages.response(message)).choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("toolu_a", "weather", '{"city":"Paris"}'),
        ("toolu_b", "weather", '{"city":"Oslo"}'),
    ]


@pytest.mark.parametrize(
    ("stop_reason", "finish_reason"),
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("pause_turn", "stop"),
     ("max_tokens", "length"), ("model_context_window_exceeded", "length"),
     ("tool_use", "tool_calls"), ("refusal", "content_filter")],
)  # fmt: skip
def test_stop_reasons(stop_reason: str, finish_reason: str) -> None:
    message = anthropic_message({"type": "text", "text": "x"}, stop_reason=stop_reason)
    completion = ChatCompletion.model_validate(chat_to_messages.response(message))
    assert completion.choices[0].finish_reason == finish_reason


def test_an_answer_without_content_is_a_bad_upstream_response() -> None:
    with pytest.raises(UpstreamBadResponse, match="no 'content' array"):
        chat_to_messages.response({"type": "message"})


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "param", "message"),
    [
        ({"n": 2}, "n", "'n' cannot be sent to an Anthropic model: it answers with one choice"),
        ({"logprobs": True}, "logprobs", "no log probabilities"),
        ({"top_logprobs": 3}, "top_logprobs", "no log probabilities"),
        ({"audio": {"voice": "alloy", "format": "mp3"}}, "audio", "it produces no audio"),
        ({"modalities": ["text", "audio"]}, "modalities", "it produces no audio"),
        ({"response_format": {"type": "json_object"}}, "response_format", "no JSON mode"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
         "response_format", "no JSON mode"),
        ({"prediction": {"type": "content", "content": "x"}}, "prediction", "predicted output"),
        ({"logit_bias": {"50256": -100}}, "logit_bias", "no logit bias"),
        ({"presence_penalty": 0.5}, "presence_penalty", "no presence penalty"),
        ({"frequency_penalty": -1}, "frequency_penalty", "no frequency penalty"),
        ({"verbosity": "low"}, "verbosity", "no verbosity setting"),
        ({"web_search_options": {"search_context_size": "low"}}, "web_search_options",
         "web search tool"),
        ({"functions": [{"name": "f"}]}, "functions", "use 'tools'"),
        ({"function_call": "auto"}, "function_call", "use 'tool_choice'"),
        ({"moderation": {"mode": "block"}}, "moderation", "no moderation setting"),
    ],
)  # fmt: skip
def test_fields_the_model_cannot_honour_are_refused(
    fields: dict[str, Any], param: str, message: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        translate(chat(USER, **fields))
    assert caught.value.param == param
    assert caught.value.code == "unsupported_parameter"
    assert f"'{param}' cannot be sent to an Anthropic model" in caught.value.message
    assert message in caught.value.message


def test_an_unknown_field_is_refused_by_name() -> None:
    with pytest.raises(InvalidRequest) as caught:
        translate(chat(USER, top_k=5))
    assert (caught.value.param, caught.value.code) == ("top_k", "unknown_parameter")
    assert caught.value.message == (
        "unknown parameter 'top_k': hookgate cannot translate it for an Anthropic model"
    )


TOOL_CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        (chat(USER, temperature=1.5), "temperature", "'temperature' 1.5 cannot be sent to an "
         "Anthropic model: its range is 0 to 1"),
        (chat(USER, reasoning_effort="extreme"), "reasoning_effort",
         "'reasoning_effort' 'extreme' has no Anthropic thinking budget (one of none, minimal, "
         "low, medium, high, xhigh, max)"),
        (chat(USER, tools=[{"type": "custom", "custom": {"name": "grammar"}}]), "tools[0].type",
         "tools[0]: a tool of type 'custom' cannot be sent to an Anthropic model (only "
         "function tools)"),
        (chat(USER, tools=[WEATHER], tool_choice={"type": "allowed_tools", "allowed_tools": {}}),
         "tool_choice", "'tool_choice' 'allowed_tools' cannot be sent to an Anthropic model"),
        (chat({"role": "user", "content": [{"type": "file", "file": {"file_id": "f"}}]}),
         "messages[0].content[0].type", "messages[0].content[0]: a content part of type 'file' "
         "cannot be sent to an Anthropic model"),
        (chat({"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}),
         "messages[0].content[0].type", "a content part of type 'input_audio' cannot be sent"),
        (chat({"role": "user", "content": [{"type": "image_url",
                                            "image_url": {"url": "ftp://x/y.png"}}]}),
         "messages[0].content[0].image_url.url",
         "an image URL must be http(s) or a base64 data: URL"),
        (chat({"role": "system", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}),
         "messages[0].content[0].type", "a content part of type 'image_url' cannot be sent"),
        (chat(USER, {"role": "assistant", "tool_calls": [TOOL_CALL]}),
         "messages[1].tool_calls[0].function.arguments",
         "messages[1].tool_calls[0].function.arguments must be a JSON object, as a string"),
        (chat(USER, {"role": "assistant", "tool_calls": [{**TOOL_CALL, "type": "custom"}]}),
         "messages[1].tool_calls[0].type", "a tool call of type 'custom' cannot be sent"),
        (chat(USER, {"role": "assistant", "audio": {"id": "a1"}}), "messages[1].audio",
         "an assistant 'audio' cannot be sent"),
        (chat(USER, {"role": "assistant", "thinking_blocks": [{"type": "text", "text": "x"}]}),
         "messages[1].thinking_blocks",
         "must be an array of Anthropic thinking or redacted_thinking blocks"),
        (chat({"role": "function", "name": "f", "content": "x"}), "messages[0].role",
         "messages[0]: role 'function' cannot be sent to an Anthropic model"),
        ({"model": "m", "messages": "hi"}, "messages", "'messages' must be an array"),
        (chat("hi"), "messages[0]", "messages[0] must be an object"),
        (chat({"role": "user", "content": 7}), "messages[0].content",
         "messages[0].content must be a string or an array of content parts"),
        (chat({"role": "user", "content": [{"type": "image_url", "image_url": {}}]}),
         "messages[0].content[0]", "messages[0].content[0].image_url.url must be a string"),
    ],
)  # fmt: skip
def test_content_the_model_cannot_take_is_refused_naming_it(
    body: dict[str, Any], param: str, message: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        translate(body)
    assert caught.value.param == param
    assert message in caught.value.message


# -- streams -------------------------------------------------------------------------------


def pieces(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def anthropic_stream() -> list[dict[str, Any]]:
    """A streamed answer: thinking, text, two parallel tool calls, all in small deltas."""
    usage = {"input_tokens": 30, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 2000, "output_tokens": 1}  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**anthropic_message(), "stop_reason": None,
                                              "usage": usage}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "ping"},
    ]  # fmt: skip
    events += [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": p},
        }
        for p in pieces("Two cities, two calls.")
    ]
    events += [
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "signature_delta", "signature": SIGNATURE}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    ]  # fmt: skip
    events += [
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": p}}
        for p in pieces("Let me look both up, é ☀.", 2)
    ]
    events.append({"type": "content_block_stop", "index": 1})
    for index, (call_id, city) in enumerate([("toolu_a", "Paris"), ("toolu_b", "Oslo")], 2):
        block = {"type": "tool_use", "id": call_id, "name": "weather", "input": {}}
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events += [
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in ["", *pieces(f'{{"city": "{city}"}}', 4)]
        ]  # fmt: skip
        events.append({"type": "content_block_stop", "index": index})
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 88, "cache_read_input_tokens": 2000}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return events


def translated(events: Iterable[dict[str, Any]], include_usage: bool = True) -> list[bytes]:
    translator = chat_to_messages.StreamTranslator(model="my-alias", include_usage=include_usage)
    out = []
    for event in events:
        assert not translator.finished
        out += translator.feed(sse.encode(event, event=str(event["type"])))
    assert translator.finished
    return out


def test_a_stream_becomes_chunks_the_openai_sdk_accumulates() -> None:
    blocks = translated(anthropic_stream())
    assert blocks[-1] == sse.DONE
    chunks = [ChatCompletionChunk.model_validate(sse.json_of(b)) for b in blocks[:-1]]
    assert {c.id for c in chunks} == {"chatcmpl-msg_01XFDUDYJgAACzvnptvVoYEL"}
    assert {c.model for c in chunks} == {"my-alias"}
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len(chunks) > 30  # every small delta is a chunk of its own
    usage_chunk = chunks[-1]
    assert usage_chunk.choices == [] and usage_chunk.usage is not None
    assert (usage_chunk.usage.prompt_tokens, usage_chunk.usage.completion_tokens) == (2030, 88)

    client = openai_client(b"".join(blocks))
    with client.chat.completions.stream(model="my-alias", messages=[USER]) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me look both up, é ☀."
    calls = choice.message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("toolu_a", "weather", '{"city": "Paris"}'),
        ("toolu_b", "weather", '{"city": "Oslo"}'),
    ]
    extra = choice.message.model_extra or {}
    assert extra["reasoning_content"] == "Two cities, two calls."
    assert extra["thinking_blocks"] == [
        {"type": "thinking", "thinking": "Two cities, two calls.", "signature": SIGNATURE}
    ]
    assert final.usage is not None and final.usage.prompt_tokens_details is not None
    assert final.usage.prompt_tokens_details.cached_tokens == 2000


def test_without_include_usage_the_stream_ends_with_the_finish_chunk_and_done() -> None:
    events = [
        {"type": "message_start", "message": {**anthropic_message(), "stop_reason": None}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
         "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]  # fmt: skip
    blocks = translated(events, include_usage=False)
    assert len(blocks) == 4 and blocks[-1] == sse.DONE
    last = ChatCompletionChunk.model_validate(sse.json_of(blocks[-2]))
    assert last.choices[0].finish_reason == "length" and last.usage is None
    assert last.choices[0].delta.model_dump(exclude_none=True) == {}


def test_an_error_event_becomes_an_error_chunk_the_sdk_raises() -> None:
    translator = chat_to_messages.StreamTranslator(model="m", include_usage=True)
    start = {"type": "message_start", "message": {**anthropic_message(), "stop_reason": None}}
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    blocks = translator.feed(sse.encode(start, event="message_start"))
    blocks += translator.feed(sse.encode(error, event="error"))
    assert translator.finished
    assert sse.json_of(blocks[-1]) == {
        "error": {"message": "Overloaded", "type": "server_error", "param": None,
                  "code": "overloaded_error"}
    }  # fmt: skip
    assert translator.feed(sse.encode({"type": "message_stop"}, event="message_stop")) == []
    client = openai_client(b"".join(blocks))
    stream = client.chat.completions.create(model="m", messages=[USER], stream=True)
    with pytest.raises(openai.APIError, match="Overloaded"):
        list(stream)


def test_a_stream_event_that_is_not_json_is_a_bad_upstream_response() -> None:
    translator = chat_to_messages.StreamTranslator(model="m", include_usage=False)
    assert translator.feed(b": keep-alive\n\n") == []
    with pytest.raises(UpstreamBadResponse):
        translator.feed(b"event: message_start\ndata: {not json\n\n")


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "openai_type"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "authentication_error", "invalid_request_error"),
        (403, "permission_error", "invalid_request_error"),
        (404, "not_found_error", "invalid_request_error"),
        (413, "request_too_large", "invalid_request_error"),
        (429, "rate_limit_error", "requests"),
        (500, "api_error", "server_error"),
        (529, "overloaded_error", "server_error"),
        (503, "some_new_error", "server_error"),
        (409, "some_new_error", "invalid_request_error"),
    ],
)
def test_anthropic_errors_become_openai_errors(status: int, kind: str, openai_type: str) -> None:
    body = {"type": "error", "error": {"type": kind, "message": "Nope."}, "request_id": "req_1"}
    assert orjson.loads(chat_to_messages.error(status, orjson.dumps(body))) == {
        "error": {"message": "Nope.", "type": openai_type, "param": None, "code": kind}
    }


@pytest.mark.parametrize(
    "body", [b"<html>502 Bad Gateway</html>", b'{"error": {"message": "x"}}', b'{"type": "error"}']
)
def test_other_error_bodies_pass_unchanged(body: bytes) -> None:
    assert chat_to_messages.error(502, body) == body
