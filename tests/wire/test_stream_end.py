"""What counts as a stream's finish reason, per API, and the terminal event hookgate
sends for a stream that stopped after it."""

from __future__ import annotations

from typing import Any

from hookgate.wire import sse, synth
from hookgate.wire.stream_end import MESSAGE_STOP, StreamEnd


def chunk(*choices: tuple[int, str | None]) -> dict[str, Any]:
    return {"choices": [{"index": i, "delta": {}, "finish_reason": r} for i, r in choices]}


def test_a_chat_stream_ends_when_every_choice_it_opened_has_finished() -> None:
    end = StreamEnd("chat.completions")
    assert end.closing is None  # nothing yet
    end.saw(chunk((0, None), (1, None)))
    end.saw(chunk((0, "stop")))
    assert end.closing is None  # choice 1 is still open
    end.saw({"choices": [], "usage": {"prompt_tokens": 1}})
    end.saw(chunk((1, "length")))
    assert end.closing == sse.DONE
    assert end.terminal(sse.DONE) and not end.terminal(sse.encode(chunk((0, "stop"))))


def test_a_legacy_completions_stream_ends_like_a_chat_stream() -> None:
    end = StreamEnd("completions")
    end.saw({"choices": [{"index": 0, "text": "hi", "finish_reason": None}]})
    assert end.closing is None
    end.saw({"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]})
    assert end.closing == sse.DONE


def test_a_messages_stream_ends_at_message_delta_with_a_stop_reason() -> None:
    end = StreamEnd("messages")
    events = [sse.object_of(b) for b in synth.message_stream("m", synth.Reply(text="hi"))]
    for data in events[:-2]:
        assert data is not None
        end.saw(data)
        assert end.closing is None
    end.saw({"type": "message_delta", "delta": {"stop_reason": None}, "usage": {}})
    assert end.closing is None  # a delta without a stop reason does not finish it
    assert events[-2] is not None
    end.saw(events[-2])
    assert end.closing == MESSAGE_STOP and end.terminal(MESSAGE_STOP)
    assert sse.object_of(MESSAGE_STOP) == {"type": "message_stop"}


def test_responses_and_gemini_streams_end_only_at_their_terminal_event() -> None:
    for api, stream in (
        ("responses", synth.response_stream("m", synth.Reply(text="hi"))),
        ("generate_content", iter([sse.encode({"candidates": [{"finishReason": "STOP"}]})])),
    ):
        end = StreamEnd(api)
        blocks = list(stream)
        for block in blocks:
            data = sse.object_of(block)
            assert data is not None
            end.saw(data)
            assert end.closing is None
        assert end.terminal(blocks[-1])


def test_a_stream_that_asked_for_usage_keeps_its_text_until_the_usage_chunk_comes() -> None:
    end = StreamEnd("chat.completions", usage=True)
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7, "model": "m"}
    end.saw({**head, "choices": [{"index": 0, "delta": {"content": "Hi "}}]})
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a": 1}'}}
    end.saw({**head, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    assert end.usage_missing and end.text == 'Hi {"a": 1}'
    assert sse.object_of(end.usage_chunk({"prompt_tokens": 1})) == {
        **head, "choices": [], "usage": {"prompt_tokens": 1}
    }  # fmt: skip
    end.saw({**head, "choices": [], "usage": {"prompt_tokens": 1}})
    assert not end.usage_missing and end.text == ""
    legacy = StreamEnd("completions", usage=True)
    legacy.saw({"choices": [{"index": 0, "text": "Once", "finish_reason": None}]})
    assert legacy.text == "Once"
    assert not StreamEnd("chat.completions").usage_missing  # not asked: nothing kept
    assert not StreamEnd("messages", usage=True).usage_missing
