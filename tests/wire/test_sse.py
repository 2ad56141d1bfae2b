"""SSE framing: every split point of a real stream yields the same events."""

from __future__ import annotations

import pytest

from proxy.wire import sse, synth


def stream_bytes() -> bytes:
    reply = synth.Reply(text="héllo wörld", tool_calls=[synth.ToolCall("c", "f", '{"a": 1}')])
    return b"".join(synth.chat_stream("m", reply, include_usage=True))


def test_every_split_point_gives_the_same_blocks() -> None:
    data = stream_bytes()
    whole = sse.SSEDecoder().feed(data)
    assert b"".join(whole) == data
    for cut in range(1, len(data)):
        decoder = sse.SSEDecoder()
        assert decoder.feed(data[:cut]) + decoder.feed(data[cut:]) == whole, cut
        assert decoder.pending == b""


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_line_endings_and_fields(newline: bytes) -> None:
    block = (
        b"event: response.completed"
        + newline
        + b": comment"
        + newline
        + b'data: {"a":'
        + newline
        + b"data: 1}"
        + newline
        + newline
    )
    (parsed,) = sse.SSEDecoder().feed(block)
    event = sse.parse(parsed)
    assert event.event == "response.completed"
    assert event.json() == {"a": 1}
    assert sse.is_responses_terminal(parsed)


def test_terminal_detection() -> None:
    assert sse.is_done(b"data: [DONE]\n\n") and sse.is_done(b"data:[DONE]\n\n")
    assert not sse.is_done(b'data: {"x": "[DONE]"}\n\n')
    assert sse.is_responses_terminal(b'data: {"type": "response.failed"}\n\n')
    assert not sse.is_responses_terminal(b"event: response.output_text.delta\ndata: {}\n\n")
    assert sse.encode({"a": 1}, event="error") == b'event: error\ndata: {"a":1}\n\n'
