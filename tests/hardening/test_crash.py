"""``kill -9`` during load, then a restart on the same store (SQLite, and Redis): keys,
revocations, settled spend and the audit log are intact.

What "intact" means follows docs/design.md: settled spend is written before a response
completes, so every completed response has its spend; audit records are group-committed
every 10 ms, so a crash may lose those of the last moments, never older ones.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import openai
import orjson
import pytest
import redis

from tests.conftest import config_text
from tests.fakes import FakeUpstream, start_serve
from tests.services import RedisServer
from tests.spend import PER_REQUEST_USD, PRICE

ADMIN = "admin-key-crash-7781"
AUDIT_WINDOW_S = 0.2
"""Completed more than this before the kill: its audit record must have been committed."""


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'crash.db'}"
        return
    redis = RedisServer(tmp_path)
    yield redis.url
    redis.stop()


def _admin(base: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    headers = {"authorization": f"Bearer {ADMIN}"}
    return httpx.request(method, f"{base}/admin{path}", headers=headers, timeout=10, **kwargs)  # type: ignore[arg-type]


def _kill_under_load(
    process: subprocess.Popen[str], url: str, key: str, *, clients: int, answers: int
) -> tuple[list[float], float]:
    """``clients`` threads send requests until ``answers`` completed, then ``kill -9``.

    Returns when each answer completed and when the proxy was killed (monotonic times)."""
    completed: list[float] = []
    stop = threading.Event()

    def load() -> None:
        with openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0) as client:
            while not stop.is_set():
                try:
                    client.chat.completions.create(model="m", messages=[], max_tokens=5)
                except (openai.APIError, openai.APIConnectionError):
                    return
                completed.append(time.monotonic())

    threads = [threading.Thread(target=load) for _ in range(clients)]
    for thread in threads:
        thread.start()
    while len(completed) < answers:
        time.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    process.wait(10)
    stop.set()
    for thread in threads:
        thread.join(10)
    assert process.stderr is not None
    process.stderr.close()
    return completed, killed


def budget_config(
    store: str, upstream: FakeUpstream, tmp_path: Path, keys: str, scope: str
) -> Path:
    """A config file serving from ``store`` with a $1000 budget per ``scope`` and an admin
    key (``keys`` adds settings of ``keys:``, e.g. ``required: true, ``)."""
    config = tmp_path / "hookgate.yaml"
    config.write_text(config_text(
        upstream.base_url,
        f"store: '{store}'\n{PRICE}server: {{reload: false}}\n"
        f"keys: {{{keys}admin_key: {ADMIN}}}\n"
        f"policies:\n  - budget: {{limits: [{{scope: {scope}, usd: 1000}}]}}\n",
        models='  "*": [{provider: up, model: fixed-model}]',
    ))  # fmt: skip
    return config


def test_kill_9_keeps_keys_spend_and_audit(
    store: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = budget_config(store, upstream, tmp_path, "required: true, ", "team")
    process, url, _ = start_serve("--config", str(config))
    keys = [_admin(url, "POST", "/keys", json={"team": "crash"}).json() for _ in range(2)]
    live, revoked = keys[0], keys[1]
    assert _admin(url, "DELETE", f"/keys/{revoked['id']}").status_code == 200

    completed, killed = _kill_under_load(process, url, live["key"], clients=8, answers=60)
    safe = sum(1 for t in completed if t < killed - AUDIT_WINDOW_S)

    process, url, _ = start_serve("--config", str(config))
    try:
        with openai.OpenAI(base_url=f"{url}/v1", api_key=live["key"], max_retries=0) as client:
            assert client.chat.completions.create(model="m", messages=[]).choices
            with pytest.raises(openai.AuthenticationError):
                openai.OpenAI(
                    base_url=f"{url}/v1", api_key=revoked["key"], max_retries=0
                ).chat.completions.create(model="m", messages=[])
        listed = {k["id"]: k for k in _admin(url, "GET", "/keys").json()["data"]}
        assert listed[live["id"]]["revoked_at"] is None
        assert listed[revoked["id"]]["revoked_at"] is not None
        spend = _admin(url, "GET", "/spend?by=key").json()["data"]
        audited = next(row["requests"] for row in spend if row["key"] == live["id"])
        # every response completed well before the kill is in the audit log (the one after
        # the restart is too); none is counted twice
        assert safe + 1 <= audited <= len(completed) + 8 + 1, (safe, audited, len(completed))
        if store.startswith("sqlite"):
            settled = _ledger_usd(store)[1]
            assert settled >= len(completed) + 1  # spend is settled before the response ends
    finally:
        process.terminate()
        process.wait(20)
        assert process.stderr is not None
        process.stderr.close()


def _ledger_usd(store: str) -> tuple[float, int]:
    """``(USD, records)`` the budget ledger holds, read from the store itself."""
    if store.startswith("sqlite"):
        with closing(sqlite3.connect(store.removeprefix("sqlite:///"))) as conn:
            usd, count = conn.execute("SELECT SUM(cost_usd), COUNT(*) FROM usage").fetchone()
        return float(usd), int(count)
    client = redis.Redis.from_url(store)
    try:
        rows = [orjson.loads(fields[b"row"]) for _, fields in client.xrange("hg:usage")]
    finally:
        client.close()
    return sum(float(r["cost_usd"]) for r in rows), len(rows)


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(3))
def test_spend_reports_agree_with_the_ledger_after_a_kill(
    store: str, upstream: FakeUpstream, tmp_path: Path, round_: int
) -> None:
    """A burst of settlements, ``kill -9`` in the middle of it, a restart: `hookgate spend`
    and `/admin/spend` report what the ledger charged, at least the answers delivered."""
    config = budget_config(store, upstream, tmp_path, "", "model")
    process, url, _ = start_serve("--config", str(config))
    completed, _ = _kill_under_load(process, url, "sk-any", clients=16, answers=40 + 20 * round_)
    delivered = len(completed) * PER_REQUEST_USD
    ledger, _ = _ledger_usd(store)
    assert ledger >= delivered - 1e-9  # spend is settled before an answer completes

    report = subprocess.run(
        [sys.executable, "-m", "hookgate", "spend", "--by", "model", "--json",
         "--config", str(config)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    reported = sum(orjson.loads(line)["usd"] for line in report.stdout.splitlines())
    assert reported == pytest.approx(ledger, abs=1e-9), (reported, ledger, delivered)

    process, url, _ = start_serve("--config", str(config))
    try:
        spend = _admin(url, "GET", "/spend?by=model").json()["data"]
        assert sum(row["usd"] for row in spend) == pytest.approx(ledger, abs=1e-9)
    finally:
        process.terminate()
        process.wait(20)
        assert process.stderr is not None
        process.stderr.close()
