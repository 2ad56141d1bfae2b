"""``python -m evals.pii.holdout [--seed N] [--size N]``: check a held-out set, print its mix."""

from __future__ import annotations

import argparse
from collections import Counter

import evals.pii.holdout as holdout
from evals.pii.holdout import check, corpus


def main() -> None:
    """Build and check ``corpus(seed, size)``, then print what it holds."""
    ap = argparse.ArgumentParser(
        prog="python -m evals.pii.holdout", description=(holdout.__doc__ or "").split("\n")[0]
    )
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--size", type=int, default=200)
    args = ap.parse_args()
    chats = corpus(args.seed, args.size)
    check(chats)
    kinds = Counter(e.kind for chat in chats for e in chat.entities)
    turns = Counter(len(chat.turns) for chat in chats)
    print(
        f"{len(chats)} chats, {sum(kinds.values())} entities, "
        f"{sum(len(c.technical) for c in chats)} technical tokens"
    )
    print(f"no PII: {sum(not c.entities for c in chats)}  stream: {sum(c.stream for c in chats)}")
    print("turns:", dict(sorted(turns.items())))
    for kind, n in kinds.most_common():
        print(f"  {kind:<15} {n}")


if __name__ == "__main__":
    main()
