"""A Gemini provider (``type: gemini``): every client API reaches a Gemini model through
translation, with the pipeline in the path.

The real ``openai`` client (Chat Completions and the Responses API) and the real
``anthropic`` client reach a scripted Gemini upstream (``generateContent`` and
``streamGenerateContent?alt=sse`` on loopback); a thought signature survives a tool round
trip; Gemini's errors come back in the client's API's shape; an alias whose Gemini target
fails falls back to GPT; spend is priced from Gemini's usage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import TEST_STORE, ProxyFactory, anthropic_client, openai_client
from tests.fakes import Echo, Events, FakeUpstream, Status
from tests.gemini_wire import stream as gemini_stream
from tests.spend import settled

KEY = "AIza-upstream-secret-0123456789"
SIGNATURE = "CiQB0e2Kb7Yv+signature/of==thought"
UNAVAILABLE = Status(
    503, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
)
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


def config(
    gemini: FakeUpstream, gpt: FakeUpstream, extra: str = "", store: Path = TEST_STORE
) -> str:
    """Alias ``smart``: Gemini first, GPT second; ``gemini-2.5-flash`` direct."""
    return (
        "providers:\n"
        f"  google: {{type: gemini, base_url: '{gemini.gemini_base_url}', api_key: '{KEY}'}}\n"
        f"  gpt: {{base_url: '{gpt.base_url}', api_key: 'sk-openai-secret'}}\n"
        "models:\n"
        "  smart: [{provider: google, model: gemini-2.5-flash}, {provider: gpt, model: gpt-4o}]\n"
        "  gemini-2.5-flash: [{provider: google}]\n"
        f"store: 'sqlite:///{store}'\n"
        "policies:\n"
        "  - fallback: {retries: 0}\n"
        f"{extra}"
    )


@pytest.mark.parametrize("stream", [False, True])
def test_the_openai_client_runs_a_tool_round_trip_on_gemini(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The call goes to the model's URL with the key in ``x-goog-api-key``; the thought
    signature Gemini put on its function call comes back on it in the next request."""
    db = tmp_path / "spend.db"
    budget = "  - budget: {limits: [{scope: key, usd: 5}]}\n"
    url = make_proxy(loaded=load_text(config(upstream, backup, budget, store=db)))
    call = synth.ToolCall("ignored", "get_weather", '{"city": "Paris"}')
    upstream.push(
        synth.Reply(tool_calls=[call], thinking="Weather, so a tool.", signature=SIGNATURE,
                    input_tokens=20, output_tokens=200),
        synth.Reply("Sunny in Paris.", input_tokens=40, cache_read_tokens=10),
    )  # fmt: skip
    client = openai_client(url)
    messages: list[Any] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    asked: dict[str, Any] = {"model": "gemini-2.5-flash", "tools": TOOLS, "max_tokens": 300}

    first = answer(client, stream, messages=messages, **asked)
    (tool_call,) = first["tool_calls"]
    function = tool_call["function"]
    assert (function["name"], function["arguments"]) == ("get_weather", '{"city":"Paris"}')
    assert first["reasoning_content"] == "Weather, so a tool."
    action = "streamGenerateContent" if stream else "generateContent"
    assert upstream.last.path == f"/v1beta/models/gemini-2.5-flash:{action}"
    assert upstream.last.query == ("alt=sse" if stream else "")
    assert upstream.last.headers["x-goog-api-key"] == KEY
    assert "authorization" not in upstream.last.headers
    sent = upstream.last.json()
    assert sent["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert sent["contents"] == [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]
    declared = sent["tools"][0]["functionDeclarations"][0]
    assert declared["name"] == "get_weather"
    assert sent["generationConfig"]["maxOutputTokens"] == 300
    assert "model" not in sent and "stream" not in sent

    messages += [
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": tool_call["id"], "content": "Sunny"},
    ]
    final = answer(client, stream, messages=messages, **asked)
    assert final["content"] == "Sunny in Paris."
    model_turn, results = upstream.last.json()["contents"][1:]
    assert model_turn["role"] == "model"
    assert model_turn["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
         "thoughtSignature": SIGNATURE},
    ]  # fmt: skip
    assert results["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"output": "Sunny"}}}
    ]
    usd, rows = settled(db)  # gemini-2.5-flash: $0.30/M input, $0.075/M cached, $2.50/M output
    expected = (20 * 0.30 + 200 * 2.50) + (40 * 0.30 + 10 * 0.075 + 5 * 2.50)
    assert rows == 2 and usd == pytest.approx(expected / 1e6)


def answer(client: openai.OpenAI, stream: bool, **asked: Any) -> dict[str, Any]:
    """The assistant message of a chat completion, or of its stream accumulated."""
    if not stream:
        message = client.chat.completions.create(**asked).choices[0].message
        return message.model_dump()
    with client.chat.completions.stream(**asked) as events:
        final = events.get_final_completion()
    return final.choices[0].message.model_dump()


@pytest.mark.parametrize("suffix", ["", "/v1beta"])
def test_the_base_url_is_taken_with_or_without_its_version(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, suffix: str
) -> None:
    """As ``GOOGLE_GEMINI_BASE_URL``: the bare host gets ``/v1beta``; a version given is
    kept."""
    base = config(upstream, backup).replace(upstream.gemini_base_url, upstream.server.url + suffix)
    url = make_proxy(loaded=load_text(base))
    upstream.push(synth.Reply("Hi."))
    assert answer(openai_client(url), False, model="gemini-2.5-flash", messages=[
        {"role": "user", "content": "Hi"}])["content"] == "Hi."  # fmt: skip
    assert upstream.last.path == f"{suffix or '/v1beta'}/models/gemini-2.5-flash:generateContent"


@pytest.mark.parametrize("stream", [False, True])
def test_a_failing_gemini_target_falls_back_to_gpt(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    url = make_proxy(loaded=load_text(config(upstream, backup)))
    upstream.push(UNAVAILABLE)
    backup.push(synth.Reply("From GPT."))
    got = openai_client(url).chat.completions.with_raw_response.create(
        model="smart", messages=[{"role": "user", "content": "Hi"}], stream=stream
    )
    parsed = got.parse()
    if stream:
        text = "".join(c.choices[0].delta.content or "" for c in parsed if c.choices)  # type: ignore[union-attr]
    else:
        text = str(parsed.choices[0].message.content)  # type: ignore[union-attr]
    assert text == "From GPT."
    assert got.headers["x-hookgate-upstream"] == "gpt/gpt-4o"
    assert len(upstream.requests) == 1 and len(backup.requests) == 1


def test_gemini_s_errors_come_back_in_each_client_s_shape(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(config(upstream, backup)))
    invalid = {"error": {"code": 400, "message": "Bad schema", "status": "INVALID_ARGUMENT"}}
    upstream.push(Status(400, invalid), Status(400, invalid))
    with pytest.raises(openai.BadRequestError) as chat:
        openai_client(url).chat.completions.create(
            model="gemini-2.5-flash", messages=[{"role": "user", "content": "Hi"}]
        )
    assert chat.value.code == "INVALID_ARGUMENT" and "Bad schema" in chat.value.message
    with pytest.raises(anthropic.BadRequestError) as messages:
        anthropic_client(url).messages.create(
            model="gemini-2.5-flash", max_tokens=8, messages=[{"role": "user", "content": "Hi"}]
        )
    assert messages.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "Bad schema" in messages.value.message


def test_a_gemini_stream_cut_before_its_finish_reason_is_an_error_not_an_answer(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(config(upstream, backup)))
    blocks = gemini_stream("gemini-2.5-flash", synth.Reply("Half an answer", pieces=2))
    upstream.push(Events(blocks[:-1]))  # everything but the chunk with finishReason
    with pytest.raises(openai.APIError):
        chunks = openai_client(url).chat.completions.create(
            model="gemini-2.5-flash", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        list(chunks)


@pytest.mark.parametrize("stream", [False, True])
def test_the_anthropic_client_reaches_gemini_with_pii_redacted_and_restored(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    """Messages → chat → generateContent, and the answer back through both."""
    email = "ann.lee@example.com"
    url = make_proxy(loaded=load_text(config(upstream, backup, "  - pii: {}\n")))

    upstream.push(Echo(prefix="Noted: "))
    client = anthropic_client(url)
    asked: dict[str, Any] = {
        "model": "gemini-2.5-flash", "max_tokens": 64, "system": "Be brief.",
        "messages": [{"role": "user", "content": f"Write to {email}"}],
    }  # fmt: skip
    if stream:
        with client.messages.stream(**asked) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**asked)
    assert message.content[0].text == f"Noted: Write to {email}"  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert email not in upstream.last.body.decode()
    assert upstream.last.json()["systemInstruction"] == {"parts": [{"text": "Be brief."}]}


@pytest.mark.parametrize("stream", [False, True])
def test_the_responses_client_reaches_gemini(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, stream: bool
) -> None:
    url = make_proxy(loaded=load_text(config(upstream, backup)))
    upstream.push(synth.Reply("Bonjour.", input_tokens=12, output_tokens=3))
    client = openai_client(url)
    asked: dict[str, Any] = {"model": "gemini-2.5-flash", "instructions": "In French.",
                             "input": "Hello"}  # fmt: skip
    if stream:
        with client.responses.stream(**asked) as events:
            final = events.get_final_response()
    else:
        final = client.responses.create(**asked)
    assert final.output_text == "Bonjour." and final.status == "completed"
    assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (
        12,
        3,
    )
    sent = upstream.last.json()
    assert sent["systemInstruction"] == {"parts": [{"text": "In French."}]}
    assert sent["contents"] == [{"role": "user", "parts": [{"text": "Hello"}]}]


def test_a_conversation_gemini_began_goes_on_on_gpt_with_plain_ids(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    """Gemini's ids and signatures ride in the tool call ids; when GPT takes over (Gemini
    down), it gets the ids cut to their head, which OpenAI accepts (at most 40
    characters), calls and results still paired."""
    url = make_proxy(loaded=load_text(config(upstream, backup)))
    call = synth.ToolCall("ignored", "get_weather", '{"city": "Paris"}')
    upstream.push(synth.Reply(tool_calls=[call], thinking="A tool.", signature=SIGNATURE))
    client = openai_client(url)
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.chat.completions.create(model="smart", messages=messages, tools=TOOLS)
    (signed,) = first.choices[0].message.tool_calls or []
    assert signed.id.endswith(SIGNATURE) and len(signed.id) > 40
    upstream.push(UNAVAILABLE)
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": signed.id, "content": "Sunny"},
    ]
    final = client.chat.completions.create(model="smart", messages=messages, tools=TOOLS)
    assert final.choices[0].message.content == "The tool said: Sunny"
    sent = backup.last.json()["messages"]
    head = signed.id[: len("call_") + 24]
    assert sent[1]["tool_calls"][0]["id"] == head and sent[2]["tool_call_id"] == head


def test_the_model_list_of_a_gemini_provider_behind_the_wildcard(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    text = config(upstream, backup).replace(
        "  gemini-2.5-flash: [{provider: google}]\n", '  "*": [{provider: google}]\n'
    )
    listed = {m.id for m in openai_client(make_proxy(loaded=load_text(text))).models.list()}
    assert {"fake-model-a", "fake-model-b", "smart"} <= listed  # Gemini's, without "models/"
    assert upstream.last.path == "/v1beta/models"
    assert upstream.last.headers["x-goog-api-key"] == KEY


def test_thinking_is_asked_only_of_a_gemini_model_that_thinks(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    text = config(upstream, backup).replace(
        "models:\n", "models:\n  gemini-2.0-flash: [{provider: google}]\n"
    )
    client = openai_client(make_proxy(loaded=load_text(text)))
    asked: dict[str, Any] = {"messages": [{"role": "user", "content": "Hi"}],
                             "reasoning_effort": "high", "max_tokens": 20_000}  # fmt: skip
    client.chat.completions.create(model="gemini-2.5-flash", **asked)
    thinking = {"thinkingBudget": 24_576, "includeThoughts": True}
    thinks = upstream.last.json()["generationConfig"]
    assert thinks == {"maxOutputTokens": 20_000, "thinkingConfig": thinking}
    client.chat.completions.create(model="gemini-2.0-flash", **asked)
    assert upstream.last.json()["generationConfig"] == {"maxOutputTokens": 8_192}
