"""Mid-stream continuation: a stream that fails after its first event is continued from a
next attempt, and the real ``openai`` and ``anthropic`` clients read one whole answer — or
the original failure, never a spliced or corrupted one."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from hookgate.budgets import tokens
from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import (
    CLIENT_KEY,
    TEST_STORE,
    UPSTREAM_KEY,
    ProxyFactory,
    anthropic_client,
    openai_client,
)
from tests.fakes import Events, FakeUpstream, Status
from tests.otlp import OtlpReceiver
from tests.policies.test_fallback import FAST, two_targets
from tests.spend import audited, settled
from tests.waits import eventually

ANSWER = "The quick brown fox jumps over lazy dog."
PIECES = ["The quick ", "brown fox ", "jumps over", " lazy dog."]  # as a stream of 4 splits it


def stream(text: str, *, pieces: int = 4, usage: bool = False, **reply: object) -> list[bytes]:
    """A whole chat stream of ``text`` (in ``pieces`` deltas)."""
    answer = synth.Reply(text=text, pieces=pieces, **reply)  # type: ignore[arg-type]
    return list(synth.chat_stream("m1", answer, include_usage=usage))


def cut(blocks: list[bytes], after: int) -> list[bytes]:
    """The first ``after`` events of a stream: the upstream dies there."""
    return blocks[:after]


def raw_stream(url: str, **body: object) -> list[dict[str, object] | str]:
    """The events a client receives, read raw: each chunk's JSON, ``[DONE]`` as a string."""
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    events: list[dict[str, object] | str] = []
    with httpx.stream(
        "POST",
        f"{url}/chat/completions",
        json={**request, **body},
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
        timeout=20,
    ) as reply:
        for line in reply.iter_lines():
            if line.startswith("data: "):
                data = line.removeprefix("data: ")
                events.append(data if data == "[DONE]" else json.loads(data))
            elif line.startswith("event: "):
                events.append(line)
    return events


def text_of(events: list[dict[str, object] | str]) -> str:
    out = ""
    for event in events:
        if isinstance(event, dict):
            for choice in event.get("choices") or []:  # type: ignore[union-attr]
                out += choice["delta"].get("content") or ""
    return out


def whole(events: list[dict[str, object] | str]) -> None:
    """One answer: one role chunk, one id, one finish reason, one ``[DONE]`` at the end,
    no error event."""
    chunks = [e for e in events if isinstance(e, dict)]
    deltas = [c["delta"] for e in chunks for c in e["choices"]]  # type: ignore[union-attr]
    finishes = [c["finish_reason"] for e in chunks for c in e["choices"] if c["finish_reason"]]  # type: ignore[union-attr]
    assert [d for d in deltas if "role" in d] == [{"role": "assistant", "content": ""}]
    assert len({e["id"] for e in chunks}) == 1
    assert finishes == ["stop"] or finishes == ["tool_calls"]
    assert events[-1] == "[DONE]" and events.count("[DONE]") == 1
    assert not any(isinstance(e, str) and e.startswith("event: error") for e in events)


def test_a_cut_stream_is_replayed_on_the_same_target_and_relayed_from_where_it_was(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    upstream.push(Events(cut(stream(ANSWER), 3)), Events(stream(ANSWER, pieces=7)))
    events = raw_stream(url)
    whole(events)
    assert text_of(events) == ANSWER
    assert len(upstream.requests) == 2 and backup.requests == []
    assert upstream.requests[1].json()["messages"] == [{"role": "user", "content": "hi"}]
    # the real client, too
    upstream.push(Events(cut(stream(ANSWER), 2)), Events(stream(ANSWER, pieces=2)))
    chunks = list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER


def test_a_stalled_stream_is_continued_by_the_next_target_at_once(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    upstream.push(Events(cut(stream(ANSWER), 3), end="hang"))
    backup.push(Events(stream(ANSWER, pieces=1)))
    events = raw_stream(url)
    whole(events)
    assert text_of(events) == ANSWER
    assert len(upstream.requests) == 1 and len(backup.requests) == 1


def test_a_prefill_continues_the_text_and_usage_states_what_was_delivered(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(
        make_proxy, upstream.base_url, backup.base_url, primary_extra=", prefill: true"
    )
    delivered = "".join(PIECES[:2])  # "The quick brown fox " (its space is not prefilled)
    rest = ANSWER.removeprefix(delivered.rstrip())  # " jumps over lazy dog."
    upstream.push(
        Events(cut(stream(ANSWER, usage=True), 3)),
        Events(stream(rest, pieces=2, usage=True, input_tokens=40, output_tokens=6)),
    )
    events = raw_stream(url, stream_options={"include_usage": True})
    whole(events)
    assert text_of(events) == ANSWER  # the space once
    sent = upstream.requests[1].json()["messages"]
    assert sent[-1] == {"role": "assistant", "content": delivered.rstrip()}
    moved = tokens.count("m1", delivered)
    usage = [e["usage"] for e in events if isinstance(e, dict) and e.get("usage")]
    assert usage == [{"prompt_tokens": 40 - moved, "completion_tokens": 6 + moved,
                      "total_tokens": 46}]  # fmt: skip


def test_a_refused_prefill_is_asked_again_as_a_replay(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(
        make_proxy, upstream.base_url, backup.base_url, primary_extra=", prefill: true"
    )
    refusal = Status(400, {"error": {"message": "prefill is not supported", "code": "no"}})
    upstream.push(Events(cut(stream(ANSWER), 3)), refusal, Events(stream(ANSWER)))
    events = raw_stream(url)
    whole(events)
    assert text_of(events) == ANSWER
    assert upstream.requests[1].json()["messages"][-1]["role"] == "assistant"
    assert upstream.requests[2].json()["messages"] == [{"role": "user", "content": "hi"}]
    # refused, and the replay says something else: the client reads the first failure
    upstream.push(Events(cut(stream(ANSWER), 3)), refusal, Events(stream("Another answer.")))
    backup.push(Events(stream("Yet another answer.")))
    with pytest.raises(openai.APIError) as info:
        list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True))
    assert "ended the stream before its final event" in info.value.message
    assert "prefill" not in info.value.message


def test_a_replay_that_differs_ends_with_the_original_failure_and_no_new_text(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    other = "The quick red fox jumps over a lazy dog, longer than the first."
    upstream.push(Events(cut(stream(ANSWER), 3)), Events(stream(other)))
    events = raw_stream(url)
    assert text_of(events) == "".join(PIECES[:2])
    assert "event: error" in events and "[DONE]" not in events
    error = events[events.index("event: error") + 1]
    assert isinstance(error, dict) and "ended the stream" in error["error"]["message"]  # type: ignore[index]
    assert backup.requests == []  # diverged: not asked elsewhere


def test_continuations_stay_within_the_policys_attempts(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)  # retries 0: 2 attempts
    upstream.push(Events(cut(stream(ANSWER), 2)), Events(cut(stream(ANSWER), 3)))
    with pytest.raises(openai.APIError) as info:
        list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True))
    assert "ended the stream before its final event" in info.value.message
    assert len(upstream.requests) == 2 and backup.requests == []


def tool_stream(arguments: str, call_id: str, text: str | None = None) -> list[bytes]:
    call = synth.ToolCall(call_id, "get_weather", arguments)
    return list(
        synth.chat_stream("m1", synth.Reply(text=text, tool_calls=[call]), include_usage=False)
    )


def test_a_stream_cut_inside_tool_call_arguments_is_replayed_never_prefilled(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(
        make_proxy, upstream.base_url, backup.base_url, primary_extra=", prefill: true"
    )
    arguments = '{"city": "Paris", "unit": "celsius"}'
    first = tool_stream(arguments, "call_first", text="Let me look.")
    # role, 3 text pieces, the call's start, one piece of its arguments: then cut
    upstream.push(
        Events(cut(first, 6)), Events(tool_stream(arguments, "call_second", "Let me look."))
    )
    chunks = list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Let me look."
    calls = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or []]
    assert [t.id for t in calls if t.id] == ["call_first"]
    assert json.loads("".join(t.function.arguments or "" for t in calls if t.function)) == {
        "city": "Paris",
        "unit": "celsius",
    }
    assert upstream.requests[1].json()["messages"] == []  # a replay, not a prefill
    # the replay calls the tool with other arguments: the first failure, no corrupted call
    other = tool_stream('{"city": "Lyon"}', "call_third", "Let me look.")
    upstream.push(Events(cut(first, 6)), Events(other))
    backup.push(Events(other))
    seen: list[str] = []
    with pytest.raises(openai.APIError) as info:
        for chunk in openai_client(url).chat.completions.create(
            model="m", messages=[], stream=True
        ):
            for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                seen.append(call.function.arguments or "" if call.function else "")
    assert "ended the stream" in info.value.message
    assert "Lyon" not in "".join(seen)


def test_an_anthropic_target_is_continued_by_prefill(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    text = (
        f"store: 'sqlite:///{TEST_STORE}'\n"
        f"providers:\n  claude: {{type: anthropic, base_url: '{upstream.base_url}', "
        f"api_key: {UPSTREAM_KEY}}}\n"
        f"models:\n  m:\n    - {{provider: claude, model: claude-sonnet-4-5}}\n"
        f"policies:\n  - {FAST.replace('retries: 0', 'retries: 1')}\n"  # 2 attempts
    )
    url = make_proxy(loaded=load_text(text))
    events = list(synth.message_stream("claude-sonnet-4-5", synth.Reply(text=ANSWER, pieces=4)))
    # message_start, content_block_start, ping, two text deltas: then cut
    rest = ANSWER.removeprefix("".join(PIECES[:2]).rstrip())
    upstream.push(
        Events(events[:5]),
        Events(list(synth.message_stream("claude-sonnet-4-5", synth.Reply(text=rest)))),
    )
    chunks = list(
        openai_client(url).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
    assert len([c for c in chunks if c.choices and c.choices[0].delta.role]) == 1
    sent = upstream.requests[1].json()["messages"]
    assert sent[-1]["role"] == "assistant"
    assert sent[-1]["content"] in (
        "The quick brown fox",
        [{"type": "text", "text": "The quick brown fox"}],
    )


def test_a_target_that_keeps_failing_mid_stream_is_asked_once_then_the_next_one(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    policy = FAST.replace("retries: 0", "retries: 1")  # 4 attempts
    url = two_targets(make_proxy, upstream.base_url, backup.base_url, policy)
    dies = Events(cut(stream(ANSWER), 3))  # every answer of the primary dies there
    upstream.push(dies, dies, dies)
    backup.push(Events(stream(ANSWER, pieces=3)))
    events = raw_stream(url)
    whole(events)
    assert text_of(events) == ANSWER
    assert len(upstream.requests) == 2 and len(backup.requests) == 1
    upstream.script.clear()


def claude_proxy(make_proxy: ProxyFactory, upstream: FakeUpstream, model: str) -> str:
    """A proxy whose alias ``m`` is ``model`` on an Anthropic provider, 2 attempts."""
    text = (
        f"store: 'sqlite:///{TEST_STORE}'\n"
        f"providers:\n  claude: {{type: anthropic, base_url: '{upstream.base_url}', "
        f"api_key: {UPSTREAM_KEY}}}\n"
        f"models:\n  m:\n    - {{provider: claude, model: {model}}}\n"
        f"policies:\n  - {FAST.replace('retries: 0', 'retries: 1')}\n"
    )
    return make_proxy(loaded=load_text(text))


def message_events(reply: synth.Reply) -> list[bytes]:
    return list(synth.message_stream("claude-sonnet-4-5", reply))


def test_a_messages_stream_is_continued_by_prefill_into_one_message(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = claude_proxy(make_proxy, upstream, "claude-sonnet-4-5")
    first = message_events(synth.Reply(text=ANSWER, pieces=4, input_tokens=30))
    delivered = "".join(PIECES[:2])
    rest = ANSWER.removeprefix(delivered.rstrip())
    # message_start, content_block_start, ping, two text deltas: then cut
    upstream.push(
        Events(first[:5]),
        Events(message_events(synth.Reply(text=rest, input_tokens=40, output_tokens=6))),
    )
    with httpx.stream(
        "POST",
        f"{url.removesuffix('/v1')}/v1/messages",
        json={
            "model": "m",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        },
        headers={"x-api-key": CLIENT_KEY, "anthropic-version": "2023-06-01"},
        timeout=20,
    ) as reply:
        names = [line[7:] for line in reply.iter_lines() if line.startswith("event: ")]
    assert names.count("message_start") == 1 and names.count("message_stop") == 1
    assert names.count("content_block_start") == 1 and "error" not in names
    sent = upstream.requests[1].json()["messages"]
    assert sent[-1] == {"role": "assistant", "content": delivered.rstrip()}
    # the real client reads one message, usage stating what it got
    upstream.push(
        Events(first[:5]),
        Events(message_events(synth.Reply(text=rest, input_tokens=40, output_tokens=6))),
    )
    with anthropic_client(url).messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == ANSWER  # type: ignore[union-attr]
    moved = tokens.count("claude-sonnet-4-5", delivered)
    assert message.usage.output_tokens == 6 + moved
    assert message.usage.input_tokens == 40 - moved


def test_a_messages_stream_cut_inside_a_tool_use_is_replayed_whole(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = claude_proxy(make_proxy, upstream, "claude-sonnet-4-5")  # takes a prefill: not here
    call = synth.ToolCall("toolu_first", "get_weather", '{"city": "Paris", "unit": "celsius"}')
    first = message_events(synth.Reply(text="Let me look.", tool_calls=[call], pieces=3))
    again = synth.ToolCall("toolu_again", call.name, call.arguments)
    cut_at = next(i for i, b in enumerate(first) if b"partial_json" in b and b'\\"city' in b)
    upstream.push(
        Events(first[: cut_at + 1]),
        Events(message_events(synth.Reply(text="Let me look.", tool_calls=[again], pieces=5))),
    )
    with anthropic_client(url).messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "Let me look."  # type: ignore[union-attr]
    tool = message.content[1]
    assert tool.id == "toolu_first" and tool.input == {"city": "Paris", "unit": "celsius"}  # type: ignore[union-attr]
    assert upstream.requests[1].json()["messages"] == [{"role": "user", "content": "hi"}]
    # a replay that calls the tool otherwise: the first failure, no corrupted tool call
    other = synth.ToolCall("toolu_other", call.name, '{"city": "Lyon"}')
    upstream.push(
        Events(first[: cut_at + 1]),
        Events(message_events(synth.Reply(text="Let me look.", tool_calls=[other]))),
    )
    with pytest.raises(anthropic.APIStatusError) as info:  # noqa: SIM117
        with anthropic_client(url).messages.stream(
            model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            stream.get_final_message()
    assert "ended the stream before its final event" in str(info.value)


def test_a_messages_stream_from_an_openai_target_is_continued_by_replay(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    upstream.push(Events(cut(stream(ANSWER, usage=True), 3), end="hang"))  # a stall
    backup.push(Events(stream(ANSWER, pieces=2, usage=True)))
    with anthropic_client(url).messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as messages:
        message = messages.get_final_message()
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == ANSWER  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert len(upstream.requests) == 1 and len(backup.requests) == 1


def response_events(reply: synth.Reply) -> list[bytes]:
    return list(synth.response_stream("m1", reply))


def test_a_responses_stream_is_continued_by_replay_into_one_response(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    first = response_events(synth.Reply(text=ANSWER, pieces=4))
    cut_at = [i for i, b in enumerate(first) if b"output_text.delta" in b][1]  # two deltas
    upstream.push(Events(first[: cut_at + 1]), Events(response_events(synth.Reply(text=ANSWER))))
    kinds: list[str] = []
    text = ""
    numbers: list[int] = []
    final = None
    for event in openai_client(url).responses.create(model="m", input="hi", stream=True):
        kinds.append(event.type)
        numbers.append(event.sequence_number)
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type == "response.completed":
            final = event.response
    assert text == ANSWER
    assert kinds.count("response.created") == 1 and kinds.count("response.completed") == 1
    assert kinds.count("response.output_item.added") == 1
    assert numbers == list(range(len(numbers)))
    assert final is not None and final.output_text == ANSWER
    first_id = json.loads(first[0].split(b"data: ", 1)[1])["response"]["id"]
    assert final.id == first_id
    # a replay that says something else: the first failure
    upstream.push(
        Events(first[: cut_at + 1]),
        Events(
            response_events(synth.Reply(text="Something else entirely, longer than the answer."))
        ),
    )
    with pytest.raises(openai.APIError):
        list(openai_client(url).responses.create(model="m", input="hi", stream=True))


def test_each_attempt_is_charged_for_what_it_produced_and_reports_agree(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream, tmp_path: Path
) -> None:
    db = tmp_path / "spend.db"
    text = (
        f"store: 'sqlite:///{db}'\n"
        "pricing: {m1: {input: 1000.0, output: 1000.0}}\n"
        f"providers:\n  one: {{base_url: '{upstream.base_url}', api_key: {UPSTREAM_KEY}}}\n"
        f"models:\n  m:\n    - {{provider: one, model: m1}}\n"
        f"policies:\n  - {FAST.replace('retries: 0', 'retries: 1')}\n"
        "  - budget: {limits: [{scope: key, usd: 100}]}\n"  # inside fallback: per attempt
    )
    url = make_proxy(loaded=load_text(text))
    upstream.push(
        Events(cut(stream(ANSWER), 3)),
        Events(stream(ANSWER, usage=True, input_tokens=10, output_tokens=9)),
    )
    chunks = list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
    eventually(lambda: settled(db)[1] == 2 and audited(db)[2] == 1)
    usd, _ = settled(db)  # the cut attempt (estimated from its text) and the replay
    assert usd > 19 * 0.001  # the replay's 19 tokens, plus the cut attempt's
    assert audited(db)[0] == pytest.approx(usd)  # the audit says what was charged


def test_the_seam_shows_in_the_trace_and_a_metric_not_in_the_text(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver
) -> None:
    text = (
        f"store: 'sqlite:///{TEST_STORE}'\n"
        f"providers:\n  one: {{base_url: '{upstream.base_url}', api_key: {UPSTREAM_KEY}}}\n"
        f"models:\n  m:\n    - {{provider: one, model: m1}}\n"
        f"policies:\n  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05}}\n"
        f"  - {FAST.replace('retries: 0', 'retries: 1')}\n"
    )
    url = make_proxy(loaded=load_text(text))
    upstream.push(Events(cut(stream(ANSWER), 3)), Events(stream(ANSWER)))
    events = raw_stream(url)
    whole(events)
    assert text_of(events) == ANSWER
    spans = receiver.wait_for(3)
    call = next(s for s in spans if s.name == "chat m")
    assert call.attributes["hookgate.stream.continuations"] == 1
    assert call.attributes["hookgate.stream.continued_by"] == "replay"
    attempts = [s for s in spans if s.name.startswith("attempt ")]
    assert [s.name for s in attempts] == ["attempt one/m1", "attempt one/m1"]
    assert [s.status_code for s in attempts] == [2, 0]  # the first failed mid-stream
    metrics = httpx.get(f"{url.removesuffix('/v1')}/metrics").text
    assert (
        'hookgate_stream_continuations_total{mode="replay",result="continued",target="one/m1"} 1.0'
        in metrics
    )


def test_a_responses_stream_cut_inside_a_function_call_is_replayed_whole(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    arguments = '{"city": "Paris", "unit": "celsius"}'
    first = response_events(
        synth.Reply(
            text="Let me look.", tool_calls=[synth.ToolCall("c1", "get_weather", arguments)]
        )
    )
    cut_at = next(i for i, b in enumerate(first) if b"function_call_arguments.delta" in b)
    again = synth.Reply(
        text="Let me look.", tool_calls=[synth.ToolCall("c2", "get_weather", arguments)], pieces=5
    )
    upstream.push(Events(first[: cut_at + 1]), Events(response_events(again)))
    final = None
    args = ""
    for event in openai_client(url).responses.create(model="m", input="hi", stream=True):
        if event.type == "response.function_call_arguments.delta":
            args += event.delta
        if event.type == "response.completed":
            final = event.response
    assert json.loads(args) == {"city": "Paris", "unit": "celsius"}
    assert final is not None and final.output_text == "Let me look."
    (call,) = [o for o in final.output if o.type == "function_call"]
    assert json.loads(call.arguments) == {"city": "Paris", "unit": "celsius"}
    first_item = json.loads(first[cut_at].split(b"data: ", 1)[1])["item_id"]
    assert call.id == first_item  # the item the client has, by its first id


OVERLOADED = b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'


def test_an_error_event_mid_stream_is_a_failure_continued_not_relayed(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    url = two_targets(make_proxy, upstream.base_url, backup.base_url)
    upstream.push(Events([*cut(stream(ANSWER), 3), OVERLOADED]), Events(stream(ANSWER)))
    events = raw_stream(url)
    whole(events)
    assert text_of(events) == ANSWER
    # not continued (the same target says something else): the upstream's error, once
    other = "Something else entirely, longer than the answer was."
    upstream.push(Events([*cut(stream(ANSWER), 3), OVERLOADED]), Events(stream(other)))
    with pytest.raises(openai.APIError) as info:
        list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True))
    assert "overloaded" in info.value.message
    assert backup.requests == []


def test_an_error_event_mid_messages_stream_is_continued(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = claude_proxy(make_proxy, upstream, "claude-sonnet-4-5")
    first = message_events(synth.Reply(text=ANSWER, pieces=4))
    error = (
        b"event: error\n"
        b'data: {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}\n\n'
    )
    rest = ANSWER.removeprefix("".join(PIECES[:2]).rstrip())
    upstream.push(Events([*first[:5], error]), Events(message_events(synth.Reply(text=rest))))
    with anthropic_client(url).messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as messages:
        message = messages.get_final_message()
    assert message.content[0].text == ANSWER  # type: ignore[union-attr]


def test_a_stream_that_fails_mid_way_counts_against_its_target_s_breaker(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    policy = FAST.replace("failures: 100", "failures: 1, min_requests: 100")
    url = two_targets(make_proxy, upstream.base_url, backup.base_url, policy)
    upstream.push(Events(cut(stream(ANSWER), 3)), Events(stream(ANSWER)))
    backup.push(Events(stream(ANSWER)))
    events = raw_stream(url)
    whole(events)
    assert text_of(events) == ANSWER
    assert len(upstream.requests) == 1 and len(backup.requests) == 1  # its circuit opened
    upstream.script.clear()


def test_continue_streams_false_ends_a_cut_stream_with_its_error(
    make_proxy: ProxyFactory, upstream: FakeUpstream, backup: FakeUpstream
) -> None:
    policy = FAST.replace("fallback: {", "fallback: {continue_streams: false, ")
    url = two_targets(make_proxy, upstream.base_url, backup.base_url, policy)
    upstream.push(Events(cut(stream(ANSWER), 3)), Events(stream(ANSWER)))
    events = raw_stream(url)
    assert text_of(events) == "".join(PIECES[:2])
    assert "event: error" in events and "[DONE]" not in events
    assert len(upstream.requests) == 1 and backup.requests == []
