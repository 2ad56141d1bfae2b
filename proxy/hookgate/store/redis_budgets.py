"""Budget counters and per-minute rates in Redis, atomic across replicas.

Counters are Redis hashes changed only by Lua scripts, so reserve (check every limit, then
hold on all of them), settle (release, add the spend, append the usage record to
``hg:usage``) and release are each atomic. A reservation carries an expiry: one left by a
crashed replica is released by the next reserve after it expires. Reserve and settle are
idempotent (a reservation is taken once; a settlement leaves a marker for a minute), so
the store's retry of a command lost with its connection never charges twice.
"""

from __future__ import annotations

import time

import orjson

from hookgate.budgets.ledger import Refusal, UsageRow, least_left
from hookgate.budgets.limits import Counter
from hookgate.budgets.rates import RateCheck, RateResult, wait_for_room
from hookgate.store.redis import RedisStore, row_dict

RESERVATION_TTL_S = 900.0
"""A reservation older than this is taken for one of a crashed replica and released."""

WINDOW_S = {"minute": 60, "hour": 3600, "day": 86400, "month": 31 * 86400}

_RELEASE = """
local function release(rid)
  local res = redis.call('HMGET', 'hg:res:' .. rid, 'counters', 'usd', 'tokens')
  if res[1] then
    for _, key in ipairs(cjson.decode(res[1])) do
      redis.call('HINCRBYFLOAT', key, 'res_usd', -tonumber(res[2]))
      redis.call('HINCRBYFLOAT', key, 'res_tokens', -tonumber(res[3]))
    end
  end
  redis.call('DEL', 'hg:res:' .. rid)
  redis.call('ZREM', 'hg:resq', rid)
end
"""

RESERVE = (
    _RELEASE
    + """
local now, rid, usd, tokens = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', 'hg:res:' .. rid) == 1 then return {0} end
for _, old in ipairs(redis.call('ZRANGEBYSCORE', 'hg:resq', '-inf', now, 'LIMIT', 0, 64)) do
  release(old)
end
for i, key in ipairs(KEYS) do
  local h = redis.call('HMGET', key, 'used_usd', 'used_tokens', 'res_usd', 'res_tokens')
  local used_usd, used_tokens = tonumber(h[1] or '0'), tonumber(h[2] or '0')
  local res_usd, res_tokens = tonumber(h[3] or '0'), tonumber(h[4] or '0')
  local cap_usd, cap_tokens = ARGV[5 + (i - 1) * 3], ARGV[6 + (i - 1) * 3]
  if cap_usd ~= '' and used_usd + res_usd + usd > tonumber(cap_usd) then
    return {i, 'usd', (used_usd + usd > tonumber(cap_usd)) and 1 or 0}
  end
  if cap_tokens ~= '' and used_tokens + res_tokens + tokens > tonumber(cap_tokens) then
    return {i, 'tokens', (used_tokens + tokens > tonumber(cap_tokens)) and 1 or 0}
  end
end
for i, key in ipairs(KEYS) do
  redis.call('HINCRBYFLOAT', key, 'res_usd', usd)
  redis.call('HINCRBYFLOAT', key, 'res_tokens', tokens)
  local ttl = tonumber(ARGV[7 + (i - 1) * 3])
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
end
redis.call('HSET', 'hg:res:' .. rid, 'counters', cjson.encode(KEYS), 'usd', usd, 'tokens', tokens)
redis.call('ZADD', 'hg:resq', now + tonumber(ARGV[#ARGV]), rid)
return {0}
"""
)

SETTLE = (
    _RELEASE
    + """
if not redis.call('SET', 'hg:settled:' .. ARGV[1], 1, 'NX', 'PX', 60000) then return 0 end
release(ARGV[1])
local usd, tokens = tonumber(ARGV[2]), tonumber(ARGV[3])
for _, key in ipairs(KEYS) do
  redis.call('HINCRBYFLOAT', key, 'used_usd', usd)
  redis.call('HINCRBYFLOAT', key, 'used_tokens', tokens)
end
redis.call('XADD', 'hg:usage', '*', 'row', ARGV[4])
return 1
"""
)

RELEASE = (
    _RELEASE
    + """
release(ARGV[1])
return 1
"""
)


def _counter_key(counter: Counter) -> str:
    return f"hg:ctr:{counter.key}"


def _ttl_ms(counter: Counter) -> int:
    length = WINDOW_S.get(counter.limit.window)
    if length is None:
        return 0
    return int((counter.since + length + 86400 - time.time()) * 1000)


class RedisLedger:
    """Budget reservations in Redis, atomic across replicas (see the module docstring)."""

    def __init__(self, store: RedisStore, reservation_ttl_s: float = RESERVATION_TTL_S) -> None:
        self._store = store
        self._ttl = reservation_ttl_s
        self._reserve = store.client.register_script(RESERVE)
        self._settle = store.client.register_script(SETTLE)
        self._release = store.client.register_script(RELEASE)

    async def load(self, counters: list[Counter]) -> None:
        return None

    async def reserve(
        self, reservation: str, counters: list[Counter], usd: float, tokens: int
    ) -> Refusal | None:
        args: list[str | float | int] = [time.time(), reservation, usd, tokens]
        for counter in counters:
            limit = counter.limit
            args += ["" if limit.usd is None else limit.usd,
                     "" if limit.tokens is None else limit.tokens, _ttl_ms(counter)]  # fmt: skip
        args.append(self._ttl)
        keys = [_counter_key(c) for c in counters]
        result = await self._store.call(self._reserve(keys=keys, args=args))
        if int(result[0]) == 0:
            return None
        return Refusal(counters[int(result[0]) - 1], str(result[1]), exhausted=bool(int(result[2])))

    async def release(self, reservation: str) -> None:
        await self._store.call(self._release(keys=[], args=[reservation]))

    async def settle(self, reservation: str, counters: list[Counter], row: UsageRow) -> None:
        keys = [_counter_key(c) for c in counters]
        tokens = row.input_tokens + row.output_tokens
        args: list[str | float | int] = [
            reservation,
            row.cost_usd,
            tokens,
            orjson.dumps(row_dict(row)).decode(),
        ]
        await self._store.call(self._settle(keys=keys, args=args))

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
