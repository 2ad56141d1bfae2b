"""Where the system prompt lives in each API, read and written without mutation."""

from __future__ import annotations

import copy

import pytest

from hookgate.errors import InvalidRequest
from hookgate.wire import prompts


def test_chat_reads_first_system_or_developer_message() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "u"},
            {"role": "developer", "content": "d"},
            {"role": "system", "content": "later"},
        ]
    }
    assert prompts.system_prompt_of("chat.completions", body) == "d"


def test_chat_write_keeps_shape_and_never_mutates() -> None:
    body = {
        "model": "m",
        "messages": [
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": "a"},
                    {"type": "image_url", "image_url": {}},
                    {"type": "text", "text": "b"},
                ],
                "name": "n",
            },
            {"role": "user", "content": "u"},
        ],
    }
    before = copy.deepcopy(body)
    out = prompts.with_system_prompt("chat.completions", body, "NEW")
    assert body == before
    assert out["messages"][0] == {
        "role": "system",
        "name": "n",
        "content": [{"type": "text", "text": "NEW"}, {"type": "image_url", "image_url": {}}],
    }
    assert prompts.system_prompt_of("chat.completions", body) == "a\nb"


def test_chat_without_system_message_gets_one() -> None:
    out = prompts.with_system_prompt(
        "chat.completions", {"messages": [{"role": "user", "content": "u"}]}, "S"
    )
    assert out["messages"] == [{"role": "system", "content": "S"}, {"role": "user", "content": "u"}]


def test_responses_instructions_then_items() -> None:
    assert prompts.system_prompt_of("responses", {"instructions": "i", "input": "x"}) == "i"
    items = {"input": [{"role": "developer", "content": [{"type": "input_text", "text": "dev"}]}]}
    assert prompts.system_prompt_of("responses", items) == "dev"
    out = prompts.with_system_prompt("responses", items, "NEW")
    assert out["input"][0]["content"] == [{"type": "input_text", "text": "NEW"}]
    assert prompts.with_system_prompt("responses", {"input": "x"}, "S") == {
        "input": "x",
        "instructions": "S",
    }


def test_messages_of_each_api() -> None:
    assert prompts.messages_of("responses", {"input": "hi"}) == [{"role": "user", "content": "hi"}]
    assert prompts.messages_of("embeddings", {"input": "hi"}) is None
    with pytest.raises(InvalidRequest):
        prompts.messages_of("chat.completions", {"messages": {"role": "user"}})
