"""Claude Code itself (``claude -p``) through hookgate, offline, to a scripted Anthropic
upstream on loopback, with ``pii``, ``budget``, ``tracing`` and ``fallback`` on.

A tool round trip: the prompt carries an e-mail address; the upstream only ever sees its
placeholder and asks for a shell command naming that placeholder; Claude Code runs the
command with the real address (restored in the streamed ``input_json_delta``); the
command's output goes back redacted; the model's answer quoting the placeholder reaches
Claude Code with the address. Spend is charged from the upstream's usage, cache reads and
writes priced separately, and each call is a span named for the anthropic provider.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from hookgate.config.loader import load_text
from hookgate.redaction.placeholders import placeholder
from hookgate.wire import synth
from tests.conftest import ProxyFactory
from tests.fakes import FakeUpstream
from tests.otlp import OtlpReceiver
from tests.services import claude_code

KEY = "sk-ant-upstream-secret-0123456789"
SECRET = "claude-code-test-secret-0123456789"
EMAIL = "jane.doe@example.com"
MODEL = "claude-sonnet-4-6"
STAND_IN = placeholder(SECRET.encode(), "EMAIL_ADDRESS", EMAIL)
ECHO = {"command": f"echo {STAND_IN}", "description": "Print the address"}
"""The Bash call the scripted model makes: echo the address's placeholder."""


def run_claude(url: str, home: Path, prompt: str) -> dict[str, Any]:
    """``claude -p`` against ``url`` with nothing but what it needs; its JSON result."""
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": url.removesuffix("/v1"),
        "ANTHROPIC_API_KEY": "sk-ant-client-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    done = subprocess.run(
        [claude_code(), "-p", prompt, "--output-format", "json", "--model", MODEL,
         "--allowedTools", "Bash(echo:*)", "--max-turns", "4"],
        env=env, cwd=home, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    result: dict[str, Any] = orjson.loads(done.stdout)
    return result


def test_claude_code_completes_a_tool_round_trip_through_the_pipeline(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    backup: FakeUpstream,
    receiver: OtlpReceiver,
    tmp_path: Path,
) -> None:
    db = tmp_path / "hookgate.db"
    config = (
        "providers:\n"
        f"  claude: {{type: anthropic, base_url: '{upstream.base_url}', api_key: '{KEY}'}}\n"
        f"  gpt: {{base_url: '{backup.base_url}', api_key: 'sk-openai-backup'}}\n"
        "models:\n"
        f'  "*": [{{provider: claude}}, {{provider: gpt, model: gpt-4o}}]\n'
        f"store: 'sqlite:///{db}'\n"
        "policies:\n"
        f"  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05}}\n"
        "  - budget: {limits: [{scope: key, usd: 5}]}\n"
        "  - fallback: {retries: 0}\n"
        f"  - pii: {{secret: '{SECRET}'}}\n"
    )
    url = make_proxy(loaded=load_text(config))
    first = synth.Reply(
        tool_calls=[synth.ToolCall("toolu_cc_1", "Bash", orjson.dumps(ECHO).decode())],
        thinking="I will print it with echo.",
        input_tokens=900,
        output_tokens=40,
        cache_creation_tokens=15_000,
        cache_read_tokens=0,
        pieces=9,  # the placeholder is split across input_json_delta events
    )
    second = synth.Reply(
        f"Your address is {STAND_IN}.",
        input_tokens=60,
        output_tokens=12,
        cache_creation_tokens=300,
        cache_read_tokens=15_000,
        pieces=5,
    )
    upstream.push(first, second)

    result = run_claude(url, tmp_path / "home", f"Print my e-mail address {EMAIL} with echo.")

    assert result["is_error"] is False
    assert result["result"] == f"Your address is {EMAIL}."
    calls = [r for r in upstream.requests if r.path == "/v1/messages"]
    assert len(calls) == 2 and not backup.requests
    for call in calls:
        assert EMAIL.encode() not in call.body  # only its placeholder went upstream
        assert call.headers["x-api-key"] == KEY
    answered = calls[1].json()["messages"]
    results = [
        block
        for message in answered
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 1 and STAND_IN in orjson.dumps(results[0]).decode()
    thinking = [
        block
        for message in answered
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "thinking"
    ]  # Claude Code sends the signed block back exactly as it got it
    assert thinking == [
        {"type": "thinking", "thinking": "I will print it with echo.", "signature": first.signature}
    ]

    # claude-sonnet-4-6 per million tokens: input $3, output $15, cache reads $0.30 and
    # cache writes $3.75, each priced at its own rate
    first_usd = (900 * 3 + 15_000 * 3.75 + 40 * 15) / 1e6
    second_usd = (60 * 3 + 300 * 3.75 + 15_000 * 0.30 + 12 * 15) / 1e6
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT input_tokens, output_tokens, cost_usd FROM usage ORDER BY ts"
        ).fetchall()
    assert rows == [
        (15_900, 40, pytest.approx(first_usd)),
        (15_360, 12, pytest.approx(second_usd)),
    ]

    spans = receiver.wait_until(lambda s: sum(x.name == f"chat {MODEL}" for x in s) >= 2)
    chats = [s for s in spans if s.name == f"chat {MODEL}"]
    assert {s.attributes["gen_ai.provider.name"] for s in chats} == {"anthropic"}
    assert sorted(s.attributes["gen_ai.usage.cache_read.input_tokens"] for s in chats) == [
        0,
        15_000,
    ]


def pii_on_every_model(tmp_path: Path, provider: str, model: str) -> str:
    """A config with ``pii`` on, every model served by ``model`` of ``provider`` (its YAML
    settings)."""
    return (
        f"providers:\n  only: {provider}\n"
        f'models:\n  "*": [{{provider: only, model: {model}}}]\n'
        f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\n"
        f"policies:\n  - pii: {{secret: '{SECRET}'}}\n"
    )


def test_claude_code_runs_on_a_gemini_model(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Messages → chat → generateContent: Claude Code's tool round trip on Gemini, the
    address redacted on the way up and restored on the way down, and the thought signature
    Gemini put on its function call sent back on it."""
    google = f"{{type: gemini, base_url: '{upstream.gemini_base_url}', api_key: 'AIza-k'}}"
    url = make_proxy(loaded=load_text(pii_on_every_model(tmp_path, google, "gemini-2.5-flash")))
    signature = "CiQB0e2Kb7Yv+thought/signature=="
    upstream.push(
        synth.Reply(
            tool_calls=[synth.ToolCall("unused", "Bash", orjson.dumps(ECHO).decode())],
            thinking="I will print it with echo.", signature=signature,
        ),
        synth.Reply(f"Your address is {STAND_IN}.", pieces=5),
    )  # fmt: skip

    result = run_claude(url, tmp_path / "home", f"Print my e-mail address {EMAIL} with echo.")

    assert result["is_error"] is False
    assert result["result"] == f"Your address is {EMAIL}."
    calls = upstream.requests
    assert [c.path for c in calls] == ["/v1beta/models/gemini-2.5-flash:streamGenerateContent"] * 2
    assert all(EMAIL.encode() not in c.body for c in calls)
    parts = [p for turn in calls[1].json()["contents"] for p in turn["parts"]]
    (called,) = [p for p in parts if "functionCall" in p]
    assert called["functionCall"] == {"name": "Bash", "args": ECHO}
    assert called["thoughtSignature"] == signature
    (answered,) = [p["functionResponse"] for p in parts if "functionResponse" in p]
    assert answered["name"] == "Bash" and STAND_IN in orjson.dumps(answered).decode()


def test_claude_code_runs_on_a_gpt_model(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Messages → Chat Completions: Claude Code's tool round trip on GPT-4o, with what it
    asks of every model (thinking, 32,000 output tokens) fitted to what GPT-4o takes."""
    gpt = f"{{base_url: '{upstream.base_url}', api_key: 'sk-openai-k'}}"
    url = make_proxy(loaded=load_text(pii_on_every_model(tmp_path, gpt, "gpt-4o")))
    upstream.push(
        synth.Reply(tool_calls=[synth.ToolCall("call_1", "Bash", orjson.dumps(ECHO).decode())]),
        synth.Reply(f"Your address is {STAND_IN}.", pieces=5),
    )

    result = run_claude(url, tmp_path / "home", f"Print my e-mail address {EMAIL} with echo.")

    assert result["is_error"] is False
    assert result["result"] == f"Your address is {EMAIL}."
    calls = upstream.requests
    assert [c.path for c in calls] == ["/v1/chat/completions"] * 2
    for call in calls:
        sent = call.json()
        assert EMAIL.encode() not in call.body
        assert sent["max_tokens"] <= 16_384 and "reasoning_effort" not in sent  # GPT-4o's
        assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    answered = calls[1].json()["messages"]
    assert answered[-1]["role"] == "tool" and STAND_IN in answered[-1]["content"]
    assert answered[-2]["tool_calls"][0]["function"]["name"] == "Bash"
