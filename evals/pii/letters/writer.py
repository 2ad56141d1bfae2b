"""The people, values and chats of the letters set, made here from its data files.

A chat is drawn from a seed: its people (roles ``A`` the writer, ``B`` the reader, ``C`` and
``D`` the others), its opening (a pasted e-mail, a system prompt with a pasted message, a
contact lookup by tool, a pasted chat log, a first mention by given name alone, or a
technical control), then 1 to 3 later turns by part (given name, family name, title with a
part), some of them with a tool call and its result. Templates write ``{A}`` (the whole
name), ``{A.g}``, ``{A.f}``, ``{A.t}`` (a title, not labelled), ``{A.email}``,
``{A.phone}``, ``{iban}``, ``{card}``, ``{ssn}``, ``{ip}``, ``{street}`` and neutral
``{date}``, ``{subject}``, ``{org}``, ``{city}``, ``{ref}``; ``[[text]]`` is a technical
token. Every written name is counted: a chat whose text holds a name more often than it was
written (a template word equal to a name, a name inside another value) is drawn again.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from evals.pii.letters.labels import Chat, Entity, LabelError, check_chat, standalone

CHAT_KINDS = ("email", "system", "lookup", "chatlog", "first", "control")
"""The openings, the last suffix of a chat id."""

_WEIGHTS = (44, 14, 12, 10, 10, 10)
_ROLES = ("A", "B", "C", "D")
_SLOT = re.compile(r"\{(\w+)(?:\.(\w+))?\}|\[\[(.+?)\]\]")


@cache
def load(name: str) -> Any:
    """One data file of this package (``names``, ``templates`` or ``values``), parsed."""
    if name not in ("names", "templates", "values"):
        raise KeyError(name)
    return json.loads((Path(__file__).parent / f"{name}.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Person:
    """A name of ``names.json``."""

    full: str
    given: str
    family: str
    gender: str
    origin: str


def all_names() -> list[Person]:
    """Every name of ``names.json``, in file order."""
    return [
        Person(n["full"], n["given"], n["family"], n["gender"], origin)
        for origin, names in load("names")["origins"].items()
        for n in names
    ]


def _draw_person(r: random.Random) -> Person:
    """About one in ten has a given name that is also an English word."""
    names = all_names()
    words = set(load("names")["word_given"])
    if r.random() < 0.1:
        return r.choice([n for n in names if n.given in words])
    origin = r.choice(sorted(load("names")["origins"]))
    return r.choice([n for n in names if n.origin == origin])


def _fold(text: str) -> str:
    text = text.replace("\u0131", "i").replace("ł", "l").replace("Ł", "L").replace("đ", "d")
    text = text.replace("Đ", "D")
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if c.isascii() and (c.isalnum() or c in " -")).lower()


def _digits(r: random.Random, pattern: str) -> str:
    return "".join(str(r.randrange(10)) if c == "#" else c for c in pattern)


def _luhn(r: random.Random) -> str:
    pattern = r.choice(load("values")["cards"])
    body = [int(c) for c in _digits(r, pattern)[:-1]]
    total = sum(d if i % 2 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(body[::-1]))
    digits = "".join(map(str, body)) + str((10 - total % 10) % 10)
    if len(digits) == 15:
        return f"{digits[:4]} {digits[4:10]} {digits[10:]}"
    sep = r.choice([" ", "-", ""])
    return sep.join(digits[i : i + 4] for i in range(0, 16, 4))


def _iban(r: random.Random) -> str:
    country, layout = r.choice(sorted(load("values")["ibans"].items()))
    bban = ""
    for kind, n in re.findall(r"([an])(\d+)", layout):
        pool = "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if kind == "a" else "0123456789"
        bban += "".join(r.choice(pool) for _ in range(int(n)))
    number = int("".join(str(int(c, 36)) for c in bban + country + "00"))
    compact = f"{country}{98 - number % 97:02d}{bban}"
    if r.random() < 0.7:
        return " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))
    return compact


def _ssn(r: random.Random) -> str:
    area = r.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"


@dataclass
class Writer:
    """Renders the templates of one chat and records what it wrote."""

    r: random.Random
    people: dict[str, Person]
    entities: dict[str, str] = field(default_factory=dict)  # value -> kind, in order
    contexts: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    technical: list[str] = field(default_factory=list)
    cache: dict[str, str] = field(default_factory=dict)
    introduced: set[str] = field(default_factory=set)
    written: list[tuple[str, Counter[str]]] = field(default_factory=list)
    _counts: Counter[str] = field(default_factory=Counter)

    def _value(self, key: str, kind: str, make: Any, place: str) -> str:
        if key not in self.cache:
            self.cache[key] = make()
        value = self.cache[key]
        self.entities.setdefault(value, kind)
        self.contexts[value].add(f"place:{place}")
        return value

    def _person(self, role: str, part: str | None, place: str) -> str:
        p, r = self.people[role], self.r
        if part == "t":
            if f"{role}.t" not in self.cache:
                title = "Dr." if r.random() < 0.2 else ("Ms." if p.gender == "f" else "Mr.")
                self.cache[f"{role}.t"] = title
            return self.cache[f"{role}.t"]
        if part == "email":
            domain = r.choice(load("values")["domains"])
            given, family = _fold(p.given).replace(" ", ""), _fold(p.family).replace(" ", "")
            local = r.choice([f"{given}.{family}", f"{given[0]}{family}", f"{given}_{family}"])
            return self._value(f"{role}.email", "EMAIL_ADDRESS", lambda: f"{local}@{domain}", place)
        if part == "phone":
            values = load("values")
            patterns = values["phones"][p.origin] + (
                values["us_phone"] if p.origin == "english" else []
            )
            return self._value(
                f"{role}.phone", "PHONE_NUMBER", lambda: _digits(r, r.choice(patterns)), place
            )
        value, form = {None: (p.full, "full"), "g": (p.given, "given"), "f": (p.family, "family")}[
            part
        ]
        self.entities.setdefault(value, "PERSON")
        self.contexts[value] |= {f"form:{form}", f"place:{place}"}
        self.introduced.add(role)
        self._counts[value] += 1
        return value

    def slot(self, m: re.Match[str], place: str) -> str:
        name, part, token = m.group(1), m.group(2), m.group(3)
        r, values = self.r, load("values")
        templates = load("templates")
        if token is not None:
            if token not in self.technical:
                self.technical.append(token)
            return token
        if name in _ROLES:
            return self._person(name, part, place)
        if name == "iban":
            return self._value("iban", "IBAN_CODE", lambda: _iban(r), place)
        if name == "card":
            return self._value("card", "CREDIT_CARD", lambda: _luhn(r), place)
        if name == "ssn":
            return self._value("ssn", "US_SSN", lambda: _ssn(r), place)
        if name == "ip":
            ip = f"{r.randint(11, 223)}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
            return self._value("ip", "IP_ADDRESS", lambda: ip, place)
        if name == "street":
            line = f"{r.randint(12, 9899)} {r.choice(values['streets'])}"
            line += r.choice(values["street_suffix"])
            return self._value("street", "STREET_ADDRESS", lambda: line, place)
        if name == "ref":
            return self.cache.setdefault("ref", f"REF-{r.randint(10000, 99999)}")
        if name in ("date", "subject", "org", "city"):
            return self.cache.setdefault(name, r.choice(templates[name]))
        raise KeyError(name)

    def render(self, template: str, place: str) -> str:
        """``template`` written, its names counted against the text (see :meth:`verify`)."""
        self._counts = Counter()
        text = _SLOT.sub(lambda m: self.slot(m, place), template)
        self.written.append((text, self._counts))
        return text

    def render_json(self, template: Any, place: str) -> str:
        """A JSON template written, as compact JSON (as the proxy re-encodes it)."""
        counts: Counter[str] = Counter()

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                self._counts = Counter()
                out = _SLOT.sub(lambda m: self.slot(m, place), value)
                counts.update(self._counts)
                return out
            if isinstance(value, list):
                return [walk(v) for v in value]
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            return value

        text = json.dumps(walk(template), ensure_ascii=False, separators=(",", ":"))
        self.written.append((text, counts))
        return text

    def verify(self) -> None:
        """Every name stands in every text exactly as often as it was written there."""
        persons = [v for v, k in self.entities.items() if k == "PERSON"]
        for text, counts in self.written:
            for name in persons:
                if len(standalone(text, name, persons)) != counts[name]:
                    raise LabelError(f"{name!r} written {counts[name]} times in {text[:60]!r}")


def _roles(template: str) -> set[str]:
    return {m.group(1) for m in _SLOT.finditer(template) if m.group(1) in _ROLES}


def _user(w: Writer, texts: list[str]) -> dict[str, Any]:
    if len(texts) > 1 and w.r.random() < 0.5:
        return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}
    return {"role": "user", "content": "\n\n".join(texts)}


def _email(w: Writer) -> list[str]:
    t, r = load("templates"), w.r
    parts = []
    if r.random() < 0.6:
        parts.append(r.choice(t["header"]))
    parts.append(r.choice(t["greeting"]))
    parts += r.sample(t["body"], r.choice([1, 1, 2]))
    parts.append(r.choice(t["signoff"]) + "\n" + r.choice(t["signature"]))
    if r.random() < 0.35:
        parts.append(r.choice(t["ps"]))
    if r.random() < 0.35:
        parts.append(r.choice(t["quoted"]))
    return [w.render(r.choice(t["intro"]), "opening"), w.render("\n\n".join(parts), "email")]


def _call(w: Writer, i: int, k: int, spec: dict[str, Any]) -> list[dict[str, Any]]:
    call_id = f"call_{i}_{k}"
    arguments = w.render_json(spec["arguments"], "tool_arguments")
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": spec["name"], "arguments": arguments},
    }
    result = w.render_json(spec["result"], "tool_result")
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def _opening(w: Writer, i: int, kind: str) -> list[dict[str, Any]]:
    t, r = load("templates"), w.r
    if kind == "email":
        messages: list[dict[str, Any]] = []
        if r.random() < 0.25:
            messages.append({"role": "system", "content": "You are a careful writing assistant."})
        return [*messages, _user(w, _email(w))]
    if kind == "system":
        system = w.render(r.choice(t["system"]), "system")
        return [
            {"role": "system", "content": system},
            _user(w, [w.render(r.choice(t["system_user"]), "opening")]),
        ]
    if kind == "lookup":
        user = w.render(r.choice(t["lookup_user"]), "opening")
        spec = {
            "name": "lookup_contact",
            "arguments": {"query": "{A}"},
            "result": r.choice(t["lookup_result"]),
        }
        return [_user(w, [user]), *_call(w, i, 0, spec)]
    if kind == "chatlog":
        intro = w.render(r.choice(t["chatlog_intro"]), "opening")
        return [_user(w, [intro, w.render(r.choice(t["chatlog"]), "chatlog")])]
    return [_user(w, [w.render(r.choice(t["first"]), "opening")])]


def _follow_up(w: Writer, i: int, k: int, kind: str) -> list[dict[str, Any]]:
    t, r = load("templates"), w.r

    def fits(template: str) -> bool:
        if kind == "first" and re.search(r"\{[A-D](?:\.[tf])?\}", template):
            return False  # a given name alone, never the whole name nor the family name
        return bool(_roles(template)) and _roles(template) <= w.introduced

    if r.random() < 0.2:
        pairs = [
            (u, s)
            for u, s in zip(t["tool_user"], t["tool_calls"], strict=True)
            if fits(u) and fits(json.dumps(s))
        ]
        if pairs:
            user, spec = r.choice(pairs)
            return [_user(w, [w.render(user, "follow_up")]), *_call(w, i, k, spec)]
    pool = [f for f in t["follow"] if fits(f)]
    sentences = [
        w.render(f, "follow_up") for f in r.sample(pool, min(len(pool), r.choice([1, 2, 2, 3, 3])))
    ]
    if r.random() < 0.3:
        return [_user(w, sentences)]
    return [_user(w, [(" " if r.random() < 0.6 else "\n").join(sentences)])]


def _control(r: random.Random, i: int) -> Chat:
    w = Writer(r, {})
    turns = r.choice(load("templates")["control"])
    chat_turns = tuple((_user(w, [w.render(text, "opening")]),) for text in turns)
    return Chat(f"letters-{i:03d}-control", chat_turns, (), tuple(w.technical), r.random() < 0.4)


def build(seed: int, i: int) -> Chat:
    """Chat ``i`` of the set of ``seed``, drawn again until its labels are exact."""
    kind = random.Random(f"{seed}:{i}:kind").choices(CHAT_KINDS, _WEIGHTS)[0]
    for attempt in range(200):
        r = random.Random(f"{seed}:{i}:{attempt}")
        if kind == "control":
            chat = _control(r, i)
            check_chat(chat)
            return chat
        people: dict[str, Person] = {}
        while len(people) < 4:
            p = _draw_person(r)
            if all(p.origin != q.origin or r.random() < 0.3 for q in people.values()):
                people[_ROLES[len(people)]] = p
        w = Writer(r, people)
        turns = [tuple(_opening(w, i, kind))]
        for k in range(1, r.choice([1, 2, 2, 3]) + 1):
            turns.append(tuple(_follow_up(w, i, k, kind)))
        try:
            w.verify()
            chat = Chat(
                id=f"letters-{i:03d}-{kind}",
                turns=tuple(turns),
                entities=tuple(Entity(k, v) for v, k in w.entities.items()),
                technical=tuple(w.technical),
                stream=r.random() < 0.4,
                contexts=tuple((v, tuple(sorted(w.contexts[v]))) for v in w.entities),
            )
            check_chat(chat)
        except LabelError:
            continue
        return chat
    raise LabelError(f"chat {i} of seed {seed}: no exact draw")
