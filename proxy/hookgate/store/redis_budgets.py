"""Budget counters and per-minute rates in Redis, atomic across replicas.

Counters are Redis hashes changed only by Lua scripts, so reserve (check every limit, then
hold on all of them), settle (release, add the spend, append the usage record to
``hg:usage``) and release are each atomic. Reserve and settle are idempotent (a
reservation is taken once; a settlement leaves a marker for a minute), so the store's
retry of a command lost with its connection never charges twice.

**Crashed replicas.** Each reservation (``hg:res:<id>``) names the process that holds it,
its *owner*, whose lease key lives while the process renews it
(:mod:`hookgate.store.redis_owners`). A reserve that only reservations refuse (busy, not
exhausted) releases those of owners whose lease is gone, in the same script, then checks
again: a killed replica or worker keeps its share of a budget busy for at most the lease
(seconds), and a live one's reservations are never released, however long its call. The
work is bounded: the script looks at :data:`OWNERS_CHECKED` owners and releases at most
:data:`RELEASED_PER_RESERVE` reservations; a reserve still refused leaves the rest to the
next. A settle of a reservation released that way (its owner's lease lapsed while the
call was in flight) charges the spend and releases nothing: the spend report still equals
the ledger. Since nothing else releases a live process's reservations, a reserve whose
caller is cancelled while it waits for Redis is released, with a marker that makes the
reserve hold nothing should Redis run it after the release.

Reservations written before owners existed carry none, only an expiry (their id is in the
sorted set ``hg:resq``, scored by it, 15 minutes after they were taken); the same sweep
releases those past it. This version writes none of them.
"""

from __future__ import annotations

import asyncio
import logging
import time

import orjson

from hookgate.budgets.ledger import Refusal, UsageRow, least_left
from hookgate.budgets.limits import Counter
from hookgate.budgets.rates import RateCheck, RateResult, wait_for_room
from hookgate.errors import StoreUnavailable
from hookgate.store.redis import RedisStore, row_dict

log = logging.getLogger("hookgate")

OWNERS_CHECKED = 64
"""Owners a refused reserve asks about (chosen at random when there are more)."""
RELEASED_PER_RESERVE = 256
"""Reservations of stopped owners one reserve releases at most: a few hundred Redis
commands, a millisecond or so during which Redis serves no one else."""


_RELEASE = """
local function release(rid)
  local res = redis.call('HMGET', 'hg:res:' .. rid, 'counters', 'usd', 'tokens', 'owner')
  if res[1] then
    for _, key in ipairs(cjson.decode(res[1])) do
      redis.call('HINCRBYFLOAT', key, 'res_usd', -tonumber(res[2]))
      redis.call('HINCRBYFLOAT', key, 'res_tokens', -tonumber(res[3]))
    end
    redis.call('DEL', 'hg:res:' .. rid)
    if res[4] then redis.call('SREM', 'hg:owned:' .. res[4], rid) end
    return true
  end
  return false
end
"""

RESERVE = (
    _RELEASE
    + """
local now, rid, usd, tokens = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local me, lease = ARGV[5], ARGV[6]
local owners_checked, released_max = tonumber(ARGV[7]), tonumber(ARGV[8])
if redis.call('EXISTS', 'hg:res:' .. rid, 'hg:cancelled:' .. rid) > 0 then return {0, 0, 0, 0} end
local taken = 0
if redis.call('EXISTS', 'hg:owner:' .. me) == 0 then
  redis.call('SET', 'hg:owner:' .. me, 1, 'PX', lease)
  taken = 1
end
redis.call('SADD', 'hg:owners', me)

local function refusal()
  for i, key in ipairs(KEYS) do
    local h = redis.call('HMGET', key, 'used_usd', 'used_tokens', 'res_usd', 'res_tokens')
    local used_usd, used_tokens = tonumber(h[1] or '0'), tonumber(h[2] or '0')
    local res_usd, res_tokens = tonumber(h[3] or '0'), tonumber(h[4] or '0')
    local cap_usd, cap_tokens = ARGV[9 + (i - 1) * 3], ARGV[10 + (i - 1) * 3]
    if cap_usd ~= '' and used_usd + res_usd + usd > tonumber(cap_usd) then
      return {i, 'usd', (used_usd + usd > tonumber(cap_usd)) and 1 or 0}
    end
    if cap_tokens ~= '' and used_tokens + res_tokens + tokens > tonumber(cap_tokens) then
      return {i, 'tokens', (used_tokens + tokens > tonumber(cap_tokens)) and 1 or 0}
    end
  end
  return nil
end

-- release what stopped owners hold: how many owners, and how many ownerless expired holds
local function sweep()
  local owners, budget = 0, released_max
  for _, owner in ipairs(redis.call('SRANDMEMBER', 'hg:owners', owners_checked)) do
    if budget <= 0 then break end
    if owner ~= me and redis.call('EXISTS', 'hg:owner:' .. owner) == 0 then
      local held = redis.call('SPOP', 'hg:owned:' .. owner, budget)
      for _, old in ipairs(held) do release(old) end
      budget = budget - #held
      if #held > 0 then owners = owners + 1 end
      if redis.call('EXISTS', 'hg:owned:' .. owner) == 0 then
        redis.call('SREM', 'hg:owners', owner)
      end
    end
  end
  local expired = {}
  if budget > 0 then
    expired = redis.call('ZRANGEBYSCORE', 'hg:resq', '-inf', now, 'LIMIT', 0, budget)
  end
  for _, old in ipairs(expired) do
    release(old)
    redis.call('ZREM', 'hg:resq', old)
  end
  return owners, #expired
end

local refused, owners, expired = refusal(), 0, 0
if refused and refused[3] == 0 then
  owners, expired = sweep()
  if owners + expired > 0 then refused = refusal() end
end
if refused then return {refused[1], refused[2], refused[3], owners, expired, taken} end
for i, key in ipairs(KEYS) do
  redis.call('HINCRBYFLOAT', key, 'res_usd', usd)
  redis.call('HINCRBYFLOAT', key, 'res_tokens', tokens)
  local ttl = tonumber(ARGV[11 + (i - 1) * 3])
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
end
redis.call('HSET', 'hg:res:' .. rid, 'counters', cjson.encode(KEYS), 'usd', usd, 'tokens', tokens,
           'owner', me)
redis.call('SADD', 'hg:owned:' .. me, rid)
return {0, owners, expired, taken}
"""
)

SETTLE = (
    _RELEASE
    + """
if not redis.call('SET', 'hg:settled:' .. ARGV[1], 1, 'NX', 'PX', 60000) then return 0 end
local held = release(ARGV[1])
local usd, tokens = tonumber(ARGV[2]), tonumber(ARGV[3])
for _, key in ipairs(KEYS) do
  redis.call('HINCRBYFLOAT', key, 'used_usd', usd)
  redis.call('HINCRBYFLOAT', key, 'used_tokens', tokens)
end
redis.call('XADD', 'hg:usage', '*', 'row', ARGV[4])
return held and 1 or 2
"""
)
"""Replace a reservation by its spend: 1, or 2 when the reservation was gone (released
because its owner's lease lapsed), whose spend is charged all the same (the call
happened); 0 for a repeat, which changes nothing."""

RELEASE = (
    _RELEASE
    + """
release(ARGV[1])
if ARGV[2] == '1' then redis.call('SET', 'hg:cancelled:' .. ARGV[1], 1, 'PX', 60000) end
return 1
"""
)
"""Drop a reservation; for a reserve whose caller was cancelled (``1``), also leave a
marker for a minute so that reserve, should Redis run it after this, holds nothing."""


def _counter_key(counter: Counter) -> str:
    return f"hg:ctr:{counter.key}"


def _ttl_ms(counter: Counter) -> int:
    until = counter.until
    if until is None:
        return 0
    return int((until + 86400 - time.time()) * 1000)


class RedisLedger:
    """Budget reservations in Redis, atomic across replicas (see the module docstring)."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store
        self._reserve = store.client.register_script(RESERVE)
        self._settle = store.client.register_script(SETTLE)
        self._release = store.client.register_script(RELEASE)
        self._pending: set[asyncio.Task[None]] = set()

    async def load(self, counters: list[Counter]) -> None:
        return None

    async def reserve(
        self, reservation: str, counters: list[Counter], usd: float, tokens: int
    ) -> Refusal | None:
        """Hold ``usd`` and ``tokens`` on every counter, or none (returns why), in one
        script. A caller cancelled meanwhile releases what it may have held: a live
        process's reservation is never released by another."""
        owner = self._store.owner
        owner.start()
        args: list[str | float | int] = [
            time.time(), reservation, usd, tokens, owner.id, owner.lease_ms, OWNERS_CHECKED,
            RELEASED_PER_RESERVE,
        ]  # fmt: skip
        for counter in counters:
            limit = counter.limit
            args += ["" if limit.usd is None else limit.usd,
                     "" if limit.tokens is None else limit.tokens, _ttl_ms(counter)]  # fmt: skip
        keys = [_counter_key(c) for c in counters]
        try:
            result = await self._store.call(self._reserve(keys=keys, args=args))
        except asyncio.CancelledError:
            task = asyncio.create_task(self._release_quietly(reservation))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
            raise
        owners, expired, taken = (int(n) for n in result[-3:])
        if taken:
            owner.renewed(taken=True)
        if owners:
            log.warning("budget: released the reservations of %d stopped processes", owners)
        if expired:
            log.warning("budget: released %d expired reservations without an owner", expired)
        if int(result[0]) == 0:
            return None
        return Refusal(counters[int(result[0]) - 1], str(result[1]), exhausted=bool(int(result[2])))

    async def release(self, reservation: str) -> None:
        await self._store.call(self._release(keys=[], args=[reservation, 0]))

    async def _release_quietly(self, reservation: str) -> None:
        """Release what a cancelled reserve may hold, now or once Redis runs it."""
        try:
            await self._store.call(self._release(keys=[], args=[reservation, 1]))
        except StoreUnavailable as exc:
            log.error("budget: a reservation was not released: %s", exc.message)

    async def settle(self, reservation: str, counters: list[Counter], row: UsageRow) -> None:
        """Release the reservation and charge the spend, in one script; a reservation that
        another process released (this one's lease lapsed) is charged all the same. When
        it fails nothing changed: the reservation (at least the spend, as it was the worst
        case) stays held until this process ends, so the limit still holds, and the
        store's error is raised."""
        keys = [_counter_key(c) for c in counters]
        tokens = row.input_tokens + row.output_tokens
        args: list[str | float | int] = [
            reservation,
            row.cost_usd,
            tokens,
            orjson.dumps(row_dict(row)).decode(),
        ]
        settled = await self._store.call(self._settle(keys=keys, args=args))
        if int(settled) == 2:
            log.warning(
                "budget: the reservation of request %s was no longer held (another process "
                "released it while this one's lease in Redis had lapsed); its spend is "
                "charged all the same",
                row.request_id,
            )

    async def remaining(self, counters: list[Counter]) -> tuple[float | None, int | None]:
        names = ("used_usd", "used_tokens", "res_usd", "res_tokens")
        totals = []
        for counter in counters:
            fields = await self._store.call(self._store.client.hmget(_counter_key(counter), names))
            used_usd, used_tokens, res_usd, res_tokens = (float(f or 0) for f in fields)
            totals.append((counter, used_usd, used_tokens, res_usd, res_tokens))
        return least_left(totals)


RATE = """
local minute, elapsed, window = tonumber(ARGV[1]), tonumber(ARGV[2]), 60
local tightest_i, tightest_left = 0, -1
for i, key in ipairs(KEYS) do
  local cap, amount = tonumber(ARGV[2 + (i - 1) * 2 + 1]), tonumber(ARGV[2 + (i - 1) * 2 + 2])
  local previous = tonumber(redis.call('GET', key .. ':' .. (minute - 1)) or '0')
  local current = tonumber(redis.call('GET', key .. ':' .. minute) or '0')
  local used = previous * math.max(0, 1 - elapsed / window) + current
  if used + amount > cap then
    return {i, math.floor(math.max(0, cap - used)), tostring(previous), tostring(current)}
  end
  local left = cap - used - amount
  if tightest_left < 0 or left < tightest_left then tightest_i, tightest_left = i, left end
end
for i, key in ipairs(KEYS) do
  local amount = tonumber(ARGV[2 + (i - 1) * 2 + 2])
  redis.call('INCRBYFLOAT', key .. ':' .. minute, amount)
  redis.call('EXPIRE', key .. ':' .. minute, 180)
end
return {0, math.floor(math.max(0, tightest_left)), tostring(tightest_i), '0'}
"""


class RedisRateLimiter:
    """Per-minute rates shared by replicas (one Lua script per request)."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store
        self._script = store.client.register_script(RATE)

    async def hit(self, checks: list[RateCheck], now: float | None = None) -> RateResult:
        now = time.time() if now is None else now
        minute = int(now // 60)
        elapsed = now - minute * 60
        args: list[str | float | int] = [minute, elapsed]
        for check in checks:
            args += [check.cap, check.amount]
        keys = [f"hg:rate:{check.key}" for check in checks]
        result = await self._store.call(self._script(keys=keys, args=args))
        index, left = int(result[0]), int(result[1])
        if index == 0:
            tightest = int(result[2])
            return RateResult(True, checks[tightest - 1] if tightest else None, left, 0.0)
        check = checks[index - 1]
        reset = wait_for_room(float(result[2]), float(result[3]), elapsed, check.cap, check.amount)
        return RateResult(False, check, left, reset)
