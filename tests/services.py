"""Real external services for tests (Debian packages installed by `.ci/system-deps.sh`).

A missing service skips the test locally and fails it under ``CI=true``: CI must never
pass by skipping what it was meant to prove.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest


def require(binary: str) -> str:
    """The path of ``binary``; skip (locally) or fail (CI) when it is not installed."""
    path = shutil.which(binary)
    if path is None:
        message = f"{binary} is not installed (bash .ci/system-deps.sh installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def claude_code() -> str:
    """The pinned Claude Code binary ``make test`` installs (``HOOKGATE_TEST_CLAUDE``, else
    the newest under ``.venv``); skip (locally) or fail (CI) when it is missing."""
    given = os.environ.get("HOOKGATE_TEST_CLAUDE")
    found = sorted(Path(".venv").glob("claude-code-*/node_modules/.bin/claude"))
    path = Path(given) if given else (found[-1] if found else None)
    if path is None or not os.access(path, os.X_OK):
        message = "Claude Code is not installed (make claude-code installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return str(path.resolve())


def clients() -> Path:
    """The ``node_modules`` of the pinned npm agent clients ``make test`` installs
    (``HOOKGATE_TEST_CLIENTS``, else ``.venv/clients``): Codex CLI, Gemini CLI, opencode and
    the Vercel AI SDK (``.ci/clients/package.json``); skip (locally) or fail (CI) when they
    are missing."""
    prefix = Path(os.environ.get("HOOKGATE_TEST_CLIENTS") or ".venv/clients")
    modules = prefix.resolve() / "node_modules"
    if not (modules / ".bin").is_dir():
        message = f"the npm agent clients are not installed in {prefix} (make clients)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return modules


def client_binary(name: str) -> str:
    """The path of one pinned npm client's command (``codex``, ``gemini``, ``opencode``)."""
    return str(clients() / ".bin" / name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Prometheus:
    """A real Prometheus scraping ``targets`` every second, on a free loopback port."""

    def __init__(self, directory: Path, targets: list[str], metrics_path: str = "/metrics") -> None:
        binary = require("prometheus")
        self.port = free_port()
        config = directory / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: hookgate\n"
            f"    metrics_path: {metrics_path}\n"
            f"    static_configs: [{{targets: {targets!r}}}]\n"
        )
        self.process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={directory / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn",
             "--enable-feature=exemplar-storage"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert self.process.poll() is None, "prometheus exited"
            assert time.monotonic() < deadline, "prometheus did not become ready"
            time.sleep(0.2)

    def query(self, expr: str) -> dict[str, Any]:
        """Evaluate ``expr`` now; returns Prometheus's ``data`` (raises on an invalid query)."""
        response = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10)
        body = response.json()
        if body.get("status") != "success":
            raise AssertionError(f"{expr}: {body.get('error')}")
        return dict(body["data"])

    def scrapes(self) -> tuple[int, int]:
        """(scrapes so far, of them successful) over the last five minutes, all targets."""
        total, up = (
            self.query(f"sum({fn}(up[5m]))")["result"]
            for fn in ("count_over_time", "sum_over_time")
        )
        return (
            int(float(total[0]["value"][1])) if total else 0,
            int(float(up[0]["value"][1])) if up else 0,
        )

    def wait_scraped(self, successes: int, timeout_s: float = 30) -> None:
        """Block until ``successes`` more scrapes have succeeded than when called.

        Readiness says nothing of scrapes: on a loaded machine the first one can come seconds
        after ``/-/ready``, and a rate needs two samples that straddle the traffic.
        """
        target = self.scrapes()[1] + successes
        deadline = time.monotonic() + timeout_s
        while (seen := self.scrapes())[1] < target:
            assert time.monotonic() < deadline, f"prometheus scrapes (all, ok): {seen}"
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


class RedisServer:
    """A real ``redis-server`` on a free loopback port, with append-only durability."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = self._start()

    def restart(self) -> None:
        """Stop, then start again on the same port and data (its append-only file)."""
        self.stop()
        self.process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [require("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(self.directory), "--appendonly", "yes", "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert process.poll() is None, "redis-server exited"
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        return process

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
