"""``python -m evals.pii.independent [--seed N] [--size N] [--summary]``: print the set as JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections import Counter
from typing import Any

import evals.pii.independent as independent
from evals.pii.independent import Chat, check, corpus
from evals.pii.independent.data import load


def summary(chats: list[Chat]) -> dict[str, Any]:
    """What a set holds: chats, turns, entities by kind, contexts, names, tokens."""
    kinds = Counter(e.kind for chat in chats for e in chat.entities)
    messages = [m for chat in chats for turn in chat.turns for m in turn]
    names = load("names")["regions"].values()
    contexts: Counter[str] = Counter()
    for chat in chats:
        persons = {e.value for e in chat.entities if e.kind == "PERSON"}
        contexts.update(c for value, where in chat.contexts if value in persons for c in where)
    return {
        "chats": len(chats),
        "turns": dict(sorted(Counter(len(chat.turns) for chat in chats).items())),
        "stream": sum(chat.stream for chat in chats),
        "entities": dict(kinds.most_common()),
        "technical_tokens": sum(len(chat.technical) for chat in chats),
        "first_templates": dict(sorted(Counter(c.id.split("-", 3)[3] for c in chats).items())),
        "person_values_by_context": dict(contexts.most_common()),
        "system_prompts": sum(m["role"] == "system" for m in messages),
        "content_part_messages": sum(isinstance(m.get("content"), list) for m in messages),
        "tool_calls": sum(len(m.get("tool_calls") or ()) for m in messages),
        "given_names": len({n for region in names for n in region["given"]}),
        "family_names": len({n for region in names for n in region["family"]}),
    }


def main() -> None:
    """Build and check ``corpus(seed, size)``, then print it (or its summary) as JSON."""
    ap = argparse.ArgumentParser(
        prog="python -m evals.pii.independent",
        description=(independent.__doc__ or "").split("\n")[0],
    )
    ap.add_argument("--seed", type=int, default=4111)
    ap.add_argument("--size", type=int, default=independent.SIZE)
    ap.add_argument("--summary", action="store_true", help="print counts instead of the chats")
    args = ap.parse_args()
    chats = corpus(args.seed, args.size)
    check(chats)
    out: Any = summary(chats) if args.summary else [dataclasses.asdict(c) for c in chats]
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
