"""A Responses API client served by a model reached through Chat Completions (and, composed
with chat_to_messages, by an Anthropic model): requests, answers and streams, with the
answers parsed by the real ``openai`` SDK."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import openai
import orjson
import pytest

from hookgate.errors import InvalidRequest, UpstreamBadResponse
from hookgate.wire import sse, synth
from hookgate.wire.translate import chat_to_messages, responses_to_chat
from hookgate.wire.translate.responses_to_chat import THINKING_PREFIX
from tests.wire.translate.clients import openai_client

SIGNATURE = "EqQBCkYIBxgCKkCtx6fEjzZeZrx9N7Qi40vReeIqNPfqMwkD+/XZeQsSUE88NSjt=="
THINKING = {"type": "thinking", "thinking": "The user wants Paris. ☀", "signature": SIGNATURE}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}}
WEATHER = {
    "type": "function",
    "name": "weather",
    "description": "The weather in a city",
    "parameters": PARAMETERS,
    "strict": True,
}
CHAT_WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather in a city",
        "parameters": PARAMETERS,
        "strict": True,
    },
}


def translate(body: dict[str, Any], keep_thinking: bool = False) -> dict[str, Any]:
    return responses_to_chat.request(body, keep_thinking=keep_thinking)


def responses(*items: Any, **fields: Any) -> dict[str, Any]:
    return {"model": "my-model", "input": list(items), **fields}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(call_id: str, city: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "weather",
        "arguments": f'{{"city":"{city}"}}',
    }


def chat_call(call_id: str, city: str) -> dict[str, Any]:
    arguments = f'{{"city":"{city}"}}'
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "weather", "arguments": arguments},
    }


def output(call_id: str, result: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": result}


def hookgate_reasoning(*blocks: dict[str, Any]) -> dict[str, Any]:
    encoded = base64.urlsafe_b64encode(orjson.dumps(list(blocks))).decode()
    return {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "encrypted_content": THINKING_PREFIX + encoded,
    }


# -- requests --------------------------------------------------------------------------


def test_fields_are_translated_and_hints_dropped() -> None:
    body = {
        "model": "my-model",
        "instructions": "Be brief.",
        "input": "Weather in Paris?",
        "max_output_tokens": 300,
        "temperature": 0.2,
        "top_p": 0.9,
        "parallel_tool_calls": False,
        "user": "user-7",
        "safety_identifier": "sid-7",
        "service_tier": "flex",
        "prompt_cache_key": "k",
        "stream": True,
        "reasoning": {"effort": "low", "summary": "auto", "generate_summary": "concise"},
        "text": {"format": {"type": "json_object"}, "verbosity": "low"},
        "tools": [WEATHER],
        "tool_choice": "required",
        "store": True,
        "metadata": {"team": "a"},
        "include": ["reasoning.encrypted_content"],
        "stream_options": {"include_obfuscation": False},
        "truncation": "auto",
        "prompt_cache_retention": "24h",
        "background": False,
        "top_logprobs": 0,
        "previous_response_id": None,
    }
    assert translate(body) == {
        "model": "my-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
        ],
        "max_tokens": 300,
        "temperature": 0.2,
        "top_p": 0.9,
        "parallel_tool_calls": False,
        "user": "user-7",
        "safety_identifier": "sid-7",
        "service_tier": "flex",
        "prompt_cache_key": "k",
        "stream": True,
        "stream_options": {"include_usage": True},
        "reasoning_effort": "low",
        "response_format": {"type": "json_object"},
        "verbosity": "low",
        "tools": [CHAT_WEATHER],
        "tool_choice": "required",
    }


def test_a_minimal_request_sends_only_what_was_given() -> None:
    assert translate({"model": "m", "input": "hi", "stream": False}) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
    }
    assert translate({"model": "m", "instructions": "Rules."}) == {
        "model": "m",
        "messages": [{"role": "system", "content": "Rules."}],
    }


@pytest.mark.parametrize(
    ("text_format", "expected"),
    [
        ({"type": "text"}, None),
        ({"type": "json_object"}, {"type": "json_object"}),
        (
            {"type": "json_schema", "name": "city", "schema": PARAMETERS, "strict": True,
             "description": "A city"},
            {"type": "json_schema", "json_schema": {"name": "city", "schema": PARAMETERS,
                                                    "strict": True, "description": "A city"}},
        ),
        (
            {"type": "json_schema", "name": "city", "schema": PARAMETERS},
            {"type": "json_schema", "json_schema": {"name": "city", "schema": PARAMETERS}},
        ),
    ],
)  # fmt: skip
def test_text_format_becomes_response_format(
    text_format: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    out = translate(responses(user("hi"), text={"format": text_format}))
    assert out.get("response_format") == expected


def test_items_become_chat_messages_with_one_assistant_message_per_turn() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=",
             "detail": "high"}  # fmt: skip
    body = responses(
        {"type": "message", "role": "system",
         "content": [{"type": "input_text", "text": "Use metric units."}]},
        {"role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "id": "m1", "status": "completed",
         "content": [
             {"type": "input_text", "text": "Weather here and in Oslo?"},
             image,
             {"type": "input_image", "image_url": "https://example.com/sky.jpg"},
             {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=",
              "filename": "trip.pdf"},
             {"type": "input_file", "file_id": "file-1"},
         ]},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "Checking.", "annotations": [],
                      "logprobs": []}]},
        call("call_a", "Paris") | {"id": "fc_call_a", "status": "completed"},
        call("call_b", "Oslo"),
        output("call_a", "18C"),
        output("call_b", [{"type": "input_text", "text": "4C"}]),
        user("Thanks"),
        {"role": "assistant", "content": "You're welcome."},
    )  # fmt: skip
    assert translate(body)["messages"] == [
        {"role": "system", "content": [{"type": "text", "text": "Use metric units."}]},
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [
            {"type": "text", "text": "Weather here and in Oslo?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=",
                                                "detail": "high"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/sky.jpg"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=",
                                      "filename": "trip.pdf"}},
            {"type": "file", "file": {"file_id": "file-1"}},
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."}],
         "tool_calls": [chat_call("call_a", "Paris"), chat_call("call_b", "Oslo")]},
        {"role": "tool", "tool_call_id": "call_a", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "4C"}]},
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "You're welcome."},
    ]  # fmt: skip


def test_assistant_items_of_one_turn_merge_their_text_and_refusal() -> None:
    body = responses(
        user("hi"),
        {"role": "assistant", "content": "One."},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Two."},
                                          {"type": "refusal", "refusal": "No."}]},
        call("call_a", "Paris"),
    )  # fmt: skip
    assert translate(body)["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}],
        "refusal": "No.",
        "tool_calls": [chat_call("call_a", "Paris")],
    }
    only_calls = translate(responses(user("hi"), call("call_a", "Paris")))["messages"][1]
    assert only_calls == {
        "role": "assistant",
        "content": None,
        "tool_calls": [chat_call("call_a", "Paris")],
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ({"type": "function", "name": "weather"},
         {"type": "function", "function": {"name": "weather"}}),
        ({"type": "allowed_tools", "mode": "required",
          "tools": [{"type": "function", "name": "weather"}, {"type": "function", "name": "now"}]},
         {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
             {"type": "function", "function": {"name": "weather"}},
             {"type": "function", "function": {"name": "now"}},
         ]}}),
    ],
)  # fmt: skip
def test_tool_choice(choice: Any, expected: Any) -> None:
    assert translate(responses(user("hi"), tools=[WEATHER], tool_choice=choice))["tool_choice"] == (
        expected
    )


def test_a_function_tool_sends_only_what_it_gives() -> None:
    tool = {"type": "function", "name": "now", "parameters": None, "strict": None}
    out = translate(responses(user("hi"), tools=[tool]))
    assert out["tools"] == [{"type": "function", "function": {"name": "now"}}]


# -- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("previous_response_id", "resp_1", "hookgate keeps no stored responses for a translated "
         "provider: send the whole conversation in 'input'"),
        ("conversation", "conv_1", "hookgate keeps no stored responses"),
        ("background", True, "a translated call is answered while the client waits"),
        ("prompt", {"id": "pmpt_1"}, "stored prompt templates are OpenAI's"),
        ("max_tool_calls", 3, "Chat Completions has no limit on tool calls"),
        ("top_logprobs", 2, "hookgate does not translate log probabilities"),
    ],
)  # fmt: skip
def test_a_field_that_cannot_be_translated_is_refused_saying_why(
    field: str, value: Any, why: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        translate(responses(user("hi"), **{field: value}))
    assert (caught.value.param, caught.value.code) == (field, "unsupported_parameter")
    assert caught.value.message.startswith(
        f"'{field}' cannot be translated from the Responses API: {why}"
    )


def test_an_unknown_field_is_refused_by_name() -> None:
    with pytest.raises(InvalidRequest) as caught:
        translate(responses(user("hi"), moderation={"model": "m"}))
    assert (caught.value.param, caught.value.code) == ("moderation", "unknown_parameter")
    assert caught.value.message == (
        "unknown parameter 'moderation': hookgate cannot translate it from the Responses API "
        "to Chat Completions"
    )


@pytest.mark.parametrize(
    ("body", "param", "code", "message"),
    [
        (responses(user("hi"), reasoning={"effort": "low", "mode": "pro"}), "reasoning.mode",
         "unsupported_parameter", "'reasoning.mode' cannot be translated from the Responses API"),
        (responses(user("hi"), text={"format": {"type": "grammar"}}), "text.format.type",
         "unsupported_value", "'text.format' 'grammar' cannot be translated"),
        (responses(user("hi"), text="json"), "text", "invalid_request", "'text' must be an object"),
        (responses({"type": "item_reference", "id": "msg_1"}), "input[0].type",
         "unsupported_value", "input[0]: an item of type 'item_reference' cannot be translated to "
         "Chat Completions: it points to a stored item"),
        (responses(user("hi"), {"type": "web_search_call", "id": "ws_1"}), "input[1].type",
         "unsupported_value", "input[1]: an item of type 'web_search_call' cannot be translated"),
        (responses(user("hi"), {"type": "custom_tool_call", "call_id": "c"}), "input[1].type",
         "unsupported_value", "an item of type 'custom_tool_call' cannot be translated"),
        (responses(user("hi"), {"type": "mcp_call", "id": "m"}), "input[1].type",
         "unsupported_value", "an item of type 'mcp_call' cannot be translated"),
        (responses({"role": "user", "content": [{"type": "input_image", "file_id": "file-1",
                                                  "detail": "auto"}]}),
         "input[0].content[0].type", "unsupported_value",
         "chat takes images by URL, not by file_id"),
        (responses({"role": "user", "content": [{"type": "input_file",
                                                  "file_url": "https://x/y.pdf"}]}),
         "input[0].content[0].type", "unsupported_value", "not a file_url"),
        (responses({"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}),
         "input[0].content[0].type", "unsupported_value",
         "a content part of type 'input_audio' cannot be translated in a user message"),
        (responses({"role": "system", "content": [{"type": "input_image", "image_url": "x"}]}),
         "input[0].content[0].type", "unsupported_value",
         "a content part of type 'input_image' cannot be translated in a system message"),
        (responses({"role": "assistant", "content": [{"type": "input_image", "image_url": "x"}]}),
         "input[0].content[0].type", "unsupported_value", "in an assistant message"),
        (responses(call("c", "Paris"),
                   output("c", [{"type": "input_image", "image_url": "https://x/y.png"}])),
         "input[1].output[0].type", "unsupported_value",
         "'input_image' cannot be translated in a tool message (a chat tool message takes text "
         "only)"),
        (responses({"role": "tool", "content": "x"}), "input[0].role", "unsupported_value",
         "input[0]: a message of role 'tool' cannot be translated"),
        (responses(user("hi"), tools=[{"type": "web_search"}]), "tools[0].type",
         "unsupported_value", "tools[0]: a tool of type 'web_search' cannot be translated to Chat "
         "Completions (only function tools)"),
        (responses(user("hi"), tools=[{"type": "custom", "name": "grammar"}]), "tools[0].type",
         "unsupported_value", "a tool of type 'custom'"),
        (responses(user("hi"), tool_choice={"type": "web_search_preview"}), "tool_choice",
         "unsupported_value", "'tool_choice' 'web_search_preview' cannot be translated"),
        (responses(user("hi"), tool_choice={"type": "allowed_tools", "mode": "auto",
                                            "tools": [{"type": "mcp", "server_label": "s"}]}),
         "tool_choice.tools[0]", "unsupported_value", "'tool_choice.tools[0]' 'mcp'"),
        (responses(user("hi"), tool_choice="sometimes"), "tool_choice", "unsupported_value",
         "'tool_choice' 'sometimes'"),
        (responses({"type": "function_call", "name": "weather", "arguments": "{}"}),
         "input[0].call_id", "invalid_request", "input[0].call_id must be a string"),
        (responses("hi"), "input[0]", "invalid_request", "input[0] must be an object"),
        (responses({"role": "user", "content": 7}), "input[0].content", "invalid_request",
         "must be a string or an array of content parts"),
        ({"model": "m", "input": 7}, "input", "invalid_request",
         "'input' must be a string or an array of items"),
        ({"model": "m", "instructions": ["x"]}, "instructions", "invalid_request",
         "'instructions' must be a string"),
    ],
)  # fmt: skip
def test_content_that_cannot_be_translated_is_refused_naming_it(
    body: dict[str, Any], param: str, code: str, message: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        translate(body)
    assert (caught.value.param, caught.value.code) == (param, code)
    assert message in caught.value.message


@pytest.mark.parametrize(
    "encrypted",
    [
        THINKING_PREFIX + "%%%not base64",
        THINKING_PREFIX + base64.urlsafe_b64encode(b"{not json").decode(),
        THINKING_PREFIX + base64.urlsafe_b64encode(b'[{"type": "text", "text": "x"}]').decode(),
        THINKING_PREFIX + base64.urlsafe_b64encode(b"[]").decode(),
    ],
)
def test_a_malformed_hookgate_reasoning_item_is_refused(encrypted: str) -> None:
    item = {"type": "reasoning", "summary": [], "encrypted_content": encrypted}
    body = responses(user("hi"), item, {"role": "assistant", "content": "ok"})
    with pytest.raises(InvalidRequest) as caught:
        translate(body, keep_thinking=True)
    assert caught.value.param == "input[1].encrypted_content"
    assert "does not hold the thinking blocks hookgate wrote" in caught.value.message
    assert translate(body)["messages"][1] == {"role": "assistant", "content": "ok"}


# -- thinking in reasoning items ----------------------------------------------------------


def test_thinking_goes_to_the_assistant_message_of_its_turn_only_when_kept() -> None:
    body = responses(
        user("Weather in Paris?"),
        hookgate_reasoning(THINKING),
        call("call_a", "Paris"),
        output("call_a", "18C"),
        {"type": "reasoning", "id": "rs_openai", "summary": [{"type": "summary_text", "text": "x"}],
         "encrypted_content": "gAAAAABopenai"},
        {"role": "assistant", "content": "Sunny."},
        hookgate_reasoning(REDACTED),  # after its turn's message: still that turn's
        user("Thanks"),
        hookgate_reasoning(THINKING),  # a user message comes before any assistant item
        user("Bye"),
        {"role": "assistant", "content": "Bye."},
    )  # fmt: skip
    kept = translate(body, keep_thinking=True)["messages"]
    assert [m.get("thinking_blocks") for m in kept] == [
        None, [THINKING], None, [REDACTED], None, None, None
    ]  # fmt: skip
    assert all("thinking_blocks" not in m for m in translate(body)["messages"])


def chat_answer(
    message: dict[str, Any], finish_reason: str = "stop", **usage: Any
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-compatible",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70, **usage},
    }


def anthropic_answer() -> dict[str, Any]:
    """A chat answer from an Anthropic model: thinking, text and a tool call."""
    message = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            THINKING,
            REDACTED,
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {"city": "Paris"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 40},
    }
    return chat_to_messages.response(message)


def follow_up(items: list[Any]) -> dict[str, Any]:
    return responses(user("Weather in Paris?"), *items, output("toolu_01", "18C"), tools=[WEATHER])


def test_thinking_survives_a_responses_round_trip_byte_for_byte() -> None:
    answer = responses_to_chat.response(anthropic_answer(), request=responses(user("x")))
    client = openai_client(orjson.dumps(answer), stream=False)
    final = client.responses.create(model="claude", input="Weather in Paris?")
    assert final.output[0].type == "reasoning"
    assert final.output[0].summary[0].text == "The user wants Paris. ☀"
    items = [item.model_dump(exclude_none=True) for item in final.output]

    kept = translate(follow_up(items), keep_thinking=True)["messages"][1]
    assert orjson.dumps(kept["thinking_blocks"]) == orjson.dumps([THINKING, REDACTED])
    assert kept["content"] == [{"type": "text", "text": "Checking."}]
    assert kept["tool_calls"] == [
        {"id": "toolu_01", "type": "function",
         "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
    ]  # fmt: skip
    assert "thinking_blocks" not in translate(follow_up(items))["messages"][1]


def test_a_composed_request_sends_the_thinking_back_to_anthropic() -> None:
    answer = responses_to_chat.response(anthropic_answer(), request=responses(user("x")))
    body = follow_up(answer["output"]) | {
        "instructions": "Be brief.",
        "max_output_tokens": 2000,
        "reasoning": {"effort": "low"},
    }
    chat = translate(body, keep_thinking=True)
    assert chat_to_messages.request(chat, default_max_tokens=4096) == {
        "model": "my-model",
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                THINKING,
                REDACTED,
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_01", "name": "weather",
                 "input": {"city": "Paris"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                          "content": "18C"}]},
        ],
        "max_tokens": 3072,
        "tools": [{"name": "weather", "description": "The weather in a city",
                   "input_schema": PARAMETERS, "strict": True}],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }  # fmt: skip


# -- answers -----------------------------------------------------------------------------


def test_an_answer_becomes_a_response_the_sdk_parses() -> None:
    message = {
        "role": "assistant",
        "content": "Checking both.",
        "tool_calls": [chat_call("call_a", "Paris"), chat_call("call_b", "Oslo")],
        "reasoning_content": "Two cities.",
    }
    answer = chat_answer(
        message,
        "tool_calls",
        prompt_tokens_details={"cached_tokens": 30, "cache_write_tokens": 10},
        completion_tokens_details={"reasoning_tokens": 5},
    )
    request = responses(
        user("Weather?"),
        instructions="Be brief.",
        tools=[WEATHER],
        temperature=0.5,
        metadata={"team": "a"},
        store=True,
    )
    out = responses_to_chat.response(answer, request=request)
    assert out["output"] == [
        {"type": "reasoning", "id": "rs_abc123",
         "summary": [{"type": "summary_text", "text": "Two cities."}], "encrypted_content": None},
        {"type": "message", "id": "msg_abc123", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "Checking both.", "annotations": [],
                      "logprobs": []}]},
        {"type": "function_call", "id": "fc_call_a", "call_id": "call_a", "name": "weather",
         "arguments": '{"city":"Paris"}', "status": "completed"},
        {"type": "function_call", "id": "fc_call_b", "call_id": "call_b", "name": "weather",
         "arguments": '{"city":"Oslo"}', "status": "completed"},
    ]  # fmt: skip

    final = openai_client(orjson.dumps(out), stream=False).responses.create(
        model="gpt-compatible", input="Weather?"
    )
    assert (final.id, final.object, final.created_at) == ("resp_abc123", "response", 1700000000)
    assert (final.model, final.status, final.error, final.incomplete_details) == (
        "gpt-compatible", "completed", None, None
    )  # fmt: skip
    assert final.output_text == "Checking both."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("call_a", "weather", '{"city":"Paris"}'),
        ("call_b", "weather", '{"city":"Oslo"}'),
    ]
    assert final.usage is not None
    assert final.usage.model_dump() == {
        "input_tokens": 50,
        "input_tokens_details": {
            "cached_tokens": 30, "cache_write_tokens": 10, "cache_write_tokens_details": None
        },
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 5},
        "total_tokens": 70,
    }  # fmt: skip
    assert (final.instructions, final.temperature, final.top_p) == ("Be brief.", 0.5, None)
    assert [t.model_dump(exclude_none=True) for t in final.tools] == [WEATHER]
    assert (final.tool_choice, final.parallel_tool_calls, final.metadata) == (
        "auto", True, {"team": "a"}
    )  # fmt: skip
    assert (final.store, final.previous_response_id, final.truncation) == (False, None, "disabled")
    assert final.text is not None and final.text.format is not None
    assert final.text.format.type == "text"
    assert (final.max_output_tokens, final.reasoning, final.user) == (None, None, None)


def test_the_requests_settings_are_echoed() -> None:
    request = responses(
        user("hi"),
        parallel_tool_calls=False,
        tool_choice={"type": "function", "name": "weather"},
        tools=[WEATHER],
        max_output_tokens=99,
        top_p=0.5,
        reasoning={"effort": "high", "summary": "auto"},
        text={"format": {"type": "json_object"}, "verbosity": "low"},
        user="user-7",
        truncation="auto",
    )
    out = responses_to_chat.response(chat_answer({"content": "{}"}), request=request)
    assert {k: out[k] for k in request if k not in ("model", "input")} == {
        "parallel_tool_calls": False,
        "tool_choice": {"type": "function", "name": "weather"},
        "tools": [WEATHER],
        "max_output_tokens": 99,
        "top_p": 0.5,
        "reasoning": {"effort": "high", "summary": "auto"},
        "text": {"format": {"type": "json_object"}, "verbosity": "low"},
        "user": "user-7",
        "truncation": "disabled",
    }
    final = openai_client(orjson.dumps(out), stream=False).responses.create(model="m", input="hi")
    assert final.parallel_tool_calls is False and final.max_output_tokens == 99


@pytest.mark.parametrize(
    ("finish_reason", "reason"),
    [("length", "max_output_tokens"), ("content_filter", "content_filter")],
)
def test_an_answer_cut_short_is_incomplete(finish_reason: str, reason: str) -> None:
    answer = chat_answer({"role": "assistant", "content": "It is"}, finish_reason)
    out = responses_to_chat.response(answer, request=responses(user("hi")))
    final = openai_client(orjson.dumps(out), stream=False).responses.create(model="m", input="hi")
    assert final.status == "incomplete"
    assert final.incomplete_details is not None and final.incomplete_details.reason == reason
    assert final.output_text == "It is"


def test_a_refusal_becomes_a_refusal_part_and_usage_defaults_to_zero() -> None:
    answer = chat_answer({"role": "assistant", "content": None, "refusal": "I can't help."})
    answer["id"] = "other-id"
    out = responses_to_chat.response(answer, request=responses(user("hi")))
    assert out["id"] == "resp_other-id"
    assert out["output"] == [
        {"type": "message", "id": "msg_other-id", "status": "completed", "role": "assistant",
         "content": [{"type": "refusal", "refusal": "I can't help."}]}
    ]  # fmt: skip
    assert out["usage"] == {
        "input_tokens": 50,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 70,
    }


def test_an_answer_with_only_tool_calls_has_no_message_item_and_no_usage_without_one() -> None:
    answer = chat_answer(
        {"role": "assistant", "content": "", "tool_calls": [chat_call("c", "Paris")]},
        "tool_calls",
    )
    del answer["usage"]
    out = responses_to_chat.response(answer, request=responses(user("hi")))
    assert [item["type"] for item in out["output"]] == ["function_call"]
    assert out["usage"] is None


@pytest.mark.parametrize(
    "body",
    [{"id": "x"}, {"choices": []}, {"choices": [{"index": 0, "finish_reason": "stop"}]}],
)
def test_an_answer_without_a_message_is_a_bad_upstream_response(body: dict[str, Any]) -> None:
    with pytest.raises(UpstreamBadResponse):
        responses_to_chat.response(body, request={})


# -- streams -----------------------------------------------------------------------------


def translated(blocks: Iterable[bytes], request: dict[str, Any] | None = None) -> list[bytes]:
    translator = responses_to_chat.StreamTranslator(request=request or responses(user("hi")))
    out = []
    for block in blocks:
        assert not translator.finished
        out += translator.feed(block)
    assert translator.finished
    return out


def events(blocks: list[bytes]) -> list[dict[str, Any]]:
    """Each block's data, checking its ``event:`` name is its type."""
    out = []
    for block in blocks:
        event = sse.parse(block)
        data = event.json()
        assert isinstance(data, dict) and event.event == data["type"]
        out.append(data)
    return out


REPLY = synth.Reply(
    text="It is sunny, é ☀.",
    tool_calls=[synth.ToolCall("call_a", "weather", '{"city": "Paris"}'),
                synth.ToolCall("call_b", "weather", '{"city": "Oslo"}')],
    id="abc123",
    input_tokens=40,
    output_tokens=12,
)  # fmt: skip


def test_a_stream_becomes_responses_events_the_sdk_accumulates() -> None:
    blocks = translated(synth.chat_stream("gpt-compatible", REPLY, include_usage=True))
    data = events(blocks)
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    kinds = [d["type"] for d in data]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 3,
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * 3,
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * 3,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert data[7]["item"] == {
        "type": "function_call", "id": "fc_call_a", "call_id": "call_a", "name": "weather",
        "arguments": "", "status": "in_progress",
    }  # fmt: skip
    created = data[0]["response"]
    assert (created["status"], created["output"], created["usage"]) == ("in_progress", [], None)

    with openai_client(b"".join(blocks)).responses.stream(model="m", input="hi") as stream:
        seen = [event.type for event in stream]
        final = stream.get_final_response()
    assert seen == kinds
    assert final.id == "resp_abc123" and final.status == "completed"
    assert final.output_text == "It is sunny, é ☀."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.id, c.call_id, c.arguments) for c in calls] == [
        ("fc_call_a", "call_a", '{"city": "Paris"}'),
        ("fc_call_b", "call_b", '{"city": "Oslo"}'),
    ]
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (40, 12)

    answer = synth.chat_completion("gpt-compatible", REPLY)
    expected = responses_to_chat.response(answer, request=responses(user("hi")))
    assert data[-1]["response"]["output"] == expected["output"]
    assert data[-1]["response"]["usage"] == expected["usage"]
    done = [d["item"] for d in data if d["type"] == "response.output_item.done"]
    assert done == expected["output"]


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return sse.encode({"id": "chatcmpl-r1", "created": 1700000000, "model": "m",
                       "choices": [choice]})  # fmt: skip


def test_reasoning_and_a_refusal_stream_as_their_own_parts() -> None:
    blocks = translated(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"reasoning_content": "Hm"}),
            chunk({"reasoning_content": "m."}),
            chunk({"refusal": "No"}),
            chunk({"refusal": "pe."}),
            chunk({}, "content_filter"),
            sse.DONE,
        ]
    )
    data = events(blocks)
    at_message = {"item_id": "msg_r1", "output_index": 1, "content_index": 0}
    assert [(d["type"], d.get("delta")) for d in data[2:9]] == [
        ("response.output_item.added", None),
        ("response.reasoning_summary_part.added", None),
        ("response.reasoning_summary_text.delta", "Hm"),
        ("response.reasoning_summary_text.delta", "m."),
        ("response.output_item.added", None),
        ("response.content_part.added", None),
        ("response.refusal.delta", "No"),
    ]
    assert data[6]["item"] == {
        "type": "message", "id": "msg_r1", "status": "in_progress", "role": "assistant",
        "content": [],
    }  # fmt: skip
    assert data[2]["item"] == {
        "type": "reasoning", "id": "rs_r1", "summary": [], "encrypted_content": None
    }  # fmt: skip
    assert data[9] == {"type": "response.refusal.delta", "sequence_number": 9, **at_message,
                       "delta": "pe."}  # fmt: skip
    assert data[10:-1] == [
        {"type": "response.reasoning_summary_text.done", "sequence_number": 10,
         "item_id": "rs_r1", "output_index": 0, "summary_index": 0, "text": "Hmm."},
        {"type": "response.reasoning_summary_part.done", "sequence_number": 11,
         "item_id": "rs_r1", "output_index": 0, "summary_index": 0,
         "part": {"type": "summary_text", "text": "Hmm."}},
        {"type": "response.output_item.done", "sequence_number": 12, "output_index": 0,
         "item": {"type": "reasoning", "id": "rs_r1",
                  "summary": [{"type": "summary_text", "text": "Hmm."}],
                  "encrypted_content": None}},
        {"type": "response.refusal.done", "sequence_number": 13, **at_message,
         "refusal": "Nope."},
        {"type": "response.content_part.done", "sequence_number": 14, **at_message,
         "part": {"type": "refusal", "refusal": "Nope."}},
        {"type": "response.output_item.done", "sequence_number": 15, "output_index": 1,
         "item": {"type": "message", "id": "msg_r1", "status": "completed", "role": "assistant",
                  "content": [{"type": "refusal", "refusal": "Nope."}]}},
    ]  # fmt: skip
    last = data[-1]
    assert last["type"] == "response.incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "content_filter"}
    assert last["response"]["usage"] is None


def test_a_messages_parts_keep_the_order_they_came_in() -> None:
    blocks = translated([chunk({"refusal": "No."}), chunk({"content": "Yes."}), sse.DONE])
    with openai_client(b"".join(blocks)).responses.stream(model="m", input="hi") as stream:
        final = stream.get_final_response()
    message = final.output[0]
    assert message.type == "message"
    assert [part.type for part in message.content] == ["refusal", "output_text"]
    data = events(blocks)
    added = [(d["content_index"], d["part"]["type"]) for d in data
             if d["type"] == "response.content_part.added"]  # fmt: skip
    assert added == [(0, "refusal"), (1, "output_text")]


def test_thinking_without_text_opens_its_reasoning_item_at_the_end() -> None:
    blocks = translated(
        [
            chunk({"content": "Hi."}),
            chunk({"thinking_blocks": [REDACTED]}, "stop"),
            sse.DONE,
        ]
    )
    data = events(blocks)
    added = [(d["output_index"], d["item"]["type"]) for d in data
             if d["type"] == "response.output_item.added"]  # fmt: skip
    assert added == [(0, "message"), (1, "reasoning")]
    reasoning = data[-1]["response"]["output"][1]
    assert reasoning["summary"] == []
    assert reasoning["encrypted_content"] == hookgate_reasoning(REDACTED)["encrypted_content"]
    kept = translate(responses(user("hi"), *data[-1]["response"]["output"]), keep_thinking=True)
    assert kept["messages"][1]["thinking_blocks"] == [REDACTED]


def test_a_stream_without_chunks_still_completes() -> None:
    data = events(translated([b": keep-alive\n\n", sse.encode({"object": "unknown"}), sse.DONE]))
    assert [d["type"] for d in data] == [
        "response.created",
        "response.in_progress",
        "response.completed",
    ]
    assert data[-1]["response"]["output"] == []


def test_an_error_chunk_becomes_an_error_event_the_sdk_raises() -> None:
    translator = responses_to_chat.StreamTranslator(request=responses(user("hi")))
    error = {"error": {"message": "Overloaded", "type": "server_error", "param": None,
                       "code": "overloaded_error"}}  # fmt: skip
    blocks = translator.feed(chunk({"content": "Hi"}))
    blocks += translator.feed(sse.encode(error))
    assert translator.finished
    assert blocks[-1] == sse.encode(error, event="error")
    assert translator.feed(sse.DONE) == []
    stream = openai_client(b"".join(blocks)).responses.create(model="m", input="hi", stream=True)
    with pytest.raises(openai.APIError, match="Overloaded"):
        list(stream)


def test_a_chunk_that_is_not_json_is_a_bad_upstream_response() -> None:
    translator = responses_to_chat.StreamTranslator(request={})
    with pytest.raises(UpstreamBadResponse):
        translator.feed(b"data: {not json\n\n")


# -- composed with chat_to_messages: an Anthropic model ---------------------------------------


def test_an_anthropic_stream_becomes_a_responses_stream_through_chat() -> None:
    reply = synth.Reply(
        text="Let me check.",
        tool_calls=[synth.ToolCall("toolu_01", "weather", '{"city":"Paris"}')],
        thinking="The user wants Paris.",
        signature=SIGNATURE,
        input_tokens=20,
        output_tokens=30,
        cache_creation_tokens=100,
        cache_read_tokens=900,
        id="01XF",
    )
    to_chat = chat_to_messages.StreamTranslator(model="claude-alias", include_usage=True)
    request = responses(user("Weather in Paris?"), tools=[WEATHER], reasoning={"effort": "low"})
    blocks = translated(
        (
            middle
            for block in synth.message_stream("claude", reply)
            for middle in to_chat.feed(block)
        ),
        request,
    )
    with openai_client(b"".join(blocks)).responses.stream(model="claude-alias", input="x") as s:
        final = s.get_final_response()
    assert (final.id, final.model, final.status) == ("resp_msg_01XF", "claude-alias", "completed")
    assert [item.type for item in final.output] == ["reasoning", "message", "function_call"]
    reasoning = final.output[0]
    assert reasoning.type == "reasoning"
    assert reasoning.summary[0].text == "The user wants Paris."
    assert final.output_text == "Let me check."
    function_call = final.output[2]
    assert function_call.type == "function_call"
    assert (function_call.call_id, function_call.name, function_call.arguments) == (
        "toolu_01", "weather", '{"city":"Paris"}'
    )  # fmt: skip
    assert final.usage is not None
    assert final.usage.input_tokens_details.cached_tokens == 900
    assert final.usage.input_tokens_details.cache_write_tokens == 100
    assert (final.usage.input_tokens, final.usage.output_tokens) == (1020, 30)
    assert final.reasoning is not None and final.reasoning.effort == "low"

    items = [item.model_dump(exclude_none=True) for item in final.output]
    kept = translate(follow_up(items), keep_thinking=True)["messages"][1]
    assert kept["thinking_blocks"] == [
        {"type": "thinking", "thinking": "The user wants Paris.", "signature": SIGNATURE}
    ]

    answer = chat_to_messages.response(synth.message_object("claude", reply))
    answer["model"] = "claude-alias"
    expected = responses_to_chat.response(answer, request=request)
    assert [item.model_dump(exclude_none=True) for item in final.output] == [
        {k: v for k, v in item.items() if v is not None} for item in expected["output"]
    ]
    assert final.usage.model_dump(exclude_none=True) == expected["usage"]
