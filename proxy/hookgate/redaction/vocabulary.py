"""Word lists the recognizers and the name filter share: name particles, role words, the
technical names that are not people (``tech_names.txt``), given and family names of many
countries, and the common words of English."""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache
from importlib import resources

_PARTICLES = (
    "da de del della der di do dos das du van von den la le los las des bin bint ibn abu al el "
    "ter ten te zu af av y e mac ní nic ó ui ben bat wa binti ap op dal degli dei delle"
)
NAME_PARTICLES = frozenset(_PARTICLES.split())
"""Lower-case words that may sit between the parts of a name (``Matheus da Mota``)."""
PARTICLE_PATTERN = "(?:" + "|".join(sorted(NAME_PARTICLES, key=len, reverse=True)) + ")"
"""A regular expression matching one of :data:`NAME_PARTICLES`, longest first."""
_ROLE_WORDS = (
    "contact support sales info admin team help service customer billing mail email write "
    "call ask dear hi hello reply noreply our your the no security account accounts"
)
ROLE_WORDS = frozenset(_ROLE_WORDS.split())
"""Words that end a name candidate next to an e-mail address (``Contact Support``)."""
LEADING_NOT_NAMES = frozenset(
    (
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "per",
        "via",
        "to",
        "for",
        "from",
        "with",
        "by",
        "of",
        "in",
        "on",
        "at",
        "as",
        "is",
        "was",
        "are",
        "were",
        "be",
        "add",
        "ask",
        "call",
        "email",
        "mail",
        "ping",
        "tell",
        "cc",
        "bcc",
        "dear",
        "hi",
        "hey",
        "hello",
        "thanks",
        "thank",
        "welcome",
        "meet",
        "invite",
        "message",
        "notify",
        "please",
        "ok",
        "okay",
        "so",
        "then",
        "also",
    )
)
"""Words a model's PERSON span may start with that are not part of the name."""


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
    """Lower-cased given names, Latin script: every Faker locale's first names (romanised
    ones included) and the 48,000 names of 54 countries in gender-guesser's ``nam_dict``."""
    from gender_guesser.detector import Detector

    names = _faker_names("first_")
    names.update(Detector(case_sensitive=False).names)
    return frozenset(n for n in names if len(n) > 1 and _LATIN.fullmatch(n)) - tech_names()


@cache
def family_names() -> frozenset[str]:
    """Lower-cased family names of every Faker locale (romanised ones included), Latin
    script, split at hyphens and spaces (``García-López`` gives ``garcía`` and ``lópez``)."""
    parts = {p for name in _faker_names("last_") for p in re.split(r"[- ]", name)}
    return frozenset(p for p in parts if len(p) > 1 and _LATIN.fullmatch(p)) - tech_names()


COMMON_ZIPF = 3.0
"""A word at least this frequent in English (Zipf scale: 3.0 is once per million words) is
an ordinary word: ``Reading``, ``Workflow``, ``Personality``, but not ``Okonkwo``."""


@cache
def common_words() -> frozenset[str]:
    """Lower-cased English words with a Zipf frequency of at least :data:`COMMON_ZIPF`
    (wordfreq's ``best`` list, about 29,000 words; names that are frequent words too, such
    as ``Will`` or ``Grace``, are in it)."""
    import wordfreq

    floor = 10 ** (COMMON_ZIPF - 9)  # Zipf is log10 of frequency per billion words
    return frozenset(
        word
        for word, frequency in wordfreq.get_frequency_dict("en", wordlist="best").items()
        if frequency >= floor and word.replace("'", "").isalpha()
    )


def _faker_names(prefix: str) -> set[str]:
    """Lower-cased values of every Faker person provider's attributes named ``prefix…``
    (``first_names``, ``first_names_female``, ``first_romanized_names``, ...)."""
    import faker.providers.person as person

    names: set[str] = set()
    for locale in pkgutil.iter_modules(person.__path__):
        provider = importlib.import_module(f"{person.__name__}.{locale.name}").Provider
        for attribute in dir(provider):
            values = getattr(provider, attribute)
            romanized = attribute.startswith(prefix.rstrip("_") + "_romanized")
            if (attribute.startswith(prefix) or romanized) and isinstance(
                values, tuple | list | dict
            ):
                names.update(str(n).lower() for n in values)
    return names


_LATIN = re.compile(r"[a-z\u00c0-\u024f'-]+")
"""Lower-case Latin letters (with accents), apostrophes and hyphens."""
