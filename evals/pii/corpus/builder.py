"""Writes one chat of the development set: generated values, filled templates, labels.

A :class:`Builder` holds one chat's values (each slot of a template is generated once per
chat, then repeated), fills the templates of ``templates.json`` and ``tools.json`` and records
every PII value as an :class:`~evals.pii.corpus.checks.Entity` and every technical token.
Value pools and shapes come from ``vocabulary.json``, the slot kinds from ``slots.json``.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import uuid
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from faker import Faker

from evals.pii.corpus.checks import KINDS, Chat, Entity

Message = dict[str, Any]
Turn = list[Message]
ToolCall = Sequence[Any]
"""A tool call template: function name, arguments template, result template (text or JSON)."""

_ALPHABETS = {
    "urlsafe": string.ascii_letters + string.digits + "-_",
    "alnum": string.ascii_letters + string.digits,
    "upper_digits": string.ascii_uppercase + string.digits,
    "upper": string.ascii_uppercase,
}
SLOT = re.compile(r"\{([a-z_]+?)(\d*)\}|\[\[(.+?)\]\]")
"""``{key}`` or ``{key2}`` is a generated value; ``[[token]]`` a literal technical token."""
_PATTERN = re.compile(r"\{([a-z_]+):(\d+)(?:-(\d+))?\}")
"""In a secret's shape: ``{alphabet:n}`` or ``{alphabet:min-max}`` random characters."""


@cache
def data(name: str) -> Any:
    """One of the data files of this package, parsed."""
    return json.loads((Path(__file__).parent / f"{name}.json").read_text(encoding="utf-8"))


def group(value: str, sizes: Sequence[int], sep: str) -> str:
    """Split ``value`` into groups of the given sizes joined by ``sep``."""
    out: list[str] = []
    at = 0
    for size in sizes:
        out.append(value[at : at + size])
        at += size
    if at < len(value):
        out.append(value[at:])
    return sep.join(part for part in out if part)


def iban(country: str, bban: str) -> str:
    """An IBAN with valid ISO 13616 check digits."""
    moved = bban + country + "00"
    numeric = "".join(str(int(ch, 36)) for ch in moved)
    return f"{country}{98 - int(numeric) % 97:02d}{bban}"


def _b64url(raw: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


class Builder:
    """Writes one chat: generates values, fills templates and records the labels."""

    def __init__(self, fake: Faker, rng: random.Random, *, pii: bool = True) -> None:
        self.fake = fake
        self.rng = rng
        self.pii_allowed = pii
        self.used: list[str] = []
        self.used_all: list[str] = []
        self.seen: set[int] = set()
        """``id()`` of the templates and tool flows this chat already used."""
        self._cache: dict[str, str] = {}
        self._entities: dict[tuple[str, str], None] = {}
        self._technical: dict[str, None] = {}
        self.user_name: str | None = None
        self.agent_name: str | None = None

    # -- labels -------------------------------------------------------------------------

    def pii(self, kind: str, value: str) -> str:
        """Label ``value`` as a PII entity of ``kind`` and return it."""
        if kind not in KINDS:
            raise ValueError(kind)
        self._entities[(kind, value)] = None
        return value

    def tech(self, token: str) -> str:
        """Label ``token`` as technical text that must survive, and return it."""
        self._technical[token] = None
        return token

    # -- random helpers -----------------------------------------------------------------

    def chars(self, alphabet: str, n: int) -> str:
        """``n`` random characters of ``alphabet``."""
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def digits(self, pattern: str) -> str:
        """Replace each ``#`` of ``pattern`` with a random digit."""
        return "".join(str(self.rng.randint(0, 9)) if ch == "#" else ch for ch in pattern)

    def hex(self, n: int) -> str:
        """``n`` random lower-case hex digits."""
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def shape(self, pattern: str) -> str:
        """Fill each ``{alphabet:n}`` / ``{alphabet:min-max}`` of a secret's shape."""

        def fill(match: re.Match[str]) -> str:
            low, high = int(match.group(2)), match.group(3)
            n = self.rng.randint(low, int(high)) if high else low
            if match.group(1) == "digits":
                return self.digits("#" * n)
            return self.chars(_ALPHABETS[match.group(1)], n)

        return _PATTERN.sub(fill, pattern)

    # -- value generation ---------------------------------------------------------------

    def value(self, base: str, suffix: str = "") -> str:
        """The chat's value for slot ``base + suffix`` (created once, then repeated)."""
        key = base + suffix
        if key not in self._cache:
            taken = set(self._cache.values())
            for _ in range(50):
                candidate = self._make(base, suffix)
                if candidate not in taken:
                    break
            self._cache[key] = candidate
        return self._cache[key]

    def _person(self) -> str:
        if self.rng.random() < 0.5:
            return f"{self.fake.first_name()} {self.fake.last_name()}"
        vocabulary = data("vocabulary")
        tokens = self.fake.name().split()
        while len(tokens) > 2 and tokens[0] in vocabulary["name_prefixes"]:
            tokens.pop(0)
        while len(tokens) > 2 and tokens[-1] in vocabulary["name_suffixes"]:
            tokens.pop()
        return " ".join(tokens)

    def _email_for(self, suffix: str, work: bool) -> str:
        vocabulary = data("vocabulary")
        tokens = self.value("name", suffix).split()
        first = re.sub("[^a-z]", "", tokens[0].lower()) or "user"
        last = re.sub("[^a-z]", "", tokens[-1].lower()) or "mail"
        if work:
            domain = self.fake.domain_name()
            return str(vocabulary["work_email"].format(initial=first[0], last=last, domain=domain))
        n = self.rng.randint(1, 99)
        local = self.rng.choice(vocabulary["email_locals"])
        local = local.format(first=first, last=last, initial=first[0], n=n)
        return f"{local}@{self.fake.free_email_domain()}"

    def _card(self) -> str:
        roll = self.rng.random()
        if roll < 0.8:
            return str(self.fake.credit_card_number())
        number = self.fake.credit_card_number(self.rng.choice(("visa16", "mastercard")))
        return group(number, (4, 4, 4, 4), " " if roll < 0.9 else "-")

    def _bank_account(self) -> str:
        roll = self.rng.random()
        if roll < 0.6:
            number = str(self.fake.iban())
        elif roll < 0.75:
            number = iban("DE", self.digits("#" * 18))
        elif roll < 0.9:
            number = iban("NL", self.chars(_ALPHABETS["upper"], 4) + self.digits("#" * 10))
        else:
            number = iban(
                "FR",
                self.digits("#" * 10)
                + self.chars(_ALPHABETS["upper_digits"], 11)
                + self.digits("##"),
            )
        if self.rng.random() < 0.2:
            return group(number, [4] * 9, " ")
        return number

    def _secret(self, kind: str) -> str:
        vocabulary = data("vocabulary")
        if kind in vocabulary["secrets"]:
            return self.shape(vocabulary["secrets"][kind])
        if kind == "jwt":
            jwt = vocabulary["jwt"]
            header = _b64url(json.dumps(jwt["header"], separators=(",", ":")).encode())
            claims = {
                "sub": str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
                "iat": 1709294401 + self.rng.randint(0, 10**7),
                "scope": jwt["scope"],
            }
            payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
            return f"{header}.{payload}.{self.chars(_ALPHABETS['urlsafe'], 43)}"
        if kind == "pem":
            pem = vocabulary["pem"]
            der = bytes.fromhex(pem["der_prefix"]) + self.rng.randbytes(1180)
            body = base64.b64encode(der).decode("ascii")
            lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
            return f"-----BEGIN {pem['label']}-----\n{lines}\n-----END {pem['label']}-----"
        raise KeyError(kind)

    def _make(self, base: str, suffix: str) -> str:
        fake, rng = self.fake, self.rng
        intl_phones = data("vocabulary")["intl_phones"]
        if base == "name":
            return self._person()
        if base == "email":
            return self._email_for(suffix, work=False) if rng.random() < 0.5 else fake.email()
        if base == "work_email":
            return self._email_for(suffix, work=True)
        if base == "phone":
            if rng.random() < 0.15:
                return self.digits(rng.choice(intl_phones))
            return str(fake.phone_number())
        if base == "intl_phone":
            return self.digits(rng.choice(intl_phones))
        if base in ("address", "address_ml"):
            raw = self.value("_addr", suffix)
            return raw if base == "address_ml" else raw.replace("\n", ", ")
        if base == "_addr":
            return str(fake.address())
        if base == "card":
            return self._card()
        if base == "ssn":
            return str(fake.ssn())
        if base == "iban":
            return self._bank_account()
        if base == "ip":
            return str(fake.ipv4_public())
        if base == "private_ip":
            return str(fake.ipv4_private())
        if base == "secret":
            return self._secret(rng.choice(data("slots")["secret_kinds"]))
        if base in data("slots")["pii"]:
            return self._secret(base)
        return self._make_tech(base)

    def _make_tech(self, base: str) -> str:
        rng = self.rng
        vocabulary = data("vocabulary")
        fixed = vocabulary["fixed"]
        if base in vocabulary["pools"]:
            return str(rng.choice(vocabulary["pools"][base]))
        if base == "ticket":
            if rng.random() < 0.25:
                return str(rng.choice(fixed["ticket"]))
            n = rng.randint(100, 99999)
            return str(rng.choice(vocabulary["ticket_formats"]).format(n=n, pr=n % 2000))
        if base == "amount":
            roll = rng.random()
            if roll < 0.5:
                return str(rng.choice(vocabulary["amounts"]))
            if roll < 0.8:
                return f"${rng.randint(10, 99999):,}.{rng.randint(0, 99):02d}"
            return f"€{rng.randint(5, 999)}.00"
        stamp = (
            f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
        )
        if base == "ts":
            return str(fixed["ts"]) if rng.random() < 0.2 else f"{stamp[0]}T{stamp[1]}Z"
        if base == "logts":
            if rng.random() < 0.2:
                return str(fixed["logts"])
            return f"{stamp[0]} {stamp[1]},{rng.randint(0, 999):03d}"
        if base == "sha":
            return str(fixed["sha"]) if rng.random() < 0.15 else self.hex(40)
        if base == "commit":
            return self.hex(7)
        if base == "digest":
            return self.hex(64)
        if base == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if base == "buildid":
            if rng.random() < 0.5:
                return f"build-{stamp[0].replace('-', '')}.{rng.randint(1, 40)}"
            return f"sha-{self.hex(12)}"
        raise KeyError(f"unknown slot {base!r}")

    # -- templates ----------------------------------------------------------------------

    def emit(self, base: str, suffix: str = "") -> str:
        """The value of a slot, labelled (PII entity or technical token)."""
        value = self.value(base, suffix)
        key = base + suffix
        if key not in self.used_all:
            self.used_all.append(key)
        kind = data("slots")["pii"].get(base)
        if kind is None:
            return self.tech(value)
        if not self.pii_allowed:
            raise ValueError(f"PII slot {base!r} in a technical-only chat")
        if key not in self.used:
            self.used.append(key)
        return self.pii(kind, value)

    def fill(self, template: str) -> str:
        """Replace every ``{slot}`` and ``[[token]]`` of ``template``."""

        def replace(match: re.Match[str]) -> str:
            if match.group(3) is not None:
                return self.tech(match.group(3))
            return self.emit(match.group(1), match.group(2))

        return SLOT.sub(replace, template)

    def fill_obj(self, obj: Any) -> Any:
        """``fill`` applied to every string of a JSON-like object."""
        if isinstance(obj, str):
            return self.fill(obj)
        if isinstance(obj, list):
            return [self.fill_obj(item) for item in obj]
        if isinstance(obj, dict):
            return {key: self.fill_obj(item) for key, item in obj.items()}
        return obj

    def json(self, obj: Any) -> str:
        """A filled object as a compact JSON string, non-ASCII kept as is."""
        return json.dumps(self.fill_obj(obj), ensure_ascii=False)

    # -- messages -----------------------------------------------------------------------

    def system(self, text: str) -> Message:
        """A system message (named when the chat is AgentScope-style)."""
        message: Message = {"role": "system", "content": text}
        if self.user_name is not None:
            message["name"] = "system"
        return message

    def user(self, segments: Sequence[str], shape: str | None = None) -> Message:
        """A user message: ``shape`` is "str", "part" or "parts" (random when None)."""
        if shape is None:
            roll = self.rng.random()
            shape = "str" if roll < 0.55 else "part" if roll < 0.75 else "parts"
        if shape == "parts" and len(segments) < 2:
            shape = "part"
        content: str | list[dict[str, str]]
        if shape == "str":
            content = "\n\n".join(segments)
        elif shape == "part":
            content = [{"type": "text", "text": "\n\n".join(segments)}]
        else:
            cut = self.rng.randint(1, len(segments) - 1)
            content = [
                {"type": "text", "text": "\n\n".join(segments[:cut])},
                {"type": "text", "text": "\n\n".join(segments[cut:])},
            ]
        message: Message = {"role": "user", "content": content}
        if self.user_name is not None:
            message["name"] = self.user_name
        return message

    def tools(
        self, calls: Sequence[ToolCall], *, say: str | None = None, raw: bool = False
    ) -> Turn:
        """An assistant ``tool_calls`` message followed by one ``tool`` message per call.

        With ``raw`` the templates are used as they are (already filled by the caller).
        """
        ids = ["call_" + self.chars(_ALPHABETS["alnum"], 24) for _ in calls]
        assistant: Message = {
            "role": "assistant",
            "content": say,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": json.dumps(args, ensure_ascii=False)
                        if raw
                        else self.json(args),
                    },
                }
                for call_id, (name, args, _) in zip(ids, calls, strict=True)
            ],
        }
        if self.agent_name is not None:
            assistant["name"] = self.agent_name
        out: Turn = [assistant]
        for call_id, (_, _, result) in zip(ids, calls, strict=True):
            if isinstance(result, str):
                text = result if raw else self.fill(result)
            else:
                text = json.dumps(result, ensure_ascii=False) if raw else self.json(result)
            content: str | list[dict[str, str]] = text
            if self.rng.random() < 0.15:
                content = [{"type": "text", "text": text}]
            out.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return out

    def finish(self, chat_id: str, turns: Sequence[Turn], stream: bool) -> Chat:
        """Freeze the chat; technical tokens overlapping a PII value are not listed."""
        entities = tuple(Entity(kind, value) for kind, value in self._entities)
        technical = tuple(
            token
            for token in self._technical
            if not any(token in e.value or e.value in token for e in entities)
        )
        return Chat(
            id=chat_id,
            turns=tuple(tuple(turn) for turn in turns),
            entities=entities,
            technical=technical,
            stream=stream,
        )
