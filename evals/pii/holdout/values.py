"""The values of one held-out chat: its PII (labelled) and its technical tokens (listed).

:class:`Context` is a :class:`~evals.pii.holdout.writer.Writer` with one method per kind of
value, in shapes read from ``formats.json`` and words read from ``vocabulary.json``. Every
PII value is fresh (it neither contains nor is contained in another value of the chat) and
labelled with its kind; every technical token is recorded.
"""

from __future__ import annotations

import base64
import json
import re
import string
import unicodedata
import uuid
from dataclasses import dataclass
from typing import Any

from evals.pii.holdout.writer import Writer, alphabet, digits, rs, shapes, vocabulary


def _fold(s: str) -> str:
    folded = s.translate(str.maketrans(vocabulary("fold")))
    folded = unicodedata.normalize("NFKD", folded).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9-]", "", folded.lower())


def _luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def _b64url(obj: Any) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass(frozen=True)
class Person:
    """A person of the chat: full name, given and family names, and a phone region."""

    name: str
    first: str
    last: str
    region: str


class Context(Writer):
    """A chat being written, and the makers of its values."""

    # -- PII --------------------------------------------------------------------------------

    def company(self) -> tuple[str, str]:
        """A company name and its domain."""
        name, domain = self.r.choice(vocabulary("companies"))
        return name, domain

    def person(
        self, locale: str | None = None, hand: bool | None = None, register: bool = True
    ) -> Person:
        """A new person; ``register=False`` for one whose name is not written anywhere."""
        for _ in range(40):
            if hand or (hand is None and locale is None and self.chance(0.3)):
                first, last, region = self.r.choice(vocabulary("hand_names"))
            else:
                loc = locale or self.r.choice(vocabulary("locales"))
                f = self.fk(loc)
                first, last = f.first_name(), f.last_name()
                region = vocabulary("region_of_locale")[loc]
            name = f"{first} {last}"
            pool = (*self.ents, *self.tech)
            if "." not in name and not any(name in o or o in name for o in pool):
                if register:
                    self.pii("PERSON", name)
                return Person(name, first, last, region)
        raise AssertionError("no fresh PERSON")

    def email(self, p: Person | None = None, domain: str | None = None) -> str:
        def make() -> str:
            d = domain or self.pick(vocabulary("freemail"))
            if p is None:
                return f"{self.fk('en_US').user_name()}@{d}"
            a = _fold(p.first.split()[0])
            b = _fold(p.last.replace(" ", ""))
            local = self.pick_filled(shapes("email_locals"), a=a, b=b, a0=a[0], b0=b[0])
            return f"{local}@{d}"

        return self._fresh("EMAIL_ADDRESS", make)

    def mailbox(self, domain: str) -> str:
        box = self.pick(vocabulary("mailboxes"))
        return self._fresh("EMAIL_ADDRESS", lambda: f"{box}@{domain}")

    def phone(self, region: str | None = None) -> str:
        return self._fresh("PHONE_NUMBER", lambda: self._phone(region))

    def _phone(self, region: str | None) -> str:
        r, phones = self.r, shapes("phone")
        reg = region or r.choices(phones["regions"], weights=phones["region_weights"])[0]
        if reg != "us":
            return self.pick_filled(phones.get(reg, phones["ie"]))
        area = r.choice(phones["us_areas"])
        if r.random() < 0.35:  # the 555-01xx numbers reserved for fiction
            exch, line = "555", f"01{r.randrange(100):02d}"
        else:
            exch = str(r.randint(201, 989))
            while exch == "555" or exch.endswith("11"):
                exch = str(r.randint(201, 989))
            line = digits(r, 4, first_nonzero=False)
        return str(r.choice(phones["us"]).format(a=area, e=exch, n=line))

    def ext(self) -> str:
        n = str(self.r.randint(10, 4999))
        return self.pick_filled(shapes("extensions"), n=n)

    def address(self, one_line: bool | None = None) -> str:
        single = self.chance(0.6) if one_line is None else one_line

        def make() -> str:
            f = self.fk("en_US")
            a = f.address()
            while not (a[:1].isdigit() and "\n" in a):
                a = f.address()
            line1, line2 = a.split("\n", 1)
            return f"{line1}, {line2}" if single else f"{line1}\n{line2}"

        return self._fresh("STREET_ADDRESS", make)

    def card(self, brand: str | None = None) -> str:
        r, cards = self.r, shapes("card")

        def make() -> str:
            b = brand or r.choice(cards["brands"])
            if b == "visa":
                prefix, n = "4", 16
            elif b == "mc":
                prefix = str(r.randint(51, 55)) if r.random() < 0.8 else str(r.randint(2221, 2720))
                n = 16
            elif b == "amex":
                prefix, n = r.choice(cards["amex_prefixes"]), 15
            else:
                prefix, n = r.choice(cards["discover_prefixes"]), 16
            body = prefix + digits(r, n - len(prefix) - 1, first_nonzero=False)
            number = body + _luhn_digit(body)
            groups = (4, 6, 5) if n == 15 else (4, 4, 4, 4)
            sep = r.choice(cards["separators"])
            out, i = [], 0
            for g in groups:
                out.append(number[i : i + g])
                i += g
            return str(sep.join(out))

        return self._fresh("CREDIT_CARD", make)

    def ssn(self, style: str | None = None) -> str:
        r, ssns = self.r, shapes("ssn")

        def make() -> str:
            area = r.randint(1, 899)
            while area == 666:
                area = r.randint(1, 899)
            group, serial = r.randint(1, 99), r.randint(1, 9999)
            s = style or r.choices(ssns["styles"], weights=ssns["weights"])[0]
            sep = ssns["separators"][s]
            return f"{area:03d}{sep}{group:02d}{sep}{serial:04d}"

        return self._fresh("US_SSN", make)

    def iban(self, country: str | None = None, spaced: bool | None = None) -> str:
        r = self.r

        def make() -> str:
            cc = country or r.choice(shapes("iban")["countries"])
            bban = self._bban(cc)
            check = 98 - int("".join(str(int(ch, 36)) for ch in bban + cc + "00")) % 97
            raw = f"{cc}{check:02d}{bban}"
            gap = r.random() < 0.6 if spaced is None else spaced
            return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4)) if gap else raw

        return self._fresh("IBAN_CODE", make)

    def _bban(self, cc: str) -> str:
        r, ibans = self.r, shapes("iban")
        if cc in ibans["banks"]:
            return str(r.choice(ibans["banks"][cc])) + digits(r, ibans["bank_digits"][cc], False)
        if cc == "IT":
            return r.choice(string.ascii_uppercase) + digits(r, 22, False)
        if cc == "BE":
            account = digits(r, 10, False)
            return account + f"{int(account) % 97 or 97:02d}"
        if cc == "FR":
            bank, branch, account = digits(r, 5), digits(r, 5, False), digits(r, 11, False)
            key = 97 - (89 * int(bank) + 15 * int(branch) + 3 * int(account)) % 97
            return f"{bank}{branch}{account}{key:02d}"
        return digits(r, ibans["lengths"][cc], False)

    def ip(self, v6: bool | None = None) -> str:
        r, ips = self.r, shapes("ip")

        def make() -> str:
            if v6 if v6 is not None else r.random() < 0.15:
                if r.random() < 0.5:
                    tail = ":".join(f"{r.randrange(1, 65536):x}" for _ in range(3))
                    return self.fill(
                        ips["v6_documentation"], middle=f"{r.randrange(1, 65536):x}", tail=tail
                    )
                groups = ":".join(f"{r.randrange(1, 65536):x}" for _ in range(7))
                return self.fill(ips["v6_public"], groups=groups)
            k = r.random()
            if k < 0.35:
                return self.fill(ips["documentation_host"], net=r.choice(ips["documentation"]))
            if k < 0.7:
                return self.fill(ips["public"], first=r.choice(ips["public_first"]))
            return self.pick_filled(ips["private"])

        return self._fresh("IP_ADDRESS", make)

    def secret(self, kind: str) -> str:
        if kind == "jwt":
            return self._fresh("SECRET", self._jwt)
        if kind == "pem":
            return self._fresh("SECRET", self._pem)
        pattern = shapes("secrets")[kind]
        return self._fresh("SECRET", lambda: self.fill(pattern))

    def _jwt(self, claims: dict[str, Any] | None = None) -> str:
        r, jwt = self.r, shapes("jwt")
        alg = r.choice(jwt["algs"])
        iat = r.randint(1_704_067_200, 1_750_000_000)
        payload = claims or {
            "sub": str(uuid.UUID(int=r.getrandbits(128), version=4)),
            "iat": iat,
            "exp": iat + 3600,
            "scope": r.choice(jwt["scopes"]),
        }
        sig = rs(r, jwt["signature_chars"][alg], alphabet("urlsafe"))
        return f"{_b64url({'alg': alg, 'typ': 'JWT'})}.{_b64url(payload)}.{sig}"

    def jwt_with(self, claims: dict[str, Any]) -> str:
        return self._fresh("SECRET", lambda: self._jwt(claims))

    def _pem(self) -> str:
        pems = shapes("pem")
        label = self.r.choice(list(pems))
        pem = pems[label]
        raw = bytes.fromhex(pem["prefix"]) + self.r.randbytes(pem["random_bytes"])
        body = base64.b64encode(raw).decode()
        width = pem["width"]
        lines = [body[i : i + width] for i in range(0, len(body), width)]
        return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"

    # -- technical tokens -------------------------------------------------------------------

    def ver(self, style: str | None = None) -> str:
        r, versions = self.r, shapes("version")
        a, b, c = r.randint(0, 5), r.randint(0, 30), r.randint(0, 20)
        s = style or r.choice(versions["styles"])
        rc = r.randint(1, 4)
        return self.t(versions["formats"][s].format(a=a, b=b, c=c, rc=rc))

    def pver(self, product: str, newer_than: str | None = None) -> str:
        """A real version of ``product`` (newer than ``newer_than`` if given), registered."""
        versions = vocabulary("versions")[product]
        if newer_than is not None:
            versions = versions[versions.index(newer_than) + 1 :]
        self.t(product)
        return self.t(self.pick(versions))

    def err(self) -> str:
        return self.focus(self.pick(vocabulary("errors")))

    def ticket(self) -> str:
        tickets = shapes("ticket")
        if self.chance(0.2):
            return self.t(self.fill(tickets["hash"]))
        return self.t(self.fill(tickets["prefixed"]))

    def order_id(self) -> str:
        return self.t(self.pick_filled(shapes("order_ids")))

    def _when(self) -> tuple[int, int, int, int, int, int, int]:
        r = self.r
        return (
            r.choice(shapes("timestamp")["years"]),
            r.randint(1, 12),
            r.randint(1, 28),
            r.randint(0, 23),
            r.randint(0, 59),
            r.randint(0, 59),
            r.randint(0, 999),
        )

    def ts(self, style: str | None = None) -> str:
        y, mo, d, h, mi, s, ms = self._when()
        stamps = shapes("timestamp")
        st = style or self.pick(stamps["styles"])
        month = vocabulary("months")[mo - 1]
        out = stamps["formats"][st].format(y=y, mo=mo, day=d, h=h, mi=mi, s=s, ms=ms, mon=month)
        return self.t(out)

    def human_date(self) -> str:
        y, mo, d, h, mi, _, _ = self._when()
        weekday = self.pick(vocabulary("days"))
        return str(
            shapes("timestamp")["human"].format(
                weekday=weekday,
                mon=vocabulary("months")[mo - 1],
                day=d,
                y=y,
                hh=h % 12 or 12,
                mi=mi,
                ampm="AM" if h < 12 else "PM",
            )
        )

    def uuid(self) -> str:
        return self.t(str(uuid.UUID(int=self.r.getrandbits(128), version=4)))

    def sha(self, short: bool = False) -> str:
        return self.t(rs(self.r, 7 if short else 40, alphabet("hex")))

    def host(self) -> str:
        svc = self.r.choice(vocabulary("services"))
        return self.t(self.pick_filled(shapes("hosts"), svc=svc))

    def hostport(self) -> str:
        port = self.pick(shapes("ports"))
        return self.focus(f"{self.host()}:{port}")

    def image(self) -> str:
        return self.focus(self.pick(vocabulary("images")))

    def path(self) -> str:
        return self.t(self.pick(vocabulary("paths")))

    def pod(self, deploy: str) -> str:
        return self.focus(self.fill(shapes("pod"), deploy=deploy))

    def amount(self, currency: str | None = None) -> str:
        r = self.r
        n, cents = r.randint(5, 9999), r.randint(0, 99)
        cur = currency or r.choice(shapes("currencies"))
        if cur in ("$", "£"):
            return self.t(f"{cur}{n:,}.{cents:02d}")
        if cur == "€":
            return self.t(f"€{n:,}.{cents:02d}")
        if cur == "EUR" and r.random() < 0.5:
            return self.t(
                f"{n:,}.{cents:02d} EUR".replace(",", "_").replace(".", ",").replace("_", ".")
            )
        return self.t(f"{cur} {n:,}.{cents:02d}")
