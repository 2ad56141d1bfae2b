"""A Gemini API client (Gemini CLI, ``google-genai``) served through Chat Completions:
requests as Gemini CLI 0.61 sends them, answers and streams read back by the real
``google-genai`` types."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from google.genai import types

from hookgate.errors import InvalidRequest, UpstreamBadResponse
from hookgate.wire import sse
from hookgate.wire.translate import chat_to_gemini, gemini_to_chat

SIGNATURE = "CiQBIGEgc2lnbmF0dXJlIG9mIHRob3VnaHQ="
SHELL = {
    "name": "run_shell_command",
    "description": "Runs a shell command.",
    "parametersJsonSchema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}


def cli_body(*turns: dict[str, Any]) -> dict[str, Any]:
    """A request as Gemini CLI 0.61 sends it (fields observed, texts shortened)."""
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "<session_context>...</session_context>"},
                                       {"text": "Greet jane@example.com"}]},
            *turns,
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": [SHELL]}],
        "generationConfig": {"temperature": 1, "topP": 0.95, "topK": 64,
                             "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 8192}},
    }  # fmt: skip


CALL_TURN = {
    "role": "model",
    "parts": [
        {"text": "Let me think", "thought": True},
        {"functionCall": {"id": "run_shell_command_1_0", "name": "run_shell_command",
                          "args": {"command": "echo hi"}}, "thoughtSignature": SIGNATURE},
    ],
}  # fmt: skip
RESULT_TURN = {
    "role": "user",
    "parts": [{"functionResponse": {"id": "run_shell_command_1_0", "name": "run_shell_command",
                                    "response": {"output": "hi"}}}],
}  # fmt: skip


def test_a_gemini_cli_request_becomes_a_chat_request() -> None:
    """topK is dropped, and the thinking budget for a model that may not reason; the
    rest is translated field by field."""
    chat = gemini_to_chat.request(
        cli_body(), model="gemini-2.5-flash", stream=True, reasoning=False
    )
    assert chat == {
        "model": "gemini-2.5-flash",
        "messages": [
            {"role": "system", "content": "You are Gemini CLI."},
            {"role": "user", "content": [
                {"type": "text", "text": "<session_context>...</session_context>"},
                {"type": "text", "text": "Greet jane@example.com"},
            ]},
        ],
        "temperature": 1,
        "top_p": 0.95,
        "tools": [{"type": "function", "function": {
            "name": "run_shell_command", "description": "Runs a shell command.",
            "parameters": SHELL["parametersJsonSchema"],
        }}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }  # fmt: skip


def test_a_tool_round_trip_keeps_gemini_ids_and_signatures_for_a_gemini_target() -> None:
    """The call's id and thought signature ride in the chat id; the Gemini translation
    gives them back byte for byte; thoughts in the history are dropped."""
    chat = gemini_to_chat.request(
        cli_body(CALL_TURN, RESULT_TURN), model="m", stream=False, reasoning=False
    )
    assistant, tool = chat["messages"][2:]
    (call,) = assistant["tool_calls"]
    assert assistant["content"] is None
    assert call["function"] == {"name": "run_shell_command", "arguments": '{"command":"echo hi"}'}
    assert tool == {"role": "tool", "tool_call_id": call["id"], "content": "hi"}
    back = chat_to_gemini.request(chat)["contents"]
    assert back[1] == {"role": "model", "parts": [
        {"functionCall": {"name": "run_shell_command", "args": {"command": "echo hi"},
                          "id": "run_shell_command_1_0"}, "thoughtSignature": SIGNATURE},
    ]}  # fmt: skip
    assert back[2] == RESULT_TURN
    # for any other target the id is cut to its head, call and result alike
    cut = orjson.loads(chat_to_gemini.portable_ids(orjson.dumps(chat)) or b"")
    assert cut["messages"][2]["tool_calls"][0]["id"] == cut["messages"][3]["tool_call_id"]
    assert len(cut["messages"][3]["tool_call_id"]) == len("call_") + 24


def test_a_call_keeps_its_chat_id_as_the_conversation_grows() -> None:
    later = cli_body(CALL_TURN, RESULT_TURN, {"role": "model", "parts": [{"text": "Done"}]},
                     {"role": "user", "parts": [{"text": "again"}]})  # fmt: skip
    first = gemini_to_chat.request(
        cli_body(CALL_TURN, RESULT_TURN), model="m", stream=False, reasoning=False
    )
    second = gemini_to_chat.request(later, model="m", stream=False, reasoning=False)
    assert first["messages"][2] == second["messages"][2]


def test_a_function_response_without_id_answers_the_earliest_call_of_its_name() -> None:
    calls = {"role": "model", "parts": [
        {"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "a", "args": {}}},
    ]}  # fmt: skip
    results = {"role": "user", "parts": [
        {"functionResponse": {"name": "a", "response": {"n": 1}}},
        {"functionResponse": {"name": "a", "response": {"n": 2}}},
        {"text": "and now?"},
    ]}  # fmt: skip
    chat = gemini_to_chat.request(
        {"contents": [calls, results]}, model="m", stream=False, reasoning=False
    )
    assistant, first, second, user = chat["messages"]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert [first["tool_call_id"], second["tool_call_id"]] == ids
    assert ids[0] != ids[1]
    assert (first["content"], second["content"]) == ('{"n":1}', '{"n":2}')
    assert user == {"role": "user", "content": "and now?"}
    orphan = {"role": "user", "parts": [{"functionResponse": {"name": "b", "response": {}}}]}
    with pytest.raises(InvalidRequest, match="answers no earlier functionCall"):
        gemini_to_chat.request(
            {"contents": [calls, orphan]}, model="m", stream=False, reasoning=False
        )


def test_media_schemas_and_tool_choices_are_translated() -> None:
    body = {
        "contents": [{"parts": [
            {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}},
            {"inlineData": {"mimeType": "audio/mpeg", "data": "SUQz"}},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBE"}},
        ]}],
        "tools": [{"functionDeclarations": [{"name": "f", "parameters": {
            "type": "OBJECT", "properties": {"x": {"type": "STRING", "nullable": True}},
        }}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}},
        "generationConfig": {"maxOutputTokens": 99, "stopSequences": ["END"], "seed": 3,
                             "responseMimeType": "application/json",
                             "responseSchema": {"type": "ARRAY", "items": {"type": "INTEGER"}}},
    }  # fmt: skip
    chat = gemini_to_chat.request(body, model="m", stream=False, reasoning=False)
    assert chat["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
        {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE"}},
    ]
    assert chat["tools"][0]["function"]["parameters"] == {
        "type": "object", "properties": {"x": {"type": ["string", "null"]}},
    }  # fmt: skip
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert (chat["max_tokens"], chat["stop"], chat["seed"]) == (99, ["END"], 3)
    assert chat["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "output", "schema": {"type": "array", "items": {"type": "integer"}},
    }}  # fmt: skip


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"contents": [], "cachedContent": "cachedContents/1"}, "cachedContent"),
        ({"contents": [], "tools": [{"googleSearch": {}}]}, "tools[0].googleSearch"),
        ({"contents": [], "generationConfig": {"candidateCount": 2}},
         "generationConfig.candidateCount"),
        ({"contents": [], "generationConfig": {"responseModalities": ["AUDIO"]}},
         "generationConfig.responseModalities"),
        ({"contents": [{"parts": [{"fileData": {"fileUri": "gs://b/f"}}]}]},
         "contents[0].parts[0].fileData"),
        ({"contents": [], "surprise": 1}, "surprise"),
        ({"contents": "hi"}, "contents"),
    ],
)  # fmt: skip
def test_what_cannot_be_translated_is_refused_naming_the_field(
    body: dict[str, Any], param: str
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        gemini_to_chat.request(body, model="m", stream=False, reasoning=False)
    assert refused.value.param == param


def test_googles_own_tools_are_left_to_a_gemini_model_and_refused_for_any_other() -> None:
    """Search and URL context are left out of the chat request when only Gemini serves
    the model; refused when another may; the tools chat cannot answer are refused always."""
    body = {"contents": [{"role": "user", "parts": [{"text": "news?"}]}],
            "tools": [{"googleSearch": {}}, {"urlContext": {}}]}  # fmt: skip
    chat = gemini_to_chat.request(body, model="m", stream=False, reasoning=False,
                                  google_tools=True)  # fmt: skip
    assert "tools" not in chat and "tool_choice" not in chat
    with pytest.raises(InvalidRequest) as refused:
        gemini_to_chat.request(body, model="m", stream=False, reasoning=False)
    assert refused.value.param == "tools[0].googleSearch"
    assert "every target of which is a Gemini provider" in str(refused.value)
    for tool in ({"codeExecution": {}}, {"googleMaps": {}}, {"fileSearch": {}}):
        with pytest.raises(InvalidRequest) as never:
            gemini_to_chat.request({**body, "tools": [tool]}, model="m", stream=False,
                                   reasoning=False, google_tools=True)  # fmt: skip
        assert never.value.param == f"tools[0].{next(iter(tool))}"


GROUNDING = {
    "groundingMetadata": {"webSearchQueries": ["oslo news"],
                          "groundingChunks": [{"web": {"uri": "https://x.no", "title": "x.no"}}]},
    "urlContextMetadata": {"urlMetadata": [{"retrievedUrl": "https://x.no"}]},
}  # fmt: skip


def test_what_googles_tools_found_comes_back_on_the_candidate() -> None:
    """A Gemini answer's grounding rides the chat choice (chat_to_gemini) and is put back
    on the candidate as it was, answered whole or streamed (on the last chunk)."""
    gemini = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Calm."}]},
                              "finishReason": "STOP", "index": 0, **GROUNDING}],
              "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}}  # fmt: skip
    chat = chat_to_gemini.response(gemini, model="g")
    (candidate,) = gemini_to_chat.response(chat, model="g")["candidates"]
    assert {k: candidate[k] for k in GROUNDING} == GROUNDING

    upstream = chat_to_gemini.StreamTranslator(model="g", include_usage=True)
    door = gemini_to_chat.StreamTranslator(model="g")
    blocks = [sse.encode(gemini)]
    out = [b for block in blocks for chat_block in upstream.feed(block)
           for b in door.feed(chat_block)]  # fmt: skip
    *first, last = [types.GenerateContentResponse.model_validate(sse.json_of(b)) for b in out]
    assert all(c.candidates[0].grounding_metadata is None for c in first)  # type: ignore[index]
    got = last.candidates[0].model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[index]
    assert {k: got[k] for k in GROUNDING} == GROUNDING


def test_a_segment_moved_by_a_restored_value_is_placed_on_its_text_again() -> None:
    """pii restored a value longer than its placeholder before the second segment (its
    text restored too, its offsets the model's): the offsets are set where its text is
    (UTF-8 bytes); a segment whose offsets still span its text is left as it was."""
    text = "jane.doe@example.com won. Chess is fun, é."
    supports = [
        {"segment": {"endIndex": 25, "text": "jane.doe@example.com won."}},
        {"segment": {"startIndex": 23, "endIndex": 38, "text": "Chess is fun, é."},
         "groundingChunkIndices": [0]},
    ]  # fmt: skip
    grounding = {"groundingMetadata": {"groundingSupports": supports}}
    choice = {"index": 0, "finish_reason": "stop", "gemini_candidate": grounding,
              "message": {"role": "assistant", "content": text}}  # fmt: skip
    chat = {"id": "c", "choices": [choice], "usage": {}}
    (candidate,) = gemini_to_chat.response(chat, model="g")["candidates"]
    first, second = candidate["groundingMetadata"]["groundingSupports"]
    assert first == supports[0]
    assert second == {**supports[1], "segment": {
        "startIndex": 26, "endIndex": 26 + len("Chess is fun, é.".encode()),
        "text": "Chess is fun, é.",
    }}  # fmt: skip


def answer(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", **message},
                     "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17,
                  "prompt_tokens_details": {"cached_tokens": 4},
                  "completion_tokens_details": {"reasoning_tokens": 2}},
    }  # fmt: skip


def test_a_chat_answer_becomes_a_generate_content_response() -> None:
    made = f"call_{'ab' * 12}{chat_to_gemini.ID_MARK}g-1{chat_to_gemini.SIGNATURE_MARK}{SIGNATURE}"
    out = gemini_to_chat.response(answer({
        "content": "Running it.", "reasoning_content": "Hm.",
        "tool_calls": [
            {"id": "call_openai_XYZ", "type": "function",
             "function": {"name": "run_shell_command", "arguments": '{"command":"ls"}'}},
            {"id": made, "type": "function", "function": {"name": "f", "arguments": "{}"}},
        ]}, "tool_calls"), model="gemini-2.5-flash")  # fmt: skip
    parsed = types.GenerateContentResponse.model_validate(out)
    assert parsed.text == "Running it."
    assert [(c.id, c.name, c.args) for c in parsed.function_calls or []] == [
        ("call_openai_XYZ", "run_shell_command", {"command": "ls"}),
        ("g-1", "f", {}),
    ]
    parts = out["candidates"][0]["content"]["parts"]
    assert parts[0] == {"text": "Hm.", "thought": True}
    assert parts[3]["thoughtSignature"] == SIGNATURE
    assert out["candidates"][0]["finishReason"] == "STOP"
    assert out["usageMetadata"] == {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                    "thoughtsTokenCount": 2, "cachedContentTokenCount": 4,
                                    "totalTokenCount": 17}  # fmt: skip
    assert out["modelVersion"] == "gemini-2.5-flash"
    length = gemini_to_chat.response(answer({"content": "cut"}, "length"), model="m")
    assert length["candidates"][0]["finishReason"] == "MAX_TOKENS"
    with pytest.raises(UpstreamBadResponse):
        gemini_to_chat.response({"choices": []}, model="m")


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return sse.encode({"id": "chatcmpl-9", "object": "chat.completion.chunk",
                       "choices": [choice], **extra})  # fmt: skip


def test_a_chat_stream_becomes_a_gemini_stream_text_as_it_comes() -> None:
    """Text deltas leave at once; a tool call's pieces are sent whole in the last chunk,
    with the finish reason and the usage of the usage chunk after it."""
    translator = gemini_to_chat.StreamTranslator(model="gemini-2.5-flash")
    first = translator.feed(chunk({"role": "assistant", "content": "Hel"}))
    second = translator.feed(chunk({"content": "lo"}))
    pieces = [
        chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                               "function": {"name": "run_shell_command", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"command":'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"ls"}'}}]}),
        chunk({}, "tool_calls"),
    ]  # fmt: skip
    held = [b for p in pieces for b in translator.feed(p)]
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    last = translator.feed(sse.encode({"id": "chatcmpl-9", "choices": [], "usage": usage}))
    assert translator.finished and translator.feed(sse.DONE) == []
    assert held == []
    texts = [types.GenerateContentResponse.model_validate(sse.json_of(b)).text
             for b in first + second]  # fmt: skip
    assert texts == ["Hel", "lo"]
    (end,) = last
    final = types.GenerateContentResponse.model_validate(sse.json_of(end))
    assert [(c.id, c.args) for c in final.function_calls or []] == [("call_1", {"command": "ls"})]
    assert final.candidates is not None and final.candidates[0].finish_reason == "STOP"
    assert final.usage_metadata is not None and final.usage_metadata.total_token_count == 5


def test_a_stream_ends_at_done_and_an_error_chunk_is_a_google_error() -> None:
    translator = gemini_to_chat.StreamTranslator(model="m")
    translator.feed(chunk({"content": "x"}, "stop"))
    (end,) = translator.feed(sse.DONE)
    assert sse.json_of(end)["candidates"][0]["finishReason"] == "STOP"
    failing = gemini_to_chat.StreamTranslator(model="m")
    error = {"error": {"message": "overloaded", "type": "server_error", "code": "UNAVAILABLE"}}
    (block,) = failing.feed(sse.encode(error))
    assert sse.json_of(block) == {
        "error": {"code": 500, "message": "overloaded", "status": "UNAVAILABLE"}
    }
    assert failing.finished


@pytest.mark.parametrize(
    ("thinking", "effort"),
    [
        ({"includeThoughts": True, "thinkingBudget": 8192}, "medium"),
        ({"thinkingBudget": 512}, "low"),
        ({"thinkingBudget": 30000}, "high"),
        ({"thinkingBudget": 0}, "none"),
        ({"thinkingBudget": -1}, None),
        ({"thinkingLevel": "HIGH"}, "high"),
        ({"thinking_budget": 3000}, "medium"),  # google-genai's spelling, which Gemini reads
        ({"thinking_level": "LOW"}, "low"),
    ],
)
def test_a_thinking_budget_is_an_effort_only_for_models_that_reason(
    thinking: dict[str, Any], effort: str | None
) -> None:
    body = {"contents": [], "generationConfig": {"thinkingConfig": thinking}}
    chat = gemini_to_chat.request(body, model="m", stream=False, reasoning=True)
    assert chat.get("reasoning_effort") == effort
    assert "reasoning_effort" not in gemini_to_chat.request(
        body, model="m", stream=False, reasoning=False
    )


def test_the_gemini_clis_thinking_budget_reaches_a_gemini_model_unchanged() -> None:
    chat = gemini_to_chat.request(cli_body(), model="gemini-2.5-flash", stream=True, reasoning=True)
    sent = chat_to_gemini.request(chat)["generationConfig"]
    assert sent["thinkingConfig"] == {"thinkingBudget": 8192, "includeThoughts": True}
