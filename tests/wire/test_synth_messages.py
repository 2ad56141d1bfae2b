"""Synthetic Anthropic Messages answers parse with the real ``anthropic`` SDK: its types,
its stream accumulator, and its client against the fake upstream (and the echo provider)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import orjson
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from hookgate.pipeline.observe import Observation
from hookgate.pipeline.types import Api, JsonBody, ModelCall, Target
from hookgate.providers.echo import EchoProvider
from hookgate.wire import sse, synth
from tests.fakes import Echo, FakeUpstream, Status

MODEL = "claude-fake-1"
ARGUMENTS = '{"city": "Paris", "days": [1, 2], "units": {"temp": "C"}}'
REPLY = synth.Reply(
    text="It is sunny in Paris.",
    thinking="The user asks about the weather; I should call the tool.",
    tool_calls=[synth.ToolCall("toolu_01A09q90qw90lq917835lq9", "get_weather", ARGUMENTS)],
    input_tokens=21,
    output_tokens=37,
    cache_creation_tokens=300,
    cache_read_tokens=1200,
    pieces=4,
    id="01XFDUDYJgAACzvnptvVoYEL",
)
WEATHER_TOOL: Any = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}
EVENTS: TypeAdapter[RawMessageStreamEvent] = TypeAdapter(RawMessageStreamEvent)


@pytest.fixture
async def client(upstream: FakeUpstream) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=upstream.anthropic_base_url, api_key="sk-ant-fake", max_retries=0
    ) as client:
        yield client


def blocks_of(message: Message) -> list[dict[str, Any]]:
    """A message's content as JSON, without the SDK's local fields (``parsed_output``)
    and unset optional ones."""
    return [
        block.model_dump(mode="json", exclude={"parsed_output"}, exclude_none=True)
        for block in message.content
    ]


def test_message_object_is_a_valid_message() -> None:
    message = Message.model_validate(synth.message_object(MODEL, REPLY))
    assert message.id == "msg_01XFDUDYJgAACzvnptvVoYEL"
    assert message.model == MODEL and message.role == "assistant"
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use"]
    thinking, text, tool_use = message.content
    assert thinking.type == "thinking" and thinking.signature == synth.THINKING_SIGNATURE
    assert thinking.thinking == "The user asks about the weather; I should call the tool."
    assert text.type == "text" and text.text == "It is sunny in Paris."
    assert tool_use.type == "tool_use" and tool_use.name == "get_weather"
    assert tool_use.input == {"city": "Paris", "days": [1, 2], "units": {"temp": "C"}}
    assert message.stop_reason == "tool_use" and message.stop_sequence is None
    usage = message.usage
    assert (usage.input_tokens, usage.output_tokens) == (21, 37)
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (300, 1200)


def test_stop_reasons() -> None:
    plain = synth.message_object(MODEL, synth.Reply(text="hi"))
    assert (plain["stop_reason"], plain["stop_sequence"]) == ("end_turn", None)
    assert [b["type"] for b in plain["content"]] == ["text"]
    stopped = synth.message_object(MODEL, synth.Reply(text="1, 2,", stop_sequence="3"))
    assert (stopped["stop_reason"], stopped["stop_sequence"]) == ("stop_sequence", "3")
    assert synth.count_tokens_object(12) == {"input_tokens": 12}
    with pytest.raises(ValueError, match="not a JSON object"):
        synth.message_object(MODEL, synth.Reply(tool_calls=[synth.ToolCall("t", "f", "[1]")]))


def test_events_are_valid_and_in_protocol_order() -> None:
    events = synth.message_events(MODEL, REPLY)
    for kind, data in events:
        assert data["type"] == kind
        if kind != "ping":  # the SDK's union leaves ping out: its stream skips it
            EVENTS.validate_python(data)
    kinds = [kind for kind, _ in events]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 3
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    assert start["usage"]["output_tokens"] == 1 and start["usage"]["input_tokens"] == 21
    deltas = [d["delta"] for k, d in events if k == "content_block_delta"]
    thinking = [d["thinking"] for d in deltas if d["type"] == "thinking_delta"]
    assert len(thinking) == 4 and "".join(thinking) == REPLY.thinking
    assert [d for d in deltas if d["type"] == "signature_delta"] == [
        {"type": "signature_delta", "signature": synth.THINKING_SIGNATURE}
    ]
    partial = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert partial[0] == "" and "".join(partial) == ARGUMENTS
    delta = events[-2][1]
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert delta["usage"] == {
        "input_tokens": 21,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 1200,
        "output_tokens": 37,
    }
    blocks = list(synth.message_stream(MODEL, REPLY))
    assert [sse.parse(b).event for b in blocks] == kinds
    assert [orjson.loads(sse.parse(b).data) for b in blocks] == [d for _, d in events]


def test_a_reply_without_blocks_still_pings() -> None:
    kinds = [kind for kind, _ in synth.message_events(MODEL, synth.Reply())]
    assert kinds == ["message_start", "ping", "message_delta", "message_stop"]


async def test_the_sdk_reads_a_message(
    client: anthropic.AsyncAnthropic, upstream: FakeUpstream
) -> None:
    upstream.push(REPLY)
    message = await client.messages.create(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "Weather?"}]
    )
    assert message == Message.model_validate(synth.message_object(MODEL, REPLY))
    assert message.usage.cache_read_input_tokens == 1200
    assert upstream.last.path == "/v1/messages"
    assert upstream.last.json()["messages"] == [{"role": "user", "content": "Weather?"}]


async def test_the_sdk_stream_accumulates_the_same_message(
    client: anthropic.AsyncAnthropic, upstream: FakeUpstream
) -> None:
    upstream.push(REPLY)
    seen: list[str] = []
    async with client.messages.stream(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "Weather?"}]
    ) as stream:
        async for event in stream:
            seen.append(event.type)
        final = await stream.get_final_message()
    assert upstream.last.json()["stream"] is True
    expected = Message.model_validate(synth.message_object(MODEL, REPLY))
    assert blocks_of(final) == blocks_of(expected) == synth.message_object(MODEL, REPLY)["content"]
    thinking = final.content[0]
    assert thinking.type == "thinking" and thinking.signature == synth.THINKING_SIGNATURE
    tool_use = final.content[2]
    assert tool_use.type == "tool_use"
    assert tool_use.input == {"city": "Paris", "days": [1, 2], "units": {"temp": "C"}}
    assert (final.stop_reason, final.usage.output_tokens) == ("tool_use", 37)
    assert (final.usage.input_tokens, final.usage.cache_creation_input_tokens) == (21, 300)
    assert {"thinking", "signature", "text", "input_json"} <= set(seen)


async def test_the_default_agent_round_trip(
    client: anthropic.AsyncAnthropic, upstream: FakeUpstream
) -> None:
    question: Any = {"role": "user", "content": "What is the weather in Paris?"}
    first = await client.messages.create(
        model=MODEL, max_tokens=100, tools=[WEATHER_TOOL], messages=[question]
    )
    assert first.stop_reason == "tool_use"
    [call] = first.content
    assert call.type == "tool_use" and (call.id, call.name) == ("toolu_fake_1", "get_weather")
    assert call.input == {"city": "Paris", "days": 2}
    result: Any = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": call.id,
                "content": [{"type": "text", "text": "18 degrees and sunny"}],
            }
        ],
    }
    async with client.messages.stream(
        model=MODEL,
        max_tokens=100,
        tools=[WEATHER_TOOL],
        messages=[question, first.to_param(), result],
    ) as stream:
        second = await stream.get_final_message()
    assert second.stop_reason == "end_turn"
    [text] = second.content
    assert text.type == "text" and text.text == "The tool said: 18 degrees and sunny"
    plain = await client.messages.create(model=MODEL, max_tokens=10, messages=[question])
    assert [b.type for b in plain.content] == ["text"]
    assert plain.content[0].type == "text"
    assert plain.content[0].text == "Hello from the fake upstream."


async def test_echo_reads_block_content(
    client: anthropic.AsyncAnthropic, upstream: FakeUpstream
) -> None:
    upstream.push(Echo(), Echo(tool="note"))
    content: Any = [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]
    message = await client.messages.create(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": content}]
    )
    assert message.content[0].type == "text"
    assert message.content[0].text == "You said: first second"
    async with client.messages.stream(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi there"}]
    ) as stream:
        called = await stream.get_final_message()
    [block] = called.content
    assert block.type == "tool_use" and block.id == "toolu_echo_1"
    assert block.input == {"text": "You said: hi there"}


async def test_count_tokens(client: anthropic.AsyncAnthropic, upstream: FakeUpstream) -> None:
    count = await client.messages.count_tokens(
        model=MODEL,
        system="You are terse.",
        messages=[
            {"role": "user", "content": "one two three"},
            {"role": "assistant", "content": [{"type": "text", "text": "four five"}]},
        ],
    )
    assert count.input_tokens == 3 + 3 + 2
    assert upstream.last.path == "/v1/messages/count_tokens"
    upstream.push(
        Status(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}})
    )
    with pytest.raises(anthropic.RateLimitError):
        await client.messages.count_tokens(
            model=MODEL, messages=[{"role": "user", "content": "hi"}]
        )
    assert len(upstream.requests) == 2


def echo_call(api: Api, body: dict[str, Any], *, stream: bool = False) -> ModelCall:
    target = Target("echo", None)
    return ModelCall(
        api=api, payload=JsonBody.from_data(body), model="echo", stream=stream, targets=(target,)
    )


async def test_the_echo_provider_answers_messages() -> None:
    provider = EchoProvider("echo")
    question = {"role": "user", "content": "ping me back"}
    body: dict[str, Any] = {"model": "m", "max_tokens": 5, "system": "Be kind.", "messages": []}
    call = echo_call("messages", {**body, "tools": [WEATHER_TOOL], "messages": [question]})
    response = await provider.send(call, call.targets[0], Observation())
    first = Message.model_validate(response.body)
    assert first.stop_reason == "tool_use"
    [tool_use] = first.content
    assert tool_use.type == "tool_use" and tool_use.name == "get_weather"
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "sunny"}],
    }
    messages = [question, {"role": "assistant", "content": [tool_use.model_dump()]}, result]
    call = echo_call("messages", {**body, "tools": [WEATHER_TOOL], "messages": messages})
    second = Message.model_validate(
        (await provider.send(call, call.targets[0], Observation())).body
    )
    assert second.content[0].type == "text"
    assert second.content[0].text == "[hookgate echo] sunny"
    assert second.stop_reason == "end_turn" and second.usage.input_tokens == 2 + 3 + 1

    call = echo_call("messages", {**body, "messages": [question]}, stream=True)
    response = await provider.send(call, call.targets[0], Observation())
    assert response.stream is not None and response.headers["content-type"] == "text/event-stream"
    blocks = [block async for block in response.stream]
    events = [orjson.loads(sse.parse(b).data) for b in blocks]
    assert [sse.parse(b).event for b in blocks] == [e["type"] for e in events]
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == "[hookgate echo] ping me back"

    call = echo_call("messages.count_tokens", {**body, "messages": [question]})
    response = await provider.send(call, call.targets[0], Observation())
    assert response.body == {"input_tokens": 2 + 3}
