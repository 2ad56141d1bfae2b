"""Every text the model reads is visited; nothing else is; untouched bodies stay the same object."""

from __future__ import annotations

from typing import Any

import orjson

from hookgate.wire.texts import map_messages, map_prompt, map_response

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "sys A"},
    {"role": "developer", "content": [{"type": "text", "text": "dev B"}]},
    {
        "role": "user",
        "name": "Friday",
        "content": [
            {"type": "text", "text": "user C"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            {"type": "input_text", "text": "user D"},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "refusal": "refusal E",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "send", "arguments": '{"to": "args F", "n": 2, "l": ["G"]}'},
            },
            {"id": "call_2", "type": "custom", "custom": {"name": "sh", "input": "custom H"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "tool I"},
    {"role": "assistant", "function_call": {"name": "f", "arguments": "not json J"}},
]

RESPONSES: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "input_text", "text": "input K"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "out L"}]},
    {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"q": "arg M"}'},
    {"type": "function_call_output", "call_id": "c", "output": "output N"},
    {"type": "custom_tool_call", "call_id": "d", "name": "sh", "input": "custom O"},
    # a reasoning item sent back: its summary was restored for the client, so it is
    # redacted again (the same placeholders, so the upstream sees what it wrote)
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "sum P"}]},
    {"type": "reasoning", "id": "rs_2", "encrypted_content": "opaque"},
]


def _upper(text: str) -> str:
    return text.upper()


def _seen(messages: Any) -> list[str]:
    seen: list[str] = []

    def record(text: str) -> str:
        seen.append(text)
        return text

    assert map_messages(messages, record) is messages
    return seen


def test_chat_messages_every_role_and_shape() -> None:
    assert _seen(CHAT) == [
        "sys A", "dev B", "user C", "user D", "refusal E", "args F", "G", "custom H", "tool I",
        "not json J",
    ]  # fmt: skip
    mapped = map_messages(CHAT, _upper)
    assert mapped[2]["name"] == "Friday"  # never touched: the API restricts its characters
    assert mapped[2]["content"][1] == CHAT[2]["content"][1]
    arguments = orjson.loads(mapped[3]["tool_calls"][0]["function"]["arguments"])
    assert arguments == {"to": "ARGS F", "n": 2, "l": ["G"]}
    assert mapped[3]["tool_calls"][1]["custom"]["input"] == "CUSTOM H"
    assert mapped[5]["function_call"]["arguments"] == "NOT JSON J"
    assert CHAT[0]["content"] == "sys A"  # the input is never mutated


def test_responses_items() -> None:
    assert _seen(RESPONSES) == ["input K", "out L", "arg M", "output N", "custom O", "sum P"]
    mapped = map_messages(RESPONSES, _upper)
    assert orjson.loads(mapped[2]["arguments"]) == {"q": "ARG M"}
    assert mapped[5]["summary"][0]["text"] == "SUM P"
    assert mapped[6] is RESPONSES[6]


def test_prompts_and_responses() -> None:
    assert map_prompt("a", _upper) == "A"
    assert map_prompt(["a", "b"], _upper) == ["A", "B"]
    tokens = [[1, 2, 3]]
    assert map_prompt(tokens, _upper) is tokens
    body = {"choices": [{"message": {"content": "x", "tool_calls": [{"function": {
        "arguments": '{"a": "y"}'}}]}}]}  # fmt: skip
    flags: list[tuple[str, bool]] = []

    def record(text: str, json: bool) -> str:
        flags.append((text, json))
        return text

    assert map_response(body, record) is body
    assert ('{"a": "y"}', True) in flags and ("x", False) in flags
