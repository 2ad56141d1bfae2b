"""The people and structured values of the world set, made here from its data files.

Names come from ``names.json`` (hand-written, by origin). Cards pass the Luhn check, IBANs
carry valid ISO 13616 check digits for their country's BBAN layout, SSNs are in the issued
ranges, US numbers have real area codes and never a 555 or N11 exchange, other numbers
follow their country's mobile numbering with its ``+`` code.
"""

from __future__ import annotations

import random
import re
import string
import unicodedata
from dataclasses import dataclass

from evals.pii.world.data import load


@dataclass(frozen=True)
class Name:
    """A name of ``names.json``: the whole name and the parts written alone."""

    full: str
    given: str | None
    family: str | None
    gender: str  # "f" or "m"
    origin: str
    honorifics: tuple[str, ...]  # "f:chị {given}", "*:{family}-san"...

    def parts(self) -> list[str]:
        """The parts of the name that can be written alone."""
        return [p for p in (self.given, self.family) if p]


def all_names() -> list[Name]:
    """Every name of ``names.json``, in file order."""
    out = []
    for key, origin in load("names")["origins"].items():
        for n in origin["names"]:
            honorifics = tuple(origin["honorifics"])
            out.append(Name(n["full"], n["given"], n["family"], n["gender"], key, honorifics))
    return out


def draw_name(r: random.Random) -> Name:
    """A name: an origin first (each as likely), then one of its names."""
    origins = load("names")["origins"]
    key = r.choice(sorted(origins))
    n = r.choice(origins[key]["names"])
    return Name(
        n["full"], n["given"], n["family"], n["gender"], key, tuple(origins[key]["honorifics"])
    )


_FOLD = str.maketrans(
    {"đ": "d", "Đ": "D", "ð": "d", "þ": "th", "Þ": "Th", "\u0131": "i", "æ": "ae"}
)


def ascii_word(text: str) -> str:
    """``text`` as lower-case ASCII letters (``Nguyễn`` -> ``nguyen``)."""
    folded = unicodedata.normalize("NFKD", text.translate(_FOLD).lower())
    return "".join(c for c in folded if c in string.ascii_lowercase)


def email(r: random.Random, name: Name) -> str:
    """An e-mail address made from the name, in one of the usual shapes, all lower-case."""
    words = [ascii_word(w) for w in name.full.split()]
    g = ascii_word(name.given or "") or next((w for w in words if len(w) > 1), "mail")
    f = ascii_word(name.family or "")
    if not f or f == g:  # no family name: the initials of the other words, or a number
        f = "".join(w[0] for w in words if w and w != g)
    domain = r.choice(load("values")["domains"])
    if not f:
        return f"{g}{r.choice(('', '.', '_'))}{r.randint(1, 1999)}@{domain}"
    local = r.choice(
        (f"{g}.{f}", f"{g}{f}", f"{g[0]}.{f}", f"{f}.{g}", f"{g}_{f}{r.randint(10, 99)}",
         f"{g}{r.randint(1, 99)}", f"{f}{g[0]}", f"{g}.{f[0]}")
    )  # fmt: skip
    return f"{local}@{domain}"


def _digits(r: random.Random, pattern: str) -> str:
    return "".join(str(r.randint(0, 9)) if c == "#" else c for c in pattern)


def phone(r: random.Random) -> str:
    """A US number (a third of the time) or another country's mobile number."""
    v = load("values")
    if r.random() < 1 / 3:
        while True:
            x = f"{r.randint(2, 9)}{r.randint(0, 9)}{r.randint(0, 9)}"
            if x != "555" and x[1:] != "11":
                break
        pattern: str = r.choice(v["us_phone_formats"])
        return pattern.format(a=r.choice(v["us_area_codes"]), x=x, y=f"{r.randint(0, 9999):04d}")
    return _digits(r, r.choice(v["intl_phones"]))


def street(r: random.Random) -> str:
    """A street line, US or another country's."""
    streets = load("values")["streets"]
    pattern: str = r.choice(streets["us" if r.random() < 0.4 else "intl"])
    return pattern.format(n=r.randint(2, 240), m=r.randint(1, 19))


def card(r: random.Random) -> str:
    """A Luhn-valid card number of a known network, grouped as printed or not."""
    prefix, length = r.choice(load("values")["cards"])
    body = [int(c) for c in prefix] + [r.randint(0, 9) for _ in range(length - len(prefix) - 1)]
    total = sum(
        (d * 2 - 9 if d > 4 else d * 2) if i % 2 == 0 else d for i, d in enumerate(body[::-1])
    )
    number = "".join(map(str, body)) + str((10 - total % 10) % 10)
    if length == 15:
        groups = [number[:4], number[4:10], number[10:]]
    else:
        groups = [number[i : i + 4] for i in range(0, length, 4)]
    return r.choice((" ", " ", "-", "")).join(groups)


def iban(r: random.Random) -> str:
    """An IBAN of a listed country with valid check digits, compact or in groups of four."""
    layouts = load("values")["ibans"]
    country = r.choice(sorted(layouts))
    bban = ""
    for count, kind in re.findall(r"(\d+)([na])", layouts[country]):
        alphabet = string.digits if kind == "n" else string.ascii_uppercase
        bban += "".join(r.choice(alphabet) for _ in range(int(count)))
    check = 98 - int("".join(str(int(c, 36)) for c in bban + country + "00")) % 97
    value = f"{country}{check:02d}{bban}"
    if r.random() < 0.5:
        return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    return value


def ssn(r: random.Random) -> str:
    """A dashed SSN in the issued ranges."""
    while True:
        area = r.randint(1, 899)
        value = f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"
        if area != 666 and len(set(value.replace("-", ""))) > 2:
            return value


def ip(r: random.Random) -> str:
    """A public-looking IPv4 address, or (one time in five) an IPv6 one."""
    if r.random() < 0.2:
        head = r.choice(("2a02", "2001", "2405", "2c0f", "2800"))
        return ":".join([head] + [f"{r.randint(1, 0xFFFF):x}" for _ in range(7)])
    first = r.choice([n for n in range(23, 224) if n not in (100, 127, 169, 172, 192)])
    return f"{first}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
