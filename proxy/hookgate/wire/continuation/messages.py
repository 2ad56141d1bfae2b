"""Continuing an Anthropic Messages stream, by content block (see
:mod:`hookgate.wire.continuation`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hookgate.wire import sse
from hookgate.wire.continuation.base import Diverged, Mode, typed_events


@dataclass(slots=True)
class _Block:
    type: str
    name: str | None = None
    text: str = ""
    """A text block's text, a tool_use block's ``partial_json`` so far."""
    stopped: bool = False


@dataclass(slots=True)
class MessagesTranscript:
    """What an Anthropic Messages stream has delivered to its client: its message id and
    content blocks (text, tool_use; a thinking block makes it not continuable: its
    signature is one answer's). :meth:`feed` it every batch the client was handed."""

    id: str | None = None
    blocks: list[_Block] = field(default_factory=list)
    finished: bool = False
    thinking: bool = False

    @property
    def continuable(self) -> bool:
        return not self.finished and not self.thinking

    @property
    def prefillable(self) -> bool:
        """Only one open text block: a prefill continues it."""
        blocks = self.blocks
        return self.continuable and len(blocks) == 1 and blocks[0].type == "text"

    @property
    def text(self) -> str:
        """The text delivered (of the text blocks)."""
        return "".join(b.text for b in self.blocks if b.type == "text")

    def feed(self, events: bytes) -> None:
        for block in sse.split(events):
            data = sse.json_of(block)
            if not isinstance(data, dict):
                continue
            kind = data.get("type")
            if kind == "message_start" and isinstance(message := data.get("message"), Mapping):
                self.id = message.get("id") if isinstance(message.get("id"), str) else None
            elif kind == "content_block_start":
                content = data.get("content_block")
                content = content if isinstance(content, Mapping) else {}
                kind = str(content.get("type"))
                self.thinking = self.thinking or kind not in ("text", "tool_use")
                name = content.get("name")
                self.blocks.append(_Block(kind, name if isinstance(name, str) else None))
            elif kind == "content_block_delta" and self.blocks:
                delta = data.get("delta")
                piece = _block_piece(delta) if isinstance(delta, Mapping) else None
                if piece is not None:
                    self.blocks[-1].text += piece
            elif kind == "content_block_stop" and self.blocks:
                self.blocks[-1].stopped = True
            elif kind in ("message_delta", "message_stop"):
                self.finished = True

    def request(self, body: Mapping[str, Any], mode: Mode) -> dict[str, Any]:
        """As :meth:`.ChatTranscript.request`, in the Messages API's shape."""
        if mode == "replay" or not self.text.rstrip():
            return dict(body)
        messages = [*(body.get("messages") or ()), {"role": "assistant",
                                                    "content": self.text.rstrip()}]  # fmt: skip
        return {**body, "messages": messages}

    def splice(self, mode: Mode, prefix_tokens: int = 0) -> MessagesSplice:
        return MessagesSplice(self, mode, prefix_tokens)


def _block_piece(delta: Mapping[str, Any]) -> str | None:
    """The string a text or tool_use block's delta adds."""
    if delta.get("type") == "text_delta" and isinstance(text := delta.get("text"), str):
        return text
    if delta.get("type") == "input_json_delta" and isinstance(
        partial := delta.get("partial_json"), str
    ):
        return partial
    return None


class MessagesSplice:
    """A next attempt's Messages events as the remainder of ``transcript``: as
    :class:`.ChatSplice`, by content block — a prefill's first block continues the
    client's open text block; a replay's blocks must reproduce the delivered ones (type,
    tool name, text or arguments) before anything is relayed."""

    def __init__(self, transcript: MessagesTranscript, mode: Mode, prefix_tokens: int) -> None:
        self._had = transcript
        self.mode: Mode = mode
        self._prefix_tokens = prefix_tokens
        text = transcript.text
        self._trimmed = text[len(text.rstrip()) :] if mode == "prefill" else ""
        self._at = [0] * len(transcript.blocks)
        self._started = 0  # replay: blocks the new answer has started
        self._caught_up = mode == "prefill" or not transcript.blocks
        self._offset = len(transcript.blocks) - 1 if mode == "prefill" else 0

    def feed(self, events: bytes) -> bytes:
        """The client's share of one batch of the next attempt's events."""
        out: list[bytes] = []
        for block, kind, data in typed_events(events):
            if kind is None:
                out.append(block)
                continue
            spliced = self._event(kind, data)
            if spliced is not None:
                out.append(sse.encode(spliced, event=kind))
        return b"".join(out)

    def _event(self, kind: str, data: dict[str, Any]) -> dict[str, Any] | None:
        if kind == "message_start":
            return None
        if kind == "message_delta":
            self._end()
            usage = data.get("usage")
            if self.mode == "prefill" and isinstance(usage, Mapping):
                data = {**data, "usage": self._restate(usage)}
            return data
        index = data.get("index")
        if not kind.startswith("content_block") or not isinstance(index, int):
            return data
        if self.mode == "prefill":
            if index == 0 and kind == "content_block_start":
                return None  # the client's open text block goes on
            if index == 0 and kind == "content_block_delta" and self._trimmed:
                data = self._untrimmed(data)
            return {**data, "index": index + self._offset}
        had = self._had.blocks
        if index >= len(had):
            if not self._caught_up:
                raise Diverged("the new answer has more blocks before reproducing the first's")
            return data
        if kind == "content_block_start":
            self._start(index, data)
            return None  # the client has it
        if kind == "content_block_delta":
            return self._delta(index, data)
        # content_block_stop of a delivered block
        if self._at[index] < len(had[index].text):
            raise Diverged("the new answer's block is shorter than the one delivered")
        if index == len(had) - 1:
            self._caught_up = True
        return None if had[index].stopped else data

    def _start(self, index: int, data: Mapping[str, Any]) -> None:
        had = self._had.blocks
        if index != self._started or (index and self._at[index - 1] < len(had[index - 1].text)):
            raise Diverged("the new answer's blocks come in another order")
        self._started += 1
        content = data.get("content_block")
        content = content if isinstance(content, Mapping) else {}
        if content.get("type") != had[index].type or (
            had[index].type == "tool_use" and content.get("name") != had[index].name
        ):
            raise Diverged("the new answer's block differs from the one delivered")

    def _delta(self, index: int, data: dict[str, Any]) -> dict[str, Any] | None:
        had = self._had.blocks
        delta = data.get("delta")
        piece = _block_piece(delta) if isinstance(delta, Mapping) else None
        if piece is None or index >= self._started:
            raise Diverged("the new answer's block differs from the one delivered")
        delivered, at = had[index].text, self._at[index]
        expected = delivered[at : at + len(piece)]
        last = index == len(had) - 1
        if not piece.startswith(expected) or (len(expected) < len(piece) and not last):
            raise Diverged("the new answer differs from what was delivered")
        self._at[index] = at + len(expected)
        if self._at[index] < len(delivered):
            return None
        self._caught_up = last
        excess = piece[len(expected) :]
        if not excess or had[index].stopped:
            if excess:
                raise Diverged("the new answer's block is longer than the one delivered")
            return None
        key = "text" if had[index].type == "text" else "partial_json"
        return {**data, "delta": {**delta, key: excess}}  # type: ignore[dict-item]

    def _untrimmed(self, data: dict[str, Any]) -> dict[str, Any]:
        """The whitespace the prefill left out taken off the continuation's first text."""
        delta = data.get("delta")
        if isinstance(delta, Mapping) and isinstance(text := delta.get("text"), str):
            trimmed, self._trimmed = self._trimmed, ""
            if text.startswith(trimmed):
                return {**data, "delta": {**delta, "text": text[len(trimmed) :]}}
        return data

    def _end(self) -> None:
        if self.mode == "replay" and not self._caught_up:
            had = self._had.blocks
            if any(at < len(b.text) for at, b in zip(self._at, had, strict=True)) or (
                self._started < len(had)
            ):
                raise Diverged("the new answer is shorter than what was delivered")
            self._caught_up = True

    def _restate(self, usage: Mapping[str, Any]) -> dict[str, Any]:
        """As :meth:`.ChatSplice.restate`: the delivered text counted as output."""
        out = dict(usage)
        moved = self._prefix_tokens
        if isinstance(out.get("input_tokens"), int):
            moved = min(moved, out["input_tokens"])
            out["input_tokens"] -= moved
        if isinstance(out.get("output_tokens"), int):
            out["output_tokens"] += moved
        return out
