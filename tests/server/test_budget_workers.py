"""A $0.10 budget under 200 concurrent requests across the two workers of ``hookgate serve
--workers 2``, one of them killed with ``kill -9`` mid-load (the parent replaces it): never
overspent, the spend report equals the ledger, and the dead worker's reservations stop
blocking the budget (at once on SQLite, once its lease runs out on Redis). On SQLite (the
embedded default: the workers share the file's ledger) and on a real ``redis-server``.
Also: a rate limit is one count across processes sharing a file (``?shared=true``, the
workers' limiter), and a second, separate ``hookgate serve`` that would keep a file's
budgets in its own memory is refused.

Which worker served a call is told by the ``WhoServes`` test policy (its pid).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import httpx
import pytest
import redis

from hookgate.store.redis_owners import LEASE_S
from tests.conftest import config_text
from tests.fakes import FakeUpstream, start_serve
from tests.services import RedisServer

pytestmark = pytest.mark.slow

BUDGET_USD = 0.10
ADMIN_KEY = "keys: {admin_key: admin-key-for-tests-0123456789}\n"
PRICE = "pricing: {fixed-model: {input: 50.0, output: 50.0}}\n"
"""$0.00005 a token: a served request (10 + 5 tokens, as the fake upstream reports) costs
$0.00075, its worst case (the prompt's estimate plus max_tokens 5) about twice that; the
budget pays for about 133 of the 200."""
PER_REQUEST_USD = 15 * 0.00005
KILL_AT_STREAM = 10
"""A worker is killed when this many streams have started there."""


@dataclass
class Processes:
    """Separate ``hookgate serve`` processes on one config: ``urls[i]`` reaches
    ``pids[i]``."""

    urls: list[str]
    pids: list[int]
    processes: list[subprocess.Popen[str]]
    logs: list[str] = field(default_factory=list)
    """What each process logged after it started (filled by :meth:`stop`)."""

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
            process.wait(15)
            assert process.stderr is not None
            self.logs.append(process.stderr.read())
            process.stderr.close()


@contextmanager
def serve_processes(config: Path, count: int = 2) -> Iterator[Processes]:
    """``count`` separate ``hookgate serve`` processes on ``config``."""
    started = [start_serve("--config", str(config)) for _ in range(count)]
    processes = Processes([url for _, url, _ in started], [p.pid for p, _, _ in started],
                          [p for p, _, _ in started])  # fmt: skip
    try:
        yield processes
    finally:
        processes.stop()


@dataclass
class Workers:
    """``hookgate serve --workers N``: one URL, the parent, and what it (and its workers)
    logged (until it listened; the rest is added by :meth:`stop`)."""

    url: str
    process: subprocess.Popen[str]
    log: str = ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(30)
        assert self.process.stderr is not None
        self.log += self.process.stderr.read()
        self.process.stderr.close()


@contextmanager
def serve_workers(
    config: Path, count: int = 2, env: dict[str, str] | None = None
) -> Iterator[Workers]:
    """``hookgate serve --workers count`` on ``config``."""
    process, url, lines = start_serve("--config", str(config), "--workers", str(count), env=env)
    workers = Workers(url, process, "".join(lines))
    try:
        yield workers
    finally:
        workers.stop()


BUDGETED = (
    "  - tests.policies_for_tests:WhoServes: {label: budget}\n"
    f"  - budget: {{limits: [{{scope: model, usd: {BUDGET_USD}}}]}}\n"
)
"""The stress tests' policies: the budget, and which worker served (a response header)."""
ANY_MODEL_AS_FIXED = '  "*": [{provider: up, model: fixed-model}]'
"""Every model name served as ``fixed-model``, the one :data:`PRICE` prices."""


def write_config(
    tmp_path: Path, upstream: FakeUpstream, store: str, policies: str, *, extra: str = "",
    models: str | None = ANY_MODEL_AS_FIXED,
) -> Path:  # fmt: skip
    """``hookgate.yaml`` in ``tmp_path``: ``store``, the price table, reload off, ``extra``
    and ``policies`` (the list's items)."""
    path = tmp_path / "hookgate.yaml"
    path.write_text(
        config_text(
            upstream.base_url,
            f"store: '{store}'\n{PRICE}server: {{reload: false}}\n{extra}policies:\n{policies}",
            models=models,
        )
    )
    return path


@dataclass
class Outcome:
    served: int = 0
    exhausted: int = 0
    gave_up: int = 0
    killed_at: float = 0.0
    last_served_at: float = 0.0
    """When the worker was killed, and when the last response completed (monotonic)."""


async def load(workers: Workers, deadline_s: float) -> Outcome:
    """200 concurrent requests (half streamed) to the workers' one listener; a busy refusal
    (``Retry-After``: reservations in flight fill the budget) is retried, as a client
    honouring it would, and so is a call cut by the kill. The first worker where
    ``KILL_AT_STREAM`` streams have started gets SIGKILL as the last of them starts (so its
    reservation, and the upstream call, are left in flight). Not the worker that served
    the first stream: the workers accept from one socket, and on a busy machine the one
    awake first may take nearly every connection, leaving the other too few streams."""
    outcome = Outcome()
    killed = asyncio.Event()
    stop_at = time.monotonic() + deadline_s
    streams: collections.Counter[int] = collections.Counter()  # started, by worker pid

    def started(pid: int) -> None:
        streams[pid] += 1
        if streams[pid] == KILL_AT_STREAM and not killed.is_set():
            killed.set()
            os.kill(pid, signal.SIGKILL)
            outcome.killed_at = time.monotonic()

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as client:

        async def one(i: int) -> None:
            body = {
                "model": "m",
                "max_tokens": 5,
                "stream": i // 2 % 2 == 0,
                "messages": [{"role": "user", "content": f"Question {i}: answer it briefly."}],
            }
            while time.monotonic() < stop_at:
                url = f"{workers.url}/v1/chat/completions"
                try:
                    async with client.post(url, json=body) as response:
                        status, headers = response.status, response.headers
                        pid = int(headers.get("x-hookgate-test-pid", "0"))
                        text = ""
                        async for chunk in response.content.iter_any():
                            if not text and body["stream"] and status == 200:
                                started(pid)
                            text += chunk.decode()
                except aiohttp.ClientError:  # the killed worker's connection: again
                    continue
                if status == 429:
                    if "retry-after" not in headers:
                        outcome.exhausted += 1
                        return
                    await asyncio.sleep(random.uniform(0.05, 0.3))  # clients drift apart
                    continue
                if status == 200 and (not body["stream"] or text.rstrip().endswith("data: [DONE]")):
                    outcome.served += 1
                    outcome.last_served_at = time.monotonic()
                    return
                # a stream cut by the kill, or the worker died under it: again
            outcome.gave_up += 1

        await asyncio.gather(*(one(i) for i in range(200)))
    assert killed.is_set(), "the load ended before a worker was killed"
    return outcome


def spend_report(config: Path) -> dict[str, float]:
    """``hookgate spend --by model --json``: the one group, ``m``."""
    out = subprocess.run(
        [sys.executable, "-m", "hookgate", "spend", "--by", "model", "--json", "--config",
         str(config)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line["model"] for line in lines] == ["m"], lines
    return dict(lines[0])


def spend_the_rest(workers: Workers) -> httpx.Response:
    """Ask one at a time until refused: the workers serve what is left of the budget (a
    request's worth at most), then refuse; the refusal."""
    last = {
        "model": "m",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "Question 200: answer it briefly."}],
    }
    for _ in range(10):
        final = httpx.post(f"{workers.url}/v1/chat/completions", json=last, timeout=10)
        if final.status_code != 200:
            break
    return final


def check_the_ledger(
    usd: float,
    tokens: int,
    rows: int,
    counted: float,
    outcome: Outcome,
    upstream: FakeUpstream,
    config: Path,
) -> None:
    """What holds on every store: the budget was never overspent (the usage rows, and the
    ledger's counter, which equals them), every completed response was settled, the kill
    cut calls in flight (their reservations were left behind), and ``hookgate spend``
    reports exactly the ledger."""
    assert usd <= BUDGET_USD + 1e-9, f"overspent: ${usd}"
    assert counted == pytest.approx(usd, abs=1e-9)
    assert rows >= outcome.served, "a response completed without its spend being settled"
    assert rows < len(upstream.requests), "the kill cut no call in flight: it proved nothing"
    report = spend_report(config)
    assert report["usd"] == round(usd, 9) and report["tokens"] == tokens, report


def test_two_sqlite_workers_one_killed_never_overspend(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    db = tmp_path / "hookgate.db"
    config = write_config(tmp_path, upstream, f"sqlite:///{db}", BUDGETED, extra=ADMIN_KEY)
    upstream.stream_delay = 0.05  # streams take ~0.3 s: many are in flight at the kill
    with serve_workers(config) as workers:
        outcome = asyncio.run(load(workers, deadline_s=60))
        final = spend_the_rest(workers)
    with closing(sqlite3.connect(db)) as connection:
        usd, tokens, rows = connection.execute(
            "SELECT SUM(cost_usd), SUM(input_tokens + output_tokens), COUNT(*) FROM usage"
        ).fetchone()
        (counted,) = connection.execute(
            "SELECT used_usd FROM budget_counters WHERE key LIKE 'model=m|total|%'"
        ).fetchone()
        holds = connection.execute("SELECT COUNT(*) FROM budget_holds").fetchone()[0]
    check_the_ledger(usd, tokens, rows, counted, outcome, upstream, config)
    # the killed worker's reservations were released when they stood in the way: every
    # client got an answer, the workers spent the budget to within one request, and then
    # refused it as spent, not busy
    assert "was killed by SIGKILL: starting a new one" in workers.log
    assert "released the reservations of 1 stopped processes" in workers.log
    assert outcome.gave_up == 0, outcome
    assert usd > BUDGET_USD - 2 * PER_REQUEST_USD
    assert final.status_code == 429 and "retry-after" not in final.headers, final.text
    assert "has spent" in final.json()["error"]["message"]
    assert holds == 0  # the workers' (they have stopped) and the dead one's: none left


def test_two_redis_workers_one_killed_never_overspend(
    tmp_path: Path, upstream: FakeUpstream, redis_server: RedisServer
) -> None:
    config = write_config(tmp_path, upstream, redis_server.url, BUDGETED, extra=ADMIN_KEY)
    upstream.stream_delay = 0.05
    with serve_workers(config) as workers:
        outcome = asyncio.run(load(workers, deadline_s=60))
        final = spend_the_rest(workers)
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    with closing(client):
        entries = client.xrange("hg:usage")
        (counter,) = client.keys("hg:ctr:model=m|total|*")
        counted = float(client.hget(counter, "used_usd") or 0)
        held = client.keys("hg:res:*")
        owners = client.keys("hg:owner:*"), client.smembers("hg:owners")
    rows = [json.loads(fields["row"]) for _, fields in entries]
    usd = sum(row["cost_usd"] for row in rows)
    tokens = sum(row["input_tokens"] + row["output_tokens"] for row in rows)
    check_the_ledger(usd, tokens, len(rows), counted, outcome, upstream, config)
    # the killed worker's reservations were released once its lease ran out, when they
    # stood in the way: every client got an answer, the budget was spent to within one
    # request a few seconds after the kill, and then refused as spent, not busy
    assert "was killed by SIGKILL: starting a new one" in workers.log
    assert "released the reservations of 1 stopped processes" in workers.log
    assert outcome.gave_up == 0, outcome
    assert outcome.last_served_at - outcome.killed_at < LEASE_S + 5, outcome
    assert usd > BUDGET_USD - 2 * PER_REQUEST_USD
    assert final.status_code == 429 and "retry-after" not in final.headers, final.text
    assert "has spent" in final.json()["error"]["message"]
    assert held == []  # the dead worker's, released; the others', settled
    assert owners == ([], set())  # the workers stopped cleanly: leases given up


def test_a_second_process_keeping_budgets_alone_is_refused(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    """Two plain ``hookgate serve`` on one file would each allow the whole budget: the
    second refuses its budgeted requests, even with ``on_error: continue`` (which serves
    requests unchecked when the store is down), and serves once the first has stopped."""
    db = tmp_path / "one.db"
    config = write_config(
        tmp_path, upstream, f"sqlite:///{db}",
        f"  - budget: {{limits: [{{scope: model, usd: {BUDGET_USD}}}], on_error: continue}}\n",
    )  # fmt: skip
    ask = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi there."}]}
    with serve_processes(config) as workers:
        first, second = (f"{url}/v1/chat/completions" for url in workers.urls)
        assert httpx.post(first, json=ask, timeout=10).status_code == 200
        refused = httpx.post(second, json=ask, timeout=10)
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert error["code"] == "store_in_use"
        assert f"in use by process {workers.pids[0]}" in error["message"]
        assert "shared=true" in error["message"]
        workers.processes[0].terminate()
        workers.processes[0].wait(15)
        assert httpx.post(second, json=ask, timeout=10).status_code == 200


def test_a_rate_limit_is_one_count_across_sqlite_workers(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    config = write_config(
        tmp_path, upstream, f"sqlite:///{tmp_path / 'shared.db'}?shared=true",
        "  - rate_limit: {limits: [{scope: model, rpm: 10}]}\n", models=None,
    )  # fmt: skip
    ask = {"model": "m", "messages": [{"role": "user", "content": "Hi there."}]}

    async def burst(urls: list[str]) -> list[int]:
        async with aiohttp.ClientSession() as client:

            async def one(url: str) -> int:
                async with client.post(f"{url}/v1/chat/completions", json=ask) as response:
                    return response.status

            return await asyncio.gather(*(one(urls[i % 2]) for i in range(30)))

    # two processes with an address each (the workers of one listener are not told
    # apart by the kernel's choice): the same shared limiter as --workers, seen by both
    with serve_processes(config) as processes:
        statuses = asyncio.run(burst(processes.urls))
    assert sorted(statuses) == [200] * 10 + [429] * 20


def test_the_workers_say_once_that_spans_are_not_exported(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    """A message for the whole server is said once, not by the parent and every worker."""
    config = write_config(
        tmp_path, upstream, f"sqlite:///{tmp_path / 'one.db'}", "  - tracing: {}\n", models=None
    )
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    ask = {"model": "m", "messages": [{"role": "user", "content": "Hi there."}]}
    with serve_workers(config, env=env) as workers:
        for _ in range(4):
            response = httpx.post(f"{workers.url}/v1/chat/completions", json=ask, timeout=10)
            assert response.status_code == 200, response.text
    assert workers.log.count("listening on") == 1
    assert workers.log.count("tracing: no OTLP endpoint configured") == 1, workers.log
