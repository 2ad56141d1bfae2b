"""The error tree: OpenAI-format bodies and the headers errors carry."""

from __future__ import annotations

import orjson

from hookgate.errors import BudgetExceeded, NotFound, RateLimited, error_type


def test_body_shape_and_code() -> None:
    error = NotFound("no such model", param="model", code="model_not_found")
    assert orjson.loads(error.to_bytes()) == {"error": {
        "message": "no such model", "type": "invalid_request_error", "param": "model",
        "code": "model_not_found"}}  # fmt: skip
    assert error.status == 404 and error_type(error) == "model_not_found"


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert BudgetExceeded("exhausted").headers() == {}
    assert BudgetExceeded("busy", retry_after=1.0).headers() == {"retry-after": "1"}
    limited = RateLimited(
        "slow", kind="requests", retry_after=80.2, headers={"x-ratelimit-limit-requests": "3"}
    )
    assert limited.headers() == {"x-ratelimit-limit-requests": "3", "retry-after": "81"}
    assert limited.type == "requests"
    quick = RateLimited("slow", kind="tokens", retry_after=0.01, headers={})
    assert quick.headers() == {"retry-after": "1"} and quick.type == "tokens"
    never = RateLimited("too large", kind="tokens", retry_after=None, headers={})
    assert never.headers() == {}  # it would never fit: no time to wait for
