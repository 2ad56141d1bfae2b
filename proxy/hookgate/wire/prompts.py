"""Where a request keeps its system prompt and its messages, for each API.

Chat Completions: the system prompt is the first message whose role is ``system`` or
``developer`` (string content, or the text parts of a content-part array). Later system
messages are ordinary messages. Without one, a new ``system`` message is inserted first.

Responses: ``instructions`` when it is a string; otherwise the first ``system`` or
``developer`` item of a list ``input``; without either, ``instructions`` is set.

Messages (Anthropic): the top-level ``system``, a string or text blocks (their texts
joined by a blank line). A prompt a hook only added to keeps the client's blocks, and so
their ``cache_control`` breakpoints: what was added before and after them becomes a text
block of its own. A prompt rewritten otherwise replaces the blocks' text with one block,
which keeps the last block's ``cache_control``. The messages are ``messages``.

Every function returns a new body and leaves its argument untouched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hookgate.errors import InvalidRequest

SYSTEM_ROLES = frozenset({"system", "developer"})
MESSAGES_APIS = frozenset({"messages", "messages.count_tokens"})
"""The Messages API's two shapes of a prompt: a call, and the count of its tokens (which
must count, and send the provider, what the call itself would)."""
SIGNED_BLOCKS = frozenset({"thinking", "redacted_thinking"})
"""Anthropic content blocks a ``signature`` covers: the model's thinking, which must go
back to Anthropic byte for byte (never redacted, restored or rewritten)."""
_TEXT_PART_TYPES = frozenset({"text", "input_text"})


def messages_of(api: str, body: Mapping[str, Any]) -> Sequence[Any] | None:
    """The message list hooks see: chat ``messages``, Responses ``input`` items, or
    Anthropic Messages ``messages`` (``messages`` and ``messages.count_tokens``).

    A string Responses ``input`` is presented as one user message. ``None`` for APIs
    without messages.
    """
    if api == "chat.completions":
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise InvalidRequest("'messages' must be an array", param="messages")
        return messages
    if api in MESSAGES_APIS:
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise InvalidRequest("messages: Input should be a valid list", param="messages")
        return messages
    if api == "responses":
        items = body.get("input")
        if isinstance(items, str):
            return [{"role": "user", "content": items}]
        if items is None:
            return []
        if not isinstance(items, list):
            raise InvalidRequest("'input' must be a string or an array", param="input")
        return items
    return None


def with_messages(api: str, body: Mapping[str, Any], messages: Sequence[Any]) -> dict[str, Any]:
    """A copy of ``body`` carrying ``messages`` where :func:`messages_of` found them."""
    key = "input" if api == "responses" else "messages"
    return {**body, key: list(messages)}


def system_prompt_of(api: str, body: Mapping[str, Any]) -> str:
    """The system prompt text of a chat, Responses or Messages body ("" when there is
    none)."""
    if api in MESSAGES_APIS:
        return _system_text(body.get("system"))
    if api == "responses" and isinstance(body.get("instructions"), str):
        return str(body["instructions"])
    messages = messages_of(api, body) or ()
    index = _system_index(messages)
    return "" if index is None else _text_of(messages[index].get("content"))


def with_system_prompt(api: str, body: Mapping[str, Any], prompt: str) -> dict[str, Any]:
    """A copy of ``body`` whose system prompt is ``prompt``."""
    if api in MESSAGES_APIS:
        return {**body, "system": _with_system_blocks(body.get("system"), prompt)}
    if api == "responses" and (
        isinstance(body.get("instructions"), str) or not _has_system_item(body.get("input"))
    ):
        return {**body, "instructions": prompt}
    messages = list(messages_of(api, body) or ())
    index = _system_index(messages)
    if index is None:
        messages.insert(0, {"role": "system", "content": prompt})
    else:
        message = messages[index]
        messages[index] = {**message, "content": _replace_text(message.get("content"), prompt)}
    return with_messages(api, body, messages)


_BLOCK_JOINER = "\n\n"


def _text_blocks(system: Any) -> list[Mapping[str, Any]]:
    if not isinstance(system, list):
        return []
    return [b for b in system if isinstance(b, Mapping) and b.get("type") == "text"]


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    return _BLOCK_JOINER.join(str(b.get("text", "")) for b in _text_blocks(system))


def _with_system_blocks(system: Any, prompt: str) -> Any:
    """``system`` (a Messages ``system``) carrying ``prompt``; see the module docstring."""
    blocks = _text_blocks(system)
    if not blocks:
        return prompt
    old = _system_text(system)
    at = prompt.find(old)
    if at >= 0:
        head, tail = prompt[:at], prompt[at + len(old) :]
        return [
            *([{"type": "text", "text": head}] if head else []),
            *system,
            *([{"type": "text", "text": tail}] if tail else []),
        ]
    kept = {k: v for k, v in blocks[-1].items() if k == "cache_control"}
    others = [b for b in system if not (isinstance(b, Mapping) and b.get("type") == "text")]
    return [{"type": "text", "text": prompt, **kept}, *others]


def _has_system_item(items: Any) -> bool:
    return isinstance(items, list) and _system_index(items) is not None


def _system_index(messages: Sequence[Any]) -> int | None:
    for i, message in enumerate(messages):
        if isinstance(message, Mapping) and _named(message.get("role"), SYSTEM_ROLES):
            return i
    return None


def _named(value: Any, names: frozenset[str]) -> bool:
    """``value in names`` for a value from a client's JSON (it may be a list: unhashable)."""
    return isinstance(value, str) and value in names


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and _named(part.get("type"), _TEXT_PART_TYPES)
        )
    return ""


def _replace_text(content: Any, prompt: str) -> Any:
    """Put ``prompt`` in place of the text of ``content``, keeping its shape.

    A string stays a string. In a part array the first text part takes the whole prompt,
    later text parts are dropped (their text is part of ``prompt``), other parts stay.
    """
    if not isinstance(content, list):
        return prompt
    out: list[Any] = []
    placed = False
    for part in content:
        if isinstance(part, Mapping) and _named(part.get("type"), _TEXT_PART_TYPES):
            if not placed:
                out.append({**part, "text": prompt})
                placed = True
            continue
        out.append(part)
    if not placed:
        out.insert(0, {"type": "text", "text": prompt})
    return out
