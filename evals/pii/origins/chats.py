"""The chats of the origins set: ordinary sentences about people, then the people again by part.

A PII chat may open with a system prompt carrying customer context (or a plain one), then
the user introduces themself, asks about one to three people or pastes an e-mail (with its
greeting and sign-off) — the full names, next to e-mail addresses, phones, street lines,
cards, IBANs, SSNs and IPs. Later turns (up to three) come back to the same people by part:
the given name alone, the family name alone or after a title, or the full name again. Some
turns call a tool whose arguments and result carry the names; some user messages are arrays
of content parts; some chats are streamed. A technical control chat holds no personal data,
only agent traffic (Markdown, code, paths, commands, schemas, product names, errors).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evals.pii.origins.data import load
from evals.pii.origins.labels import Chat, Entity, LabelError, check_chat, texts
from evals.pii.origins.writer import Message, Turn, Writer, letters

HALVES = ("dev", "heldout")
"""The two halves: names from mimesis and hand-written names, each with its own templates."""

KINDS = ("self", "about", "email", "control")
"""What a chat opens with: the user introducing themself, a request about people, a pasted
e-mail, or (a technical control) no personal data at all."""

_OPENINGS = {"self": "openings_self", "about": "openings_about", "email": "emails"}
_FOLLOW_UPS = {"self": "follow_ups_self", "about": "follow_ups_about", "email": "follow_ups_self"}


@dataclass(frozen=True)
class Plan:
    """What one chat holds, dealt by :func:`plans` before it is written."""

    kind: str  # one of KINDS
    turns: int
    stream: bool
    system: str  # "pii", "plain" or "none"
    tools: bool


def _user(w: Writer, segments: Sequence[str]) -> Message:
    """A user message: one string, or (30%) one content part per segment.

    Parts but the last end with the blank line that separates the segments in the string
    form, so the parts joined are the same text.
    """
    if (len(segments) > 1 and w.chance(0.3)) or w.chance(0.05):
        parts = [s + "\n\n" for s in segments[:-1]] + [segments[-1]]
        return {"role": "user", "content": [{"type": "text", "text": t} for t in parts]}
    return {"role": "user", "content": "\n\n".join(segments)}


def _pick(w: Writer, pool: Sequence[Any], used: set[str] | None = None) -> Any:
    """A template of ``pool`` that names only people already in the chat (and not yet used)."""
    fits = [t for t in pool if letters(t) <= set(w.cast) and str(t) not in (used or ())]
    if not fits:
        raise LabelError("no template fits")
    choice = w.r.choice(fits)
    if used is not None:
        used.add(str(choice))
    return choice


def _tool_flow(w: Writer, flows: Sequence[dict[str, Any]]) -> Turn:
    """An assistant message calling a tool, and the tool's result."""
    flow = _pick(w, flows)
    w.place = "tool_arguments"
    say = w.fill(flow["say"]) if flow["say"] else None
    arguments = w.dumps(w.fill_obj(flow["arguments"]))
    w.place = "tool_result"
    result = flow["result"]
    content = w.fill(result) if isinstance(result, str) else w.dumps(w.fill_obj(result))
    call_id = w.call_id()
    function = {"name": flow["function"], "arguments": arguments}
    call = {"id": call_id, "type": "function", "function": function}
    return [
        {"role": "assistant", "content": say, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]


def _follow_ups(w: Writer, plan: Plan, templates: dict[str, Any]) -> list[Any]:
    """The templates a later turn can use; while only A is in the chat, some bring in B."""
    pool: list[Any] = templates[_FOLLOW_UPS[plan.kind]] + templates["follow_ups_any"]
    return pool + templates["follow_ups_new"] if "B" not in w.cast else pool


def _system(w: Writer, plan: Plan, templates: dict[str, Any]) -> Turn:
    if plan.system == "none":
        return []
    w.place = "system"
    return [{"role": "system", "content": w.fill(w.r.choice(templates[f"systems_{plan.system}"]))}]


def _pii_turns(w: Writer, plan: Plan, templates: dict[str, Any]) -> list[Turn]:
    tool_turns = set(w.r.sample(range(plan.turns), 1 if w.chance(0.8) else min(2, plan.turns)))
    used: set[str] = set()
    turns: list[Turn] = []
    for i in range(plan.turns):
        turn: Turn = _system(w, plan, templates) if i == 0 else []
        if i == 0:
            w.place = "email" if plan.kind == "email" else "opening"
            segments = [w.fill(w.r.choice(templates[_OPENINGS[plan.kind]]))]
            chance = 0.3
        else:
            w.place = "follow_up"
            segments = [w.fill(_pick(w, _follow_ups(w, plan, templates), used))]
            if w.chance(0.5):
                segments.append(w.fill(_pick(w, _follow_ups(w, plan, templates), used)))
            chance = 0.15
        if w.chance(chance):
            w.place = "note"
            segments.insert(
                w.r.randint(1, len(segments)), w.fill(w.r.choice(templates["tech_notes"]))
            )
        turn.append(_user(w, segments))
        if plan.tools and i in tool_turns:
            turn += _tool_flow(w, templates["tools"])
        turns.append(turn)
    return turns


def _control_turns(w: Writer, plan: Plan, templates: dict[str, Any]) -> list[Turn]:
    tool_turn = w.r.randrange(plan.turns) if plan.tools else -1
    asked = w.r.sample(templates["controls"], plan.turns)
    turns: list[Turn] = []
    for i, text in enumerate(asked):
        turn: Turn = _system(w, plan, templates) if i == 0 else []
        w.place = "control"
        turn.append(_user(w, [w.fill(text)]))
        if i == tool_turn:
            turn += _tool_flow(w, templates["control_tools"])
        turns.append(turn)
    if w.ents:
        raise LabelError("a control chat with personal data")
    return turns


def write_chat(half: str, chat_id: str, plan: Plan, r: random.Random) -> Chat:
    """One chat of ``half`` following ``plan``, from the random source ``r``."""
    templates = load(f"templates_{half}")
    w = Writer(r, half)
    write = _control_turns if plan.kind == "control" else _pii_turns
    turns = tuple(tuple(turn) for turn in write(w, plan, templates))
    chat = Chat(
        id=chat_id,
        turns=turns,
        entities=tuple(Entity(kind, value) for value, kind in w.ents.items()),
        technical=tuple(w.tech),
        stream=plan.stream,
        contexts=tuple((v, tuple(sorted(tags))) for v, tags in w.tags.items()),
    )
    w.verify(texts(chat))
    return chat


def plans(half: str, seed: int, size: int) -> list[Plan]:
    """The plans of ``size`` chats of ``half``.

    12% are technical controls (1-3 turns, 30% with a plain system prompt, 35% calling a
    tool). The others open (dealt from a shuffled deck) with the user introducing themself
    (7 in 20), a request about people (9 in 20) or a pasted e-mail (4 in 20); 35% start
    with a system prompt carrying customer context and 20% with a plain one; they have 1
    (5%), 2 (25%), 3 (40%) or 4 turns (30%); half call tools. 35% of all chats are streamed.
    """
    r = random.Random(f"pii-origins/{half}/plan/{seed}")

    def share(p: float) -> list[bool]:
        flags = [i < round(size * p) for i in range(size)]
        r.shuffle(flags)
        return flags

    control, stream = share(0.12), share(0.35)
    deck: list[str] = []
    out = []
    for i in range(size):
        if control[i]:
            system = "plain" if r.random() < 0.3 else "none"
            out.append(Plan("control", r.randint(1, 3), stream[i], system, r.random() < 0.35))
            continue
        if not deck:
            deck = ["self"] * 7 + ["about"] * 9 + ["email"] * 4
            r.shuffle(deck)
        system = r.choices(("pii", "plain", "none"), (35, 20, 45))[0]
        turns = r.choices((1, 2, 3, 4), (5, 25, 40, 30))[0]
        out.append(Plan(deck.pop(), turns, stream[i], system, r.random() < 0.5))
    return out


ATTEMPTS = 60


def build(half: str, seed: int, i: int, plan: Plan) -> Chat:
    """Chat ``i`` of ``half`` for ``seed``, written again from a new seed until it checks."""
    failure: LabelError | None = None
    for attempt in range(ATTEMPTS):
        r = random.Random(f"pii-origins/{half}/{seed}/{i}/{attempt}")
        try:
            chat = write_chat(half, f"origins-{half}-{seed}-{i:04d}-{plan.kind}", plan, r)
            check_chat(chat)
        except LabelError as e:
            failure = e
            continue
        return chat
    raise LabelError(f"chat {i} ({plan.kind}): {failure}")
