"""The origins set: people's names of many origins in ordinary sentences, then again by part.

``corpus(seed, size)`` builds the development half and ``heldout(seed, size)`` the held-out
half, the same chats for the same seed and size; ``check(chats)`` verifies their labels;
``python -m evals.pii.origins [--half dev|heldout] [--seed N] [--size N] [--summary]``
prints a half as JSON (or what it holds).

What it measures. Whether personal data leaks to the model where people really write it:
in ordinary sentences ("My name is …", "Tell … what happened", "Refund … to IBAN … for …",
"Book a table for … and …"), in system prompts carrying customer context, in pasted e-mails
(greetings and sign-offs), in tool-call arguments and tool results — and whether a person
named later by part (the given name alone, the family name alone or after a title, the
full name again) gets redacted, and redacted the same way every time (one placeholder per
value). It also measures over-redaction: technical control chats (about 12%) carry no
personal data, only agent traffic — Markdown headings, bold lead-ins, tables, code spans
and fences, paths, shell commands, JSON Schema, product and library names (several of them
look like people's names), error and commit messages — whose tokens must all survive.

Where the names come from. The development half draws its names from the person data of
the ``mimesis`` package (version 22.2.0, MIT licence): given and family names, by gender,
of its 24 locales written in Latin script, extracted once by :mod:`.extract` into
``names_dev.json`` (the set does not import mimesis). The held-out half draws from
``names_heldout.json``: names written by hand for this set, of 61 origins (Europe, Africa,
the Middle East, South, Southeast and East Asia, the Pacific, the Americas), in each
origin's order, with diacritics, particles, middle words (``Thị``, ``bin``), two-surname
families, hyphens and apostrophes; every name that also stands in the development list was
taken out, so the held-out names are disjoint from the development ones. Neither half uses
Faker's or gender-guesser's lists, and nothing here reads the detector.

Where the templates come from. Both halves' sentences, e-mails, system prompts, tool calls
and technical texts were written for this set, one set of templates per half
(``templates_dev.json``, ``templates_heldout.json``), with no template in common. The
structured values are made by :mod:`.values` (Luhn-valid cards, IBANs with valid check
digits for 20 countries, SSNs in the issued ranges, US and international phone numbers,
IPv4 and IPv6 addresses, US and non-US street lines from ``values.json``).

Labels. ``Chat.entities`` lists every PII value exactly as written: PERSON — the full name
where it is written whole, and each part of it where the part stands alone (``Jolanta``,
``Wiśniewska``; with a title, ``Ms. Wiśniewska`` labels ``Wiśniewska``) — and
EMAIL_ADDRESS, PHONE_NUMBER, STREET_ADDRESS (the street line), IP_ADDRESS, CREDIT_CARD,
IBAN_CODE and US_SSN. A part is never also part of another word of its chat (the generator
counts it). ``Chat.technical`` lists text that must survive redaction; none overlaps a PII
value. City and company names, amounts and dates are neutral. ``Chat.contexts`` tells, for
each value, its form and places.

The held-out half is for measuring only: whoever tunes the detector reads neither its chats
nor its failures (the evaluation prints figures only for it).
"""

from __future__ import annotations

from evals.pii.origins.chats import HALVES, build, plans
from evals.pii.origins.labels import (
    KINDS,
    Chat,
    Entity,
    LabelError,
    check,
    person_counts,
    texts,
)

__all__ = [
    "HALVES",
    "KINDS",
    "SIZE",
    "Chat",
    "Entity",
    "LabelError",
    "check",
    "corpus",
    "heldout",
    "person_counts",
    "texts",
]

SIZE = 300
"""The default number of chats of each half (the evaluation test's size)."""

SEEDS = {"dev": 5209, "heldout": 7331}
"""The default seed of each half."""


def _half(half: str, seed: int, size: int) -> list[Chat]:
    if size < 0:
        raise ValueError("size must be >= 0")
    return [build(half, seed, i, plan) for i, plan in enumerate(plans(half, seed, size))]


def corpus(seed: int = SEEDS["dev"], size: int = SIZE) -> list[Chat]:
    """The development half: ``size`` labelled chats, the same for the same ``seed``."""
    return _half("dev", seed, size)


def heldout(seed: int = SEEDS["heldout"], size: int = SIZE) -> list[Chat]:
    """The held-out half: ``size`` labelled chats, the same for the same ``seed``."""
    return _half("heldout", seed, size)
