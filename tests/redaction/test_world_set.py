"""The world PII set is a deterministic, checked, self-contained generator.

Its figures are measured in ``test_eval.py`` (``world-dev``); here only the set itself: the
same seed gives the same chats, its labels are exact, it is as large and as mixed as its
docstring promises, and it imports neither the detector, nor a list of names a detector
could use (Faker, gender-guesser, mimesis), nor another PII set.
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

import evals.pii.world as world
from evals.pii.world import CHAT_KINDS, KINDS, Chat, Entity, LabelError, check, person_counts
from evals.pii.world.labels import check_chat, iban_valid, luhn_valid, ssn_valid
from evals.pii.world.values import all_names


def _dump(chats: list[Chat]) -> str:
    return json.dumps([dataclasses.asdict(c) for c in chats], ensure_ascii=False)


@pytest.fixture(scope="module")
def chats() -> list[Chat]:
    return world.corpus()


def test_a_seed_gives_the_same_chats() -> None:
    assert _dump(world.corpus(11, 40)) == _dump(world.corpus(11, 40))
    assert _dump(world.corpus(11, 40)) != _dump(world.corpus(12, 40))


def test_the_labels_are_exact_and_the_set_is_large_and_mixed(chats: list[Chat]) -> None:
    check(chats)
    assert len(chats) == world.SIZE == 250
    persons = person_counts(chats)
    assert persons["occurrences"] >= 1500
    assert persons["later_parts"] >= 0.35 * persons["occurrences"]
    controls = [c for c in chats if c.id.endswith("-control")]
    assert 0.08 * len(chats) <= len(controls) <= 0.12 * len(chats)
    assert all(not c.entities and c.technical for c in controls)
    assert {c.id.rsplit("-", 1)[1] for c in chats} == set(CHAT_KINDS)
    kinds = Counter(e.kind for c in chats for e in c.entities)
    assert set(kinds) == KINDS and min(kinds.values()) >= 15
    tags = Counter(t for c in chats for _, where in c.contexts for t in where)
    assert all(tags[f"form:{f}"] >= 100 for f in world.FORMS)
    assert all(tags[f"place:{p}"] >= 50 for p in world.PLACES if p != "note")
    assert Counter(len(c.turns) for c in chats).keys() >= {1, 2, 3, 4}
    assert sum(len(c.turns) >= 2 for c in chats) >= 0.85 * len(chats)
    assert sum(c.stream for c in chats) >= 0.3 * len(chats)
    messages = [m for c in chats for turn in c.turns for m in turn]
    assert sum(isinstance(m.get("content"), list) for m in messages) >= 50
    assert sum(bool(m.get("tool_calls")) for m in messages) >= 100
    assert sum(len(c.technical) for c in chats) >= 200


def test_the_names_are_many_and_of_many_origins(chats: list[Chat]) -> None:
    names = all_names()
    assert len({n.full for n in names}) == len(names) >= 400
    assert len({n.origin for n in names}) >= 35
    assert all(p in n.full for n in names for p in n.parts())
    written = {v for c in chats for v, where in c.contexts if "form:full" in where}
    assert len(written & {n.full for n in names}) >= 400  # the chats name most of them


def test_the_check_catches_wrong_labels(chats: list[Chat]) -> None:
    chat = next(c for c in chats if len(c.entities) > 2)
    with pytest.raises(LabelError, match="in no text"):
        check_chat(dataclasses.replace(chat, entities=(*chat.entities, Entity("PERSON", "Zq"))))
    person = next(e for e in chat.entities if e.kind == "PERSON")
    with pytest.raises(LabelError, match="overlaps"):
        check_chat(dataclasses.replace(chat, technical=(*chat.technical, person.value)))
    unlabelled = tuple(e for e in chat.entities if e.kind != "EMAIL_ADDRESS")
    if len(unlabelled) < len(chat.entities):
        with pytest.raises(LabelError, match="unlabelled"):
            check_chat(dataclasses.replace(chat, entities=unlabelled))
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and not iban_valid("GB82WEST12345698765433")
    assert luhn_valid("4111 1111 1111 1111") and not luhn_valid("4111 1111 1111 1112")
    assert ssn_valid("123-45-6789") and not ssn_valid("666-45-6789")


FORBIDDEN = ("faker", "gender_guesser", "mimesis", "hookgate")
OTHER_SETS = ("corpus", "holdout", "independent", "origins", "agents")


def test_it_imports_no_detector_no_list_of_names_and_no_other_set() -> None:
    package = Path(world.__file__).parent
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
            assert all(m.startswith("evals.pii.world") for m in ours), source.name
    probe = (
        "import sys, evals.pii.world as m; m.corpus(3, 30); "
        f"print(sorted(k for k in sys.modules if k.split('.')[0] in {FORBIDDEN!r} "
        f"or k.startswith(tuple('evals.pii.' + s for s in {OTHER_SETS!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
