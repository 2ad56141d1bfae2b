"""The letters set: names in pasted e-mails and messages, then by given name in later turns.

``corpus(seed, size)`` builds the chats (the same for the same seed and size);
``check(chats)`` verifies their labels (the default corpus when none are given);
``python -m evals.pii.letters [--seed N] [--size N] [--summary]`` prints them as JSON, or
what they hold.

What it is. A development set (its failures are printed) aimed at the two places where
names still leak. First, pasted e-mails and messages: greetings and salutations (``Hi
Ana,``, ``Dear Ms. Souza,``), sign-offs and signatures (``Thanks,`` then the given name,
``-- Ana``, a name over a job title and a phone number), forwarded and reply headers
(``From:``, ``To:``, ``Cc:``, ``Bcc:``, ``"Souza, Ana" <...>``, ``on behalf of``), quoted
replies (``On ... wrote:`` and ``>`` lines), P.S. lines, and pasted team chats. Second,
later turns (1 to 3 after the opening) that name the same people by given name alone —
at a sentence start, after a comma, in questions, quotes, parentheses, possessives
(``Ana's flight``), lists and action items, imperatives (``Remind Ana to``, ``Let Ana
know``, ``Loop Ana in``), vocatives, tool-call arguments and tool results — and sometimes
by family name, alone or after a title. The full name comes from the pasted text, a system
prompt or a contact lookup's result; about one chat in ten names people by given name only,
with no full name anywhere. About one person in ten has a given name that is also an
English word (Hope, Will, Mark, Summer, Blessing...). Next to the names: e-mail addresses,
phone numbers, IBANs with valid check digits, Luhn-valid cards, US SSNs, IPv4 addresses and
street lines. About 10% of the chats are technical controls with no personal data whose
tokens (code, commands, product names, and words that are also given names: ``Will the``,
``May I``, ``Mark``, ``Grace period``, ``Hunter``, ``Jade``) must all survive.

Where the names come from. ``names.json``: 356 names written by hand for this set, from
general knowledge (no package, no other set's list), of 29 origins (English, Spanish and
Latin American, Portuguese and Brazilian, French, Italian, German, Dutch, Nordic, Polish,
Czech, Hungarian, Romanian, Greek, Turkish, Arabic, Persian, Indian, Pakistani, Chinese,
Japanese, Korean, Vietnamese, Filipino, Indonesian, Nigerian, Ghanaian, Kenyan, South
African, Ethiopian), each in its usual order. ``templates.json`` and ``values.json`` were
written for this set too. Nothing here reads the detector or another set.

Labels. ``Chat.entities`` lists every PII value exactly as written: PERSON — the full name,
and each part where it stands alone (after a title, only the part; ``Ana's`` is ``Ana``) —
and EMAIL_ADDRESS, PHONE_NUMBER, STREET_ADDRESS, IP_ADDRESS, CREDIT_CARD, IBAN_CODE, US_SSN.
The writer counts every name it writes and draws a chat again when its text holds a name
more often (a template word equal to a name, a name inside another value).
``Chat.technical`` lists text that must survive; none overlaps a value. Cities,
organisations, dates and reference numbers are neutral. ``Chat.contexts`` gives each
value's forms and places.
"""

from __future__ import annotations

from evals.pii.letters.labels import (
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
from evals.pii.letters.writer import CHAT_KINDS, all_names, build

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
    "all_names",
    "check",
    "corpus",
    "person_counts",
    "texts",
]

SIZE = 180
"""The default number of chats (the evaluation's)."""

SEED = 4127
"""The default seed."""


def corpus(seed: int = SEED, size: int = SIZE) -> list[Chat]:
    """``size`` labelled chats, the same for the same ``seed``."""
    if size < 0:
        raise ValueError("size must be >= 0")
    return [build(seed, i) for i in range(size)]


def check(chats: list[Chat] | None = None) -> None:
    """Raise :class:`LabelError` unless the labels of ``chats`` (by default, of the default
    corpus) are exact; see :func:`evals.pii.letters.labels.check_chat`."""
    check_all(corpus() if chats is None else chats)
