"""The held-out set: labelled agent chats for scoring a PII redaction proxy.

``corpus(seed, size)`` builds ``size`` chats, deterministically for a given seed;
``check(chats)`` verifies their labels. ``python -m evals.pii.holdout [--seed N] [--size N]``
prints what a corpus holds.

The set is written independently of the detector and of :mod:`evals.pii.corpus` (it shares
neither code nor data with it), and imitates how people and agents actually write rather than
filling one sentence template: casual messages with typos, pasted e-mails with signatures,
forwarded headers, CSV exports and markdown tables, config files and ``.env`` files with keys
in them, log lines, shipping labels, HR and medical-office notes, transfer requests, call
transcripts, Slack threads, agent memory in system prompts, tool calls whose arguments and
results carry PII, and a few messages in other languages. About a third of the chats carry no
PII at all but are dense with technical tokens (product names, versions, error codes, ticket
ids, paths, hosts, hashes, UUIDs, image tags, SQL, commands) that a redactor must leave alone.

Labels. ``Chat.entities`` lists every PII value of the chat exactly as written. A title is not
part of a name ("Dr. Helen Cho" is labelled "Helen Cho"); a phone extension is not part of the
number; an address is labelled whole (street, city, state and ZIP, on one line or two); a
private key is labelled as its whole PEM block; an Outlook-style "Last, First" is labelled as
written. Names are always capitalised. ``Chat.technical`` lists tokens that appear verbatim and
are not PII; no technical token overlaps a PII value. Text that is neither (company and city
names, dates, masked card digits, the prose around values) is in neither list, so it should be
scored as neutral.

This package holds only the generation logic; what the chats say is data in its folder:
``vocabulary.json`` and ``formats.json`` (words and the shapes of values), the scenario
scripts ``pii_scenarios.json`` and ``tech_scenarios.json``, the procedures they share
(``pieces.json``) and ``follow_ups.json`` (later turns). :mod:`.script` runs the scripts,
:mod:`.values` makes the values (on :mod:`.writer`, which records the labels),
:mod:`.checks` verifies the labels.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

from evals.pii.holdout.checks import KINDS, Chat, Entity, check, check_chat
from evals.pii.holdout.script import Script
from evals.pii.holdout.values import Context
from evals.pii.holdout.writer import data, message

__all__ = ["KINDS", "Chat", "Entity", "check", "corpus"]

Msg = dict[str, Any]
Turn = list[Msg]

# ---------------------------------------------------------------------------------------------
# Follow-up turns
# ---------------------------------------------------------------------------------------------


def _pii_follow(c: Context, script: Script) -> Turn:
    """A later turn of a PII chat: the assistant acts on earlier values, the user adds more."""
    r, follow = c.r, data("follow_ups")
    flat = [(k, v) for k, v in c.prior(one_line=True) if k in follow["lookups"]]
    if c.theme in follow["narrow_lookups"]:
        flat = [(k, v) for k, v in flat if k in follow["narrow_lookups"][c.theme]]
    if flat and r.random() < 0.3:
        turn: Turn = script.call("follow_lookup", *r.choice(flat))
        return turn
    shown = [(k, v) for k, v in c.prior(one_line=True) if k in follow["echo"]]
    bits = [
        r.choice(follow["echo"][kind]).format(v=value)
        for kind, value in r.sample(shown, min(len(shown), r.randint(1, 2)))
    ]
    tokens = [t for t in c.tech if "\n" not in t]
    if tokens and (not bits or c.theme in follow["recall_themes"]):
        tok = r.choice(c.focal or tokens)
        bits.append(c.pick([s.format(tok=tok) for s in follow["recall"]]))
    if any(k == "SECRET" for k in c.ents.values()):
        bits.insert(0, follow["revoke"])
    if not bits:
        bits.append(follow["done"])
    bits.append(c.pick(follow["closings"]))
    user_bits = []
    repeatable = [(k, v) for k, v in c.prior(one_line=True) if k in follow["repeat"]]
    if repeatable and r.random() < 0.65:
        kind, value = r.choice(repeatable)
        user_bits.append(c.say(r.choice(follow["repeat"][kind]), v=value))
    user_bits.append(script.call("new_info"))
    r.shuffle(user_bits)
    text = user_bits[0]
    joiners = follow["joiners"]
    for bit in user_bits[1:]:
        after_sentence = text[-1] in ".!?"
        text += c.pick(joiners["after_sentence" if after_sentence else "otherwise"]) + bit
    return [message("assistant", " ".join(b for b in bits if b)), message("user", text)]


# ---------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------


def _as_parts(r: random.Random, text: str) -> list[dict[str, str]]:
    chunks = text.split("\n\n")
    if len(chunks) == 1 or r.random() < 0.3:
        return [{"type": "text", "text": text}]
    k = min(len(chunks), r.choice((2, 2, 3)))
    cuts = sorted(r.sample(range(1, len(chunks)), k - 1))
    out, prev = [], 0
    for cut in [*cuts, len(chunks)]:
        out.append("\n\n".join(chunks[prev:cut]))
        prev = cut
    return [{"type": "text", "text": t} for t in out]


_PARTS_P = {"user": 0.22, "system": 0.12, "tool": 0.1, "assistant": 0.05}
_NAME_P = {"user": 0.15, "system": 0.05, "assistant": 0.08}


def _decorate(c: Context, turns: list[Turn]) -> None:
    """Split some contents into text parts and give some messages a ``name``."""
    names = data("vocabulary")["message_names"]
    for turn in turns:
        for m in turn:
            role = m["role"]
            if isinstance(m.get("content"), str) and c.chance(_PARTS_P[role]):
                m["content"] = _as_parts(c.r, m["content"])
            if role in _NAME_P and "name" not in m and c.chance(_NAME_P[role]):
                m["name"] = c.pick(names[role])


_ATTEMPTS = 60


def _build(
    seed: int, i: int, scenario: str, slot: int, technical: bool, multi: bool, stream: bool
) -> Chat:
    """Chat ``i``, written by ``scenario``: retried from a new seed until its labels hold."""
    scenarios = data("tech_scenarios" if technical else "pii_scenarios")["scenarios"]
    failure: AssertionError | None = None
    for attempt in range(_ATTEMPTS):
        r = random.Random(f"pii-holdout/{seed}/{i}/{attempt}")
        c = Context(r, r.randint(2, 6) if multi else 1, slot)
        script = Script(c)
        try:
            env = {"slot": c.slot, "max_turns": c.max_turns}
            turns: list[Turn] = script.run(scenarios[scenario], env)
            if not 1 <= len(turns) <= c.max_turns:
                raise AssertionError(f"{scenario} wrote {len(turns)} turns")
            while len(turns) < c.max_turns:
                turns.append(script.call("tech_follow") if technical else _pii_follow(c, script))
            _decorate(c, turns)
            chat = Chat(
                id=f"holdout-{seed}-{i:04d}",
                turns=tuple(tuple(t) for t in turns),
                entities=tuple(Entity(kind, value) for value, kind in c.ents.items()),
                technical=tuple(c.tech),
                stream=stream,
            )
            check_chat(chat)
            if technical and chat.entities:
                raise AssertionError("a technical chat holds PII")
        except AssertionError as e:
            failure = e
            continue
        return chat
    raise AssertionError(f"chat {i} ({scenario}): {failure}")


def _deck(r: random.Random, items: list[str]) -> Iterator[str]:
    while True:
        order = list(items)
        r.shuffle(order)
        yield from order


def corpus(seed: int = 2027, size: int = 200) -> list[Chat]:
    """``size`` labelled chats, the same ones for the same ``seed`` and ``size``.

    35% are technical chats without PII, 45% have several turns (2-6), 40% are streamed; the
    scenarios are dealt from shuffled decks so every kind of chat appears.
    """
    plan = random.Random(f"pii-holdout-plan/{seed}")

    def flags(share: float) -> list[bool]:
        n = round(size * share)
        out = [True] * n + [False] * (size - n)
        plan.shuffle(out)
        return out

    technical, multi, stream = flags(0.35), flags(0.45), flags(0.40)
    pii_deck = _deck(plan, data("pii_scenarios")["deck"])
    tech_deck = _deck(plan, data("tech_scenarios")["deck"])
    dealt: Counter[str] = Counter()
    chats = []
    for i in range(size):
        scenario = next(tech_deck if technical[i] else pii_deck)
        slot = dealt[scenario]
        dealt[scenario] += 1
        chats.append(_build(seed, i, scenario, slot, technical[i], multi[i], stream[i]))
    return chats
