"""The labelled chats of the independent set, and the check that their labels are exact."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

KINDS = frozenset(
    {
        "PERSON",
        "EMAIL_ADDRESS",
        "PHONE_NUMBER",
        "STREET_ADDRESS",
        "IP_ADDRESS",
        "CREDIT_CARD",
        "IBAN_CODE",
        "US_SSN",
    }
)
"""The entity kinds a label can have."""


class LabelError(AssertionError):
    """A chat whose labels are not exact (the generator writes it again from another seed)."""


@dataclass(frozen=True)
class Entity:
    """One PII value of a chat: its kind and its exact text, as it appears in the chat."""

    kind: str
    value: str


@dataclass(frozen=True)
class Chat:
    """One labelled conversation in the OpenAI chat-completions format.

    ``turns[i]`` holds the messages the client appends at turn ``i`` (turn 0 may start with
    a system message; a turn ends with a user or tool message); the evaluator inserts the
    assistant replies between turns. ``technical`` lists text that must survive redaction.
    ``contexts`` says, for each PII value, in which kinds of context it was written (the
    structural templates of :mod:`.blocks`, ``prose``, ``system_prompt``, ``tool_arguments``,
    ``tool_result``), so a leak can be traced to its context.
    """

    id: str
    turns: tuple[tuple[dict[str, Any], ...], ...]
    entities: tuple[Entity, ...]
    technical: tuple[str, ...]
    stream: bool
    contexts: tuple[tuple[str, tuple[str, ...]], ...] = ()


_NAME_FIELD = re.compile(r"^[a-zA-Z0-9_-]+$")
_LOOKS_LIKE_PII = (
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}"),  # e-mail address
    re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])"),  # IPv4 address
    re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])"),  # dashed SSN
)


def _require(condition: bool, message: str) -> None:
    """``assert`` that also holds under ``python -O``."""
    if not condition:
        raise LabelError(message)


def texts(chat: Chat) -> list[str]:
    """Every text of a chat the model reads: contents, text parts, tool-call arguments."""
    out: list[str] = []
    for turn in chat.turns:
        for message in turn:
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(part["text"] for part in content if part.get("type") == "text")
            for call in message.get("tool_calls") or ():
                out.append(call["function"]["arguments"])
    return out


def _spans(text: str, needle: str) -> Iterator[tuple[int, int]]:
    start = text.find(needle)
    while start != -1:
        yield start, start + len(needle)
        start = text.find(needle, start + 1)


def _check_messages(chat: Chat) -> None:
    """Well-formed messages: roles, the system message first, tool calls answered."""
    _require(len(chat.turns) > 0, "no turns")
    for i, turn in enumerate(chat.turns):
        _require(len(turn) > 0, f"turn {i} is empty")
        pending: set[str] = set()
        for j, message in enumerate(turn):
            role = message.get("role")
            _require(role in ("system", "user", "assistant", "tool"), f"role {role!r}")
            _require(role != "system" or (i, j) == (0, 0), "a system message not first")
            _require("name" not in message or bool(_NAME_FIELD.match(message["name"])), "name")
            content = message.get("content")
            if isinstance(content, list):
                _require(
                    bool(content)
                    and all(
                        p.get("type") == "text" and isinstance(p.get("text"), str) for p in content
                    ),
                    "bad content parts",
                )
            else:
                _require(
                    isinstance(content, str)
                    or (content is None and bool(message.get("tool_calls"))),
                    f"bad content in a {role} message",
                )
            for call in message.get("tool_calls") or ():
                _require(role == "assistant", "tool calls outside an assistant message")
                _require(isinstance(json.loads(call["function"]["arguments"]), dict), "arguments")
                pending.add(call["id"])
            if role == "tool":
                _require(message.get("tool_call_id") in pending, "a tool result without its call")
                pending.discard(message["tool_call_id"])
        _require(turn[-1]["role"] in ("user", "tool"), f"turn {i} ends with {turn[-1]['role']}")
        _require(not pending, f"turn {i} leaves tool calls unanswered")


def check_chat(chat: Chat) -> None:
    """Raise :class:`LabelError` unless the labels of ``chat`` are exact.

    Every entity value and technical token occurs verbatim in a text of the chat; no value
    contains another; no technical token overlaps a value, as strings or where they occur;
    whatever plainly looks like an e-mail address, IPv4 address or dashed SSN is (part of)
    a labelled value; the messages are well-formed.
    """
    where = chat.id
    try:
        _check_messages(chat)
        values = [e.value for e in chat.entities]
        _require(len(set(values)) == len(values), "duplicate values")
        _require(len(set(chat.technical)) == len(chat.technical), "duplicate technical tokens")
        for e in chat.entities:
            _require(e.kind in KINDS, f"unknown kind {e.kind}")
            _require(bool(e.value) and e.value == e.value.strip(), f"bad value {e.value!r}")
            others = (v for v in values if v != e.value)
            _require(not any(e.value in v for v in others), f"{e.value!r} is inside another value")
        found = texts(chat)
        for v in values:
            _require(any(v in t for t in found), f"{v!r} is in no text")
        for token in chat.technical:
            _require(bool(token.strip()), "empty technical token")
            _require(any(token in t for t in found), f"technical {token!r} is in no text")
            for v in values:
                _require(token not in v and v not in token, f"{token!r} overlaps {v!r}")
        for t in found:
            spans = [s for v in values for s in _spans(t, v)]
            for token in chat.technical:
                for a, b in _spans(t, token):
                    _require(not any(a < e and s < b for s, e in spans), f"{token!r} overlaps PII")
            for pattern in _LOOKS_LIKE_PII:
                for m in pattern.finditer(t):
                    _require(
                        any(m.start() < e and s < m.end() for s, e in spans),
                        f"unlabelled {m.group()!r}",
                    )
    except LabelError as e:
        raise LabelError(f"{where}: {e}") from None


def check(chats: list[Chat]) -> None:
    """Raise :class:`LabelError` unless every chat's labels are exact (see :func:`check_chat`)."""
    ids = [chat.id for chat in chats]
    _require(len(set(ids)) == len(ids), "duplicate chat ids")
    for chat in chats:
        check_chat(chat)
