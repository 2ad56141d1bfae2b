"""Where a streamed answer is cut for scanning: after a line or sentence end once enough is
held, at the last whitespace when too much is, never inside a word otherwise."""

from __future__ import annotations

from hookgate.redaction.output import MAX_SEGMENT, MIN_SEGMENT, ScanningStream, cut
from hookgate.wire.deltas import DeltaKey


def test_a_short_sentence_waits_for_more() -> None:
    assert cut("Dr. Smith is in. ") == 0
    assert cut("x" * (MIN_SEGMENT - 2) + ".\n") == MIN_SEGMENT


def test_the_last_boundary_after_the_minimum_is_used() -> None:
    first = "a" * MIN_SEGMENT + ". "
    text = first + "Call Dr. Jane Roe now! And then" + " more"
    assert cut(text) == text.index("And then")
    assert cut(first + '"Quoted." ') == len(first + '"Quoted." ')


def test_a_long_run_without_a_boundary_is_cut_at_whitespace_or_whole() -> None:
    words = "word " * (MAX_SEGMENT // 5 + 2) + "tail"
    assert cut(words) == len(words) - len("tail")
    blob = "x" * (MAX_SEGMENT + 1)
    assert cut(blob) == len(blob)
    assert cut("word " * 10) == 0  # short: held


async def test_only_text_is_held_and_everything_is_released_once() -> None:
    scanned: list[str] = []

    async def scan(text: str) -> str:
        scanned.append(text)
        return text.upper()

    stream = ScanningStream(scan)
    text, args = DeltaKey("text", 0), DeltaKey("tool_arguments", 0, 0)
    sentence = "b" * MIN_SEGMENT + ". "
    assert await stream.delta(args, '{"a": 1') == '{"a": 1'
    assert await stream.delta(text, sentence[:10]) == ""
    assert await stream.delta(text, sentence[10:] + "rest") == sentence.upper()
    assert await stream.end(text) == "REST"
    assert await stream.end(text) == ""
    assert scanned == [sentence, "rest"]
