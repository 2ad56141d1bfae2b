"""Reservations and spend against budget counters.

:class:`Ledger` is the interface; :class:`MemoryLedger` serves one process that keeps a
SQLite store's budgets alone (the default); :mod:`hookgate.store.sqlite_budgets` serves
several processes sharing one SQLite file, and the Redis store's ledger several replicas.

MemoryLedger: atomic in memory, durable in the store.

Reserve-then-settle: before a call its worst case is reserved against every counter it
is charged to, all or nothing; after it the reservation is replaced by the reported
spend, which is written to the store before the response completes. A crashed process
loses only its reservations (they were never spend), never settled spend.

Atomicity: the check and the reservation happen with no ``await`` between them, on the
one event loop. Counter totals are read from the store on first use; the store runs
reads and writes on one worker thread in submission order, so a read that completes
before a concurrent write does not include it and the write's in-memory update lands
after the read's. It is exact only while no other process charges the same counters:
the SQLite store's claim (awaited by :meth:`MemoryLedger.load`, see
:mod:`hookgate.store.sqlite_owners`) refuses it beside another process that keeps them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from hookgate.budgets.limits import Counter

MAX_CACHED = 100_000
_NONE = (0.0, 0.0)
"""``(usd, tokens)`` of a counter nothing was spent or held on."""


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
    session: str | None = None


class SpendLog(Protocol):
    """Where settled spend is kept durably (the store implements it)."""

    async def record_usage(self, row: UsageRow) -> None:
        """Append a settled spend record; committed (durable) when this returns."""
        ...

    async def usage_total(self, scope: str, value: str, since: float) -> tuple[float, int]:
        """``(usd, tokens)`` recorded for a scope value (``team``, ``payments``) since then."""
        ...


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a reservation did not fit: the first counter it would break."""

    counter: Counter
    unit: str
    """``usd`` or ``tokens``."""
    exhausted: bool
    """True when settled spend alone leaves no room; False when reservations in flight
    do (then a retry shortly may fit)."""


class Ledger(Protocol):
    """Reserve, settle, release; ``remaining`` reports what is left."""

    async def load(self, counters: list[Counter]) -> None:
        """Make the counters' settled totals available (no-op where always available)."""
        ...

    async def reserve(
        self, reservation: str, counters: list[Counter], usd: float, tokens: int
    ) -> Refusal | None:
        """Reserve on every counter, or on none (returning why), atomically."""
        ...

    async def release(self, reservation: str) -> None: ...

    async def settle(self, reservation: str, counters: list[Counter], row: UsageRow) -> None:
        """Record the spend durably and replace the reservation by it."""
        ...

    async def remaining(self, counters: list[Counter]) -> tuple[float | None, int | None]: ...


def refusal(
    counter: Counter, used: Sequence[float], held: Sequence[float], usd: float, tokens: int
) -> Refusal | None:
    """Why ``counter`` cannot hold ``usd`` and ``tokens`` more, given its ``used`` and
    ``held`` ``(usd, tokens)``; None when it can. Exhausted when the spend alone would
    pass the cap (holds come and go: it is only busy)."""
    checks = (("usd", counter.limit.usd, 0, usd), ("tokens", counter.limit.tokens, 1, tokens))
    for unit, cap, index, amount in checks:
        if cap is not None and used[index] + held[index] + amount > cap:
            return Refusal(counter, unit, exhausted=used[index] + amount > cap)
    return None


def least_left(
    totals: Iterable[tuple[Counter, float, float, float, float]],
) -> tuple[float | None, int | None]:
    """:meth:`Ledger.remaining` from each counter's ``(counter, used_usd, used_tokens,
    held_usd, held_tokens)``: the least USD and tokens left (None: no such limit)."""
    usd_left: float | None = None
    tokens_left: int | None = None
    for counter, used_usd, used_tokens, held_usd, held_tokens in totals:
        if counter.limit.usd is not None:
            left = max(0.0, counter.limit.usd - used_usd - held_usd)
            usd_left = left if usd_left is None else min(usd_left, left)
        if counter.limit.tokens is not None:
            left_tokens = max(0, int(counter.limit.tokens - used_tokens - held_tokens))
            tokens_left = left_tokens if tokens_left is None else min(tokens_left, left_tokens)
    return usd_left, tokens_left


class MemoryLedger:
    """The one-process ledger (see the module docstring). ``claim``, when given, is awaited
    by :meth:`load` until it succeeds."""

    def __init__(self, store: SpendLog, claim: Callable[[], Awaitable[None]] | None = None) -> None:
        self._store = store
        self._claim = claim
        self._used: OrderedDict[str, list[float]] = OrderedDict()
        self._reserved: dict[str, list[float]] = {}
        self._held: dict[str, tuple[list[str], float, int]] = {}

    async def load(self, counters: list[Counter]) -> None:
        """Read the settled totals of counters not yet in memory."""
        if self._claim is not None:
            await self._claim()
            self._claim = None
        for counter in counters:
            if counter.key not in self._used:
                usd, tokens = await self._store.usage_total(
                    counter.limit.scope, counter.value, counter.since
                )
                if counter.key not in self._used:
                    self._used[counter.key] = [usd, float(tokens)]
                    if len(self._used) > MAX_CACHED:
                        self._used.popitem(last=False)

    async def reserve(
        self, reservation: str, counters: list[Counter], usd: float, tokens: int
    ) -> Refusal | None:
        """Reserve ``usd`` and ``tokens`` on every counter, or nothing (returns why)."""
        for counter in counters:
            used = self._used.get(counter.key, _NONE)
            held = self._reserved.get(counter.key, _NONE)
            refused = refusal(counter, used, held, usd, tokens)
            if refused is not None:
                return refused
        for counter in counters:
            held = self._reserved.setdefault(counter.key, [0.0, 0.0])
            held[0] += usd
            held[1] += tokens
        self._held[reservation] = ([c.key for c in counters], usd, tokens)
        return None

    async def release(self, reservation: str) -> None:
        """Drop a reservation (the call failed or was refused)."""
        self._release(reservation)

    def _release(self, reservation: str) -> None:
        keys, usd, tokens = self._held.pop(reservation, ([], 0.0, 0))
        for key in keys:
            held = self._reserved.get(key)
            if held is not None:
                held[0] -= usd
                held[1] -= tokens
                if held[0] <= 1e-12 and held[1] <= 0:
                    del self._reserved[key]

    async def settle(self, reservation: str, counters: list[Counter], row: UsageRow) -> None:
        """Write the spend durably, then replace the reservation by it in memory. When the
        write fails the spend still counts here (the limit holds in this process), and the
        store's error is raised."""
        keys = [c.key for c in counters]
        try:
            await self._store.record_usage(row)
        finally:
            self._release(reservation)
            for key in keys:
                used = self._used.get(key)
                if used is not None:
                    used[0] += row.cost_usd
                    used[1] += row.input_tokens + row.output_tokens

    async def remaining(self, counters: list[Counter]) -> tuple[float | None, int | None]:
        """The least USD and tokens left across ``counters`` (None: no such limit)."""
        totals = []
        for counter in counters:
            used = self._used.get(counter.key, _NONE)
            held = self._reserved.get(counter.key, _NONE)
            totals.append((counter, used[0], used[1], held[0], held[1]))
        return least_left(totals)
