"""Which failures are worth retrying, or trying elsewhere.

Every upstream failure gets a *reason*, a short bounded name used in decisions, metrics
and spans: ``connect``, ``timeout``, ``reset``, ``bad_response``, ``stall``, ``auth`` (the
provider refused hookgate's credentials), ``http_<status>``, ``context_length`` or
``content_policy``.
"""

from __future__ import annotations

from collections.abc import Collection

import orjson

from hookgate.errors import (
    UpstreamAuthFailed,
    UpstreamBadResponse,
    UpstreamConnectError,
    UpstreamError,
    UpstreamReset,
    UpstreamStatusError,
    UpstreamTimeout,
)

DEFAULT_RETRY_ON: tuple[str, ...] = ("connect", "timeout", "reset", "bad_response", "stall",
                                     "408", "409", "429", "5xx")  # fmt: skip
"""Failures that would likely succeed on another try, here or at another target."""

DEFAULT_FALLBACK_ON: tuple[str, ...] = ("timeout",)
"""Failures better tried at once on another target than again on the same one: a target
that kept a caller waiting past a timeout will likely do it again, and a retry there only
multiplies the wait."""

_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
_CONTEXT_PHRASES = ("maximum context length", "context length", "context window", "too many tokens")
_CONTENT_CODES = frozenset({"content_policy_violation", "content_filter"})


class StallError(UpstreamTimeout):
    """A stream went quiet for longer than ``stall_timeout_s`` between events."""

    code = "upstream_stall"


def reason(exc: UpstreamError) -> str:
    """The failure's reason (see the module docstring)."""
    if isinstance(exc, StallError):
        return "stall"
    if isinstance(exc, UpstreamAuthFailed):
        return "auth"
    if isinstance(exc, UpstreamStatusError):
        if exc.status == 400 or exc.status == 413:
            code, message = _error_fields(exc.body)
            if code in _CONTEXT_CODES or any(p in message for p in _CONTEXT_PHRASES):
                return "context_length"
            if code in _CONTENT_CODES:
                return "content_policy"
        return f"http_{exc.status}"
    if isinstance(exc, UpstreamConnectError):
        return "connect"
    if isinstance(exc, UpstreamTimeout):
        return "timeout"
    if isinstance(exc, UpstreamReset):
        return "reset"
    if isinstance(exc, UpstreamBadResponse):
        return "bad_response"
    return "bad_response"


def matches(failure: str, patterns: Collection[str]) -> bool:
    """True when ``failure`` is listed: by name, by status (``"429"``) or class (``"5xx"``)."""
    if failure in patterns:
        return True
    if failure.startswith("http_"):
        status = failure[5:]
        return status in patterns or f"{status[0]}xx" in patterns
    return False


def _error_fields(body: bytes) -> tuple[str, str]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "", body[:500].decode("utf-8", "replace").lower()
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return "", ""
    code = error.get("code")
    message = error.get("message")
    return (
        code if isinstance(code, str) else "",
        message.lower() if isinstance(message, str) else "",
    )
