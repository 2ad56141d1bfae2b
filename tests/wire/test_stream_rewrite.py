"""Stream rewriting: deltas transformed, held-back text delivered before the stream moves on."""

from __future__ import annotations

import asyncio
from typing import Any

from hookgate.wire import sse, synth
from hookgate.wire.deltas import DeltaKey, StreamTransform
from hookgate.wire.stream_rewrite import rewriter_for


class Delay(StreamTransform):
    """Delays every string by one delta, upper-casing it."""

    def __init__(self) -> None:
        self.held: dict[DeltaKey, str] = {}

    async def delta(self, key: DeltaKey, text: str) -> str:
        out, self.held[key] = self.held.get(key, ""), text.upper()
        return out

    async def end(self, key: DeltaKey) -> str:
        return self.held.pop(key, "")


def run(api: str, blocks: list[bytes]) -> list[Any]:
    rewriter = rewriter_for(api, Delay())

    async def feed() -> list[bytes]:
        return [b for block in blocks for b in await rewriter.feed(block)]

    out = asyncio.run(feed())
    return [None if sse.is_done(b) else sse.parse(b).json() for b in out]


def test_chat_text_and_tools() -> None:
    reply = synth.Reply(text="abcdef", tool_calls=[synth.ToolCall("c", "f", '{"k":1}')], pieces=3)
    events = run("chat.completions", list(synth.chat_stream("m", reply, include_usage=True)))
    assert events[-1] is None  # [DONE] stays last
    text = "".join(
        e["choices"][0]["delta"].get("content") or "" for e in events[:-1] if e["choices"]
    )
    args = "".join(
        tc["function"].get("arguments", "")
        for e in events[:-1]
        if e["choices"]
        for tc in e["choices"][0]["delta"].get("tool_calls", [])
    )
    assert text == "ABCDEF" and args == '{"K":1}'
    assert events[-2]["usage"]["total_tokens"] == 15  # the usage chunk passes through


def test_chat_flushes_at_done_when_no_finish_reason() -> None:
    blocks = list(synth.chat_stream("m", synth.Reply(text="xyz", pieces=3), include_usage=False))
    without_finish = [b for b in blocks if b'"finish_reason":"stop"' not in b]
    events = run("chat.completions", without_finish)
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e)
    assert text == "XYZ"


def test_a_gemini_candidates_strings_are_each_transformed_whole() -> None:
    """What a chat choice carries from a Gemini candidate (a search's grounding) is
    transformed string by string, nothing held back, the rest as it was."""
    grounding = {
        "groundingMetadata": {
            "webSearchQueries": ["ab", "cd"],
            "groundingChunks": [{"web": {"title": "ef"}}],
            "groundingSupports": [{"groundingChunkIndices": [0]}],
        }
    }
    choice = {"index": 0, "delta": {}, "finish_reason": None, "gemini_candidate": grounding}
    block = sse.encode({"id": "c", "object": "chat.completion.chunk", "choices": [choice]})
    (event,) = run("chat.completions", [block])
    assert event["choices"][0]["gemini_candidate"] == {"groundingMetadata": {
        "webSearchQueries": ["AB", "CD"], "groundingChunks": [{"web": {"title": "EF"}}],
        "groundingSupports": [{"groundingChunkIndices": [0]}],
    }}  # fmt: skip


def test_legacy_completions() -> None:
    events = run(
        "completions", list(synth.completion_stream("m", synth.Reply(text="hello", pieces=2)))
    )
    assert "".join(e["choices"][0]["text"] for e in events if e) == "HELLO"


def test_responses_deltas_and_final_events_agree() -> None:
    reply = synth.Reply(text="hello", tool_calls=[synth.ToolCall("c", "f", '{"a":2}')], pieces=2)
    events = run("responses", list(synth.response_stream("m", reply)))
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    args = "".join(
        e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"
    )
    assert text == "HELLO" and args == '{"A":2}'
    done = next(e for e in events if e["type"] == "response.output_text.done")
    assert done["text"] == "HELLO"
    final = events[-1]["response"]["output"]
    assert final[0]["content"][0]["text"] == "HELLO" and final[1]["arguments"] == '{"A":2}'


async def test_non_json_events_pass_through() -> None:
    rewriter = rewriter_for("chat.completions", Delay())
    assert await rewriter.feed(b": keep-alive\n\n") == [b": keep-alive\n\n"]
    assert await rewriter.feed(b"data: not json\n\n") == [b"data: not json\n\n"]
