"""The writer of one held-out chat: its random source, its labels and its text helpers.

A :class:`Writer` records every PII value of the chat with its kind and every technical
token, refusing a value that overlaps another (a chat that cannot be written without such an
overlap raises :class:`AssertionError` and is written again from another seed). It fills the
patterns of ``formats.json``, writes text casually when the chat is casual, and writes tool
calls. :class:`~evals.pii.holdout.values.Context` adds the value makers.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from faker import Faker

_PLACEHOLDER = re.compile(r"\{([a-z_0-9]+)(?::([^{}]*))?\}")
"""``{name}`` or ``{name:argument}`` in a pattern of ``formats.json``."""


@cache
def data(name: str) -> Any:
    """One of the data files of this package, parsed."""
    return json.loads((Path(__file__).parent / f"{name}.json").read_text(encoding="utf-8"))


def vocabulary(name: str) -> Any:
    """A list or table of ``vocabulary.json``."""
    return data("vocabulary")[name]


def shapes(name: str) -> Any:
    """A format or table of ``formats.json``."""
    return data("formats")[name]


def alphabet(name: str) -> str:
    """A named alphabet of ``formats.json``."""
    return str(shapes("alphabets")[name])


_FAKERS: dict[str, Faker] = {}


def _faker(locale: str) -> Faker:
    f = _FAKERS.get(locale)
    if f is None:
        f = _FAKERS[locale] = Faker(locale)
    return f


def rs(r: random.Random, n: int, chars: str) -> str:
    """``n`` random characters of ``chars``."""
    return "".join(r.choice(chars) for _ in range(n))


def digits(r: random.Random, n: int, first_nonzero: bool = True) -> str:
    """``n`` random digits, the first one not zero unless ``first_nonzero`` is false."""
    if n <= 0:
        return ""
    head = r.choice("123456789") if first_nonzero else r.choice(string.digits)
    return head + rs(r, n - 1, string.digits)


def message(role: str, content: Any) -> dict[str, Any]:
    """An OpenAI chat message."""
    return {"role": role, "content": content}


class Writer:
    """The random source and the labels of one chat being written, and its text helpers."""

    def __init__(self, r: random.Random, max_turns: int, slot: int = 0) -> None:
        self.r = r
        self.max_turns = max_turns
        self.slot = slot  # how many chats of this scenario came before: rotates variants
        self.ents: dict[str, str] = {}  # value -> kind, in order of first use
        self.tech: dict[str, None] = {}
        self.casual = r.random() < 0.4
        self.focal: list[str] = []  # technical tokens a follow-up may refer back to
        self.theme = "support"  # which kind of follow-up fits (follow_ups.json: theme_news)

    # -- bookkeeping ------------------------------------------------------------------------

    def pii(self, kind: str, value: str) -> str:
        """Label ``value`` as a PII entity of ``kind`` and return it."""
        known = self.ents.get(value)
        if known is None:
            if any(value in t or t in value for t in self.tech):
                raise AssertionError(f"{value!r} overlaps a technical token")
            self.ents[value] = kind
        elif known != kind:
            raise AssertionError(f"{value!r} labelled {known} and {kind}")
        return value

    def t(self, token: str) -> str:
        """Record ``token`` as a technical token of the chat and return it."""
        if token not in self.tech:
            if any(token in v or v in token for v in self.ents):
                raise AssertionError(f"technical {token!r} overlaps a PII value")
            self.tech[token] = None
        return token

    def _fresh(self, kind: str, make: Callable[[], str]) -> str:
        for _ in range(40):
            v = make()
            pool: Iterable[str] = (*self.ents, *self.tech)
            if not any(v in o or o in v for o in pool):
                return self.pii(kind, v)
        raise AssertionError(f"no fresh {kind}")

    def say(self, template: str, **values: Any) -> str:
        """``template`` filled with ``values``, written casually when the chat is casual."""
        if self.casual:
            template = self._casualize(template)
        return template.format(**values)

    def _casualize(self, template: str) -> str:
        for pattern, replacement in vocabulary("casual"):
            if self.r.random() < 0.45:
                template = re.sub(pattern, replacement, template, count=1)
        first = re.match(r"[A-Za-z']+", template)
        word = first.group() if first else ""
        keep = {w for product in vocabulary("products") for w in product.split()}
        if word not in keep and word[1:] == word[1:].lower() and self.r.random() < 0.7:
            template = template[0].lower() + template[1:]
        return template

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, options: Sequence[Any]) -> Any:
        return self.r.choice(options)

    def fill(self, pattern: str, **named: Any) -> str:
        """A pattern of ``formats.json`` filled, left to right."""

        def one(match: re.Match[str]) -> str:
            name, argument = match.group(1), match.group(2) or ""
            if name in named:
                return format(named[name], argument)
            return self._generate(name, argument)

        return _PLACEHOLDER.sub(one, pattern)

    def pick_filled(self, patterns: Sequence[str], **named: Any) -> str:
        """One of ``patterns``, all of them filled first (their random parts drawn in order)."""
        return str(self.r.choice([self.fill(p, **named) for p in patterns]))

    def _generate(self, kind: str, argument: str) -> str:
        r = self.r
        if kind in ("digits", "nonzero"):
            return digits(r, int(argument), first_nonzero=kind == "nonzero")
        if kind == "pairs":
            return " ".join(digits(r, 2, first_nonzero=False) for _ in range(int(argument)))
        if kind == "int":
            bounds, _, spec = argument.partition(":")
            low, high = bounds.split("-")
            return format(r.randint(int(low), int(high)), spec)
        if kind == "chars":
            length, chars = argument.split(":")
            if "|" in length:
                n = r.choice([int(x) for x in length.split("|")])
            elif "-" in length:
                low, high = length.split("-")
                n = r.randint(int(low), int(high))
            else:
                n = int(length)
            return rs(r, n, alphabet(chars))
        if kind == "one":
            return r.choice(argument)
        if kind == "pick":
            return str(r.choice(vocabulary(argument)))
        raise KeyError(f"unknown placeholder {kind!r}")

    def fk(self, locale: str) -> Faker:
        f = _faker(locale)
        f.seed_instance(self.r.getrandbits(32))
        return f

    def prior(self, *, one_line: bool = False, secrets: bool = False) -> list[tuple[str, str]]:
        """``(kind, value)`` of the chat's PII so far."""
        return [
            (k, v)
            for v, k in self.ents.items()
            if (secrets or k != "SECRET") and not (one_line and "\n" in v)
        ]

    def recall(self) -> list[str]:
        """The technical tokens a later turn may point back at."""
        return self.focal or [t for t in self.tech if "\n" not in t]

    def js(self, obj: Any) -> str:
        return json.dumps(obj, ensure_ascii=False, indent=self.r.choice((None, 2)))

    def call(self, fn: str, args: dict[str, Any], text: str | None = None) -> tuple[Any, str]:
        msg, ids = self.calls([(fn, args)], text)
        return msg, ids[0]

    def calls(
        self, specs: Sequence[Sequence[Any]], text: str | None = None
    ) -> tuple[dict[str, Any], list[str]]:
        """An assistant message calling the tools ``specs`` (name, arguments), and the ids."""
        ids = ["call_" + rs(self.r, 24, alphabet("alnum")) for _ in specs]
        tool_calls = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": fn, "arguments": json.dumps(args, ensure_ascii=False)},
            }
            for cid, (fn, args) in zip(ids, specs, strict=True)
        ]
        return {"role": "assistant", "content": text, "tool_calls": tool_calls}, ids

    def tool_tail(
        self, fn: str, args: dict[str, Any], result: Any, text: str | None = None
    ) -> list[dict[str, Any]]:
        """A tool call and its result (JSON unless already text)."""
        call, cid = self.call(fn, args, text)
        content = result if isinstance(result, str) else self.js(result)
        return [call, {"role": "tool", "tool_call_id": cid, "content": content}]

    def focus(self, token: str) -> str:
        """A technical token worth pointing at later in the chat, registered."""
        self.t(token)
        if token not in self.focal:
            self.focal.append(token)
        return token
