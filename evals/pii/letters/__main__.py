"""``python -m evals.pii.letters [--seed N] [--size N] [--summary]``: the set as JSON, or its
summary (chats, turns, entities by kind, PERSON occurrences, forms, places, origins)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections import Counter
from typing import Any

import evals.pii.letters as letters
from evals.pii.letters import Chat, all_names, check, person_counts


def summary(chats: list[Chat]) -> dict[str, Any]:
    """What the chats hold."""
    kinds = Counter(e.kind for c in chats for e in c.entities)
    messages = [m for c in chats for turn in c.turns for m in turn]
    persons = {(c.id, e.value) for c in chats for e in c.entities if e.kind == "PERSON"}
    tags = Counter(
        t for c in chats for v, where in c.contexts if (c.id, v) in persons for t in where
    )
    origin = {n.full: n.origin for n in all_names()}
    fulls = {v for c in chats for v, where in c.contexts if "form:full" in where}
    words = {n.full for n in all_names() if n.given in letters.writer.load("names")["word_given"]}
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
        "full_names_with_word_given_names": len(fulls & words),
        "full_names_by_origin": dict(Counter(origin.get(v, "?") for v in fulls).most_common()),
        "technical_tokens": sum(len(c.technical) for c in chats),
        "system_prompts": sum(m["role"] == "system" for m in messages),
        "content_part_messages": sum(isinstance(m.get("content"), list) for m in messages),
        "tool_calls": sum(len(m.get("tool_calls") or ()) for m in messages),
        "names_in_list": len(all_names()),
    }


def main() -> None:
    """Build and check the set, then print it (or its summary) as JSON."""
    ap = argparse.ArgumentParser(
        prog="python -m evals.pii.letters", description=(letters.__doc__ or "").split("\n")[0]
    )
    ap.add_argument("--seed", type=int, default=letters.SEED)
    ap.add_argument("--size", type=int, default=letters.SIZE)
    ap.add_argument("--summary", action="store_true", help="print counts instead of the chats")
    args = ap.parse_args()
    chats = letters.corpus(args.seed, args.size)
    check(chats)
    out: Any = summary(chats) if args.summary else [dataclasses.asdict(c) for c in chats]
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
