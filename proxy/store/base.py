"""The store interface, and opening a store from its URL."""

from __future__ import annotations

from typing import Protocol

from proxy.errors import StoreUnavailable
from proxy.store.keys import KeyRecord

__all__ = ["Store", "StoreUnavailable", "open_store"]


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

    async def healthy(self) -> bool: ...


def open_store(url: str) -> Store:
    """The store for a ``store:`` URL: ``sqlite:///relative.db`` or ``sqlite:////abs.db``."""
    if url.startswith("sqlite:///"):
        from proxy.store.sqlite import SQLiteStore

        return SQLiteStore(url)
    raise ValueError(f"unsupported store URL {url!r} (use sqlite:///path.db)")
