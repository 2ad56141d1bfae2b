"""The chats of the world set: people named in ordinary requests, then again by part.

A chat with personal data may open with a system prompt carrying the customer's record (or
a plain one); its first user message introduces the user, asks about people, or pastes an
e-mail (greeting and sign-off) or a chat log. Later turns come back to the same people by
part (the given name, the family name, a title or honorific with a part, the full name
again) and sometimes bring in someone new. Some turns call a tool whose arguments and
result (JSON records, CSV and Markdown rows) carry the names; some user messages are
arrays of content parts; some chats are streamed. A control chat carries no personal data,
only technical text (Markdown, code, commands, paths, product and library names).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from evals.pii.world.data import load
from evals.pii.world.labels import Chat, Entity, LabelError, check_chat, texts
from evals.pii.world.values import Name, all_names
from evals.pii.world.writer import Writer, letters, remap

Message = dict[str, Any]
Turn = list[Message]

CHAT_KINDS = ("self", "about", "email", "chatlog", "control")
"""How a chat opens: the user introducing themself, a request about people, a pasted
e-mail, a pasted chat log, or (a control) no personal data at all."""

_OPENINGS = {
    "self": "openings_self",
    "about": "openings_about",
    "email": "emails",
    "chatlog": "chatlogs",
}
_PLACES = {"self": "opening", "about": "opening", "email": "email", "chatlog": "chatlog"}
ATTEMPTS = 80


@dataclass(frozen=True)
class Plan:
    """What one chat holds, dealt before it is written."""

    kind: str  # one of CHAT_KINDS
    turns: int
    stream: bool
    system: str  # "pii", "plain" or "none"
    tools: bool


def _user(w: Writer, segments: Sequence[str]) -> Message:
    """A user message: one string, or an array of text parts (the same text once joined)."""
    if (len(segments) > 1 and w.chance(0.35)) or w.chance(0.08):
        parts = [s + "\n\n" for s in segments[:-1]] + [segments[-1]]
        return {"role": "user", "content": [{"type": "text", "text": t} for t in parts]}
    return {"role": "user", "content": "\n\n".join(segments)}


def _cast_for(w: Writer, template: Any, pool: Sequence[str]) -> dict[str, str] | None:
    """Letters of ``template`` (``A``, ``B``... as roles) -> distinct people of ``pool``."""
    roles = sorted(letters(template) - {"U"})
    if "U" in letters(template) and "U" not in w.cast:
        return None
    if len(roles) > len(pool):
        return None
    return dict(zip(roles, w.r.sample(list(pool), len(roles)), strict=True))


def _follow_up(w: Writer, templates: dict[str, Any], used: set[str]) -> str:
    """A later user sentence about the people already in the chat (or one new person)."""
    others = w.others()
    kinds = []
    if "U" in w.cast:
        kinds += ["self"] * (3 if others else 7)
    if others:
        kinds += ["about"] * 6
    if w.free_letter():
        kinds += ["new"] * (1 if others else 3)
    for _ in range(20):
        kind = w.r.choice(kinds)
        template = w.r.choice(templates[f"follow_{kind}"])
        if template in used:
            continue
        if kind == "new":
            need_a = "A" in letters(template)
            if need_a and not others:
                continue
            free = w.free_letter()
            assert free is not None
            mapping = {"B": free, **({"A": w.r.choice(others)} if need_a else {})}
        else:
            found = _cast_for(w, template, others)
            if found is None:
                continue
            mapping = found
        used.add(template)
        return w.fill(remap(template, mapping))
    raise LabelError("no follow-up fits")


def _tool_flow(w: Writer, flows: Sequence[dict[str, Any]], control: bool = False) -> Turn:
    """An assistant message calling a tool, then the tool's result."""
    for _ in range(20):
        flow = w.r.choice(flows)
        mapping = _cast_for(w, flow, list(w.cast))
        if mapping is not None and (control or mapping):
            break
    else:
        raise LabelError("no tool flow fits")
    flow = remap(flow, mapping)
    w.place = "tool_arguments"
    say = w.fill(flow["say"]) if flow["say"] else None
    arguments = w.dumps(w.fill_obj(flow["arguments"]))
    w.place = "tool_result"
    result = flow["result"]
    content = w.fill(result) if isinstance(result, str) else w.dumps(w.fill_obj(result))
    call_id = w.call_id()
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": flow["function"], "arguments": arguments},
    }
    return [
        {"role": "assistant", "content": say, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]


def _system(w: Writer, plan: Plan, templates: dict[str, Any]) -> Turn:
    if plan.system == "none":
        return []
    w.place = "system"
    return [{"role": "system", "content": w.fill(w.r.choice(templates[f"systems_{plan.system}"]))}]


def _pii_turns(w: Writer, plan: Plan, templates: dict[str, Any]) -> list[Turn]:
    tool_turns = set(w.r.sample(range(plan.turns), min(plan.turns, 1 if w.chance(0.7) else 2)))
    used: set[str] = set()
    turns: list[Turn] = []
    for i in range(plan.turns):
        turn: Turn = _system(w, plan, templates) if i == 0 else []
        if i == 0:
            w.place = _PLACES[plan.kind]
            segments = [w.fill(w.r.choice(templates[_OPENINGS[plan.kind]]))]
            note = 0.2
        else:
            w.place = "follow_up"
            segments = [_follow_up(w, templates, used)]
            if w.chance(0.55):
                segments.append(_follow_up(w, templates, used))
            note = 0.12
        if w.chance(note):
            w.place = "note"
            at = w.r.randint(1, len(segments))
            segments.insert(at, w.fill(w.r.choice(templates["tech_notes"])))
        turn.append(_user(w, segments))
        if plan.tools and i in tool_turns:
            turn += _tool_flow(w, templates["tools"])
        turns.append(turn)
    return turns


def _control_turns(w: Writer, plan: Plan, templates: dict[str, Any]) -> list[Turn]:
    tool_turn = w.r.randrange(plan.turns) if plan.tools else -1
    turns: list[Turn] = []
    for i, text in enumerate(w.r.sample(templates["controls"], plan.turns)):
        turn: Turn = _system(w, plan, templates) if i == 0 else []
        w.place = "control"
        turn.append(_user(w, [w.fill(text)]))
        if i == tool_turn:
            turn += _tool_flow(w, templates["control_tools"], control=True)
        turns.append(turn)
    if w.ents:
        raise LabelError("a control chat with personal data")
    return turns


def write_chat(chat_id: str, plan: Plan, w: Writer) -> Chat:
    """One chat following ``plan``, written by ``w`` (its random source and its names)."""
    templates = load("templates")
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


def plans(seed: int, size: int) -> list[Plan]:
    """The plans of ``size`` chats.

    10% are controls (1-3 turns, a plain system prompt in 30%, a tool call in 35%). The
    others open (dealt from a shuffled deck) with the user introducing themself (6 in 20),
    a request about people (7 in 20), a pasted e-mail (4 in 20) or a pasted chat log (3 in
    20); 35% start with a system prompt carrying the customer's record and 20% with a plain
    one; they have 1 (4%), 2 (24%), 3 (40%) or 4 turns (32%); 55% call tools. 35% of all
    chats are streamed.
    """
    r = random.Random(f"pii-world/plan/{seed}")

    def share(p: float) -> list[bool]:
        flags = [i < round(size * p) for i in range(size)]
        r.shuffle(flags)
        return flags

    control, stream = share(0.10), share(0.35)
    openings: list[str] = []
    out = []
    for i in range(size):
        if control[i]:
            system = "plain" if r.random() < 0.3 else "none"
            out.append(Plan("control", r.randint(1, 3), stream[i], system, r.random() < 0.35))
            continue
        if not openings:
            openings = ["self"] * 6 + ["about"] * 7 + ["email"] * 4 + ["chatlog"] * 3
            r.shuffle(openings)
        system = r.choices(("pii", "plain", "none"), (35, 20, 45))[0]
        turns = r.choices((1, 2, 3, 4), (4, 24, 40, 32))[0]
        out.append(Plan(openings.pop(), turns, stream[i], system, r.random() < 0.55))
    return out


@cache
def deck(seed: int) -> tuple[Name, ...]:
    """Every name of ``names.json`` in an order of ``seed``; the chats draw their people
    from it in turn (see :func:`build`), so that they name nearly every name of the list."""
    names = all_names()
    random.Random(f"pii-world/names/{seed}").shuffle(names)
    return tuple(names)


def build(seed: int, i: int, plan: Plan, start: int = 0) -> tuple[Chat, int]:
    """Chat ``i`` for ``seed``, its people drawn from :func:`deck` from position ``start``
    on, and the position after them. It is written again from a new seed (and a little
    further along the deck) until its labels check."""
    failure: LabelError | None = None
    for attempt in range(ATTEMPTS):
        r = random.Random(f"pii-world/{seed}/{i}/{attempt}")
        w = Writer(r, deck(seed), start + attempt)
        try:
            chat = write_chat(f"world-{seed}-{i:04d}-{plan.kind}", plan, w)
            check_chat(chat)
        except LabelError as e:
            failure = e
            continue
        return chat, w.drawn
    raise LabelError(f"chat {i} ({plan.kind}): {failure}")
