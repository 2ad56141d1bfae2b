"""Reservations in Redis belong to a process (its owner lease): a killed one's are released
once its lease is gone and they stand in the way, a live one's never, however old; a
process whose lease lapsed while it was stopped still settles exactly. On a real
``redis-server``, the holder a real process (``redis_holder.py``) killed with
``SIGKILL`` or stopped with ``SIGSTOP``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from hookgate.budgets.ledger import UsageRow
from hookgate.budgets.limits import Counter, Limit
from hookgate.store.redis import RedisStore
from hookgate.store.redis_budgets import RedisLedger
from hookgate.store.redis_owners import Owner
from tests.services import RedisServer

COUNTERS = [Counter(Limit("team", "total", 1.0, None), "payments", 0.0)]
"""The budget ``redis_holder.py`` reserves on: $1.00, team payments."""
COUNTER_KEY = f"hg:ctr:{COUNTERS[0].key}"
HOLDER_LEASE_S = 1.0
"""Leases in these tests: renewed every third of it, which a loaded machine still does."""


@dataclass
class Holder:
    """A ``redis_holder.py`` process."""

    process: subprocess.Popen[str]
    owner: str = ""

    def ask(self, command: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()


@contextmanager
def holder(url: str, lease_s: float = HOLDER_LEASE_S) -> Iterator[Holder]:
    script = Path(__file__).with_name("redis_holder.py")
    process = subprocess.Popen(
        [sys.executable, str(script), url, str(lease_s)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    running = Holder(process)
    try:
        running.owner = running.ask("owner")
        yield running
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
            process.kill()
        process.communicate(timeout=10)


def raw(server: RedisServer) -> redis.Redis:
    return redis.Redis.from_url(server.url, decode_responses=True)


@pytest.fixture
async def stores(redis_server: RedisServer) -> AsyncIterator[Callable[..., RedisStore]]:
    """Redis stores on ``redis_server`` (keyword arguments: :class:`RedisStore`'s), closed
    after the test (closing one twice is harmless)."""
    made: list[RedisStore] = []

    def make(**kwargs: float) -> RedisStore:
        made.append(RedisStore(redis_server.url, **kwargs))
        return made[-1]

    yield make
    for store in made:
        await store.close()


async def reserve(ledger: RedisLedger, rid: str, usd: float) -> str:
    refusal = await ledger.reserve(rid, COUNTERS, usd, 10)
    return "held" if refusal is None else "exhausted" if refusal.exhausted else "busy"


async def test_a_killed_owners_reservations_are_released_once_its_lease_is_gone(
    redis_server: RedisServer, stores: Callable[..., RedisStore], caplog: pytest.LogCaptureFixture
) -> None:
    store = stores()
    ledger = RedisLedger(store)
    with holder(redis_server.url) as dead, raw(redis_server) as client:
        assert dead.ask("reserve held-by-the-dead 0.9") == "held"
        assert client.sismember("hg:owners", dead.owner)
        assert client.smembers(f"hg:owned:{dead.owner}") == {"held-by-the-dead"}
        await asyncio.sleep(3 * HOLDER_LEASE_S)  # alive: its lease is renewed
        assert await reserve(ledger, "r1", 0.5) == "busy"
        os.kill(dead.process.pid, signal.SIGKILL)
        killed = time.monotonic()
        while await reserve(ledger, "r2", 0.5) == "busy":
            assert time.monotonic() - killed < HOLDER_LEASE_S + 2.0, "still held by the dead"
            await asyncio.sleep(0.05)
        assert await ledger.remaining(COUNTERS) == (pytest.approx(0.5), None)
        assert not client.exists("hg:res:held-by-the-dead")
        assert not client.sismember("hg:owners", dead.owner)
        assert not client.exists(f"hg:owned:{dead.owner}")
        assert client.smembers(f"hg:owned:{store.owner.id}") == {"r2"}
    assert "released the reservations of 1 stopped processes" in caplog.text


async def test_a_live_owners_reservation_is_never_released_however_old(
    redis_server: RedisServer, stores: Callable[..., RedisStore]
) -> None:
    """Held across many leases, and across an event loop blocked for several (the lease is
    renewed on a thread of its own); then settled, and the store closed: its lease is
    given up at once."""
    live_store = stores(lease_s=HOLDER_LEASE_S)
    live = RedisLedger(live_store)
    other_store = stores()
    other = RedisLedger(other_store)
    assert await reserve(live, "old", 0.9) == "held"
    for _ in range(8):
        await asyncio.sleep(HOLDER_LEASE_S / 2)
        assert await reserve(other, "r", 0.5) == "busy"
    time.sleep(3 * HOLDER_LEASE_S)  # noqa: ASYNC251 (on purpose: the event loop stalls)
    assert await reserve(other, "r", 0.5) == "busy"
    with raw(redis_server) as client:
        assert client.hget("hg:res:old", "owner") == live_store.owner.id
        row = UsageRow(time.time(), "old", "m", 10, 0, 0.2, team="payments")
        await live.settle("old", COUNTERS, row)
        assert await reserve(other, "r", 0.5) == "held"
        assert await other.remaining(COUNTERS) == (pytest.approx(0.3), None)
        await live_store.close()  # a clean stop gives the lease up
        assert not client.exists(f"hg:owner:{live_store.owner.id}")
        assert not client.sismember("hg:owners", live_store.owner.id)
        assert client.exists(f"hg:owner:{other_store.owner.id}")
        await other_store.close()
        assert not client.exists(f"hg:owner:{other_store.owner.id}")
        assert client.sismember("hg:owners", other_store.owner.id)  # it holds "r": sweepable
        assert client.smembers(f"hg:owned:{other_store.owner.id}") == {"r"}


async def test_a_stopped_owner_whose_reservation_was_released_still_settles_exactly(
    redis_server: RedisServer, stores: Callable[..., RedisStore], caplog: pytest.LogCaptureFixture
) -> None:
    """A process stopped (``SIGSTOP``) past its lease loses its reservation to another's
    reserve; resumed, it settles the call it had in flight: the spend is charged once, the
    released reservation is not released again, and the usage rows equal the counter."""
    store = stores()
    ledger = RedisLedger(store)
    with holder(redis_server.url) as stopped, raw(redis_server) as client:
        assert stopped.ask("reserve in-flight 0.6") == "held"
        os.kill(stopped.process.pid, signal.SIGSTOP)
        await asyncio.sleep(HOLDER_LEASE_S + 0.3)
        assert await reserve(ledger, "mine", 0.5) == "held"  # its 0.6 was released for it
        assert "released the reservations of 1 stopped processes" in caplog.text
        os.kill(stopped.process.pid, signal.SIGCONT)
        assert stopped.ask("settle in-flight 0.3") == "settled"
        counter = client.hgetall(COUNTER_KEY)
        assert float(counter["used_usd"]) == pytest.approx(0.3)
        assert float(counter["res_usd"]) == pytest.approx(0.5)  # mine, and only mine
        rows = [json.loads(fields["row"]) for _, fields in client.xrange("hg:usage")]
        assert [(r["request_id"], r["cost_usd"]) for r in rows] == [("in-flight", 0.3)]
        assert await ledger.remaining(COUNTERS) == (pytest.approx(0.2), None)
        await asyncio.sleep(HOLDER_LEASE_S)  # its lease is renewed meanwhile
        assert stopped.ask("close") == "closed"
        assert stopped.process.stderr is not None
        log = stopped.process.stderr.read()
    assert "reservation of request in-flight was no longer held" in log
    assert "lease in Redis lapsed" in log


async def test_an_expired_reservation_without_an_owner_is_released_in_the_way(
    redis_server: RedisServer, stores: Callable[..., RedisStore], caplog: pytest.LogCaptureFixture
) -> None:
    """Reservations an older version wrote (no owner, an expiry in ``hg:resq``): released
    once expired and in the way, as that version did; not before."""
    store = stores()
    ledger = RedisLedger(store)
    with raw(redis_server) as client:
        for rid, usd, expiry in (("expired", 0.5, time.time() - 1), ("current", 0.3, 1e12)):
            client.hset(f"hg:res:{rid}", mapping={"counters": json.dumps([COUNTER_KEY]),
                                                  "usd": usd, "tokens": 10})  # fmt: skip
            client.hincrbyfloat(COUNTER_KEY, "res_usd", usd)
            client.hincrbyfloat(COUNTER_KEY, "res_tokens", 10)
            client.zadd("hg:resq", {rid: expiry})
        assert await reserve(ledger, "r1", 0.1) == "held"  # fits: nothing released
        assert client.zcard("hg:resq") == 2
        assert await reserve(ledger, "r2", 0.5) == "held"  # the expired one was in the way
        assert "released 1 expired reservations without an owner" in caplog.text
        assert client.zrange("hg:resq", 0, -1) == ["current"]
        assert await reserve(ledger, "r3", 0.2) == "busy"  # the current one stays
    assert await ledger.remaining(COUNTERS) == (pytest.approx(0.1), None)


def test_a_forked_process_is_an_owner_of_its_own() -> None:
    owner = Owner("redis://127.0.0.1:1/0")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, owner.id.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    assert child and child != owner.id
    assert child.partition("-")[0] == str(pid)


@pytest.fixture(autouse=True)
def _hookgate_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="hookgate")


async def test_a_reserve_cancelled_in_flight_holds_nothing(
    redis_server: RedisServer, stores: Callable[..., RedisStore]
) -> None:
    """A caller cancelled while its reserve waits for Redis (busy with another script)
    leaves no reservation behind, whichever of the reserve and its release Redis runs
    first: nothing else would release a live process's reservation."""
    store = stores()
    ledger = RedisLedger(store)
    assert await reserve(ledger, "warm", 0.1) == "held"  # scripts loaded, lease taken
    await ledger.release("warm")
    busy = "local s = redis.call('TIME') repeat local n = redis.call('TIME') until n[1] - s[1] >= 1"
    with raw(redis_server) as client:
        for attempt in range(5):  # a loaded machine may start the busy script late: then again
            blocking = asyncio.create_task(asyncio.to_thread(client.eval, busy, 0))
            await asyncio.sleep(0.2)  # Redis runs the busy script
            rid = f"cut-{attempt}"
            cut = asyncio.create_task(ledger.reserve(rid, COUNTERS, 0.5, 10))
            await asyncio.sleep(0.2)  # sent, waiting
            if not cut.done():
                break
            await blocking  # Redis answered before the busy script ran: not this case
            await ledger.release(rid)
        else:
            pytest.fail("the reserve never waited behind the busy script")
        cut.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cut
        await blocking
        await asyncio.sleep(0.3)
        assert not client.exists(f"hg:res:{rid}")
        assert float(client.hget(COUNTER_KEY, "res_usd") or 0) == pytest.approx(0)
        # had Redis run the release first: the reserve, arriving after it, holds nothing
        await ledger.reserve(rid, COUNTERS, 0.5, 10)
        assert not client.exists(f"hg:res:{rid}")
        assert float(client.hget(COUNTER_KEY, "res_usd") or 0) == pytest.approx(0)
