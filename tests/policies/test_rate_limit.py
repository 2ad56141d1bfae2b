"""Rate limits: per-minute requests and tokens, OpenAI-style headers, shared through Redis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from hookgate.budgets.rates import MemoryRateLimiter, RateCheck, estimate
from hookgate.config.loader import load_text
from hookgate.server.app import create_app
from tests.conftest import ProxyFactory, config_text, openai_client
from tests.fakes import FakeUpstream, LoopThread, RunningApp
from tests.services import RedisServer

QUESTION = [{"role": "user", "content": "How are you today?"}]


def test_requests_per_minute(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    url = make_proxy("policies:\n  - rate_limit: {limits: [{scope: model, rpm: 3}]}\n")
    client = openai_client(url)
    remaining = []
    for _ in range(3):
        reply = client.chat.completions.with_raw_response.create(model="m", messages=QUESTION)  # type: ignore[arg-type]
        remaining.append(reply.headers["x-ratelimit-remaining-requests"])
        assert reply.headers["x-ratelimit-limit-requests"] == "3"
    assert remaining == ["2", "1", "0"]
    response = httpx.post(f"{url}/chat/completions", json={"model": "m", "messages": QUESTION})
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    # the 3 requests of this minute must slide out of the 60 s window: at most 80 s
    assert 1 <= int(response.headers["retry-after"]) <= 81
    assert response.headers["x-ratelimit-remaining-requests"] == "0"
    assert len(upstream.requests) == 3
    # another model has its own counter
    assert client.chat.completions.create(model="other", messages=QUESTION).choices  # type: ignore[arg-type]


def test_tokens_per_minute(make_proxy: ProxyFactory, upstream: FakeUpstream) -> None:
    url = make_proxy("policies:\n  - rate_limit: {limits: [{scope: model, tpm: 100}]}\n")
    client = openai_client(url)
    client.chat.completions.create(model="m", messages=QUESTION, max_tokens=50)  # type: ignore[arg-type]
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="m", messages=QUESTION, max_tokens=50)  # type: ignore[arg-type]
    assert "100 tokens per minute" in refused.value.message
    assert refused.value.type == "tokens"


def test_a_request_larger_than_the_token_rate_is_refused_for_good(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    """It divided by zero (a 500) in an empty minute, and later got a Retry-After of
    19 days after which it still would not fit."""
    url = make_proxy("policies:\n  - rate_limit: {limits: [{scope: model, tpm: 100}]}\n")
    body = {"model": "m", "messages": QUESTION, "max_tokens": 500}
    for _ in range(2):  # in an empty minute, and after traffic
        response = httpx.post(f"{url}/chat/completions", json=body)
        assert response.status_code == 429, response.text
        error = response.json()["error"]
        assert error["type"] == "tokens" and "Request too large" in error["message"]
        assert "retry-after" not in response.headers
        assert httpx.post(f"{url}/chat/completions", json={**body, "max_tokens": 5}).is_success
    assert len(upstream.requests) == 2


async def test_sliding_window() -> None:
    limiter = MemoryRateLimiter()
    check = RateCheck("k", 10, 1)
    for _ in range(10):
        assert (await limiter.hit([check], now=30.0)).allowed
    refused = await limiter.hit([check], now=59.0)
    assert not refused.allowed and 0 < refused.reset_s <= 31
    # 30 s into the next minute half of the previous minute still counts: 5 used
    assert estimate(10, 0, 30) == 5
    for _ in range(5):
        assert (await limiter.hit([check], now=90.0)).allowed
    assert not (await limiter.hit([check], now=90.0)).allowed
    assert (await limiter.hit([check], now=150.0)).allowed


@pytest.fixture
def redis_proxies(
    tmp_path: Path, loop_thread: LoopThread, upstream: FakeUpstream
) -> Iterator[list[str]]:
    redis = RedisServer(tmp_path)
    text = config_text(
        upstream.base_url,
        f"store: '{redis.url}'\n"
        "policies:\n  - rate_limit: {limits: [{scope: model, rpm: 10}]}\n",
    )
    servers = [loop_thread.run(RunningApp(create_app(load_text(text))).start()) for _ in range(2)]
    yield [f"{server.url}/v1" for server in servers]
    for server in servers:
        loop_thread.run(server.stop())
    redis.stop()


def test_rate_is_shared_by_replicas(redis_proxies: list[str], upstream: FakeUpstream) -> None:
    outcomes = []
    for i in range(16):
        response = httpx.post(
            f"{redis_proxies[i % 2]}/chat/completions", json={"model": "m", "messages": QUESTION}
        )
        outcomes.append(response.status_code)
    assert outcomes.count(200) == 10 and outcomes.count(429) == 6
    assert len(upstream.requests) == 10
