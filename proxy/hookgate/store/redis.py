"""The Redis store, for several proxy replicas sharing keys, spend and budgets.

Keys, usage records (the stream ``hg:usage``), the audit log (``hg:audit``) and
approvals (``hg:approval:{id}``, newest first in the sorted set ``hg:approvals``). The
budget counters and rates built on this store are in :mod:`hookgate.store.redis_budgets`;
:attr:`RedisStore.owner` is this process as the holder of reservations
(:mod:`hookgate.store.redis_owners`), whose lease :meth:`RedisStore.close` gives up.

A command that fails on a lost connection (a Redis restart leaves every pooled
connection dead) is retried on a fresh one, twice at most, so a restart costs no
request (the budget scripts are idempotent under such a retry).

Durability of settled spend is Redis's: run it with ``appendonly yes`` (and
``appendfsync everysec`` or ``always``). The scripts touch keys they compute, so use a
single Redis (or a primary with replicas), not Redis Cluster.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import ConnectionError, RedisError, WatchError

from hookgate.budgets.ledger import UsageRow
from hookgate.errors import StoreUnavailable
from hookgate.store.approvals import Approval, ApprovalDecision, ApprovalNotFound, decided
from hookgate.store.audit_query import AuditPage, AuditQuery, make_cursor, parse_cursor
from hookgate.store.base import AuditRecord, SpendLine, display_url
from hookgate.store.grants import AdminChange, Grants, GrantsEdit, Kind
from hookgate.store.keys import KeyRecord
from hookgate.store.redis_owners import LEASE_S, Owner

log = logging.getLogger("hookgate")
T = TypeVar("T")

RETRIES = 2
"""Retries of a command whose connection was lost (see the module docstring)."""
MAX_CONNECTIONS = 512
"""Connections a replica opens to Redis at most. Past it, a command waits for a free one
(up to :data:`POOL_WAIT_S`) instead of failing: redis-py's own pool refuses the 101st
concurrent command, which turned a burst of requests into 503s."""
POOL_WAIT_S = 10.0
SCAN_CHUNK = 1000
"""Audit stream entries one command of a filtered scan reads."""


class RedisStore:
    """See the module docstring."""

    def __init__(self, url: str, lease_s: float = LEASE_S) -> None:
        self.url = url
        self.owner = Owner(url, lease_s)
        retry = Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), RETRIES, (ConnectionError,))
        pool = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=MAX_CONNECTIONS, timeout=POOL_WAIT_S, decode_responses=True,
            retry=retry,
        )  # fmt: skip
        self.client = aioredis.Redis(connection_pool=pool)
        self._writes: set[asyncio.Task[None]] = set()

    async def call(self, coro: Any) -> Any:
        """Await a command of :attr:`client`; a Redis failure is :class:`StoreUnavailable`."""
        try:
            return await coro
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"store {display_url(self.url)}: {exc}") from exc

    async def _optimistic(self, key: str, step: Callable[[Pipeline], Awaitable[T]]) -> T:
        """``step`` (read ``key``, then MULTI, queue the writes, EXEC) in a WATCH
        transaction on ``key``, run again from its read whenever another writer changed
        ``key`` meanwhile; through :meth:`call`. What ``step`` raises is raised."""

        async def attempt() -> T:
            async with self.client.pipeline(transaction=True) as pipe:
                while True:
                    try:
                        await pipe.watch(key)
                        return await step(pipe)
                    except WatchError:
                        continue

        result: T = await self.call(attempt())
        return result

    async def open(self) -> None:
        await self.call(self.client.ping())

    async def close(self) -> None:
        await asyncio.gather(*self._writes, return_exceptions=True)
        await self.owner.close()
        await self.client.aclose(close_connection_pool=True)  # the pool is ours

    async def add_key(self, record: KeyRecord) -> None:
        data = orjson.dumps(_key_dict(record))
        pipe = self.client.pipeline(transaction=True)
        pipe.set(f"hg:key:{record.id}", data)
        pipe.set(f"hg:keydigest:{record.digest}", record.id)
        await self.call(pipe.execute())

    async def key_by_digest(self, digest: str) -> KeyRecord | None:
        key_id = await self.call(self.client.get(f"hg:keydigest:{digest}"))
        return None if key_id is None else await self._key(key_id)

    async def _key(self, key_id: str) -> KeyRecord | None:
        raw = await self.call(self.client.get(f"hg:key:{key_id}"))
        return None if raw is None else _key_record(orjson.loads(raw))

    async def keys(self) -> list[KeyRecord]:
        names = await self.call(self._scan("hg:key:*"))
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
            await self.call(self.client.set(f"hg:key:{key_id}", orjson.dumps(data)))
        return True

    async def record_usage(self, row: UsageRow) -> None:
        fields = {"row": orjson.dumps(row_dict(row)).decode()}
        await self.call(self.client.xadd("hg:usage", fields))  # type: ignore[arg-type]

    async def usage_total(self, scope: str, value: str, since: float) -> tuple[float, int]:
        usd, tokens = 0.0, 0
        for row in await self._rows(since):
            if _scope_value(row, scope) == value:
                usd += row["cost_usd"]
                tokens += row["input_tokens"] + row["output_tokens"]
        return usd, tokens

    async def write_audit(self, record: AuditRecord) -> None:
        fields = {"row": orjson.dumps(_audit_dict(record)).decode()}
        await self.call(self.client.xadd("hg:audit", fields))  # type: ignore[arg-type]

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
        entries = await self.call(self.client.xrange("hg:audit", min=_stream_id(since), max="+"))
        return [orjson.loads(fields["row"]) for _, fields in entries]

    async def audit_page(self, query: AuditQuery) -> AuditPage:
        """A scan of the stream newest first (by arrival: records written at once may
        arrive a moment out of their ``ts`` order), :data:`SCAN_CHUNK` entries a command,
        until the page is full: a filter few records pass reads much of the stream (the
        SQLite store searches by index)."""
        await asyncio.gather(*self._writes, return_exceptions=True)
        end = "+" if query.cursor is None else "(" + parse_cursor(query.cursor)[1]
        start = "-" if query.since is None else _stream_id(query.since)
        found: list[tuple[str, dict[str, Any]]] = []
        while len(found) <= query.limit:
            entries = await self.call(
                self.client.xrevrange("hg:audit", max=end, min=start, count=SCAN_CHUNK)
            )
            found += [
                (entry_id, row) for entry_id, fields in entries
                if query.matches(row := orjson.loads(fields["row"]))
            ]  # fmt: skip
            if len(entries) < SCAN_CHUNK:
                break
            end = "(" + entries[-1][0]
        if len(found) <= query.limit:
            return AuditPage([row for _, row in found], None)
        position, last = found[query.limit - 1]
        return AuditPage(
            [row for _, row in found[: query.limit]], make_cursor(last["ts"], position)
        )

    async def audit_counts(self, since: float) -> tuple[int, int]:
        rows = [row for row in await self.audit_records(since) if row["ts"] >= since]
        return len(rows), sum(1 for row in rows if int(row["status"]) >= 400)

    async def prune_audit(self, before: float) -> int:
        return int(await self.call(self.client.xtrim("hg:audit", minid=f"{int(before * 1000)}")))

    async def spend(self, by: str, since: float) -> list[SpendLine]:
        groups: dict[str, list[float]] = {}

        def add(row: dict[str, Any], usd: float, served: bool, unbudgeted: bool) -> None:
            if by == "day":
                group = time.strftime("%Y-%m-%d", time.gmtime(row["ts"]))
            else:
                group = str(_scope_value(row, by) or "-")
            totals = groups.setdefault(group, [0.0, 0, 0, 0])
            totals[0] += usd
            totals[1] += int(row["input_tokens"]) + int(row["output_tokens"])
            totals[2] += served
            totals[3] += unbudgeted

        settled = await self._rows(since)
        for row in settled:
            add(row, float(row["cost_usd"]), True, False)
        charged = {row["request_id"] for row in settled}
        for row in await self.audit_records(since):
            if row["request_id"] not in charged:
                add(row, float(row["cost_usd"] or 0.0), int(row["status"]) < 400, True)
        lines = [SpendLine(g, t[0], int(t[1]), int(t[2]), int(t[3])) for g, t in groups.items()]
        return sorted(lines, key=lambda line: -line.usd)

    async def _rows(self, since: float) -> list[dict[str, Any]]:
        entries = await self.call(self.client.xrange("hg:usage", min=_stream_id(since), max="+"))
        return [orjson.loads(fields["row"]) for _, fields in entries]

    async def grants(self, kind: Kind, name: str) -> Grants | None:
        raw = await self.call(self.client.hget(f"hg:grants:{kind}", name))
        return None if raw is None else Grants.model_validate_json(raw)

    async def all_grants(self, kind: Kind) -> dict[str, Grants]:
        docs = await self.call(self.client.hgetall(f"hg:grants:{kind}"))
        return {name: Grants.model_validate_json(docs[name]) for name in sorted(docs)}

    async def change_grants(
        self, kind: Kind, subject: str, edit: GrantsEdit, actor: str
    ) -> AdminChange:
        key = f"hg:grants:{kind}"

        async def step(pipe: Pipeline) -> AdminChange:
            raw = await pipe.hget(key, subject)
            before = None if raw is None else Grants.model_validate_json(raw)
            change = AdminChange.made(kind, subject, before, edit(before), actor)
            pipe.multi()  # type: ignore[no-untyped-call]
            if change.after is None:
                pipe.hdel(key, subject)
            else:
                pipe.hset(key, subject, change.after.model_dump_json())
            pipe.xadd("hg:admin", {"change": change.model_dump_json()})
            await pipe.execute()
            return change

        return await self._optimistic(key, step)

    async def admin_changes(self, since: float) -> list[AdminChange]:
        entries = await self.call(self.client.xrange("hg:admin", min=_stream_id(since)))
        changes = [AdminChange.model_validate_json(fields["change"]) for _, fields in entries]
        return [c for c in changes if c.ts >= since]

    async def save_state(self, key: str, value: bytes, ttl_s: float) -> None:
        await self.call(self.client.set(f"hg:state:{key}", value, px=max(1, int(ttl_s * 1000))))

    async def load_state(self, key: str) -> bytes | None:
        value = await self.call(self.client.get(f"hg:state:{key}"))  # UTF-8 JSON, decoded
        return value.encode() if isinstance(value, str) else value

    async def update_state(
        self, key: str, change: Callable[[bytes | None], bytes], ttl_s: float
    ) -> bytes:
        name = f"hg:state:{key}"

        async def step(pipe: Pipeline) -> bytes:
            now = await pipe.get(name)  # UTF-8 JSON, decoded
            value = change(now.encode() if isinstance(now, str) else now)
            pipe.multi()  # type: ignore[no-untyped-call]
            pipe.set(name, value, px=max(1, int(ttl_s * 1000)))
            await pipe.execute()
            return value

        return await self._optimistic(name, step)

    async def secret(self, name: str) -> bytes:
        key = f"hg:secret:{name}"
        await self.call(self.client.set(key, secrets.token_hex(32), nx=True))
        return bytes.fromhex(await self.call(self.client.get(key)))

    async def healthy(self) -> bool:
        try:
            return bool(await self.call(self.client.ping()))
        except StoreUnavailable:
            return False

    # approvals -------------------------------------------------------------------------

    async def add_approval(self, approval: Approval) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.set(f"hg:approval:{approval.id}", approval.model_dump_json())
        pipe.zadd("hg:approvals", {approval.id: approval.created_at})
        await self.call(pipe.execute())

    async def approval(self, approval_id: str) -> Approval | None:
        raw = await self.call(self.client.get(f"hg:approval:{approval_id}"))
        return None if raw is None else Approval.model_validate_json(raw).at(time.time())

    async def approvals(self, status: str | None = None, limit: int = 200) -> list[Approval]:
        now, start = time.time(), 0
        found: list[Approval] = []
        while len(found) < limit:  # newest first, a page at a time until enough match
            ids = await self.call(self.client.zrevrange("hg:approvals", start, start + limit - 1))
            if not ids:
                break
            start += len(ids)
            docs = await self.call(self.client.mget([f"hg:approval:{i}" for i in ids]))
            for doc in docs:
                if doc is not None:
                    approval = Approval.model_validate_json(doc).at(now)
                    if status is None or approval.status == status:
                        found.append(approval)
        return found[:limit]

    async def decide_approval(
        self, approval_id: str, decision: ApprovalDecision, actor: str, at: float
    ) -> Approval:
        key = f"hg:approval:{approval_id}"

        async def step(pipe: Pipeline) -> Approval:
            raw = await pipe.get(key)
            if raw is None:
                raise ApprovalNotFound(approval_id)
            after = decided(Approval.model_validate_json(raw), decision, actor, at)
            pipe.multi()  # type: ignore[no-untyped-call]
            pipe.set(key, after.model_dump_json())
            await pipe.execute()
            return after

        return await self._optimistic(key, step)


_SCOPE_FIELDS = {"key": "key_id", "team": "team", "user": "user", "agent": "agent",
                 "reply": "reply", "model": "model", "session": "session"}  # fmt: skip


def _scope_value(row: dict[str, Any], scope: str) -> Any:
    return row.get(_SCOPE_FIELDS[scope])


def _audit_dict(record: AuditRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in AuditRecord.__slots__}


def row_dict(row: UsageRow) -> dict[str, Any]:
    return {name: getattr(row, name) for name in UsageRow.__slots__}


def _key_dict(record: KeyRecord) -> dict[str, Any]:
    data = {name: getattr(record, name) for name in KeyRecord.__slots__}
    data["models"] = list(record.models)
    return data


def _key_record(data: dict[str, Any]) -> KeyRecord:
    return KeyRecord(**{**data, "models": tuple(data.get("models") or ())})


def _stream_id(since: float) -> str:
    """The first stream id at or after ``since`` (seconds since the epoch; before the
    epoch, a huge look-back, is the stream's start)."""
    return str(max(0, int(since * 1000)))
