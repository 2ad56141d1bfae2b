"""Codex CLI itself (``codex exec``, the pinned npm release) offline, against a scripted
upstream that speaks the Responses API over both of Codex's transports: straight, then
through hookgate with ``pii`` on, over the WebSocket mode (Codex's first choice, with
``openai_base_url`` as docs/clients.md tells agents) and over HTTP (a provider with
``supports_websockets = false``), and over HTTP again after hookgate refused the
WebSocket (``server.responses_websocket: false``: a 426, on which Codex falls back).

A tool round trip each time: the prompt carries an e-mail address; the model asks for a
shell command naming it (through hookgate: naming its placeholder, the only form the
upstream ever sees); Codex runs the command with the real address; its output goes back
(redacted); the model's answer quoting the address reaches the user with the real value.
Timing is measured by ``bench/codex_overhead.py``, not asserted here.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from hookgate.config.loader import load_text
from hookgate.redaction.placeholders import placeholder
from hookgate.wire import synth
from tests.conftest import ProxyFactory
from tests.fakes import FakeUpstream
from tests.services import client_binary
from tests.waits import eventually

SECRET = "codex-test-secret-0123456789"
EMAIL = "jane.doe@example.com"
STAND_IN = placeholder(SECRET.encode(), "EMAIL_ADDRESS", EMAIL)
MODEL = "gpt-5.1"
PROMPT = f"Print my e-mail address {EMAIL} with echo."

OFFLINE = """\
check_for_update_on_startup = false
web_search = "disabled"

[analytics]
enabled = false

[features]
plugins = false
apps = false
shell_snapshot = false
"""
"""Codex settings for a run with no network: no update check, no analytics, no plugin,
app or web search look-ups."""


def websocket_config(url: str) -> str:
    """Codex's built-in OpenAI provider at ``url``: WebSocket first, HTTP after a 426."""
    return f'openai_base_url = "{url}"\n{OFFLINE}'


def http_config(url: str) -> str:
    """A Responses provider at ``url`` that Codex never opens a WebSocket to."""
    return (
        'model_provider = "hookgate"\n'
        f"{OFFLINE}\n"
        "[model_providers.hookgate]\n"
        'name = "hookgate"\n'
        f'base_url = "{url}"\n'
        'wire_api = "responses"\n'
        'env_key = "OPENAI_API_KEY"\n'
        "supports_websockets = false\n"
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
    )


@dataclass
class Run:
    answer: str
    """What ``codex exec`` printed: the model's last message."""
    printed: str
    """What the shell command wrote to ``seen.txt``."""
    seconds: float


def run_codex(config: str, home: Path) -> Run:
    """``codex exec`` with ``config`` in a fresh ``CODEX_HOME`` under ``home``."""
    codex_home, work = home / ".codex", home / "work"
    codex_home.mkdir(parents=True)
    work.mkdir()
    (codex_home / "config.toml").write_text(config)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "OPENAI_API_KEY": "sk-codex-client-key",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [client_binary("codex"), "exec", "--skip-git-repo-check", "--model", MODEL,
         "--dangerously-bypass-approvals-and-sandbox", PROMPT],
        env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    assert done.returncode == 0, (done.stdout, done.stderr)
    seen = work / "seen.txt"
    return Run(done.stdout.strip(), seen.read_text() if seen.exists() else "", seconds)


def script(upstream: FakeUpstream, address: str) -> None:
    """The model's two answers, naming ``address`` as the upstream sees it: run
    ``echo <address> | tee seen.txt``, then say the address."""
    command = orjson.dumps({"cmd": f"echo {address} | tee seen.txt"}).decode()
    upstream.push(
        synth.Reply(tool_calls=[synth.ToolCall("call_echo", "exec_command", command)], pieces=9),
        synth.Reply(f"Your address is {address}.", pieces=5),
    )


def tool_output(turn: dict[str, object]) -> str:
    """The output of the shell call that a turn's input carries back."""
    items = turn["input"]
    assert isinstance(items, list)
    (output,) = [i["output"] for i in items if i.get("type") == "function_call_output"]
    return str(output)


def test_codex_straight_at_the_upstream_uses_the_websocket(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    script(upstream, EMAIL)

    run = run_codex(websocket_config(upstream.base_url), tmp_path)

    assert run.answer.endswith(f"Your address is {EMAIL}.")
    assert run.printed == f"{EMAIL}\n"
    frames = [r.json() for r in upstream.requests]
    assert [r.method for r in upstream.requests] == ["WS"] * 3
    assert [f.get("generate") for f in frames] == [False, None, None]  # a warm-up first
    assert frames[1]["previous_response_id"] and frames[2]["previous_response_id"]
    assert EMAIL in tool_output(frames[2])


def proxy_config(upstream: FakeUpstream, tmp_path: Path, server: str = "") -> str:
    return (
        f"providers:\n  openai: {{base_url: '{upstream.base_url}', api_key: 'sk-upstream'}}\n"
        'models:\n  "*": [{provider: openai}]\n'
        f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\n{server}"
        f"policies:\n  - pii: {{secret: '{SECRET}'}}\n"
    )


@pytest.mark.parametrize(
    ("transport", "config", "server"),
    [
        ("websocket", websocket_config, ""),
        ("http", http_config, ""),
        ("http after a 426", websocket_config, "server: {responses_websocket: false}\n"),
    ],
    ids=["websocket", "http", "http-after-426"],
)
def test_codex_through_hookgate_completes_a_tool_round_trip_with_pii_on(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    tmp_path: Path,
    transport: str,
    config: Callable[[str], str],
    server: str,
) -> None:
    url = make_proxy(loaded=load_text(proxy_config(upstream, tmp_path, server)))
    script(upstream, STAND_IN)

    run = run_codex(config(url), tmp_path / "home")

    assert run.answer.endswith(f"Your address is {EMAIL}.")  # the user reads the real value
    assert run.printed == f"{EMAIL}\n"  # Codex's shell ran with the real value
    turns = upstream.requests
    assert [(r.method, r.path) for r in turns] == [("POST", "/v1/responses")] * 2
    for sent in turns:
        assert EMAIL.encode() not in sent.body  # only its placeholder went upstream
        assert sent.headers["authorization"] == "Bearer sk-upstream"
        assert sent.headers["originator"] == "codex_exec"  # Codex's own headers, forwarded
    second = turns[1].json()
    assert "previous_response_id" not in second  # the whole conversation, as over HTTP
    assert [i.get("type") for i in second["input"][-2:]] == [
        "function_call",
        "function_call_output",
    ]
    assert STAND_IN in tool_output(second)
    session = turns[0].headers["session-id"]
    audited: list[tuple[str, str, int]] = []

    def recorded() -> bool:
        with sqlite3.connect(tmp_path / "hookgate.db") as db:
            query = "SELECT request_id, session, status FROM audit ORDER BY ts"
            audited[:] = db.execute(query).fetchall()
        return len(audited) == 2

    eventually(recorded)
    assert [(s, status) for _, s, status in audited] == [(session, 200)] * 2
    over_socket = [request_id.rsplit(".", 1)[-1] for request_id, _, _ in audited]
    assert (over_socket == ["2", "3"]) == (transport == "websocket")  # frames 2, 3 of a socket


@pytest.mark.parametrize(
    ("transport", "config"),
    [("websocket", websocket_config), ("http", http_config)],
    ids=["websocket", "http"],
)
def test_a_shell_call_tool_guard_denies_never_reaches_codex(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    tmp_path: Path,
    transport: str,
    config: Callable[[str], str],
) -> None:
    """The model asks for a shell command of a tool ``tool_guard`` denies: Codex never sees
    the call (nothing runs), its turn ends, and the user reads why."""
    text = proxy_config(upstream, tmp_path).replace(
        "policies:\n", "policies:\n  - tool_guard: {deny: [exec_command]}\n"
    )
    url = make_proxy(loaded=load_text(text))
    script(upstream, EMAIL)

    run = run_codex(config(url), tmp_path / "home")

    assert run.printed == ""  # the command never ran
    assert "hookgate refused a call of exec_command" in run.answer
    assert [(r.method, r.path) for r in upstream.requests] == [("POST", "/v1/responses")]
