"""The governed ``openai`` client (``hookgate.sdk.http_client``): the model-level policies
in-process, with the real ``openai`` client against a scripted fake upstream, no proxy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest

from hookgate.redaction.placeholders import PATTERN
from hookgate.sdk import Gate, http_client
from tests.conftest import ProxyFactory
from tests.fakes import Echo, FakeUpstream, Status
from tests.otlp import OtlpReceiver
from tests.sdk.harness import SECRET, make_gate, tracing

EMAIL = "maria.garcia@example.com"
PROMPT = f"Write to {EMAIL} about the invoice."
WEATHER_TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("get_weather", "get_time")
]


@pytest.fixture
async def client(upstream: FakeUpstream) -> AsyncIterator[openai.AsyncOpenAI]:
    made = openai.AsyncOpenAI(
        base_url=upstream.base_url, api_key="k", http_client=http_client(), max_retries=0
    )
    yield made
    await made.close()


@pytest.fixture
def gate(tmp_path: Path, upstream: FakeUpstream, receiver: OtlpReceiver) -> Gate:
    policies = (
        f"  - pii: {{secret: '{SECRET}'}}\n"
        "  - tool_guard: {deny: [get_weather]}\n" + tracing(receiver)
    )
    return make_gate(tmp_path, upstream, policies)


async def test_prompt_redacted_answer_restored_tools_filtered_and_one_span(
    gate: Gate, upstream: FakeUpstream, receiver: OtlpReceiver, client: openai.AsyncOpenAI
) -> None:
    upstream.push(Echo())
    async with gate.reply(session_id="s-1") as reply:
        answer = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": PROMPT}], tools=WEATHER_TOOLS
        )
    await gate.aclose()
    sent = upstream.last.json()
    assert EMAIL not in upstream.last.body.decode()
    assert len(PATTERN.findall(sent["messages"][-1]["content"])) == 1
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_time"]
    assert answer.choices[0].message.content == f"You said: {PROMPT}"
    assert upstream.last.headers["x-hookgate-reply-id"] == reply.reply_id
    spans = receiver.wait_until(lambda spans: any(s.name == "chat m" for s in spans))
    chat = next(s for s in spans if s.name == "chat m")
    reply_span = next(s for s in spans if s.name.startswith("invoke_agent"))
    assert chat.parent_span_id == reply_span.span_id
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert EMAIL not in str(chat.attributes)


@pytest.mark.parametrize("pieces", [1, 3, 0])
async def test_streamed_deltas_never_show_a_placeholder(
    gate: Gate, upstream: FakeUpstream, pieces: int, client: openai.AsyncOpenAI
) -> None:
    upstream.push(Echo(pieces=pieces))
    async with gate.reply():
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": PROMPT}], stream=True
        )
        deltas = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    await gate.aclose()
    assert EMAIL not in upstream.last.body.decode()
    assert not any(PATTERN.search(d) for d in deltas)
    assert "".join(deltas) == f"You said: {PROMPT}"


async def test_streamed_tool_call_arguments_are_restored(
    gate: Gate, upstream: FakeUpstream, client: openai.AsyncOpenAI
) -> None:
    upstream.push(Echo(tool="get_time", pieces=4))
    async with gate.reply():
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": PROMPT}], stream=True,
            tools=WEATHER_TOOLS,
        )  # fmt: skip
        arguments = "".join(
            [
                call.function.arguments or ""
                async for chunk in stream
                if chunk.choices
                for call in chunk.choices[0].delta.tool_calls or []
                if call.function is not None
            ]
        )
    await gate.aclose()
    assert EMAIL in arguments and not PATTERN.search(arguments)


async def test_responses_api_is_governed_too(
    gate: Gate, upstream: FakeUpstream, client: openai.AsyncOpenAI
) -> None:
    upstream.push(Echo())
    async with gate.reply():
        answer = await client.responses.create(model="m", input=PROMPT)
    await gate.aclose()
    assert EMAIL not in upstream.last.body.decode()
    assert answer.output_text == f"You said: {PROMPT}"


async def test_errors_reach_the_client_as_the_provider_would_send_them(
    tmp_path: Path, upstream: FakeUpstream, client: openai.AsyncOpenAI
) -> None:
    gate = make_gate(tmp_path, upstream, "  - pii: {action: block}\n")
    upstream.push(Status(429, {"error": {"message": "slow down", "type": "rate_limit"}}))
    async with gate.reply():
        with pytest.raises(openai.BadRequestError, match="EMAIL_ADDRESS"):
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": PROMPT}]
            )
        with pytest.raises(openai.RateLimitError, match="slow down"):
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hello"}]
            )
    await gate.aclose()
    assert len(upstream.requests) == 1  # the blocked call never left the process


async def test_outside_a_reply_requests_pass_untouched(
    gate: Gate, upstream: FakeUpstream, client: openai.AsyncOpenAI
) -> None:
    upstream.push(Echo())
    answer = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": PROMPT}]
    )
    await gate.aclose()
    assert EMAIL in upstream.last.body.decode()
    assert "x-hookgate-reply-id" not in upstream.last.headers
    assert answer.choices[0].message.content == f"You said: {PROMPT}"


async def test_a_stopped_reply_gets_a_final_answer_without_the_model(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    gate = make_gate(
        tmp_path, upstream, "  - model_call_limit: {max_per_reply: 1, on_limit: end}\n"
    )
    governed = openai.AsyncOpenAI(
        base_url=upstream.base_url, api_key="k", http_client=http_client(turns=True)
    )
    async with gate.reply() as reply:
        first = await governed.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        second = await governed.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "again"}], stream=True
        )
        streamed = "".join([c.choices[0].delta.content or "" async for c in second])
    await governed.close()
    await gate.aclose()
    assert first.choices[0].message.content
    assert reply.turns == 1 and reply.stop
    assert len(upstream.requests) == 1
    assert "stopped" in streamed


async def test_sdk_and_proxy_together_redact_once_restore_once_and_nest_spans(
    tmp_path: Path, upstream: FakeUpstream, receiver: OtlpReceiver, make_proxy: ProxyFactory
) -> None:
    """pii and tracing on both sides: the model reads one placeholder (never a placeholder
    of a placeholder), the user reads the value, streamed or not, and the proxy's span sits
    under the SDK's model-call span."""
    policies = f"  - pii: {{secret: '{SECRET}'}}\n" + tracing(receiver)
    gate = make_gate(tmp_path, upstream, policies)
    url = make_proxy(f"policies:\n{policies}")
    async with openai.AsyncOpenAI(base_url=url, api_key="k", http_client=http_client()) as both:
        upstream.push(Echo(), Echo(pieces=3))
        async with gate.reply():
            answer = await both.chat.completions.create(
                model="m", messages=[{"role": "user", "content": PROMPT}]
            )
            stream = await both.chat.completions.create(
                model="m", messages=[{"role": "user", "content": PROMPT}], stream=True
            )
            streamed = "".join(
                [c.choices[0].delta.content or "" async for c in stream if c.choices]
            )
    await gate.aclose()
    for request in upstream.requests:
        text = request.json()["messages"][-1]["content"]
        assert EMAIL not in text and len(PATTERN.findall(text)) == 1
        assert text.count("<") == 1  # one placeholder, not one inside another
    assert answer.choices[0].message.content == streamed == f"You said: {PROMPT}"
    spans = receiver.wait_until(lambda s: len([x for x in s if x.name == "chat m"]) >= 4)
    chats = [s for s in spans if s.name == "chat m"]
    in_process = {
        s.span_id for s in chats if str(s.attributes["hookgate.request_id"]).startswith("call_")
    }
    proxied = [s for s in chats if s.span_id not in in_process]
    assert len(in_process) == 2 and len(proxied) == 2
    assert all(s.parent_span_id in in_process for s in proxied)


async def test_a_stream_gets_usage_for_the_span_and_the_client_no_extra_chunk(
    gate: Gate, upstream: FakeUpstream, receiver: OtlpReceiver, client: openai.AsyncOpenAI
) -> None:
    """Clients often leave stream_options out: the transport asks for the usage chunk (the
    span and the reply's turns need it) and removes it before a client that did not ask."""
    upstream.push(Echo(pieces=3), Echo(pieces=3))
    async with gate.reply():
        plain = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        chunks = [c async for c in plain]
        asked = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
            stream_options={"include_usage": True},
        )  # fmt: skip
        usage = [c.usage async for c in asked if c.usage is not None]
    await gate.aclose()
    assert upstream.requests[0].json()["stream_options"] == {"include_usage": True}
    assert all(c.choices for c in chunks) and all(c.usage is None for c in chunks)
    assert len(usage) == 1 and usage[0].completion_tokens > 0  # kept when the client asked
    spans = receiver.wait_until(lambda s: len([x for x in s if x.name == "chat m"]) >= 2)
    assert all(s.attributes["gen_ai.usage.output_tokens"] > 0 for s in spans if s.name == "chat m")
