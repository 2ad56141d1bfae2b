"""Real MCP servers for tests: ``tests/mcp_upstream_server.py`` (the official ``mcp`` SDK's
FastMCP over Streamable HTTP) run as a separate process on a free loopback port."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.services import free_port

SCRIPT = Path(__file__).with_name("mcp_upstream_server.py")


class McpServer:
    """An upstream MCP server at ``self.url`` (``http://127.0.0.1:<port>/mcp``), stateful.

    Tools: ``lookup_contact(name)`` (a result with an email address and a phone number, as
    text and, FastMCP's default for a ``str`` tool, as ``structuredContent``),
    ``send_email(to, body)``, ``delete_files(path)``, ``get_weather(city)``,
    ``structured_contact(name)`` (``structuredContent`` and an ``outputSchema``), ``crash()``
    (the process exits mid-call), ``slow(seconds)``, ``slow_contact(name, seconds)`` and
    ``paused_answer()``.

    With ``token``, every HTTP request without ``Authorization: Bearer <token>`` gets 401.
    With ``resumable``, the server stores its events, and ``paused_answer`` closes its
    call's stream before answering, so the client must resume it with ``Last-Event-ID``.
    ``calls()`` is every tool call so far, each ``{"tool", "arguments", "headers"}`` with the
    call's HTTP request headers (lowercased names); it survives ``restart()``.

    A fixture::

        @pytest.fixture
        def mcp_server(tmp_path: Path) -> Iterator[McpServer]:
            with McpServer(tmp_path) as server:
                yield server

    ``stop()`` kills the process (its process group) and reaps it; ``restart()`` starts it
    again on the same port (after ``crash`` too). Sessions do not survive a restart.
    """

    def __init__(self, directory: Path, token: str | None = None, resumable: bool = False) -> None:
        self.directory = directory
        self.token = token
        self.resumable = resumable
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = directory / f"mcp-{self.port}.jsonl"
        self.log.touch()
        self.stderr = directory / f"mcp-{self.port}.stderr"
        self.process = self._start()

    def calls(self) -> list[dict[str, Any]]:
        """The tool calls logged so far, oldest first."""
        lines = self.log.read_text(encoding="utf-8").splitlines(keepends=True)
        return [json.loads(line) for line in lines if line.endswith("\n")]

    def restart(self) -> None:
        """Stop (if still running), then start again on the same port."""
        self.stop()
        self.process = self._start()

    def stop(self) -> None:
        """Kill the server's process group and reap it (no-op when already stopped)."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def __enter__(self) -> McpServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _start(self) -> subprocess.Popen[bytes]:
        command = [sys.executable, str(SCRIPT), "--port", str(self.port), "--log", str(self.log)]
        if self.token is not None:
            command += ["--token", self.token]
        if self.resumable:
            command.append("--resumable")
        with self.stderr.open("ab") as stderr:
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
            )
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return process
            except OSError:
                pass
            if process.poll() is not None:
                raise AssertionError(
                    f"the MCP server exited ({process.returncode}): {self._stderr_tail()}"
                )
            if time.monotonic() >= deadline:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
                raise AssertionError(f"the MCP server did not start: {self._stderr_tail()}")
            time.sleep(0.05)

    def _stderr_tail(self) -> str:
        return self.stderr.read_text(encoding="utf-8", errors="replace")[-2000:]
