"""The writer of one chat of the independent set: its random source, people and labels.

A :class:`Writer` makes the chat's people and values and records, as it writes them, every
PII value with its kind and the context it was written in, and every technical token. A
value that would overlap another one (as a string) is drawn again; when that fails, the
chat raises :class:`~evals.pii.independent.labels.LabelError` and is written again from
another seed. :meth:`Writer.fill` fills the sentence templates of ``texts.json``.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable, Sequence
from typing import Any

from evals.pii.independent import people, tech
from evals.pii.independent.data import load
from evals.pii.independent.labels import LabelError
from evals.pii.independent.people import Person

Message = dict[str, Any]
Turn = list[Message]

PII_FIELDS = {
    "name": "PERSON",
    "email": "EMAIL_ADDRESS",
    "phone": "PHONE_NUMBER",
    "ip": "IP_ADDRESS",
    "street": "STREET_ADDRESS",
    "card": "CREDIT_CARD",
    "iban": "IBAN_CODE",
    "ssn": "US_SSN",
}
"""A person's fields that are PII, and their entity kinds."""

NEUTRAL_FIELDS = frozenset({"city", "cityline"})
"""A person's fields that are neither PII nor technical."""

_SLOT = re.compile(r"\{([a-z_]+?)(\d?)\}|\[\[(.+?)\]\]")
"""``{slot}`` or ``{slot1}`` in a template, or a literal technical token ``[[text]]``."""

_TRIES = 50


class Writer:
    """One chat being written: its random source, people, values and labels."""

    def __init__(self, r: random.Random) -> None:
        self.r = r
        self.ents: dict[str, str] = {}
        """PII value -> kind, in the order written."""
        self.tech: dict[str, None] = {}
        """Technical tokens, in the order written."""
        self.contexts: dict[str, set[str]] = {}
        """PII value -> the contexts it was written in."""
        self.context = "prose"
        """Where the text being written goes (a block template, prose, a tool call...)."""
        self.cast: list[Person] = []
        company, domain = r.choice(load("values")["companies"])
        self.company: str = company
        self.domain: str = domain
        self.role: str = r.choice(load("texts")["roles"])
        self._slots: dict[str, str] = {}

    # -- labels -------------------------------------------------------------------------

    def pii(self, kind: str, value: str) -> str:
        """Label ``value`` (written in the current context) as PII of ``kind``; return it."""
        known = self.ents.setdefault(value, kind)
        if known != kind:
            raise LabelError(f"{value!r} is {known} and {kind}")
        self.contexts.setdefault(value, set()).add(self.context)
        return value

    def t(self, token: str) -> str:
        """Record ``token`` as technical text of the chat; return it."""
        if any(token in v or v in token for v in self.ents):
            raise LabelError(f"technical {token!r} overlaps a PII value")
        self.tech[token] = None
        return token

    def _taken(self) -> list[str]:
        values = [v for p in self.cast for k, v in p.values.items() if k not in NEUTRAL_FIELDS]
        return [*self.ents, *self.tech, *self._slots.values(), *values]

    def _fresh(self, make: Callable[[], str], pii: bool) -> str:
        """A value from ``make`` that overlaps no value or token of the chat."""
        for _ in range(_TRIES):
            value = make()
            if pii:
                clash = any(value in o or o in value for o in self._taken())
            else:
                values = [*self.ents, *(v for p in self.cast for v in p.values.values())]
                clash = any(value in v or v in value for v in values)
            if not clash:
                return value
        raise LabelError("no fresh value")

    # -- people and their values --------------------------------------------------------

    def person(self) -> Person:
        """A new person of the chat (named, not yet written anywhere)."""
        for _ in range(_TRIES):
            p = people.make_person(self.r)
            taken = self._taken() + [q.name for q in self.cast]
            if not any(p.name in o or o in p.name for o in taken):
                self.cast.append(p)
                return p
        raise LabelError("no fresh person")

    def _make(self, p: Person, field: str) -> None:
        r = self.r
        if field in ("street", "cityline", "city"):
            street, line, city = people.address(r)
            p.values["street"] = self._fresh(lambda: street, pii=True)
            p.values["cityline"], p.values["city"] = line, city
            return
        makers: dict[str, Callable[[], str]] = {
            "email": lambda: people.email(r, p, self.domain),
            "phone": lambda: people.phone(r, p),
            "ip": lambda: people.ip(r),
            "card": lambda: people.card(r),
            "iban": lambda: people.iban(r),
            "ssn": lambda: people.ssn(r),
        }
        p.values[field] = self._fresh(makers[field], pii=True)

    def value(self, p: Person, field: str) -> str:
        """The person's ``field`` (made once per chat), labelled when it is PII."""
        if field == "name":
            return self.pii("PERSON", p.name)
        if field not in p.values:
            self._make(p, field)
        value = p.values[field]
        return self.pii(PII_FIELDS[field], value) if field in PII_FIELDS else value

    # -- technical tokens ---------------------------------------------------------------

    def slot(self, name: str, key: str = "") -> str:
        """The chat's technical token for ``{name}`` / ``{name2}`` (the same each time)."""
        full = name + key
        if full not in self._slots:
            if name == "version":
                of = self.slot("product", key)
                self._slots[full] = self._fresh(lambda: tech.version(self.r, of), pii=False)
            else:
                self._slots[full] = self._fresh(lambda: tech.make(self.r, name), pii=False)
        return self.t(self._slots[full])

    def fresh_tech(self, name: str) -> str:
        """A new technical token for ``name`` (a table row's own status, ticket...)."""
        if name == "version":
            of = self.slot("product")
            return self.t(self._fresh(lambda: tech.version(self.r, of), pii=False))
        return self.t(self._fresh(lambda: tech.make(self.r, name), pii=False))

    def field(self, p: Person, name: str, fresh: bool = True) -> str:
        """A table cell or record field: the person's value, or a technical token."""
        if name in PII_FIELDS or name in NEUTRAL_FIELDS:
            return self.value(p, name)
        return self.fresh_tech(name) if fresh else self.slot(name)

    # -- templates ----------------------------------------------------------------------

    def fill(self, template: str, cast: Sequence[Person]) -> str:
        """``template`` with its slots filled: ``{name1}`` is ``cast[1]``'s name."""

        def one(m: re.Match[str]) -> str:
            if m.group(3) is not None:
                return self.t(m.group(3))
            name, index = m.group(1), m.group(2)
            if name in PII_FIELDS or name in NEUTRAL_FIELDS:
                return self.value(cast[int(index or 0)], name)
            if name == "company":
                return self.company
            if name == "role":
                return self.role
            if name not in tech.SLOTS:
                raise KeyError(f"unknown slot {name!r} in {template!r}")
            return self.slot(name, index)

        return _SLOT.sub(one, template)

    def fill_obj(self, obj: Any, cast: Sequence[Person]) -> Any:
        """:meth:`fill` applied to every string of a JSON-like object."""
        if isinstance(obj, str):
            return self.fill(obj, cast)
        if isinstance(obj, list):
            return [self.fill_obj(item, cast) for item in obj]
        if isinstance(obj, dict):
            return {key: self.fill_obj(item, cast) for key, item in obj.items()}
        return obj

    def pick(self, options: Sequence[Any]) -> Any:
        """One of ``options``."""
        return self.r.choice(options)

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.r.random() < p

    def dumps(self, obj: Any) -> str:
        """JSON text as a tool or a person writes it, compact or indented, UTF-8 kept."""
        return json.dumps(obj, ensure_ascii=False, indent=self.r.choice((None, 2)))

    def call_id(self) -> str:
        """A tool call id in the OpenAI shape."""
        return "call_" + "".join(
            self.r.choice(string.ascii_letters + string.digits) for _ in range(24)
        )
