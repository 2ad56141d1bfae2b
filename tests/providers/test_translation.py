"""One alias, two providers' APIs: calls translated at the provider boundary.

The real ``openai`` client reaches an Anthropic target (Chat Completions and the
Responses API), the real ``anthropic`` client an OpenAI-compatible one, a Responses call
a chat-only provider, and an alias whose Anthropic target fails falls back to an OpenAI
one, streamed and not. What cannot be translated is a 400 that names it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai
import orjson
import pytest
from openai.types.responses import Response

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import TEST_STORE, ProxyFactory, anthropic_client, openai_client
from tests.fakes import Events, FakeUpstream, Raw, Status
from tests.spend import settled

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


def two_providers(
    claude: FakeUpstream, gpt: FakeUpstream, extra: str = "", store: Path = TEST_STORE
) -> str:
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
        f"store: 'sqlite:///{store}'\n"
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


BUDGET = "  - budget: {limits: [{scope: key, usd: 5}]}\n"
RESPONSES_TOOLS: list[Any] = [{"type": "function", **TOOLS[0]["function"]}]


def responses_answer(client: openai.OpenAI, stream: bool, **asked: Any) -> Response:
    """The Responses answer to ``asked``: parsed, or the stream's final response."""
    if not stream:
        return client.responses.create(**asked)
    with client.responses.stream(**asked) as events:
        return events.get_final_response()


@pytest.mark.parametrize("stream", [False, True])
def test_the_responses_client_reaches_an_anthropic_model(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    backup: FakeUpstream,
    stream: bool,
    tmp_path: Path,
) -> None:
    """A tool round trip with signed thinking: the reasoning item the client got back
    carries the thinking block, sent again byte for byte on the next call; spend prices
    cache reads and writes at their own rates."""
    db = tmp_path / "spend.db"
    url = make_proxy(loaded=load_text(two_providers(upstream, backup, BUDGET, store=db)))
    first = synth.Reply(
        tool_calls=[synth.ToolCall("toolu_1", "get_weather", '{"city":"Paris"}')],
        thinking="The user wants the weather.",
        input_tokens=100, output_tokens=20, cache_creation_tokens=1000,
    )  # fmt: skip
    upstream.push(first, synth.Reply("Sunny in Paris.", input_tokens=50, cache_read_tokens=1000))
    client = openai_client(url)
    asked: dict[str, Any] = {
        "model": "claude-sonnet-4-6", "instructions": "Be brief.", "tools": RESPONSES_TOOLS,
        "reasoning": {"effort": "low"}, "max_output_tokens": 4000,
    }  # fmt: skip
    items: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]

    answer = responses_answer(client, stream, input=items, **asked)
    assert [item.type for item in answer.output] == ["reasoning", "function_call"]
    reasoning, call = answer.output
    assert reasoning.summary[0].text == "The user wants the weather."  # type: ignore[union-attr]
    assert (call.name, call.arguments, call.call_id) == (  # type: ignore[union-attr]
        "get_weather", '{"city":"Paris"}', "toolu_1"
    )  # fmt: skip
    sent = upstream.last.json()
    assert upstream.last.path == "/v1/messages"
    assert sent["system"] == [{"type": "text", "text": "Be brief."}]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert sent["max_tokens"] == 4000 and sent["tools"][0]["name"] == "get_weather"
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (1100, 20)

    items += [item.model_dump(exclude_none=True) for item in answer.output]
    items.append({"type": "function_call_output", "call_id": "toolu_1", "output": "Sunny"})
    final = responses_answer(client, stream, input=items, **asked)
    assert final.output_text == "Sunny in Paris." and final.status == "completed"
    assistant, results = upstream.last.json()["messages"][1:]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": first.thinking, "signature": first.signature},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny"}
    ]
    # claude-sonnet-4-6 per million tokens: input $3, output $15, cache reads $0.30,
    # cache writes $3.75
    usd = (100 * 3 + 1000 * 3.75 + 20 * 15 + 50 * 3 + 1000 * 0.30 + 5 * 15) / 1e6
    assert settled(db) == (pytest.approx(usd), 2)


@pytest.mark.parametrize("stream", [False, True])
def test_a_failing_claude_target_falls_back_to_gpt_on_the_responses_api(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    url = make_proxy(loaded=load_text(two_providers(upstream, backup)))
    upstream.push(OVERLOADED)
    backup.push(synth.Reply("From GPT."))
    answer = responses_answer(openai_client(url), stream, model="smart", input="Hi")
    assert answer.output_text == "From GPT."
    assert upstream.last.path == "/v1/messages"
    assert backup.last.path == "/v1/responses"  # GPT speaks the client's API: no translation


def test_an_anthropic_error_reaches_a_responses_client_in_openai_shape(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(two_providers(upstream, backup)))
    upstream.push(OVERLOADED)
    with pytest.raises(openai.InternalServerError) as caught:
        openai_client(url).responses.create(model="claude-sonnet-4-6", input="Hi")
    assert caught.value.status_code == 529 and caught.value.code == "overloaded_error"


@pytest.mark.parametrize("stream", [False, True])
def test_a_chat_only_provider_serves_the_responses_api(
    make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool
) -> None:
    """``apis: [chat.completions]``: the Responses call is sent as chat, with usage asked
    for in a stream, and comes back as a Responses answer."""
    config = (
        f"providers: {{local: {{base_url: '{upstream.base_url}', apis: [chat.completions]}}}}\n"
        "models: {llama: [{provider: local}]}\n"
        f"store: 'sqlite:///{TEST_STORE}'\n"
    )
    url = make_proxy(loaded=load_text(config))
    upstream.push(synth.Reply("Hi there.", input_tokens=7, output_tokens=3))
    answer = responses_answer(
        openai_client(url), stream, model="llama", instructions="Be kind.", input="Hello"
    )
    assert answer.output_text == "Hi there."
    assert answer.usage is not None and answer.usage.total_tokens == 10
    sent = upstream.last.json()
    assert upstream.last.path == "/v1/chat/completions"
    assert sent["messages"] == [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Hello"},
    ]
    assert sent.get("stream_options") == ({"include_usage": True} if stream else None)
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client(url).embeddings.create(model="llama", input="x")
    assert refused.value.code == "unsupported_api"


def test_a_stored_conversation_cannot_be_continued_on_a_translated_provider(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(two_providers(upstream, backup)))
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client(url).responses.create(
            model="claude-sonnet-4-6", input="And then?", previous_response_id="resp_1"
        )
    assert refused.value.param == "previous_response_id"
    assert not upstream.requests


CLAUDE_CODE_ASKS: dict[str, Any] = {
    "max_tokens": 32_000,
    "thinking": {"type": "enabled", "budget_tokens": 31_999},
    "messages": [{"role": "user", "content": "Hi"}],
}
"""What Claude Code asks of every model: thinking, and 32,000 output tokens."""


@pytest.mark.parametrize(
    ("model", "sent"),
    [
        ("gpt-4o", {"max_tokens": 16_384}),  # writes at most 16,384; does not reason
        ("o4-mini", {"max_completion_tokens": 32_000, "reasoning_effort": "high"}),
        ("local", {"max_tokens": 1_000}),  # the target's own settings
    ],
)
def test_claude_code_s_request_is_fitted_to_the_gpt_model_it_reaches(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, model: str,
    sent: dict[str, Any],
) -> None:  # fmt: skip
    """Sent as asked, GPT-4o and o4-mini would each refuse the call with a 400."""
    extra = (
        "  o4-mini: [{provider: gpt}]\n"
        "  local: [{provider: gpt, model: llama3.1, max_output_tokens: 1000, reasoning: false}]\n"
    )
    text = two_providers(upstream, backup).replace(
        "  gpt-4o: [{provider: gpt}]\n", f"  gpt-4o: [{{provider: gpt}}]\n{extra}"
    )
    url = make_proxy(loaded=load_text(text))
    with anthropic_client(url).messages.stream(model=model, **CLAUDE_CODE_ASKS) as events:
        events.get_final_message()
    body = backup.last.json()
    fields = ("max_tokens", "max_completion_tokens", "reasoning_effort")
    assert {k: body[k] for k in fields if k in body} == sent


def test_an_openai_client_s_reasoning_is_fitted_to_the_claude_model_it_reaches(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    """Opus 4 writes at most 32,000 tokens, so the thinking budget goes under that; Claude
    3.5 Haiku does not think at all."""
    extra = "  claude-opus-4: [{provider: claude}]\n  claude-3-5-haiku: [{provider: claude}]\n"
    text = two_providers(upstream, backup).replace("models:\n", f"models:\n{extra}")
    client = openai_client(make_proxy(loaded=load_text(text)))
    asked: dict[str, Any] = {
        "messages": [{"role": "user", "content": "Hi"}],
        "reasoning_effort": "high",
        "max_completion_tokens": 40_000,
    }
    client.chat.completions.create(model="claude-opus-4", **asked)
    opus = upstream.last.json()
    assert opus["max_tokens"] == 32_000 and opus["thinking"]["budget_tokens"] == 24_576
    client.chat.completions.create(model="claude-3-5-haiku", **asked)
    haiku = upstream.last.json()
    assert haiku["max_tokens"] == 8_192 and "thinking" not in haiku


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_that_reports_no_usage_is_counted_not_charged_zero(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The Messages answer must state a usage; from a chat server that sent none it states
    hookgate's count, and the budget charges that, not zero."""
    from hookgate.budgets.tokens import count

    db = tmp_path / "spend.db"
    budget = "  - budget: {limits: [{scope: model, usd: 5}]}\n"
    url = make_proxy(loaded=load_text(two_providers(upstream, backup, budget, store=db)))
    text = "An answer from a server that keeps its usage to itself."
    reply = synth.Reply(text)
    if stream:
        blocks = list(synth.chat_stream("gpt-4o", reply, include_usage=False))
        backup.push(Events(blocks))
    else:
        answer = {k: v for k, v in synth.chat_completion("gpt-4o", reply).items() if k != "usage"}
        backup.push(Raw(orjson.dumps(answer)))
    asked: dict[str, Any] = {"model": "gpt-4o", "max_tokens": 64,
                             "messages": [{"role": "user", "content": "Hi"}]}  # fmt: skip
    client = anthropic_client(url)
    if stream:
        with client.messages.stream(**asked) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**asked)
    assert message.usage.output_tokens == count("gpt-4o", text)
    assert message.usage.input_tokens > 0
    usd, rows = settled(db)
    assert rows == 1 and usd > 0
