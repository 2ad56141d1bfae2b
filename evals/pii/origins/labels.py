"""The labelled chats of the origins set, and the check that their labels are exact."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
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

PART_FORMS = frozenset({"given", "family", "titled"})
"""The forms of a PERSON value that is part of a name: the given name alone, the family name
alone, the family name after a title (``Ms. Wiśniewska`` labels ``Wiśniewska``)."""


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
    a system message; a turn ends with a user or tool message); the evaluation inserts the
    assistant replies between turns. ``technical`` lists text that must survive redaction.
    ``contexts`` tells, for each PII value, how and where it was written: ``form:full``,
    ``form:given``, ``form:family`` or ``form:titled`` for a PERSON value, and the places
    ``place:system``, ``place:opening``, ``place:email``, ``place:follow_up``,
    ``place:note``, ``place:tool_arguments`` or ``place:tool_result``.
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
    return [text for _, text in turn_texts(chat)]


def turn_texts(chat: Chat) -> list[tuple[int, str]]:
    """``(turn index, text)`` for every text of a chat (see :func:`texts`)."""
    out: list[tuple[int, str]] = []
    for i, turn in enumerate(chat.turns):
        for message in turn:
            content = message.get("content")
            if isinstance(content, str):
                out.append((i, content))
            elif isinstance(content, list):
                out.extend((i, part["text"]) for part in content if part.get("type") == "text")
            for call in message.get("tool_calls") or ():
                out.append((i, call["function"]["arguments"]))
    return out


def spans(text: str, needle: str) -> Iterator[tuple[int, int]]:
    """Where ``needle`` occurs in ``text``, overlapping occurrences included."""
    start = text.find(needle)
    while start != -1:
        yield start, start + len(needle)
        start = text.find(needle, start + 1)


def standalone(text: str, value: str, values: Sequence[str]) -> list[tuple[int, int]]:
    """The occurrences of ``value`` that are not inside an occurrence of a longer one of
    ``values`` (a given name written inside the full name is the full name's occurrence)."""
    longer = [s for v in values if value in v and v != value for s in spans(text, v)]
    return [(a, b) for a, b in spans(text, value) if not any(s <= a and b <= e for s, e in longer)]


def iban_valid(value: str) -> bool:
    """ISO 13616: the check digits of an IBAN (spaces allowed between groups)."""
    compact = value.replace(" ", "")
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{8,30}", compact):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def luhn_valid(value: str) -> bool:
    """The Luhn check of a card number (spaces and dashes allowed between groups)."""
    digits = [int(c) for c in value if c.isdigit()]
    if not 13 <= len(digits) <= 19 or re.search(r"[^\d -]", value):
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        total += d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2)
    return total % 10 == 0


def ssn_valid(value: str) -> bool:
    """A dashed US SSN in the issued ranges (area 001-899 but 666, group and serial not 0)."""
    m = re.fullmatch(r"(\d{3})-(\d{2})-(\d{4})", value)
    if m is None:
        return False
    area, group, serial = (int(g) for g in m.groups())
    return 0 < area < 900 and area != 666 and group > 0 and serial > 0


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


def _word_bounded(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or after.isalnum())


def _check_values(chat: Chat, found: list[str]) -> None:
    """Values: known kinds, trimmed, valid checksums, no value inside another (but a part of
    a name inside the name), every PERSON value written alone somewhere, word-bounded."""
    values = [e.value for e in chat.entities]
    persons = [e.value for e in chat.entities if e.kind == "PERSON"]
    _require(len(set(values)) == len(values), "duplicate values")
    for e in chat.entities:
        _require(e.kind in KINDS, f"unknown kind {e.kind}")
        _require(bool(e.value) and e.value == e.value.strip(), f"bad value {e.value!r}")
        _require(any(e.value in t for t in found), f"{e.value!r} is in no text")
        _require(e.kind != "IBAN_CODE" or iban_valid(e.value), f"bad IBAN {e.value!r}")
        _require(e.kind != "CREDIT_CARD" or luhn_valid(e.value), f"bad card {e.value!r}")
        _require(e.kind != "US_SSN" or ssn_valid(e.value), f"bad SSN {e.value!r}")
        for other in chat.entities:
            inside = other.value != e.value and e.value in other.value
            allowed = e.kind == other.kind == "PERSON"
            _require(not inside or allowed, f"{e.value!r} is inside {other.value!r}")
    for name in persons:
        alone = [(t, s) for t in found for s in standalone(t, name, persons)]
        _require(bool(alone), f"{name!r} is never written alone")
        for t, (a, b) in alone:
            _require(_word_bounded(t, a, b), f"{name!r} is inside a word: {t[a - 8 : b + 8]!r}")


def check_chat(chat: Chat) -> None:
    """Raise :class:`LabelError` unless the labels of ``chat`` are exact.

    Every entity value and technical token occurs verbatim in a text of the chat; IBANs,
    cards and SSNs are valid; no value contains another, except that the full name of a
    person contains the parts of it labelled on their own; every PERSON value is written
    alone (outside the longer name) at least once and always as whole words; no technical
    token overlaps a value, as strings or where they occur; whatever plainly looks like an
    e-mail address, IPv4 address or dashed SSN is (part of) a labelled value; the messages
    are well-formed.
    """
    try:
        _check_messages(chat)
        found = texts(chat)
        _check_values(chat, found)
        values = [e.value for e in chat.entities]
        _require(len(set(chat.technical)) == len(chat.technical), "duplicate technical tokens")
        for token in chat.technical:
            _require(bool(token.strip()), "empty technical token")
            _require(any(token in t for t in found), f"technical {token!r} is in no text")
            for v in values:
                _require(token not in v and v not in token, f"{token!r} overlaps {v!r}")
        for t in found:
            taken = [s for v in values for s in spans(t, v)]
            for token in chat.technical:
                for a, b in spans(t, token):
                    _require(not any(a < e and s < b for s, e in taken), f"{token!r} overlaps PII")
            for pattern in _LOOKS_LIKE_PII:
                for m in pattern.finditer(t):
                    _require(
                        any(m.start() < e and s < m.end() for s, e in taken),
                        f"unlabelled {m.group()!r}",
                    )
    except LabelError as e:
        raise LabelError(f"{chat.id}: {e}") from None


def check(chats: list[Chat]) -> None:
    """Raise :class:`LabelError` unless every chat's labels are exact (see :func:`check_chat`)."""
    ids = [chat.id for chat in chats]
    _require(len(set(ids)) == len(ids), "duplicate chat ids")
    for chat in chats:
        check_chat(chat)


def person_counts(chats: list[Chat]) -> dict[str, int]:
    """PERSON occurrences written in the chats (each text once, not per request):
    ``occurrences`` in all, ``parts`` of them a part of a name (given or family name alone,
    or after a title), ``later_parts`` of those in a turn after the first."""
    out = {"occurrences": 0, "parts": 0, "later_parts": 0}
    for chat in chats:
        forms = dict(chat.contexts)
        persons = [e.value for e in chat.entities if e.kind == "PERSON"]
        for i, text in turn_texts(chat):
            for name in persons:
                n = len(standalone(text, name, persons))
                part = any(f"form:{f}" in forms.get(name, ()) for f in PART_FORMS)
                out["occurrences"] += n
                out["parts"] += n * part
                out["later_parts"] += n * (part and i > 0)
    return out
