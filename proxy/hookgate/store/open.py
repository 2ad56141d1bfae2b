"""Opening the store a ``store:`` URL names, with the budget ledger and rate limiter
that fit it: in memory beside a SQLite file one process keeps; in the SQLite file when
processes share it; Lua scripts in Redis, for replicas."""

from __future__ import annotations

from hookgate.budgets.ledger import Ledger, MemoryLedger
from hookgate.budgets.rates import MemoryRateLimiter, RateLimiter
from hookgate.store.base import Store


def open_store(url: str) -> Store:
    """The store for a ``store:`` URL: ``sqlite:///relative.db``, ``sqlite:////abs.db``
    (either may end in ``?shared=true``), or ``redis://host:port/db``."""
    if url.startswith("sqlite:///"):
        from hookgate.store.sqlite import SQLiteStore

        return SQLiteStore(url)
    if url.startswith(("redis://", "rediss://")):
        from hookgate.store.redis import RedisStore

        return RedisStore(url)
    raise ValueError(f"unsupported store URL {url!r} (use sqlite:///path.db or redis://host/0)")


def open_budgets(store: Store, shared: bool = False) -> tuple[Ledger, RateLimiter]:
    """The ledger and rate limiter that fit ``store``: shared through Redis by every
    replica on a Redis store; on a SQLite store, shared through the file when ``shared``
    (the serve command's workers) or the URL ends in ``?shared=true`` (separate
    processes), else in this process's memory, which claims the file's budgets alone on
    first use (see :mod:`hookgate.store.sqlite_owners`)."""
    if store.url.startswith(("redis://", "rediss://")):  # no redis import for SQLite
        from hookgate.store.redis import RedisStore
        from hookgate.store.redis_budgets import RedisLedger, RedisRateLimiter

        assert isinstance(store, RedisStore)
        return RedisLedger(store), RedisRateLimiter(store)
    from hookgate.store.sqlite import SQLiteStore, sqlite_shared
    from hookgate.store.sqlite_budgets import SQLiteLedger, SQLiteRateLimiter, claimer

    assert isinstance(store, SQLiteStore)
    if shared or sqlite_shared(store.url):
        return SQLiteLedger(store), SQLiteRateLimiter(store)
    claim = claimer(store, "exclusive")
    return MemoryLedger(store, claim), MemoryRateLimiter(claim)
