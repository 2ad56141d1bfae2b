"""The independent PII set is a deterministic, checked, self-contained generator.

The figures of the set are measured in ``test_eval.py``; here only the set itself: the same
seed gives the same chats, its labels are exact, it holds what its docstring promises, and
it neither uses Faker nor imports the other two sets (it must stay independent of them).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections import Counter

from evals.pii.independent import KINDS, check, corpus
from evals.pii.independent.blocks import BLOCKS
from evals.pii.independent.data import load


def _dump(seed: int, size: int) -> str:
    return json.dumps([dataclasses.asdict(c) for c in corpus(seed, size)], ensure_ascii=False)


def test_a_seed_gives_the_same_chats() -> None:
    assert _dump(11, 40) == _dump(11, 40)
    assert _dump(11, 40) != _dump(12, 40)


def test_the_labels_are_exact_and_the_mix_is_as_documented() -> None:
    chats = corpus()
    check(chats)
    kinds = Counter(e.kind for chat in chats for e in chat.entities)
    assert set(kinds) == KINDS
    assert {chat.id.rsplit("-", 1)[-1] for chat in chats} <= set(BLOCKS)
    assert len({chat.id.split("-", 3)[3] for chat in chats}) == len(BLOCKS) >= 12
    assert all(chat.technical for chat in chats)
    assert any(len(chat.turns) >= 2 for chat in chats) and any(c.stream for c in chats)
    messages = [m for chat in chats for turn in chat.turns for m in turn]
    assert any(m["role"] == "system" for m in messages)
    assert any(isinstance(m.get("content"), list) for m in messages)
    assert any(m.get("tool_calls") for m in messages)


def test_the_names_are_hand_written_and_many() -> None:
    regions = load("names")["regions"].values()
    assert len({n for r in regions for n in r["given"]}) >= 300
    assert len({n for r in regions for n in r["family"]}) >= 300


def test_it_uses_neither_faker_nor_the_other_sets() -> None:
    probe = (
        "import sys, evals.pii.independent as m; m.corpus(3, 30); "
        "print(sorted(k for k in sys.modules if k.split('.')[0] == 'faker' "
        "or k.startswith(('evals.pii.corpus', 'evals.pii.holdout'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
