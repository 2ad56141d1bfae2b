"""The Redis store, for several proxy replicas sharing keys, spend and budgets.

Budget counters are Redis hashes changed only by Lua scripts, so reserve (check every
limit, then hold on all of them), settle (release, add the spend, append the usage
record) and release are each atomic across replicas. A reservation carries an expiry:
one left by a crashed replica is released by the next reserve after it expires.
Usage records go to the stream ``hg:usage`` in the same script that settles them.

A command that fails on a lost connection (a Redis restart leaves every pooled
connection dead) is retried on a fresh one, twice at most, so a restart costs no
request. Reserve and settle are idempotent under such a retry (a reservation is taken
once; a settlement leaves a marker for a minute and a second one is a no-op), so a
reply lost with its connection never charges twice.

Durability of settled spend is Redis's: run it with ``appendonly yes`` (and
``appendfsync everysec`` or ``always``). The scripts touch keys they compute, so use a
single Redis (or a primary with replicas), not Redis Cluster.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError, RedisError

from hookgate.budgets.ledger import Ledger, Refusal
from hookgate.budgets.limits import Counter
from hookgate.budgets.rates import RateCheck, RateLimiter, RateResult, wait_for_room
from hookgate.errors import StoreUnavailable
from hookgate.store.base import AuditRecord, UsageRow, display_url
from hookgate.store.keys import KeyRecord

log = logging.getLogger("hookgate")

RESERVATION_TTL_S = 900.0
"""A reservation older than this is taken for one of a crashed replica and released."""

RETRIES = 2
"""Retries of a command whose connection was lost (see the module docstring)."""

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


class RedisStore:
    """See the module docstring."""

    def __init__(self, url: str) -> None:
        self.url = url
        retry = Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), RETRIES, (ConnectionError,))
        self.client = aioredis.Redis.from_url(url, decode_responses=True, retry=retry)
        self._reserve = self.client.register_script(RESERVE)
        self._settle = self.client.register_script(SETTLE)
        self._release = self.client.register_script(RELEASE)
        self._writes: set[asyncio.Task[None]] = set()

    async def _call(self, coro: Any) -> Any:
        try:
            return await coro
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"store {display_url(self.url)}: {exc}") from exc

    async def open(self) -> None:
        await self._call(self.client.ping())

    async def close(self) -> None:
        await asyncio.gather(*self._writes, return_exceptions=True)
        await self.client.aclose()

    async def add_key(self, record: KeyRecord) -> None:
        data = orjson.dumps(_key_dict(record))
        pipe = self.client.pipeline(transaction=True)
        pipe.set(f"hg:key:{record.id}", data)
        pipe.set(f"hg:keydigest:{record.digest}", record.id)
        await self._call(pipe.execute())

    async def key_by_digest(self, digest: str) -> KeyRecord | None:
        key_id = await self._call(self.client.get(f"hg:keydigest:{digest}"))
        return None if key_id is None else await self._key(key_id)

    async def _key(self, key_id: str) -> KeyRecord | None:
        raw = await self._call(self.client.get(f"hg:key:{key_id}"))
        return None if raw is None else _key_record(orjson.loads(raw))

    async def keys(self) -> list[KeyRecord]:
        names = await self._call(self._scan("hg:key:*"))
        records = [await self._key(name.removeprefix("hg:key:")) for name in names]
        return sorted((r for r in records if r is not None), key=lambda r: r.created_at)

    async def _scan(self, match: str) -> list[str]:
        return [name async for name in self.client.scan_iter(match=match)]

    async def revoke_key(self, key_id: str, at: float) -> bool:
        record = await self._key(key_id)
        if record is None:
            return False
        if record.revoked_at is None:
            data = {**_key_dict(record), "revoked_at": at}
            await self._call(self.client.set(f"hg:key:{key_id}", orjson.dumps(data)))
        return True

    async def record_usage(self, row: UsageRow) -> None:
        fields = {"row": orjson.dumps(_row_dict(row)).decode()}
        await self._call(self.client.xadd("hg:usage", fields))  # type: ignore[arg-type]

    async def usage_total(self, scope: str, value: str, since: float) -> tuple[float, int]:
        usd, tokens = 0.0, 0
        for row in await self._rows(since):
            if _scope_value(row, scope) == value:
                usd += row["cost_usd"]
                tokens += row["input_tokens"] + row["output_tokens"]
        return usd, tokens

    async def write_audit(self, record: AuditRecord) -> None:
        fields = {"row": orjson.dumps(_audit_dict(record)).decode()}
        await self._call(self.client.xadd("hg:audit", fields))  # type: ignore[arg-type]

    def submit_audit(self, record: AuditRecord) -> None:
        task = asyncio.create_task(self._submit(record))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _submit(self, record: AuditRecord) -> None:
        try:
            await self.write_audit(record)
        except StoreUnavailable as exc:
            log.error("audit record of request %s not written: %s", record.request_id, exc.message)

    async def audit_records(self, since: float) -> list[dict[str, Any]]:
        await asyncio.gather(*self._writes, return_exceptions=True)
        entries = await self._call(
            self.client.xrange("hg:audit", min=f"{int(since * 1000)}", max="+")
        )
        return [orjson.loads(fields["row"]) for _, fields in entries]

    async def prune_audit(self, before: float) -> int:
        return int(await self._call(self.client.xtrim("hg:audit", minid=f"{int(before * 1000)}")))

    async def spend(self, by: str, since: float) -> list[tuple[str, float, int, int]]:
        groups: dict[str, list[float]] = {}
        for row in await self.audit_records(since):
            if by == "day":
                group = time.strftime("%Y-%m-%d", time.gmtime(row["ts"]))
            else:
                group = str(_scope_value(row, by) or "-")
            totals = groups.setdefault(group, [0.0, 0, 0])
            totals[0] += float(row["cost_usd"] or 0.0)
            totals[1] += int(row["input_tokens"]) + int(row["output_tokens"])
            totals[2] += 1 if int(row["status"]) < 400 else 0
        rows = [(g, t[0], int(t[1]), int(t[2])) for g, t in groups.items()]
        return sorted(rows, key=lambda r: -r[1])

    async def _rows(self, since: float) -> list[dict[str, Any]]:
        entries = await self._call(
            self.client.xrange("hg:usage", min=f"{int(since * 1000)}", max="+")
        )
        return [orjson.loads(fields["row"]) for _, fields in entries]

    def ledger(self) -> Ledger:
        return RedisLedger(self)

    def rate_limiter(self) -> RateLimiter:
        return RedisRateLimiter(self)

    async def secret(self, name: str) -> bytes:
        key = f"hg:secret:{name}"
        await self._call(self.client.set(key, secrets.token_hex(32), nx=True))
        return bytes.fromhex(await self._call(self.client.get(key)))

    async def healthy(self) -> bool:
        try:
            return bool(await self._call(self.client.ping()))
        except StoreUnavailable:
            return False


class RedisLedger:
    """Budget reservations in Redis, atomic across replicas (see the module docstring)."""

    def __init__(self, store: RedisStore, reservation_ttl_s: float = RESERVATION_TTL_S) -> None:
        self._store = store
        self._ttl = reservation_ttl_s

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
        result = await self._store._call(self._store._reserve(keys=keys, args=args))
        if int(result[0]) == 0:
            return None
        return Refusal(counters[int(result[0]) - 1], str(result[1]), exhausted=bool(int(result[2])))

    async def release(self, reservation: str) -> None:
        await self._store._call(self._store._release(keys=[], args=[reservation]))

    async def settle(self, reservation: str, counters: list[Counter], row: UsageRow) -> None:
        keys = [_counter_key(c) for c in counters]
        tokens = row.input_tokens + row.output_tokens
        args: list[str | float | int] = [
            reservation,
            row.cost_usd,
            tokens,
            orjson.dumps(_row_dict(row)).decode(),
        ]
        await self._store._call(self._store._settle(keys=keys, args=args))

    async def remaining(self, counters: list[Counter]) -> tuple[float | None, int | None]:
        usd_left: float | None = None
        tokens_left: int | None = None
        for counter in counters:
            names = ("used_usd", "used_tokens", "res_usd", "res_tokens")
            fields = await self._store._call(self._store.client.hmget(_counter_key(counter), names))
            used_usd, used_tokens, res_usd, res_tokens = (float(f or 0) for f in fields)
            if counter.limit.usd is not None:
                left = max(0.0, counter.limit.usd - used_usd - res_usd)
                usd_left = left if usd_left is None else min(usd_left, left)
            if counter.limit.tokens is not None:
                left_tokens = max(0, int(counter.limit.tokens - used_tokens - res_tokens))
                tokens_left = left_tokens if tokens_left is None else min(tokens_left, left_tokens)
        return usd_left, tokens_left


_SCOPE_FIELDS = {"key": "key_id", "team": "team", "user": "user", "agent": "agent",
                 "reply": "reply", "model": "model"}  # fmt: skip


def _scope_value(row: dict[str, Any], scope: str) -> Any:
    return row.get(_SCOPE_FIELDS[scope])


def _audit_dict(record: AuditRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in AuditRecord.__slots__}


def _row_dict(row: UsageRow) -> dict[str, Any]:
    return {name: getattr(row, name) for name in UsageRow.__slots__}


def _key_dict(record: KeyRecord) -> dict[str, Any]:
    data = {name: getattr(record, name) for name in KeyRecord.__slots__}
    data["models"] = list(record.models)
    return data


def _key_record(data: dict[str, Any]) -> KeyRecord:
    return KeyRecord(**{**data, "models": tuple(data.get("models") or ())})


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
        result = await self._store._call(self._script(keys=keys, args=args))
        index, left = int(result[0]), int(result[1])
        if index == 0:
            tightest = int(result[2])
            return RateResult(True, checks[tightest - 1] if tightest else None, left, 0.0)
        check = checks[index - 1]
        reset = wait_for_room(float(result[2]), float(result[3]), elapsed, check.cap, check.amount)
        return RateResult(False, check, left, reset)
