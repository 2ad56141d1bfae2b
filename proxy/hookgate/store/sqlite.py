"""The embedded store: SQLite in WAL mode, on one worker thread.

All SQL runs on a single thread, so one connection serves the process and nothing
blocks the event loop. The database is opened on first use: a proxy that never needs
the store never creates the file. WAL with ``synchronous=NORMAL`` makes every committed
transaction survive a crash of the process (``kill -9``); a power loss may lose the
last ones.

Several processes may share one file (the workers of ``hookgate serve --workers N``, or
separate processes whose store URL ends in ``?shared=true``): SQLite serializes their
writes, and :mod:`hookgate.store.sqlite_budgets` keeps budgets and rates exact across
them; :mod:`hookgate.store.sqlite_owners` refuses a process that would keep them in its
memory beside others. Replicas on several hosts need Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import operator
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import orjson

from hookgate.budgets.ledger import UsageRow
from hookgate.errors import StoreUnavailable
from hookgate.store.approvals import Approval, ApprovalDecision, ApprovalNotFound, decided
from hookgate.store.audit_query import AuditPage, AuditQuery, make_cursor, parse_cursor
from hookgate.store.base import AuditRecord, SpendLine, display_url
from hookgate.store.grants import AdminChange, Grants, GrantsEdit, Kind
from hookgate.store.keys import KeyRecord
from hookgate.store.sqlite_owners import Owners

T = TypeVar("T")

# sqlite3 binds a None by looking for an adapter, then for ``__adapt__`` on its protocol
# type, whose failure formats an AttributeError message: a microsecond per NULL, and an
# audit row has a dozen. An adapter for None found at once binds the same NULL.
sqlite3.register_adapter(type(None), lambda value: value)

log = logging.getLogger("hookgate")

SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    id TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    team TEXT NOT NULL,
    user TEXT,
    name TEXT,
    models TEXT NOT NULL DEFAULT '[]',
    created_at REAL NOT NULL,
    expires_at REAL,
    revoked_at REAL,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    request_id TEXT NOT NULL,
    key_id TEXT, team TEXT, user TEXT, agent TEXT, reply TEXT,
    model TEXT NOT NULL,
    target TEXT,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    session TEXT
);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL, request_id TEXT NOT NULL, api TEXT NOT NULL, model TEXT NOT NULL,
    status INTEGER NOT NULL, latency_ms REAL NOT NULL, target TEXT, error TEXT,
    key_id TEXT, team TEXT, user TEXT, agent TEXT, session TEXT, reply TEXT,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL,
    cost_usd REAL, attempts INTEGER NOT NULL, decisions TEXT NOT NULL,
    findings TEXT NOT NULL DEFAULT '{}', policy_set TEXT, actor TEXT
);
CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS states (
    key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS grants (
    kind TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (kind, name)
);
CREATE TABLE IF NOT EXISTS admin_log (
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, change TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY, created_at REAL NOT NULL, expires_at REAL NOT NULL,
    status TEXT NOT NULL, doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_created ON approvals (created_at);
CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts);
-- The audit's filters by session, key and team are partial indexes: a request without one
-- (anonymous, no session) enters none of them, ~4 µs less per audit row, and every audit
-- filter is `column = ?`, which implies NOT NULL, so each query is served as before.
-- Databases made before them lose their full indexes (audit_session, audit_key, audit_team).
DROP INDEX IF EXISTS audit_session;
DROP INDEX IF EXISTS audit_key;
DROP INDEX IF EXISTS audit_team;
CREATE INDEX IF NOT EXISTS audit_session_set ON audit (session, ts) WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS audit_key_set ON audit (key_id, ts) WHERE key_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS audit_team_set ON audit (team, ts) WHERE team IS NOT NULL;
CREATE INDEX IF NOT EXISTS usage_team ON usage (team, ts);
CREATE INDEX IF NOT EXISTS usage_key ON usage (key_id, ts);
CREATE INDEX IF NOT EXISTS usage_user ON usage (user, ts);
CREATE INDEX IF NOT EXISTS usage_agent ON usage (agent, ts);
CREATE INDEX IF NOT EXISTS usage_reply ON usage (reply, ts);
CREATE INDEX IF NOT EXISTS usage_model ON usage (model, ts);
CREATE INDEX IF NOT EXISTS usage_request ON usage (request_id);
CREATE TABLE IF NOT EXISTS budget_counters (
    key TEXT PRIMARY KEY, scope TEXT NOT NULL, value TEXT NOT NULL, since REAL NOT NULL,
    until REAL, used_usd REAL NOT NULL, used_tokens INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS budget_counters_value ON budget_counters (scope, value);
CREATE TABLE IF NOT EXISTS budget_holds (
    reservation TEXT NOT NULL, counter TEXT NOT NULL, owner TEXT NOT NULL,
    usd REAL NOT NULL, tokens INTEGER NOT NULL, PRIMARY KEY (reservation, counter)
);
CREATE INDEX IF NOT EXISTS budget_holds_counter ON budget_holds (counter);
CREATE INDEX IF NOT EXISTS budget_holds_owner ON budget_holds (owner);
CREATE TABLE IF NOT EXISTS rate_counts (
    key TEXT NOT NULL, minute INTEGER NOT NULL, amount REAL NOT NULL, PRIMARY KEY (key, minute)
);
"""

SCOPE_COLUMNS = {
    "key": "key_id", "team": "team", "user": "user", "agent": "agent", "reply": "reply",
    "model": "model", "session": "session",
}  # fmt: skip


def sqlite_path(url: str) -> Path:
    """``sqlite:///rel.db`` → ``rel.db``; ``sqlite:////abs/x.db?shared=true`` → ``/abs/x.db``."""
    return Path(url.removeprefix("sqlite:///").partition("?")[0])


def sqlite_shared(url: str) -> bool:
    """Whether a SQLite URL asks for budgets shared between processes (``?shared=true``)."""
    return "shared=true" in url.partition("?")[2].split("&")


class SQLiteStore:
    """See the module docstring."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = sqlite_path(url)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hookgate-sqlite")
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[AuditRecord, asyncio.Future[None] | None]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._checkpointer: threading.Thread | None = None
        self._closing = threading.Event()
        self._batch: list[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = []
        self._batcher: asyncio.Task[None] | None = None
        self.owners = Owners(self.path, display_url(url))
        """Who keeps this file's budgets (:mod:`hookgate.store.sqlite_owners`)."""

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            try:
                return fn(self._connect())
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"store {display_url(self.url)}: {exc}") from exc

        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    def _connect(self) -> sqlite3.Connection:
        """The connection, opened on first use (on the worker thread)."""
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None
            )
            _use_wal(db)
            db.execute("PRAGMA synchronous=NORMAL")
            # Checkpoints move the WAL into the database file; SQLite runs them inside the
            # commit that crosses 1000 pages, which would hold up that request's settle
            # for milliseconds. A thread of our own runs them instead (see _checkpoints).
            db.execute("PRAGMA wal_autocheckpoint=0")
            db.executescript(SCHEMA)
            _migrate(db)
            self._db = db
            checkpointer = threading.Thread(
                target=self._checkpoints, name="hookgate-sqlite-checkpoint", daemon=True
            )
            checkpointer.start()
            # Published once started: close() may run on the loop meanwhile and joins it.
            self._checkpointer = checkpointer
        return self._db

    def _checkpoints(self) -> None:
        """Every second, a PASSIVE checkpoint on a connection of its own: it copies what
        no reader still needs and never blocks the writer."""
        db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None
        )
        try:
            while not self._closing.wait(CHECKPOINT_EVERY_S):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error as exc:
                    log.warning("store %s: checkpoint failed: %s", self.url, exc)
        finally:
            db.close()

    async def open(self) -> None:
        await self._run(lambda db: None)

    async def close(self) -> None:
        await self._drain()
        while self._batcher is not None and not self._batcher.done():
            await asyncio.gather(self._batcher, return_exceptions=True)
        self.owners.release()
        self._closing.set()
        if self._checkpointer is not None:
            await asyncio.to_thread(self._checkpointer.join, 10)

        def disconnect() -> None:
            if self._db is not None:
                try:
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error as exc:  # the WAL stays; the next open replays it
                    log.warning("store %s: final checkpoint failed: %s", self.url, exc)
                self._db.close()
                self._db = None

        await asyncio.get_running_loop().run_in_executor(self._executor, disconnect)

    async def add_key(self, record: KeyRecord) -> None:
        def insert(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO keys (id, digest, team, user, name, models, created_at, expires_at,"
                " revoked_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.id, record.digest, record.team, record.user, record.name,
                 orjson.dumps(list(record.models)).decode(), record.created_at, record.expires_at,
                 record.revoked_at, orjson.dumps(record.metadata).decode()),
            )  # fmt: skip

        await self._run(insert)

    async def key_by_digest(self, digest: str) -> KeyRecord | None:
        def select(db: sqlite3.Connection) -> KeyRecord | None:
            row = db.execute(f"SELECT {_COLUMNS} FROM keys WHERE digest = ?", (digest,)).fetchone()
            return None if row is None else _record(row)

        return await self._run(select)

    async def keys(self) -> list[KeyRecord]:
        def select(db: sqlite3.Connection) -> list[KeyRecord]:
            rows = db.execute(f"SELECT {_COLUMNS} FROM keys ORDER BY created_at").fetchall()
            return [_record(row) for row in rows]

        return await self._run(select)

    async def revoke_key(self, key_id: str, at: float) -> bool:
        def update(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                "UPDATE keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", (at, key_id)
            )
            return cursor.rowcount > 0

        return await self._run(update)

    async def record_usage(self, row: UsageRow) -> None:
        """Group commit (:meth:`submit`): the rows that arrive while one commit runs share
        the next one.

        Returns once the row's transaction has committed. There is no batching window: a
        lone request commits at once; under concurrency one commit (and one hop to the
        store's thread) serves every request that settled meanwhile."""
        await self.submit(functools.partial(insert_usage, row=row))

    def submit(self, op: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Queue ``op`` to run in a write transaction (``BEGIN IMMEDIATE``: it holds the
        database's write lock, so no other process writes between its reads and writes)
        and return the future of its result, done once that transaction has committed.

        Group commit: ops queued while a transaction runs share the next one, each seeing
        the writes of those before it (they run in submission order). An op is queued
        when this returns, so it runs even if its caller is cancelled meanwhile. An op
        that raises rolls back its whole transaction: every op in it fails with
        :class:`StoreUnavailable`."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._batch.append((op, future))
        if self._batcher is None or self._batcher.done():
            self._batcher = asyncio.create_task(self._run_batches())
        return future

    async def _run_batches(self) -> None:
        while self._batch:
            batch, self._batch = self._batch, []
            ops = [op for op, _ in batch]
            try:
                results = await self._run(functools.partial(_in_one_transaction, ops=ops))
            except Exception as exc:  # never leave a caller waiting
                error = exc if isinstance(exc, StoreUnavailable) else _refused_rows(exc)
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
            else:
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)

    async def usage_total(self, scope: str, value: str, since: float) -> tuple[float, int]:
        column = SCOPE_COLUMNS[scope]

        def total(db: sqlite3.Connection) -> tuple[float, int]:
            row = db.execute(
                f"SELECT COALESCE(SUM(cost_usd), 0), COALESCE(SUM(input_tokens + output_tokens), 0)"
                f" FROM usage WHERE {column} = ? AND ts >= ?",
                (value, since),
            ).fetchone()
            return float(row[0]), int(row[1])

        return await self._run(total)

    async def write_audit(self, record: AuditRecord) -> None:
        """Group commit: records that arrive while a batch commits go in the next one."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._enqueue(record, future)
        await future

    def submit_audit(self, record: AuditRecord) -> None:
        self._enqueue(record, None)

    def _enqueue(self, record: AuditRecord, future: asyncio.Future[None] | None) -> None:
        self._pending.append((record, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())

    async def _flush(self) -> None:
        # Gather a batch first: a commit and its thread hop cost ~130 µs whatever the
        # batch size, so one commit per 10 ms instead of one per record.
        await asyncio.sleep(AUDIT_BATCH_WINDOW_S)
        while self._pending:
            batch, self._pending = self._pending, []
            rows = [_audit_row(r) for r, _ in batch]
            try:
                await self._run(functools.partial(_insert_audit, rows=rows))
            except Exception as exc:  # never leave a waiter hanging, nor the flusher dead
                error = exc if isinstance(exc, StoreUnavailable) else _refused_rows(exc)
                log.error("audit: %d records not written: %s", len(batch), error.message)
                for _, future in batch:
                    if future is not None and not future.done():
                        future.set_exception(error)
            else:
                for _, future in batch:
                    if future is not None and not future.done():
                        future.set_result(None)

    async def _drain(self) -> None:
        """Wait for queued audit records (so a report reads this process's own writes)."""
        while self._flusher is not None and not self._flusher.done():
            await asyncio.gather(self._flusher, return_exceptions=True)

    async def audit_records(self, since: float) -> list[dict[str, Any]]:
        await self._drain()

        def select(db: sqlite3.Connection) -> list[dict[str, Any]]:
            cursor = db.execute(
                f"SELECT {', '.join(AUDIT_FIELDS)} FROM audit WHERE ts >= ? ORDER BY id", (since,)
            )
            return [dict(zip(AUDIT_FIELDS, row, strict=True)) for row in cursor.fetchall()]

        return await self._run(select)

    async def audit_page(self, query: AuditQuery) -> AuditPage:
        await self._drain()
        where, args = audit_where(query)
        sql = (
            f"SELECT id, {', '.join(AUDIT_FIELDS)} FROM audit WHERE {' AND '.join(where)}"
            " ORDER BY ts DESC, id DESC LIMIT ?"
        )

        def select(db: sqlite3.Connection) -> AuditPage:
            rows = db.execute(sql, (*args, query.limit + 1)).fetchall()
            records = [dict(zip(AUDIT_FIELDS, row[1:], strict=True)) for row in rows]
            if len(rows) <= query.limit:
                return AuditPage(records, None)
            last = rows[query.limit - 1]
            return AuditPage(records[: query.limit], make_cursor(last[1], last[0]))

        return await self._run(select)

    async def audit_counts(self, since: float) -> tuple[int, int]:
        await self._drain()

        def count(db: sqlite3.Connection) -> tuple[int, int]:
            total, errors = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(status >= 400), 0) FROM audit WHERE ts >= ?",
                (since,),
            ).fetchone()
            return int(total), int(errors)

        return await self._run(count)

    async def prune_audit(self, before: float) -> int:
        return await self._run(
            lambda db: db.execute("DELETE FROM audit WHERE ts < ?", (before,)).rowcount
        )

    async def spend(self, by: str, since: float) -> list[SpendLine]:
        await self._drain()
        column = "date(ts, 'unixepoch')" if by == "day" else SCOPE_COLUMNS[by]

        def report(db: sqlite3.Connection) -> list[SpendLine]:
            rows = db.execute(
                f"SELECT COALESCE(grp, '-'), SUM(usd), SUM(tokens), SUM(served), SUM(unbudgeted)"
                f" FROM (SELECT {column} AS grp, cost_usd AS usd,"
                "   input_tokens + output_tokens AS tokens, 1 AS served, 0 AS unbudgeted"
                "   FROM usage WHERE ts >= ?"
                f" UNION ALL SELECT {column}, COALESCE(cost_usd, 0),"
                "   input_tokens + output_tokens, status < 400, 1 FROM audit WHERE ts >= ?"
                "   AND NOT EXISTS (SELECT 1 FROM usage u WHERE u.request_id = audit.request_id))"
                " GROUP BY 1 ORDER BY 2 DESC",
                (since, since),
            ).fetchall()
            return [SpendLine(str(g), float(u), int(t), int(n), int(a)) for g, u, t, n, a in rows]

        return await self._run(report)

    async def grants(self, kind: Kind, name: str) -> Grants | None:
        def select(db: sqlite3.Connection) -> Grants | None:
            row = db.execute(
                "SELECT doc FROM grants WHERE kind = ? AND name = ?", (kind, name)
            ).fetchone()
            return None if row is None else Grants.model_validate_json(row[0])

        return await self._run(select)

    async def all_grants(self, kind: Kind) -> dict[str, Grants]:
        def select(db: sqlite3.Connection) -> dict[str, Grants]:
            rows = db.execute("SELECT name, doc FROM grants WHERE kind = ? ORDER BY name", (kind,))
            return {name: Grants.model_validate_json(doc) for name, doc in rows}

        return await self._run(select)

    async def change_grants(
        self, kind: Kind, subject: str, edit: GrantsEdit, actor: str
    ) -> AdminChange:
        def write(db: sqlite3.Connection) -> AdminChange:
            with _transaction(db, "BEGIN IMMEDIATE"):  # the read is the write's: no one between
                row = db.execute(
                    "SELECT doc FROM grants WHERE kind = ? AND name = ?", (kind, subject)
                ).fetchone()
                before = None if row is None else Grants.model_validate_json(row[0])
                change = AdminChange.made(kind, subject, before, edit(before), actor)
                if change.after is None:
                    db.execute("DELETE FROM grants WHERE kind = ? AND name = ?", (kind, subject))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO grants (kind, name, doc) VALUES (?, ?, ?)",
                        (kind, subject, change.after.model_dump_json()),
                    )
                db.execute(
                    "INSERT INTO admin_log (ts, change) VALUES (?, ?)",
                    (change.ts, change.model_dump_json()),
                )
            return change

        return await self._run(write)

    async def admin_changes(self, since: float) -> list[AdminChange]:
        def select(db: sqlite3.Connection) -> list[AdminChange]:
            rows = db.execute("SELECT change FROM admin_log WHERE ts >= ? ORDER BY id", (since,))
            return [AdminChange.model_validate_json(row[0]) for row in rows]

        return await self._run(select)

    async def save_state(self, key: str, value: bytes, ttl_s: float) -> None:
        def save(db: sqlite3.Connection) -> None:
            now = time.time()
            db.execute("DELETE FROM states WHERE expires < ?", (now,))
            db.execute(
                "INSERT OR REPLACE INTO states (key, value, expires) VALUES (?, ?, ?)",
                (key, value, now + ttl_s),
            )

        await self._run(save)

    async def load_state(self, key: str) -> bytes | None:
        def load(db: sqlite3.Connection) -> bytes | None:
            row = db.execute(
                "SELECT value FROM states WHERE key = ? AND expires >= ?", (key, time.time())
            ).fetchone()
            return bytes(row[0]) if row is not None else None

        return await self._run(load)

    async def update_state(
        self, key: str, change: Callable[[bytes | None], bytes], ttl_s: float
    ) -> bytes:
        def update(db: sqlite3.Connection) -> bytes:
            with _transaction(db, "BEGIN IMMEDIATE"):  # the read is the write's: no one between
                now = time.time()
                row = db.execute(
                    "SELECT value FROM states WHERE key = ? AND expires >= ?", (key, now)
                ).fetchone()
                value = change(bytes(row[0]) if row is not None else None)
                db.execute(
                    "INSERT OR REPLACE INTO states (key, value, expires) VALUES (?, ?, ?)",
                    (key, value, now + ttl_s),
                )
            return value

        return await self._run(update)

    async def secret(self, name: str) -> bytes:
        def get_or_create(db: sqlite3.Connection) -> bytes:
            db.execute(
                "INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)",
                (name, secrets.token_hex(32)),
            )
            row = db.execute("SELECT value FROM secrets WHERE name = ?", (name,)).fetchone()
            return bytes.fromhex(row[0])

        return await self._run(get_or_create)

    async def healthy(self) -> bool:
        try:
            return await self._run(lambda db: db.execute("SELECT 1").fetchone() == (1,))
        except StoreUnavailable:
            return False

    # approvals -------------------------------------------------------------------------

    async def add_approval(self, approval: Approval) -> None:
        def insert(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO approvals (id, created_at, expires_at, status, doc)"
                " VALUES (?, ?, ?, ?, ?)",
                (approval.id, approval.created_at, approval.expires_at, approval.status,
                 approval.model_dump_json()),
            )  # fmt: skip

        await self._run(insert)

    async def approval(self, approval_id: str) -> Approval | None:
        def select(db: sqlite3.Connection) -> Approval | None:
            row = db.execute("SELECT doc FROM approvals WHERE id = ?", (approval_id,)).fetchone()
            return None if row is None else Approval.model_validate_json(row[0])

        found = await self._run(select)
        return None if found is None else found.at(time.time())

    async def approvals(self, status: str | None = None, limit: int = 200) -> list[Approval]:
        now = time.time()
        where, args = _approvals_where(status, now)

        def select(db: sqlite3.Connection) -> list[Approval]:
            rows = db.execute(
                f"SELECT doc FROM approvals {where} ORDER BY created_at DESC LIMIT ?",
                (*args, limit),
            ).fetchall()
            return [Approval.model_validate_json(row[0]) for row in rows]

        return [a.at(now) for a in await self._run(select)]

    async def decide_approval(
        self, approval_id: str, decision: ApprovalDecision, actor: str, at: float
    ) -> Approval:
        def write(db: sqlite3.Connection) -> Approval:
            with _transaction(db, "BEGIN IMMEDIATE"):  # the read is the write's: no one between
                row = db.execute(
                    "SELECT doc FROM approvals WHERE id = ?", (approval_id,)
                ).fetchone()
                if row is None:
                    raise ApprovalNotFound(approval_id)
                after = decided(Approval.model_validate_json(row[0]), decision, actor, at)
                db.execute(
                    "UPDATE approvals SET status = ?, doc = ? WHERE id = ?",
                    (after.status, after.model_dump_json(), approval_id),
                )
            return after

        return await self._run(write)


def _use_wal(db: sqlite3.Connection) -> None:
    """Switch ``db`` to WAL. While another connection (another worker opening the same
    new file) holds the lock this needs, SQLite answers "database is locked" at once,
    without waiting out the busy timeout: retried until :data:`BUSY_TIMEOUT_S` passes."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


CHECKPOINT_EVERY_S = 1.0
"""How often the WAL is checkpointed into the database file."""
BUSY_TIMEOUT_S = 5.0
"""How long a statement waits for a lock another connection holds before it fails."""

AUDIT_BATCH_WINDOW_S = 0.01
"""How long queued audit records wait to share one commit."""

AUDIT_FIELDS = tuple(AuditRecord.__slots__)
_audit_row = operator.attrgetter(*AUDIT_FIELDS)
"""An audit record's values in column order."""
_AUDIT_INSERT = (
    f"INSERT INTO audit ({', '.join(AUDIT_FIELDS)}) VALUES ({', '.join('?' * len(AUDIT_FIELDS))})"
)


_ADDED_COLUMNS = {
    "audit": {"findings": "TEXT NOT NULL DEFAULT '{}'", "policy_set": "TEXT", "actor": "TEXT"},
    "usage": {"session": "TEXT"},
}
"""Columns added after a table was first shipped: added in place to older files."""


def audit_where(query: AuditQuery) -> tuple[list[str], list[Any]]:
    """The SQL conditions (and their parameters) of an audit query: column names come
    from :meth:`AuditQuery.equals`'s fixed set, every value is a parameter."""
    where: list[str] = ["1"]
    args: list[Any] = []
    for column, value in query.equals().items():
        where.append(f"{column} = ?")
        args.append(value)
    if query.since is not None:
        where.append("ts >= ?")
        args.append(query.since)
    if query.until is not None:
        where.append("ts < ?")
        args.append(query.until)
    if query.status == "ok":
        where.append("status < 400")
    elif query.status == "error":
        where.append("status >= 400")
    elif query.status is not None:
        where.append("status = ?")
        args.append(int(query.status))
    wanted = query.decided()
    if wanted is not None:
        policy, decision = wanted
        path = "$." + orjson.dumps(policy).decode()  # a quoted JSON path member
        where.append("json_extract(decisions, ?) " + ("IS NOT NULL" if decision is None else "= ?"))
        args.extend([path] if decision is None else [path, decision])
    if query.cursor is not None:
        ts, position = parse_cursor(query.cursor)
        where.append("(ts, id) < (?, ?)")
        args.extend([ts, int(position.partition("-")[0])])
    return where, args


def _approvals_where(status: str | None, now: float) -> tuple[str, tuple[Any, ...]]:
    """The SQL filter of approvals by effective status (see ``Approval.status_at``)."""
    if status == "pending":
        return "WHERE status = 'pending' AND expires_at >= ?", (now,)
    if status == "expired":
        return "WHERE status = 'expired' OR (status = 'pending' AND expires_at < ?)", (now,)
    if status is None:
        return "", ()
    return "WHERE status = ?", (status,)


def _migrate(db: sqlite3.Connection) -> None:
    for table, columns in _ADDED_COLUMNS.items():
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for column, declaration in columns.items():
            if column not in present:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


def _refused_rows(exc: Exception) -> StoreUnavailable:
    """A batch the database would not take for a reason of its own rows (a value
    sqlite3 cannot bind): reported like an outage, so callers' handling applies."""
    log.exception("store: a batch of rows was refused")
    return StoreUnavailable(f"rows refused: {type(exc).__name__}")


def _insert_audit(db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    _insert_all(db, _AUDIT_INSERT, rows)


_USAGE_INSERT = (
    "INSERT INTO usage (ts, request_id, key_id, team, user, agent, reply, model, target,"
    " input_tokens, output_tokens, cost_usd, session)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def insert_usage(db: sqlite3.Connection, row: UsageRow) -> None:
    """Append ``row`` to the usage table (inside the caller's transaction)."""
    db.execute(_USAGE_INSERT, (
        row.ts, row.request_id, row.key_id, row.team, row.user, row.agent, row.reply,
        row.model, row.target, row.input_tokens, row.output_tokens, row.cost_usd, row.session,
    ))  # fmt: skip


def _in_one_transaction(
    db: sqlite3.Connection, ops: list[Callable[[sqlite3.Connection], Any]]
) -> list[Any]:
    with _transaction(db, "BEGIN IMMEDIATE"):
        return [op(db) for op in ops]


def _insert_all(db: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    with _transaction(db, "BEGIN"):  # one transaction (one commit) for the whole batch
        db.executemany(sql, rows)


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection, begin: str) -> Iterator[None]:
    """``begin`` (``BEGIN``, or ``BEGIN IMMEDIATE`` to take the write lock before a read),
    then COMMIT, or ROLLBACK when the block raises (what it raised is raised)."""
    db.execute(begin)
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


_COLUMNS = "id, digest, team, user, name, models, created_at, expires_at, revoked_at, metadata"


def _record(row: tuple[Any, ...]) -> KeyRecord:
    return KeyRecord(
        id=row[0], digest=row[1], team=row[2], user=row[3], name=row[4],
        models=tuple(orjson.loads(row[5])), created_at=row[6], expires_at=row[7],
        revoked_at=row[8], metadata=dict(orjson.loads(row[9])),
    )  # fmt: skip
