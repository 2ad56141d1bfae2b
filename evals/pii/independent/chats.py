"""The chats of the independent set: one structural template first, the same people again.

A chat has two to six people. Its first turn pastes one block of :mod:`.blocks` (between a
technical intro and a request that often names one of them again); later turns name the
same people in follow-ups, paste another block with them, and add technical notes. Some
chats open with a system prompt that names them, some user messages are arrays of content
parts, and some turns call tools whose arguments and results carry the same names. So a
name is written in several places of one request and must get one placeholder everywhere.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evals.pii.independent import blocks
from evals.pii.independent.data import load
from evals.pii.independent.labels import Chat, Entity, LabelError, check_chat
from evals.pii.independent.people import Person
from evals.pii.independent.writer import Message, Turn, Writer


@dataclass(frozen=True)
class Plan:
    """What one chat holds, dealt by :func:`plans` before it is written."""

    template: str
    turns: int
    stream: bool
    system: str  # "pii", "plain" or "none"
    tools: bool


def _user(w: Writer, segments: Sequence[str]) -> Message:
    """A user message: one string, or (30%) one content part per segment.

    Parts but the last end with the blank line that separates the segments in the string
    form, so the parts joined are the same text (a value never runs into the next word).
    """
    if len(segments) > 1 and w.chance(0.3):
        texts = [s + "\n\n" for s in segments[:-1]] + [segments[-1]]
        return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}
    return {"role": "user", "content": "\n\n".join(segments)}


def _view(w: Writer) -> list[Person]:
    """The chat's people, one already written first (``{name}`` in a template)."""
    written = [p for p in w.cast if p.name in w.ents] or list(w.cast)
    first = w.pick(written)
    rest = [p for p in w.cast if p is not first]
    w.r.shuffle(rest)
    return [first, *rest]


def _tool_flow(w: Writer, view: Sequence[Person]) -> Turn:
    """An assistant message calling a tool about ``view[0]``, and the tool's result."""
    flow = w.pick(load("tools")["flows"])
    say = w.fill(w.pick(load("texts")["tool_says"]), view) or None
    w.context = "tool_arguments"
    arguments = w.fill_obj(flow["args"], view)
    w.context = "tool_result"
    result: Any = flow["result"]
    if "json" in result:
        content = w.dumps(w.fill_obj(result["json"], view))
    else:
        content = blocks.write(w, result["block"], view, view[0])
    w.context = "prose"
    call_id = w.call_id()
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": flow["fn"], "arguments": w.dumps(arguments)},
    }
    return [
        {"role": "assistant", "content": say, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]


def _first_turn(w: Writer, plan: Plan) -> Turn:
    texts = load("texts")
    turn: Turn = []
    if plan.system != "none":
        w.context = "system_prompt"
        text = w.fill(w.pick(texts[f"system_{plan.system}"]), w.cast)
        turn.append({"role": "system", "content": text})
        w.context = "prose"
    view = _view(w)
    segments = []
    if w.chance(0.8):
        segments.append(w.fill(w.pick(texts["intros"]), view))
    segments.append(blocks.write(w, plan.template, view, view[0]))
    if w.chance(0.8):
        segments.append(w.fill(w.pick(texts["asks"]), view))
    if not w.tech:  # every chat carries technical text that must survive
        segments.append(w.fill(w.pick(texts["tech_follows"]), view))
    turn.append(_user(w, segments))
    return turn


def _later_turn(w: Writer) -> Turn:
    texts = load("texts")
    view = _view(w)
    segments = [w.fill(w.pick(texts["follow_ups"]), view)]
    if w.chance(0.35):
        segments.append(w.fill(w.pick(texts["follow_ups"]), _view(w)))
    if w.chance(0.45):
        name = w.pick(sorted(blocks.BLOCKS))
        lead = w.fill(w.pick(texts["block_leads"]), view)
        segments.append(lead + "\n" + blocks.write(w, name, view, view[0]))
    if w.chance(0.3):
        segments.append(w.fill(w.pick(texts["tech_follows"]), view))
    return [_user(w, segments)]


def write_chat(chat_id: str, plan: Plan, r: random.Random) -> Chat:
    """One chat following ``plan``, from the random source ``r``."""
    w = Writer(r)
    for _ in range(r.randint(2, 6)):
        w.person()
    turns = [_first_turn(w, plan)]
    turns += [_later_turn(w) for _ in range(1, plan.turns)]
    if plan.tools:
        for i in sorted(r.sample(range(plan.turns), min(plan.turns, r.choice((1, 1, 2))))):
            turns[i] += _tool_flow(w, _view(w))
    return Chat(
        id=chat_id,
        turns=tuple(tuple(turn) for turn in turns),
        entities=tuple(Entity(kind, value) for value, kind in w.ents.items()),
        technical=tuple(w.tech),
        stream=plan.stream,
        contexts=tuple((v, tuple(sorted(c))) for v, c in w.contexts.items()),
    )


def plans(seed: int, size: int) -> list[Plan]:
    """The plans of ``size`` chats: templates dealt from shuffled decks, so all appear.

    65% of the chats have 2-6 turns, 40% are streamed, 30% open with a system prompt naming
    people and 25% with one that does not, 45% call tools.
    """
    r = random.Random(f"pii-independent/plan/{seed}")

    def share(p: float) -> list[bool]:
        flags = [i < round(size * p) for i in range(size)]
        r.shuffle(flags)
        return flags

    multi, stream, tools = share(0.65), share(0.40), share(0.45)
    pii, plain = share(0.3), share(0.36)
    system = ["pii" if a else "plain" if b else "none" for a, b in zip(pii, plain, strict=True)]
    deck: list[str] = []
    out = []
    for i in range(size):
        if not deck:
            deck = sorted(blocks.BLOCKS)
            r.shuffle(deck)
        turns = r.randint(2, 6) if multi[i] else 1
        out.append(Plan(deck.pop(), turns, stream[i], system[i], tools[i]))
    return out


ATTEMPTS = 40


def build(seed: int, i: int, plan: Plan) -> Chat:
    """Chat ``i`` of the set for ``seed``, written again from a new seed until it checks."""
    failure: LabelError | None = None
    for attempt in range(ATTEMPTS):
        r = random.Random(f"pii-independent/{seed}/{i}/{attempt}")
        try:
            chat = write_chat(f"independent-{seed}-{i:04d}-{plan.template}", plan, r)
            check_chat(chat)
        except LabelError as e:
            failure = e
            continue
        return chat
    raise LabelError(f"chat {i} ({plan.template}): {failure}")
