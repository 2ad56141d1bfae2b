"""Budget limits: scopes, windows, and the counters a request is charged against. Pure.

A limit caps USD and/or tokens for one *scope* (``key``, ``team``, ``user``, ``agent``,
``reply``, ``model``) over one *window* (``minute``, ``hour``, ``day``, ``month`` in UTC
calendar terms, or ``total``). Each scope value gets its own counter per window: team
``payments`` on 2026-11-22 is counter ``team=payments|day|2026-11-22``.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field
from typing import Literal

Scope = Literal["key", "team", "user", "agent", "reply", "model"]
Window = Literal["minute", "hour", "day", "month", "total"]
WINDOW_MAX_S: dict[Window, float] = {"minute": 60, "hour": 3600, "day": 86400, "month": 31 * 86400}
"""The longest each window lasts (a calendar month: 31 days at most); ``total`` never ends."""


@dataclass(frozen=True, slots=True)
class Limit:
    """One configured limit."""

    scope: Scope
    window: Window
    usd: float | None
    tokens: int | None


@dataclass(frozen=True, slots=True)
class Counter:
    """A limit applied to one scope value in the current window."""

    limit: Limit
    value: str
    since: float
    """Start of the window (epoch seconds); 0 for ``total``."""
    key: str = field(init=False, compare=False)
    """``scope=value|window|since``: the counter's name in a ledger."""

    def __post_init__(self) -> None:
        key = f"{self.limit.scope}={self.value}|{self.limit.window}|{self.since:.0f}"
        object.__setattr__(self, "key", key)

    @property
    def until(self) -> float | None:
        """When the window ends at the latest (epoch seconds); None for ``total``."""
        length = WINDOW_MAX_S.get(self.limit.window)
        return None if length is None else self.since + length


def window_start(window: Window, now: float) -> float:
    """The UTC start of the window containing ``now``."""
    if window == "total":
        return 0.0
    # Every window starts on a whole minute, so the minute decides (and is cached).
    return _window_start(window, int(now // 60))


@functools.lru_cache(maxsize=64)
def _window_start(window: Window, minute: int) -> float:
    t = dt.datetime.fromtimestamp(minute * 60, dt.UTC)
    if window == "minute":
        t = t.replace(second=0, microsecond=0)
    elif window == "hour":
        t = t.replace(minute=0, second=0, microsecond=0)
    elif window == "day":
        t = t.replace(hour=0, minute=0, second=0, microsecond=0)
    else:
        t = t.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return t.timestamp()


def counters(limits: tuple[Limit, ...], values: dict[str, str | None], now: float) -> list[Counter]:
    """The counters a request with these scope ``values`` is charged against.

    A limit whose scope has no value for this request (no reply id, say) does not apply.
    """
    out = []
    for limit in limits:
        value = values.get(limit.scope)
        if value:
            out.append(Counter(limit, value, window_start(limit.window, now)))
    return out
