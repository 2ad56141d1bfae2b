"""``python -m evals.pii.corpus [SEED [SIZE]]``: check a corpus and print its summary."""

from __future__ import annotations

import sys

from evals.pii.corpus import check, corpus, summary


def main() -> None:
    """Print the summary of ``corpus(seed, size)`` (arguments: ``[SEED [SIZE]]``)."""
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 240
    chats = corpus(seed, size)
    check(chats)
    for key, count in summary(chats).items():
        print(f"{key:>22} {count}")


if __name__ == "__main__":
    main()
