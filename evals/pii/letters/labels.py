"""The labelled chats of the letters set, and the check that their labels are exact."""

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
"""The kinds an entity can have."""

FORMS = ("full", "given", "family")
"""How a PERSON value is written: the whole name, the given name alone, the family name
alone (next to a title or not: only the name part is the value)."""

PLACES = (
    "system",
    "email",
    "chatlog",
    "opening",
    "follow_up",
    "tool_arguments",
    "tool_result",
)
"""Where a value is written: the system prompt, a pasted e-mail, a pasted chat log, another
first user message, a later user message, a tool call's arguments, a tool's result."""


class LabelError(AssertionError):
    """Labels that are not exact (the generator writes the chat again from another seed)."""


@dataclass(frozen=True)
class Entity:
    """A PII value of a chat: its kind and its exact text."""

    kind: str
    value: str


@dataclass(frozen=True)
class Chat:
    """A labelled conversation in the OpenAI chat-completions format.

    ``turns[i]`` are the messages the client adds at turn ``i`` (a system message may open
    turn 0; a turn ends with a user or tool message); the evaluation puts the assistant's
    replies between turns. ``technical`` is text that must reach the model unchanged.
    ``contexts`` says for each PII value how (``form:...``) and where (``place:...``) it was
    written; a PERSON value without ``form:full`` is a part of a name.
    """

    id: str
    turns: tuple[tuple[dict[str, Any], ...], ...]
    entities: tuple[Entity, ...]
    technical: tuple[str, ...]
    stream: bool
    contexts: tuple[tuple[str, tuple[str, ...]], ...] = ()


_LOOKS_LIKE_PII = (
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}"),  # e-mail address
    re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])"),  # IPv4 address
    re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])"),  # dashed SSN
    re.compile(r"\+\d{1,3}[ -]\(?\d"),  # international phone number
    re.compile(r"(?<![\w])(?:\d[ -]?){12,18}\d(?!\d)"),  # card-like digit run
    re.compile(r"\b[A-Z]{2}\d{2} ?(?:[A-Z0-9]{4} ?){3,}"),  # IBAN-like
)
"""Text that plainly looks like PII: it must be (part of) a labelled value."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise LabelError(message)


def turn_texts(chat: Chat) -> list[tuple[int, str]]:
    """``(turn, text)`` for every text the model reads: contents, text parts, tool arguments."""
    out: list[tuple[int, str]] = []
    for i, turn in enumerate(chat.turns):
        for message in turn:
            content = message.get("content")
            if isinstance(content, str):
                out.append((i, content))
            elif isinstance(content, list):
                out += [(i, p["text"]) for p in content if p.get("type") == "text"]
            for call in message.get("tool_calls") or ():
                out.append((i, call["function"]["arguments"]))
    return out


def texts(chat: Chat) -> list[str]:
    """Every text of ``chat`` the model reads (see :func:`turn_texts`)."""
    return [text for _, text in turn_texts(chat)]


def spans(text: str, needle: str) -> Iterator[tuple[int, int]]:
    """Every occurrence of ``needle`` in ``text``, overlapping ones included."""
    at = text.find(needle)
    while at != -1:
        yield at, at + len(needle)
        at = text.find(needle, at + 1)


def standalone(text: str, value: str, values: Sequence[str]) -> list[tuple[int, int]]:
    """The occurrences of ``value`` outside every occurrence of a longer value of ``values``
    (a given name inside the full name belongs to the full name)."""
    longer = [s for v in values if value in v and v != value for s in spans(text, v)]
    return [(a, b) for a, b in spans(text, value) if not any(s <= a and b <= e for s, e in longer)]


def iban_valid(value: str) -> bool:
    """The ISO 13616 check digits of an IBAN, compact or in groups."""
    compact = value.replace(" ", "")
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{8,30}", compact):
        return False
    return int("".join(str(int(c, 36)) for c in compact[4:] + compact[:4])) % 97 == 1


def luhn_valid(value: str) -> bool:
    """The Luhn check of a card number, with spaces or dashes between groups."""
    if re.search(r"[^\d -]", value):
        return False
    digits = [int(c) for c in value if c.isdigit()]
    total = sum(
        d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(digits[::-1])
    )
    return 13 <= len(digits) <= 19 and total % 10 == 0


def ssn_valid(value: str) -> bool:
    """A dashed US SSN in the issued ranges (area 001-899 but 666; group, serial not 0)."""
    m = re.fullmatch(r"(\d{3})-(\d{2})-(\d{4})", value)
    if m is None:
        return False
    area, group, serial = (int(g) for g in m.groups())
    return 0 < area < 900 and area != 666 and group > 0 and serial > 0


def _check_messages(chat: Chat) -> None:
    _require(bool(chat.turns), "no turns")
    for i, turn in enumerate(chat.turns):
        _require(bool(turn), f"turn {i} is empty")
        open_calls: set[str] = set()
        for j, message in enumerate(turn):
            role = message.get("role")
            _require(role in ("system", "user", "assistant", "tool"), f"role {role!r}")
            _require(role != "system" or (i, j) == (0, 0), "a system message not first")
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
                open_calls.add(call["id"])
            if role == "tool":
                _require(message.get("tool_call_id") in open_calls, "a result without its call")
                open_calls.discard(message["tool_call_id"])
        _require(turn[-1]["role"] in ("user", "tool"), f"turn {i} ends with {turn[-1]['role']}")
        _require(not open_calls, f"turn {i} leaves tool calls unanswered")


def _bounded(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or after.isalnum())


def check_chat(chat: Chat) -> None:
    """Raise :class:`LabelError` unless the labels of ``chat`` are exact.

    Messages are well-formed; every value and technical token is written in the chat; kinds
    are known; IBANs, cards and SSNs are valid; no value is inside another, except the parts
    of a name inside the name; every PERSON value stands alone (outside the longer name) at
    least once, always as whole words; no technical token overlaps a value, as strings or
    where they are written; whatever plainly looks like an e-mail address, IPv4 address,
    SSN, international phone number, card number or IBAN is (part of) a labelled value; a
    control chat (its id ends with ``-control``) has no PII at all.
    """
    try:
        _check_messages(chat)
        found = texts(chat)
        values = [e.value for e in chat.entities]
        persons = [e.value for e in chat.entities if e.kind == "PERSON"]
        _require(len(set(values)) == len(values), "duplicate values")
        _require(not chat.id.endswith("-control") or not values, "PII in a control chat")
        for e in chat.entities:
            _require(e.kind in KINDS, f"unknown kind {e.kind}")
            _require(bool(e.value) and e.value == e.value.strip(), f"bad value {e.value!r}")
            _require(any(e.value in t for t in found), f"{e.value!r} is in no text")
            _require(e.kind != "IBAN_CODE" or iban_valid(e.value), f"bad IBAN {e.value!r}")
            _require(e.kind != "CREDIT_CARD" or luhn_valid(e.value), f"bad card {e.value!r}")
            _require(e.kind != "US_SSN" or ssn_valid(e.value), f"bad SSN {e.value!r}")
            for other in chat.entities:
                inside = other.value != e.value and e.value in other.value
                _require(
                    not inside or e.kind == other.kind == "PERSON",
                    f"{e.value!r} is inside {other.value!r}",
                )
        for name in persons:
            alone = [(t, s) for t in found for s in standalone(t, name, persons)]
            _require(bool(alone), f"{name!r} never stands alone")
            for t, (a, b) in alone:
                _require(_bounded(t, a, b), f"{name!r} inside a word: {t[max(0, a - 8) : b + 8]!r}")
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


def check_all(chats: Sequence[Chat]) -> None:
    """Raise :class:`LabelError` unless every chat's labels are exact and ids are unique."""
    ids = [c.id for c in chats]
    _require(len(set(ids)) == len(ids), "duplicate chat ids")
    for chat in chats:
        check_chat(chat)


def person_counts(chats: Sequence[Chat]) -> dict[str, int]:
    """PERSON occurrences as written (each text once): ``occurrences`` in all, ``parts`` of
    them parts of a name (no ``form:full``), ``later_parts`` those in a turn after the first."""
    out = {"occurrences": 0, "parts": 0, "later_parts": 0}
    for chat in chats:
        forms = dict(chat.contexts)
        persons = [e.value for e in chat.entities if e.kind == "PERSON"]
        for i, text in turn_texts(chat):
            for name in persons:
                n = len(standalone(text, name, persons))
                part = "form:full" not in forms.get(name, ())
                out["occurrences"] += n
                out["parts"] += n * part
                out["later_parts"] += n * (part and i > 0)
    return out
