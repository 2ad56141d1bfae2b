"""The independent set: labelled agent chats where people's names stand without sentence context.

``corpus(seed, size)`` builds ``size`` chats, the same ones for the same seed and size;
``check(chats)`` verifies their labels; ``python -m evals.pii.independent [--seed N]
[--size N]`` prints the chats as JSON (``--summary`` prints what they hold).

What it measures. A reviewer found that names leak where no sentence tells a model that a
word is a name, and that names from outside the usual Anglo-American lists fare worst. So
every chat writes its people in a structure — CSV rows (quoted and unquoted, with a header
row), markdown and ASCII tables, slash- and pipe-separated lists, label blocks (the name
alone above a street, city line, phone and e-mail), key/value records (``Name:``,
``Customer -``, ``Assignee:``), e-mail headers (``From: Name <mail>``), signatures below a
sign-off, chat transcripts, YAML rosters, git trailers, attendee lists, pasted JSON — or in
prose, and writes the same people again in other places of the same request: the system
prompt, later turns, other content parts, tool-call arguments and tool results. Each name
must get one placeholder everywhere (the evaluation measures that per value and chat).

Where the names come from. ``names.json`` holds given and family names written by hand for
this set — from West, East and Southern Africa, the Arab world, Turkey, Iran, South and
Southeast Asia, East and Central Asia, the Pacific islands, Eastern Europe, the Baltics,
the Nordics, Western and Southern Europe, Latin America, indigenous peoples of the Americas,
the Arctic and Australia, Israel and the Caribbean — with particles, hyphens, apostrophes
and diacritics (``van der Berg``, ``Al-Hashimi``, ``Nguyen Thi``, ``O'Connell``, ``Tjaša``,
``Łukasz``, ``Zoë``). No name comes from Faker or any other library's lists; this package
does not use Faker at all.

Labels. ``Chat.entities`` lists every PII value exactly as written: PERSON (the whole name
as written, never a part of it), EMAIL_ADDRESS, PHONE_NUMBER (US numbers, or international
ones with a country code), STREET_ADDRESS (the street line), IP_ADDRESS, CREDIT_CARD
(Luhn-valid), IBAN_CODE (valid check digits) and US_SSN. ``Chat.technical`` lists text that
must survive redaction — product names, versions, error codes, ticket ids, paths, hosts,
commit hashes, column headers, record keys and status words; none overlaps a PII value.
City names, company names and dates are neutral (in neither list). ``Chat.contexts`` tells,
for each value, in which templates and places it was written.

Independence. The set shares no code and no data with :mod:`evals.pii.corpus` or
:mod:`evals.pii.holdout`, and was written without reading the detector. The generation
logic is in :mod:`.people` and :mod:`.tech` (values), :mod:`.writer` (labels),
:mod:`.blocks` (structures) and :mod:`.chats` (conversations); :mod:`.labels` checks the
labels; the words are in ``names.json``, ``values.json``, ``technical.json``,
``texts.json``, ``blocks.json`` and ``tools.json``.
"""

from __future__ import annotations

from evals.pii.independent.chats import build, plans
from evals.pii.independent.labels import KINDS, Chat, Entity, LabelError, check, texts

__all__ = ["KINDS", "Chat", "Entity", "LabelError", "check", "corpus", "texts"]

SIZE = 260
"""The default number of chats (the evaluation test's size)."""


def corpus(seed: int = 4111, size: int = SIZE) -> list[Chat]:
    """``size`` labelled chats, the same ones for the same ``seed`` and ``size``."""
    if size < 0:
        raise ValueError("size must be >= 0")
    return [build(seed, i, plan) for i, plan in enumerate(plans(seed, size))]
