"""Budgets and per-minute rates in a SQLite file, exact across the processes sharing it.

Used when several processes share one SQLite store: the workers of ``hookgate serve
--workers N``, or separate processes whose store URL ends in ``?shared=true``. One
process alone keeps them in memory instead (:class:`~hookgate.budgets.ledger.MemoryLedger`,
faster); :mod:`hookgate.store.sqlite_owners` refuses to mix the two on one file.

Every reserve, settle, release and rate hit is one op in a ``BEGIN IMMEDIATE`` transaction
(:meth:`SQLiteStore.submit`): it holds the file's write lock, so no process writes between
its check and its write, and ops that arrive together share one commit.

* **Reserve** reads each counter's settled total (``budget_counters``, filled from the
  ``usage`` rows on first use) and the holds on it (``budget_holds``), and inserts a hold
  on every counter, or none. Never overspent: a hold is taken only where settled spend plus
  every hold plus this one fits.
* **Settle** deletes the request's holds, inserts its ``usage`` row and adds its spend to
  every counter of its scope values whose window it falls in, in one transaction: spend is
  never lost nor counted twice, and ``budget_counters`` always equals the sums of ``usage``
  (so ``hookgate spend`` equals the ledger).
* **Crash.** A settle that committed survives ``kill -9`` (WAL, ``synchronous=NORMAL``); a
  transaction cut short by it is rolled back whole. A killed process's holds stay until
  they stand in someone's way: a reserve that only holds refuse (``busy``) asks whether
  their owners still run (their ``flock``, see :mod:`hookgate.store.sqlite_owners`),
  deletes those of the dead and decides again. So the budget is blocked by a dead process
  for no time at all, and a live process's holds are never taken from it, however long its
  call. Each process also sweeps the dead when it claims the store.
* **Rates** are ``(key, minute)`` rows in ``rate_counts``, counted as
  :func:`~hookgate.budgets.rates.judge` decides, in one transaction per hit.

Cost (``python -m bench.ledger``): a reserve and a rate hit each cost a commit that the
memory ledger does not make, so the budget's own work costs 2.5-3 times its CPU one
request at a time (460-640 µs against 180-240, the settlement's commit included) and
1.5-1.7 times at 32 at once, where requests share commits (95-125 µs against 55-75); a
whole budgeted request, 6-35% more CPU. Hence a process alone keeps the memory ledger.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from hookgate.budgets.ledger import Refusal, UsageRow, least_left, refusal
from hookgate.budgets.limits import Counter
from hookgate.budgets.rates import WINDOW_S, RateCheck, RateResult, judge
from hookgate.store.sqlite import SCOPE_COLUMNS, SQLiteStore, insert_usage
from hookgate.store.sqlite_owners import Mode, Owners

log = logging.getLogger("hookgate")

KEPT_AFTER_WINDOW_S = 86400.0
"""How long a counter of a past window is kept (a late settle still finds it)."""
PRUNE_EVERY_S = 60.0
MAX_SEEN = 100_000

State = tuple[float, float, float, float]
"""A counter's settled USD and tokens, and the USD and tokens held on it."""


def claimer(store: SQLiteStore, mode: Mode) -> Callable[[], Awaitable[None]]:
    """What a ledger or limiter awaits before its first use: claim the store's budgets in
    ``mode``. Exclusive: forget what shared-mode processes left (none is alive: it holds
    the lock). Shared: release what dead sharers hold, and remove their owner files."""

    async def claim() -> None:
        if not store.owners.take(mode):
            return
        if mode == "exclusive":
            store.owners.forget_all()
            await store.submit(_forget_shared)
        else:
            await store.submit(functools.partial(_sweep, owners=store.owners))
            store.owners.forget_dead()  # those that held nothing too

    return claim


class SQLiteLedger:
    """Reservations and spend in a shared SQLite file (see the module docstring)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store
        self._claim: Callable[[], Awaitable[None]] | None = claimer(store, "shared")
        self._seen: OrderedDict[str, State] = OrderedDict()
        self._next_prune = 0.0
        self._pending: set[asyncio.Future[Any]] = set()

    async def load(self, counters: list[Counter]) -> None:
        """Claim the store on first use (the counters are read by each reserve)."""
        if self._claim is not None:
            await self._claim()
            self._claim = None

    async def reserve(
        self, reservation: str, counters: list[Counter], usd: float, tokens: int
    ) -> Refusal | None:
        """Hold ``usd`` and ``tokens`` on every counter, or none (returns why), in one
        transaction. A caller cancelled meanwhile releases what it may have held."""
        await self.load(counters)
        now = time.time()
        prune = now >= self._next_prune
        if prune:
            self._next_prune = now + PRUNE_EVERY_S
        op = functools.partial(
            _reserve, owners=self._store.owners, reservation=reservation, counters=counters,
            usd=usd, tokens=tokens, prune_before=now - KEPT_AFTER_WINDOW_S if prune else None,
        )  # fmt: skip
        try:
            refusal, states = await self._store.submit(op)
        except asyncio.CancelledError:
            self._quietly(functools.partial(_release, reservation=reservation))
            raise
        for key, state in states.items():
            self._seen[key] = state
            self._seen.move_to_end(key)
        while len(self._seen) > MAX_SEEN:
            self._seen.popitem(last=False)
        return refusal

    async def release(self, reservation: str) -> None:
        """Drop a reservation (the call failed or was refused)."""
        await self._store.submit(functools.partial(_release, reservation=reservation))

    async def settle(self, reservation: str, counters: list[Counter], row: UsageRow) -> None:
        """Replace the reservation by the spend, durably, in one transaction. When it
        fails nothing changed: the reservation (at least the spend, as it was the worst
        case) stays held until this process ends, so the limit still holds, and the
        store's error is raised."""
        await self._store.submit(functools.partial(_settle, reservation=reservation, row=row))

    async def remaining(self, counters: list[Counter]) -> tuple[float | None, int | None]:
        """The least USD and tokens left across ``counters`` as this process's last
        reserve on each saw them (None: no such limit); no trip to the store."""
        return least_left((c, *self._seen.get(c.key, (0.0,) * 4)) for c in counters)

    def _quietly(self, op: Callable[[sqlite3.Connection], object]) -> None:
        """Queue ``op`` with no one to wait for it; a failure is logged."""
        future = self._store.submit(op)
        self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: asyncio.Future[Any]) -> None:
        self._pending.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error("budget: a reservation was not released: %s", future.exception())


class SQLiteRateLimiter:
    """Per-minute rates in a shared SQLite file (see the module docstring)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store
        self._claim: Callable[[], Awaitable[None]] | None = claimer(store, "shared")
        self._pruned = 0

    async def hit(self, checks: list[RateCheck], now: float | None = None) -> RateResult:
        if self._claim is not None:
            await self._claim()
            self._claim = None
        now = time.time() if now is None else now
        minute = int(now // WINDOW_S)
        prune = minute != self._pruned
        self._pruned = minute
        op = functools.partial(
            _hit, checks=checks, minute=minute, elapsed=now - minute * WINDOW_S, prune=prune
        )
        return await self._store.submit(op)


# The ops: each runs inside one BEGIN IMMEDIATE transaction on the store's thread.


def _reserve(
    db: sqlite3.Connection,
    owners: Owners,
    reservation: str,
    counters: list[Counter],
    usd: float,
    tokens: int,
    prune_before: float | None,
) -> tuple[Refusal | None, dict[str, State]]:
    if prune_before is not None:
        db.execute("DELETE FROM budget_counters WHERE until < ?", (prune_before,))
    states = {c.key: _state(db, c) for c in counters}
    refusal = _check(counters, states, usd, tokens)
    if refusal is not None and not refusal.exhausted and _sweep(db, owners):
        states = {c.key: _state(db, c) for c in counters}
        refusal = _check(counters, states, usd, tokens)
    if refusal is None:
        db.executemany(
            "INSERT INTO budget_holds (reservation, counter, owner, usd, tokens)"
            " VALUES (?, ?, ?, ?, ?)",
            [(reservation, key, owners.me, usd, tokens) for key in states],
        )
        states = {k: (s[0], s[1], s[2] + usd, s[3] + tokens) for k, s in states.items()}
    return refusal, states


def _state(db: sqlite3.Connection, counter: Counter) -> State:
    row = db.execute(
        "SELECT used_usd, used_tokens FROM budget_counters WHERE key = ?", (counter.key,)
    ).fetchone()
    if row is None:  # first use: what the usage rows say (the view starts here)
        column = SCOPE_COLUMNS[counter.limit.scope]
        row = db.execute(
            "SELECT COALESCE(SUM(cost_usd), 0), COALESCE(SUM(input_tokens + output_tokens), 0)"
            f" FROM usage WHERE {column} = ? AND ts >= ?",
            (counter.value, counter.since),
        ).fetchone()
        db.execute(
            "INSERT INTO budget_counters (key, scope, value, since, until, used_usd, used_tokens)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (counter.key, column, counter.value, counter.since,
             counter.until, row[0], row[1]),
        )  # fmt: skip
    held = db.execute(
        "SELECT COALESCE(SUM(usd), 0), COALESCE(SUM(tokens), 0) FROM budget_holds"
        " WHERE counter = ?",
        (counter.key,),
    ).fetchone()
    return float(row[0]), float(row[1]), float(held[0]), float(held[1])


def _check(
    counters: list[Counter], states: dict[str, State], usd: float, tokens: int
) -> Refusal | None:
    for counter in counters:
        state = states[counter.key]
        refused = refusal(counter, state[:2], state[2:], usd, tokens)
        if refused is not None:
            return refused
    return None


def _sweep(db: sqlite3.Connection, owners: Owners) -> int:
    """Delete the holds of processes that no longer run; how many such processes."""
    dead = [
        owner
        for (owner,) in db.execute("SELECT DISTINCT owner FROM budget_holds").fetchall()
        if not owners.alive(owner)
    ]
    for owner in dead:
        db.execute("DELETE FROM budget_holds WHERE owner = ?", (owner,))
    if dead:
        log.warning("budget: released the reservations of %d stopped processes", len(dead))
    return len(dead)


def _release(db: sqlite3.Connection, reservation: str) -> None:
    db.execute("DELETE FROM budget_holds WHERE reservation = ?", (reservation,))


_SCOPES_OF_ROW = (
    ("key_id", "key_id"), ("team", "team"), ("user", "user"), ("agent", "agent"),
    ("reply", "reply"), ("model", "model"),
)  # fmt: skip


def _settle(db: sqlite3.Connection, reservation: str, row: UsageRow) -> None:
    db.execute("DELETE FROM budget_holds WHERE reservation = ?", (reservation,))
    insert_usage(db, row)
    tokens = row.input_tokens + row.output_tokens
    for column, field in _SCOPES_OF_ROW:
        value = getattr(row, field)
        if value:
            db.execute(
                "UPDATE budget_counters SET used_usd = used_usd + ?,"
                " used_tokens = used_tokens + ? WHERE scope = ? AND value = ? AND since <= ?",
                (row.cost_usd, tokens, column, value, row.ts),
            )


def _forget_shared(db: sqlite3.Connection) -> None:
    for table in ("budget_holds", "budget_counters", "rate_counts"):
        db.execute(f"DELETE FROM {table}")


def _hit(
    db: sqlite3.Connection, checks: list[RateCheck], minute: int, elapsed: float, prune: bool
) -> RateResult:
    if prune:
        db.execute("DELETE FROM rate_counts WHERE minute < ?", (minute - 1,))
    counts = []
    for check in checks:
        rows = dict(
            db.execute(
                "SELECT minute, amount FROM rate_counts WHERE key = ? AND minute >= ?",
                (check.key, minute - 1),
            ).fetchall()
        )
        counts.append((float(rows.get(minute - 1, 0.0)), float(rows.get(minute, 0.0))))
    result = judge(checks, counts, elapsed)
    if result.allowed:
        db.executemany(
            "INSERT INTO rate_counts (key, minute, amount) VALUES (?, ?, ?)"
            " ON CONFLICT (key, minute) DO UPDATE SET amount = amount + excluded.amount",
            [(check.key, minute, check.amount) for check in checks],
        )
    return result
