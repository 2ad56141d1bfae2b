"""Continuing a Chat Completions stream (see :mod:`hookgate.wire.continuation`). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hookgate.wire import sse
from hookgate.wire.continuation.base import Diverged, Mode


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
