"""The letters PII set is a deterministic, checked, self-contained generator.

Its figures are measured in ``test_eval.py`` (``letters-dev``); here only the set itself:
the same seed gives the same chats, its labels are exact, it is as large and as mixed as its
docstring promises (most names by part in later turns), and it imports neither the detector,
nor a list of names a detector could use (Faker, gender-guesser, mimesis), nor another PII
set.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import evals.pii.letters as letters
from evals.pii.letters import CHAT_KINDS, KINDS, Chat, Entity, LabelError, check, person_counts
from evals.pii.letters.labels import check_chat, iban_valid, luhn_valid, ssn_valid
from evals.pii.letters.writer import all_names, load


def _dump(chats: list[Chat]) -> str:
    return json.dumps([dataclasses.asdict(c) for c in chats], ensure_ascii=False)


@pytest.fixture(scope="module")
def chats() -> list[Chat]:
    return letters.corpus()


def test_a_seed_gives_the_same_chats() -> None:
    assert _dump(letters.corpus(11, 40)) == _dump(letters.corpus(11, 40))
    assert _dump(letters.corpus(11, 40)) != _dump(letters.corpus(12, 40))


def test_the_labels_are_exact_and_the_set_is_large_and_mixed(chats: list[Chat]) -> None:
    check(chats)
    assert len(chats) == letters.SIZE == 180
    persons = person_counts(chats)
    assert persons["occurrences"] >= 1200
    assert persons["later_parts"] >= 0.45 * persons["occurrences"]
    controls = [c for c in chats if c.id.endswith("-control")]
    assert 0.07 * len(chats) <= len(controls) <= 0.14 * len(chats)
    assert all(not c.entities and c.technical for c in controls)
    assert {c.id.rsplit("-", 1)[1] for c in chats} == set(CHAT_KINDS)
    kinds = Counter(e.kind for c in chats for e in c.entities)
    assert set(kinds) == KINDS and min(kinds.values()) >= 3
    tags = Counter(t for c in chats for _, where in c.contexts for t in where)
    assert all(tags[f"form:{f}"] >= 80 for f in letters.FORMS)
    assert all(tags[f"place:{p}"] >= 40 for p in letters.PLACES)
    first = [c for c in chats if c.id.endswith("-first")]
    assert first and all("form:full" not in w for c in first for _, w in c.contexts)
    assert all(2 <= len(c.turns) <= 4 for c in chats if not c.id.endswith("-control"))
    assert sum(c.stream for c in chats) >= 0.3 * len(chats)
    messages = [m for c in chats for turn in c.turns for m in turn]
    assert sum(isinstance(m.get("content"), list) for m in messages) >= 40
    assert sum(bool(m.get("tool_calls")) for m in messages) >= 40
    assert sum(len(c.technical) for c in chats) >= 100


def test_the_names_are_many_and_some_are_words(chats: list[Chat]) -> None:
    names = all_names()
    assert len({n.full for n in names}) == len(names) >= 300
    assert len({n.origin for n in names}) >= 29
    assert all(n.given in n.full and n.family in n.full for n in names)
    words = set(load("names")["word_given"])
    written = {v for c in chats for v, where in c.contexts if "form:full" in where}
    assert len(written) >= 180
    assert len({n.full for n in names if n.given in words} & written) >= 10


def test_the_check_catches_wrong_labels(chats: list[Chat]) -> None:
    chat = next(c for c in chats if len(c.entities) > 2)
    with pytest.raises(LabelError, match="in no text"):
        check_chat(dataclasses.replace(chat, entities=(*chat.entities, Entity("PERSON", "Zq"))))
    person = next(e for e in chat.entities if e.kind == "PERSON")
    with pytest.raises(LabelError, match="overlaps"):
        check_chat(dataclasses.replace(chat, technical=(*chat.technical, person.value)))
    chat = next(c for c in chats if any(e.kind == "EMAIL_ADDRESS" for e in c.entities))
    unlabelled = tuple(e for e in chat.entities if e.kind != "EMAIL_ADDRESS")
    with pytest.raises(LabelError, match="unlabelled"):
        check_chat(dataclasses.replace(chat, entities=unlabelled))
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and not iban_valid("GB82WEST12345698765433")
    assert luhn_valid("4111 1111 1111 1111") and not luhn_valid("4111 1111 1111 1112")
    assert ssn_valid("123-45-6789") and not ssn_valid("666-45-6789")


FORBIDDEN = ("faker", "gender_guesser", "mimesis", "hookgate")
OTHER_SETS = ("corpus", "holdout", "independent", "origins", "world", "agents")


def test_it_imports_no_detector_no_list_of_names_and_no_other_set() -> None:
    package = Path(letters.__file__).parent
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                modules = {node.module or ""}
            else:
                continue
            assert not {m.split(".")[0] for m in modules} & set(FORBIDDEN), source.name
            ours = [m for m in modules if m.startswith("evals")]
            assert all(m.startswith("evals.pii.letters") for m in ours), source.name
    probe = (
        "import sys, evals.pii.letters as m; m.corpus(3, 30); "
        f"print(sorted(k for k in sys.modules if k.split('.')[0] in {FORBIDDEN!r} "
        f"or k.startswith(tuple('evals.pii.' + s for s in {OTHER_SETS!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
