"""Stable placeholders: a keyed hash of the value, so no server state is needed.

A placeholder is ``<ENTITY_TYPE_CODE>``, e.g. ``<PERSON_QH3KZ7>``: the entity type, and
the first six base32 characters of ``HMAC-SHA256(secret, entity_type NUL value)``. It is a
pure function of the deployment secret, the type and the exact value, so

* the same value gets the same placeholder in every turn, every conversation and on
  every replica sharing the secret, whatever the agent trims from its history;
* two different values share one only on a 30-bit hash collision; within one request a
  collision is detected and the later value gets a 12-character code instead (see
  :class:`Vault`), so a placeholder never stands for two values of one request;
* without the secret a provider cannot tell which value a placeholder hides (no
  dictionary attack on, say, phone numbers).

Numbering by first appearance (``<PERSON_1>``) reads a little better, but it is stable
only while the agent resends its history unchanged; a trimmed or summarised history
would give ``<PERSON_1>`` to someone else. See docs/design.md.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

CODE_LENGTH = 6
"""Base32 characters of a placeholder code (30 bits)."""

LONG_CODE_LENGTH = 12
"""Code length used for the rare value whose short code collides within a request."""

PATTERN = re.compile(r"<[A-Z][A-Z0-9_]*_[A-Z2-7]{6}(?:[A-Z2-7]{6})?>")
"""Any string shaped like a placeholder (whether or not this deployment made it)."""


def placeholder(secret: bytes, entity_type: str, value: str, length: int = CODE_LENGTH) -> str:
    """The placeholder of ``value`` as an ``entity_type`` under ``secret``."""
    digest = hmac.new(secret, f"{entity_type}\0{value}".encode(), hashlib.sha256).digest()
    code = base64.b32encode(digest).decode()[:length]
    return f"<{entity_type}_{code}>"


class Vault:
    """The placeholders of one request, and the values they stand for.

    Not thread-safe; one per request. Restoration uses only what this request redacted,
    so a placeholder the model invents is left as it is.
    """

    __slots__ = ("_secret", "values")

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self.values: dict[str, str] = {}
        """placeholder → original value."""

    def placeholder(self, entity_type: str, value: str) -> str:
        """The placeholder for ``value``, recorded for restoration."""
        token = placeholder(self._secret, entity_type, value)
        seen = self.values.setdefault(token, value)
        if seen != value:
            token = placeholder(self._secret, entity_type, value, LONG_CODE_LENGTH)
            self.values[token] = value
        return token

    def merge(self, values: dict[str, str]) -> dict[str, str]:
        """Record placeholders made elsewhere (a cached text); returns renames for collisions.

        A rename ``old → new`` is returned when ``old`` already stands for another value in
        this request; the caller must then use ``new`` in that text.
        """
        renames: dict[str, str] = {}
        for token, value in values.items():
            seen = self.values.setdefault(token, value)
            if seen != value:
                entity_type = token[1 : token.rindex("_")]
                longer = placeholder(self._secret, entity_type, value, LONG_CODE_LENGTH)
                self.values[longer] = value
                renames[token] = longer
        return renames
