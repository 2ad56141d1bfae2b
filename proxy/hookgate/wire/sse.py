"""Server-sent events: split a byte stream into event blocks, read and write events.

The relay forwards whole event blocks, byte for byte, as soon as each is complete; it
parses a block only when a policy needs its content or to recognise the stream's end.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

MAX_EVENT_BYTES = 64 * 1024 * 1024
"""The largest event accepted. A Responses ``response.completed`` repeats the whole
response (generated images included, in base64), so this is generous; it exists so that
an upstream that never ends an event cannot grow the proxy's memory without bound."""


class EventTooLarge(ValueError):
    """An event grew past :attr:`SSEDecoder.max_event_bytes` without ending."""


class SSEDecoder:
    """Incrementally split bytes into complete event blocks (each with its blank line).

    A plain split on ``\n\n`` when the bytes have no ``\r`` (every OpenAI-compatible
    server we know), else a regex over all three terminators. Linear in the bytes fed: a
    chunk that completes no block is only scanned (with the 3 bytes before it, where a
    terminator may begin) and kept, and the kept chunks are joined once, when a block
    completes — one event of megabytes arriving in small reads costs no more per byte
    than many small events.
    """

    __slots__ = ("_kept", "_kept_bytes", "_tail", "max_event_bytes")

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._kept: list[bytes] = []
        self._kept_bytes = 0
        self._tail = b""
        self.max_event_bytes = max_event_bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add ``chunk``; return the blocks it completed, in order. Raises
        :class:`EventTooLarge` when an unfinished block outgrows ``max_event_bytes``."""
        if self._kept:
            probe = self._tail + chunk
            if not _has_boundary(probe):
                self._kept.append(chunk)
                self._kept_bytes += len(chunk)
                if self._kept_bytes > self.max_event_bytes:
                    raise EventTooLarge(f"an event grew past {self.max_event_bytes} bytes")
                self._tail = probe[-3:]
                return []
            self._kept.append(chunk)
            buffer = b"".join(self._kept)
        else:
            buffer = chunk
        if b"\r" not in buffer:
            parts = buffer.split(b"\n\n")
            rest = parts.pop()
            blocks = [part + b"\n\n" for part in parts]
        else:
            blocks = []
            start = 0
            for match in _BOUNDARY.finditer(buffer):
                blocks.append(buffer[start : match.end()])
                start = match.end()
            rest = buffer[start:]
        self._kept = [rest] if rest else []
        self._kept_bytes = len(rest)
        self._tail = rest[-3:]
        return blocks

    @property
    def pending(self) -> bytes:
        """Bytes received after the last complete block."""
        return b"".join(self._kept)


def _has_boundary(data: bytes) -> bool:
    return b"\n\n" in data or (b"\r" in data and _BOUNDARY.search(data) is not None)


_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def split(events: bytes) -> list[bytes]:
    """Split bytes holding only complete event blocks into those blocks."""
    decoder = SSEDecoder()
    blocks = decoder.feed(events)
    if decoder.pending.strip():
        blocks.append(decoder.pending)
    return blocks


@dataclass(frozen=True, slots=True)
class Event:
    """One parsed event: its ``event:`` name (or None), its joined ``data:`` lines, and
    its ``id:`` and ``retry:`` (milliseconds) when it has them."""

    event: str | None
    data: str
    id: str | None = None
    retry: int | None = None

    def json(self) -> object:
        """The data parsed as JSON (raises ``orjson.JSONDecodeError``)."""
        return orjson.loads(self.data)


def parse(block: bytes) -> Event:
    """Parse one event block. Comment lines and unknown fields are ignored."""
    name: str | None = None
    data: list[str] = []
    id: str | None = None
    retry: int | None = None
    for raw_line in block.decode("utf-8", "replace").splitlines():
        if not raw_line or raw_line.startswith(":"):
            continue
        field, _, value = raw_line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
        elif field == "id" and "\0" not in value:
            id = value
        elif field == "retry":
            retry = event_number(value)
    return Event(name, "\n".join(data), id, retry)


def event_number(text: str) -> int | None:
    """``text`` as a non-negative integer when it is one written in ASCII digits (at most
    18: a ``retry:`` field, a numeric ``Last-Event-ID``), else None."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def object_of(block: bytes) -> dict[str, Any] | None:
    """The JSON object of an event block; None for a block without data (a comment, a
    ``ping`` with none); ``ValueError`` when its data is not a JSON object."""
    event = parse(block)
    if not event.data:
        return None
    try:
        data = event.json()
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise ValueError("the event's data is not a JSON object")
    return data


def json_of(block: bytes) -> object:
    """The JSON data of an event block; None for ``[DONE]``, no data, or bad JSON."""
    event = parse(block)
    if not event.data or event.data.startswith("[DONE]"):
        return None
    try:
        return orjson.loads(event.data)
    except orjson.JSONDecodeError:
        return None


def data_of(block: bytes) -> object:
    """The JSON data of an event block as a client reads it: None for a block without
    data (a comment, a bare ``event:``) or ``[DONE]``; raises ``ValueError`` when the data
    is not JSON. The common block, one ``data:`` line, costs one ``orjson.loads`` (about a
    microsecond for a chat chunk); others are parsed whole."""
    if block.startswith(b"data: ") and block.count(b"\n", 0, -2) == 0:
        payload = block[6:].rstrip(b"\r\n")
        if payload == b"[DONE]":
            return None
    else:
        data = parse(block).data
        if not data or data == "[DONE]":
            return None
        payload = data.encode()
    return orjson.loads(payload)  # orjson.JSONDecodeError is a ValueError


def encode(data: object, event: str | None = None, id: str | None = None) -> bytes:
    """One event block carrying ``data`` as JSON (``event`` and ``id`` printable, no newline)."""
    head = b"event: " + event.encode() + b"\n" if event else b""
    if id is not None:
        head = b"id: " + id.encode() + b"\n" + head
    return head + b"data: " + orjson.dumps(data) + b"\n\n"


DONE = b"data: [DONE]\n\n"

_FIELDS = (b"data:", b"event:", b"id:", b"retry:", b":")


def is_event(block: bytes) -> bool:
    """True when a block is SSE: a comment, or a field line (``data:``, ``event:``, ...)."""
    if block.startswith(_FIELDS):
        return True
    stripped = block.lstrip(b"\r\n")
    return stripped.startswith(_FIELDS) or not stripped


def is_done(block: bytes) -> bool:
    """True for the chat/completions terminator: a block whose data is ``[DONE]``, with or
    without ``id:``, ``event:`` or comment lines around it."""
    if b"[DONE]" not in block:
        return False
    return block.strip() in (b"data: [DONE]", b"data:[DONE]") or parse(block).data == "[DONE]"


RESPONSES_TERMINAL = frozenset(
    {"response.completed", "response.failed", "response.incomplete", "error"}
)
_TERMINAL_NAMES = tuple(name.encode() for name in RESPONSES_TERMINAL)


def is_responses_terminal(block: bytes) -> bool:
    """True for the event that ends a Responses stream (completed, failed, ...)."""
    if not any(name in block for name in _TERMINAL_NAMES):
        return False
    return _typed(block, RESPONSES_TERMINAL)


def _typed(block: bytes, names: frozenset[str]) -> bool:
    """Whether the event's ``event:`` line, or without one its data's ``type``, is one of
    ``names``."""
    event = parse(block)
    if event.event is not None:
        return event.event in names
    try:
        data = event.json()
    except orjson.JSONDecodeError:
        return False
    kind = data.get("type") if isinstance(data, dict) else None
    return isinstance(kind, str) and kind in names


MESSAGES_TERMINAL = frozenset({"message_stop", "error"})
"""The events that end an Anthropic Messages stream."""


def is_messages_terminal(block: bytes) -> bool:
    """True for the event that ends an Anthropic Messages stream (``message_stop``, or
    ``error``), named by its ``event:`` line or, without one, by its data's ``type``."""
    if b"message_stop" not in block and b"error" not in block:
        return False
    return _typed(block, MESSAGES_TERMINAL)


def is_gemini_terminal(block: bytes) -> bool:
    """True for the event that ends a Gemini ``streamGenerateContent`` stream, which has
    no end marker: the chunk whose candidate has a ``finishReason``, or whose
    ``promptFeedback`` has a ``blockReason`` (the prompt was refused), or an ``error``."""
    if b"finishReason" not in block and b"blockReason" not in block and b"error" not in block:
        return False
    data = json_of(block)
    if not isinstance(data, dict):
        return False
    if isinstance(data.get("error"), dict):
        return True
    candidates = data.get("candidates")
    if isinstance(candidates, list) and any(
        isinstance(c, dict) and isinstance(c.get("finishReason"), str) and c["finishReason"]
        for c in candidates
    ):
        return True
    feedback = data.get("promptFeedback")
    return isinstance(feedback, dict) and bool(feedback.get("blockReason"))


def terminal_check(api: str) -> Callable[[bytes], bool]:
    """The test for the event that ends a stream of ``api``."""
    if api == "responses":
        return is_responses_terminal
    if api == "messages":
        return is_messages_terminal
    if api == "generate_content":
        return is_gemini_terminal
    return is_done


_PREAMBLE = {
    "responses": frozenset(
        {"response.created", "response.queued", "response.in_progress",
         "response.output_item.added", "response.content_part.added"}
    ),
    "messages": frozenset({"message_start", "content_block_start", "ping"}),
}  # fmt: skip
"""Per API, the events a stream opens with before the model has produced anything."""

_CHOICE_OUTPUT = ("content", "reasoning_content", "reasoning", "tool_calls", "refusal",
                  "function_call", "text")  # fmt: skip


def carries_output(api: str, events: bytes) -> bool:
    """Whether ``events`` (one read: one or more blocks) hold the model's first output —
    a text, reasoning or tool-call delta, a finish, usage, an error or the stream's end —
    rather than only the opening a server sends before it (a chat role chunk with empty
    content, ``response.created``, ``message_start``, ``ping``, a comment). An event that
    cannot be read counts as output: what it is, is for the stream's reader to judge."""
    return any(_is_output(api, block) for block in split(events))


def _is_output(api: str, block: bytes) -> bool:
    event = parse(block)
    if not event.data:
        return False
    if event.data.startswith("[DONE]"):
        return True
    try:
        data = event.json()
    except orjson.JSONDecodeError:
        return True
    if not isinstance(data, dict):
        return True
    preamble = _PREAMBLE.get(api)
    if preamble is not None:
        kind = event.event or data.get("type")
        return kind not in preamble
    if api not in ("chat.completions", "completions") or "error" in data or data.get("usage"):
        return True
    choices = data.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        if not isinstance(choice, dict):
            return True
        if choice.get("finish_reason"):
            return True
        delta = choice.get("delta", choice)
        if isinstance(delta, dict) and any(delta.get(key) for key in _CHOICE_OUTPUT):
            return True
    return False


class EventStream(Protocol):
    """The SSE events of a streamed response, as they arrive.

    Each item holds one or more complete event blocks (each ending in a blank line):
    events that arrived together are yielded together, so a relay writes them at once.

    Whoever consumes it must call :meth:`aclose` when done, early or not; that frees the
    upstream connection (and cancels the upstream's work when the stream is unfinished).
    Async generators satisfy this protocol.
    """

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...
