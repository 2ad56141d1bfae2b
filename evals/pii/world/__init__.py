"""The world set: names of non-European origins in ordinary sentences, then again by part.

``corpus(seed, size)`` builds the chats (the same for the same seed and size);
``check(chats)`` verifies their labels (the default corpus when none are given);
``python -m evals.pii.world [--seed N] [--size N] [--summary]`` prints them as JSON, or
what they hold.

What it is. A development set (its failures are printed): about 250 chats in which people
are named as users and systems write to an AI agent — introductions, requests about
someone, pasted e-mails with greetings and sign-offs (the given name alone, ``— Name``,
``Thanks,`` and the name), pasted chat logs (speakers by given name), system prompts with
the customer's record, tool calls and their results (JSON records, CSV and Markdown rows) —
then, in later turns (2 to 4 in most chats), the same people by part: the given name alone,
the family name alone, a title or an honorific of the name's origin with a part
(``Mr. Nguyễn``, ``Dr. Okonkwo-Adeyemi``, ``Tanaka-san``, ``chị Hà``, ``Pak Bambang``), a
double surname alone (``García Márquez``), the full name again. Next to the names stand
e-mail addresses, phone numbers with their country codes, IBANs with valid check digits,
Luhn-valid cards, US SSNs, IPv4 and IPv6 addresses and US and other countries' street
lines. About 10% of the chats are technical controls with no personal data, only agent
traffic (Markdown, code, commands, paths, product and library names, several of them from
the same languages as the names: ``Sudachi``, ``Hazm``, ``Zemberek``, ``Azul Zulu``), whose
tokens must all survive.

Where the names come from. ``names.json``: 544 names written by hand for this set, from
general knowledge (no package, no other set's list), of 41 origins — Vietnamese, Chinese
(pinyin, some with tone marks), Korean, Japanese, Thai, Indonesian, Malay, Filipino, North
and South Indian (with initials), Pakistani, Bangladeshi, Sri Lankan, Nepali, Arabic,
Persian, Turkish, Kurdish, Hebrew, Ethiopian, Somali, Yoruba, Igbo, Hausa, Akan, Kenyan,
Zulu/Xhosa/Sotho, Malagasy, Hawaiian/Māori/Samoan/Tongan, Native American, Brazilian,
Latin American and Mexican (two surnames), Caribbean, Irish and Scottish Gaelic, Welsh,
Icelandic, Georgian, Armenian, and given names that are also English words (Blessing,
Hope, Joy, Sunny, Godspower...) — each in its origin's order, with the parts written
alone. The templates (``templates.json``) and the values (``values.json``) were written
for this set too. Nothing here reads the detector or another set.

Labels. ``Chat.entities`` lists every PII value exactly as written: PERSON — the full
name, and each part where it stands alone (with a title or an honorific, only the part) —
and EMAIL_ADDRESS, PHONE_NUMBER, STREET_ADDRESS, IP_ADDRESS, CREDIT_CARD, IBAN_CODE, US_SSN.
A name never stands inside another word or text of its chat (the writer counts it).
``Chat.technical`` lists text that must survive; none overlaps a value. Cities,
organisations, amounts, dates and reference numbers are neutral. ``Chat.contexts`` gives
each value's forms and places.
"""

from __future__ import annotations

from evals.pii.world.chats import CHAT_KINDS, Plan, build, plans
from evals.pii.world.labels import (
    FORMS,
    KINDS,
    PLACES,
    Chat,
    Entity,
    LabelError,
    check_all,
    person_counts,
    texts,
)

__all__ = [
    "CHAT_KINDS",
    "FORMS",
    "KINDS",
    "PLACES",
    "SEED",
    "SIZE",
    "Chat",
    "Entity",
    "LabelError",
    "Plan",
    "check",
    "corpus",
    "person_counts",
    "texts",
]

SIZE = 250
"""The default number of chats (the evaluation's)."""

SEED = 6151
"""The default seed."""


def corpus(seed: int = SEED, size: int = SIZE) -> list[Chat]:
    """``size`` labelled chats, the same for the same ``seed``."""
    if size < 0:
        raise ValueError("size must be >= 0")
    chats, start = [], 0
    for i, plan in enumerate(plans(seed, size)):
        chat, start = build(seed, i, plan, start)
        chats.append(chat)
    return chats


def check(chats: list[Chat] | None = None) -> None:
    """Raise :class:`LabelError` unless the labels of ``chats`` (by default, of the default
    corpus) are exact; see :func:`evals.pii.world.labels.check_chat`."""
    check_all(corpus() if chats is None else chats)
