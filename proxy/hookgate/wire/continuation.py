"""Mid-stream continuation: what a stream has delivered, and a next attempt's stream
spliced onto it so the client reads one answer. Pure.

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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from hookgate.wire import sse

Mode = Literal["prefill", "replay"]
"""How a next attempt continues: the model continues the delivered text (``prefill``),
or answers anew and must reproduce it (``replay``)."""


class Diverged(Exception):
    """A replayed answer did not reproduce what the client already has."""


@dataclass(slots=True)
class _ToolCall:
    id: str | None
    name: str
    arguments: str = ""


@dataclass(slots=True)
class ChatTranscript:
    """What a Chat Completions stream has delivered to its client (see the module
    docstring). :meth:`feed` it every batch of events the client was handed."""

    id: str | None = None
    text: str = ""
    reasoning: str = ""
    tool_calls: list[_ToolCall] = field(default_factory=list)
    finished: bool = False
    """A ``finish_reason`` or ``[DONE]`` reached the client: nothing is left to continue."""
    several: bool = False
    """A choice other than the first was seen (``n`` > 1): not continued."""

    @property
    def continuable(self) -> bool:
        return not self.finished and not self.several

    @property
    def prefillable(self) -> bool:
        """Whether a prefill can continue it: only text (a model cannot be handed a
        tool call or its reasoning to continue)."""
        return self.continuable and not self.tool_calls

    def feed(self, events: bytes) -> None:
        for block in sse.split(events):
            if sse.is_done(block):
                self.finished = True
                continue
            data = sse.json_of(block)
            if not isinstance(data, dict):
                continue
            if self.id is None and isinstance(data.get("id"), str):
                self.id = data["id"]
            for choice in _choices(data):
                if choice.get("index", 0) != 0:
                    self.several = True
                    continue
                delta = choice.get("delta")
                if isinstance(delta, Mapping):
                    self._delta(delta)
                if choice.get("finish_reason"):
                    self.finished = True

    def _delta(self, delta: Mapping[str, Any]) -> None:
        if isinstance(content := delta.get("content"), str):
            self.text += content
        self.reasoning += _reasoning(delta)
        for call in _tool_deltas(delta):
            index = call.get("index", len(self.tool_calls))
            function = call.get("function")
            function = function if isinstance(function, Mapping) else {}
            if not isinstance(index, int) or index > len(self.tool_calls):
                self.several = True  # a gap in the indexes: not a stream we can follow
                continue
            if index == len(self.tool_calls):
                name = function.get("name")
                self.tool_calls.append(
                    _ToolCall(call.get("id"), name if isinstance(name, str) else "")
                )
            if isinstance(arguments := function.get("arguments"), str):
                self.tool_calls[index].arguments += arguments

    def request(self, body: Mapping[str, Any], mode: Mode) -> dict[str, Any]:
        """The next attempt's body: ``body`` (the client's request) as it was for a
        replay; for a prefill with the delivered text as a final assistant message."""
        if mode == "replay" or not self.text.rstrip():
            return dict(body)
        messages = list(body.get("messages") or ())
        messages.append({"role": "assistant", "content": self.text.rstrip()})
        return {**body, "messages": messages}

    def splice(self, mode: Mode, prefix_tokens: int = 0) -> ChatSplice:
        """The splice for a next attempt continuing in ``mode``; ``prefix_tokens``, the
        delivered text's tokens, restate a prefill's usage (see :meth:`ChatSplice.restate`)."""
        return ChatSplice(self, mode, prefix_tokens)


class ChatSplice:
    """A next attempt's events, as the remainder of ``transcript`` (see the module
    docstring). Raises :class:`Diverged` from :meth:`feed` when a replay does not
    reproduce the delivered answer."""

    def __init__(self, transcript: ChatTranscript, mode: Mode, prefix_tokens: int) -> None:
        self._had = transcript
        self.mode: Mode = mode
        self._prefix_tokens = prefix_tokens
        self._trimmed = (
            transcript.text[len(transcript.text.rstrip()) :] if mode == "prefill" else ""
        )
        self._text_at = 0  # replay: how much of the delivered text came back
        self._args_at: list[int] = [0] * len(transcript.tool_calls)
        self._calls_seen = 0  # replay: how many tool calls the new answer has started
        self._caught_up = mode == "prefill" or not (transcript.text or transcript.tool_calls)

    def feed(self, events: bytes) -> bytes:
        """The client's share of one batch of the next attempt's events."""
        out: list[bytes] = []
        for block in sse.split(events):
            if sse.is_done(block):
                self._end()
                out.append(block)
                continue
            data = sse.json_of(block)
            if not isinstance(data, dict):
                out.append(block)
                continue
            spliced = self._chunk(data)
            if spliced is not None:
                out.append(sse.encode(spliced))
        return b"".join(out)

    def _chunk(self, data: dict[str, Any]) -> dict[str, Any] | None:
        choices = _choices(data)
        if self._had.id is not None:
            data = {**data, "id": self._had.id}
        if not choices:  # the usage chunk
            if self.mode == "prefill" and isinstance(usage := data.get("usage"), Mapping):
                data = {**data, "usage": self.restate(usage)}
            return data
        kept: list[dict[str, Any]] = []
        for choice in choices:
            delta = choice.get("delta")
            delta = self._delta(delta) if isinstance(delta, Mapping) else None
            finish = choice.get("finish_reason")
            if finish:
                self._end()
            if delta or finish:  # (a replayed delta's logprobs are the client's already)
                kept.append({**choice, "delta": delta or {}})
        return {**data, "choices": kept} if kept else None

    def _delta(self, delta: Mapping[str, Any]) -> dict[str, Any]:
        out = {
            k: v
            for k, v in delta.items()
            if k not in ("role", "content", "tool_calls") and v is not None
        }
        if _reasoning(delta) and (self._had.text or self._had.reasoning):
            for name in _REASONING:  # the client has its reasoning, or is past it
                out.pop(name, None)
        content = delta.get("content")
        if isinstance(content, str) and content and (text := self._text(content)) is not None:
            out["content"] = text
        calls = [c for c in (self._call(c) for c in _tool_deltas(delta)) if c]
        if calls:
            out["tool_calls"] = calls
        return out

    def _text(self, content: str) -> str | None:
        """What of a text delta the client has not got (None: nothing)."""
        if self.mode == "prefill":
            if self._trimmed:
                if content.startswith(self._trimmed):
                    content = content[len(self._trimmed) :]
                self._trimmed = ""
            return content or None
        had = self._had.text
        if self._caught_up:  # all the client has came back: the rest is new
            return content
        if self._calls_seen:
            raise Diverged("the new answer writes text after its tool calls began")
        expected = had[self._text_at : self._text_at + len(content)]
        if not content.startswith(expected) or (
            len(expected) < len(content) and self._had.tool_calls
        ):
            raise Diverged("the new answer's text differs from the text delivered")
        self._text_at += len(expected)
        if self._text_at < len(had):
            return None
        self._caught_up = not self._had.tool_calls
        return content[len(expected) :] or None

    def _call(self, call: Mapping[str, Any]) -> dict[str, Any] | None:
        """What of a tool-call delta the client has not got (None: nothing)."""
        index = call.get("index")
        had = self._had.tool_calls
        if self.mode == "prefill" or not isinstance(index, int) or index >= len(had):
            if not self._caught_up:
                raise Diverged("the new answer calls a tool before reproducing the first")
            return dict(call)
        if self._text_at < len(self._had.text):
            raise Diverged("the new answer calls a tool before writing the text delivered")
        if index + 1 < self._calls_seen or index > self._calls_seen:
            raise Diverged("the new answer's tool calls come in another order")
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        if index == self._calls_seen:  # a tool call starts: the one the client has?
            self._calls_seen += 1
            if index > 0 and self._args_at[index - 1] < len(had[index - 1].arguments):
                raise Diverged("the new answer's tool call is shorter than the one delivered")
            if function.get("name") != had[index].name:
                raise Diverged("the new answer calls another tool")
        arguments = function.get("arguments")
        if not isinstance(arguments, str) or not arguments:
            return None
        delivered = had[index].arguments
        at = self._args_at[index]
        expected = delivered[at : at + len(arguments)]
        last = index == len(had) - 1
        if not arguments.startswith(expected) or (len(expected) < len(arguments) and not last):
            raise Diverged("the new answer's tool-call arguments differ from those delivered")
        self._args_at[index] = at + len(expected)
        if self._args_at[index] < len(delivered):
            return None
        self._caught_up = last
        excess = arguments[len(expected) :]
        if not excess:
            return None
        return {"index": index, "function": {"arguments": excess}}

    def _end(self) -> None:
        """The new answer finished: it must have reproduced everything delivered."""
        if not self._caught_up and self.mode == "replay":
            had = self._had
            complete = self._text_at == len(had.text) and (
                not had.tool_calls
                or (
                    self._calls_seen == len(had.tool_calls)
                    and self._args_at[-1] == len(had.tool_calls[-1].arguments)
                )
            )
            if not complete:
                raise Diverged("the new answer is shorter than what was delivered")
            self._caught_up = True

    def restate(self, usage: Mapping[str, Any]) -> dict[str, Any]:
        """A prefill's usage restated as what the client received: the delivered text's
        tokens moved from the prompt (where the prefill put them) to the completion."""
        moved = self._prefix_tokens
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if not isinstance(prompt, int) or not isinstance(completion, int):
            return dict(usage)
        moved = min(moved, prompt)
        return {
            **usage,
            "prompt_tokens": prompt - moved,
            "completion_tokens": completion + moved,
        }


_REASONING = ("reasoning_content", "reasoning")


def _reasoning(delta: Mapping[str, Any]) -> str:
    return "".join(v for name in _REASONING if isinstance(v := delta.get(name), str))


def _choices(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    choices = data.get("choices")
    return [c for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []


def _tool_deltas(delta: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = delta.get("tool_calls")
    return [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []


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
        """As :meth:`ChatTranscript.request`, in the Messages API's shape."""
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
    :class:`ChatSplice`, by content block — a prefill's first block continues the client's
    open text block; a replay's blocks must reproduce the delivered ones (type, tool name,
    text or arguments) before anything is relayed."""

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
        for block in sse.split(events):
            data = sse.json_of(block)
            if not isinstance(data, dict) or not isinstance(kind := data.get("type"), str):
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
        """As :meth:`ChatSplice.restate`: the delivered text counted as output."""
        out = dict(usage)
        moved = self._prefix_tokens
        if isinstance(out.get("input_tokens"), int):
            moved = min(moved, out["input_tokens"])
            out["input_tokens"] -= moved
        if isinstance(out.get("output_tokens"), int):
            out["output_tokens"] += moved
        return out


@dataclass(slots=True)
class _Item:
    type: str
    id: str | None
    name: str | None = None
    text: str = ""
    """A message's output text, a function call's arguments so far."""
    part: bool = False
    """A message's ``content_part.added`` reached the client."""
    done: bool = False


_RESPONSES_SKIPPED = frozenset({"response.created", "response.in_progress"})


@dataclass(slots=True)
class ResponsesTranscript:
    """What a Responses stream has delivered to its client: the response id, the last
    ``sequence_number`` and the output items (messages, function calls; a reasoning item
    or any other makes it not continuable). Continued by replay only."""

    id: str | None = None
    sequence: int = -1
    items: list[_Item] = field(default_factory=list)
    finished: bool = False
    other: bool = False

    @property
    def continuable(self) -> bool:
        return not self.finished and not self.other

    prefillable = False
    text = ""

    def feed(self, events: bytes) -> None:
        for block in sse.split(events):
            data = sse.json_of(block)
            if not isinstance(data, dict):
                continue
            if isinstance(number := data.get("sequence_number"), int):
                self.sequence = max(self.sequence, number)
            kind = data.get("type")
            if kind == "response.created" and isinstance(response := data.get("response"), dict):
                self.id = response.get("id") if isinstance(response.get("id"), str) else None
            elif kind == "response.output_item.added" and isinstance(data.get("item"), dict):
                item = data["item"]
                if item.get("type") not in ("message", "function_call"):
                    self.other = True
                self.items.append(_Item(str(item.get("type")), item.get("id"), item.get("name")))
            elif not self.items:
                self.finished = self.finished or kind in sse.RESPONSES_TERMINAL
            elif kind == "response.content_part.added":
                self.items[-1].part = True
            elif kind in _RESPONSES_DELTAS and isinstance(data.get("delta"), str):
                self.items[-1].text += data["delta"]
            elif kind == "response.output_item.done":
                self.items[-1].done = True
            elif kind in sse.RESPONSES_TERMINAL:
                self.finished = True

    def request(self, body: Mapping[str, Any], mode: Mode) -> dict[str, Any]:
        del mode  # a replay: Responses are not prefilled
        return dict(body)

    def splice(self, mode: Mode, prefix_tokens: int = 0) -> ResponsesSplice:
        del mode, prefix_tokens
        return ResponsesSplice(self)


_RESPONSES_DELTAS = frozenset(
    {"response.output_text.delta", "response.function_call_arguments.delta"}
)


class ResponsesSplice:
    """A replayed Responses stream as the remainder of ``transcript``: its output items
    must reproduce the delivered ones (type, function name, text or arguments) before
    anything is relayed; relayed events take the first response's id and item ids, and
    sequence numbers that go on from the client's last."""

    mode: Mode = "replay"

    def __init__(self, transcript: ResponsesTranscript) -> None:
        self._had = transcript
        self._at = [0] * len(transcript.items)
        self._started = 0
        self._caught_up = not transcript.items
        self._sequence = transcript.sequence

    def feed(self, events: bytes) -> bytes:
        out: list[bytes] = []
        for block in sse.split(events):
            data = sse.json_of(block)
            if not isinstance(data, dict) or not isinstance(kind := data.get("type"), str):
                out.append(block)
                continue
            spliced = self._event(kind, data)
            if spliced is not None:
                self._sequence += 1
                if "sequence_number" in spliced:
                    spliced = {**spliced, "sequence_number": self._sequence}
                out.append(sse.encode(spliced, event=kind))
        return b"".join(out)

    def _event(self, kind: str, data: dict[str, Any]) -> dict[str, Any] | None:
        had = self._had.items
        if kind in _RESPONSES_SKIPPED:
            return None
        if kind in sse.RESPONSES_TERMINAL:
            self._end()
            return self._response(data)
        index = data.get("output_index")
        if not isinstance(index, int) or index >= len(had):
            if isinstance(index, int) and not self._caught_up:
                raise Diverged("the new answer has more items before reproducing the first's")
            return data
        item = had[index]
        if kind == "response.output_item.added":
            added = data.get("item")
            added = added if isinstance(added, Mapping) else {}
            if index != self._started or (index and self._at[index - 1] < len(had[index - 1].text)):
                raise Diverged("the new answer's items come in another order")
            if added.get("type") != item.type or added.get("name") != item.name:
                raise Diverged("the new answer's item differs from the one delivered")
            self._started += 1
            return None
        if index >= self._started:
            raise Diverged("the new answer's events come in another order")
        data = self._ids(data, item)
        if kind == "response.content_part.added":
            return None if item.part else data
        if kind in _RESPONSES_DELTAS:
            return self._delta(index, data)
        # the .done events of a delivered item: it must be whole
        if self._at[index] < len(item.text):
            raise Diverged("the new answer's item is shorter than the one delivered")
        if index == len(had) - 1:
            self._caught_up = True
        return None if item.done else data

    def _delta(self, index: int, data: dict[str, Any]) -> dict[str, Any] | None:
        had = self._had.items
        piece = data.get("delta")
        if not isinstance(piece, str):
            return None
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
        if excess and had[index].done:
            raise Diverged("the new answer's item is longer than the one delivered")
        return {**data, "delta": excess} if excess else None

    def _ids(self, data: dict[str, Any], item: _Item) -> dict[str, Any]:
        """``data`` naming the delivered item's id (its ``item_id``, its ``item.id``)."""
        if item.id is None:
            return data
        if "item_id" in data:
            data = {**data, "item_id": item.id}
        if isinstance(inner := data.get("item"), Mapping) and "id" in inner:
            data = {**data, "item": {**inner, "id": item.id}}
        return data

    def _response(self, data: dict[str, Any]) -> dict[str, Any]:
        """The terminal event's response with the first's id and the delivered item ids."""
        response = data.get("response")
        if not isinstance(response, Mapping):
            return data
        response = dict(response)
        if self._had.id is not None:
            response["id"] = self._had.id
        output = response.get("output")
        if isinstance(output, list):
            response["output"] = [
                {**o, "id": had.id}
                if isinstance(o, Mapping) and had.id is not None and "id" in o
                else o
                for o, had in zip(output, self._had.items, strict=False)
            ] + output[len(self._had.items) :]
        return {**data, "response": response}

    def _end(self) -> None:
        had = self._had.items
        if not self._caught_up and (
            self._started < len(had)
            or any(at < len(i.text) for at, i in zip(self._at, had, strict=True))
        ):
            raise Diverged("the new answer is shorter than what was delivered")
        self._caught_up = True


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
