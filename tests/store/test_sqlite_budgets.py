"""Budgets and rates on one SQLite file shared by processes (hookgate.store.sqlite_budgets).

Two :class:`SQLiteStore` objects on one file are two owners, as two processes are (their
``flock`` locks are their own); a real process killed with ``kill -9`` shows a dead
owner's reservations are released.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hookgate.budgets.ledger import Ledger, UsageRow
from hookgate.budgets.limits import Counter, Limit, counters
from hookgate.budgets.rates import RateCheck
from hookgate.errors import StoreInUse
from hookgate.store.open import open_budgets
from hookgate.store.sqlite import SQLiteStore
from tests.spend import settled


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[list[SQLiteStore]]:
    url = f"sqlite:///{tmp_path / 'shared.db'}?shared=true"
    opened = [SQLiteStore(url), SQLiteStore(url)]
    yield opened
    for store in opened:
        await store.close()


def team_day(usd: float | None = None, tokens: int | None = None) -> list[Counter]:
    return counters((Limit("team", "day", usd, tokens),), {"team": "payments"}, time.time())


def row(request_id: str, usd: float, tokens: int = 10) -> UsageRow:
    return UsageRow(time.time(), request_id, "m", tokens, 0, usd, team="payments")


async def test_concurrent_reservations_on_two_owners_never_overspend(
    stores: list[SQLiteStore], tmp_path: Path
) -> None:
    ledgers = [open_budgets(store)[0] for store in stores]
    charged = team_day(usd=1.0)

    asked: list[int] = []
    all_asked = asyncio.Event()

    async def request(ledger: Ledger, n: int) -> bool:
        await ledger.load(charged)
        refused = await ledger.reserve(f"r{n}", charged, 0.1, 10)
        asked.append(n)
        if len(asked) == 60:
            all_asked.set()
        if refused is not None:
            return False
        await all_asked.wait()  # no settlement frees room before every request has asked
        await asyncio.sleep(0.001 * (n % 5))
        await ledger.settle(f"r{n}", charged, row(f"r{n}", 0.09))
        return True

    served = await asyncio.gather(*(request(ledgers[n % 2], n) for n in range(60)))
    usd, count = settled(tmp_path / "shared.db")
    assert count == sum(served)
    assert usd <= 1.0 + 1e-9
    assert sum(served) == 10  # all asked at once: ten holds of 0.1 fill the 1.0
    for ledger in ledgers:  # both owners see the one total
        assert await ledger.reserve("probe", charged, 0.0, 0) is None
        assert (await ledger.remaining(charged))[0] == pytest.approx(1.0 - usd)
        await ledger.release("probe")


async def test_counters_start_from_the_usage_rows_and_follow_them(
    stores: list[SQLiteStore], tmp_path: Path
) -> None:
    first, second = (open_budgets(store)[0] for store in stores)
    await stores[0].record_usage(row("before", 0.25))  # spend settled before any counter
    charged = team_day(usd=1.0)
    assert await first.reserve("a", charged, 0.5, 10) is None
    await first.settle("a", charged, row("a", 0.5))
    refusal = await second.reserve("b", charged, 0.3, 10)
    assert refusal is not None and refusal.exhausted  # 0.25 + 0.5 settled, 0.3 does not fit
    assert await second.reserve("c", charged, 0.25, 10) is None
    assert await second.remaining(charged) == (pytest.approx(0.0), None)
    assert settled(tmp_path / "shared.db")[0] == pytest.approx(0.75)


async def test_a_reservation_in_flight_makes_others_busy_not_exhausted(
    stores: list[SQLiteStore],
) -> None:
    first, second = (open_budgets(store)[0] for store in stores)
    charged = team_day(tokens=100)
    assert await first.reserve("a", charged, 0.0, 80) is None
    refusal = await second.reserve("b", charged, 0.0, 30)
    assert refusal is not None and not refusal.exhausted and refusal.unit == "tokens"
    await first.release("a")
    assert await second.reserve("b", charged, 0.0, 30) is None


HOLDER = """
import asyncio, sys, time
from hookgate.budgets.limits import Limit, counters
from hookgate.store.open import open_budgets, open_store

async def main():
    store = open_store(sys.argv[1])
    ledger = open_budgets(store)[0]
    charged = counters((Limit("team", "day", 1.0, None),), {"team": "payments"}, time.time())
    assert await ledger.reserve("held", charged, 0.9, 10) is None
    print("held", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


async def test_the_reservations_of_a_killed_process_are_released_when_in_the_way(
    stores: list[SQLiteStore],
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, stores[0].url, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    assert await asyncio.wait_for(process.stdout.readline(), 30) == b"held\n"
    ledger = open_budgets(stores[0])[0]
    charged = team_day(usd=1.0)
    busy = await ledger.reserve("a", charged, 0.5, 10)
    assert busy is not None and not busy.exhausted  # a live process's hold is kept
    process.send_signal(signal.SIGKILL)
    await asyncio.wait_for(process.wait(), 10)
    assert await ledger.reserve("a", charged, 0.5, 10) is None  # the dead one's is not
    assert [p.name for p in stores[0].owners.directory.glob("*.owner")] == [
        f"{stores[0].owners.me}.owner"  # and its owner file went with it
    ]


async def test_a_cancelled_reserve_holds_nothing(stores: list[SQLiteStore]) -> None:
    first, second = (open_budgets(store)[0] for store in stores)
    charged = team_day(usd=1.0)
    task = asyncio.ensure_future(first.reserve("a", charged, 0.9, 10))
    await asyncio.sleep(0)  # queued, not yet committed
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(50):
        if await second.reserve("b", charged, 0.9, 10) is None:
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the cancelled reservation was never released")


async def test_rates_are_counted_once_for_two_owners(stores: list[SQLiteStore]) -> None:
    first, second = (open_budgets(store)[1] for store in stores)
    now = 1_800_000_000.0
    check = [RateCheck("key=k|rpm", 10, 1)]
    results = await asyncio.gather(
        *((first if n % 2 else second).hit(check, now) for n in range(25))
    )
    assert sum(r.allowed for r in results) == 10
    refused = next(r for r in results if not r.allowed)
    assert refused.reset_s > 0 and refused.remaining == 0


async def test_a_process_keeping_budgets_alone_is_not_mixed_with_sharers(
    tmp_path: Path,
) -> None:
    alone = SQLiteStore(f"sqlite:///{tmp_path / 'one.db'}")
    beside = SQLiteStore(f"sqlite:///{tmp_path / 'one.db'}")
    sharer = SQLiteStore(f"sqlite:///{tmp_path / 'one.db'}?shared=true")
    charged = team_day(usd=1.0)
    try:
        await open_budgets(alone)[0].load(charged)
        with pytest.raises(StoreInUse, match="kept in the memory of process"):
            await open_budgets(sharer)[0].load(charged)
        with pytest.raises(StoreInUse, match=r"serves one `hookgate serve`.*shared=true"):
            await open_budgets(beside)[1].hit([RateCheck("k", 5, 1)])
        await alone.close()  # its claim goes with it
        await open_budgets(sharer)[0].load(charged)
        with pytest.raises(StoreInUse, match=r"in use by processes \d+"):
            await open_budgets(beside)[0].load(charged)
    finally:
        for store in (alone, beside, sharer):
            await store.close()


async def test_a_store_used_without_budgets_claims_nothing(tmp_path: Path) -> None:
    """The CLI (keys, spend) and the SDK open the store beside a running proxy."""
    url = f"sqlite:///{tmp_path / 'one.db'}"
    serving, cli = SQLiteStore(url), SQLiteStore(url)
    try:
        await open_budgets(serving)[0].load(team_day(usd=1.0))
        open_budgets(cli)
        await cli.record_usage(row("r", 0.1))
        assert (await cli.spend("team", 0))[0].usd == pytest.approx(0.1)
    finally:
        await serving.close()
        await cli.close()


async def test_the_serve_command_shares_a_plain_url_by_asking(tmp_path: Path) -> None:
    """``open_budgets(store, shared=True)``: what ``--workers N`` asks for each worker."""
    url = f"sqlite:///{tmp_path / 'one.db'}"
    first, second = SQLiteStore(url), SQLiteStore(url)
    charged = team_day(usd=1.0)
    try:
        a, b = open_budgets(first, shared=True)[0], open_budgets(second, shared=True)[0]
        assert await a.reserve("a", charged, 0.6, 10) is None
        busy = await b.reserve("b", charged, 0.6, 10)
        assert busy is not None and not busy.exhausted
    finally:
        await first.close()
        await second.close()
