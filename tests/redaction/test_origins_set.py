"""The origins PII set is a deterministic, checked, self-contained generator of two halves.

The figures of the set are measured in ``test_eval.py``; here only the set itself: the same
seed gives the same chats, its labels are exact, each half is as large and as mixed as its
docstring promises, the halves share no template and no name, and the set imports neither
the detector nor any list of names a detector could use (Faker, gender-guesser, mimesis).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evals.pii.origins as origins
from evals.pii.origins import KINDS, Chat, Entity, LabelError, check, person_counts
from evals.pii.origins.data import load
from evals.pii.origins.labels import check_chat, iban_valid, luhn_valid

HALVES: dict[str, Callable[..., list[Chat]]] = {"dev": origins.corpus, "heldout": origins.heldout}


def _dump(chats: list[Chat]) -> str:
    return json.dumps([dataclasses.asdict(c) for c in chats], ensure_ascii=False)


@pytest.mark.parametrize("half", sorted(HALVES))
def test_a_seed_gives_the_same_chats(half: str) -> None:
    build = HALVES[half]
    assert _dump(build(11, 40)) == _dump(build(11, 40))
    assert _dump(build(11, 40)) != _dump(build(12, 40))


@pytest.mark.parametrize("half", sorted(HALVES))
def test_the_labels_are_exact_and_the_half_is_large_and_mixed(half: str) -> None:
    chats = HALVES[half]()
    check(chats)
    assert len(chats) == origins.SIZE == 300
    persons = person_counts(chats)
    assert persons["occurrences"] >= 1500
    assert persons["later_parts"] >= 0.25 * persons["occurrences"]
    controls = [c for c in chats if c.id.endswith("-control")]
    assert len(controls) >= 0.10 * len(chats)
    assert all(not c.entities and c.technical for c in controls)
    assert {e.kind for c in chats for e in c.entities} == KINDS
    forms = Counter(t for c in chats for _, tags in c.contexts for t in tags)
    assert all(forms[f"form:{f}"] > 50 for f in ("full", "given", "family", "titled"))
    assert all(forms[f"place:{p}"] > 50 for p in ("system", "email", "tool_arguments"))
    assert Counter(len(c.turns) for c in chats).keys() >= {1, 2, 3, 4}
    assert sum(c.stream for c in chats) >= 0.3 * len(chats)
    messages = [m for c in chats for turn in c.turns for m in turn]
    assert sum(isinstance(m.get("content"), list) for m in messages) >= 50
    assert sum(bool(m.get("tool_calls")) for m in messages) >= 50


def test_the_check_catches_wrong_labels() -> None:
    chat = next(c for c in origins.corpus(3, 20) if c.entities)
    with pytest.raises(LabelError, match="in no text"):
        check_chat(dataclasses.replace(chat, entities=(*chat.entities, Entity("PERSON", "Zq"))))
    assert iban_valid("DE89 3704 0044 0532 0130 00") and not iban_valid("DE88370400440532013000")
    assert luhn_valid("4111 1111 1111 1111") and not luhn_valid("4111 1111 1111 1112")


def _templates(half: str) -> set[str]:
    """Every template of a half: the sentences, and each tool flow as a whole."""
    data = load(f"templates_{half}")
    out = set()
    for key, items in data.items():
        if key != "note":
            out |= {t if isinstance(t, str) else json.dumps(t, sort_keys=True) for t in items}
    return out


def _words(template: str) -> str:
    """A template without slots, markers, punctuation and case: what its wording is."""
    text = re.sub(r"\{[A-C](?:[.=][a-z_]+)?\}|\{[a-z0-9]+\}|\[\[|\]\]", " ", template)
    return " ".join(re.findall(r"\w+", text.lower()))


def test_the_halves_share_no_template() -> None:
    dev, heldout = _templates("dev"), _templates("heldout")
    assert len(dev) >= 100 and len(heldout) >= 100
    assert not dev & heldout
    assert not {_words(t) for t in dev} & {_words(t) for t in heldout}


def _names(value: Any) -> set[str]:
    """Every string of a JSON value (the development names: locale -> gender -> lists)."""
    if isinstance(value, str):
        return {value.casefold()}
    if isinstance(value, list | dict):
        return set().union(*map(_names, value.values() if isinstance(value, dict) else value))
    return set()


def test_the_held_out_names_are_hand_written_and_disjoint_from_the_dev_names() -> None:
    dev = load("names_dev")
    assert dev["mimesis_version"] == "22.2.0" and "MIT" in dev["licence"]
    assert len(dev["locales"]) >= 20
    held = load("names_heldout")["origins"]
    assert len(held) >= 40
    dev_names = _names(dev["locales"])
    held_names = {
        n.casefold()
        for origin in held.values()
        for key, names in origin.items()
        if key in ("female", "male") or key.startswith("family")
        for n in names
    }
    assert len(dev_names) >= 5000 and len(held_names) >= 1500
    assert not dev_names & held_names
    people = {e.value for c in origins.heldout() for e in c.entities if e.kind == "PERSON"}
    assert not {p.casefold() for p in people} & dev_names


FORBIDDEN = ("faker", "gender_guesser", "mimesis", "hookgate")


def test_it_imports_no_detector_and_no_list_of_names() -> None:
    package = Path(origins.__file__).parent
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert not roots & set(FORBIDDEN), f"{source.name} imports {roots}"
    probe = (
        "import sys, evals.pii.origins as m; m.corpus(3, 30); m.heldout(3, 30); "
        f"print(sorted(k for k in sys.modules if k.split('.')[0] in {FORBIDDEN!r} "
        "or k.startswith(('evals.pii.corpus', 'evals.pii.holdout', 'evals.pii.independent'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
