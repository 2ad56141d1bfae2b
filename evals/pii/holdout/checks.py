"""The labels of the held-out set, and the check that they are exact."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

KINDS = frozenset(
    {
        "PERSON",
        "STREET_ADDRESS",
        "EMAIL_ADDRESS",
        "PHONE_NUMBER",
        "CREDIT_CARD",
        "US_SSN",
        "IBAN_CODE",
        "IP_ADDRESS",
        "SECRET",
    }
)
"""The entity kinds a label can have."""


@dataclass(frozen=True)
class Entity:
    """One PII value of a chat."""

    kind: str  # one of KINDS
    value: str  # the exact substring as it appears in the chat text


@dataclass(frozen=True)
class Chat:
    """One labelled conversation."""

    id: str
    # NEW OpenAI chat messages appended at each turn; turn 0 may start with a system message;
    # each turn ends with a user (or tool) message
    turns: tuple[tuple[dict[str, Any], ...], ...]
    entities: tuple[Entity, ...]  # every PII value appearing in the chat's texts
    technical: tuple[str, ...]  # non-PII technical tokens appearing verbatim
    stream: bool


_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b")
_IPV4_RE = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)")
_SSN_RE = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")
_KEY_RE = re.compile(
    r"sk-(?:proj|ant)-|sk_live_|AKIA[0-9A-Z]{16}|ghp_|github_pat_|xox[abp]-|AIza[\w-]{30}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|eyJ[\w-]+\.eyJ"
)


def _req(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(what)


def _texts(chat: Chat) -> list[str]:
    out: list[str] = []
    for turn in chat.turns:
        for m in turn:
            content = m.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out += [p["text"] for p in content if p.get("type") == "text"]
            for tc in m.get("tool_calls") or ():
                out.append(tc["function"]["arguments"])
    return out


def _occurrences(text: str, needle: str) -> Iterator[tuple[int, int]]:
    start = text.find(needle)
    while start != -1:
        yield start, start + len(needle)
        start = text.find(needle, start + 1)


def _check_shape(chat: Chat, values: set[str]) -> None:
    _req(isinstance(chat.stream, bool), "stream is not a bool")
    _req(len(chat.turns) >= 1, "no turns")
    for ti, turn in enumerate(chat.turns):
        _req(len(turn) >= 1, f"turn {ti} is empty")
        pending: set[str] = set()
        for mi, m in enumerate(turn):
            role = m.get("role")
            _req(role in ("system", "user", "assistant", "tool"), f"bad role {role!r}")
            _req(role != "system" or (ti == 0 and mi == 0), "system message not first")
            if "name" in m:
                name = m["name"]
                _req(bool(_NAME_RE.match(name)), f"bad name {name!r}")
                _req(not any(v in name for v in values), f"name {name!r} holds PII")
            content = m.get("content")
            if isinstance(content, list):
                _req(
                    all(p.get("type") == "text" and isinstance(p.get("text"), str) for p in content)
                    and len(content) >= 1,
                    "bad content parts",
                )
            else:
                _req(
                    isinstance(content, str) or (content is None and bool(m.get("tool_calls"))),
                    f"bad content in a {role} message",
                )
            for tc in m.get("tool_calls") or ():
                _req(role == "assistant", "tool_calls outside an assistant message")
                _req(isinstance(json.loads(tc["function"]["arguments"]), dict), "bad arguments")
                pending.add(tc["id"])
            if role == "tool":
                _req(m.get("tool_call_id") in pending, "tool result without its call")
                pending.discard(m["tool_call_id"])
        _req(turn[-1]["role"] in ("user", "tool"), f"turn {ti} ends with {turn[-1]['role']}")
        _req(not pending, f"turn {ti} leaves tool calls unanswered")


def check_chat(chat: Chat) -> None:
    """Raise AssertionError unless the labels of ``chat`` are exact and consistent."""
    values = [e.value for e in chat.entities]
    _req(len(set(values)) == len(values), f"{chat.id}: duplicate entity values")
    for e in chat.entities:
        _req(e.kind in KINDS, f"{chat.id}: unknown kind {e.kind}")
        _req(bool(e.value) and e.value == e.value.strip(), f"{chat.id}: bad value {e.value!r}")
    _req(len(set(chat.technical)) == len(chat.technical), f"{chat.id}: duplicate tokens")
    _check_shape(chat, set(values))
    texts = _texts(chat)
    for v in values:
        _req(any(v in t for t in texts), f"{chat.id}: {v!r} not in any text")
    for tok in chat.technical:
        _req(bool(tok.strip()), f"{chat.id}: empty technical token")
        _req(any(tok in t for t in texts), f"{chat.id}: technical {tok!r} not in any text")
        for v in values:
            _req(tok not in v and v not in tok, f"{chat.id}: {tok!r} overlaps {v!r}")
    for t in texts:
        spans = [s for v in values for s in _occurrences(t, v)]
        for tok in chat.technical:
            for a, b in _occurrences(t, tok):
                _req(
                    not any(a < e and s < b for s, e in spans),
                    f"{chat.id}: technical {tok!r} overlaps PII in the text",
                )
        # Anything that plainly looks like PII must be (part of) a labelled value.
        for rx in (_EMAIL_RE, _IPV4_RE, _SSN_RE, _KEY_RE):
            for m in rx.finditer(t):
                _req(
                    any(m.start() < e and s < m.end() for s, e in spans),
                    f"{chat.id}: unlabelled {m.group()!r}",
                )


def check(chats: list[Chat]) -> None:
    """Raise AssertionError unless every chat's labels are exact and consistent.

    Every entity value and technical token occurs verbatim in a text of its chat (string
    content, text parts, tool-call arguments); no technical token overlaps a PII value, as a
    string or where it occurs; anything that plainly looks like an e-mail address, IPv4
    address, dashed SSN or API key is covered by a label; and the messages are well-formed.
    """
    ids = [chat.id for chat in chats]
    _req(len(set(ids)) == len(ids), "duplicate chat ids")
    for chat in chats:
        check_chat(chat)
