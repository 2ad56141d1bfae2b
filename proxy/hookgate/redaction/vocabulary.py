"""Word lists the recognizers and the name filter share: name particles, role words, the
technical names that are not people (``tech_names.txt``), and first names of every locale."""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache
from importlib import resources

_PARTICLES = (
    "da de del della der di do dos das du van von den la le los las des bin bint ibn abu al el "
    "ter ten te zu af av y e mac ní nic ó ui"
)
NAME_PARTICLES = frozenset(_PARTICLES.split())
"""Lower-case words that may sit between the parts of a name (``Matheus da Mota``)."""
_ROLE_WORDS = (
    "contact support sales info admin team help service customer billing mail email write "
    "call ask dear hi hello reply noreply our your the no security account accounts"
)
ROLE_WORDS = frozenset(_ROLE_WORDS.split())
"""Words that end a name candidate next to an e-mail address (``Contact Support``)."""


@cache
def tech_names() -> frozenset[str]:
    """Lower-cased well-known technical names (``tech_names.txt``): not people."""
    text = resources.files("hookgate.redaction").joinpath("tech_names.txt").read_text("utf-8")
    return frozenset(
        line.strip().lower() for line in text.splitlines() if line.strip() and line[0] != "#"
    )


@cache
def not_names() -> frozenset[str]:
    """Lower-cased capitalised words that are not people in rows and labels
    (``not_names.txt``): field labels, statuses, departments, places, days, months."""
    text = resources.files("hookgate.redaction").joinpath("not_names.txt").read_text("utf-8")
    return frozenset(
        line.strip().lower() for line in text.splitlines() if line.strip() and line[0] != "#"
    )


@cache
def given_names() -> frozenset[str]:
    """Lower-cased first names of every Faker locale, Latin script only."""
    import faker.providers.person as person

    names: set[str] = set()
    for locale in pkgutil.iter_modules(person.__path__):
        provider = importlib.import_module(f"{person.__name__}.{locale.name}").Provider
        for attribute in dir(provider):
            values = getattr(provider, attribute)
            if attribute.startswith("first_names") and isinstance(values, tuple | list | dict):
                names.update(str(n).lower() for n in values)
    return frozenset(n for n in names if len(n) > 1 and _LATIN.fullmatch(n)) - tech_names()


_LATIN = re.compile(r"[a-z\u00c0-\u024f'-]+")
"""Lower-case Latin letters (with accents), apostrophes and hyphens."""
