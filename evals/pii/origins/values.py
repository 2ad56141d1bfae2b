"""The structured values of the origins set, made here (no Faker): people's names drawn from
the half's list, e-mail addresses, phone numbers, street lines, cards, IBANs, SSNs, IPs.

Cards pass the Luhn check, IBANs carry valid ISO 13616 check digits for the BBAN layout of
their country, SSNs are in the issued ranges, US phone numbers have real area codes and no
555 or N11 exchange, international ones follow each country's mobile numbering.
"""

from __future__ import annotations

import random
import re
import string
import unicodedata
from dataclasses import dataclass

from evals.pii.origins.data import load


@dataclass(frozen=True)
class Name:
    """A person's name as the half's list gives it."""

    given: str
    family: str
    full: str
    gender: str  # "female" or "male"
    origin: str  # a mimesis locale (dev) or an origin of ``names_heldout.json``


def dev_name(r: random.Random) -> Name:
    """A name of the development half: a mimesis locale's given and family name."""
    locales = load("names_dev")["locales"]
    locale = r.choice(sorted(locales))
    gender = r.choice(("female", "male"))
    lists = locales[locale][gender]
    given, family = r.choice(lists["given"]), r.choice(lists["family"])
    return Name(given, family, f"{given} {family}", gender, locale)


def heldout_name(r: random.Random) -> Name:
    """A name of the held-out half: an origin's names, in that origin's order, with the
    middle word some origins write between them (``Thị``, ``bin``)."""
    origins = load("names_heldout")["origins"]
    key = r.choice(sorted(origins))
    origin = origins[key]
    gender = r.choice(("female", "male"))
    given = r.choice(origin[gender])
    family = r.choice(origin.get(f"family_{gender}") or origin["family"])
    middle = [r.choice(origin[f"middle_{gender}"])] if f"middle_{gender}" in origin else []
    words = (
        [family, *middle, given] if origin["order"] == "family given" else [given, *middle, family]
    )
    return Name(given, family, " ".join(words), gender, key)


_FOLD = str.maketrans(
    {"ł": "l", "ø": "o", "æ": "ae", "ß": "ss", "đ": "d", "\u0131": "i", "þ": "th", "ð": "d",
     "œ": "oe", "ə": "e", "ħ": "h"}
)  # fmt: skip


def ascii_word(text: str) -> str:
    """``text`` folded to lower-case ASCII letters (``Wiśniewska`` -> ``wisniewska``)."""
    folded = unicodedata.normalize("NFKD", text.lower().translate(_FOLD))
    return "".join(c for c in folded if c in string.ascii_lowercase)


def email(r: random.Random, name: Name) -> str:
    """An e-mail address made from a name, in one of the usual shapes."""
    g, f = ascii_word(name.given) or "info", ascii_word(name.family) or "mail"
    local = r.choice(
        (f"{g}.{f}", f"{g}{f}", f"{g[0]}.{f}", f"{f}.{g}", f"{g}_{f}{r.randint(70, 99)}",
         f"{g}{r.randint(1, 99)}", f"{f}{g[0]}", f"{g}.{f[0]}")
    )  # fmt: skip
    return f"{local}@{r.choice(load('values')['domains'])}"


def _digits(r: random.Random, pattern: str) -> str:
    """``#`` a digit, ``[a-b]`` a digit from a to b, anything else as it is."""
    return re.sub(
        r"#|\[(\d)-(\d)\]|\[(\d+)\]",
        lambda m: (
            str(r.randint(0, 9))
            if m.group(0) == "#"
            else str(r.randint(int(m.group(1)), int(m.group(2))))
            if m.group(1)
            else r.choice(m.group(3))
        ),
        pattern,
    )


def us_phone(r: random.Random) -> str:
    """A US number with a real area code; the exchange is never 555 nor N11."""
    values = load("values")
    while True:
        x = f"{r.randint(2, 9)}{r.randint(0, 9)}{r.randint(0, 9)}"
        if x != "555" and x[1:] != "11":
            break
    area, y = r.choice(values["us_area_codes"]), f"{r.randint(0, 9999):04d}"
    pattern: str = r.choice(values["us_phone_formats"])
    return pattern.format(a=area, x=x, y=y)


def phone(r: random.Random) -> str:
    """A US number (half the time) or an international one with its country code."""
    if r.random() < 0.5:
        return us_phone(r)
    return _digits(r, r.choice(load("values")["intl_phones"]))


def street(r: random.Random, half: str) -> str:
    """A street line of the half's list: a US one or one of another country."""
    streets = load("values")["streets"][half]
    pattern: str = r.choice(streets["us" if r.random() < 0.5 else "intl"])
    return pattern.format(n=r.randint(2, 240), m=r.randint(1, 19))


def card(r: random.Random) -> str:
    """A Luhn-valid card number of a known network, grouped as printed or not."""
    prefix, length = r.choice(load("values")["cards"])
    digits = [int(c) for c in prefix] + [r.randint(0, 9) for _ in range(length - len(prefix) - 1)]
    total = 0
    for i, d in enumerate(reversed(digits)):  # the check digit will stand right of these
        total += (d * 2 - 9 if d > 4 else d * 2) if i % 2 == 0 else d
    number = "".join(map(str, digits)) + str((10 - total % 10) % 10)
    groups: list[str]
    if length == 15:
        groups = [number[:4], number[4:10], number[10:]]
    else:
        groups = [number[i : i + 4] for i in range(0, 16, 4)]
    return r.choice((" ", " ", "-", "")).join(groups)


def iban(r: random.Random) -> str:
    """An IBAN of a listed country with valid check digits, compact or in groups of four."""
    specs = load("values")["ibans"]
    country = r.choice(sorted(specs))
    bban = ""
    for count, kind in re.findall(r"(\d+)([na])", specs[country]):
        alphabet = string.digits if kind == "n" else string.ascii_uppercase
        bban += "".join(r.choice(alphabet) for _ in range(int(count)))
    moved = bban + country + "00"
    check = 98 - int("".join(str(int(c, 36)) for c in moved)) % 97
    value = f"{country}{check:02d}{bban}"
    if r.random() < 0.5:
        return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    return value


def ssn(r: random.Random) -> str:
    """A dashed SSN in the issued ranges, not a run of one digit."""
    while True:
        area = r.randint(1, 899)
        if area == 666:
            continue
        value = f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"
        if len(set(value.replace("-", ""))) > 2:
            return value


def ip(r: random.Random) -> str:
    """A public-looking IPv4 address, or (one time in five) an IPv6 one."""
    if r.random() < 0.2:
        head = r.choice(("2a02", "2001", "2604", "2a01", "2c0f"))
        return ":".join([head] + [f"{r.randint(1, 0xFFFF):x}" for _ in range(7)])
    first = r.choice([n for n in range(23, 224) if n not in (100, 127, 169, 172, 192)])
    return f"{first}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
