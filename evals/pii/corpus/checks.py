"""The labels of the development set, and the check that they are exact."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

KINDS = (
    "PERSON",
    "STREET_ADDRESS",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "US_SSN",
    "IBAN_CODE",
    "IP_ADDRESS",
    "SECRET",
)
"""The entity kinds a label can have."""


@dataclass(frozen=True)
class Entity:
    """One PII value of a chat: its kind and the exact substring found in the texts."""

    kind: str
    value: str


@dataclass(frozen=True)
class Chat:
    """One labelled conversation.

    ``turns[i]`` holds the new messages the client appends at turn ``i`` (turn 0 may start
    with a system message); the evaluator inserts the assistant replies between turns.
    """

    id: str
    turns: tuple[tuple[dict[str, Any], ...], ...]
    entities: tuple[Entity, ...]
    technical: tuple[str, ...]
    stream: bool


_NAME_FIELD = re.compile(r"^[a-zA-Z0-9_-]+$")


def texts(chat: Chat) -> list[str]:
    """Every text of a chat: string contents, text parts and tool-call arguments."""
    out: list[str] = []
    for turn in chat.turns:
        for message in turn:
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(
                    part["text"]
                    for part in content
                    if isinstance(part, dict) and part.get("type") == "text"
                )
            for call in message.get("tool_calls") or ():
                out.append(call["function"]["arguments"])
    return out


def _require(condition: bool, message: str) -> None:
    """``assert`` that also holds under ``python -O``."""
    if not condition:
        raise AssertionError(message)


def _check_messages(chat: Chat) -> None:
    """Structural checks of one chat's messages."""
    _require(len(chat.turns) > 0, f"{chat.id}: no turns")
    call_ids: set[str] = set()
    for i, turn in enumerate(chat.turns):
        _require(len(turn) > 0, f"{chat.id}: empty turn {i}")
        _require(turn[-1]["role"] in ("user", "tool"), f"{chat.id}: turn {i} ends badly")
        for j, message in enumerate(turn):
            role = message["role"]
            where = f"{chat.id}: turn {i} message {j}"
            _require(role in ("system", "user", "assistant", "tool"), f"{where}: role {role}")
            _require(role != "system" or (i, j) == (0, 0), f"{where}: misplaced system")
            if "name" in message:
                _require(bool(_NAME_FIELD.match(message["name"])), f"{where}: bad name field")
            for call in message.get("tool_calls") or ():
                call_ids.add(call["id"])
                json.loads(call["function"]["arguments"])
            if role == "tool":
                _require(message["tool_call_id"] in call_ids, f"{where}: unknown tool_call_id")


def check(chats: list[Chat]) -> None:
    """Assert that the labels are exact.

    Every entity value and technical token occurs verbatim in a text of its chat, no
    technical token overlaps an entity value of the same chat, kinds are known, ids are
    unique and the messages are well-formed.
    """
    ids = [chat.id for chat in chats]
    _require(len(ids) == len(set(ids)), "duplicate chat ids")
    for chat in chats:
        _check_messages(chat)
        found = texts(chat)
        _require(len(set(chat.entities)) == len(chat.entities), f"{chat.id}: duplicate entity")
        _require(len(set(chat.technical)) == len(chat.technical), f"{chat.id}: duplicate token")
        for entity in chat.entities:
            _require(entity.kind in KINDS, f"{chat.id}: unknown kind {entity.kind}")
            _require(bool(entity.value), f"{chat.id}: empty entity")
            _require(
                any(entity.value in text for text in found),
                f"{chat.id}: {entity.kind} {entity.value!r} not in the texts",
            )
        for token in chat.technical:
            _require(
                any(token in text for text in found),
                f"{chat.id}: technical {token!r} not in the texts",
            )
            for entity in chat.entities:
                _require(
                    token not in entity.value and entity.value not in token,
                    f"{chat.id}: technical {token!r} overlaps {entity.value!r}",
                )


def summary(chats: list[Chat]) -> dict[str, int]:
    """Counts describing the mix of a corpus."""
    kinds = Counter(e.kind for chat in chats for e in chat.entities)
    messages = [m for chat in chats for turn in chat.turns for m in turn]
    return {
        "chats": len(chats),
        "entities": sum(kinds.values()),
        "technical": sum(len(chat.technical) for chat in chats),
        **{f"kind:{kind}": kinds[kind] for kind in KINDS},
        "multi_turn": sum(len(chat.turns) > 1 for chat in chats),
        "stream": sum(chat.stream for chat in chats),
        "with_technical": sum(bool(chat.technical) for chat in chats),
        "no_pii": sum(not chat.entities for chat in chats),
        "hard": sum(chat.id.endswith("-hard") for chat in chats),
        "tool_calls": sum(len(m.get("tool_calls") or ()) for m in messages),
        "content_parts": sum(isinstance(m.get("content"), list) for m in messages),
        "named_messages": sum("name" in m for m in messages),
        "system_prompts": sum(m["role"] == "system" for m in messages),
    }
