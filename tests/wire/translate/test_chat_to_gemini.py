"""A Chat Completions client served by a Google Gemini model: requests, answers, streams
and errors, with the answers parsed by the real ``openai`` SDK."""

from __future__ import annotations

import re
from typing import Any

import openai
import orjson
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hookgate.errors import InvalidRequest, UpstreamBadResponse
from hookgate.wire import sse
from hookgate.wire.translate import chat_to_gemini
from hookgate.wire.translate.chat_to_gemini import ID_MARK, SIGNATURE_MARK
from tests.wire.translate.clients import openai_client

# Thought signatures are opaque base64, with '+', '/' and '=' in them.
SIGNATURE_A = "CiQB0e2Kb+1nFq/Xk9zEXAMPLEaBcD3fGhIj+/8AAQIDBAUGBwgJCgsMDQ4PEBESExQ=="
SIGNATURE_B = "EqQBCkYIBxgCKkCtx6fEjzZeZrx9N7Qi40vReeIqNPfqMwkD+/XZeQsSUE88NSjt="
CALL_ID = re.compile(r"call_[0-9a-f]{24}")
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
USER = {"role": "user", "content": "hi"}


def translate(body: dict[str, Any], default_max_tokens: int | None = None) -> dict[str, Any]:
    return chat_to_gemini.request(body, default_max_tokens=default_max_tokens)


def chat(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "gemini-2.5-flash", "messages": list(messages), **fields}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# -- requests --------------------------------------------------------------------------


def test_fields_are_translated_and_hints_dropped() -> None:
    body = chat(
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "Use metric units."}]},
        {"role": "user", "content": "Weather?", "name": "ann"},
        max_completion_tokens=300,
        max_tokens=99,
        stop="END",
        temperature=1.5,
        top_p=0.9,
        seed=3,
        presence_penalty=0.5,
        frequency_penalty=-0.25,
        response_format={"type": "json_object"},
        reasoning_effort="medium",
        user="user-7",
        safety_identifier="user-7",
        stream=True,
        stream_options={"include_usage": True},
        store=True,
        metadata={"team": "a"},
        service_tier="auto",
        prompt_cache_key="k",
        prompt_cache_retention="24h",
        parallel_tool_calls=False,
        n=1,
        logprobs=False,
        top_logprobs=0,
        modalities=["text"],
        logit_bias={},
        audio=None,
    )
    assert translate(body, default_max_tokens=4096) == {
        "systemInstruction": {"parts": [{"text": "Be brief."}, {"text": "Use metric units."}]},
        "contents": [{"role": "user", "parts": [{"text": "Weather?"}]}],
        "generationConfig": {
            "maxOutputTokens": 300,
            "temperature": 1.5,
            "topP": 0.9,
            "seed": 3,
            "presencePenalty": 0.5,
            "frequencyPenalty": -0.25,
            "stopSequences": ["END"],
            "responseMimeType": "application/json",
            "thinkingConfig": {"thinkingBudget": 8192, "includeThoughts": True},
        },
    }


def test_a_bare_request_has_only_contents() -> None:
    assert translate(chat(USER)) == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def test_max_tokens_falls_back_to_max_tokens_then_the_default() -> None:
    assert translate(chat(USER, max_tokens=77))["generationConfig"] == {"maxOutputTokens": 77}
    assert translate(chat(USER), default_max_tokens=1234)["generationConfig"] == {
        "maxOutputTokens": 1234
    }
    assert translate(chat(USER, stop=["a", "b"]))["generationConfig"] == {
        "stopSequences": ["a", "b"]
    }


def test_zero_penalties_are_left_out() -> None:
    body = chat(USER, presence_penalty=0, frequency_penalty=0.0, temperature=0)
    assert translate(body)["generationConfig"] == {"temperature": 0}


@pytest.mark.parametrize(
    ("response_format", "expected"),
    [
        ({"type": "text"}, None),
        ({"type": "json_object"}, {"responseMimeType": "application/json"}),
        ({"type": "json_schema", "json_schema": {"name": "city", "strict": True,
                                                 "schema": {"type": "object", "required": ["c"]}}},
         {"responseMimeType": "application/json",
          "responseJsonSchema": {"type": "object", "required": ["c"]}}),
    ],
)  # fmt: skip
def test_response_format(response_format: dict[str, Any], expected: dict[str, Any] | None) -> None:
    assert translate(chat(USER, response_format=response_format)).get("generationConfig") == (
        expected
    )


@pytest.mark.parametrize(
    ("effort", "thinking"),
    [
        ("none", {"thinkingBudget": 0}),
        ("minimal", {"thinkingBudget": 1024, "includeThoughts": True}),
        ("low", {"thinkingBudget": 1024, "includeThoughts": True}),
        ("medium", {"thinkingBudget": 8192, "includeThoughts": True}),
        ("high", {"thinkingBudget": 24576, "includeThoughts": True}),
        ("xhigh", {"thinkingBudget": 32768, "includeThoughts": True}),
    ],
)
def test_reasoning_effort_sets_a_thinking_budget(effort: str, thinking: dict[str, Any]) -> None:
    out = translate(chat(USER, reasoning_effort=effort, max_completion_tokens=500))
    assert out["generationConfig"] == {"maxOutputTokens": 500, "thinkingConfig": thinking}


def test_a_system_message_anywhere_joins_the_system_instruction() -> None:
    body = chat(
        {"role": "system", "content": "Rules."},
        USER,
        {"role": "assistant", "content": "hello"},
        {"role": "developer", "content": "Now answer in French."},
        {"role": "user", "content": "ok"},
    )
    out = translate(body)
    assert out["systemInstruction"] == {
        "parts": [{"text": "Rules."}, {"text": "Now answer in French."}]
    }
    assert out["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "hello"}]},
        {"role": "user", "parts": [{"text": "ok"}]},
    ]


def test_a_multi_turn_tool_round_trip_with_parallel_calls_merges_the_results() -> None:
    paris = call("call_a", "weather", '{"city": "Paris"}')
    oslo = call("call_b", "weather", '{"city": "Oslo"}')
    body = chat(
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [paris, oslo]},
        {"role": "tool", "tool_call_id": "call_a", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_b",
         "content": [{"type": "text", "text": '{"temp": 4, '},
                     {"type": "text", "text": '"unit": "C"}'}]},
        {"role": "user", "content": "And tomorrow?"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_c", "forecast", "")]},
        {"role": "tool", "tool_call_id": "call_c", "content": "[20, 21]"},
        tools=[WEATHER],
    )  # fmt: skip
    out = translate(body)
    assert out["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and Oslo?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "weather", "response": {"output": "18C"}}},
                {"functionResponse": {"name": "weather",
                                      "response": {"temp": 4, "unit": "C"}}},
                {"text": "And tomorrow?"},
            ],
        },
        {"role": "model", "parts": [{"functionCall": {"name": "forecast", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "forecast",
                                                         "response": {"output": "[20, 21]"}}}]},
    ]  # fmt: skip
    assert out["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "weather",
                    "description": "The weather in a city",
                    "parametersJsonSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                    },
                }
            ]
        }
    ]


def test_tool_call_ids_give_back_gemini_ids_and_signatures_on_their_own_parts() -> None:
    first = f"call_0123456789abcdef01234567{ID_MARK}fc-1{SIGNATURE_MARK}{SIGNATURE_A}"
    second = f"call_89abcdef0123456789abcdef{ID_MARK}fc-2"
    third = f"call_fedcba9876543210fedcba98{SIGNATURE_MARK}{SIGNATURE_B}"
    body = chat(
        USER,
        {"role": "assistant", "tool_calls": [call(first, "a", "{}"), call(second, "b", "{}")]},
        {"role": "tool", "tool_call_id": second, "content": "2"},
        {"role": "tool", "tool_call_id": first, "content": "1"},
        {"role": "assistant", "tool_calls": [call(third, "c", '{"x": 1}')]},
        {"role": "tool", "tool_call_id": third, "content": "3"},
    )
    contents = translate(body)["contents"]
    assert contents[1]["parts"] == [
        {"functionCall": {"name": "a", "args": {}, "id": "fc-1"}, "thoughtSignature": SIGNATURE_A},
        {"functionCall": {"name": "b", "args": {}, "id": "fc-2"}},
    ]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "b", "response": {"output": "2"}, "id": "fc-2"}},
        {"functionResponse": {"name": "a", "response": {"output": "1"}, "id": "fc-1"}},
    ]
    assert contents[3]["parts"] == [
        {"functionCall": {"name": "c", "args": {"x": 1}}, "thoughtSignature": SIGNATURE_B}
    ]
    assert contents[4]["parts"] == [
        {"functionResponse": {"name": "c", "response": {"output": "3"}}}
    ]


def test_consecutive_user_messages_are_one_turn_and_empty_text_is_left_out() -> None:
    body = chat(
        {"role": "user", "content": "one"},
        {
            "role": "user",
            "content": [{"type": "text", "text": ""}, {"type": "text", "text": "two"}],
        },
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": "three", "reasoning_content": "hmm"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
    )
    assert translate(body)["contents"] == [
        {"role": "user", "parts": [{"text": "one"}, {"text": "two"}]},
        {"role": "model", "parts": [{"text": "three"}, {"text": "no"}]},
    ]


def test_images_audio_and_files_become_inline_data() -> None:
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=",
                                            "detail": "high"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=",
                                  "filename": "a.pdf"}},
    ]  # fmt: skip
    assert translate(chat({"role": "user", "content": parts}))["contents"][0]["parts"] == [
        {"text": "What is this?"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
        {"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}},
        {"inlineData": {"mimeType": "audio/mp3", "data": "SUQz"}},
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
    ]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"mode": "AUTO"}),
        ("required", {"mode": "ANY"}),
        ("none", {"mode": "NONE"}),
        ({"type": "function", "function": {"name": "weather"}},
         {"mode": "ANY", "allowedFunctionNames": ["weather"]}),
        (None, None),
    ],
)  # fmt: skip
def test_tool_choice(choice: Any, expected: dict[str, Any] | None) -> None:
    out = translate(chat(USER, tools=[WEATHER], tool_choice=choice, parallel_tool_calls=True))
    assert out.get("toolConfig") == (
        None if expected is None else {"functionCallingConfig": expected}
    )


def test_a_tool_without_parameters_has_no_schema_and_loses_strict() -> None:
    tool = {"type": "function", "function": {"name": "now", "strict": True}}
    assert translate(chat(USER, tools=[tool]))["tools"] == [
        {"functionDeclarations": [{"name": "now"}]}
    ]


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "param", "message"),
    [
        ({"n": 2}, "n", "'n' cannot be sent to a Gemini model: hookgate translates one candidate"),
        ({"logprobs": True}, "logprobs", "log probabilities"),
        ({"top_logprobs": 3}, "top_logprobs", "log probabilities"),
        ({"audio": {"voice": "alloy", "format": "mp3"}}, "audio", "audio output"),
        ({"modalities": ["text", "audio"]}, "modalities", "audio output"),
        ({"prediction": {"type": "content", "content": "x"}}, "prediction", "predicted output"),
        ({"logit_bias": {"50256": -100}}, "logit_bias", "no logit bias"),
        ({"verbosity": "low"}, "verbosity", "no verbosity setting"),
        ({"web_search_options": {"search_context_size": "low"}}, "web_search_options",
         "search tool"),
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
    assert f"'{param}' cannot be sent to a Gemini model" in caught.value.message
    assert message in caught.value.message


def test_an_unknown_field_is_refused_by_name() -> None:
    with pytest.raises(InvalidRequest) as caught:
        translate(chat(USER, top_k=5))
    assert (caught.value.param, caught.value.code) == ("top_k", "unknown_parameter")
    assert caught.value.message == (
        "unknown parameter 'top_k': hookgate cannot translate it for a Gemini model"
    )


BAD_ARGS = call("c", "f", "[1]")


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        (chat({"role": "user", "content": [{"type": "image_url",
                                            "image_url": {"url": "https://x.test/cat.png"}}]}),
         "messages[0].content[0].image_url.url",
         "Gemini's API does not fetch images from http(s) URLs; send the image as a base64 "
         "data: URL"),
        (chat({"role": "user", "content": [{"type": "image_url",
                                            "image_url": {"url": "data:image/png,abc"}}]}),
         "messages[0].content[0].image_url.url", "an image URL must be a base64 data: URL"),
        (chat({"role": "user", "content": [{"type": "image_url", "image_url": {}}]}),
         "messages[0].content[0]", "messages[0].content[0].image_url.url must be a string"),
        (chat({"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}),
         "messages[0].content[0].file", "an OpenAI file means nothing to Gemini"),
        (chat({"role": "user", "content": [{"type": "file",
                                            "file": {"file_data": "JVBERi0="}}]}),
         "messages[0].content[0].file.file_data", "'file_data' must be a base64 data: URL"),
        (chat({"role": "user", "content": [{"type": "input_audio",
                                            "input_audio": {"data": "x", "format": "flac"}}]}),
         "messages[0].content[0].input_audio.format", "must be one of wav, mp3"),
        (chat({"role": "user", "content": [{"type": "video", "video": {}}]}),
         "messages[0].content[0].type",
         "messages[0].content[0]: a content part of type 'video' cannot be sent to a Gemini "
         "model"),
        (chat({"role": "system", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}),
         "messages[0].content[0].type", "a content part of type 'image_url' cannot be sent"),
        (chat(USER, {"role": "assistant", "tool_calls": [BAD_ARGS]}),
         "messages[1].tool_calls[0].function.arguments",
         "messages[1].tool_calls[0].function.arguments must be a JSON object, as a string"),
        (chat(USER, {"role": "assistant", "tool_calls": [{**BAD_ARGS, "type": "custom"}]}),
         "messages[1].tool_calls[0].type", "a tool call of type 'custom' cannot be sent"),
        (chat(USER, {"role": "assistant", "audio": {"id": "a1"}}), "messages[1].audio",
         "an assistant 'audio' cannot be sent"),
        (chat(USER, {"role": "tool", "tool_call_id": "call_x", "content": "1"}),
         "messages[1].tool_call_id",
         "messages[1]: 'tool_call_id' 'call_x' is not the id of a tool call in an earlier "
         "assistant message"),
        (chat(USER, {"role": "tool", "tool_call_id": "c", "content": "1"},
              {"role": "assistant", "tool_calls": [call("c", "f", "{}")]}),
         "messages[1].tool_call_id", "is not the id of a tool call in an earlier"),
        (chat({"role": "function", "name": "f", "content": "x"}), "messages[0].role",
         "messages[0]: role 'function' cannot be sent to a Gemini model"),
        (chat(USER, tools=[{"type": "custom", "custom": {"name": "grammar"}}]), "tools[0].type",
         "tools[0]: a tool of type 'custom' cannot be sent to a Gemini model (only "
         "function tools)"),
        (chat(USER, tools=[WEATHER], tool_choice={"type": "allowed_tools", "allowed_tools": {}}),
         "tool_choice", "'tool_choice' 'allowed_tools' cannot be sent to a Gemini model"),
        (chat(USER, reasoning_effort="extreme"), "reasoning_effort",
         "'reasoning_effort' 'extreme' has no Gemini thinking budget (one of none, minimal, "
         "low, medium, high, xhigh, max)"),
        (chat(USER, response_format={"type": "grammar"}), "response_format.type",
         "'response_format' of type 'grammar' cannot be sent to a Gemini model"),
        (chat(USER, response_format="json"), "response_format",
         "'response_format' must be an object"),
        (chat(USER, stop=7), "stop", "'stop' must be a string or an array of strings"),
        ({"model": "m", "messages": "hi"}, "messages", "'messages' must be an array"),
        (chat("hi"), "messages[0]", "messages[0] must be an object"),
        (chat({"role": "user", "content": 7}), "messages[0].content",
         "messages[0].content must be a string or an array of content parts"),
    ],
)  # fmt: skip
def test_content_the_model_cannot_take_is_refused_naming_it(
    body: dict[str, Any], param: str, message: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        translate(body)
    assert caught.value.param == param
    assert message in caught.value.message


# -- answers -------------------------------------------------------------------------------


def gemini_answer(
    *parts: dict[str, Any], finish_reason: str | None = "STOP", **fields: Any
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 40,
                          "totalTokenCount": 52},
        "modelVersion": "gemini-2.5-flash-001",
        "responseId": "mKdGaPDbLrbnxN8P4q2m8Ac",
        **fields,
    }  # fmt: skip


def completion_of(answer: dict[str, Any]) -> ChatCompletion:
    """The answer's translation as the ``openai`` SDK returns it from a non-stream call."""
    translated = chat_to_gemini.response(answer, model="my-alias")
    client = openai_client(orjson.dumps(translated), stream=False)
    completion = client.chat.completions.create(model="my-alias", messages=[USER])
    assert completion == ChatCompletion.model_validate(translated)
    return completion


def test_an_answer_becomes_a_chat_completion_with_cache_and_thought_usage() -> None:
    answer = gemini_answer(
        {"text": "Thinking about the sky.", "thought": True},
        {"text": "It is "},
        {"text": "sunny.", "thoughtSignature": SIGNATURE_A},
    )
    answer["usageMetadata"] = {
        "promptTokenCount": 1020,
        "cachedContentTokenCount": 900,
        "candidatesTokenCount": 7,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 1057,
    }
    completion = completion_of(answer)
    assert completion.id == "chatcmpl-mKdGaPDbLrbnxN8P4q2m8Ac"
    assert completion.object == "chat.completion"
    assert completion.model == "my-alias"
    message = completion.choices[0].message
    assert message.content == "It is sunny."
    assert message.tool_calls is None
    assert (message.model_extra or {})["reasoning_content"] == "Thinking about the sky."
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens_details is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (1020, 37, 1057)
    assert usage.prompt_tokens_details.cached_tokens == 900
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 30


def test_function_calls_become_tool_calls_whose_ids_carry_ids_and_signatures() -> None:
    answer = gemini_answer(
        {"functionCall": {"name": "weather", "args": {"city": "Paris"}},
         "thoughtSignature": SIGNATURE_A},
        {"functionCall": {"name": "weather", "args": {"city": "Oslo"}, "id": "fc-2"}},
        {"functionCall": {"name": "now"}},
    )  # fmt: skip
    choice = completion_of(answer).choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    calls = choice.message.tool_calls or []
    assert [(c.type, c.function.name, c.function.arguments) for c in calls] == [
        ("function", "weather", '{"city":"Paris"}'),
        ("function", "weather", '{"city":"Oslo"}'),
        ("function", "now", "{}"),
    ]
    first, second, third = (c.id for c in calls)
    base, _, signature = first.partition(SIGNATURE_MARK)
    assert CALL_ID.fullmatch(base) and signature == SIGNATURE_A
    base, _, gemini_id = second.partition(ID_MARK)
    assert CALL_ID.fullmatch(base) and gemini_id == "fc-2"
    assert CALL_ID.fullmatch(third)
    assert len({first[:29], second[:29], third[:29]}) == 3  # a fresh id per call


def test_signatures_survive_a_chat_round_trip_on_their_own_function_calls() -> None:
    answer = gemini_answer(
        {"text": "I should look both up.", "thought": True},
        {"functionCall": {"name": "weather", "args": {"city": "Paris"}},
         "thoughtSignature": SIGNATURE_A},
        {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
    )  # fmt: skip
    assistant = completion_of(answer).choices[0].message.model_dump(exclude_none=True)
    calls = assistant["tool_calls"]
    follow_up = chat(
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        assistant,
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "18C"},
        {"role": "tool", "tool_call_id": calls[1]["id"], "content": "4C"},
        reasoning_effort="low",
    )
    contents = translate(follow_up)["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "weather", "args": {"city": "Paris"}},
             "thoughtSignature": SIGNATURE_A},
            {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
        ],
    }  # fmt: skip
    sent = orjson.dumps(contents[1]["parts"][0]["thoughtSignature"])
    assert sent == orjson.dumps(SIGNATURE_A)
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "weather", "response": {"output": "18C"}}},
        {"functionResponse": {"name": "weather", "response": {"output": "4C"}}},
    ]


@pytest.mark.parametrize(
    ("gemini", "finish_reason"),
    [("STOP", "stop"), ("MAX_TOKENS", "length"), ("SAFETY", "content_filter"),
     ("RECITATION", "content_filter"), ("BLOCKLIST", "content_filter"),
     ("PROHIBITED_CONTENT", "content_filter"), ("SPII", "content_filter"),
     ("IMAGE_SAFETY", "content_filter"), ("LANGUAGE", "content_filter"),
     ("MALFORMED_FUNCTION_CALL", "stop"), ("OTHER", "stop"), ("SOMETHING_NEW", "stop"),
     (None, "stop")],
)  # fmt: skip
def test_finish_reasons(gemini: str | None, finish_reason: str) -> None:
    completion = completion_of(gemini_answer({"text": "x"}, finish_reason=gemini))
    assert completion.choices[0].finish_reason == finish_reason


def test_a_call_cut_by_max_tokens_is_length_and_an_empty_answer_is_empty_text() -> None:
    answer = gemini_answer({"functionCall": {"name": "f", "args": {}}}, finish_reason="MAX_TOKENS")
    assert completion_of(answer).choices[0].finish_reason == "length"
    answer = gemini_answer(finish_reason="MAX_TOKENS")
    del answer["candidates"][0]["content"]
    choice = completion_of(answer).choices[0]
    assert (choice.message.content, choice.finish_reason) == ("", "length")


def test_a_blocked_prompt_is_a_content_filter_choice_without_content() -> None:
    answer = {
        "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
        "modelVersion": "gemini-2.5-flash",
    }
    completion = completion_of(answer)
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{24}", completion.id)
    choice = completion.choices[0]
    assert (choice.message.content, choice.finish_reason) == (None, "content_filter")
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (8, 0)


def test_a_response_id_already_prefixed_is_kept() -> None:
    answer = gemini_answer({"text": "x"}, responseId="chatcmpl-abc")
    assert chat_to_gemini.response(answer, model="m")["id"] == "chatcmpl-abc"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "not a JSON object"),
        ({"usageMetadata": {}}, "no candidates"),
        ({"candidates": {"content": {}}}, "'candidates' is not an array of objects"),
        ({"candidates": ["x"]}, "'candidates' is not an array of objects"),
        ({"candidates": [{"content": "x"}]}, "content is not an object"),
        ({"candidates": [{"content": {"parts": {"text": "x"}}}]}, "not an array of objects"),
        ({"candidates": [{"content": {"parts": ["x"]}}]}, "not an array of objects"),
    ],
)
def test_a_malformed_answer_is_a_bad_upstream_response(body: Any, message: str) -> None:
    with pytest.raises(UpstreamBadResponse, match=message):
        chat_to_gemini.response(body, model="m")


# -- streams -------------------------------------------------------------------------------


def pieces(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def chunk(*parts: dict[str, Any], finish_reason: str | None = None, **usage: int) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    data: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r-42",
    }
    if usage:
        data["usageMetadata"] = usage
    return sse.encode(data)


def gemini_stream() -> list[bytes]:
    """A streamed answer: thoughts, text in small pieces, two function calls, cumulative
    usage on every chunk."""
    blocks = [
        chunk({"text": p, "thought": True}, promptTokenCount=30, thoughtsTokenCount=5)
        for p in pieces("Two cities, two calls.")
    ]
    blocks += [
        chunk({"text": p}, promptTokenCount=30, candidatesTokenCount=n, thoughtsTokenCount=9)
        for n, p in enumerate(pieces("Let me look both up, é ☀.", 2))
    ]
    blocks.append(
        chunk(
            {"functionCall": {"name": "weather", "args": {"city": "Paris"}},
             "thoughtSignature": SIGNATURE_A},
            {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
            promptTokenCount=30, cachedContentTokenCount=20, candidatesTokenCount=60,
            thoughtsTokenCount=9,
        )
    )  # fmt: skip
    blocks.append(
        chunk(
            {"text": "", "thoughtSignature": SIGNATURE_B},
            finish_reason="STOP",
            promptTokenCount=30,
            cachedContentTokenCount=20,
            candidatesTokenCount=79,
            thoughtsTokenCount=9,
        )
    )
    return blocks


def translated(blocks: list[bytes], include_usage: bool = True) -> list[bytes]:
    translator = chat_to_gemini.StreamTranslator(model="my-alias", include_usage=include_usage)
    out = []
    for block in blocks:
        assert not translator.finished
        out += translator.feed(block)
    assert translator.finished
    # Anything after the terminal block is ignored.
    assert translator.feed(chunk({"text": "late"}, finish_reason="STOP")) == []
    return out


def test_a_stream_becomes_chunks_the_openai_sdk_accumulates() -> None:
    blocks = translated(gemini_stream())
    assert blocks[-1] == sse.DONE and sse.DONE not in blocks[:-1]
    chunks = [ChatCompletionChunk.model_validate(sse.json_of(b)) for b in blocks[:-1]]
    assert {c.id for c in chunks} == {"chatcmpl-r-42"}
    assert {c.model for c in chunks} == {"my-alias"}
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0].choices[0].delta.model_dump(exclude_none=True) == {
        "role": "assistant",
        "content": "",
    }
    assert len(chunks) == 1 + 8 + 13 + 2 + 2  # every piece is a chunk of its own
    finish = chunks[-2]
    assert finish.choices[0].finish_reason == "tool_calls" and finish.usage is None
    assert finish.choices[0].delta.model_dump(exclude_none=True) == {}
    usage_chunk = chunks[-1]
    assert usage_chunk.choices == [] and usage_chunk.usage is not None
    assert (usage_chunk.usage.prompt_tokens, usage_chunk.usage.completion_tokens) == (30, 88)
    assert all(c.usage is None for c in chunks[:-1])

    client = openai_client(b"".join(blocks))
    with client.chat.completions.stream(model="my-alias", messages=[USER]) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me look both up, é ☀."
    calls = choice.message.tool_calls or []
    assert [(c.function.name, c.function.arguments) for c in calls] == [
        ("weather", '{"city":"Paris"}'),
        ("weather", '{"city":"Oslo"}'),
    ]
    assert calls[0].id.partition(SIGNATURE_MARK)[2] == SIGNATURE_A
    assert CALL_ID.fullmatch(calls[1].id)
    assert (choice.message.model_extra or {})["reasoning_content"] == "Two cities, two calls."
    assert final.usage is not None and final.usage.prompt_tokens_details is not None
    assert final.usage.prompt_tokens_details.cached_tokens == 20
    assert final.usage.completion_tokens_details is not None
    assert final.usage.completion_tokens_details.reasoning_tokens == 9

    # The accumulated message, sent back, carries the signature on its function call.
    assistant = choice.message.model_dump(exclude_none=True)
    follow_up = chat(
        USER,
        assistant,
        {"role": "tool", "tool_call_id": calls[0].id, "content": "18C"},
        {"role": "tool", "tool_call_id": calls[1].id, "content": "4C"},
    )
    parts = translate(follow_up)["contents"][1]["parts"]
    assert parts[1] == {
        "functionCall": {"name": "weather", "args": {"city": "Paris"}},
        "thoughtSignature": SIGNATURE_A,
    }
    assert parts[2] == {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}}


def test_create_with_stream_yields_the_chunks() -> None:
    blocks = [chunk({"text": "Hel"}), chunk({"text": "lo"}, finish_reason="STOP")]
    client = openai_client(b"".join(translated(blocks, include_usage=False)))
    stream = client.chat.completions.create(model="m", messages=[USER], stream=True)
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Hello"
    assert [c.choices[0].finish_reason for c in chunks] == [None, None, None, "stop"]


def test_without_include_usage_the_stream_ends_with_the_finish_chunk_and_done() -> None:
    blocks = translated(
        [chunk({"text": "Hi"}, finish_reason="MAX_TOKENS", promptTokenCount=3)],
        include_usage=False,
    )
    assert len(blocks) == 4 and blocks[-1] == sse.DONE
    first, text, last = (ChatCompletionChunk.model_validate(sse.json_of(b)) for b in blocks[:3])
    assert first.choices[0].delta.role == "assistant"
    assert text.choices[0].delta.content == "Hi"
    assert last.choices[0].finish_reason == "length" and last.usage is None


def test_the_stream_is_not_finished_before_its_terminal_block() -> None:
    translator = chat_to_gemini.StreamTranslator(model="m", include_usage=True)
    assert translator.feed(b": keep-alive\n\n") == []
    assert len(translator.feed(chunk({"text": "a"}, promptTokenCount=1))) == 2
    assert not translator.finished
    assert len(translator.feed(chunk({"text": "b"}))) == 1
    assert not translator.finished
    out = translator.feed(chunk(finish_reason="STOP", promptTokenCount=1, candidatesTokenCount=2))
    assert translator.finished and len(out) == 3 and out[-1] == sse.DONE
    usage = ChatCompletionChunk.model_validate(sse.json_of(out[1])).usage
    assert usage is not None and (usage.prompt_tokens, usage.total_tokens) == (1, 3)


def test_a_blocked_prompt_ends_the_stream_with_content_filter() -> None:
    blocked = sse.encode(
        {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
         "usageMetadata": {"promptTokenCount": 5}, "responseId": "r-1"}
    )  # fmt: skip
    client = openai_client(b"".join(translated([blocked])))
    chunks = list(client.chat.completions.create(model="m", messages=[USER], stream=True))
    assert {c.id for c in chunks} == {"chatcmpl-r-1"}
    assert [c.choices[0].finish_reason for c in chunks[:-1]] == [None, "content_filter"]
    usage = chunks[-1].usage
    assert usage is not None and usage.prompt_tokens == 5
    # The SDK's accumulator parses it too, and reports the filter as it would OpenAI's.
    with (
        client.chat.completions.stream(model="m", messages=[USER]) as stream,
        pytest.raises(openai.ContentFilterFinishReasonError),
    ):
        stream.get_final_completion()


def test_an_error_block_becomes_an_error_chunk_the_sdk_raises() -> None:
    translator = chat_to_gemini.StreamTranslator(model="m", include_usage=True)
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    blocks = translator.feed(chunk({"text": "Hi"}))
    blocks += translator.feed(sse.encode(error))
    assert translator.finished
    assert sse.json_of(blocks[-1]) == {
        "error": {"message": "The model is overloaded.", "type": "server_error", "param": None,
                  "code": "UNAVAILABLE"}
    }  # fmt: skip
    assert translator.feed(chunk(finish_reason="STOP")) == []
    client = openai_client(b"".join(blocks))
    stream = client.chat.completions.create(model="m", messages=[USER], stream=True)
    with pytest.raises(openai.APIError, match="overloaded"):
        list(stream)


@pytest.mark.parametrize(
    "block",
    [b"data: {not json\n\n", b"data: [1, 2]\n\n", sse.encode({"candidates": "x"})],
)
def test_a_stream_block_that_is_not_an_answer_is_a_bad_upstream_response(block: bytes) -> None:
    translator = chat_to_gemini.StreamTranslator(model="m", include_usage=False)
    with pytest.raises(UpstreamBadResponse):
        translator.feed(block)


@pytest.mark.parametrize(
    ("block", "terminal"),
    [
        (chunk({"text": "x"}, finish_reason="STOP"), True),
        (chunk(finish_reason="SAFETY"), True),
        (chunk({"text": "x"}), False),
        (chunk({"text": "finishReason"}), False),
        (sse.encode({"promptFeedback": {"blockReason": "OTHER"}}), True),
        (sse.encode({"promptFeedback": {"safetyRatings": []}, "candidates": []}), False),
        (sse.encode({"error": {"code": 500, "message": "x", "status": "INTERNAL"}}), True),
        (sse.encode({"candidates": [{"finishReason": ""}]}), False),
        (b"data: {finishReason\n\n", False),
        (b": finishReason\n\n", False),
        (sse.DONE, False),
    ],
)
def test_the_stream_ends_at_its_finish_reason(block: bytes, terminal: bool) -> None:
    assert sse.is_gemini_terminal(block) is terminal
    assert sse.terminal_check("generate_content")(block) is terminal


def test_ids_carrying_gemini_fields_are_cut_for_other_models() -> None:
    """What a non-Gemini model is sent: each id made here cut to its head, in calls and
    results alike; anything else untouched."""
    signed = "call_" + "ab" * 12 + "~id~fc_1~ts~Cq+/sig=="
    plain = "call_" + "cd" * 12
    body = {
        "messages": [
            {"role": "assistant", "tool_calls": [
                {"id": signed, "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": plain, "type": "function", "function": {"name": "f", "arguments": "{}"}},
            ]},
            {"role": "tool", "tool_call_id": signed, "content": "a ~ts~ in text stays"},
        ]
    }  # fmt: skip
    cut = chat_to_gemini.portable_ids(orjson.dumps(body))
    assert cut is not None
    messages = orjson.loads(cut)["messages"]
    assert [c["id"] for c in messages[0]["tool_calls"]] == ["call_" + "ab" * 12, plain]
    assert messages[1] == {**body["messages"][1], "tool_call_id": "call_" + "ab" * 12}
    assert chat_to_gemini.portable_ids(orjson.dumps({"messages": [messages[1]]})) is None


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "google", "openai_type"),
    [
        (400, "INVALID_ARGUMENT", "invalid_request_error"),
        (400, "FAILED_PRECONDITION", "invalid_request_error"),
        (401, "UNAUTHENTICATED", "invalid_request_error"),
        (403, "PERMISSION_DENIED", "invalid_request_error"),
        (404, "NOT_FOUND", "invalid_request_error"),
        (429, "RESOURCE_EXHAUSTED", "requests"),
        (500, "INTERNAL", "server_error"),
        (503, "UNAVAILABLE", "server_error"),
        (504, "DEADLINE_EXCEEDED", "server_error"),
        (503, "SOME_NEW_STATUS", "server_error"),
        (409, "SOME_NEW_STATUS", "invalid_request_error"),
    ],
)
def test_google_errors_become_openai_errors(status: int, google: str, openai_type: str) -> None:
    body = {
        "error": {
            "code": status,
            "message": "Nope.",
            "status": google,
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}],
        }
    }
    expected = {"error": {"message": "Nope.", "type": openai_type, "param": None, "code": google}}
    assert orjson.loads(chat_to_gemini.error(status, orjson.dumps(body))) == expected
    # The streaming endpoint may wrap the error in an array.
    assert orjson.loads(chat_to_gemini.error(status, orjson.dumps([body]))) == expected


def test_a_translated_error_is_raised_by_the_sdk_as_its_status_class() -> None:
    google = {"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}}
    body = chat_to_gemini.error(429, orjson.dumps(google))
    client = openai_client(body, status=429, stream=False)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="m", messages=[USER])
    assert caught.value.code == "RESOURCE_EXHAUSTED"
    assert caught.value.type == "requests"
    assert "Quota exceeded." in caught.value.message


@pytest.mark.parametrize(
    "body",
    [
        b"<html>502 Bad Gateway</html>",
        b'{"error": {"message": "x", "type": "server_error"}}',
        b'{"error": "x"}',
        b'[{"error": {"status": "INTERNAL"}}, {}]',
        b'"INTERNAL"',
        b"",
    ],
)
def test_other_error_bodies_pass_unchanged(body: bytes) -> None:
    assert chat_to_gemini.error(502, body) == body


def test_an_id_s_escaped_characters_are_cut_with_it() -> None:
    """A client's JSON may escape ``/`` (``\\/``): the cut goes to the end of the string."""
    raw = b'{"tool_call_id": "call_' + b"ab" * 12 + b'~ts~Cq+\\/sig=="}'
    assert chat_to_gemini.portable_ids(raw) == b'{"tool_call_id": "call_' + b"ab" * 12 + b'"}'
