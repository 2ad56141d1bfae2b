"""How an upstream stream ends, through the proxy, with the real ``openai`` and
``anthropic`` clients against a scripted upstream (no policies: the provider's event
reader alone, :mod:`hookgate.providers.upstream_events`).

* A stream that stopped after its finish reason without its terminal event (``data:
  [DONE]``, ``message_stop``) is complete: hookgate sends that event, once; native and
  translated. One that stopped before its finish reason still fails.
* A malformed event in the middle of a stream is dropped and counted, and the stream goes
  on; a malformed first event fails the attempt (an error status), and
  :data:`~hookgate.providers.upstream_events.MALFORMED_IN_A_ROW` in a row fail the stream.
"""

from __future__ import annotations

import time

import anthropic
import httpx
import openai
import pytest

from hookgate.budgets.tokens import count, prompt_tokens
from hookgate.config.loader import load_text
from hookgate.providers.upstream_events import AFTER_FINISH_S, MALFORMED_IN_A_ROW
from hookgate.wire import sse, synth
from tests.conftest import TEST_STORE, ProxyFactory, anthropic_client, openai_client
from tests.fakes import Events, FakeUpstream
from tests.otlp import OtlpReceiver

TEXT = "one two three four five six"
REPLY = synth.Reply(text=TEXT, pieces=6, input_tokens=11, output_tokens=6)
BAD = (b"data: not json at all\n\n", b'data: {"choices": [{"delta": \n\n', b"<html>oops</html>\n\n")


def chat_events(*, include_usage: bool = True) -> list[bytes]:
    """A whole chat stream without its ``[DONE]``: role, six content chunks, the finish
    chunk and (``include_usage``) the usage chunk."""
    events = list(synth.chat_stream("m", REPLY, include_usage=include_usage))
    assert events[-1] == sse.DONE
    return events[:-1]


def whole_chat_events() -> list[bytes]:
    """A whole chat stream, ``[DONE]`` included."""
    return [*chat_events(), sse.DONE]


def message_events() -> list[bytes]:
    """A whole Messages stream without its ``message_stop``."""
    events = list(synth.message_stream("claude-x", REPLY))
    assert b"message_stop" in events[-1] and b"message_delta" in events[-2]
    return events[:-1]


def claude(upstream: FakeUpstream, policies: str = "") -> str:
    """A config whose models are served by an Anthropic provider (``type: anthropic``)."""
    return (
        f"providers:\n  claude: {{type: anthropic, base_url: '{upstream.base_url}', "
        "api_key: 'sk-ant-upstream'}\n"
        'models:\n  "*": [{provider: claude}]\n'
        f"store: 'sqlite:///{TEST_STORE}'\n{policies}"
    )


def chat_text(stream: openai.Stream[openai.types.chat.ChatCompletionChunk]) -> tuple[str, list]:
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks


# -- a stream that ended with its finish reason ----------------------------------------


def test_a_chat_stream_without_done_after_finish_and_usage_is_complete(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.push(Events(chat_events()))
    stream = openai_client(proxy_url).chat.completions.create(
        model="m", messages=[], stream=True, stream_options={"include_usage": True}
    )
    text, chunks = chat_text(stream)
    assert text == TEXT
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 6
    # on the wire: hookgate's [DONE], once, last
    upstream.push(Events(chat_events()))
    raw = httpx.post(
        f"{proxy_url}/chat/completions", json={"model": "m", "messages": [], "stream": True}
    ).content
    assert raw.endswith(b"\n\ndata: [DONE]\n\n") and raw.count(b"[DONE]") == 1
    assert b"error" not in raw


def test_a_chat_stream_without_done_or_usage_after_its_finish_reason_states_a_counted_usage(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    """The client asked for the usage chunk and the upstream stopped before it: hookgate
    sends one with its own count (tiktoken) before its ``[DONE]``."""
    upstream.push(Events(chat_events(include_usage=False)))
    stream = openai_client(proxy_url).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Count to six."}], stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    text, chunks = chat_text(stream)
    assert text == TEXT and chunks[-2].choices[0].finish_reason == "stop"
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None
    assert chunks[-1].id == chunks[0].id and chunks[-1].model == chunks[0].model
    assert usage.completion_tokens == count("m", TEXT)
    assert usage.prompt_tokens == prompt_tokens(
        "chat.completions", "m", {"messages": [{"role": "user", "content": "Count to six."}]}
    )
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    # a client that did not ask gets no usage chunk
    upstream.push(Events(chat_events(include_usage=False)))
    stream = openai_client(proxy_url).chat.completions.create(model="m", messages=[], stream=True)
    text, chunks = chat_text(stream)
    assert text == TEXT and chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)


def test_a_stream_that_goes_silent_after_its_finish_reason_ends_at_the_read_timeout(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """The upstream sent the finish and usage chunks, then neither ``[DONE]`` nor a
    close: past the provider's ``read_s`` the answer is whole, not a timeout."""
    url = make_proxy(
        loaded=load_text(
            f"providers:\n  up: {{base_url: '{upstream.base_url}', timeout: {{read_s: 0.5}}}}\n"
            f"models:\n  \"*\": [{{provider: up}}]\nstore: 'sqlite:///{TEST_STORE}'\n"
        )
    )
    upstream.push(Events(chat_events(), end="hang"))
    started = time.monotonic()
    stream = openai_client(url).chat.completions.create(model="m", messages=[], stream=True)
    text, chunks = chat_text(stream)
    assert text == TEXT and chunks[-1].usage is not None
    assert time.monotonic() - started < 3
    upstream.push(Events(chat_events()[:-2], end="hang"))  # silent before its finish
    with pytest.raises(openai.APIError, match="sent nothing within the timeout"):
        list(openai_client(url).chat.completions.create(model="m", messages=[], stream=True))


def test_a_stream_silent_after_its_finish_reason_is_ended_before_a_stall_timeout(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """Finish and usage chunks, then silence: hookgate ends the stream after
    ``AFTER_FINISH_S``, whole, before the fallback policy's stall timeout would fail it."""
    url = make_proxy("policies:\n  - fallback: {retries: 0, stall_timeout_s: 10}\n")
    upstream.push(Events(chat_events(), end="hang"))
    started = time.monotonic()
    stream = openai_client(url).chat.completions.create(model="m", messages=[], stream=True)
    text, chunks = chat_text(stream)
    assert text == TEXT and chunks[-1].usage is not None
    assert AFTER_FINISH_S <= time.monotonic() - started < AFTER_FINISH_S + 2


def test_a_chat_stream_cut_before_its_finish_reason_still_fails(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.push(Events(chat_events()[:-2]))  # content, no finish chunk, no usage
    received: list[str] = []
    with pytest.raises(openai.APIError, match="ended the stream before its final event"):
        for chunk in openai_client(proxy_url).chat.completions.create(
            model="m", messages=[], stream=True
        ):
            received.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
    assert "".join(received) == TEXT


def test_a_messages_stream_without_message_stop_after_message_delta_is_complete(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(claude(upstream)))
    upstream.push(Events(message_events()))
    client = anthropic_client(url)
    with client.messages.stream(
        model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        kinds = [event.type for event in stream]
        message = stream.get_final_message()
    assert kinds[-1] == "message_stop" and kinds.count("message_stop") == 1
    assert message.content[0].type == "text" and message.content[0].text == TEXT
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 6)


def test_a_messages_stream_cut_before_message_delta_still_fails(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(claude(upstream)))
    upstream.push(Events(message_events()[:-1]))  # no message_delta: no stop reason
    with (
        pytest.raises(anthropic.APIError, match="ended the stream before its final event"),
        anthropic_client(url).messages.stream(
            model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        list(stream)


def test_a_translated_chat_stream_from_messages_without_message_stop_is_complete(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """Chat client, Anthropic provider: hookgate's ``message_stop`` becomes the finish
    chunk, the usage chunk and ``[DONE]``."""
    url = make_proxy(loaded=load_text(claude(upstream)))
    upstream.push(Events(message_events()))
    stream = openai_client(url).chat.completions.create(
        model="claude-x", messages=[{"role": "user", "content": "hi"}], stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    text, chunks = chat_text(stream)
    assert text == TEXT
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (11, 6)


def test_a_translated_messages_stream_from_chat_without_done_is_complete(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """Messages client, OpenAI-compatible provider without the Messages API, a stream
    that stopped after its finish chunk (no usage chunk, no ``[DONE]``): hookgate's
    ``[DONE]`` becomes ``message_delta`` and ``message_stop``, with hookgate's count of
    the usage (a translated stream always states one)."""
    url = make_proxy(
        loaded=load_text(
            f"providers:\n  up: {{base_url: '{upstream.base_url}', apis: [chat.completions]}}\n"
            f"models:\n  \"*\": [{{provider: up}}]\nstore: 'sqlite:///{TEST_STORE}'\n"
        )
    )
    upstream.push(Events(chat_events(include_usage=False)))
    with anthropic_client(url).messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        kinds = [event.type for event in stream]
        message = stream.get_final_message()
    assert kinds[-1] == "message_stop" and kinds.count("message_stop") == 1
    assert message.content[0].type == "text" and message.content[0].text == TEXT
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0


def test_a_translated_responses_stream_from_messages_without_message_stop_is_complete(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(claude(upstream)))
    upstream.push(Events(message_events()))
    events = list(openai_client(url).responses.create(model="claude-x", input="hi", stream=True))
    assert events[-1].type == "response.completed"
    response = events[-1].response  # type: ignore[union-attr]
    assert response.output_text == TEXT and response.usage is not None
    assert response.usage.output_tokens == 6


def test_a_responses_stream_without_its_terminal_event_still_fails(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    """A Responses stream's finish is ``response.completed`` itself: without it, cut."""
    events = list(synth.response_stream("m", REPLY))
    assert b"response.completed" in events[-1]
    upstream.push(Events(events[:-1]))
    with pytest.raises(openai.APIError, match="ended the stream before its final event"):
        list(openai_client(proxy_url).responses.create(model="m", input="x", stream=True))


# -- malformed events ------------------------------------------------------------------


def malformed_count(url: str, target: str) -> float:
    """``hookgate_upstream_malformed_events_total`` for ``target``, once the call's
    metrics are recorded (after its response was written)."""
    deadline = time.monotonic() + 5
    while True:
        metrics = httpx.get(url.removesuffix("/v1") + "/metrics").text
        assert "# TYPE hookgate_upstream_malformed_events_total counter" in metrics
        series = f'hookgate_upstream_malformed_events_total{{target="{target}"}} '
        found = [ln for ln in metrics.splitlines() if ln.startswith(series)]
        if found or time.monotonic() > deadline:
            return float(found[0].split()[-1]) if found else 0.0
        time.sleep(0.05)


@pytest.mark.parametrize("bad", BAD, ids=["not-json", "cut-json", "not-sse"])
def test_one_malformed_chat_event_mid_stream_is_dropped_and_counted(
    proxy_url: str, upstream: FakeUpstream, bad: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    events = whole_chat_events()
    # alone in its read, and between good events in one read
    upstream.push(Events([*events[:3], bad, *events[3:]]))
    upstream.push(Events([*events[:3], events[3] + bad + events[4], *events[5:]]))
    for _ in range(2):
        stream = openai_client(proxy_url).chat.completions.create(
            model="m", messages=[], stream=True
        )
        text, chunks = chat_text(stream)
        assert text == TEXT
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert malformed_count(proxy_url, "up/m") == 2
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) == 2 and all("up/m sent a stream event" in m for m in dropped)
    assert not any(bad.strip().decode() in m for m in dropped)  # never the content


def test_a_malformed_event_in_a_messages_stream_is_dropped(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    url = make_proxy(loaded=load_text(claude(upstream)))
    events = list(synth.message_stream("claude-x", REPLY))
    upstream.push(
        Events([*events[:4], b"event: content_block_delta\ndata: {oops\n\n", *events[4:]])
    )
    with anthropic_client(url).messages.stream(
        model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    assert message.content[0].type == "text" and message.content[0].text == TEXT
    assert malformed_count(url, "claude/claude-x") == 1


def test_malformed_events_short_of_the_limit_are_dropped_and_a_good_one_restarts_the_count(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    events = whole_chat_events()
    short = [BAD[0]] * (MALFORMED_IN_A_ROW - 1)
    upstream.push(
        Events([*events[:3], *short, b": keep-alive\n\n", events[3], *short, *events[4:]])
    )
    stream = openai_client(proxy_url).chat.completions.create(model="m", messages=[], stream=True)
    assert chat_text(stream)[0] == TEXT
    assert malformed_count(proxy_url, "up/m") == 2 * len(short)


def test_a_malformed_first_event_fails_the_attempt_with_an_error_status(
    proxy_url: str, make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    for bad in BAD:
        upstream.push(Events([bad, *whole_chat_events()]))
        with pytest.raises(openai.APIStatusError) as info:
            list(
                openai_client(proxy_url).chat.completions.create(
                    model="m", messages=[], stream=True
                )
            )
        assert info.value.status_code == 502 and info.value.code == "upstream_bad_response"
        assert "sent a first event" in info.value.message
    url = make_proxy(loaded=load_text(claude(upstream)))
    upstream.push(
        Events([b"event: message_start\ndata: {\n\n", *synth.message_stream("claude-x", REPLY)])
    )
    with pytest.raises(anthropic.APIStatusError) as failed:
        anthropic_client(url).messages.create(
            model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )  # fmt: skip
    assert failed.value.status_code == 502 and "first event" in failed.value.message


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_malformed_events_in_a_row_fail_the_stream(
    make_proxy: ProxyFactory, upstream: FakeUpstream, api: str
) -> None:
    run = [BAD[i % len(BAD)] for i in range(MALFORMED_IN_A_ROW)]
    if api == "chat":
        url = make_proxy()
        events = whole_chat_events()
        upstream.push(Events([*events[:3], *run, *events[3:]]))
        seen: list[str] = []
        with pytest.raises(
            openai.APIError, match=f"{MALFORMED_IN_A_ROW} malformed events in a row"
        ):
            for chunk in openai_client(url).chat.completions.create(
                model="m", messages=[], stream=True
            ):
                seen.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
        assert "".join(seen) == "one two th"  # what came before the run
    else:
        url = make_proxy(loaded=load_text(claude(upstream)))
        events = list(synth.message_stream("claude-x", REPLY))
        upstream.push(Events([*events[:5], *run, *events[5:]]))
        with (
            pytest.raises(anthropic.APIError, match="malformed events in a row"),
            anthropic_client(url).messages.stream(
                model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
            ) as stream,
        ):
            list(stream)
    assert malformed_count(url, "up/m" if api == "chat" else "claude/claude-x") == len(run) - 1


def test_a_dropped_event_is_an_event_of_the_call_s_span(
    make_proxy: ProxyFactory, upstream: FakeUpstream, receiver: OtlpReceiver
) -> None:
    url = make_proxy(
        f"policies:\n  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05}}\n"
    )
    events = whole_chat_events()
    upstream.push(Events([*events[:3], BAD[0], *events[3:]]))
    stream = openai_client(url).chat.completions.create(model="m", messages=[], stream=True)
    assert chat_text(stream)[0] == TEXT
    (span,) = [s for s in receiver.wait_for(1) if s.name == "chat m"]
    assert span.events == ["hookgate.upstream.malformed_event"]
    assert span.status_code != 2  # not an error
