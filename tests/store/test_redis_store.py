"""The Redis store: keys and budgets shared by two proxies, atomic across them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from hookgate.config.loader import load_text
from hookgate.server.app import create_app
from tests.conftest import config_text
from tests.fakes import FakeUpstream, LoopThread, RunningApp
from tests.services import RedisServer
from tests.spend import PER_REQUEST_USD, PRICE

ADMIN = "admin-secret-for-tests"


@pytest.fixture
def two_proxies(
    loop_thread: LoopThread, upstream: FakeUpstream, redis_server: RedisServer
) -> Iterator[list[str]]:
    text = config_text(
        upstream.base_url,
        f"store: '{redis_server.url}'\n{PRICE}keys: {{required: true, admin_key: {ADMIN}}}\n"
        "policies:\n  - budget: {limits: [{scope: team, usd: 1.0}]}\n",
        models='  "*": [{provider: up, model: fixed-model}]',
    )
    servers = [loop_thread.run(RunningApp(create_app(load_text(text))).start()) for _ in range(2)]
    yield [server.url for server in servers]
    for server in servers:
        loop_thread.run(server.stop())


def test_keys_are_shared_and_revocation_is_immediate_everywhere(two_proxies: list[str]) -> None:
    first, second = two_proxies
    admin = {"authorization": f"Bearer {ADMIN}"}
    created = httpx.post(f"{first}/admin/keys", json={"team": "search"}, headers=admin).json()
    question = [{"role": "user", "content": "How are you today?"}]
    for url in two_proxies:
        with openai.OpenAI(base_url=f"{url}/v1", api_key=created["key"], max_retries=0) as client:
            assert client.chat.completions.create(
                model="m", messages=question, max_tokens=5
            ).choices  # type: ignore[arg-type]
    assert httpx.delete(f"{first}/admin/keys/{created['id']}", headers=admin).status_code == 200
    client = openai.OpenAI(base_url=f"{second}/v1", api_key=created["key"], max_retries=0)
    with client, pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="m", messages=question)  # type: ignore[arg-type]
    listed = httpx.get(f"{second}/admin/keys", headers=admin).json()["data"]
    assert [k["id"] for k in listed] == [created["id"]] and listed[0]["revoked_at"] is not None


@pytest.mark.slow
def test_budget_holds_across_two_proxies(two_proxies: list[str], upstream: FakeUpstream) -> None:
    admin = {"authorization": f"Bearer {ADMIN}"}
    key = httpx.post(
        f"{two_proxies[0]}/admin/keys", json={"team": "payments"}, headers=admin
    ).json()["key"]

    async def fire() -> None:
        clients = [
            openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=key, max_retries=3)
            for url in two_proxies
        ]

        async def one(i: int) -> None:
            question = [{"role": "user", "content": f"Please answer question {i} briefly."}]
            try:
                stream = i % 2 == 0
                response = await clients[i % 2].chat.completions.create(
                    model="m",
                    messages=question,
                    max_tokens=5,
                    stream=stream,  # type: ignore[arg-type]
                )
                if stream:
                    async for _ in response:  # type: ignore[union-attr]
                        pass
            except openai.RateLimitError:
                pass

        await asyncio.gather(*[one(i) for i in range(200)])
        for client in clients:
            await client.close()

    asyncio.run(fire())
    served = len(upstream.requests)
    spent = served * PER_REQUEST_USD
    assert spent <= 1.0 + 1e-9, f"overspent: {served} requests served"
    assert spent >= 0.8, f"only {spent:.3f} of 1.0 usable"
    report = httpx.get(f"{two_proxies[1]}/readyz").json()
    assert report["status"] == "ready"


async def test_reserve_and_settle_repeated_by_a_retry_count_once(
    redis_server: RedisServer,
) -> None:
    from hookgate.budgets.ledger import UsageRow
    from hookgate.budgets.limits import Counter, Limit
    from hookgate.store.redis import RedisStore
    from hookgate.store.redis_budgets import RedisLedger

    store = RedisStore(redis_server.url)
    ledger = RedisLedger(store)
    counter = [Counter(Limit("team", "total", 1.0, None), "payments", 0.0)]
    for _ in range(2):  # the reply to the first was lost with its connection
        assert await ledger.reserve("r1", counter, 0.6, 10) is None
    assert await ledger.remaining(counter) == (pytest.approx(0.4), None)
    row = UsageRow(time.time(), "r1", "m", 3, 4, 0.25, team="payments")
    for _ in range(2):
        await ledger.settle("r1", counter, row)
    assert await ledger.remaining(counter) == (pytest.approx(0.75), None)
    assert await store.usage_total("team", "payments", 0) == (pytest.approx(0.25), 7)
    await store.close()


async def test_the_deployment_secret_is_created_once_and_shared(
    redis_server: RedisServer,
) -> None:
    from hookgate.store.redis import RedisStore

    first, second = RedisStore(redis_server.url), RedisStore(redis_server.url)
    secret = await first.secret("pii")
    assert len(secret) == 32
    assert await second.secret("pii") == secret  # another replica reads the same one
    assert await first.secret("other") != secret
    await first.close()
    await second.close()


@pytest.mark.parametrize("kind", ["redis", "sqlite"])
async def test_a_paused_reply_state_is_shared_and_expires(
    redis_server: RedisServer, tmp_path: Path, kind: str
) -> None:
    """What a paused reply keeps in the store reads back in another process, is replaced by a
    later save, and is gone after its time to live."""
    from hookgate.store.redis import RedisStore
    from hookgate.store.sqlite import SQLiteStore

    def open_store() -> Any:
        if kind == "redis":
            return RedisStore(redis_server.url)
        return SQLiteStore(f"sqlite:///{tmp_path / 'state.db'}")

    first, second = open_store(), open_store()
    for store in (first, second):
        await store.open()
    await first.save_state("reply:r1", b'{"turns": 1}', 60)
    assert await second.load_state("reply:r1") == b'{"turns": 1}'
    await second.save_state("reply:r1", b'{"turns": 2}', 0.2)
    assert await first.load_state("reply:r1") == b'{"turns": 2}'
    assert await first.load_state("reply:r2") is None
    await asyncio.sleep(0.3)
    assert await first.load_state("reply:r1") is None
    await first.close()
    await second.close()


def test_a_redis_restart_loses_no_request_and_no_spend(
    loop_thread: LoopThread, upstream: FakeUpstream, redis_server: RedisServer
) -> None:
    text = config_text(
        upstream.base_url,
        f"store: '{redis_server.url}'\n{PRICE}keys: {{required: true, admin_key: {ADMIN}}}\n"
        "policies:\n  - budget: {limits: [{scope: team, usd: 1.0}]}\n",
        models='  "*": [{provider: up, model: fixed-model}]',
    )
    server = loop_thread.run(RunningApp(create_app(load_text(text))).start())
    admin = {"authorization": f"Bearer {ADMIN}"}
    try:
        key = httpx.post(f"{server.url}/admin/keys", json={"team": "t"}, headers=admin).json()
        question = [{"role": "user", "content": "How are you today?"}]
        with openai.OpenAI(base_url=f"{server.url}/v1", api_key=key["key"], max_retries=0) as c:
            for restart in (False, True, True):
                if restart:  # every pooled connection to the old process is now dead
                    redis_server.restart()
                for stream in (False, True):
                    response = c.chat.completions.create(
                        model="m", messages=question, max_tokens=5, stream=stream
                    )  # type: ignore[call-overload]
                    if stream:
                        assert [chunk for chunk in response]
                    else:
                        assert response.choices
        spend = httpx.get(f"{server.url}/admin/spend", headers=admin).json()["data"]
        assert spend[0]["requests"] == 6
        assert spend[0]["usd"] == pytest.approx(6 * PER_REQUEST_USD)
        assert httpx.get(f"{server.url}/readyz").json()["status"] == "ready"
    finally:
        loop_thread.run(server.stop())
