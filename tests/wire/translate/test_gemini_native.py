"""A Gemini client's request through the door to chat and the Gemini leg back: what the
client sent comes back field for field, but for what the pipeline changed (then the chat
request's version) and the few things left out on purpose."""

from __future__ import annotations

import copy
from typing import Any

from hookgate.wire.translate import chat_to_gemini, gemini_native, gemini_to_chat

PARAMETERS = {  # OpenAPI types, as the google-genai SDK writes a Schema
    "type": "OBJECT",
    "properties": {"city": {"type": "STRING", "description": "Where", "nullable": True}},
    "required": ["city"],
}
REQUEST: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [
            {"text": "<session_context>"}, {"text": "Weather?"},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"},
             "mediaResolution": {"level": "MEDIA_RESOLUTION_HIGH"}},
        ]},
        {"role": "model", "parts": [
            {"text": "Looking it up.", "thoughtSignature": "dGV4dA=="},
            {"text": " In Oslo."},
            {"functionCall": {"id": "weather_1_0", "name": "weather", "args": {"city": "Oslo"}},
             "thoughtSignature": "c2ln"},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "weather_1_0", "name": "weather",
                                  "response": {"output": '{"temp": 3}'}}},
        ]},
        {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "weather", "response": {"output": {"temp": 4}}}},
        ]},
    ],
    "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."},
                                                     {"text": "Answer in English."}]},
    "tools": [
        {"functionDeclarations": [
            {"name": "weather", "description": "The weather", "parameters": PARAMETERS},
            {"name": "shell", "parametersJsonSchema": {"type": "object"}},
        ]},
        {"functionDeclarations": [{"name": "noop"}]},
    ],
    "toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}},
    "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    "generationConfig": {
        "temperature": 1, "topP": 0.95, "topK": 64, "seed": 7, "candidateCount": 1,
        "maxOutputTokens": 4000, "presencePenalty": 0, "frequencyPenalty": 0.5,
        "stopSequences": ["END"], "responseLogprobs": False, "responseModalities": ["TEXT"],
        "mediaResolution": "MEDIA_RESOLUTION_LOW",
        "responseMimeType": "application/json",
        "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "INTEGER"}}},
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 5000},
    },
}  # fmt: skip


def through(
    body: dict[str, Any], *, reasoning: bool = True, change: Any = None, google: bool = False
) -> dict[str, Any]:
    """``body`` through the door (``google``: to a model only Gemini serves), the pipeline
    (``change`` edits the chat request) and the Gemini leg, as the translating provider
    runs it."""
    chat = gemini_to_chat.request(body, model="gemini-2.5-flash", stream=True,
                                  reasoning=reasoning, google_tools=google)  # fmt: skip
    kept = gemini_native.of(body, chat)
    passed = copy.deepcopy(chat)
    if change is not None:
        change(passed)
    return gemini_native.restore(chat_to_gemini.request(passed), passed, kept)


def test_a_gemini_model_gets_what_the_gemini_client_sent() -> None:
    assert through(REQUEST) == REQUEST
    assert through(REQUEST, reasoning=False) == REQUEST  # the budget without an effort


def test_the_translation_alone_loses_what_is_put_back() -> None:
    """What the residue is for: without it, two translations lose each of these."""
    chat = gemini_to_chat.request(REQUEST, model="m", stream=True, reasoning=True)
    plain = chat_to_gemini.request(chat)
    config = plain["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": 8192, "includeThoughts": True}
    assert not {"topK", "mediaResolution", "presencePenalty", "responseSchema"} & set(config)
    assert "safetySettings" not in plain and "role" not in plain["systemInstruction"]
    assert plain["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    assert "parameters" not in plain["tools"][0]["functionDeclarations"][0]


def test_a_setting_the_pipeline_changed_is_sent_as_the_pipeline_left_it() -> None:
    def redact_and_cap(chat: dict[str, Any]) -> None:
        chat["tools"][0]["function"]["description"] = "The <LOCATION_1>"
        chat["max_tokens"] = 100
        chat.pop("reasoning_effort")
        chat["tool_choice"] = "none"

    sent = through(REQUEST, change=redact_and_cap)
    weather = sent["tools"][0]["functionDeclarations"][0]
    assert weather["description"] == "The <LOCATION_1>"  # the client's text never goes
    assert weather["parametersJsonSchema"]["properties"]["city"]["type"] == ["string", "null"]
    assert sent["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    config = sent["generationConfig"]
    assert config["maxOutputTokens"] == 100 and "thinkingConfig" not in config
    assert config["topK"] == 64 and config["seed"] == 7
    assert sent["safetySettings"] == REQUEST["safetySettings"]


def test_the_texts_come_from_the_chat_request() -> None:
    """The conversation is the pipeline's (pii's placeholders), never the client's."""

    def redact(chat: dict[str, Any]) -> None:
        chat["messages"][1]["content"][1]["text"] = "Weather in <LOCATION_1>?"
        chat["messages"][0]["content"] = "You are <X>."

    sent = through(REQUEST, change=redact)
    assert sent["contents"][0]["parts"][1] == {"text": "Weather in <LOCATION_1>?"}
    assert sent["systemInstruction"] == {"role": "user", "parts": [{"text": "You are <X>."}]}


def test_output_schemas_of_functions_and_retrieval_settings_are_left_out() -> None:
    """Text no policy reads (a function's output schema) and the user's location (for
    Google's Search and Maps tools; personal data no policy reads) are not sent."""
    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{
            "name": "f", "response": {"type": "STRING", "description": "jane@example.com"},
            "responseJsonSchema": {"type": "string"},
        }]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"},
                       "retrievalConfig": {"latLng": {"latitude": 59.9, "longitude": 10.7}}},
    }  # fmt: skip
    sent = through(body)
    assert sent["tools"] == [{"functionDeclarations": [{"name": "f"}]}]
    assert sent["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


def test_part_metadata_goes_back_only_to_the_turns_it_pairs_with() -> None:
    """A policy that drops the first turns leaves no turn to pair a signature with; a
    thought the client sends back is left out (its text, the model's, no policy read)."""
    body = copy.deepcopy(REQUEST)
    body["contents"][1]["parts"].insert(0, {"text": "Hmm.", "thought": True})

    def drop_first(chat: dict[str, Any]) -> None:
        del chat["messages"][1]

    assert through(body) == REQUEST
    sent = through(body, change=drop_first)
    assert sent["contents"][0]["parts"][0] == {"text": "Looking it up."}


def test_googles_own_tools_go_back_beside_the_functions_the_pipeline_changed() -> None:
    """Search and URL context are not in the chat request (the policies see functions
    only), and always go back: as the client sent them while the functions are as the
    door wrote them, else after the pipeline's functions."""
    body = {
        "contents": [{"role": "user", "parts": [{"text": "news about Oslo?"}]}],
        "tools": [{"googleSearch": {}},
                  {"functionDeclarations": [{"name": "f", "description": "Oslo"}],
                   "urlContext": {}}],
    }  # fmt: skip
    chat = gemini_to_chat.request(body, model="m", stream=False, reasoning=False,
                                  google_tools=True)  # fmt: skip
    assert [t["function"]["name"] for t in chat["tools"]] == ["f"]
    assert through(body, google=True) == body

    def redact(chat: dict[str, Any]) -> None:
        chat["tools"][0]["function"]["description"] = "<LOCATION_1>"

    sent = through(body, google=True, change=redact)
    assert sent["tools"] == [
        {"functionDeclarations": [{"name": "f", "description": "<LOCATION_1>"}]},
        {"googleSearch": {}},
        {"urlContext": {}},
    ]
