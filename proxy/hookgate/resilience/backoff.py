"""Retry delays: exponential backoff with full jitter, and the server's ``Retry-After``.

The one backoff of hookgate: ``fallback`` (retrying an upstream) and ``tool_retry``
(running a tool again) both wait :func:`full_jitter`, set by ``backoff_base_s`` and
``backoff_max_s``.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping


def full_jitter(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """A delay uniformly in ``[0, min(max_s, base_s * 2**attempt)]`` (AWS "full jitter");
    ``attempt`` counts from 0 (the first retry)."""
    return rng.uniform(0.0, min(max_s, base_s * (2**attempt)))


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``Retry-After``), if any."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP-date; anything else ("soon") is no advice at all
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - (time.time() if now is None else now))
