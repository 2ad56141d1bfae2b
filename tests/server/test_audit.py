"""The audit log: one record per request, no prompt or secret in it, exported as JSONL."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from hookgate.config.loader import load_text
from hookgate.store.base import AuditRecord
from hookgate.store.sqlite import SQLiteStore
from tests.conftest import ProxyFactory, config_text
from tests.fakes import FakeUpstream, Status

SECRET_PROMPT = "my card is 4111 1111 1111 1111"


def test_every_request_is_recorded_without_content(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    db = tmp_path / "audit.db"
    config = tmp_path / "hookgate.yaml"
    text = config_text(
        upstream.base_url,
        f"store: 'sqlite:///{db}'\npricing: {{m: {{input: 1.0, output: 2.0}}}}\n"
        "policies:\n  - tests.policies_for_tests:BlockWord: {word: forbidden}\n",
    )
    config.write_text(text)
    url = make_proxy(loaded=load_text(text))
    question = [{"role": "user", "content": SECRET_PROMPT}]
    headers = {
        "x-hookgate-agent": "planner",
        "x-hookgate-session-id": "s1",
        "x-hookgate-reply-id": "r1",
    }
    with openai.OpenAI(
        base_url=url, api_key="sk-client-secret", max_retries=0, default_headers=headers
    ) as c:
        c.chat.completions.create(model="m", messages=question)  # type: ignore[arg-type]
        list(c.chat.completions.create(model="m", messages=question, stream=True,  # type: ignore[arg-type]
                                       stream_options={"include_usage": True}))  # fmt: skip
        upstream.push(Status(500, {"error": {"message": "boom"}}))
        with pytest.raises(openai.InternalServerError):
            c.chat.completions.create(model="m", messages=question)  # type: ignore[arg-type]
        with pytest.raises(openai.BadRequestError):
            c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "forbidden"}]
            )

    command = [
        sys.executable,
        "-m",
        "hookgate",
        "audit",
        "export",
        "--since",
        "1h",
        "--config",
        str(config),
    ]
    exported = subprocess.run(
        command, capture_output=True, text=True, timeout=30, check=True
    ).stdout
    records = [json.loads(line) for line in exported.splitlines()]
    assert [r["status"] for r in records] == [200, 200, 500, 400]
    ok = records[0]
    assert (ok["agent"], ok["session"], ok["reply"], ok["key_id"]) == (
        "planner",
        "s1",
        "r1",
        "anonymous",
    )
    assert (ok["input_tokens"], ok["output_tokens"], ok["target"]) == (10, 5, "up/m")
    assert ok["cost_usd"] == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)
    assert json.loads(ok["decisions"]) == {"block_word": "allow"}
    assert records[1]["output_tokens"] == 5  # the stream's usage
    assert records[2]["error"] == "http_500" and records[2]["cost_usd"] is None
    assert json.loads(records[3]["decisions"]) == {"block_word": "block"}
    assert all(r["latency_ms"] > 0 for r in records)
    assert "4111" not in exported and "sk-client-secret" not in exported


async def test_group_commit_and_retention(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'a.db'}")
    now = time.time()

    def record(i: int, ts: float) -> AuditRecord:
        return AuditRecord(ts=ts, request_id=f"r{i}", api="chat.completions", model="m", status=200,
                           latency_ms=1.0)  # fmt: skip

    await asyncio.gather(
        *[store.write_audit(record(i, now - (i % 2) * 86400 * 10)) for i in range(200)]
    )
    assert len(await store.audit_records(0)) == 200
    assert await store.prune_audit(now - 86400) == 100
    assert len(await store.audit_records(0)) == 100
    await store.close()


async def test_an_older_audit_table_gains_the_findings_column(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:  # the audit table as first shipped
        db.execute(
            "CREATE TABLE audit (id INTEGER PRIMARY KEY, ts REAL NOT NULL, request_id TEXT NOT"
            " NULL, api TEXT NOT NULL, model TEXT NOT NULL, status INTEGER NOT NULL, latency_ms"
            " REAL NOT NULL, target TEXT, error TEXT, key_id TEXT, team TEXT, user TEXT, agent"
            " TEXT, session TEXT, reply TEXT, input_tokens INTEGER NOT NULL, output_tokens"
            " INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT"
            " NULL, cost_usd REAL, attempts INTEGER NOT NULL, decisions TEXT NOT NULL)"
        )
        db.execute(
            "INSERT INTO audit (ts, request_id, api, model, status, latency_ms, input_tokens,"
            " output_tokens, cached_tokens, reasoning_tokens, attempts, decisions)"
            " VALUES (1, 'old', 'chat.completions', 'm', 200, 1, 0, 0, 0, 0, 1, '{}')"
        )
    store = SQLiteStore(f"sqlite:///{path}")
    await store.write_audit(
        AuditRecord(ts=time.time(), request_id="new", api="chat.completions", model="m",
                    status=200, latency_ms=1.0, findings='{"PERSON:pseudonymize": 2}')
    )  # fmt: skip
    records = await store.audit_records(0)
    await store.close()
    assert [(r["request_id"], r["findings"]) for r in records] == [
        ("old", "{}"),
        ("new", '{"PERSON:pseudonymize": 2}'),
    ]
