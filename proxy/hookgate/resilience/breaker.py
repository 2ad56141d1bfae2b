"""A circuit breaker per upstream target.

``closed``: traffic flows; it opens after ``failures`` consecutive failures, or when at
least ``min_requests`` calls in the last ``window_s`` failed at a rate of ``failure_rate``
or more. ``open``: the target is skipped for the open interval. ``half_open``: one probe
is let through; its success closes the breaker at once, its failure opens it again.

The open interval starts at ``open_s`` and doubles each time a probe fails, up to
``open_max_s`` (never below ``open_s``): a target that flapped for a moment is tried
again within seconds, one that stays down is probed less and less often. A successful
probe resets it to ``open_s``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

State = Literal["closed", "open", "half_open"]
STATE_VALUES: dict[str, int] = {"closed": 0, "half_open": 1, "open": 2}


@dataclass(frozen=True, slots=True)
class BreakerSettings:
    failures: int = 5
    failure_rate: float = 0.5
    window_s: float = 30.0
    min_requests: int = 10
    open_s: float = 5.0
    open_max_s: float = 20.0


class CircuitBreaker:
    """See the module docstring. Not thread-safe; used from one event loop."""

    def __init__(
        self, settings: BreakerSettings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._state: State = "closed"
        self._consecutive = 0
        self._results: deque[tuple[float, bool]] = deque()
        self._opened_at = 0.0
        self._open_for = settings.open_s
        self._probing = False

    @property
    def state(self) -> State:
        """The state now (an open breaker whose time is up reads as half-open)."""
        if self._state == "open" and self._clock() - self._opened_at >= self._open_for:
            self._state = "half_open"
            self._probing = False
        return self._state

    def allow(self) -> bool:
        """May a call go to this target now? In half-open, only one probe at a time."""
        state = self.state
        if state == "closed":
            return True
        if state == "half_open" and not self._probing:
            self._probing = True
            return True
        return False

    def success(self) -> None:
        self._record(True)
        self._consecutive = 0
        if self._state == "half_open":
            self._state = "closed"
            self._results.clear()
            self._open_for = self._settings.open_s
        self._probing = False

    def failure(self) -> None:
        self._record(False)
        self._consecutive += 1
        if self._state == "half_open":  # the probe failed: stay away longer
            cap = max(self._settings.open_s, self._settings.open_max_s)
            self._open_for = min(self._open_for * 2, cap)
        if self._state == "half_open" or self._should_open():
            self._state = "open"
            self._opened_at = self._clock()
        self._probing = False

    def _record(self, ok: bool) -> None:
        now = self._clock()
        self._results.append((now, ok))
        horizon = now - self._settings.window_s
        while self._results and self._results[0][0] < horizon:
            self._results.popleft()

    def _should_open(self) -> bool:
        settings = self._settings
        if self._consecutive >= settings.failures:
            return True
        if len(self._results) < settings.min_requests:
            return False
        failed = sum(1 for _, ok in self._results if not ok)
        return failed / len(self._results) >= settings.failure_rate
