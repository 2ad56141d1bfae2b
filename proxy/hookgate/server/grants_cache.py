"""Each replica's short-lived copy of the run-time grants (:mod:`hookgate.store.grants`).

A request reads its key's and its team's grants; reading them from the store every time
would add store round trips to every request, so a replica keeps each document it read
for :data:`~hookgate.store.grants.GRANTS_TTL_S`: a change made on any replica applies on
every replica within that time. The admin API forgets what it changed at once on its
own replica. Concurrent misses of one document share one read, so a burst of requests
from a new key costs the store one read, not one per request.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from hookgate.store.base import Store
from hookgate.store.grants import GRANTS_TTL_S, NO_GRANTS, Grants, Kind

MAX_ENTRIES = 100_000
"""Documents kept at most; past it, the expired ones are dropped (then all, if need be)."""


class GrantsCache:
    """See the module docstring."""

    def __init__(
        self, store: Store, ttl_s: float = GRANTS_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self._ttl_s = ttl_s
        self._clock = clock
        self._kept: dict[tuple[Kind, str], tuple[float, Grants]] = {}
        self._reading: dict[tuple[Kind, str], asyncio.Future[Grants | None]] = {}

    async def get(self, kind: Kind, name: str) -> Grants:
        """The grants of a key (by id) or team, :data:`NO_GRANTS` when there are none.
        Raises :class:`~hookgate.errors.StoreUnavailable` when the store cannot be read."""
        now = self._clock()
        kept = self._kept.get((kind, name))
        if kept is not None and kept[0] > now:
            return kept[1]
        grants = await self._read(kind, name) or NO_GRANTS
        if len(self._kept) >= MAX_ENTRIES:
            self._kept = {k: v for k, v in self._kept.items() if v[0] > now}
            if len(self._kept) >= MAX_ENTRIES:
                self._kept.clear()
        self._kept[(kind, name)] = (now + self._ttl_s, grants)
        return grants

    async def _read(self, kind: Kind, name: str) -> Grants | None:
        """One store read per document at a time; the others wait for it (shielded: a
        caller that goes away does not cancel it for the rest)."""
        reading = self._reading.get((kind, name))
        if reading is None:
            reading = asyncio.ensure_future(self.store.grants(kind, name))
            self._reading[(kind, name)] = reading
            reading.add_done_callback(lambda _: self._reading.pop((kind, name), None))
        return await asyncio.shield(reading)

    def forget(self, kind: Kind, name: str) -> None:
        """Drop a document this replica just changed."""
        self._kept.pop((kind, name), None)
