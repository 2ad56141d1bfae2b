"""A process that holds budget reservations in Redis, for tests that kill or stop it.

``python redis_holder.py REDIS_URL LEASE_S`` keeps one Redis store and ledger (its own
owner, renewing a lease of ``LEASE_S``) on a $1.00 total budget of team ``payments``, and
reads commands from stdin, one a line, answering each on stdout:

* ``reserve ID USD`` — ``held``, ``busy`` or ``exhausted``
* ``settle ID USD`` — ``settled`` (the request's spend, charged)
* ``owner`` — this process's owner id
* ``close`` — closes the store (gives the lease up), answers ``closed`` and exits
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time

from hookgate.budgets.ledger import UsageRow
from hookgate.budgets.limits import Counter, Limit
from hookgate.store.redis import RedisStore
from hookgate.store.redis_budgets import RedisLedger

COUNTERS = [Counter(Limit("team", "total", 1.0, None), "payments", 0.0)]


async def main(url: str, lease_s: float) -> None:
    store = RedisStore(url, lease_s=lease_s)
    ledger = RedisLedger(store)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        words = line.split()
        if not words or words[0] == "close":
            await store.close()
            print("closed", flush=True)
            return
        if words[0] == "owner":
            answer = store.owner.id
        elif words[0] == "reserve":
            refusal = await ledger.reserve(words[1], COUNTERS, float(words[2]), 10)
            answer = "held" if refusal is None else "exhausted" if refusal.exhausted else "busy"
        else:
            row = UsageRow(time.time(), words[1], "m", 10, 0, float(words[2]), team="payments")
            await ledger.settle(words[1], COUNTERS, row)
            answer = "settled"
        print(answer, flush=True)


if __name__ == "__main__":
    logging.basicConfig(level="INFO", format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
