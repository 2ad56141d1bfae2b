"""Virtual keys: how they are made, hashed and checked. Pure.

A key is ``sk-hg-`` followed by 43 URL-safe characters (256 random bits). Only its
SHA-256 hash is stored; the key itself is shown once, when created. A key's public id
is ``hgk_`` plus the first 12 hex digits of the hash: safe to log, list and use as a
metric label.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field

PREFIX = "sk-hg-"


def generate() -> str:
    """A new secret key."""
    return PREFIX + secrets.token_urlsafe(32)


def digest(key: str) -> str:
    """The stored form of a key (hex SHA-256)."""
    return hashlib.sha256(key.encode()).hexdigest()


def key_id(key_digest: str) -> str:
    """The public id of a key, from its digest."""
    return "hgk_" + key_digest[:12]


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A stored virtual key (never the secret)."""

    id: str
    digest: str
    team: str
    user: str | None = None
    name: str | None = None
    models: tuple[str, ...] = ()
    """Model aliases the key may use; empty means all."""
    created_at: float = 0.0
    expires_at: float | None = None
    revoked_at: float | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    def usable(self, now: float) -> str | None:
        """Why the key may not be used now (``revoked``, ``expired``), or None."""
        if self.revoked_at is not None and self.revoked_at <= now:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return None

    def allows(self, model: str) -> bool:
        """May this key call ``model``?"""
        return not self.models or model in self.models
