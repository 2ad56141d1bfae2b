"""The labelled evaluation: leaks, over-redaction, restoration and consistency, measured.

Every chat of ``evals.pii.corpus`` (Faker with a fixed seed plus hand-written hard cases)
is played through the real proxy with the real ``openai`` client, turn by turn, streamed
or not, against an upstream that echoes the last user message as the model saw it. Then:

* **leaks** — an entity occurrence leaks when its value is still in what the upstream
  received (per request, every request of the chat);
* **over-redaction** — a technical token (version, path, product...) is removed when it is
  in the request but not in what the upstream received;
* **restoration** — the reply the client got must equal the echo of the original text;
* **consistency** — aligning each original text with its redacted form gives the value
  behind every placeholder: one value must keep one placeholder across all turns of a
  chat, and no placeholder may stand for two values anywhere.

Two sets: ``evals.pii.corpus`` (the development set the recognizers were tuned on) and
``evals.pii.holdout`` (written independently, from other templates, and never tuned on).
The figures are printed (``pytest -s``) and written to ``$PII_EVAL_REPORT.<set>.json``
when set; the bars are those of the pii issue.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import openai
import orjson
import pytest

from evals.pii.corpus import Chat
from hookgate.redaction.placeholders import PATTERN, placeholder
from tests.conftest import ProxyFactory, openai_client
from tests.fakes import Echo, FakeUpstream

STRUCTURED = {"EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE",
              "IP_ADDRESS", "SECRET"}  # fmt: skip
PREFIX = "You said: "
SECRET = b"eval-secret-0123456789"


@dataclass
class Tally:
    occurrences: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    leaks: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    leaked_values: list[tuple[str, str]] = field(default_factory=list)
    technical: int = 0
    removed: list[str] = field(default_factory=list)
    replies: int = 0
    restored: int = 0
    unrestored: list[str] = field(default_factory=list)
    values_by_placeholder: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    repeated_values: int = 0
    consistent_values: int = 0
    unaligned: int = 0


def texts_of(messages: list[Any]) -> list[str]:
    """Every string the model reads, in order (content, parts, tool-call arguments)."""
    out: list[str] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [p["text"] for p in content if isinstance(p, dict) and "text" in p]
        for call in m.get("tool_calls") or []:  # compact, as the proxy re-encodes them
            out.append(orjson.dumps(orjson.loads(call["function"]["arguments"])).decode())
    return out


def decoded(raw: bytes) -> str:
    """The upstream body as text, JSON strings decoded (so escapes do not hide a value)."""
    body = orjson.loads(raw)
    strings: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            strings.append(value)
            try:
                inner = orjson.loads(value)
            except orjson.JSONDecodeError:
                return
            if isinstance(inner, dict | list):
                walk(inner)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk(body)
    return "\n".join(strings)


def align(original: str, redacted: str) -> list[tuple[str, str]] | None:
    """``(placeholder, original substring)`` pairs of a text and its redacted form.

    The redacted text becomes a regex: its literal pieces escaped, each placeholder a group
    (a placeholder seen before, a back-reference), matched against the whole original. A
    match can be ambiguous (a multi-line address next to a phone number), so every pair is
    verified against the placeholder's keyed hash; lazy groups are tried, then greedy ones.
    ``None`` when neither gives a verified alignment.
    """
    for group in (".+?", ".+"):
        groups: dict[str, str] = {}
        parts: list[str] = []
        position = 0
        for match in PATTERN.finditer(redacted):
            parts.append(re.escape(redacted[position : match.start()]))
            token = match.group(0)
            if token in groups:
                parts.append(f"(?P={groups[token]})")
            else:
                groups[token] = f"g{len(groups)}"
                parts.append(f"(?P<{groups[token]}>{group})")
            position = match.end()
        parts.append(re.escape(redacted[position:]))
        found = re.fullmatch("".join(parts), original, flags=re.S)
        if found is not None:
            pairs = [(t, found.group(g)) for t, g in groups.items()]
            if all(_verified(t, v) for t, v in pairs):
                return pairs
    return None


def _verified(token: str, value: str) -> bool:
    kind = token[1 : token.rindex("_")]
    return token in (placeholder(SECRET, kind, value), placeholder(SECRET, kind, value, 12))


def last_user_text(messages: list[Any]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            content = m["content"]
            return content if isinstance(content, str) else "".join(p["text"] for p in content)
    return ""


def play(client: openai.OpenAI, upstream: FakeUpstream, chat: Chat, tally: Tally) -> None:
    messages: list[Any] = []
    seen: dict[str, set[str]] = defaultdict(set)  # value -> placeholders, this chat
    for turn in chat.turns:
        messages += [dict(m) for m in turn]
        upstream.push(Echo(prefix=PREFIX, pieces=7))
        if chat.stream:
            stream = client.chat.completions.create(model="m", messages=messages, stream=True)
            reply = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        else:
            answer = client.chat.completions.create(model="m", messages=messages)
            reply = answer.choices[0].message.content or ""
        raw = upstream.last.body
        received = decoded(raw)
        sent_texts = "\n".join(texts_of(messages))
        for entity in chat.entities:
            n = sent_texts.count(entity.value)
            if n:
                tally.occurrences[entity.kind] += n
                if entity.value in received:
                    tally.leaks[entity.kind] += n
                    tally.leaked_values.append((entity.kind, entity.value))
        for token in chat.technical:
            if token in sent_texts:
                tally.technical += 1
                if token not in received:
                    tally.removed.append(token)
        tally.replies += 1
        expected = PREFIX + last_user_text(messages)
        if reply == expected:
            tally.restored += 1
        else:
            tally.unrestored.append(chat.id)
        upstream_messages = orjson.loads(raw)["messages"]
        for original, redacted in zip(
            texts_of(messages), texts_of(upstream_messages), strict=False
        ):
            pairs = align(original, redacted)
            if pairs is None:
                tally.unaligned += 1
                continue
            for token, value in pairs:
                seen[value].add(token)
                tally.values_by_placeholder[token].add(value)
        messages.append({"role": "assistant", "content": reply})
    for tokens in seen.values():
        tally.repeated_values += 1
        tally.consistent_values += len(tokens) == 1


def rate(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


CORPORA = {
    "dev": "evals.pii.corpus",  # the set the recognizers were tuned on
    "holdout": "evals.pii.holdout",  # written independently, never tuned on
}


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_labelled_corpus_meets_the_bars(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    chats: list[Chat] = importlib.import_module(CORPORA[name]).corpus()
    url = make_proxy(f"policies:\n  - pii: {{secret: '{SECRET.decode()}'}}\n")
    tally = Tally()
    with openai_client(url) as client:
        for chat in chats:
            play(client, upstream, chat, tally)
    structured = sum(tally.occurrences[k] for k in STRUCTURED)
    structured_leaks = sum(tally.leaks[k] for k in STRUCTURED)
    fuzzy = sum(tally.occurrences[k] for k in ("PERSON", "STREET_ADDRESS"))
    fuzzy_leaks = sum(tally.leaks[k] for k in ("PERSON", "STREET_ADDRESS"))
    shared = {t: v for t, v in tally.values_by_placeholder.items() if len(v) > 1}
    report = {
        "chats": len(chats),
        "requests": tally.replies,
        "occurrences": dict(tally.occurrences),
        "leaks": dict(tally.leaks),
        "structured_leak_rate": rate(structured_leaks, structured),
        "names_addresses_leak_rate": rate(fuzzy_leaks, fuzzy),
        "technical_tokens": tally.technical,
        "technical_removed_rate": rate(len(tally.removed), tally.technical),
        "restored_rate": rate(tally.restored, tally.replies),
        "consistent_rate": rate(tally.consistent_values, tally.repeated_values),
        "placeholders": len(tally.values_by_placeholder),
        "unaligned_texts": tally.unaligned,
        "shared_placeholders": len(shared),
        "leaked_examples": sorted(set(tally.leaked_values))[:40],
        "removed_examples": sorted(set(tally.removed))[:40],
        "unrestored_chats": sorted(set(tally.unrestored))[:20],
        "shared_examples": {t: sorted(v) for t, v in list(shared.items())[:10]},
    }
    with capsys.disabled():
        print(f"\nPII evaluation ({name}):", json.dumps(report, indent=1, ensure_ascii=False))
    if os.environ.get("PII_EVAL_REPORT"):
        with open(f"{os.environ['PII_EVAL_REPORT']}.{name}.json", "w") as out:
            json.dump(report, out, indent=1, ensure_ascii=False)
    assert report["structured_leak_rate"] <= 0.005
    assert report["names_addresses_leak_rate"] <= 0.02
    assert report["technical_removed_rate"] <= 0.03
    assert report["restored_rate"] >= 0.995
    assert report["consistent_rate"] >= 0.99
    assert tally.unaligned <= 0.01 * tally.replies
    assert shared == {}
    assert report["placeholders"] > 100 and report["technical_tokens"] > 100  # not vacuous
