"""Where an upstream stream ends: its protocol's terminal event, or its finish reason.

A stream is complete at its protocol's terminal event. Some servers send every chunk of
an answer, its finish reason and its usage, then close the connection without that
event (the ``data: [DONE]`` of Chat Completions, the ``message_stop`` of Messages). The
answer is whole then, and hookgate sends the terminal event itself: :class:`StreamEnd`
watches a stream's events and says which event that is once the finish reason came.

What counts as the finish reason, per API:

* **Chat Completions and legacy Completions**: every choice the stream opened has its
  ``finish_reason`` (then ``data: [DONE]``). The usage chunk comes after it: when the call
  asked for it (``stream_options.include_usage``) and it did not come, hookgate sends one
  before ``[DONE]`` with its own count (:meth:`StreamEnd.usage_chunk`), so the answer still
  states a usage.
* **Messages**: ``message_delta`` with a ``stop_reason`` (it carries the output usage;
  then ``message_stop``).
* **Responses**: the finish is the terminal event itself (``response.completed``,
  ``response.incomplete`` or ``response.failed`` carry the status and the usage), so a
  Responses stream without one was cut, whatever it sent before.
* **Gemini** ``streamGenerateContent``: likewise, its terminal event is the chunk with
  the ``finishReason``.

A stream that stops before its finish reason was cut and stays a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hookgate.wire import sse

MESSAGE_STOP = sse.encode({"type": "message_stop"}, event="message_stop")
"""The event that ends a Messages stream, as hookgate sends it."""

_CHOICES_APIS = frozenset({"chat.completions", "completions"})
_OBJECTS = {"chat.completions": "chat.completion.chunk", "completions": "text_completion"}
_HEAD = ("id", "object", "created", "model")


class StreamEnd:
    """The end of one stream of ``api``: :attr:`terminal` tests a block for the
    protocol's terminal event; :meth:`saw` is given each event's JSON object in order;
    :attr:`closing` is the terminal event hookgate sends when the stream stops without
    its own, or None while the stream has not reached its finish reason."""

    __slots__ = ("_api", "_choices", "_head", "_stopped", "_text", "terminal", "usage_missing")

    def __init__(self, api: str, *, usage: bool = False) -> None:
        """``usage``: a Chat Completions or Completions call that asked for the usage
        chunk; the stream's text is kept until it comes, to count the usage if it does
        not."""
        self.terminal: Callable[[bytes], bool] = sse.terminal_check(api)
        self._api = api
        self._choices: dict[object, bool] = {}
        """Chat and Completions: each choice index seen → whether it has finished."""
        self._stopped = False
        """Messages: a ``message_delta`` with a ``stop_reason`` arrived."""
        self.usage_missing = usage and api in _CHOICES_APIS
        """The call asked for the usage chunk, and it has not come."""
        self._text: list[str] = []
        self._head: dict[str, Any] = {}
        """The ``id``, ``object``, ``created`` and ``model`` of the chunks."""

    def saw(self, data: Mapping[str, Any]) -> None:
        """Note one event's data (a JSON object)."""
        if self._api in _CHOICES_APIS:
            choices = data.get("choices")
            if isinstance(choices, list):
                for choice in choices:
                    if isinstance(choice, dict):
                        self._choice(choice)
            if self.usage_missing:
                if isinstance(data.get("usage"), dict):
                    self.usage_missing, self._text = False, []
                elif not self._head:
                    self._head = {k: data[k] for k in _HEAD if k in data}
        elif self._api == "messages" and data.get("type") == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self._stopped = True

    def _choice(self, choice: Mapping[str, Any]) -> None:
        index = choice.get("index", 0)
        key = index if isinstance(index, int) else str(index)
        self._choices[key] = self._choices.get(key, False) or bool(choice.get("finish_reason"))
        if self.usage_missing:
            delta = choice.get("delta")
            if not isinstance(delta, dict):  # Completions: the choice's text
                delta = {"content": choice.get("text")}
            if isinstance(delta.get("content"), str):
                self._text.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                    self._text.append(function["arguments"])

    @property
    def text(self) -> str:
        """What every choice wrote so far (text and tool-call arguments), while
        :attr:`usage_missing` (to count it)."""
        return "".join(self._text)

    def usage_chunk(self, usage: Mapping[str, int]) -> bytes:
        """The usage chunk (``choices: []``) that states ``usage``, as the stream's
        chunks are (their ``id``, ``object``, ``created`` and ``model``)."""
        head = {"object": _OBJECTS[self._api], **self._head}
        return sse.encode({**head, "choices": [], "usage": dict(usage)})

    @property
    def closing(self) -> bytes | None:
        """The terminal event to send when the stream stops here without its own; None
        when stopping here would cut the answer."""
        if self._api in _CHOICES_APIS:
            finished = bool(self._choices) and all(self._choices.values())
            return sse.DONE if finished else None
        if self._api == "messages":
            return MESSAGE_STOP if self._stopped else None
        return None
