"""The ``pii`` policy on Anthropic's Messages API, with the real ``anthropic`` client: every
text the model reads is redacted, every placeholder it writes back is restored (streamed
text and streamed tool input included), and signed thinking blocks pass byte for byte."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from hookgate.config.loader import load_text
from hookgate.redaction.placeholders import PATTERN, placeholder
from tests.conftest import TEST_STORE, ProxyFactory, anthropic_client
from tests.fakes import Echo, Events, FakeUpstream

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


def test_a_token_count_sends_the_provider_what_the_call_would(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """count_tokens runs the prompt hooks too: the provider counts (and sees) the redacted
    prompt, with the system prompt the call itself would carry."""
    url = make_proxy(
        loaded=load_text(
            "providers:\n"
            f"  claude: {{type: anthropic, base_url: '{upstream.base_url}', api_key: '{KEY}'}}\n"
            'models:\n  "*": [{provider: claude}]\n'
            f"store: 'sqlite:///{TEST_STORE}'\n"
            "policies:\n  - system_prompt: {prepend: 'Org rules.'}\n"
            "  - pii: {secret: 'test-secret-0123456789'}\n"
        )
    )
    counted = anthropic_client(url).messages.count_tokens(
        model="claude-sonnet-4-6",
        system=f"Write as {PERSON}.",
        messages=[{"role": "user", "content": f"Mail me at {EMAIL} please"}],
    )
    assert counted.input_tokens > 0
    sent = upstream.last.json()
    assert upstream.last.path == "/v1/messages/count_tokens"
    assert EMAIL not in upstream.last.body.decode() and PERSON not in upstream.last.body.decode()
    assert PATTERN.search(sent["messages"][0]["content"])
    assert sent["system"].startswith("Org rules.")


def test_a_streamed_citation_quotes_the_original_not_the_placeholder(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """A citations_delta arrives whole; its quoted text is restored like the text."""
    stand_in = placeholder(b"test-secret-0123456789", "EMAIL_ADDRESS", EMAIL)
    citation = {"type": "char_location", "cited_text": f"Mail {stand_in}", "document_index": 0,
                "document_title": f"Notes for {stand_in}", "start_char_index": 0,
                "end_char_index": 10}  # fmt: skip
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": "", "citations": []}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "citations_delta", "citation": citation}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": f"Write to {stand_in}."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 9},
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    upstream.push(
        Events([b"event: %s\ndata: %s\n\n" % (n.encode(), orjson.dumps(d)) for n, d in events])
    )
    with anthropic_client(pii_proxy(make_proxy, upstream)).messages.stream(
        model="claude-sonnet-4-6", max_tokens=64,
        messages=[{"role": "user", "content": f"Where do I write to {EMAIL}?"}],
    ) as stream:  # fmt: skip
        message = stream.get_final_message()
    block = message.content[0]
    assert block.type == "text" and block.text == f"Write to {EMAIL}."
    (cited,) = block.citations or []
    assert cited.cited_text == f"Mail {EMAIL}"
    assert cited.document_title == f"Notes for {EMAIL}"  # type: ignore[union-attr]
