"""Per-minute request and token rates: a sliding-window counter, in memory or in Redis.

The estimate for "the last 60 seconds" weighs the previous fixed minute by how much of
it still lies inside the window: ``previous * (1 - elapsed / 60) + current``. O(1) per
counter, accurate to a few percent, no per-request log (Cloudflare's method).
"""

from __future__ import annotations

import time
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


class MemoryRateLimiter:
    """The one-process limiter (embedded store)."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, int], float] = {}

    async def hit(self, checks: list[RateCheck], now: float | None = None) -> RateResult:
        now = time.time() if now is None else now
        minute = int(now // WINDOW_S)
        elapsed = now - minute * WINDOW_S
        tightest: RateResult | None = None
        for check in checks:
            previous = self._counts.get((check.key, minute - 1), 0.0)
            current = self._counts.get((check.key, minute), 0.0)
            used = estimate(previous, current, elapsed)
            if used + check.amount > check.cap:
                reset = wait_for_room(previous, current, elapsed, check.cap, check.amount)
                return RateResult(False, check, max(0, int(check.cap - used)), reset)
            remaining = int(check.cap - used - check.amount)
            if tightest is None or remaining < tightest.remaining:
                tightest = RateResult(True, check, remaining, 0.0)
        for check in checks:
            self._counts[(check.key, minute)] = (
                self._counts.get((check.key, minute), 0.0) + check.amount
            )
        self._forget(minute)
        return tightest or RateResult(True, None, 0, 0.0)

    def _forget(self, minute: int) -> None:
        if len(self._counts) > 50_000:
            self._counts = {k: v for k, v in self._counts.items() if k[1] >= minute - 1}
