"""Shared client keys (``keys.static``): who a caller is when it sends one. Pure.

Only SHA-256 digests are held. A presented key is hashed once and compared with every
digest by :func:`hmac.compare_digest`, without stopping at a match, so neither the
comparison nor the number of keys tried depends on where the keys differ.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from pydantic import SecretStr


class StaticKeys:
    """The configured shared client keys, as digests; callers are ``static-N`` (1-based)."""

    __slots__ = ("_digests",)

    def __init__(self, keys: Iterable[SecretStr]) -> None:
        self._digests = [
            (f"static-{n}", _digest(key.get_secret_value()))
            for n, key in enumerate(keys, start=1)
            if is_set(key)
        ]

    def __bool__(self) -> bool:
        return bool(self._digests)

    def match(self, presented: str) -> str | None:
        """The caller id of the key ``presented``, or None when it is none of them."""
        given = _digest(presented)
        found = None
        for caller, digest in self._digests:
            if hmac.compare_digest(given, digest):
                found = caller
        return found


def is_set(key: SecretStr) -> bool:
    """Whether a configured key is a key: an unset ``${NAME:-}`` resolves empty, no key."""
    return bool(key.get_secret_value())


def _digest(key: str) -> bytes:
    # surrogateescape: aiohttp decodes header bytes that are not UTF-8 to surrogates
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()
