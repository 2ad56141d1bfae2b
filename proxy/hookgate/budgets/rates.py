"""Per-minute request and token rates: a sliding-window counter, in memory or in Redis.

The estimate for "the last 60 seconds" weighs the previous fixed minute by how much of
it still lies inside the window: ``previous * (1 - elapsed / 60) + current``. O(1) per
counter, accurate to a few percent, no per-request log (Cloudflare's method).

:class:`MemoryRateLimiter` counts in this process's memory (one process on a SQLite
store); :mod:`hookgate.store.sqlite_budgets` counts in a SQLite file that several
processes share (both decide with :func:`judge`), :mod:`hookgate.store.redis_budgets`
in Redis (a Lua script with the same sums).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

WINDOW_S = 60.0


@dataclass(frozen=True, slots=True)
class Rate:
    """A per-minute rate of one scope (``key``, ``team``, ``model``): requests, tokens or
    both."""

    scope: str
    rpm: int | None
    tpm: int | None


@dataclass(frozen=True, slots=True)
class RateCheck:
    """One counter to charge: its name, its per-minute cap, and the amount."""

    key: str
    cap: int
    amount: int


@dataclass(frozen=True, slots=True)
class RateResult:
    """The outcome for the tightest counter."""

    allowed: bool
    check: RateCheck | None
    remaining: int
    reset_s: float
    """Seconds until the counter has room for the amount again (0 when allowed)."""


class RateLimiter(Protocol):
    async def hit(self, checks: list[RateCheck], now: float | None = None) -> RateResult:
        """Charge every check, or none when one would exceed its cap."""
        ...


def estimate(previous: float, current: float, elapsed: float) -> float:
    """The sliding-window count ``elapsed`` seconds into the current minute."""
    return previous * max(0.0, 1.0 - elapsed / WINDOW_S) + current


def wait_for_room(previous: float, current: float, elapsed: float, cap: int, amount: int) -> float:
    """Seconds until ``amount`` fits under ``cap`` as the previous minute slides out."""
    if current + amount > cap:
        # wait for this minute to end, then for enough of it to slide out of the window
        return WINDOW_S - elapsed + WINDOW_S * max(0.0, (current + amount - cap) / current)
    if previous <= 0:
        return 0.0
    needed = estimate(previous, current, elapsed) + amount - cap
    return max(0.0, min(WINDOW_S - elapsed, needed / previous * WINDOW_S))


def judge(checks: list[RateCheck], counts: list[tuple[float, float]], elapsed: float) -> RateResult:
    """The outcome of charging ``checks``, given each one's ``(previous, current)`` minute
    counts ``elapsed`` seconds into the current minute: refused by the first that would
    pass its cap, else allowed, reporting the tightest."""
    tightest: RateResult | None = None
    for check, (previous, current) in zip(checks, counts, strict=True):
        used = estimate(previous, current, elapsed)
        if used + check.amount > check.cap:
            reset = wait_for_room(previous, current, elapsed, check.cap, check.amount)
            return RateResult(False, check, max(0, int(check.cap - used)), reset)
        remaining = int(check.cap - used - check.amount)
        if tightest is None or remaining < tightest.remaining:
            tightest = RateResult(True, check, remaining, 0.0)
    return tightest or RateResult(True, None, 0, 0.0)


class MemoryRateLimiter:
    """The one-process limiter (embedded store). ``claim``, when given, is awaited before
    the first count until it succeeds (the SQLite store's claim of its budgets, see
    :mod:`hookgate.store.sqlite_owners`)."""

    def __init__(self, claim: Callable[[], Awaitable[None]] | None = None) -> None:
        self._counts: dict[tuple[str, int], float] = {}
        self._claim = claim

    async def hit(self, checks: list[RateCheck], now: float | None = None) -> RateResult:
        if self._claim is not None:
            await self._claim()
            self._claim = None
        now = time.time() if now is None else now
        minute = int(now // WINDOW_S)
        counts = [
            (self._counts.get((c.key, minute - 1), 0.0), self._counts.get((c.key, minute), 0.0))
            for c in checks
        ]
        result = judge(checks, counts, now - minute * WINDOW_S)
        if result.allowed:
            for check in checks:
                self._counts[(check.key, minute)] = (
                    self._counts.get((check.key, minute), 0.0) + check.amount
                )
            self._forget(minute)
        return result

    def _forget(self, minute: int) -> None:
        if len(self._counts) > 50_000:
            self._counts = {k: v for k, v in self._counts.items() if k[1] >= minute - 1}
