"""The tool calls a model returns, each checked before the client gets it. Pure.

A :data:`Check` answers, for one :class:`ReturnedCall`, a reason to refuse it or None.
:func:`checked_body` applies it to a non-streamed chat, Responses or Anthropic Messages
answer; :func:`gate_for` makes the stream rewriter that applies it to a streamed one.

What the client gets for a refused call (so an agent neither runs it nor waits for a
result that never comes, and the model reads why on its next turn):

* **chat**: the call is removed from ``message.tool_calls`` (the key removed when none is
  left) and the note (:func:`note`) is added to the message's ``content``; a
  ``finish_reason`` of ``tool_calls`` becomes ``stop`` when no call is left. A legacy
  ``message.function_call`` (the ``functions`` parameter) is checked alike: removed,
  the note added, ``function_call`` as the finish reason becomes ``stop``;
* **Responses**: the ``function_call`` / ``custom_tool_call`` item (or the call of a
  built-in tool the client runs: ``local_shell_call``, ``shell_call``,
  ``apply_patch_call``, ``computer_call``, named by the tool's type — ``local_shell`` —
  its action the arguments) is replaced, at the same
  place, by an assistant ``message`` item whose text is the note. Its id carries the note
  (:data:`NOTE_PREFIX` and the note in URL-safe base64), because a client of a stored
  conversation (the Vercel AI SDK) sends it back as an ``item_reference`` the upstream
  never stored: :func:`expanded_references` turns such a reference in a later request into
  the message it stands for, so no state is kept. An upstream conversation continued with
  ``previous_response_id`` still holds the refused call, and the upstream refuses the next
  request for lacking its output: send the history (or ``store: false``) instead;
* **Messages**: the ``tool_use`` block is replaced, at the same index, by a ``text`` block
  with the note; a ``stop_reason`` of ``tool_use`` becomes ``end_turn`` when no
  ``tool_use`` block is left.

Streamed, only each call's own events are held back, until that call is complete; text
and every other event flow as they arrive. A chat call is complete when its choice
finishes (its ``finish_reason``): the calls kept are then sent whole, one chunk each,
renumbered ``0, 1, ...`` in their order so no index is missing, the notes follow as
content, then the finishing chunk. A Responses call is complete at its
``response.output_item.done``, a Messages ``tool_use`` block at its
``content_block_stop``: a call kept is then sent as it arrived, a refused one is replaced
by the events of a message item (a text block) with the note, under the same
``output_index`` (block ``index``), so no index moves; ``response.completed`` carries the
same replacement. A call still incomplete when the stream ends is never sent.

A call's arguments are its JSON arguments decoded (an object); arguments that are not a
JSON object, and a custom tool's free-form input, arrive as ``{"input": <text>}``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from hookgate.wire import sse
from hookgate.wire.stream_rewrite import EventRewriter

CHECKED_APIS = frozenset({"chat.completions", "responses", "messages"})
"""The APIs whose returned tool calls are checked."""

_CHAT_CALL_KINDS = (("function", "arguments"), ("custom", "input"))
"""A chat tool call's kinds and the field of each holding its arguments."""

_CLIENT_TOOLS = {
    "local_shell_call": ("local_shell", "action"),
    "shell_call": ("shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
    "computer_call": ("computer_use_preview", "action"),
}
"""Responses items of built-in tools the client runs: the tool's type (its name as
offered) and the field its arguments are in."""
_CALL_ITEMS = frozenset({"function_call", "custom_tool_call", *_CLIENT_TOOLS})

_CHAT_DELTA_CALLS = frozenset({"tool_calls", "function_call"})
_CHAT_CALL_KEYS = (b"tool_calls", b"function_call")
_CHAT_CALL_FINISH = frozenset({"tool_calls", "function_call"})
_LEGACY = -1
"""Where a streamed chat choice's legacy ``function_call`` is held (before its
``tool_calls``, which it never comes with)."""

NOTE_PREFIX = "msg_hookgate_"
"""The id prefix of a Responses message item that replaced a refused call."""


@dataclass(frozen=True, slots=True)
class ReturnedCall:
    """One tool call a model returned."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str | None = None


Check = Callable[[ReturnedCall], Awaitable[str | None]]
"""A reason to refuse a returned call, or None to let it through."""


def note(name: str, reason: str) -> str:
    """What the agent (and, on the next turn, the model) reads for a refused call."""
    return f"hookgate refused a call of {name}: {reason}"


def arguments_of(text: Any) -> Mapping[str, Any]:
    """A call's arguments as a mapping (see the module docstring)."""
    if isinstance(text, Mapping):
        return text
    if not isinstance(text, str) or not text.strip():
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {"input": text}
    return value if isinstance(value, dict) else {"input": text}


async def checked_body(api: str, body: Mapping[str, Any], check: Check) -> Mapping[str, Any]:
    """``body`` (a non-streamed answer of ``api``) without the calls ``check`` refuses;
    ``body`` itself when it refuses none."""
    if api == "chat.completions":
        return await _chat_body(body, check)
    if api == "responses":
        return await _responses_body(body, check)
    if api == "messages":
        return await _messages_body(body, check)
    return body


async def _chat_body(body: Mapping[str, Any], check: Check) -> Mapping[str, Any]:
    choices = body.get("choices")
    if not isinstance(choices, list):
        return body
    out: list[Any] = []
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        legacy = message.get("function_call") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not (calls or legacy):
            out.append(choice)
            continue
        kept: list[Any] = []
        notes: list[str] = []
        if isinstance(legacy, dict):
            name = str(legacy.get("name", ""))
            reason = await check(ReturnedCall(name, arguments_of(legacy.get("arguments"))))
            if reason is not None:
                notes.append(note(name, reason))
                message = {k: v for k, v in message.items() if k != "function_call"}
                if choice.get("finish_reason") == "function_call":
                    choice = {**choice, "finish_reason": "stop"}
        for call in calls if isinstance(calls, list) else ():
            returned = _chat_call(call)
            if returned is None:
                kept.append(call)
                continue
            name = returned.name
            reason = await check(returned)
            if reason is None:
                kept.append(call)
            else:
                notes.append(note(name, reason))
        if not notes:
            out.append(choice)
            continue
        changed = {**message, "content": _joined(message.get("content"), notes)}
        if kept:
            changed["tool_calls"] = kept
        else:
            changed.pop("tool_calls", None)
        choice = {**choice, "message": changed}
        if not kept and choice.get("finish_reason") == "tool_calls":
            choice["finish_reason"] = "stop"
        out.append(choice)
    return body if out == choices else {**body, "choices": out}


def _chat_call(call: Any) -> ReturnedCall | None:
    """A chat ``tool_calls`` entry (a function's or a custom tool's) as a returned call."""
    if not isinstance(call, dict):
        return None
    for key, text in _CHAT_CALL_KINDS:
        inner = call.get(key)
        if isinstance(inner, dict):
            name = str(inner.get("name", ""))
            return ReturnedCall(name, arguments_of(inner.get(text)), call.get("id"))
    return None


async def _responses_body(body: Mapping[str, Any], check: Check) -> Mapping[str, Any]:
    output = body.get("output")
    if not isinstance(output, list):
        return body
    out = [await _responses_item(item, check) for item in output]
    return (
        body if all(a is b for a, b in zip(out, output, strict=True)) else {**body, "output": out}
    )


async def _responses_item(item: Any, check: Check) -> Any:
    """``item``, or the note message in its place when it is a call ``check`` refuses."""
    if not isinstance(item, dict) or item.get("type") not in _CALL_ITEMS:
        return item
    returned = _responses_call(item)
    reason = await check(returned)
    return item if reason is None else _note_item(note(returned.name, reason))


def _responses_call(item: dict[str, Any]) -> ReturnedCall:
    """A Responses call item as a returned call: a function's JSON ``arguments``, a custom
    tool's ``input``, a client-run built-in tool's action (named by the tool's type)."""
    kind = item.get("type")
    if kind in _CLIENT_TOOLS:
        name, field = _CLIENT_TOOLS[kind]
        action = item.get(field)
        arguments: Mapping[str, Any] = action if isinstance(action, dict) else {}
    else:
        name = str(item.get("name", ""))
        raw = item.get("arguments") if kind == "function_call" else item.get("input")
        arguments = arguments_of(raw)
    return ReturnedCall(name, arguments, item.get("call_id"))


def _note_item(text: str) -> dict[str, Any]:
    encoded = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    return {
        "type": "message",
        "id": NOTE_PREFIX + encoded,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def expanded_references(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Responses request ``body`` whose ``item_reference`` items naming a note item
    (:data:`NOTE_PREFIX`) are the assistant messages they stand for; ``body`` itself when
    it has none."""
    items = body.get("input")
    if not isinstance(items, list) or not any(_note_reference(i) is not None for i in items):
        return body
    out: list[Any] = []
    for item in items:
        text = _note_reference(item)
        if text is None:
            out.append(item)
        else:
            content = [{"type": "output_text", "text": text, "annotations": []}]
            out.append({"type": "message", "role": "assistant", "content": content})
    return {**body, "input": out}


def _note_reference(item: Any) -> str | None:
    """The note an ``item_reference`` to a note item carries, else None."""
    if not isinstance(item, dict) or item.get("type") != "item_reference":
        return None
    ident = item.get("id")
    if not isinstance(ident, str) or not ident.startswith(NOTE_PREFIX):
        return None
    encoded = ident.removeprefix(NOTE_PREFIX)
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


async def _messages_body(body: Mapping[str, Any], check: Check) -> Mapping[str, Any]:
    content = body.get("content")
    if not isinstance(content, list):
        return body
    out: list[Any] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            name = str(block.get("name", ""))
            returned = ReturnedCall(name, arguments_of(block.get("input")), block.get("id"))
            reason = await check(returned)
            if reason is not None:
                block = {"type": "text", "text": note(name, reason)}
        out.append(block)
    if all(a is b for a, b in zip(out, content, strict=True)):
        return body
    changed = {**body, "content": out}
    if body.get("stop_reason") == "tool_use" and not _has_tool_use(out):
        changed["stop_reason"] = "end_turn"
    return changed


def _has_tool_use(blocks: list[Any]) -> bool:
    return any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)


def _joined(content: Any, notes: list[str]) -> str:
    text = "\n".join(notes)
    return f"{content}\n\n{text}" if isinstance(content, str) and content else text


def gate_for(api: str, check: Check) -> EventRewriter | None:
    """The stream rewriter checking ``api``'s returned calls; None for an API without."""
    if api == "chat.completions":
        return ChatGate(check)
    if api == "responses":
        return ResponsesGate(check)
    if api == "messages":
        return MessagesGate(check)
    return None


@dataclass(slots=True)
class _HeldCall:
    """A chat tool call held back while it arrives."""

    id: Any = None
    type: Any = "function"
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatGate(EventRewriter):
    """Chat completion chunks (see the module docstring)."""

    def __init__(self, check: Check) -> None:
        self._check = check
        self._held: dict[int, dict[int, _HeldCall]] = {}
        """Choice index → the tool-call index the upstream gave → the call so far."""
        self._texted: set[int] = set()
        """The choices that sent text (a note then starts on a new paragraph)."""

    async def feed(self, block: bytes) -> list[bytes]:
        if self._texted and not self._held and not any(k in block for k in _CHAT_CALL_KEYS):
            return [block]  # nothing to hold or release: not even parsed
        data = sse.json_of(block)
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            return [block]
        before: list[bytes] = []
        choices: list[Any] = []
        touched = False
        for choice in data["choices"]:
            if not isinstance(choice, dict):
                choices.append(choice)
                continue
            index = choice.get("index", 0)
            index = index if isinstance(index, int) else 0
            delta = choice.get("delta")
            if isinstance(delta, dict) and delta.get("content"):
                self._texted.add(index)
            legacy = delta.get("function_call") if isinstance(delta, dict) else None
            if isinstance(delta, dict) and (delta.get("tool_calls") or isinstance(legacy, dict)):
                self._hold(index, delta.get("tool_calls"))
                if isinstance(legacy, dict):
                    self._hold(index, [{"index": _LEGACY, "function": legacy}])
                kept_delta = {k: v for k, v in delta.items() if k not in _CHAT_DELTA_CALLS}
                choice = {**choice, "delta": kept_delta}
                touched = True
            if choice.get("finish_reason") is not None and index in self._held:
                released, kept = await self._release(data, index)
                before += released
                if not kept and choice["finish_reason"] in _CHAT_CALL_FINISH:
                    choice = {**choice, "finish_reason": "stop"}
                touched = True
            choices.append(choice)
        if not touched:
            return [block]
        return [*before, sse.encode({**data, "choices": choices})]

    def _hold(self, choice: int, calls: Any) -> None:
        held = self._held.setdefault(choice, {})
        for call in calls if isinstance(calls, list) else ():
            if not isinstance(call, dict):
                continue
            position = call.get("index", 0)
            entry = held.setdefault(position if isinstance(position, int) else 0, _HeldCall())
            if call.get("id") is not None:
                entry.id = call["id"]
            if call.get("type") is not None:
                entry.type = call["type"]
            for key, text in _CHAT_CALL_KINDS:
                inner = call.get(key)
                if isinstance(inner, dict):
                    entry.type = key
                    if isinstance(inner.get("name"), str):
                        entry.name += inner["name"]
                    if isinstance(inner.get(text), str):
                        entry.arguments.append(inner[text])

    async def _release(self, data: dict[str, Any], choice: int) -> tuple[list[bytes], int]:
        """The chunks that deliver the choice's calls kept (renumbered) and the notes of
        those refused; and how many were kept."""
        head = {k: v for k, v in data.items() if k not in ("choices", "usage")}
        out: list[bytes] = []
        notes: list[str] = []
        for position, call in sorted(self._held.pop(choice).items()):
            arguments = "".join(call.arguments)
            reason = await self._check(ReturnedCall(call.name, arguments_of(arguments), call.id))
            if reason is not None:
                notes.append(note(call.name, reason))
                continue
            text = "input" if call.type == "custom" else "arguments"
            whole = {"index": len(out), "id": call.id, "type": call.type,
                     call.type: {"name": call.name, text: arguments}}  # fmt: skip
            delta: dict[str, Any] = {"tool_calls": [whole]}
            if position == _LEGACY:
                delta = {"function_call": {"name": call.name, "arguments": arguments}}
            out.append(sse.encode({**head, "choices": [_chunk_choice(choice, delta)]}))
        kept = len(out)
        if notes:
            said = {"content": ("\n\n" if choice in self._texted else "") + "\n".join(notes)}
            out.append(sse.encode({**head, "choices": [_chunk_choice(choice, said)]}))
        return out, kept


def _chunk_choice(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": None}


class ResponsesGate(EventRewriter):
    """Responses API streaming events (see the module docstring)."""

    def __init__(self, check: Check) -> None:
        self._check = check
        self._held: dict[int, list[bytes]] = {}
        """``output_index`` of a call arriving → its events so far."""
        self._sequence: dict[int, list[int]] = {}
        self._notes: dict[Any, dict[str, Any]] = {}
        """Item id of a refused call → the note item that replaced it."""

    async def feed(self, block: bytes) -> list[bytes]:
        if not self._held and not self._notes and b"_call" not in block:
            return [block]  # no call item in it, none arriving, none replaced
        data = sse.json_of(block)
        if not isinstance(data, dict):
            return [block]
        kind = data.get("type", sse.parse(block).event)
        index = data.get("output_index")
        item = data.get("item")
        if (
            kind == "response.output_item.added"
            and isinstance(index, int)
            and isinstance(item, dict)
            and item.get("type") in _CALL_ITEMS
        ):
            self._held[index] = []
            self._sequence[index] = []
        if isinstance(index, int) and index in self._held:
            self._held[index].append(block)
            if isinstance(data.get("sequence_number"), int):
                self._sequence[index].append(data["sequence_number"])
            if kind == "response.output_item.done" and isinstance(item, dict):
                return await self._complete(index, item)
            return []
        response = data.get("response")
        if self._notes and isinstance(response, dict) and isinstance(response.get("output"), list):
            output = [self._replaced(i) for i in response["output"]]
            changed = {**data, "response": {**response, "output": output}}
            return [sse.encode(changed, event=sse.parse(block).event)]
        return [block]

    def _replaced(self, item: Any) -> Any:
        if isinstance(item, dict) and item.get("id") in self._notes:
            return self._notes[item["id"]]
        return item

    async def _complete(self, index: int, item: dict[str, Any]) -> list[bytes]:
        held = self._held.pop(index)
        numbers = self._sequence.pop(index)
        returned = _responses_call(item)
        reason = await self._check(returned)
        if reason is None:
            return held
        replacement = _note_item(note(returned.name, reason))
        self._notes[item.get("id")] = replacement
        return _note_events(index, replacement, numbers)


def _note_events(index: int, item: dict[str, Any], numbers: list[int]) -> list[bytes]:
    """The events of a finished message item ``item`` at ``output_index`` ``index``,
    numbered with ``numbers`` (the held call's own sequence numbers, the last repeated)."""
    text = item["content"][0]["text"]
    part = {"type": "output_text", "text": "", "annotations": []}
    at = {"item_id": item["id"], "output_index": index, "content_index": 0}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.output_item.added",
         {"output_index": index, "item": {**item, "status": "in_progress", "content": []}}),
        ("response.content_part.added", {**at, "part": part}),
        ("response.output_text.delta", {**at, "delta": text, "logprobs": []}),
        ("response.output_text.done", {**at, "text": text, "logprobs": []}),
        ("response.content_part.done", {**at, "part": {**part, "text": text}}),
        ("response.output_item.done", {"output_index": index, "item": item}),
    ]  # fmt: skip
    out: list[bytes] = []
    for position, (kind, data) in enumerate(events):
        numbered: dict[str, Any] = {"type": kind, **data}
        if numbers:
            numbered["sequence_number"] = numbers[min(position, len(numbers) - 1)]
        out.append(sse.encode(numbered, event=kind))
    return out


class MessagesGate(EventRewriter):
    """Anthropic Messages streaming events (see the module docstring)."""

    def __init__(self, check: Check) -> None:
        self._check = check
        self._held: dict[int, tuple[dict[str, Any], list[bytes], list[str]]] = {}
        """Block index of a ``tool_use`` arriving → its start block, events, JSON pieces."""
        self._kept = 0
        self._refused = 0

    async def feed(self, block: bytes) -> list[bytes]:
        if not self._held and not self._refused and b"tool_use" not in block:
            return [block]  # no tool_use block in it, none arriving, none refused
        data = sse.json_of(block)
        if not isinstance(data, dict):
            return [block]
        kind = data.get("type", sse.parse(block).event)
        index = data.get("index")
        start = data.get("content_block")
        if (
            kind == "content_block_start"
            and isinstance(index, int)
            and isinstance(start, dict)
            and start.get("type") == "tool_use"
        ):
            self._held[index] = (start, [], [])
        if isinstance(index, int) and index in self._held:
            start, events, pieces = self._held[index]
            events.append(block)
            delta = data.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("partial_json"), str):
                pieces.append(delta["partial_json"])
            if kind == "content_block_stop":
                return await self._complete(index)
            return []
        delta = data.get("delta")
        if (
            kind == "message_delta"
            and isinstance(delta, dict)
            and delta.get("stop_reason") == "tool_use"
            and self._refused
            and not self._kept
        ):
            changed = {**data, "delta": {**delta, "stop_reason": "end_turn"}}
            return [sse.encode(changed, event=sse.parse(block).event)]
        return [block]

    async def _complete(self, index: int) -> list[bytes]:
        start, events, pieces = self._held.pop(index)
        name = str(start.get("name", ""))
        text = "".join(pieces)
        arguments = arguments_of(text) if text.strip() else arguments_of(start.get("input"))
        reason = await self._check(ReturnedCall(name, arguments, start.get("id")))
        if reason is None:
            self._kept += 1
            return events
        self._refused += 1
        said = note(name, reason)
        return [
            sse.encode({"type": "content_block_start", "index": index,
                        "content_block": {"type": "text", "text": ""}},
                       event="content_block_start"),
            sse.encode({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": said}},
                       event="content_block_delta"),
            sse.encode({"type": "content_block_stop", "index": index}, event="content_block_stop"),
        ]  # fmt: skip
