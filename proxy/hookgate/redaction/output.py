"""Scanning what a model writes: a streamed answer is scanned a sentence at a time.

An entity can only be recognised whole, so a stream's text is held until it reaches a
boundary an entity does not cross — the end of a line or a sentence, once at least
:data:`MIN_SEGMENT` characters are held — and the held segment is then scanned and
released, changed or not. A segment that grows past :data:`MAX_SEGMENT` characters with
no such boundary is cut at its last whitespace (or whole, if it has none). The reader
therefore gets the answer a sentence at a time instead of a token at a time; that is the
price of never showing a value before it is checked.

Only answer text is scanned (``DeltaKey`` kind ``text``); tool-call arguments are what the
model passes to a tool, which needs the real values, and pass through. Pure: the scan
itself is a coroutine the caller provides (the ``pii`` policy runs its analyzer on worker
threads).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from hookgate.wire.deltas import DeltaKey, StreamTransform

MIN_SEGMENT = 48
"""Characters held before a line or sentence end releases them ("Dr. " alone does not)."""
MAX_SEGMENT = 512
"""Characters held at most before the text is cut at its last whitespace."""

_BOUNDARY = re.compile(r"\n|[.!?;:][\"')\]]*\s")
"""The end of a line, or of a sentence (its closing quotes and brackets included) followed
by whitespace; a segment ends after it."""
_SPACE = re.compile(r"\s")

Scan = Callable[[str], Awaitable[str]]
"""Returns a segment as the reader may see it; may raise to end the stream."""


def cut(text: str) -> int:
    """How much of ``text`` may be scanned now: up to its last boundary at or after
    :data:`MIN_SEGMENT`, else (when longer than :data:`MAX_SEGMENT`) up to its last
    whitespace, else nothing (0)."""
    if len(text) < MIN_SEGMENT:
        return 0
    last = 0
    for match in _BOUNDARY.finditer(text):
        if match.end() >= MIN_SEGMENT:
            last = match.end()
    if last or len(text) <= MAX_SEGMENT:
        return last
    spaces = [m.end() for m in _SPACE.finditer(text)]
    return spaces[-1] if spaces else len(text)


class ScanningStream(StreamTransform):
    """Holds each answer text until a boundary, then releases it as ``scan`` returns it."""

    def __init__(self, scan: Scan) -> None:
        self._scan = scan
        self._held: dict[DeltaKey, str] = {}

    async def delta(self, key: DeltaKey, text: str) -> str:
        if key.kind != "text":
            return text
        held = self._held.pop(key, "") + text
        n = cut(held)
        if n < len(held):
            self._held[key] = held[n:]
        return await self._scan(held[:n]) if n else ""

    async def end(self, key: DeltaKey) -> str:
        rest = self._held.pop(key, "")
        return await self._scan(rest) if rest else ""
