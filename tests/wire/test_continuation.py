"""Splicing a next attempt's stream onto what a client already has (pure)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from hookgate.wire import sse, synth
from hookgate.wire.continuation import ChatTranscript, Diverged


def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> bytes:
    choice = {"index": index, "delta": delta, "finish_reason": finish}
    return sse.encode({"id": "chatcmpl-x", "object": "chat.completion.chunk", "choices": [choice]})


def delivered(*blocks: bytes) -> ChatTranscript:
    transcript = ChatTranscript()
    transcript.feed(b"".join(blocks))
    return transcript


def chunks_of(out: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(sse.parse(b).data) for b in sse.split(out) if not sse.is_done(b)]


def call(index: int, arguments: str, name: str | None = None, id: str | None = None) -> bytes:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    entry: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        entry |= {"id": id, "type": "function"}
    return chunk({"tool_calls": [entry]})


def test_what_a_transcript_says_can_be_continued() -> None:
    role = chunk({"role": "assistant", "content": ""})
    assert delivered(role, chunk({"content": "Hi"})).prefillable
    assert not delivered(role, chunk({}, "stop")).continuable  # finished
    assert not delivered(role, chunk({"content": "a"}, index=1)).continuable  # n > 1
    with_call = delivered(role, call(0, '{"a"', "f", "call_1"))
    assert with_call.continuable and not with_call.prefillable


def test_a_prefill_drops_the_role_and_reasoning_and_the_whitespace_it_left_out() -> None:
    transcript = delivered(
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "think"}),
        chunk({"content": "Hello "}),
    )
    body = transcript.request({"messages": [{"role": "user", "content": "hi"}]}, "prefill")
    assert body["messages"][-1] == {"role": "assistant", "content": "Hello"}
    splice = transcript.splice("prefill")
    out = splice.feed(
        chunk({"role": "assistant", "content": ""})
        + chunk({"reasoning_content": "more"})
        + chunk({"content": " world"})
        + chunk({}, "stop")
        + sse.DONE
    )
    assert [c["choices"][0]["delta"] for c in chunks_of(out)] == [{"content": "world"}, {}]
    assert out.endswith(sse.DONE)


def test_a_replay_relays_only_what_follows_a_complete_call_and_the_open_one() -> None:
    transcript = delivered(
        chunk({"role": "assistant", "content": None}),
        call(0, '{"a": 1}', "f", "call_1"),
        call(1, '{"b"', "g", "call_2"),
    )
    splice = transcript.splice("replay")
    replay = list(
        synth.chat_stream(
            "m",
            synth.Reply(
                tool_calls=[
                    synth.ToolCall("c9", "f", '{"a": 1}'),
                    synth.ToolCall("c10", "g", '{"b": 2}'),
                ],
                pieces=2,
            ),
            include_usage=False,
        )
    )
    out = chunks_of(splice.feed(b"".join(replay)))
    calls = [t for c in out for t in c["choices"][0]["delta"].get("tool_calls", [])]
    assert calls == [{"index": 1, "function": {"arguments": ": 2}"}}]
    assert {c["id"] for c in out} == {"chatcmpl-x"}


@pytest.mark.parametrize(
    "replay",
    [
        [chunk({"content": "Hello there"})],  # text where a tool call was
        [call(0, '{"a": 1}', "other", "c9")],  # another tool
        [call(0, '{"a": 2}', "f", "c9")],  # other arguments
        [call(0, '{"a"', "f", "c9")],  # shorter than what was delivered
    ],
)
def test_a_replay_that_differs_is_refused_before_anything_is_relayed(replay: list[bytes]) -> None:
    transcript = delivered(chunk({"role": "assistant", "content": None}), call(0, '{"a": 1', "f"))
    splice = transcript.splice("replay")
    with pytest.raises(Diverged):
        splice.feed(b"".join(replay) + chunk({}, "tool_calls"))
