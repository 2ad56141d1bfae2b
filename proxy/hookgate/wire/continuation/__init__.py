"""Mid-stream continuation: what a stream has delivered, and a next attempt's stream
spliced onto it so the client reads one answer. Pure: one module per API (``chat.py``,
``messages.py``, ``responses.py``), and :func:`error_event`.

When a stream fails after bytes reached the client, the ``fallback`` policy asks another
attempt for the rest (:mod:`hookgate.policies.continuation`). This module knows the wire
side, per API: Chat Completions below, Anthropic Messages the same way by content block
(:class:`MessagesTranscript`, :class:`MessagesSplice`: one ``message_start``, a prefill's
text continuing the client's open text block, a thinking block not continued since its
signature is one answer's), and Responses by output item, by replay only
(:class:`ResponsesTranscript`, :class:`ResponsesSplice`: one ``response.created``, the
first response's id and item ids, sequence numbers going on from the client's last; a
reasoning item delivered is not continued).

* a :class:`ChatTranscript` records what the client has received: the answer's id, its
  text (choice 0), its reasoning, its tool calls and whether the last one may still be
  open (a chat stream says a tool call is complete only when the next one starts or the
  choice finishes);
* :meth:`ChatTranscript.request` is the next attempt's body: for a **prefill** the
  client's request with the delivered text as a final assistant message to continue
  (its trailing whitespace left out: Anthropic refuses it), for a **replay** the
  client's request as it was;
* a :class:`ChatSplice` turns the next attempt's events into the remainder: its role
  chunk dropped (the client has one), every chunk given the first answer's id, and

  - for a prefill, its text relayed as it comes (less the whitespace the prefill left
    out, when it starts with it), reasoning dropped once the client has text, and its
    usage chunk restated as what was delivered (:meth:`ChatSplice.restate`);
  - for a replay, the delivered text and tool calls must come back exactly, in order
    (tool call ids aside), before anything is relayed: only what follows them reaches
    the client, so a tool call open when the first stream failed is completed by the
    arguments of one answer, never stitched from two. Anything else raises
    :class:`Diverged` before a byte of the new answer was relayed.

A transcript with a finished choice, several choices, or a tool call open (for a
prefill) says so (:attr:`ChatTranscript.continuable`, :attr:`ChatTranscript.prefillable`).
"""

from __future__ import annotations

import orjson

from hookgate.wire import sse
from hookgate.wire.continuation.base import Diverged, Mode
from hookgate.wire.continuation.chat import ChatSplice, ChatTranscript
from hookgate.wire.continuation.messages import MessagesSplice, MessagesTranscript
from hookgate.wire.continuation.responses import ResponsesSplice, ResponsesTranscript

__all__ = [
    "ChatSplice",
    "ChatTranscript",
    "Diverged",
    "MessagesSplice",
    "MessagesTranscript",
    "Mode",
    "ResponsesSplice",
    "ResponsesTranscript",
    "Splice",
    "Transcript",
    "error_event",
    "transcript_for",
]


def error_event(events: bytes) -> tuple[bytes, bytes, str] | None:
    """The first error event among ``events`` — ``data: {"error": ...}`` on Chat
    Completions, an ``error`` event on Messages and Responses — as (the blocks before it,
    its error as an OpenAI error body, its message); None when there is none. An upstream that fails
    mid-stream this way (overloaded, rate limited) failed like one that cut the stream:
    the event is not relayed, so the answer can be continued."""
    if b"error" not in events:
        return None
    blocks = sse.split(events)
    for at, block in enumerate(blocks):
        if b"error" not in block:
            continue
        data = sse.json_of(block)
        if not isinstance(data, dict):
            continue
        error = data.get("error")
        if data.get("type") == "error" and not isinstance(error, dict):  # Responses
            error = {k: data.get(k) for k in ("message", "type", "param", "code")}
        elif not isinstance(error, dict) or any(k in data for k in _RESULT_FIELDS):
            continue
        message = error.get("message")
        message = message if isinstance(message, str) else "an error event"
        return b"".join(blocks[:at]), orjson.dumps({"error": error}), message
    return None


_RESULT_FIELDS = ("choices", "output", "data", "response")


Transcript = ChatTranscript | MessagesTranscript | ResponsesTranscript
Splice = ChatSplice | MessagesSplice | ResponsesSplice


def transcript_for(api: str) -> Transcript | None:
    """A transcript for a stream of ``api``, or None for an API not continued."""
    if api == "chat.completions":
        return ChatTranscript()
    if api == "messages":
        return MessagesTranscript()
    if api == "responses":
        return ResponsesTranscript()
    return None
