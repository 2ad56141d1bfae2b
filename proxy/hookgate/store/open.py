"""Opening the store a ``store:`` URL names, with the budget ledger and rate limiter
that fit it (in memory beside SQLite, one process; Lua scripts in Redis, replicas)."""

from __future__ import annotations

from hookgate.budgets.ledger import Ledger, MemoryLedger
from hookgate.budgets.rates import MemoryRateLimiter, RateLimiter
from hookgate.store.base import Store


def open_store(url: str) -> Store:
    """The store for a ``store:`` URL: ``sqlite:///relative.db``, ``sqlite:////abs.db``,
    or ``redis://host:port/db``."""
    if url.startswith("sqlite:///"):
        from hookgate.store.sqlite import SQLiteStore

        return SQLiteStore(url)
    if url.startswith(("redis://", "rediss://")):
        from hookgate.store.redis import RedisStore

        return RedisStore(url)
    raise ValueError(f"unsupported store URL {url!r} (use sqlite:///path.db or redis://host/0)")


def open_budgets(store: Store) -> tuple[Ledger, RateLimiter]:
    """The ledger and rate limiter that fit ``store``: shared through Redis by every
    replica on a Redis store, in this process's memory otherwise."""
    if store.url.startswith(("redis://", "rediss://")):  # no redis import for SQLite
        from hookgate.store.redis import RedisStore
        from hookgate.store.redis_budgets import RedisLedger, RedisRateLimiter

        assert isinstance(store, RedisStore)
        return RedisLedger(store), RedisRateLimiter(store)
    return MemoryLedger(store), MemoryRateLimiter()
