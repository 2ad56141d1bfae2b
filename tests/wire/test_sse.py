"""SSE framing: every split point of a real stream yields the same events."""

from __future__ import annotations

import pytest

from hookgate.wire import sse, synth


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


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_any_feeding_gives_the_same_blocks(newline: bytes) -> None:
    data = stream_bytes().replace(b"\n", newline)
    whole = sse.SSEDecoder().feed(data)
    assert b"".join(whole) == data and len(whole) > 5
    one_by_one = sse.SSEDecoder()
    assert [b for i in range(len(data)) for b in one_by_one.feed(data[i : i + 1])] == whole
    for first in range(1, len(data), 7):
        for second in range(first, len(data), 11):
            decoder = sse.SSEDecoder()
            got = decoder.feed(data[:first]) + decoder.feed(data[first:second])
            assert got + decoder.feed(data[second:]) == whole, (first, second)
            assert decoder.pending == b""


def test_a_partial_block_is_pending() -> None:
    decoder = sse.SSEDecoder()
    assert decoder.feed(b"data: 1\n\ndata: ") == [b"data: 1\n\n"]
    assert decoder.feed(b"2") == [] and decoder.feed(b"\n") == []
    assert decoder.pending == b"data: 2\n"
    assert decoder.feed(b"\n") == [b"data: 2\n\n"] and decoder.pending == b""


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
    for framed in (b"id: 6\ndata: [DONE]\n\n", b"event: done\ndata: [DONE]\n\n",
                   b": c\r\ndata:[DONE]\r\n\r\n", b"\ndata: [DONE]\n\n"):  # fmt: skip
        assert sse.is_done(framed), framed
    assert not sse.is_done(b"data: [DONE] later\n\n")
    assert sse.is_responses_terminal(b'data: {"type": "response.failed"}\n\n')
    assert not sse.is_responses_terminal(b"event: response.output_text.delta\ndata: {}\n\n")
    assert sse.encode({"a": 1}, event="error") == b'event: error\ndata: {"a":1}\n\n'


def test_an_event_that_never_ends_is_refused_not_buffered_forever() -> None:
    decoder = sse.SSEDecoder(max_event_bytes=1000)
    assert decoder.feed(b"data: 1\n\ndata: ") == [b"data: 1\n\n"]
    with pytest.raises(sse.EventTooLarge):
        for _ in range(20):
            decoder.feed(b"x" * 100)
    big = sse.SSEDecoder(max_event_bytes=1000)
    assert big.feed(b"data: " + b"y" * 900) == []
    assert big.feed(b"y" * 50 + b"\n\n") == [b"data: " + b"y" * 950 + b"\n\n"]  # under: fine


@pytest.mark.parametrize(
    ("block", "parsable"),
    [
        (b'data: {"a": 1}\n\n', True),
        (b'data: {"a": 1}\r\n\r\n', True),
        (b'data:{"a": 1}\n\n', True),
        (b"data: [DONE]\n\n", True),
        (b": keep-alive\n\n", True),
        (b"event: ping\n\n", True),
        (b'event: response.created\ndata: {"type": "response.created"}\n\n', True),
        (b'data: {"a":\ndata: 1}\n\n', True),  # two data lines join to one document
        (b"data: not json\n\n", False),
        (b'data: {"a": \n\n', False),
        (b"event: message\ndata: <html>\n\n", False),
        (b"data: [DONE] trailing\n\n", False),
    ],
)
def test_data_of_raises_when_a_client_cannot_parse_an_event(block: bytes, parsable: bool) -> None:
    try:
        sse.data_of(block)
    except ValueError:
        assert not parsable
    else:
        assert parsable


def test_an_event_s_id_and_retry_are_read_and_odd_numbers_are_not_numbers() -> None:
    event = sse.parse(b"id: 42\nretry: 1500\ndata: {}\n\n")
    assert (event.id, event.retry) == ("42", 1500)
    assert sse.parse("retry: \u00b2\ndata: {}\n\n".encode()).retry is None  # a Unicode digit
    for odd in ("\u00b2", "9" * 5000, "-1", "1.5", ""):
        assert sse.event_number(odd) is None


def test_the_first_output_of_each_api_and_the_openings_before_it() -> None:
    reply = synth.Reply(text="hi", pieces=1)
    streams = {
        "chat.completions": list(synth.chat_stream("m", reply, include_usage=False)),
        "responses": list(synth.response_stream("m", reply)),
        "messages": list(synth.message_stream("m", reply)),
    }
    for api, blocks in streams.items():
        outputs = [sse.carries_output(api, block) for block in blocks]
        first = outputs.index(True)
        assert first >= 1 and not any(outputs[:first]), (api, outputs)  # an opening, then
        assert b"hi" in blocks[first], api  # the text is the first output
        assert sse.carries_output(api, b"".join(blocks[: first + 1]))  # one read with both
    chat = "chat.completions"
    assert not sse.carries_output(chat, b": keep-alive\n\n")
    assert not sse.carries_output("messages", b'event: ping\ndata: {"type": "ping"}\n\n')
    tool = b'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0}]}}]}\n\n'
    thinking = b'data: {"choices": [{"index": 0, "delta": {"reasoning_content": "so"}}]}\n\n'
    azure_filter = b'data: {"choices": [], "prompt_filter_results": []}\n\n'
    assert sse.carries_output(chat, tool) and sse.carries_output(chat, thinking)
    assert not sse.carries_output(chat, azure_filter)
    # what cannot be read, and the stream's end, end the wait: the reader judges them
    assert sse.carries_output(chat, b"data: not json\n\n")
    assert sse.carries_output(chat, sse.DONE)
    assert sse.carries_output("generate_content", b'data: {"candidates": []}\n\n')
