"""The deltas of a streamed response, and the per-stream transform that rewrites them. Pure.

A streamed answer is a set of growing strings (each choice's text, each tool call's
arguments), each named by a :class:`DeltaKey`. A :class:`StreamTransform` (made per stream
by a policy's ``on_response_stream`` hook) sees every delta of every string in arrival
order; :mod:`hookgate.wire.stream_rewrite` applies one to the SSE events of each API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DeltaKind = Literal["text", "tool_arguments"]


@dataclass(frozen=True, slots=True)
class DeltaKey:
    """Identifies one growing string in a stream.

    ``choice`` is the chat choice index (or the Responses ``output_index``); ``index`` is
    the tool-call index within the choice for ``tool_arguments`` (or the Responses
    ``content_index`` for ``text``).
    """

    kind: DeltaKind
    choice: int
    index: int = 0


class StreamTransform:
    """Rewrites the text and tool-argument deltas of one streamed response.

    Made per stream by :meth:`Policy.on_response_stream`, so it may keep state (a
    look-behind buffer for a value split across chunks). The server calls :meth:`delta`
    for every delta in arrival order and :meth:`end` once per key when that string is
    complete; what :meth:`end` returns is sent before the stream moves on. A transform
    may hold text back by returning less than it got, and must return all it held by
    :meth:`end`. Both are coroutines, so a transform may wait for work it cannot do on the
    event loop (``pii`` scans the model's own text on its analyzer threads); while it
    waits, that one stream waits. Raising a
    :class:`~hookgate.errors.HookgateError` ends the stream with that error. The default
    implementation passes everything through.
    """

    async def delta(self, key: DeltaKey, text: str) -> str:
        """Return the text to send in place of ``text``."""
        return text

    async def end(self, key: DeltaKey) -> str:
        """Return any text held back for ``key``; called once when ``key`` completes."""
        return ""
