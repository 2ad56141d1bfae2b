"""Removing a provider's own credentials from what it sends back. Pure.

An upstream that rejects a key often quotes it (``Incorrect API key provided: sk-...``),
in the body or in a ``WWW-Authenticate`` header, and the proxy relays upstream errors to
clients as they are. The key is the operator's, never the caller's, so every occurrence
is replaced before an error reaches a client, a log or a span.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

MASK = "[credential removed by hookgate]"
MIN_SECRET_CHARS = 8
"""Shorter configured values (``v1``, ``true``) are not treated as secrets."""


_CREDENTIAL_WORDS = ("auth", "key", "token", "secret", "password", "cookie")


def credentials(headers: Mapping[str, str]) -> list[str]:
    """The secrets among configured upstream ``headers``: the values of those whose name
    says credential (``authorization``, ``api-key``, ``x-goog-api-key``, ...), and the
    token after an auth scheme (``Bearer sk-...`` → ``sk-...``)."""
    out: list[str] = []
    for name, value in headers.items():
        if any(word in name.lower() for word in _CREDENTIAL_WORDS):
            out.append(value)
            token = value.partition(" ")[2]
            if token.strip():
                out.append(token.strip())
    return out


class Scrubber:
    """Replaces each of ``secrets`` (and so any longer text containing one) with
    :data:`MASK`."""

    __slots__ = ("_bytes", "_text")

    def __init__(self, secrets: Iterable[str]) -> None:
        kept = sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        self._text = tuple(kept)
        self._bytes = tuple(s.encode() for s in kept)

    def text(self, value: str) -> str:
        """``value`` with every secret masked."""
        for secret in self._text:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def body(self, data: bytes) -> bytes:
        """``data`` with every secret masked."""
        for secret in self._bytes:
            if secret in data:
                data = data.replace(secret, MASK.encode())
        return data

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """``headers`` with every secret in a value masked."""
        return {name: self.text(value) for name, value in headers.items()}
