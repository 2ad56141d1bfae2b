"""The people of the independent set and the shapes of their PII values.

A :class:`Person` gets a name from ``names.json`` — hand-written given and family names
from many regions, in the order its region writes them, a share of them with a family
name from another region — and, when a chat needs them, an e-mail address, a phone number,
a street address, an IP address, a card number, an IBAN and an SSN in the shapes of
``values.json``. Each maker here is a pure function of a :class:`random.Random`; the
:class:`~evals.pii.independent.writer.Writer` labels what they make.
"""

from __future__ import annotations

import random
import re
import string
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from evals.pii.independent.data import load


@dataclass
class Person:
    """A person of a chat: the name as written, its parts, where the person is from.

    ``values`` caches the person's PII and neutral values (``email``, ``phone``,
    ``city``...) so the person keeps them for the whole chat.
    """

    name: str
    given: str
    family: str
    region: str
    values: dict[str, str] = field(default_factory=dict)


def _values(key: str) -> Any:
    return load("values")[key]


def make_person(r: random.Random) -> Person:
    """A person with a hand-written name (see ``names.json``)."""
    regions: dict[str, Any] = load("names")["regions"]
    region = r.choice(sorted(regions))
    home = regions[region]
    given = r.choice(home["given"])
    family_region = region
    if r.random() < _values("mix"):
        family_region = r.choice(sorted(regions))
    family = r.choice(regions[family_region]["family"])
    if home["order"] == "family_given" and family_region == region:
        name = f"{family} {given}"
    else:
        name = f"{given} {family}"
    return Person(name=name, given=given, family=family, region=region)


def fold(text: str) -> str:
    """``text`` in lower-case ASCII letters, digits and hyphens, as an e-mail address has it."""
    text = text.translate(str.maketrans(_values("fold")))
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9-]", "", text.lower())


def email(r: random.Random, p: Person, work_domain: str) -> str:
    """An address made from the person's name, at a personal or the company's domain."""
    g = fold(p.given.split()[0]) or "user"
    f = fold(p.family) or "mail"
    local = r.choice(_values("email_locals")).format(
        g=g, f=f, g0=g[0], f0=f[0], nn=r.randint(2, 98)
    )
    domain = work_domain if r.random() < 0.4 else r.choice(_values("personal_domains"))
    return f"{local}@{domain}"


def _digits(r: random.Random, pattern: str) -> str:
    return "".join(str(r.randint(0, 9)) if ch == "#" else ch for ch in pattern)


def _nanp(r: random.Random, country: str) -> str:
    nanp = _values("nanp")
    exchange = "555"
    while exchange == "555" or exchange[1:] == "11":
        exchange = f"{r.randint(2, 9)}{r.randint(0, 9)}{r.randint(0, 9)}"
    return str(
        r.choice(nanp["formats"]).format(
            a=r.choice(nanp["areas"][country]), e=exchange, n=f"{r.randint(0, 9999):04d}"
        )
    )


def phone(r: random.Random, p: Person) -> str:
    """A US number, or one of the person's region in international form."""
    regions = load("names")["regions"][p.region]["phones"]
    if r.random() < _values("us_phone_share"):
        return _nanp(r, "us")
    country = r.choice(regions)
    if country in _values("nanp")["areas"]:
        return _nanp(r, country)
    return _digits(r, r.choice(_values("phones")[country]))


def address(r: random.Random) -> tuple[str, str, str]:
    """``(street line, city line, city)``: the street line is the labelled value."""
    shapes = _values("addresses")
    if r.random() < shapes["us_share"]:
        unit = r.choice(shapes["us_units"]).format(k=r.randint(2, 40))
        street = f"{r.randint(3, 9899)} {r.choice(shapes['us_streets'])} "
        street += r.choice(shapes["us_suffixes"]) + unit
        city, state, zip_prefix = r.choice(shapes["us_cities"])
        return street, f"{city}, {state} {_digits(r, zip_prefix + '##')}", city
    country = r.choice(shapes["international"])
    street = country["shape"].format(
        street=r.choice(country["street"]), n=r.randint(2, 240), k=r.randint(1, 30)
    )
    line = _digits(r, r.choice(country["city"]))
    return street, line, line.split()[-1]


def ip(r: random.Random) -> str:
    """A public, documentation or private IPv4 address."""
    ips = _values("ips")
    roll = r.random()
    if roll < 0.45:
        first = r.choice(ips["public_first"])
        return f"{first}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
    if roll < 0.7:
        return f"{r.choice(ips['documentation'])}.{r.randint(1, 254)}"
    return str(
        r.choice(ips["private"]).format(
            a=r.randint(0, 255), b=r.randint(0, 255), c=r.randint(1, 254), p=r.randint(16, 31)
        )
    )


def _luhn(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return str((10 - total % 10) % 10)


def card(r: random.Random) -> str:
    """A Luhn-valid card number of a common brand, grouped as people write them."""
    cards = _values("cards")
    brand = r.choice(cards["brands"])
    prefix, length = {
        "visa": ("4", 16),
        "mastercard": (str(r.randint(51, 55)), 16),
        "amex": (r.choice(("34", "37")), 15),
        "discover": ("6011", 16),
    }[brand]
    body = prefix + "".join(str(r.randint(0, 9)) for _ in range(length - len(prefix) - 1))
    number = body + _luhn(body)
    groups = (4, 6, 5) if length == 15 else (4, 4, 4, 4)
    parts, at = [], 0
    for size in groups:
        parts.append(number[at : at + size])
        at += size
    return str(r.choice(cards["separators"])).join(parts)


def _bban(r: random.Random, country: str) -> str:
    iban = _values("iban")
    out = ""
    for part in iban["countries"][country]:
        if part == "bank":
            out += r.choice(iban["bank_codes"][country])
        elif part == "be":
            account = "".join(str(r.randint(0, 9)) for _ in range(10))
            out += account + f"{int(account) % 97 or 97:02d}"
        elif part.startswith("="):
            out += part[1:]
        elif part.endswith("L"):
            out += "".join(r.choice(string.ascii_uppercase) for _ in range(int(part[:-1])))
        else:
            out += "".join(str(r.randint(0, 9)) for _ in range(int(part[:-1])))
    return out


def iban(r: random.Random) -> str:
    """An IBAN with valid check digits, compact or in groups of four."""
    shapes = _values("iban")
    country = r.choice(sorted(shapes["countries"]))
    bban = _bban(r, country)
    check = 98 - int("".join(str(int(ch, 36)) for ch in bban + country + "00")) % 97
    number = f"{country}{check:02d}{bban}"
    if r.random() < shapes["spaced_share"]:
        return " ".join(number[i : i + 4] for i in range(0, len(number), 4))
    return number


def ssn(r: random.Random) -> str:
    """A dashed SSN with a valid area, group and serial."""
    area = r.choice([a for a in range(1, 900) if a != 666])
    sep = _values("ssn")["separator"]
    return f"{area:03d}{sep}{r.randint(1, 99):02d}{sep}{r.randint(1, 9999):04d}"
