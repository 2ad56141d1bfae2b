"""``python -m evals.pii.origins [--half dev|heldout] [--seed N] [--size N] [--summary]``.

Prints a half of the set as JSON, or with ``--summary`` what it holds. Whoever tunes the
detector prints the held-out half with ``--summary`` only.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections import Counter
from typing import Any

import evals.pii.origins as origins
from evals.pii.origins import Chat, check, person_counts
from evals.pii.origins.data import load


def summary(chats: list[Chat], half: str) -> dict[str, Any]:
    """What a half holds: chats, turns, entities by kind, PERSON occurrences, forms, places."""
    kinds = Counter(e.kind for chat in chats for e in chat.entities)
    messages = [m for chat in chats for turn in chat.turns for m in turn]
    persons = {(c.id, e.value) for c in chats for e in c.entities if e.kind == "PERSON"}
    tags = Counter(
        t for c in chats for v, where in c.contexts if (c.id, v) in persons for t in where
    )
    if half == "dev":
        lists = [
            names
            for entry in load("names_dev")["locales"].values()
            for gender in entry.values()
            for names in gender.values()
        ]
    else:
        lists = [
            names
            for origin in load("names_heldout")["origins"].values()
            for key, names in origin.items()
            if key in ("female", "male") or key.startswith("family")
        ]
    return {
        "chats": len(chats),
        "controls": sum(c.id.endswith("-control") for c in chats),
        "openings": dict(sorted(Counter(c.id.rsplit("-", 1)[1] for c in chats).items())),
        "turns": dict(sorted(Counter(len(chat.turns) for chat in chats).items())),
        "stream": sum(chat.stream for chat in chats),
        "entities": dict(kinds.most_common()),
        "person_occurrences": person_counts(chats),
        "person_values_by_form_and_place": dict(tags.most_common()),
        "technical_tokens": sum(len(chat.technical) for chat in chats),
        "system_prompts": sum(m["role"] == "system" for m in messages),
        "content_part_messages": sum(isinstance(m.get("content"), list) for m in messages),
        "tool_calls": sum(len(m.get("tool_calls") or ()) for m in messages),
        "names_in_lists": len({n for names in lists for n in names}),
        "name_lists": len(
            load("names_dev")["locales"] if half == "dev" else load("names_heldout")["origins"]
        ),
    }


def main() -> None:
    """Build and check a half, then print it (or its summary) as JSON."""
    ap = argparse.ArgumentParser(
        prog="python -m evals.pii.origins",
        description=(origins.__doc__ or "").split("\n")[0],
    )
    ap.add_argument("--half", choices=origins.HALVES, default="dev")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--size", type=int, default=origins.SIZE)
    ap.add_argument("--summary", action="store_true", help="print counts instead of the chats")
    args = ap.parse_args()
    build = origins.corpus if args.half == "dev" else origins.heldout
    seed = origins.SEEDS[args.half] if args.seed is None else args.seed
    chats = build(seed, args.size)
    check(chats)
    out: Any = summary(chats, args.half) if args.summary else [dataclasses.asdict(c) for c in chats]
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
