"""Streams are relayed as they arrive, and every failure is reported, never hidden."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

from hookgate.config.loader import LoadedConfig, load_text
from hookgate.wire import sse, synth
from tests.conftest import TEST_STORE, ProxyFactory, openai_client
from tests.fakes import Events, FakeUpstream, Hang, Raw, send_raw


def single_provider(base_url: str, settings: str = "") -> LoadedConfig:
    extra = f", {settings}" if settings else ""
    return load_text(
        f"store: 'sqlite:///{TEST_STORE}'\n"
        f"providers:\n  p: {{base_url: '{base_url}'{extra}}}\nmodels:\n  \"*\": [{{provider: p}}]\n"
    )


def chat_blocks(text: str) -> list[bytes]:
    return list(
        synth.chat_stream("m", synth.Reply(text=text, pieces=len(text)), include_usage=False)
    )


def test_first_chunk_arrives_before_upstream_finishes(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.push(Events(chat_blocks("abcd"), delay=0.4))
    stream = openai_client(proxy_url).chat.completions.create(model="m", messages=[], stream=True)
    started = time.monotonic()
    arrivals = [time.monotonic() - started for _ in stream]
    # 7 events 0.4 s apart upstream: the first must arrive long before the last is sent
    assert arrivals[0] < 0.3
    assert arrivals[-1] > 2.0


def test_stream_cut_by_upstream_raises_in_the_client(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.push(Events(chat_blocks("abcdef")[:4]))  # no finish chunk, no [DONE]
    stream = openai_client(proxy_url).chat.completions.create(model="m", messages=[], stream=True)
    received = []
    with pytest.raises(openai.APIError) as info:
        for chunk in stream:
            received.append(chunk)
    assert len(received) == 4
    assert "ended the stream before its final event" in info.value.message


def test_responses_stream_cut_raises(proxy_url: str, upstream: FakeUpstream) -> None:
    blocks = list(synth.response_stream("m", synth.Reply(text="hello")))
    upstream.push(Events(blocks[:-1]))  # everything but response.completed
    with pytest.raises(openai.APIError):
        list(openai_client(proxy_url).responses.create(model="m", input="x", stream=True))


def test_streamed_call_answered_with_json_is_502(proxy_url: str, upstream: FakeUpstream) -> None:
    upstream.push(Raw(b'{"id": "x"}'))
    with pytest.raises(openai.InternalServerError) as info:
        list(openai_client(proxy_url).chat.completions.create(model="m", messages=[], stream=True))
    assert info.value.status_code == 502


def test_client_disconnect_cancels_upstream(proxy_url: str, upstream: FakeUpstream) -> None:
    upstream.push(Events(chat_blocks("ab"), end="hang"))
    with (
        httpx.Client(timeout=5) as http,
        http.stream(
            "POST",
            f"{proxy_url}/chat/completions",
            json={"model": "m", "messages": [], "stream": True},
        ) as response,
    ):
        first = next(response.iter_raw())
        assert first.startswith(b"data: ")
    assert upstream.cancelled.wait(5), "upstream request still running after the client left"


def test_client_disconnect_before_first_byte_cancels_upstream(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    upstream.push(Hang())
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{proxy_url}/chat/completions", json={"model": "m", "messages": []}, timeout=0.5
        )
    assert upstream.cancelled.wait(5)


def test_unreachable_upstream_is_502(make_proxy: ProxyFactory, refused_port: int) -> None:
    port = refused_port
    proxy = make_proxy(loaded=single_provider(f"http://127.0.0.1:{port}/v1"))
    with pytest.raises(openai.InternalServerError) as info:
        openai_client(proxy).chat.completions.create(model="m", messages=[])
    assert info.value.status_code == 502
    assert info.value.code == "upstream_unreachable"  # type: ignore[attr-defined]


def test_upstream_timeout_is_504(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    proxy = make_proxy(loaded=single_provider(upstream.base_url, "timeout: {read_s: 0.3}"))
    upstream.push(Hang())
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as info:
        openai_client(proxy).chat.completions.create(model="m", messages=[])
    assert info.value.status_code == 504
    assert time.monotonic() - started < 3


def test_stall_mid_stream_becomes_error_event(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    proxy = make_proxy(loaded=single_provider(upstream.base_url, "timeout: {read_s: 0.3}"))
    upstream.push(Events(chat_blocks("ab")[:2], end="hang"))
    with pytest.raises(openai.APIError) as info:
        list(openai_client(proxy).chat.completions.create(model="m", messages=[], stream=True))
    assert "within the timeout" in info.value.message


def test_error_event_is_well_formed(proxy_url: str, upstream: FakeUpstream) -> None:
    upstream.push(Events(chat_blocks("abc")[:2]))
    response = httpx.post(
        f"{proxy_url}/chat/completions", json={"model": "m", "messages": [], "stream": True}
    )
    blocks = sse.SSEDecoder().feed(response.content)
    last = sse.parse(blocks[-1])
    assert last.event == "error"
    error = last.json()["error"]  # type: ignore[index]
    assert error["code"] == "upstream_reset" and error["type"] == "upstream_error"


def test_the_stream_ends_at_done_even_if_the_upstream_keeps_its_connection_open(
    proxy_url: str, upstream: FakeUpstream
) -> None:
    events = list(synth.chat_stream("m", synth.Reply(text="done then idle"), include_usage=False))
    upstream.push(Events([*events, b": still here\n\n"], end="hang"))
    started = time.monotonic()
    body = {"model": "m", "messages": [], "stream": True}
    response = httpx.post(f"{proxy_url}/chat/completions", json=body, timeout=10)
    assert time.monotonic() - started < 5  # not the stall timeout
    assert response.text.endswith("data: [DONE]\n\n")
    assert "event: error" not in response.text and "still here" not in response.text
    assert upstream.cancelled.wait(5)  # and the upstream connection was closed


def test_an_http_1_0_client_sees_the_stream_end(proxy_url: str) -> None:
    """HTTP/1.0 has no chunked encoding: a stream's end is the connection's close, even if
    the client asked to keep it alive."""
    body = b'{"model": "m", "messages": [], "stream": true}'
    head = (
        b"POST /v1/chat/completions HTTP/1.0\r\nConnection: keep-alive\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    started = time.monotonic()
    reply = send_raw(proxy_url, head + body, timeout=10)
    assert time.monotonic() - started < 5  # closed by the proxy, not by the timeout
    assert reply.startswith(b"HTTP/1.0 200") and reply.rstrip().endswith(b"data: [DONE]")
