"""Write ``names_dev.json`` from the person data that the ``mimesis`` package ships.

``python -m evals.pii.origins.extract DATASETS VERSION`` reads ``DATASETS/<locale>/person.json``
(the ``mimesis/datasets`` folder of an installed ``mimesis``, kept in a virtual environment
of its own: the project never installs or imports it) and writes the given and family names
of :data:`LOCALES` to ``names_dev.json``. Only the standard library is used: the set reads
the committed JSON, so nothing here runs when the set is built.

Kept: given names of one word (a hyphen allowed), family names of one word or one word after
lower-case particles (``van der``, ``de``, ``da``...), letters only, 3 to 24 characters,
capitalised; at most :data:`KEEP` of each list, drawn with a fixed seed from the sorted list.
"""

from __future__ import annotations

import json
import random
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

LOCALES = (
    "az", "cs", "da", "de", "de-at", "de-ch", "en", "es", "es-mx", "et", "fi", "fr", "hr",
    "hu", "is", "it", "nl", "no", "pl", "pt", "pt-br", "sk", "sv", "tr",
)  # fmt: skip
"""The mimesis locales written in Latin script (``en-au``, ``en-gb`` and ``en-ca`` repeat
``en``; ``nl-be`` has no given names)."""

KEEP = 120
"""The most names kept of one list (a locale's female given names, say)."""

_WORD = r"[^\W\d_]+"
_GIVEN = re.compile(rf"{_WORD}(?:-{_WORD})?")
_PARTICLES = r"(?:(?:van|von|der|den|de|del|della|di|da|das|do|dos|du|te|ten|ter|la|le) )*"
_FAMILY = re.compile(rf"{_PARTICLES}{_WORD}(?:-{_WORD})?")


def _capitalised(word: str) -> bool:
    return all(p[:1].isupper() and p[1:] == p[1:].lower() for p in word.split("-"))


def _clean(names: list[str], pattern: re.Pattern[str]) -> list[str]:
    out = set()
    for raw in names:
        name = unicodedata.normalize("NFC", raw.strip())
        ok = pattern.fullmatch(name) and 3 <= len(name) <= 24
        if ok and _capitalised(name.split(" ")[-1]):
            out.add(name)
    return sorted(out)


def dumps(data: Any) -> str:
    """JSON with every list of strings on one line (the name lists stay readable)."""
    text = json.dumps(data, ensure_ascii=False, indent=1)
    string = r'"(?:[^"\\]|\\.)*"'
    lists = re.compile(rf"\[\n\s+({string}(?:,\n\s+{string})*)\n\s+\]")
    return lists.sub(lambda m: "[" + re.sub(r",\n\s+", ", ", m.group(1)) + "]", text) + "\n"


def _keep(names: list[str], key: str) -> list[str]:
    if len(names) <= KEEP:
        return names
    return sorted(random.Random(f"origins/mimesis/{key}").sample(names, KEEP))


def _lists(value: Any) -> dict[str, list[str]]:
    """``{"female": [...], "male": [...]}`` from a gendered dict or one list for both."""
    if isinstance(value, dict):
        return {g: list(value[g]) for g in ("female", "male")}
    return {"female": list(value), "male": list(value)}


def extract(datasets: Path, version: str) -> dict[str, Any]:
    """The names of :data:`LOCALES`, by locale and gender, with where they came from."""
    locales: dict[str, Any] = {}
    for locale in LOCALES:
        person = json.loads((datasets / locale / "person.json").read_text(encoding="utf-8"))
        given, family = _lists(person["names"]), _lists(person["surnames"])
        entry: dict[str, Any] = {}
        for gender in ("female", "male"):
            entry[gender] = {
                "given": _keep(_clean(given[gender], _GIVEN), f"{locale}/{gender}/given"),
                "family": _keep(_clean(family[gender], _FAMILY), f"{locale}/{gender}/family"),
            }
        locales[locale] = entry
    return {
        "source": (
            f"mimesis {version} (https://github.com/lk-geimfari/mimesis), "
            "mimesis/datasets/<locale>/person.json: 'names' and 'surnames'; "
            "extracted by evals/pii/origins/extract.py"
        ),
        "licence": "MIT License, Copyright (c) 2016-Present Isaak Uchakaev (Likid Geimfari)",
        "mimesis_version": version,
        "keep": KEEP,
        "locales": locales,
    }


def main() -> None:
    """``python -m evals.pii.origins.extract DATASETS VERSION``: write ``names_dev.json``."""
    datasets, version = Path(sys.argv[1]), sys.argv[2]
    data = extract(datasets, version)
    out = Path(__file__).with_name("names_dev.json")
    out.write_text(dumps(data), encoding="utf-8")


if __name__ == "__main__":
    main()
