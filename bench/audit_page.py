"""How the admin UI's audit search scales: 100,000 records in the SQLite store, the time of
the first page, a page 50,000 records deep (keyset paging), and filtered searches (by
session, a policy decision, an MCP tool, and two that match nothing: an
indexed field, and a decision, which reads every record), each as a ratio to
reading the first page, in one run.

Run: ``python -m bench.audit_page [--records 100000]`` (from the repository root).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

import orjson

from hookgate.store.audit_query import AuditQuery
from hookgate.store.base import AuditRecord
from hookgate.store.sqlite import SQLiteStore


def _record(i: int, start: float, rng: random.Random) -> AuditRecord:
    mcp = rng.random() < 0.1
    return AuditRecord(
        ts=start + i * 0.05, request_id=f"req-{i}",
        api="mcp.tools/call" if mcp else "chat.completions",
        model=rng.choice(["search_docs", "send_email"]) if mcp else "gpt-4o-mini",
        target="mcp/mail" if mcp else "openai/gpt-4o-mini", status=rng.choice([200] * 9 + [429]),
        latency_ms=12.0, key_id=f"hgk_{rng.randrange(50):04d}", team=f"team-{rng.randrange(8)}",
        session=f"sess-{rng.randrange(5000)}",
        decisions=orjson.dumps({"pii": rng.choice(["allow", "modify"])}).decode(),
    )  # fmt: skip


async def _timed(store: SQLiteStore, query: AuditQuery, runs: int = 20) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await store.audit_page(query)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def main(records: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = SQLiteStore(f"sqlite:///{Path(directory) / 'audit.db'}")
        await store.open()
        rng = random.Random(35)
        start = time.time() - records * 0.05
        for i in range(records):
            store.submit_audit(_record(i, start, rng))
        first = await store.audit_page(AuditQuery(limit=50))  # drains the writes
        cursor = first.next
        for _ in range(999):  # 50,000 records deep
            page = await store.audit_page(AuditQuery(limit=50, cursor=cursor))
            cursor = page.next
        cases = {
            "first page": AuditQuery(limit=50),
            "page 1,000 (50,000 deep)": AuditQuery(limit=50, cursor=cursor),
            "by session": AuditQuery(session="sess-42", limit=50),
            "decision pii=modify": AuditQuery(decision="pii=modify", limit=50),
            "MCP tool send_email": AuditQuery(tool="send_email", limit=50),
            "team matching nothing": AuditQuery(team="nobody", limit=50),
            "decision matching nothing": AuditQuery(decision="tool_guard=block", limit=50),
        }
        base = await _timed(store, cases["first page"])
        print(f"{records:,} audit records (SQLite); median of 20 reads of one page of 50")
        for name, query in cases.items():
            took = await _timed(store, query)
            print(f"  {name:<28} {took * 1000:8.2f} ms  {took / base:6.2f}x the first page")
        await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    asyncio.run(main(parser.parse_args().records))
