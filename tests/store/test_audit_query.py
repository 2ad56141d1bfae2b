"""The audit log's search (``Store.audit_page``): the same answers from SQLite and Redis
as a plain filter of the records written, a page at a time, newest first; and keyset
paging that reads deep pages of 100,000 records as fast as the first (measured in
``bench/``; here: it reads the right records)."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from hookgate.store.audit_query import AuditQuery
from hookgate.store.base import AuditRecord, Store
from hookgate.store.redis import RedisStore
from hookgate.store.sqlite import SQLiteStore, audit_where
from tests.services import RedisServer

TEAMS = ["search", "payments", None]
SESSIONS = ["s-1", "s-2", "s-3", None]
STATUSES = [200, 200, 200, 400, 429, 502]
DECISIONS = [{}, {"pii": "modify"}, {"tool_guard": "block"}, {"pii": "allow", "budget": "allow"}]


def records(count: int, seed: int) -> list[AuditRecord]:
    """``count`` varied records, oldest first (as the log is written)."""
    rng = random.Random(seed)
    start = time.time() - count * 3.0
    out = []
    for i in range(count):
        mcp = rng.random() < 0.2
        tool = rng.choice(["search_docs", "send_email"])
        out.append(AuditRecord(
            ts=start + i * 3.0, request_id=f"r{i}",
            api="mcp.tools/call" if mcp else "chat.completions",
            model=tool if mcp else rng.choice(["gpt-a", "gpt-b"]),
            target=f"mcp/{rng.choice(['docs', 'mail'])}" if mcp else "up/gpt-a",
            status=rng.choice(STATUSES), latency_ms=1.0, team=rng.choice(TEAMS),
            key_id=rng.choice(["hgk_a", "hgk_b", None]), session=rng.choice(SESSIONS),
            agent=rng.choice(["planner", None]),
            decisions=orjson.dumps(rng.choice(DECISIONS)).decode(),
        ))  # fmt: skip
    return out


QUERIES: list[dict[str, Any]] = [
    {},
    {"session": "s-2"},
    {"team": "payments", "status": "error"},
    {"status": "ok", "key_id": "hgk_a"},
    {"status": "429"},
    {"decision": "pii"},
    {"decision": "tool_guard=block"},
    {"decision": "pii=modify", "session": "s-1"},
    {"mcp_server": "mail"},
    {"tool": "send_email", "status": "ok"},
    {"mcp_server": "docs", "tool": "search_docs", "team": "search"},
    {"agent": "planner", "model": "gpt-b"},
    {"session": "nobody"},
]


def expected(written: list[AuditRecord], query: AuditQuery) -> list[str]:
    """The request ids a query selects, newest first, by a plain filter."""
    rows = [{name: getattr(r, name) for name in AuditRecord.__slots__} for r in written]
    return [row["request_id"] for row in reversed(rows) if query.matches(row)]


async def read_all(store: Store, query: AuditQuery) -> tuple[list[str], int]:
    """Every page of ``query``: the request ids in order, and how many pages it took."""
    ids, pages, cursor = [], 0, None
    while True:
        page = await store.audit_page(query.model_copy(update={"cursor": cursor}))
        pages += 1
        assert len(page.records) <= query.limit
        ids += [r["request_id"] for r in page.records]
        if page.next is None:
            return ids, pages
        assert len(page.records) == query.limit  # only a full page has a next one
        cursor = page.next


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        yield SQLiteStore(f"sqlite:///{tmp_path / 'audit.db'}")
        return
    server = RedisServer(tmp_path)
    try:
        yield RedisStore(server.url)
    finally:
        server.stop()


def test_every_filter_pages_through_exactly_what_a_plain_filter_selects(store: Store) -> None:
    written = records(700, seed=35)

    async def check() -> None:
        await store.open()
        try:
            for record in written:  # in order: Redis orders the log by arrival
                await store.write_audit(record)
            for spec in QUERIES:
                for limit in (7, 50):
                    query = AuditQuery.model_validate({**spec, "limit": limit})
                    want = expected(written, query)
                    got, pages = await read_all(store, query)
                    assert got == want, spec
                    assert pages == max(1, -(-len(want) // limit))  # no empty last page
            window = AuditQuery(since=written[400].ts, until=written[600].ts)
            assert (await read_all(store, window))[0] == expected(written, window)
            assert await store.audit_counts(written[-60].ts) == (
                sum(1 for r in written[-60:]),
                sum(1 for r in written[-60:] if r.status >= 400),
            )
        finally:
            await store.close()

    asyncio.run(check())


@pytest.mark.parametrize(
    "bad",
    [{"status": "fine"}, {"decision": "pii=maybe"}, {"decision": "a b"}, {"cursor": "nope"},
     {"limit": 0}, {"limit": 501}, {"session": ""}, {"colour": "red"}],
)  # fmt: skip
def test_a_query_that_is_not_one_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        AuditQuery.model_validate(bad)


def test_sqlite_filters_by_key_team_and_session_are_served_by_partial_indexes(
    tmp_path: Path,
) -> None:
    """A database from before the partial indexes loses its full ones when a store opens it,
    and each filter's query still searches an index (no scan of the log)."""
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE audit (id INTEGER PRIMARY KEY, ts REAL NOT NULL, session TEXT,"
        " key_id TEXT, team TEXT);"
        "CREATE INDEX audit_session ON audit (session, ts);"
        "CREATE INDEX audit_key ON audit (key_id, ts);"
        "CREATE INDEX audit_team ON audit (team, ts);"
    )
    old.close()
    store = SQLiteStore(f"sqlite:///{path}")

    async def open_and_close() -> None:
        await store.open()
        await store.close()

    asyncio.run(open_and_close())
    db = sqlite3.connect(path)
    indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"audit_key_set", "audit_team_set", "audit_session_set"} <= indexes
    assert not {"audit_key", "audit_team", "audit_session"} & indexes
    partial = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE name LIKE '%_set'"))
    assert all(sql.endswith("IS NOT NULL") for sql in partial.values()), partial
    for field, index in (("key_id", "audit_key_set"), ("team", "audit_team_set"),
                         ("session", "audit_session_set")):  # fmt: skip
        where, args = audit_where(AuditQuery.model_validate({field: "x"}))
        plan = " ".join(
            row[3]
            for row in db.execute(
                f"EXPLAIN QUERY PLAN SELECT id FROM audit WHERE {' AND '.join(where)}"
                " ORDER BY ts DESC, id DESC LIMIT 50",
                args,
            )
        )
        assert f"INDEX {index}" in plan and "SCAN" not in plan, plan
    db.close()
