"""Put original values back in place of this request's placeholders.

Two contexts: plain text, and the inside of a JSON string (tool-call arguments), where a
value must be JSON-escaped and a model may have escaped the angle brackets as
``\\u003c``/``\\u003e``. Streams use :class:`RestoringStream`, which holds back only a
suffix that could still grow into a known placeholder, so a placeholder split across any
chunk boundary is restored whole and nothing else is delayed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

import orjson

from hookgate.redaction.placeholders import PATTERN
from hookgate.wire.deltas import DeltaKey, StreamTransform

_JSON_PATTERN = re.compile(
    r"(?:<|\\u003[cC])([A-Z][A-Z0-9_]*_[A-Z2-7]{6}(?:[A-Z2-7]{6})?)(?:>|\\u003[eE])"
)


class Restorer:
    """Restores the placeholders of one request (``placeholder → value``)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = values
        self._json_values = {
            token[1:-1]: orjson.dumps(value).decode()[1:-1] for token, value in values.items()
        }

    def text(self, text: str) -> str:
        """``text`` with every known placeholder replaced by its value."""
        if "<" not in text or not self.values:
            return text
        return PATTERN.sub(self._plain, text)

    def json_string(self, text: str) -> str:
        """The same, inside a JSON string: values are JSON-escaped."""
        if not self.values or ("<" not in text and "\\u003" not in text):
            return text
        return _JSON_PATTERN.sub(self._escaped, text)

    @functools.cached_property
    def _prefixes(self) -> frozenset[str]:
        return _proper_prefixes(self.values)

    @functools.cached_property
    def _json_prefixes(self) -> frozenset[str]:
        return self._prefixes | _proper_prefixes(
            [
                *self._escaped_tokens,
                *(e.replace("\\u003c", "\\u003C") for e in self._escaped_tokens),
            ]
        )

    @functools.cached_property
    def _escaped_tokens(self) -> list[str]:
        return [f"\\u003c{token[1:-1]}\\u003e" for token in self.values]

    @functools.cached_property
    def _max(self) -> int:
        return max((len(token) for token in self._escaped_tokens), default=0)

    def split(self, text: str, *, json: bool) -> int:
        """Where a suffix of ``text`` that may grow into a placeholder starts (else ``len``).

        The prefix sets are built on first use: only streams need them.
        """
        prefixes = self._json_prefixes if json else self._prefixes
        start = max(0, len(text) - self._max)
        for i in range(start, len(text)):
            if text[i] in "<\\" and text[i:] in prefixes:
                return i
        return len(text)

    def _plain(self, match: re.Match[str]) -> str:
        return self.values.get(match.group(0), match.group(0))

    def _escaped(self, match: re.Match[str]) -> str:
        return self._json_values.get(match.group(1), match.group(0))


def _proper_prefixes(tokens: Iterable[str]) -> frozenset[str]:
    return frozenset(token[:n] for token in tokens for n in range(1, len(token)))


class RestoringStream(StreamTransform):
    """Restores placeholders in streamed text and tool-argument deltas.

    Per string (``DeltaKey``) it keeps back the shortest suffix that is a proper prefix of
    a known placeholder, and releases it once the next delta decides it, or at
    :meth:`end` (unrestored if it never completed).
    """

    def __init__(self, restorer: Restorer) -> None:
        self._restorer = restorer
        self._held: dict[DeltaKey, str] = {}

    async def delta(self, key: DeltaKey, text: str) -> str:
        json = key.kind == "tool_arguments"
        buffer = self._held.pop(key, "") + text
        cut = self._restorer.split(buffer, json=json)
        if cut < len(buffer):
            self._held[key] = buffer[cut:]
        ready = buffer[:cut]
        return self._restorer.json_string(ready) if json else self._restorer.text(ready)

    async def end(self, key: DeltaKey) -> str:
        return self._held.pop(key, "")
