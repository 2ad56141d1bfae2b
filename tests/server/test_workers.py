"""``hookgate serve --workers 2``: real processes on a real port, as a user runs them.

Which worker served a model call is told by the ``WhoServes`` test policy (its pid and
its config's label, as response headers); every request opens a new connection, so the
kernel hands it to whichever worker accepts first."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import pytest

from tests.conftest import config_text
from tests.fakes import FakeUpstream, start_serve
from tests.mcp_servers import McpServer
from tests.otlp import OtlpReceiver
from tests.server.test_mcp_approvals import PAUSE, decide, waiting
from tests.server.test_mcp_gateway import ADMIN, SERVER_TOKEN, new_key, session
from tests.ui_client import ADMIN_KEY, Admin
from tests.waits import eventually

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@dataclass
class Served:
    process: subprocess.Popen[str]
    url: str
    lines: list[str] = field(default_factory=list)
    """What the server logged (its stderr), read as it comes."""
    sent: int = 0
    """Model requests answered so far."""

    def workers(self) -> set[int]:
        return {p.pid for p in psutil.Process(self.process.pid).children()}

    def chat(self, **body: object) -> httpx.Response:
        response = httpx.post(f"{self.url}/v1/chat/completions", json={**CHAT, **body}, timeout=10)
        assert response.status_code == 200, response.text
        self.sent += 1
        return response

    def labels_by_worker(self, want: int = 2, tries: int = 400) -> dict[int, str]:
        """Send requests until ``want`` workers answered; the label each answered last."""
        seen: dict[int, str] = {}
        for _ in range(tries):
            response = self.chat()
            seen[int(response.headers["x-hookgate-test-pid"])] = response.headers[
                "x-hookgate-test-label"
            ]
            if len(seen) >= want:
                return seen
        raise AssertionError(f"only {sorted(seen)} answered {tries} requests")

    def logged(self, text: str) -> list[str]:
        return [line for line in list(self.lines) if text in line]


def _config(upstream: FakeUpstream, tmp_path: Path, label: str, interval_s: float = 0.1) -> str:
    return config_text(
        upstream.base_url,
        f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\n"
        f"server: {{reload_interval_s: {interval_s}, shutdown_timeout_s: 20}}\n"
        f"policies:\n  - tests.policies_for_tests:WhoServes: {{label: {label}}}\n",
    )


def _write(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(text: str, workers: int = 2) -> Served:
        path = tmp_path / "hookgate.yaml"
        _write(path, text)
        process, url, lines = start_serve("--config", str(path), "--workers", str(workers))
        served = Served(process, url, lines)
        assert process.stderr is not None
        stderr = process.stderr

        def read() -> None:
            for line in stderr:
                served.lines.append(line)

        threading.Thread(target=read, daemon=True).start()
        started.append(served)
        return served

    yield start
    for served in started:
        if served.process.poll() is None:
            served.process.terminate()
            served.process.wait(30)
        assert served.process.stderr is not None
        served.process.stderr.close()


def _requests_total(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("hookgate_requests_total{")
    )


def test_requests_are_served_by_every_worker_and_metrics_are_one_truth(
    serve: Callable[..., Served], upstream: FakeUpstream, tmp_path: Path
) -> None:
    served = serve(_config(upstream, tmp_path, "one"))
    workers = served.workers()
    assert len(workers) == 2
    assert set(served.labels_by_worker()) == workers
    for _ in range(20):
        served.chat()
    # whichever worker serves /metrics, it counts every worker's requests, once
    for _ in range(6):
        assert _requests_total(served.url) == served.sent
    ready = httpx.get(f"{served.url}/readyz", timeout=10)
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert [w["worker"] for w in body["workers"]] == [1, 2]
    assert {w["pid"] for w in body["workers"]} == workers
    assert all(w["status"] == "ready" for w in body["workers"])
    assert served.logged("listening on") and "2 workers" in served.logged("listening on")[0]


def test_a_killed_worker_is_replaced_and_logged_and_the_server_keeps_answering(
    serve: Callable[..., Served], upstream: FakeUpstream, tmp_path: Path
) -> None:
    served = serve(_config(upstream, tmp_path, "one"))
    before = served.workers()
    served.labels_by_worker()
    # metrics are recorded just after a response is sent: a kill -9 may lose the last
    eventually(lambda: _requests_total(served.url) == served.sent)
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    eventually(lambda: bool(served.logged(f"(pid {victim}) was killed by SIGKILL")))
    assert served.logged(f"(pid {victim}) was killed by SIGKILL: starting a new one")
    for _ in range(10):  # the other worker answers meanwhile
        served.chat()
    eventually(lambda: len(served.workers()) == 2 and victim not in served.workers())
    replacement = (served.workers() - before).pop()
    eventually(lambda: httpx.get(f"{served.url}/readyz", timeout=10).status_code == 200)
    assert replacement in set(served.labels_by_worker())
    # the dead worker's requests still count, and the replacement's are not counted twice
    assert _requests_total(served.url) == served.sent

    # a worker that keeps dying soon after its start is restarted ever later
    os.kill(replacement, signal.SIGKILL)
    eventually(lambda: bool(served.logged(f"(pid {replacement}) was killed by SIGKILL")))
    killed = served.logged(f"(pid {replacement}) was killed by SIGKILL")[0]
    assert "2nd death within 10s of starting: starting a new one in 1s" in killed
    eventually(lambda: len(served.workers()) == 2)
    served.chat()


def test_a_reload_reaches_every_worker_and_is_logged_once(
    serve: Callable[..., Served], upstream: FakeUpstream, tmp_path: Path
) -> None:
    # polled once an hour: only SIGHUP reloads it
    served = serve(_config(upstream, tmp_path, "one", interval_s=3600))
    assert set(served.labels_by_worker().values()) == {"one"}
    _write(tmp_path / "hookgate.yaml", _config(upstream, tmp_path, "two"))
    served.process.send_signal(signal.SIGHUP)
    eventually(lambda: set(served.labels_by_worker().values()) == {"two"})
    # then the file is watched every 0.1 s (the parent polls it and tells every worker)
    _write(tmp_path / "hookgate.yaml", _config(upstream, tmp_path, "three"))
    eventually(lambda: set(served.labels_by_worker().values()) == {"three"})
    reloads = served.logged("config reloaded")
    assert len(reloads) == 2, reloads  # worker 1 speaks for both
    assert "(generation 2)" in reloads[0] and "(generation 3)" in reloads[1]
    counted = httpx.get(f"{served.url}/metrics", timeout=10).text
    assert 'hookgate_config_reloads_total{result="success"} 2.0' in counted


def test_sigterm_drains_in_flight_requests_on_every_worker_then_exits_0(
    serve: Callable[..., Served], upstream: FakeUpstream, tmp_path: Path
) -> None:
    served = serve(_config(upstream, tmp_path, "one"))
    workers = served.workers()
    upstream.stream_delay = 0.4  # each stream takes about 3 s
    started: dict[int, int] = {}
    bodies: list[str] = []

    def slow_stream() -> None:
        with httpx.stream(
            "POST", f"{served.url}/v1/chat/completions", json={**CHAT, "stream": True}, timeout=30
        ) as response:
            assert response.status_code == 200
            pid = int(response.headers["x-hookgate-test-pid"])
            started[pid] = started.get(pid, 0) + 1
            bodies.append(response.read().decode())

    threads: list[threading.Thread] = []
    while set(started) != workers:
        assert len(threads) < 40, started
        threads.append(threading.Thread(target=slow_stream))
        threads[-1].start()
        eventually(lambda: sum(started.values()) == len(threads), within_s=10)
    served.process.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join(30)
    assert served.process.wait(30) == 0
    assert len(bodies) == len(threads)
    assert all(body.rstrip().endswith("data: [DONE]") for body in bodies), bodies
    assert len(served.logged("shutting down: draining")) == 2


def test_readyz_names_a_worker_that_does_not_answer(
    serve: Callable[..., Served], upstream: FakeUpstream, tmp_path: Path
) -> None:
    served = serve(_config(upstream, tmp_path, "one"))
    settled = httpx.get(f"{served.url}/readyz", timeout=10)
    assert settled.status_code == 200, settled.text
    # worker 2: a worker stopped in a store write (worker 1 prunes the audit log at its
    # start) would hold SQLite's lock, and the other could not answer for the store either
    stuck = next(w["pid"] for w in settled.json()["workers"] if w["worker"] == 2)
    os.kill(stuck, signal.SIGSTOP)
    try:
        ready = httpx.get(f"{served.url}/readyz", timeout=10)  # the other worker answers
        assert ready.status_code == 503
        statuses = {w.get("pid"): w["status"] for w in ready.json()["workers"]}
        assert list(statuses.values()).count("not answering") == 1
        assert statuses[(served.workers() - {stuck}).pop()] == "ready"
    finally:
        os.kill(stuck, signal.SIGCONT)
    assert httpx.get(f"{served.url}/readyz", timeout=10).status_code == 200


def test_the_live_page_shows_every_workers_requests(
    serve: Callable[..., Served], upstream: FakeUpstream, tmp_path: Path
) -> None:
    served = serve(_config(upstream, tmp_path, "one") + f"keys: {{admin_key: {ADMIN_KEY}}}\n")
    ids: dict[int, list[str]] = {}
    while len(ids) < 2 or min(len(v) for v in ids.values()) < 3:
        assert served.sent < 400, ids
        response = served.chat()
        pid = int(response.headers["x-hookgate-test-pid"])
        ids.setdefault(pid, []).append(response.headers["x-hookgate-request-id"])
    admin = Admin(served.url)  # one connection: one worker serves every page
    sent = [i for v in ids.values() for i in v]
    try:
        eventually(lambda: all(i in admin.get("/ui/live").text for i in sent))
        assert f"Finished ({len(sent)})" in admin.get("/ui/live").text
    finally:
        admin.http.close()


async def test_an_approval_decided_on_any_worker_wakes_the_call_waiting_on_another(
    serve: Callable[..., Served], upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Each tool call waits in the worker its client's connection reached; each decision is
    sent on a new connection, so the kernel gives it to either worker: over four calls,
    the decision is made on the other worker 15 times in 16 runs."""
    mcp_server = McpServer(tmp_path, token=SERVER_TOKEN)
    try:
        crm = f"{{url: '{mcp_server.url}', headers: {{authorization: 'Bearer {SERVER_TOKEN}'}}}}"
        served = serve(
            config_text(
                upstream.base_url,
                f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\n"
                f"keys: {{required: true, admin_key: {ADMIN}}}\n"
                f"mcp_servers:\n  crm: {crm}\npolicies:\n{PAUSE % 60}",
            )
        )
        key = new_key(served.url)
        for n in range(4):
            async with session(f"{served.url}/mcp/crm", key) as client:
                call = asyncio.create_task(
                    client.call_tool("send_email", {"to": "a@b.c", "body": str(n)})
                )
                (approval,) = await waiting(served.url)
                made = await decide(served.url, approval["id"], {"decision": "approve"}, "ann")
                assert made.status_code == 200, made.text
                result = await asyncio.wait_for(call, 5)
                assert not result.isError
        assert [c["arguments"]["body"] for c in mcp_server.calls()] == ["0", "1", "2", "3"]
    finally:
        mcp_server.stop()


def test_a_worker_that_cannot_start_stops_the_server_with_status_1(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    path = tmp_path / "hookgate.yaml"
    _write(path, config_text(
        upstream.base_url,
        f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\n"
        "policies:\n  - tests.policies_for_tests:NoServices: {}\n",
    ))  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "hookgate", "serve", "--config", str(path), "--workers", "2",
         "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "the services this policy needs are not there" in done.stderr
    assert "before the server served: stopping" in done.stderr
    assert "listening on" not in done.stderr


def test_every_worker_exports_its_spans_through_its_own_export_worker(
    serve: Callable[..., Served], upstream: FakeUpstream, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    served = serve(
        _config(upstream, tmp_path, "one") + f"  - tracing: {{endpoint: '{receiver.endpoint}'}}\n"
    )
    served.labels_by_worker()
    spans = receiver.wait_for(served.sent)
    assert len(spans) == served.sent and all(s.name.startswith("chat") for s in spans)
    parent = psutil.Process(served.process.pid)
    assert parent.num_threads() == 1  # it forks: no thread of a policy runs there
    for worker in parent.children():
        (exporter,) = worker.children()
        assert "hookgate.telemetry.worker" in " ".join(exporter.cmdline())
