"""The store interface, and opening a store from its URL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from proxy.budgets.ledger import Ledger
from proxy.budgets.rates import RateLimiter
from proxy.errors import StoreUnavailable
from proxy.store.keys import KeyRecord

__all__ = ["Store", "StoreUnavailable", "UsageRow", "open_store"]


@dataclass(frozen=True, slots=True)
class UsageRow:
    """The settled spend of one request."""

    ts: float
    request_id: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    key_id: str | None = None
    team: str | None = None
    user: str | None = None
    agent: str | None = None
    reply: str | None = None
    target: str | None = None


class Store(Protocol):
    """Durable state. Every method may raise :class:`StoreUnavailable`."""

    url: str

    async def open(self) -> None:
        """Connect and create what is missing (idempotent)."""
        ...

    async def close(self) -> None: ...

    async def add_key(self, record: KeyRecord) -> None: ...

    async def key_by_digest(self, digest: str) -> KeyRecord | None: ...

    async def keys(self) -> list[KeyRecord]: ...

    async def revoke_key(self, key_id: str, at: float) -> bool:
        """Revoke a key by id; False when there is no such key."""
        ...

    async def record_usage(self, row: UsageRow) -> None:
        """Append a settled spend record; committed (durable) when this returns."""
        ...

    async def usage_total(self, scope: str, value: str, since: float) -> tuple[float, int]:
        """``(usd, tokens)`` recorded for a scope value (``team``, ``payments``) since then."""
        ...

    async def spend(self, by: str, since: float) -> list[tuple[str, float, int, int]]:
        """``(group, usd, tokens, requests)`` grouped by a scope or ``day``."""
        ...

    def ledger(self) -> Ledger:
        """The budget ledger that fits this store."""
        ...

    def rate_limiter(self) -> RateLimiter:
        """The per-minute rate limiter that fits this store."""
        ...

    async def healthy(self) -> bool: ...


def open_store(url: str) -> Store:
    """The store for a ``store:`` URL: ``sqlite:///relative.db``, ``sqlite:////abs.db``,
    or ``redis://host:port/db``."""
    if url.startswith("sqlite:///"):
        from proxy.store.sqlite import SQLiteStore

        return SQLiteStore(url)
    if url.startswith(("redis://", "rediss://")):
        from proxy.store.redis import RedisStore

        return RedisStore(url)
    raise ValueError(f"unsupported store URL {url!r} (use sqlite:///path.db or redis://host/0)")
