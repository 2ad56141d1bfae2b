"""kill -9 during load: settled spend survives, and limits hold after the restart."""

from __future__ import annotations

import asyncio
import shutil
import signal
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import openai

from hookgate.budgets.ledger import UsageRow
from hookgate.store.sqlite import CHECKPOINT_EVERY_S, SQLiteStore
from tests.conftest import config_text
from tests.fakes import FakeUpstream, start_serve
from tests.spend import PER_REQUEST_USD, PRICE, settled
from tests.waits import eventually_async


def test_kill_9_loses_no_settled_spend(tmp_path: Path, upstream: FakeUpstream) -> None:
    db = tmp_path / "spend.db"
    config = tmp_path / "hookgate.yaml"
    config.write_text(config_text(
        upstream.base_url,
        f"store: 'sqlite:///{db}'\n{PRICE}server: {{reload: false}}\n"
        "policies:\n  - budget: {limits: [{scope: model, usd: 0.6}]}\n",
        models='  "*": [{provider: up, model: fixed-model}]',
    ))  # fmt: skip
    upstream.stream_delay = 0.02  # streams take ~0.2 s: many are in flight at the kill
    process, url, _ = start_serve("--config", str(config))
    completed: list[int] = []
    question = [{"role": "user", "content": "Please answer this question briefly."}]

    def client_loop() -> None:
        with openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0) as client:
            while True:
                try:
                    stream = client.chat.completions.create(
                        model="m",
                        messages=question,
                        max_tokens=5,
                        stream=True,  # type: ignore[arg-type]
                    )
                    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
                except (openai.APIError, openai.APIConnectionError):
                    return
                if text:
                    completed.append(1)

    threads = [threading.Thread(target=client_loop) for _ in range(8)]
    for thread in threads:
        thread.start()
    while len(completed) < 15:
        threading.Event().wait(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    for thread in threads:
        thread.join(10)
    assert process.stderr is not None
    process.stderr.close()
    usd, count = settled(db)
    assert count >= len(completed), "a response completed without its spend being settled"
    assert count <= len(upstream.requests)

    # restart: the limit still holds against the spend settled before the crash
    upstream.stream_delay = 0
    process, url, _ = start_serve("--config", str(config))
    try:
        with openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0) as client:
            for _ in range(60):
                try:
                    client.chat.completions.create(model="m", messages=question, max_tokens=5)  # type: ignore[arg-type]
                except openai.RateLimitError:
                    break
        final, _ = settled(db)
        assert usd <= final <= 0.6 + 1e-9
        assert final >= 0.6 - 2 * PER_REQUEST_USD
    finally:
        process.terminate()
        process.wait(10)
        assert process.stderr is not None
        process.stderr.close()


async def test_committed_rows_reach_the_database_file_without_a_close(tmp_path: Path) -> None:
    """SQLite's own checkpoint is off (it would run inside a request's commit); the store's
    checkpoint thread moves committed rows from the WAL into the database file."""
    store = SQLiteStore(f"sqlite:///{tmp_path / 'hookgate.db'}")
    rows = [UsageRow(time.time(), f"r{i}", "m", 10, 5, 0.01) for i in range(20)]
    await asyncio.gather(*(store.record_usage(row) for row in rows))  # one group commit or more

    def in_the_file() -> bool:
        shutil.copy(tmp_path / "hookgate.db", tmp_path / "copy.db")  # the file alone, no WAL
        with closing(sqlite3.connect(tmp_path / "copy.db")) as copy:
            try:
                return bool(copy.execute("SELECT COUNT(*) FROM usage").fetchone() == (20,))
            except sqlite3.OperationalError:  # not even the table has reached the file yet
                return False

    await eventually_async(in_the_file, within_s=CHECKPOINT_EVERY_S * 10)
    await store.close()


async def test_a_row_the_database_refuses_fails_its_batch_and_hangs_no_one(
    tmp_path: Path,
) -> None:
    """Once, a value sqlite3 cannot bind (a lone surrogate) raised out of the group commit:
    every request waiting on that batch hung, and the writer was dead for the next ones."""
    from hookgate.errors import StoreUnavailable

    store = SQLiteStore(f"sqlite:///{tmp_path / 'hookgate.db'}")
    bad = UsageRow(time.time(), "bad", "m", 10, 5, 0.01, agent="\udcff")
    good = [UsageRow(time.time(), f"r{i}", "m", 10, 5, 0.01) for i in range(5)]
    results = await asyncio.wait_for(
        asyncio.gather(*(store.record_usage(r) for r in [bad, *good]), return_exceptions=True),
        5,
    )
    assert all(isinstance(r, StoreUnavailable) for r in results)  # the batch failed, loudly
    await asyncio.wait_for(store.record_usage(good[0]), 5)  # and the writer goes on
    assert settled(tmp_path / "hookgate.db")[1] == 1
    await store.close()
