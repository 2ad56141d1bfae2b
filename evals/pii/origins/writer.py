"""The writer of one chat of the origins set: its random source, people and labels.

A :class:`Writer` fills the templates of one half (``templates_dev.json`` or
``templates_heldout.json``). In a template ``{A}`` is person A's full name, ``{A.given}``
and ``{A.family}`` the parts of it, ``{A.title} {A.family}`` the family name after a title
(only the name is labelled), ``{A.email}``, ``{A.phone}``, ``{A.street}`` that person's
values and ``{A.city}``, ``{A.she}``, ``{A.her}``... neutral words; ``{ip}``, ``{ip2}``,
``{card}``, ``{iban}``, ``{ssn}`` are the chat's values and ``{amount}``, ``{company}``,
``{city}`` neutral; ``[[text]]`` is technical text that must survive, written without the
brackets; ``{B=female}`` (written as nothing) says that the template's words ("my mother")
need person B to be a woman. People are made the first time a template names them, from
the half's names.

Each PII value is recorded with its kind, how it was written (``form:``) and where
(``place:``). :meth:`Writer.verify` then counts every name where it stands alone in the
texts: a count above the number of times it was written means the name is also part of
another word or text of the chat, and the chat is written again from another seed.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evals.pii.origins import values
from evals.pii.origins.data import load
from evals.pii.origins.labels import LabelError, standalone
from evals.pii.origins.values import Name

Message = dict[str, Any]
Turn = list[Message]

_SLOT = re.compile(
    r"\{(?P<sexed>[A-C])=(?P<gender>female|male)\}"
    r"|\{(?P<titled>[A-C])\.title\} \{(?P=titled)\.family\}"
    r"|\{(?P<who>[A-C])(?:\.(?P<attr>[a-z_]+))?\}"
    r"|\{(?P<chat>ip2?|card|iban|ssn|amount|company|city)\}"
    r"|\[\[(?P<tech>.+?)\]\]"
)
"""A slot of a template (see the module's docstring)."""

_PRONOUNS = {
    "female": {"she": "she", "she_cap": "She", "her": "her", "her_cap": "Her", "her_obj": "her"},
    "male": {"she": "he", "she_cap": "He", "her": "his", "her_cap": "His", "her_obj": "him"},
}
_CHAT_VALUES: dict[str, tuple[str, Callable[[random.Random], str]]] = {
    "ip": ("IP_ADDRESS", values.ip),
    "ip2": ("IP_ADDRESS", values.ip),
    "card": ("CREDIT_CARD", values.card),
    "iban": ("IBAN_CODE", values.iban),
    "ssn": ("US_SSN", values.ssn),
}
_TRIES = 50


@dataclass(frozen=True)
class Person:
    """One person of a chat: a name of the half and the values that go with it."""

    name: Name
    title: str
    email: str
    phone: str
    street: str
    city: str


def letters(template: Any) -> set[str]:
    """The people (``A``, ``B``, ``C``) a template, or a JSON template, names."""
    if isinstance(template, str):
        found = (
            m.group("sexed") or m.group("titled") or m.group("who")
            for m in _SLOT.finditer(template)
        )
        return {letter for letter in found if letter}
    if isinstance(template, dict):
        return set().union(*(letters(v) for v in template.values()))
    if isinstance(template, list):
        return set().union(*(letters(v) for v in template))
    return set()


class Writer:
    """One chat being written: its random source, people, values and labels."""

    def __init__(self, r: random.Random, half: str) -> None:
        self.r = r
        self.half = half
        self.cast: dict[str, Person] = {}
        self.ents: dict[str, str] = {}
        """PII value -> kind, in the order written."""
        self.tags: dict[str, set[str]] = {}
        """PII value -> how and where it was written (``form:...``, ``place:...``)."""
        self.writes: Counter[str] = Counter()
        """PERSON value -> how many times it was written on its own."""
        self.tech: dict[str, None] = {}
        """Technical tokens, in the order written."""
        self.place = "opening"
        """Where the text being written goes."""
        self.company: str = r.choice(load("values")["companies"])
        self.city: str = r.choice(load("values")["cities"])
        self._chat_values: dict[str, str] = {}

    # -- people and labels ----------------------------------------------------------------

    def _draw(self, gender: str | None) -> Name:
        draw = values.dev_name if self.half == "dev" else values.heldout_name
        taken = [p.casefold() for q in self.cast.values() for p in (q.name.given, q.name.family)]
        for _ in range(_TRIES):
            name = draw(self.r)
            if gender and name.gender != gender:
                continue
            parts = [name.given.casefold(), name.family.casefold()]
            if parts[0] in parts[1] or parts[1] in parts[0]:
                continue
            if not any(p in q or q in p for p in parts for q in taken):
                return name
        raise LabelError("no name fits the cast")

    def person(self, letter: str, gender: str | None = None) -> Person:
        """Person ``letter`` of the chat, made when first named (of ``gender`` if given)."""
        if letter not in self.cast:
            name = self._draw(gender)
            r = self.r
            self.cast[letter] = Person(
                name=name,
                title=r.choice(load("values")["titles"][name.gender]),
                email=values.email(r, name),
                phone=values.phone(r),
                street=values.street(r, self.half),
                city=r.choice(load("values")["cities"]),
            )
        if gender and self.cast[letter].name.gender != gender:
            raise LabelError(f"person {letter} is not {gender}")
        return self.cast[letter]

    def pii(self, kind: str, value: str, form: str | None = None) -> str:
        """Label ``value`` as PII of ``kind`` written at the current place; return it."""
        known = self.ents.setdefault(value, kind)
        if known != kind:
            raise LabelError(f"{value!r} is {known} and {kind}")
        tags = self.tags.setdefault(value, set())
        tags.add(f"place:{self.place}")
        if form:
            tags.add(f"form:{form}")
            self.writes[value] += 1
        return value

    def t(self, token: str) -> str:
        """Record ``token`` as technical text of the chat; return it."""
        self.tech[token] = None
        return token

    # -- templates ------------------------------------------------------------------------

    def _slot(self, m: re.Match[str]) -> str:
        if m.group("sexed"):
            self.person(m.group("sexed"), m.group("gender"))
            return ""
        if m.group("titled"):
            p = self.person(m.group("titled"))
            return f"{p.title} {self.pii('PERSON', p.name.family, 'titled')}"
        if m.group("who"):
            p = self.person(m.group("who"))
            attr = m.group("attr")
            if attr is None:
                return self.pii("PERSON", p.name.full, "full")
            if attr in ("given", "family"):
                return self.pii("PERSON", getattr(p.name, attr), attr)
            if attr in ("email", "phone", "street"):
                kind = {"email": "EMAIL_ADDRESS", "phone": "PHONE_NUMBER"}.get(attr)
                value: str = getattr(p, attr)
                return self.pii(kind or "STREET_ADDRESS", value)
            if attr in ("title", "city"):
                return str(getattr(p, attr))
            return _PRONOUNS[p.name.gender][attr]
        if key := m.group("chat"):
            if key in _CHAT_VALUES:
                kind, make = _CHAT_VALUES[key]
                if key not in self._chat_values:
                    taken = set(self._chat_values.values())
                    self._chat_values[key] = next(
                        v for v in iter(lambda: make(self.r), None) if v not in taken
                    )
                return self.pii(kind, self._chat_values[key])
            if key == "amount":
                return str(self.r.choice(load("values")["amounts"]))
            return self.company if key == "company" else self.city
        return self.t(m.group("tech"))

    def fill(self, template: str) -> str:
        """``template`` with its slots filled and its values labelled."""
        return _SLOT.sub(self._slot, template)

    def fill_obj(self, template: Any) -> Any:
        """A JSON template (tool arguments, a tool result) with every string filled."""
        if isinstance(template, str):
            return self.fill(template)
        if isinstance(template, dict):
            return {k: self.fill_obj(v) for k, v in template.items()}
        if isinstance(template, list):
            return [self.fill_obj(v) for v in template]
        return template

    def dumps(self, obj: Any) -> str:
        """JSON as a client sends it (non-ASCII letters as they are)."""
        return json.dumps(obj, ensure_ascii=False)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def call_id(self) -> str:
        return f"call_{self.r.randrange(16**12):012x}"

    def verify(self, texts: list[str]) -> None:
        """Every name stands alone in the texts exactly as often as it was written alone."""
        persons = [v for v, kind in self.ents.items() if kind == "PERSON"]
        for name in persons:
            found = sum(len(standalone(t, name, persons)) for t in texts)
            if found != self.writes[name]:
                raise LabelError(f"{name!r} written {self.writes[name]} times, found {found}")
