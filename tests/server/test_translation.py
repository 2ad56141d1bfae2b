"""One alias, two providers' APIs: calls translated at the provider boundary.

The real ``openai`` client reaches an Anthropic target, the real ``anthropic`` client an
OpenAI-compatible one, and an alias whose Anthropic target fails falls back to an OpenAI
one, streamed and not. What cannot be translated is a 400 that names it.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import TEST_STORE, ProxyFactory, anthropic_client, openai_client
from tests.fakes import FakeUpstream, Status

KEY = "sk-ant-upstream-secret-0123456789"
OVERLOADED = Status(529, {"type": "error", "error": {"type": "overloaded_error", "message": "x"}})

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def two_providers(claude: FakeUpstream, gpt: FakeUpstream, extra: str = "") -> str:
    """Alias ``smart``: Claude first, GPT second; ``claude-*`` and ``gpt-*`` direct."""
    return (
        "providers:\n"
        f"  claude: {{type: anthropic, base_url: '{claude.base_url}', api_key: '{KEY}',\n"
        "           max_tokens: 2048}\n"
        f"  gpt: {{base_url: '{gpt.base_url}', api_key: 'sk-openai-secret'}}\n"
        "models:\n"
        "  smart: [{provider: claude, model: claude-sonnet-4-6}, {provider: gpt, model: gpt-4o}]\n"
        "  claude-sonnet-4-6: [{provider: claude}]\n"
        "  gpt-4o: [{provider: gpt}]\n"
        f"store: 'sqlite:///{TEST_STORE}'\n"
        "policies:\n"
        "  - fallback: {retries: 0}\n"
        f"{extra}"
    )


def test_the_openai_client_reaches_an_anthropic_model(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(two_providers(upstream, backup)))
    client = openai_client(url)
    messages: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    first = client.chat.completions.create(
        model="claude-sonnet-4-6", messages=messages, tools=TOOLS
    )
    (call,) = first.choices[0].message.tool_calls or []
    assert first.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather" and call.function.arguments == '{"city":"Paris"}'
    sent = upstream.last.json()
    assert upstream.last.path == "/v1/messages" and upstream.last.headers["x-api-key"] == KEY
    assert upstream.last.headers["anthropic-version"] == "2023-06-01"  # the provider's default
    assert sent["system"] == [{"type": "text", "text": "Be brief."}]
    assert sent["max_tokens"] == 2048  # the provider's default: chat does not require one
    assert sent["tools"][0]["input_schema"] == TOOLS[0]["function"]["parameters"]
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "Sunny"},
    ]
    chunks = list(
        client.chat.completions.create(
            model="claude-sonnet-4-6", messages=messages, tools=TOOLS, stream=True,
            stream_options={"include_usage": True},
        )
    )  # fmt: skip
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "The tool said: Sunny"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5
    result = upstream.last.json()["messages"][-1]
    assert result == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Sunny"}],
    }


@pytest.mark.parametrize("stream", [False, True])
def test_a_failing_claude_target_falls_back_to_gpt(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    url = make_proxy(loaded=load_text(two_providers(upstream, backup)))
    upstream.push(OVERLOADED)
    backup.push(synth.Reply("From GPT."))
    client = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "Hi"}]
    if stream:
        got = client.chat.completions.with_raw_response.create(
            model="smart", messages=messages, stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in got.parse() if c.choices)
    else:
        got = client.chat.completions.with_raw_response.create(model="smart", messages=messages)
        text = str(got.parse().choices[0].message.content)
    assert text == "From GPT."
    assert got.headers["x-hookgate-upstream"] == "gpt/gpt-4o"
    assert got.headers["x-hookgate-attempts"] == "2"
    assert upstream.last.path == "/v1/messages"
    assert backup.last.path == "/v1/chat/completions"


@pytest.mark.parametrize("stream", [False, True])
def test_the_anthropic_client_falls_back_to_gpt_in_its_own_api(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    url = make_proxy(loaded=load_text(two_providers(upstream, backup)))
    upstream.push(OVERLOADED)
    backup.push(synth.Reply("From GPT.", input_tokens=11, output_tokens=3))
    client = anthropic_client(url)
    asked: dict[str, Any] = {
        "model": "smart", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]
    }  # fmt: skip
    if stream:
        with client.messages.stream(**asked) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**asked)
    assert [(b.type, getattr(b, "text", None)) for b in message.content] == [("text", "From GPT.")]
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 3)
    sent = backup.last.json()
    assert sent["model"] == "gpt-4o" and sent["messages"] == [{"role": "user", "content": "Hi"}]


def test_the_anthropic_client_runs_a_tool_round_trip_on_gpt(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(two_providers(upstream, backup)))
    client = anthropic_client(url)
    tools: list[Any] = [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.messages.create(model="gpt-4o", max_tokens=64, messages=messages, tools=tools)
    use = next(b for b in first.content if b.type == "tool_use")
    assert (use.name, use.input) == ("get_weather", {"city": "Paris"})
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny"}],
        },
    ]
    with client.messages.stream(
        model="gpt-4o", max_tokens=64, messages=messages, tools=tools
    ) as events:
        final = events.get_final_message()
    assert [b.type for b in final.content] == ["text"]
    assert final.content[0].text == "The tool said: Sunny"  # type: ignore[union-attr]
    sent = backup.last.json()["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": use.id, "content": "Sunny"}
    assert not upstream.requests
    counted = client.messages.count_tokens(model="gpt-4o", messages=messages, tools=tools)
    assert counted.input_tokens > 20  # counted by hookgate: the provider has no such endpoint


def test_what_cannot_be_translated_is_refused_by_name(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(two_providers(upstream, backup)))
    with pytest.raises(openai.BadRequestError) as chat:
        openai_client(url).chat.completions.create(
            model="claude-sonnet-4-6", messages=[{"role": "user", "content": "Hi"}], n=2
        )
    assert chat.value.param == "n" and "Anthropic" in chat.value.message
    with pytest.raises(anthropic.BadRequestError) as messages:
        anthropic_client(url).messages.create(
            model="gpt-4o",
            max_tokens=8,
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={"top_k": 5},
        )
    assert "top_k" in messages.value.message
    assert not upstream.requests and not backup.requests
