"""The hook contract through the real proxy: order, fast path, blocking, stream transforms."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import orjson
import pytest

from hookgate.wire import synth
from tests.conftest import ProxyFactory, openai_client
from tests.fakes import FakeUpstream
from tests.policies_for_tests import LOGS

RECORDERS = """
policies:
  - tests.policies_for_tests:Recorder: {label: a}
  - tests.policies_for_tests:Recorder: {label: b}
"""


@pytest.fixture(autouse=True)
def clean_logs() -> Iterator[None]:
    LOGS.clear()
    yield
    LOGS.clear()


def test_composition_order_non_streamed(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    url = make_proxy(RECORDERS)
    response = httpx.post(
        f"{url}/chat/completions",
        json={
            "model": "m",
            "messages": [{"role": "system", "content": "base"}, {"role": "user", "content": "hi"}],
        },
    )
    assert LOGS["default"] == [
        "a:system",
        "b:system",  # transformers, listed order
        "a:convert",
        "b:convert",
        "a:before",
        "b:before",  # onion: first listed outermost
        "b:after",
        "a:after",
        "b:response",
        "a:response",  # response hooks: reverse order
    ]
    sent = upstream.last.json()["messages"]
    assert sent[0] == {"role": "system", "content": "base[a][b]"}
    assert [m["content"] for m in sent[2:]] == ["from a", "from b"]
    assert response.json()["marks"] == ["b", "a"]


def test_stream_transforms_run_in_reverse_and_flush_everything(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(RECORDERS)
    upstream.push(synth.Reply(text="hello world", pieces=5))
    stream = openai_client(url).chat.completions.create(model="m", messages=[], stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    # b is innermost: its transform runs first, a wraps b's output
    assert text == "a(b(hello world))"
    assert LOGS["default"][-2:] == ["b:stream", "a:stream"]


def test_stream_transform_rewrites_tool_arguments(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy("policies:\n  - tests.policies_for_tests:Recorder: {label: t}\n")
    upstream.push(
        synth.Reply(
            tool_calls=[synth.ToolCall("c1", "f", '{"x": 1}'), synth.ToolCall("c2", "g", "{}")]
        )
    )
    stream = openai_client(url).chat.completions.create(model="m", messages=[], stream=True)
    arguments: dict[int, str] = {}
    for chunk in stream:
        for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            arguments[call.index] = arguments.get(call.index, "") + (call.function.arguments or "")  # type: ignore[union-attr]
    assert arguments == {0: 't({"x": 1})', 1: "t({})"}


def test_responses_stream_transform_keeps_final_events_consistent(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy("policies:\n  - tests.policies_for_tests:Recorder: {label: r}\n")
    upstream.push(synth.Reply(text="streamed text", pieces=4))
    with openai_client(url).responses.stream(model="m", input="x") as stream:
        deltas = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert deltas == final.output_text == "r(streamed text)"


def test_responses_system_prompt_in_instructions(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(RECORDERS)
    openai_client(url).responses.create(model="m", input="hi", instructions="be brief")
    sent = upstream.last.json()
    assert sent["instructions"] == "be brief[a][b]"
    assert sent["input"][0] == {"role": "user", "content": "hi"}


def test_policy_block_is_an_openai_error(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    url = make_proxy("policies:\n  - tests.policies_for_tests:BlockWord: {word: forbidden}\n")
    with pytest.raises(openai.BadRequestError) as info:
        openai_client(url).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "a forbidden thing"}]
        )
    assert info.value.code == "word_blocked"
    assert upstream.requests == []
    assert (
        openai_client(url)
        .chat.completions.create(model="m", messages=[])
        .choices[0]
        .message.content
    )


def test_the_upstream_gets_what_the_policies_checked_not_the_bytes_sent(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """A duplicate key is read as its last value; relaying the bytes as sent would carry the
    first one past every policy (to an upstream that keeps the first, or into its logs)."""
    url = make_proxy("policies:\n  - tests.policies_for_tests:BlockWord: {word: forbidden}\n")
    raw = (
        b'{"model": "m",   "messages": [{"role": "user", "content": "forbidden"}],'
        b' "messages": [], "odd_spacing": true}'
    )
    assert httpx.post(f"{url}/chat/completions", content=raw).status_code == 200
    assert upstream.last.body == b'{"model":"m","messages":[],"odd_spacing":true}'


def test_system_prompt_policy_chat_and_content_parts(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy("""
policies:
  - system_prompt: {prepend: "ORG RULES", append: "Be kind."}
""")
    c = openai_client(url)
    c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert upstream.last.json()["messages"][0] == {
        "role": "system",
        "content": "ORG RULES\n\nBe kind.",
    }
    c.chat.completions.create(
        model="m",
        messages=[
            {
                "role": "developer",
                "content": [{"type": "text", "text": "dev"}, {"type": "text", "text": "more"}],
            },
            {"role": "user", "content": "hi"},
        ],
    )
    first = upstream.last.json()["messages"][0]
    assert first == {
        "role": "developer",
        "content": [{"type": "text", "text": "ORG RULES\n\ndev\nmore\n\nBe kind."}],
    }
    c.responses.create(
        model="m",
        input=[{"role": "system", "content": "sys item"}, {"role": "user", "content": "u"}],
    )
    assert upstream.last.json()["input"][0]["content"] == "ORG RULES\n\nsys item\n\nBe kind."
    assert "instructions" not in upstream.last.json()


def test_system_prompt_template(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    url = make_proxy("""
policies:
  - system_prompt: {template: 'Agent {agent}. {prompt} Keep {"json": "braces"}.'}
""")
    httpx.post(
        f"{url}/chat/completions",
        headers={"x-hookgate-agent": "planner"},
        json={"model": "m", "messages": [{"role": "system", "content": "Base."}]},
    )
    assert (
        upstream.last.json()["messages"][0]["content"]
        == 'Agent planner. Base. Keep {"json": "braces"}.'
    )


def test_bad_messages_shape_is_400_not_500(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy("policies:\n  - system_prompt: {prepend: x}\n")
    response = httpx.post(
        f"{url}/chat/completions", content=orjson.dumps({"model": "m", "messages": "nope"})
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages"
    assert upstream.requests == []
