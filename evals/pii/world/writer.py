"""The writer of one chat of the world set: its random source, its people and its labels.

A template names people by letter: ``{U}`` is the user, ``{A}`` to ``{D}`` other people,
each made from ``names.json`` the first time a template names them. ``{A}`` is the full
name; ``{A:given}`` and ``{A:family}`` the parts written alone (the whole name for a name
without such a part); ``{A:surname}`` the family name or nothing; ``{A:titled}`` a title
and the family name (``Dr. Okonkwo-Adeyemi``) or an honorific of the name's origin with a
part (``chị Hà``, ``Tanaka-san``, ``Pak Bambang``): only the name part is labelled;
``{A:email}``, ``{A:phone}``, ``{A:street}`` that person's values and ``{A:city}`` a
neutral city. ``{ip}``, ``{ip2}``, ``{card}``, ``{iban}``, ``{ssn}`` are the chat's values;
``{amount}``, ``{org}``, ``{town}``, ``{date}``, ``{ref}`` neutral words; ``[[text]]`` is
technical text that must survive, written without the brackets.

Every value is recorded with its kind, its form and its place. :meth:`Writer.verify` then
counts each name where it stands alone in the chat's texts: a count other than the number
of times it was written means the name is also inside another word or text of the chat,
and the chat is written again from another seed.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evals.pii.world import values
from evals.pii.world.data import load
from evals.pii.world.labels import LabelError, standalone
from evals.pii.world.values import Name

LETTERS = "UABCD"

_SLOT = re.compile(
    r"\{(?P<who>[UA-D])(?::(?P<attr>[a-z]+))?\}"
    r"|\{(?P<chat>ip2?|card|iban|ssn|amount|org|town|date|ref)\}"
    r"|\[\[(?P<tech>.+?)\]\]",
    re.S,
)
_LETTER = re.compile(r"\{([UA-D])(?=[:}])")
_CHAT_VALUES: dict[str, tuple[str, Callable[[random.Random], str]]] = {
    "ip": ("IP_ADDRESS", values.ip),
    "ip2": ("IP_ADDRESS", values.ip),
    "card": ("CREDIT_CARD", values.card),
    "iban": ("IBAN_CODE", values.iban),
    "ssn": ("US_SSN", values.ssn),
}
_HONORIFIC_SHARE = 0.4
_TRIES = 60


def letters(template: Any) -> set[str]:
    """The people a template (a string, or a JSON template) names."""
    if isinstance(template, str):
        return set(_LETTER.findall(template))
    if isinstance(template, dict):
        return set().union(*(letters(v) for v in template.values()))
    if isinstance(template, list):
        return set().union(*(letters(v) for v in template))
    return set()


def remap(template: Any, mapping: dict[str, str]) -> Any:
    """``template`` with its people's letters replaced (``{A:given}`` -> ``{C:given}``)."""
    if isinstance(template, str):
        return _LETTER.sub(lambda m: "{" + mapping.get(m.group(1), m.group(1)), template)
    if isinstance(template, dict):
        return {k: remap(v, mapping) for k, v in template.items()}
    if isinstance(template, list):
        return [remap(v, mapping) for v in template]
    return template


@dataclass(frozen=True)
class Person:
    """One person of a chat: a name and the values that go with it."""

    name: Name
    title: str
    email: str
    phone: str
    street: str
    city: str


class Writer:
    """One chat being written: its random source, people, values and labels."""

    def __init__(self, r: random.Random, deck: Sequence[Name] = (), start: int = 0) -> None:
        self.r = r
        self.deck = deck
        """The names to draw from in turn (when empty, drawn at random)."""
        self.drawn = start
        v = load("values")
        self.cast: dict[str, Person] = {}
        self.ents: dict[str, str] = {}
        """PII value -> kind, in the order written."""
        self.tags: dict[str, set[str]] = {}
        """PII value -> its forms and places."""
        self.writes: Counter[str] = Counter()
        """PERSON value -> how many times it was written on its own."""
        self.tech: dict[str, None] = {}
        self.place = "opening"
        self.org: str = r.choice(v["orgs"])
        self.town: str = r.choice(v["cities"])
        self.ref: str = r.choice(v["refs"])
        self._chat_values: dict[str, str] = {}
        self._last_titled: dict[str, str] = {}
        """Letter -> the part of the name last written with a title."""

    # -- people ---------------------------------------------------------------------------

    def _fits(self, name: Name) -> bool:
        """No part of ``name`` is inside a name of the cast, nor theirs inside it."""
        full = name.full.casefold()
        for p in self.cast.values():
            other = p.name.full.casefold()
            if any(part.casefold() in other for part in name.parts()) or full in other:
                return False
            if any(part.casefold() in full for part in p.name.parts()) or other in full:
                return False
        return True

    def person(self, letter: str) -> Person:
        """Person ``letter`` of the chat, made the first time it is named."""
        if letter not in self.cast:
            for _ in range(_TRIES):
                if self.deck:
                    name = self.deck[self.drawn % len(self.deck)]
                    self.drawn += 1
                else:
                    name = values.draw_name(self.r)
                if self._fits(name):
                    break
            else:
                raise LabelError("no name fits the cast")
            v = load("values")
            self.cast[letter] = Person(
                name=name,
                title=self.r.choice(v["titles"][name.gender]),
                email=values.email(self.r, name),
                phone=values.phone(self.r),
                street=values.street(self.r),
                city=self.r.choice(v["cities"]),
            )
        return self.cast[letter]

    def others(self) -> list[str]:
        """The letters of the people of the chat other than the user, in order."""
        return [k for k in LETTERS[1:] if k in self.cast]

    def free_letter(self) -> str | None:
        """The next letter no person of the chat has yet."""
        return next((k for k in LETTERS[1:] if k not in self.cast), None)

    # -- labels ---------------------------------------------------------------------------

    def pii(self, kind: str, value: str, form: str | None = None) -> str:
        """Label ``value`` (of ``kind``, written at the current place); return it."""
        if self.ents.setdefault(value, kind) != kind:
            raise LabelError(f"{value!r} is {self.ents[value]} and {kind}")
        tags = self.tags.setdefault(value, set())
        tags.add(f"place:{self.place}")
        if form:
            tags.add(f"form:{form}")
            self.writes[value] += 1
        return value

    def _name(self, p: Person, value: str, form: str) -> str:
        return self.pii("PERSON", value, "full" if value == p.name.full else form)

    def _titled(self, letter: str, p: Person) -> str:
        name = p.name
        fitting = [
            h[2:]
            for h in name.honorifics
            if h[0] in ("*", name.gender)
            and ("{given}" not in h or name.given)
            and ("{family}" not in h or name.family)
        ]
        if fitting and self.r.random() < _HONORIFIC_SHARE:
            pattern = self.r.choice(fitting)
            key = "given" if "{given}" in pattern else "family"
            part = self._last_titled[letter] = self._name(p, getattr(name, key), "titled")
            return pattern.replace("{" + key + "}", part)
        part = self._last_titled[letter] = name.family or name.given or name.full
        return f"{p.title} {self._name(p, part, 'titled')}"

    # -- templates ------------------------------------------------------------------------

    def _slot(self, m: re.Match[str]) -> str:
        if who := m.group("who"):
            p = self.person(who)
            attr = m.group("attr")
            n = p.name
            if attr is None:
                return self._name(p, n.full, "full")
            if attr == "given":
                return self._name(p, n.given or n.full, "given")
            if attr == "family":
                return self._name(p, n.family or n.given or n.full, "family")
            if attr == "surname":
                return self._name(p, n.family, "family") if n.family else ""
            if attr == "titled":
                return self._titled(who, p)
            if attr in ("email", "phone", "street"):
                kind = {"email": "EMAIL_ADDRESS", "phone": "PHONE_NUMBER"}.get(attr)
                return self.pii(kind or "STREET_ADDRESS", getattr(p, attr))
            if attr == "city":
                return p.city
            raise KeyError(attr)
        if key := m.group("chat"):
            if key in _CHAT_VALUES:
                kind, make = _CHAT_VALUES[key]
                if key not in self._chat_values:
                    taken = set(self._chat_values.values())
                    value = make(self.r)
                    while value in taken:
                        value = make(self.r)
                    self._chat_values[key] = value
                return self.pii(kind, self._chat_values[key])
            v = load("values")
            if key == "amount":
                return str(self.r.choice(v["amounts"]))
            if key == "date":
                return str(self.r.choice(v["dates"]))
            return {"org": self.org, "town": self.town, "ref": self.ref}[key]
        token = m.group("tech")
        self.tech[token] = None
        return token

    def fill(self, template: str) -> str:
        """``template`` with its slots filled and its values labelled.

        A template that names one person in two forms (``{A}`` and ``{A:given}``; the given
        name and a title with a part) needs those forms to differ: for a name with no family
        name ("Use Sutrisno on the envelope and just Sutrisno inside the card") the chat is
        written again.
        """
        text = _SLOT.sub(self._slot, template)
        for letter in letters(template):
            p = self.cast[letter]
            n = p.name
            forms = {
                attr: value
                for attr, value in (
                    ("full", n.full),
                    ("given", n.given or n.full),
                    ("family", n.family or n.given or n.full),
                )
                if ("{" + letter + ("}" if attr == "full" else f":{attr}}}")) in template
            }
            if len(set(forms.values())) < len(forms):
                raise LabelError(f"{n.full!r} would be written twice the same way")
            titled = "{" + letter + ":titled}" in template
            if titled and self._last_titled.get(letter) == forms.get("given"):
                raise LabelError(f"{n.full!r}: a title with the given name, then the name")
        return text

    def fill_obj(self, template: Any) -> Any:
        """A JSON template (tool arguments, a tool result) with every string filled."""
        if isinstance(template, str):
            return self.fill(template)
        if isinstance(template, dict):
            return {k: self.fill_obj(v) for k, v in template.items()}
        if isinstance(template, list):
            return [self.fill_obj(v) for v in template]
        return template

    @staticmethod
    def dumps(obj: Any) -> str:
        """JSON as clients send it (letters outside ASCII as they are)."""
        return json.dumps(obj, ensure_ascii=False)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def call_id(self) -> str:
        return f"call_{self.r.randrange(16**10):010x}"

    def verify(self, texts: list[str]) -> None:
        """Each name stands alone in ``texts`` exactly as often as it was written alone."""
        persons = [v for v, kind in self.ents.items() if kind == "PERSON"]
        for name in persons:
            found = sum(len(standalone(t, name, persons)) for t in texts)
            if found != self.writes[name]:
                raise LabelError(f"{name!r} written {self.writes[name]} times, found {found}")
