"""Stream faults as an OpenAI Agents SDK user meets them through the proxy: both of the
SDK's model classes, streamed (``Runner.run_streamed``) and not (``Runner.run``), against
an upstream that ends a stream without its terminal event, or slips a malformed event into
it, or cuts it mid-answer (continued by the ``fallback`` policy) — the agent's answer is
whole every time."""

from __future__ import annotations

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from hookgate.wire import sse, synth
from tests.conftest import CLIENT_KEY, ProxyFactory
from tests.fakes import Events, FakeUpstream

set_tracing_disabled(True)  # the SDK would export its traces to OpenAI

TEXT = "the answer comes in six parts"
REPLY = synth.Reply(text=TEXT, pieces=6)
MALFORMED = b"data: {not json\n\n"


def agent(client: AsyncOpenAI, kind: str) -> Agent:
    model = (
        OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=client)
        if kind == "responses"
        else OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client)
    )
    return Agent(name="answerer", instructions="Answer.", model=model)


def events(kind: str) -> list[bytes]:
    if kind == "responses":
        return list(synth.response_stream("gpt-4.1-mini", REPLY))
    return list(synth.chat_stream("gpt-4.1-mini", REPLY, include_usage=True))


async def answer(url: str, kind: str) -> str:
    async with AsyncOpenAI(base_url=url, api_key=CLIENT_KEY, max_retries=0) as client:
        result = Runner.run_streamed(agent(client, kind), "Answer in six parts.")
        async for _ in result.stream_events():
            pass
        return str(result.final_output)


async def test_a_chat_stream_without_done_is_a_whole_answer(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    whole = events("chat")
    assert whole[-1] == sse.DONE
    upstream.push(Events(whole[:-1]))  # finish reason and usage sent, then a clean close
    assert await answer(proxy_url, "chat") == TEXT


@pytest.mark.parametrize("kind", ["chat", "responses"])
async def test_a_malformed_event_mid_stream_is_dropped_and_the_answer_is_whole(
    proxy_url: str, upstream: FakeUpstream, kind: str
) -> None:
    whole = events(kind)
    upstream.push(Events([*whole[:4], MALFORMED, *whole[4:]]))
    assert await answer(proxy_url, kind) == TEXT


@pytest.mark.parametrize("kind", ["chat", "responses"])
async def test_a_stream_cut_mid_answer_is_continued_into_one_answer(
    make_proxy: ProxyFactory, upstream: FakeUpstream, kind: str
) -> None:
    proxy_url = make_proxy("policies:\n  - fallback: {}\n")  # the shipped default's fallback
    whole = events(kind)
    # the upstream dies after three deltas; asked again, it gives the same answer, of
    # which only the rest reaches the agent
    upstream.push(Events(whole[:4]), Events(whole))
    assert await answer(proxy_url, kind) == TEXT
    assert len(upstream.requests) == 2
