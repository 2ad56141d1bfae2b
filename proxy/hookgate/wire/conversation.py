"""A model request read as a conversation: who said what, and which tools it offered. Pure.

:func:`conversation_of` reads a chat, Responses or Anthropic Messages request body (a
Gemini API request arrives translated to chat) into a :class:`Conversation`:

* **trusted texts**: what the system, developer and user wrote — chat ``system``,
  ``developer`` and ``user`` messages (string content or text parts); Responses
  ``instructions`` and ``input`` (a string, or the text of its system, developer and
  user messages); Messages ``system`` and the text blocks of ``user`` messages;
* **tool results**: each result's text with the id of the call it answers and that
  call's tool name ("" when no call in the request names it) — chat ``role: tool``
  messages matched to the assistant's ``tool_calls`` by id, and legacy ``role: function``
  messages by their ``name``; Responses
  ``function_call_output`` / ``custom_tool_call_output`` items matched to
  ``function_call`` / ``custom_tool_call`` items by ``call_id``; Messages ``tool_result``
  blocks matched to ``tool_use`` blocks by id;
* **offered tools**: every name the request's ``tools`` and legacy ``functions`` carry
  (see :func:`tool_names`).

What the assistant itself wrote is neither: it is neither evidence of a user's intent nor
a tool's output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hookgate.wire.prompts import MESSAGES_APIS

_TRUSTED_ROLES = frozenset({"system", "developer", "user"})
_CALL_TYPES = frozenset({"function_call", "custom_tool_call"})
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """One tool result the request carries."""

    tool: str
    """The name of the tool whose call it answers ("" when no call in the request names it)."""
    call_id: str
    text: str
    """Its text (text parts and blocks joined)."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """A model request as evidence: see the module docstring."""

    trusted: tuple[str, ...] = ()
    """What the system, developer and user wrote, in order."""
    tool_results: tuple[ToolOutput, ...] = ()
    """Every tool result, in order."""
    offered: frozenset[str] = frozenset()
    """Every name of every tool the request offered the model."""


def conversation_of(api: str, body: Mapping[str, Any]) -> Conversation:
    """The conversation of a ``chat.completions``, ``responses`` or ``messages`` request
    body (any other API: only its offered tools). Malformed entries are skipped."""
    offered = frozenset(
        name
        for field in ("tools", "functions")
        for tool in _list(body.get(field))
        for name in tool_names(tool)
    )
    if api == "chat.completions":
        trusted, results = _chat(_list(body.get("messages")))
    elif api == "responses":
        trusted, results = _responses(body)
    elif api in MESSAGES_APIS:
        trusted, results = _messages(body)
    else:
        trusted, results = [], []
    return Conversation(tuple(trusted), tuple(results), offered)


def tool_names(tool: Any) -> list[str]:
    """Every name a tool definition (or a tool choice) carries — ``function.name``,
    ``custom.name``, ``name``, a built-in tool's ``type`` — so none can stand in for
    another."""
    if not isinstance(tool, Mapping):
        return []
    names = [
        inner["name"]
        for key in ("function", "custom")
        if isinstance(inner := tool.get(key), Mapping) and isinstance(inner.get("name"), str)
    ]
    if isinstance(tool.get("name"), str):
        names.append(tool["name"])
    kind = tool.get("type")
    if isinstance(kind, str) and kind not in ("function", "custom"):
        names.append(kind)
    return names


def _chat(messages: Sequence[Any]) -> tuple[list[str], list[ToolOutput]]:
    trusted: list[str] = []
    results: list[ToolOutput] = []
    names: dict[str, str] = {}
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        for call in _list(message.get("tool_calls")):
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                names[str(call.get("id"))] = str(call["function"].get("name", ""))
        if role in _TRUSTED_ROLES:
            trusted.append(_text(message.get("content")))
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            results.append(
                ToolOutput(names.get(call_id, ""), call_id, _text(message.get("content")))
            )
        elif role == "function":  # the legacy ``functions`` API's result, named
            name = str(message.get("name", ""))
            results.append(ToolOutput(name, "", _text(message.get("content"))))
    return trusted, results


def _responses(body: Mapping[str, Any]) -> tuple[list[str], list[ToolOutput]]:
    trusted: list[str] = []
    results: list[ToolOutput] = []
    if isinstance(body.get("instructions"), str):
        trusted.append(body["instructions"])
    items = body.get("input")
    if isinstance(items, str):
        return [*trusted, items], results
    names: dict[str, str] = {}
    for item in _list(items):
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind in _CALL_TYPES:
            names[str(item.get("call_id"))] = str(item.get("name", ""))
        elif kind in _OUTPUT_TYPES:
            call_id = str(item.get("call_id", ""))
            results.append(ToolOutput(names.get(call_id, ""), call_id, _text(item.get("output"))))
        elif item.get("role") in _TRUSTED_ROLES and kind in (None, "message"):
            trusted.append(_text(item.get("content")))
    return trusted, results


def _messages(body: Mapping[str, Any]) -> tuple[list[str], list[ToolOutput]]:
    trusted: list[str] = []
    results: list[ToolOutput] = []
    system = body.get("system")
    if system is not None:
        trusted.append(_text(system))
    names: dict[str, str] = {}
    for message in _list(body.get("messages")):
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        user = message.get("role") == "user"
        if isinstance(content, str):
            if user:
                trusted.append(content)
            continue
        for block in _list(content):
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                names[str(block.get("id"))] = str(block.get("name", ""))
            elif kind == "tool_result":
                call_id = str(block.get("tool_use_id", ""))
                text = _text(block.get("content"))
                results.append(ToolOutput(names.get(call_id, ""), call_id, text))
            elif kind == "text" and user and isinstance(block.get("text"), str):
                trusted.append(block["text"])
    return trusted, results


def _text(content: Any) -> str:
    """A string content, or the texts of its parts or blocks joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(
        part["text"]
        for part in _list(content)
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
