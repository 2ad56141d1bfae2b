"""The ``pii`` policy on Anthropic's Messages API, with the real ``anthropic`` client: every
text the model reads is redacted, every placeholder it writes back is restored (streamed
text and streamed tool input included), and signed thinking blocks pass byte for byte."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from hookgate.config.loader import load_text
from hookgate.redaction.placeholders import PATTERN
from tests.conftest import TEST_STORE, ProxyFactory, anthropic_client
from tests.fakes import Echo, FakeUpstream

KEY = "sk-ant-upstream-secret-0123456789"
EMAIL = "siobhan.obrien@example.org"
PHONE = "459.502.4057"
PERSON = "Siobhan O'Brien"
SIGNATURE = "EqQBCkYIBxgCKkDsigned=="


def pii_proxy(make_proxy: ProxyFactory, upstream: FakeUpstream) -> str:
    return make_proxy(
        loaded=load_text(
            "providers:\n"
            f"  claude: {{type: anthropic, base_url: '{upstream.base_url}', api_key: '{KEY}'}}\n"
            'models:\n  "*": [{provider: claude}]\n'
            f"store: 'sqlite:///{TEST_STORE}'\n"
            "policies:\n  - pii: {secret: 'test-secret-0123456789'}\n"
        )
    )


def test_every_text_the_model_reads_is_redacted_and_thinking_is_untouched(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = pii_proxy(make_proxy, upstream)
    thinking = {"type": "thinking", "thinking": f"They wrote {EMAIL}.", "signature": SIGNATURE}
    messages: list[Any] = [
        {"role": "user", "content": f"I am {PERSON}, mail {EMAIL}."},
        {
            "role": "assistant",
            "content": [
                thinking,
                {"type": "text", "text": f"Calling {PHONE} now."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "call",
                    "input": {"name": PERSON, "number": PHONE},
                },
            ],
        },
        {"role": "system", "content": f"Reminder: the caller is {PERSON}."},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": f"Reached {PERSON} at {PHONE}."}],
                },
                {
                    "type": "document",
                    "title": "Note",
                    "source": {"type": "text", "media_type": "text/plain", "data": f"Mail {EMAIL}"},
                },
                {"type": "text", "text": "Summarise.", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]
    system = [
        {"type": "text", "text": f"Support for {EMAIL}.", "cache_control": {"type": "ephemeral"}}
    ]
    tools: list[Any] = [
        {"name": "call", "description": f"Calls people like {PERSON}.",
         "input_schema": {"type": "object", "properties": {"number": {"type": "string"}}}}
    ]  # fmt: skip
    upstream.push(Echo())
    anthropic_client(url).messages.create(
        model="claude-haiku-4-5", max_tokens=64, system=system, messages=messages, tools=tools
    )
    body = upstream.last.json()
    raw = orjson.dumps({k: v for k, v in body.items() if k != "messages"}).decode()
    history = body["messages"]
    for value in (EMAIL, PHONE, PERSON):
        assert value not in raw
        assert value not in orjson.dumps(history[0]).decode()
        assert value not in orjson.dumps(history[2:]).decode()
    assistant = history[1]["content"]
    assert assistant[0] == thinking  # signed: byte for byte, value and all
    assert PHONE not in orjson.dumps(assistant[1:]).decode()
    assert PERSON not in orjson.dumps(assistant[2]["input"]).decode()
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert history[3]["content"][2]["cache_control"] == {"type": "ephemeral"}
    assert len(set(PATTERN.findall(orjson.dumps(body).decode()))) >= 3


@pytest.mark.parametrize("stream", [False, True])
def test_placeholders_in_text_and_tool_input_come_back_as_the_values(
    make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool
) -> None:
    url = pii_proxy(make_proxy, upstream)
    client = anthropic_client(url)
    asked: dict[str, Any] = {
        "model": "claude-haiku-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": f"Mail {EMAIL} or call {PHONE}."}],
        "tools": [{"name": "record", "input_schema": {"type": "object"}}],
    }
    upstream.push(Echo(pieces=1), Echo(tool="record", pieces=1))  # one character per delta
    for expected in ("text", "tool_use"):
        if stream:
            with client.messages.stream(**asked) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**asked)
        (block,) = message.content
        assert block.type == expected
        seen = upstream.last.body.decode()
        assert EMAIL not in seen and PHONE not in seen
        if block.type == "text":
            assert block.text == f"You said: Mail {EMAIL} or call {PHONE}."
        elif block.type == "tool_use":
            assert block.input == {"text": f"You said: Mail {EMAIL} or call {PHONE}."}
