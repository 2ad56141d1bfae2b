"""Placeholders and restoration, without Presidio: stability, collisions, every split point."""

from __future__ import annotations

import asyncio
import itertools

import orjson

from hookgate.redaction.placeholders import PATTERN, Vault, placeholder
from hookgate.redaction.restore import Restorer, RestoringStream
from hookgate.wire.deltas import DeltaKey

SECRET = b"s" * 32
TEXT = DeltaKey("text", 0)
ARGS = DeltaKey("tool_arguments", 0, 0)


def test_placeholders_are_stable_distinct_keyed_and_shaped() -> None:
    a = placeholder(SECRET, "PERSON", "Alice Johnson")
    assert a == placeholder(SECRET, "PERSON", "Alice Johnson")
    assert a != placeholder(SECRET, "PERSON", "Alice Johnsen")
    assert a != placeholder(SECRET, "EMAIL_ADDRESS", "Alice Johnson")
    assert a != placeholder(b"t" * 32, "PERSON", "Alice Johnson")
    assert PATTERN.fullmatch(a) and a.startswith("<PERSON_")
    values = {placeholder(SECRET, "PERSON", f"Person {i}") for i in range(5000)}
    assert len(values) == 5000


def test_a_collision_within_a_request_gets_a_longer_code() -> None:
    vault = Vault(SECRET)
    token = vault.placeholder("PERSON", "Alice")
    renames = vault.merge({token: "Mallory"})  # another text claims the same code
    assert set(renames) == {token}
    longer = renames[token]
    assert PATTERN.fullmatch(longer) and len(longer) == len(token) + 6
    assert vault.values == {token: "Alice", longer: "Mallory"}
    assert vault.merge({token: "Alice"}) == {}


def _restorer(*pairs: tuple[str, str]) -> tuple[Restorer, dict[str, str]]:
    vault = Vault(SECRET)
    tokens = {value: vault.placeholder(kind, value) for kind, value in pairs}
    return Restorer(vault.values), tokens


def test_text_and_json_restoration() -> None:
    restorer, t = _restorer(("PERSON", 'Siobhan "Shiv" O\'Brien'), ("EMAIL_ADDRESS", "a@b.io"))
    person, email = t['Siobhan "Shiv" O\'Brien'], t["a@b.io"]
    invented = "<PERSON_AAAAAA>"
    assert restorer.text(f"Hi {person} <{email}> {invented}") == (
        f'Hi Siobhan "Shiv" O\'Brien <a@b.io> {invented}'
    )
    arguments = orjson.dumps({"to": person, "cc": [email]}).decode()
    restored = restorer.json_string(arguments)
    assert orjson.loads(restored) == {"to": 'Siobhan "Shiv" O\'Brien', "cc": ["a@b.io"]}
    escaped = arguments.replace("<", "\\u003c").replace(">", "\\u003e")
    assert orjson.loads(restorer.json_string(escaped))["to"] == 'Siobhan "Shiv" O\'Brien'


def _stream(restorer: Restorer, key: DeltaKey, chunks: list[str]) -> str:
    async def run() -> str:
        transform = RestoringStream(restorer)
        return "".join([await transform.delta(key, c) for c in chunks]) + await transform.end(key)

    return asyncio.run(run())


def test_every_split_point_of_a_streamed_text_is_restored() -> None:
    restorer, t = _restorer(("PERSON", "Alice Johnson"), ("PHONE_NUMBER", "459.502.4057"))
    text = f"<{t['Alice Johnson']}> calls {t['459.502.4057']}<x> a<b {t['Alice Johnson']}"
    expected = restorer.text(text)
    assert "Alice Johnson" in expected and "459.502.4057" in expected
    for i, j in itertools.combinations(range(len(text) + 1), 2):
        assert _stream(restorer, TEXT, [text[:i], text[i:j], text[j:]]) == expected, (i, j)
    assert _stream(restorer, TEXT, list(text)) == expected


def test_every_split_point_of_streamed_tool_arguments_is_restored() -> None:
    restorer, t = _restorer(("PERSON", 'Ann "A" Lee'), ("EMAIL_ADDRESS", "ann@x.io"))
    arguments = orjson.dumps({"name": t['Ann "A" Lee'], "to": t["ann@x.io"]}).decode()
    escaped = arguments.replace("<", "\\u003c").replace(">", "\\u003e")
    for raw in (arguments, escaped):
        for i, j in itertools.combinations(range(len(raw) + 1), 2):
            out = _stream(restorer, ARGS, [raw[:i], raw[i:j], raw[j:]])
            assert orjson.loads(out) == {"name": 'Ann "A" Lee', "to": "ann@x.io"}, (raw, i, j)


async def test_only_a_possible_placeholder_prefix_is_held_back() -> None:
    restorer, t = _restorer(("PERSON", "Alice"))
    transform = RestoringStream(restorer)
    assert await transform.delta(TEXT, "a < b and <PER") == "a < b and "
    assert await transform.delta(TEXT, "HAPS> ok") == "<PERHAPS> ok"  # not a known placeholder
    assert await transform.delta(TEXT, t["Alice"][:-1]) == ""
    assert await transform.end(TEXT) == t["Alice"][:-1]  # never completed: released unchanged
