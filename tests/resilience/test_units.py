"""Pure resilience logic: failure reasons, backoff, Retry-After, the breaker's state machine."""

from __future__ import annotations

import random

import orjson
import pytest

from hookgate.errors import (
    UpstreamAuthFailed,
    UpstreamBadResponse,
    UpstreamConnectError,
    UpstreamReset,
    UpstreamStatusError,
    UpstreamTimeout,
)
from hookgate.resilience.backoff import full_jitter, retry_after
from hookgate.resilience.breaker import BreakerSettings, CircuitBreaker
from hookgate.resilience.classify import DEFAULT_RETRY_ON, StallError, matches, reason


def status(code: int, error: dict[str, str] | None = None) -> UpstreamStatusError:
    return UpstreamStatusError(code, orjson.dumps({"error": error or {}}), {})


@pytest.mark.parametrize(
    ("exc", "expected", "retry"),
    [
        (UpstreamConnectError("x"), "connect", True),
        (UpstreamTimeout("x"), "timeout", True),
        (StallError("x"), "stall", True),
        (UpstreamReset("x"), "reset", True),
        (UpstreamBadResponse("x"), "bad_response", True),
        (UpstreamAuthFailed("x"), "auth", False),  # not retried here; moves on (fallback)
        (status(503), "http_503", True),
        (status(429), "http_429", True),
        (status(408), "http_408", True),
        (status(400), "http_400", False),
        (status(401), "http_401", False),
        (status(404), "http_404", False),
        (status(422), "http_422", False),
        (status(400, {"code": "context_length_exceeded"}), "context_length", False),
        (
            status(400, {"message": "This model's maximum context length is 8192"}),
            "context_length",
            False,
        ),
        (status(400, {"code": "content_policy_violation"}), "content_policy", False),
    ],
)
def test_reasons_and_default_retry(exc: Exception, expected: str, retry: bool) -> None:
    assert reason(exc) == expected  # type: ignore[arg-type]
    assert matches(expected, DEFAULT_RETRY_ON) is retry


def test_full_jitter_stays_in_bounds() -> None:
    rng = random.Random(1)
    delays = [full_jitter(n, 0.5, 4.0, rng) for n in range(8) for _ in range(50)]
    assert all(0 <= d <= 4.0 for d in delays)
    assert max(full_jitter(0, 0.5, 4.0, rng) for _ in range(200)) <= 0.5


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after-ms": "1500"}) == 1.5
    assert retry_after({"Retry-After": "3"}) == 3.0
    assert retry_after({"retry-after": "Sun, 22 Nov 2026 00:00:10 GMT"}, now=1795305600.0) == 10.0
    assert retry_after({}) is None
    for junk in ("soon", "", "Mon, 99 Foo 2026", "1.5.2"):
        assert retry_after({"retry-after": junk}) is None, junk


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_on_consecutive_failures_and_probes_once() -> None:
    clock = Clock()
    breaker = CircuitBreaker(BreakerSettings(failures=3, open_s=10, open_max_s=10), clock)
    for _ in range(3):
        assert breaker.allow()
        breaker.failure()
    assert breaker.state == "open" and not breaker.allow()
    clock.now = 10
    assert breaker.state == "half_open"
    assert breaker.allow() and not breaker.allow()  # one probe at a time
    breaker.failure()
    assert breaker.state == "open"
    clock.now = 20
    assert breaker.allow()
    breaker.success()
    assert breaker.state == "closed" and breaker.allow()


def test_the_open_interval_grows_while_probes_fail_and_resets_when_one_succeeds() -> None:
    clock = Clock()
    breaker = CircuitBreaker(BreakerSettings(failures=1, open_s=2, open_max_s=10), clock)
    breaker.failure()
    opened = []  # how long the breaker stayed open before each probe
    for _ in range(5):
        since = clock.now
        while not breaker.allow():
            clock.now += 1
        opened.append(clock.now - since)
        breaker.failure()  # the probe fails
    assert opened == [2, 4, 8, 10, 10]  # doubled after each failed probe, up to open_max_s
    clock.now += 10
    assert breaker.allow()
    breaker.success()  # the target is back at once
    assert breaker.state == "closed"
    breaker.failure()
    clock.now += 2
    assert breaker.state == "half_open"  # open_s again, not the grown interval


def test_an_open_max_below_open_s_keeps_the_interval_fixed() -> None:
    clock = Clock()
    breaker = CircuitBreaker(BreakerSettings(failures=1, open_s=30, open_max_s=20), clock)
    breaker.failure()
    for _ in range(3):
        clock.now += 30
        assert breaker.allow()
        breaker.failure()
    clock.now += 30
    assert breaker.state == "half_open"


def test_breaker_opens_on_failure_rate_in_window() -> None:
    clock = Clock()
    breaker = CircuitBreaker(
        BreakerSettings(failures=100, failure_rate=0.5, window_s=10, min_requests=4), clock
    )
    for ok in (True, False, True, False):
        breaker.success() if ok else breaker.failure()
    assert breaker.state == "open"
    fresh = CircuitBreaker(
        BreakerSettings(failures=100, failure_rate=0.5, window_s=10, min_requests=4), clock
    )
    for _ in range(2):
        fresh.failure()
        clock.now += 20  # old results leave the window
    fresh.success()
    fresh.failure()
    assert fresh.state == "closed"
