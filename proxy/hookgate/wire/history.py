"""The structure of a conversation history: which messages belong together. Pure.

A chat ``messages`` list or a Responses ``input`` list is read as *units* — the smallest
runs of entries that may be removed or kept only together — grouped into *turns*, each
starting at a user message:

* a system or developer message is a unit of its own and is *pinned* (never removed);
* a tool call and its results are one unit: a chat assistant message with ``tool_calls`` and
  the ``tool`` messages answering it; Responses ``function_call`` (``custom_tool_call``, ...)
  items and the ``*_output`` items with their ``call_id``, parallel calls included. The unit
  ends once every call opened in it is answered (or at the next user message);
* a Responses ``reasoning`` item belongs to the unit of the item after it (a reasoning
  model's call must arrive with the reasoning that produced it);
* anything else (a user message, an assistant answer, an unanswered call) is a unit.

So removing whole units never sends a tool result without its call or a call without its
result, which providers refuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_PINNED_ROLES = frozenset({"system", "developer"})
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})


@dataclass(slots=True)
class Unit:
    """Entries ``start`` to ``end`` (exclusive) of the history, kept or removed together."""

    start: int
    end: int
    pinned: bool = False
    user: bool = False
    """Starts a turn: a user message."""
    open_calls: set[str] = field(default_factory=set)


def units(history: Sequence[Any]) -> list[Unit]:
    """The units of ``history`` in order (see the module docstring)."""
    out: list[Unit] = []
    current: Unit | None = None
    for index, entry in enumerate(history):
        role = _role(entry)
        answered = _answered_call(entry)
        if current is not None and answered is not None and answered in current.open_calls:
            current.open_calls.discard(answered)
            current.end = index + 1
            if not current.open_calls:
                current = None
            continue
        if current is not None and current.end == index and _continues(history, current):
            current.end = index + 1  # the call after a reasoning item; more parallel calls
            current.open_calls |= _opened_calls(entry)
            if not current.open_calls and not _is_reasoning(entry):
                current = None
            continue
        unit = Unit(
            index,
            index + 1,
            pinned=role in _PINNED_ROLES,
            user=role == "user",
            open_calls=_opened_calls(entry),
        )
        out.append(unit)
        current = unit if unit.open_calls or _is_reasoning(entry) else None
    return out


def turns(all_units: Sequence[Unit]) -> list[list[Unit]]:
    """The unpinned units grouped into turns; a turn starts at a user message (units before
    the first one form a turn of their own)."""
    grouped: list[list[Unit]] = []
    for unit in all_units:
        if unit.pinned:
            continue
        if unit.user or not grouped:
            grouped.append([])
        grouped[-1].append(unit)
    return grouped


def tool_results(history: Sequence[Any]) -> list[tuple[int, str]]:
    """``(index, tool name)`` of every tool result in ``history``, oldest first; the name is
    the one its call gave ("" when no call in the history names it)."""
    names: dict[str, str] = {}
    out: list[tuple[int, str]] = []
    for index, entry in enumerate(history):
        if not isinstance(entry, Mapping):
            continue
        for call in entry.get("tool_calls") or ():
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                names[str(call.get("id"))] = str(call["function"].get("name", ""))
        if entry.get("type") in ("function_call", "custom_tool_call"):
            names[str(entry.get("call_id"))] = str(entry.get("name", ""))
        answered = _answered_call(entry)
        if answered is not None:
            out.append((index, names.get(answered, "")))
    return out


def result_text(entry: Mapping[str, Any]) -> str:
    """The text of a tool result (chat ``content`` or Responses ``output``, a string or
    text parts joined)."""
    return _text(entry.get("content") if entry.get("role") == "tool" else entry.get("output"))


def with_result_text(entry: Mapping[str, Any], text: str) -> dict[str, Any]:
    """A copy of a tool result whose text is ``text``."""
    return {**entry, ("content" if entry.get("role") == "tool" else "output"): text}


def transcript(history: Sequence[Any]) -> str:
    """``history`` as plain text for a summarizing model: one ``role: text`` line per entry,
    tool calls with their arguments."""
    lines: list[str] = []
    for entry in history:
        if not isinstance(entry, Mapping):
            continue
        role = _role(entry) or str(entry.get("type", "item"))
        text = result_text(entry) if _answered_call(entry) else _text(entry.get("content"))
        calls = [
            f"{c['function'].get('name')}({c['function'].get('arguments', '')})"
            for c in entry.get("tool_calls") or ()
            if isinstance(c, Mapping) and isinstance(c.get("function"), Mapping)
        ]
        if entry.get("type") in ("function_call", "custom_tool_call"):
            calls.append(f"{entry.get('name')}({entry.get('arguments', entry.get('input', ''))})")
        if calls:
            text = (text + " " if text else "") + "calls " + "; ".join(calls)
        if text:
            lines.append(f"{role}: {text}")
    return "\n".join(lines)


def _text(content: Any) -> str:
    """A string content, or the text of its parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    return ""


def _role(entry: Any) -> str | None:
    if not isinstance(entry, Mapping):
        return None
    role = entry.get("role")
    if isinstance(role, str):
        return role
    return "tool" if _answered_call(entry) is not None else None


def _opened_calls(entry: Any) -> set[str]:
    if not isinstance(entry, Mapping):
        return set()
    calls = entry.get("tool_calls")
    if isinstance(calls, list):
        return {str(c.get("id")) for c in calls if isinstance(c, Mapping)}
    if entry.get("type") in ("function_call", "custom_tool_call") and "call_id" in entry:
        return {str(entry["call_id"])}
    return set()


def _answered_call(entry: Any) -> str | None:
    if not isinstance(entry, Mapping):
        return None
    if entry.get("role") == "tool" and "tool_call_id" in entry:
        return str(entry["tool_call_id"])
    if entry.get("type") in _OUTPUT_TYPES and "call_id" in entry:
        return str(entry["call_id"])
    return None


def _is_reasoning(entry: Any) -> bool:
    return isinstance(entry, Mapping) and entry.get("type") == "reasoning"


def _continues(history: Sequence[Any], unit: Unit) -> bool:
    """Whether the entry after ``unit`` belongs to it: ``unit`` ends in a reasoning item,
    or it holds open Responses calls and another call follows (parallel calls)."""
    last = history[unit.end - 1]
    nxt = history[unit.end]
    if _is_reasoning(last):
        return _role(nxt) not in ("user", "system", "developer")
    return bool(unit.open_calls) and bool(_opened_calls(nxt)) and "tool_calls" not in nxt
