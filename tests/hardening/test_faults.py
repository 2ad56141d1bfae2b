"""Upstream faults under concurrency, and clients that leave: nothing hangs past its
deadline, and nothing leaks — no task, no socket, no budget reservation.

Three storms of the same mixed faults run through one proxy (fallback with short timeouts,
a budget on every request); a leak grows with every storm, so the last storm must leave
the counts where the first left them. Keep-alive pools are not leaks, yet they grow from
storm to storm (a cancelled attempt's connection is replaced), so what is counted is what
they do not explain: tasks other than idle keep-alive connections, and sockets beyond the
two ends of each such connection (the proxy, the fake upstream and the clients all live in
this process).
Reservations are measured exactly: a request's ``x-hookgate-budget-remaining-usd`` is the
limit minus settled spend minus reservations held (its own included), so the same request
before and after the storms shows any reservation left behind, once the spend settled in
between (read from the store) is accounted for.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import openai
import pytest
from aiohttp.web_protocol import RequestHandler

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import ProxyFactory, config_text, openai_client
from tests.fakes import Events, FakeUpstream, Hang, LoopThread, Raw, Reset, Status, Step

DEADLINE_S = 1.5
STORMS = 3
REQUESTS_PER_STORM = 160
CONCURRENCY = 32
ERROR = {"error": {"message": "overloaded", "type": "server_error", "param": None, "code": None}}


def _faults(rng: random.Random) -> list[Step]:
    reply = synth.Reply(text="all good here", pieces=4, id="ok")
    chunks = list(synth.chat_stream("m", reply, include_usage=True))
    kinds: list[Step] = [
        Status(503, ERROR),
        Status(429, ERROR, {"retry-after": "0"}),
        Status(500, ERROR),
        Raw(b"this is not json"),
        Raw(b"<html>bad gateway</html>", content_type="text/html", status=502),
        Reset(),
        Hang(),
        Events(chunks[:2], end="eof"),  # cut before its end
        Events(chunks[:2], end="hang"),  # stalls mid-stream
        Events(chunks, delay=0.01),  # slow but whole
        reply,
        reply,
    ]
    return [rng.choice(kinds) for _ in range(REQUESTS_PER_STORM * 3)]  # retries take more


def _sockets() -> int:
    fds = Path("/proc/self/fd")
    count = 0
    for fd in fds.iterdir():
        try:
            count += os.readlink(fd).startswith("socket:")
        except OSError:
            continue
    return count


def _held(loop_thread: LoopThread) -> tuple[int, int]:
    """``(tasks, sockets)`` not explained by idle keep-alive connections."""

    async def count() -> tuple[int, int]:
        idle = busy = 0
        for task in asyncio.all_tasks():
            # aiohttp's task of a server connection: idle while it waits for the next
            # request (its protocol then holds the future it waits on as ``_waiter``)
            frame = getattr(task.get_coro(), "cr_frame", None)
            handler = frame.f_locals.get("self") if frame is not None else None
            if isinstance(handler, RequestHandler) and handler._waiter is not None:
                idle += 1
            else:
                busy += 1
        return idle, busy

    idle, busy = loop_thread.run(count())
    return busy, _sockets() - 2 * idle


def _storm(clients: list[openai.OpenAI], rng: random.Random) -> list[float]:
    """Run the storm's requests from one thread per client; the time each took. The
    clients live across storms, so their keep-alive connections are reused, not added."""
    durations: list[float] = []
    todo = list(range(REQUESTS_PER_STORM))
    lock = threading.Lock()

    def worker(client: openai.OpenAI) -> None:
        while True:
            with lock:
                if not todo:
                    return
                todo.pop()
                stream, leave_early = rng.random() < 0.5, rng.random() < 0.25
            started = time.monotonic()
            try:
                if stream:
                    # closed however it ends: a stream the SDK raised from mid-way and left
                    # open was a socket the garbage collector found unclosed (a flaky failure)
                    with client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                    ) as events:
                        for n, _ in enumerate(events):
                            if leave_early and n == 0:
                                break  # the client goes away mid-stream
                else:
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "hi"}]
                    )
            except openai.APIStatusError as exc:
                assert exc.status_code in (429, 500, 502, 503, 504), exc
                assert isinstance(exc.body, dict) and exc.body.get("message")
            except openai.APIError:
                pass  # an error event mid-stream, raised by the SDK as the proxy intends
            with lock:
                durations.append(time.monotonic() - started)

    threads = [threading.Thread(target=worker, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return durations


def _remaining(url: str) -> float:
    reply = openai_client(url).chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=50
    )
    return float(reply.headers["x-hookgate-budget-remaining-usd"])


def _settled(db: Path) -> float:
    with closing(sqlite3.connect(db)) as conn:
        return float(conn.execute("SELECT COALESCE(SUM(cost_usd), 0) FROM usage").fetchone()[0])


@pytest.mark.slow
def test_fault_storms_leak_nothing_and_end_in_time(
    make_proxy: ProxyFactory, upstream: FakeUpstream, loop_thread: LoopThread, tmp_path: Path
) -> None:
    db = tmp_path / "faults.db"
    url = make_proxy(loaded=load_text(config_text(
        upstream.base_url,
        f"store: 'sqlite:///{db}'\n"
        "pricing: {m: {input: 1.0, output: 2.0}}\n"
        "policies:\n"
        "  - budget: {limits: [{scope: model, usd: 1000}]}\n"
        f"  - fallback: {{retries: 1, backoff_base_s: 0.01, attempt_timeout_s: 0.4,"
        " first_token_timeout_s: 0.4,"
        f" stall_timeout_s: 0.3, deadline_s: {DEADLINE_S},"
        " circuit: {failures: 1000000, min_requests: 1000000}}\n",  # always try: more faults
    )))  # fmt: skip
    rng = random.Random(9)
    before = _remaining(url)
    settled_before = _settled(db)
    counts = []
    clients = [openai_client(url, timeout=30) for _ in range(CONCURRENCY)]
    for _ in range(STORMS):
        upstream.push(*_faults(rng))
        durations = _storm(clients, rng)
        assert len(durations) == REQUESTS_PER_STORM
        # the deadline bounds every request (plus the time to write an error, and slack
        # for 32 threads of the client on a shared machine)
        assert max(durations) < DEADLINE_S + 3, sorted(durations)[-5:]
        upstream.script.clear()
        time.sleep(1.0)  # cancelled upstream calls and stream clean-ups finish
        counts.append(_held(loop_thread))
    # a leaked upstream call is a task and two sockets, and each storm would add several;
    # a request still finishing as the count is taken may add one
    (tasks_1, sockets_1), (tasks_n, sockets_n) = counts[0], counts[-1]
    assert tasks_n <= tasks_1 + 1, counts
    assert sockets_n <= sockets_1 + 2, counts
    after = _remaining(url)
    leaked = (before - after) - (_settled(db) - settled_before)
    # ``after`` also settled ``before``'s request; the remainder is reservations held
    assert abs(leaked) < 1e-6, f"{leaked:.6f} USD of reservations were never released"
