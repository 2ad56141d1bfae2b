"""``python -m evals.pii.world [--seed N] [--size N] [--summary]``: the set as JSON, or its
summary (chats, turns, entities by kind, PERSON occurrences, forms, places, origins)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections import Counter
from typing import Any

import evals.pii.world as world
from evals.pii.world import Chat, check, person_counts
from evals.pii.world.values import all_names


def _origin_of() -> dict[str, str]:
    """Every full name and part of ``names.json`` -> its origin."""
    out: dict[str, str] = {}
    for n in all_names():
        for v in (n.full, *n.parts()):
            out.setdefault(v, n.origin)
    return out


def summary(chats: list[Chat]) -> dict[str, Any]:
    """What the chats hold."""
    kinds = Counter(e.kind for c in chats for e in c.entities)
    messages = [m for c in chats for turn in c.turns for m in turn]
    persons = {(c.id, e.value) for c in chats for e in c.entities if e.kind == "PERSON"}
    tags = Counter(
        t for c in chats for v, where in c.contexts if (c.id, v) in persons for t in where
    )
    origin = _origin_of()
    fulls = {
        v for c in chats for v, where in c.contexts if (c.id, v) in persons and "form:full" in where
    }
    names = all_names()
    return {
        "chats": len(chats),
        "controls": sum(c.id.endswith("-control") for c in chats),
        "openings": dict(sorted(Counter(c.id.rsplit("-", 1)[1] for c in chats).items())),
        "turns": dict(sorted(Counter(len(c.turns) for c in chats).items())),
        "stream": sum(c.stream for c in chats),
        "entities": dict(kinds.most_common()),
        "person_occurrences": person_counts(chats),
        "person_values_by_form_and_place": dict(tags.most_common()),
        "distinct_full_names_used": len(fulls),
        "full_names_by_origin": dict(Counter(origin.get(v, "?") for v in fulls).most_common()),
        "technical_tokens": sum(len(c.technical) for c in chats),
        "system_prompts": sum(m["role"] == "system" for m in messages),
        "content_part_messages": sum(isinstance(m.get("content"), list) for m in messages),
        "tool_calls": sum(len(m.get("tool_calls") or ()) for m in messages),
        "names_in_list": len(names),
        "origins_in_list": len({n.origin for n in names}),
    }


def main() -> None:
    """Build and check the set, then print it (or its summary) as JSON."""
    ap = argparse.ArgumentParser(
        prog="python -m evals.pii.world", description=(world.__doc__ or "").split("\n")[0]
    )
    ap.add_argument("--seed", type=int, default=world.SEED)
    ap.add_argument("--size", type=int, default=world.SIZE)
    ap.add_argument("--summary", action="store_true", help="print counts instead of the chats")
    args = ap.parse_args()
    chats = world.corpus(args.seed, args.size)
    check(chats)
    out: Any = summary(chats) if args.summary else [dataclasses.asdict(c) for c in chats]
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
