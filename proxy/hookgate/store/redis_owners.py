"""Which processes hold budget reservations in a Redis store: a lease each one renews.

Each process that reserves budget in Redis is an *owner*: an id drawn at random when its
store is made (a forked child draws its own, as :class:`hookgate.ids.UniqueIds` does), and
the key ``hg:owner:<id>``, which lives :data:`LEASE_S` unless renewed. The reserve script
sets it if it is missing, in the script that writes the reservation (so no reservation
exists without its owner's key), and a thread renews it every third of the lease from the
process's first reservation on. Each reservation names its owner (the ``owner`` field of
its hash, and the set ``hg:owned:<id>``); the owners that may hold some are the set
``hg:owners``. A process that stops, ``kill -9`` included, stops renewing: at most
:data:`LEASE_S` later its key is gone, and the reserve script
(:mod:`hookgate.store.redis_budgets`) releases its reservations the first time they stand
in another's way. A live owner's reservations are never released, however old.

The renewal runs on a thread, not on the event loop: a loop blocked longer than the lease
(a long CPU step, a synchronous call) keeps its lease. It lapses only when the whole
process is stopped (``SIGSTOP``, a suspended VM) or cannot reach Redis while others can
(a partition) for longer than the lease. Other replicas may then release its reservations
while its calls are still in flight. When it is back, the first of its renewals or
reservations to find its key gone logs that, and those calls still settle exactly (the
settle script charges the spend whether the reservation is still there or not, and
releases nothing twice: the spend report equals the ledger), but they may take a limit
past its cap by what they spend. That is the price of freeing a killed process's share of
a budget in seconds: unlike the kernel's ``flock`` that the SQLite ledger asks
(:mod:`hookgate.store.sqlite_owners`), Redis cannot tell a dead process from a silent one.

A process that closes its store (after its calls settled) deletes its key as the
renewal thread's last act, so anything it still holds is released at once when in the way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import threading
import time

import redis
from redis.exceptions import RedisError

from hookgate.ids import renew_after_fork

log = logging.getLogger("hookgate")

LEASE_S = 5.0
"""How long an owner's key lives unless renewed; it is renewed every third of that. A
lapse lets other replicas release reservations of calls still in flight (a limit may then
be overspent by what they spend), so the lease outlasts two renewals missed in a row (a
Redis latency spike, a reconnection, a thread starved of the interpreter for a few
seconds); a killed process's reservations keep their share of a budget busy this long at
most, so it stays a few seconds: clients told ``Retry-After: 1`` are served again soon."""

BEAT = """
if redis.call('SET', KEYS[1], 1, 'PX', ARGV[1], 'XX') then return 1 end
redis.call('SET', KEYS[1], 1, 'PX', ARGV[1])
redis.call('SADD', 'hg:owners', ARGV[2])
return 0
"""
"""Renew the lease (1), or take it again when it had lapsed or was never taken (0)."""

GOODBYE = """
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', 'hg:owned:' .. ARGV[1]) == 0 then
  redis.call('SREM', 'hg:owners', ARGV[1])
end
return 1
"""
"""Give the lease up: what the owner still holds is anyone's to release."""


class Owner:
    """This process as an owner of reservations in the Redis store at ``url`` (see the
    module docstring)."""

    def __init__(self, url: str, lease_s: float = LEASE_S) -> None:
        self._url = url
        self.lease_s = lease_s
        self.after_fork()
        renew_after_fork(self)

    def after_fork(self) -> None:
        """A new id and no renewal thread yet (also how an owner starts)."""
        self.id = f"{os.getpid()}-{secrets.token_hex(8)}"
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._renewed: float | None = None
        """When this process last set its key's expiry (monotonic); None: never."""

    @property
    def lease_ms(self) -> int:
        return max(1, int(self.lease_s * 1000))

    def start(self) -> None:
        """Renew the lease from now on, until :meth:`close` (a no-op once started)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._renew, args=(self.id, self._stop), name="hookgate-owner", daemon=True
            )
            self._thread.start()

    def renewed(self, taken: bool) -> None:
        """A script of this process set the key's expiry: ``taken`` when the key was
        missing. Missing after it had been set means the lease lapsed: that is logged."""
        now = time.monotonic()
        if taken and self._renewed is not None:
            log.error(
                "budget: this process's lease in Redis lapsed (last renewed %.1f s ago): other "
                "replicas may have released its reservations; its calls in flight still "
                "settle exactly, but may take a limit past its cap by what they spend",
                now - self._renewed,
            )
        self._renewed = now

    async def close(self) -> None:
        """Stop renewing and give the lease up (nothing when it was never taken)."""
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        await asyncio.to_thread(thread.join)
        self._thread, self._stop = None, threading.Event()

    def _renew(self, me: str, stop: threading.Event) -> None:
        every = self.lease_s / 3
        client = redis.Redis.from_url(self._url, socket_timeout=every, socket_connect_timeout=every)
        beat, goodbye = client.register_script(BEAT), client.register_script(GOODBYE)
        key = f"hg:owner:{me}"
        failing = False
        try:
            while True:
                try:
                    kept = beat(keys=[key], args=[self.lease_ms, me])
                except (RedisError, OSError) as exc:
                    if not failing:
                        log.warning(
                            "budget: this process cannot renew its lease in Redis (past %g s "
                            "other replicas may release its reservations): %s", self.lease_s, exc,
                        )  # fmt: skip
                    failing = True
                else:
                    self.renewed(taken=not kept)
                    failing = False
                if stop.wait(every):
                    break
            if not failing:  # else Redis is out of reach: the key expires on its own
                with contextlib.suppress(RedisError, OSError):
                    goodbye(keys=[key], args=[me])
        finally:
            client.close()
