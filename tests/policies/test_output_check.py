"""``output_check`` in the proxy: a final answer that fails is asked again with the error."""

from __future__ import annotations

import openai
import pytest

from hookgate.wire import synth
from tests.conftest import ProxyFactory, openai_client
from tests.fakes import FakeUpstream

SCHEMA = (
    "  - output_check:\n"
    "      json_schema: {type: object, required: [city, forecast],\n"
    "                    properties: {forecast: {enum: [sunny, rainy]}}}\n"
    "      retries: 2\n"
)
GOOD = '{"city": "Paris", "forecast": "sunny"}'


def ask(url: str) -> str:
    answer = openai_client(url).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Weather in Paris, as JSON?"}]
    )
    return str(answer.choices[0].message.content)


def test_a_bad_answer_is_asked_again_with_what_failed(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(f"policies:\n{SCHEMA}")
    bad_value = '{"city": "Paris", "forecast": "hail"}'
    upstream.push(synth.Reply(text="It is sunny."), synth.Reply(text=bad_value),
                  synth.Reply(text=f"```json\n{GOOD}\n```"))  # fmt: skip
    assert ask(url) == f"```json\n{GOOD}\n```"
    assert len(upstream.requests) == 3
    second, third = (r.json()["messages"] for r in upstream.requests[1:])
    assert second[-2] == {"role": "assistant", "content": "It is sunny."}
    assert "it is not JSON" in second[-1]["content"] and second[-1]["role"] == "user"
    assert "'hail' is not one of ['sunny', 'rainy'] (at forecast)" in third[-1]["content"]


def test_after_the_last_retry_pass_or_error(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    upstream.push(*[synth.Reply(text="no") for _ in range(6)])
    assert ask(make_proxy(f"policies:\n{SCHEMA}")) == "no"  # passed on after 2 retries
    assert len(upstream.requests) == 3
    erring = make_proxy(f"policies:\n{SCHEMA}      on_failure: error\n")
    with pytest.raises(openai.UnprocessableEntityError, match="output check: it is not JSON"):
        ask(erring)


def test_pattern_on_responses_and_tool_calls(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy("policies:\n  - output_check: {pattern: '^[A-Z]{3}-\\d{4}$'}\n")
    upstream.push(synth.Reply(text="ticket abc"), synth.Reply(text="ABC-1234"))
    answer = openai_client(url).responses.create(model="m", input="Open a ticket")
    assert answer.output_text == "ABC-1234"
    assert (
        upstream.requests[1]
        .json()["input"][-1]["content"]
        .startswith("Your answer is not valid: it does not match the pattern")
    )
    upstream.requests.clear()
    call = synth.ToolCall("c1", "open_ticket", "{}")
    upstream.push(synth.Reply(tool_calls=[call]), synth.Reply(text="not a ticket"))
    tools = [{"type": "function", "function": {"name": "open_ticket", "parameters": {}}}]
    client = openai_client(url)
    made = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Open one"}], tools=tools
    )
    assert made.choices[0].message.tool_calls  # a tool call is not a final answer
    assert len(upstream.requests) == 1


PATTERN = "  - output_check: {pattern: '^[A-Z]{3}-\\d{4}$'%s}\n"


def test_a_streamed_answer_is_held_until_it_passed(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """``streams: hold``: the client streams only the answer that passed, chat and Responses;
    a streamed tool call is not judged."""
    client = openai_client(make_proxy("policies:\n" + PATTERN % ""))
    upstream.push(synth.Reply(text="ticket abc", pieces=4), synth.Reply(text="ABC-1234", pieces=4))
    streamed = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Open one"}], stream=True
    )
    deltas = [c.choices[0].delta.content for c in streamed if c.choices]
    assert "".join(d or "" for d in deltas) == "ABC-1234" and len(deltas) >= 4
    again = upstream.requests[1].json()
    assert again["stream"] and again["messages"][-2]["content"] == "ticket abc"
    upstream.push(synth.Reply(text="nope"), synth.Reply(text="XYZ-0001"))
    with client.responses.stream(model="m", input="Open a ticket") as events:
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert text == events.get_final_response().output_text == "XYZ-0001"
    upstream.requests.clear()
    upstream.push(synth.Reply(tool_calls=[synth.ToolCall("c1", "open_ticket", "{}")]))
    tools = [{"type": "function", "function": {"name": "open_ticket", "parameters": {}}}]
    calls = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Open one"}], tools=tools, stream=True
    )
    assert any(c.choices[0].delta.tool_calls for c in calls if c.choices)
    assert len(upstream.requests) == 1


def test_streams_pass_lets_a_stream_through_unchecked(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    client = openai_client(make_proxy("policies:\n" + PATTERN % ", streams: pass"))
    upstream.push(synth.Reply(text="not a ticket"))
    streamed = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Open one"}], stream=True
    )
    assert (
        "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == "not a ticket"
    )
    assert len(upstream.requests) == 1
