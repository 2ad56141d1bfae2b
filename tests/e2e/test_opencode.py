"""opencode (npm ``opencode-ai``, ``opencode run``) through hookgate, offline, against a
scripted upstream, on OpenAI's Chat Completions (``@ai-sdk/openai-compatible``) and
Responses (``@ai-sdk/openai``) APIs.

The scripted model asks opencode's ``bash`` tool to echo the user's e-mail address — as
the model read it: its placeholder — then answers quoting it; opencode's side call (the
session title, on its ``small_model``) gets a title. Each API runs straight at the upstream
first, then through hookgate on the shipped ``policies/default.yaml`` with ``pii`` added:
exit 0, the tool runs on the real address, the user reads it, no request upstream (the
title's included) holds it, the answer arrives in pieces, and opencode's session headers
reach the upstream and name the session in hookgate's audit records.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hookgate.config.loader import load_text
from hookgate.redaction.placeholders import placeholder
from hookgate.wire import synth
from tests.conftest import ProxyFactory
from tests.fakes import FakeUpstream
from tests.services import client_binary

pytestmark = pytest.mark.slow  # two opencode runs of ~10 s per case

SECRET = "opencode-test-secret-0123456789"
EMAIL = "jane.doe@example.com"
STAND_IN = placeholder(SECRET.encode(), "EMAIL_ADDRESS", EMAIL)
PROMPT = f"Print my e-mail address {EMAIL} with echo."
UPSTREAM_KEY = "sk-upstream-secret-0123456789"
MODEL, TITLE_MODEL = "gpt-4.1-mini", "title-model"
DELAY = 0.1
PACKAGES = {"chat": "@ai-sdk/openai-compatible", "responses": "@ai-sdk/openai"}


def shipped_config(upstream: FakeUpstream, store: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``policies/default.yaml`` as shipped, its provider at the upstream, ``pii`` added."""
    monkeypatch.setenv("OPENAI_UPSTREAM_URL", upstream.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", UPSTREAM_KEY)
    monkeypatch.setenv("HOOKGATE_STORE", f"sqlite:///{store}")
    pii = f"\npolicies:\n  - pii: {{secret: '{SECRET}'}}\n"
    return Path("policies/default.yaml").read_text().replace("\npolicies:\n", pii, 1)


def run_opencode(tmp_path: Path, api: str, base_url: str) -> list[dict[str, Any]]:
    """``opencode run --format json`` with a provider at ``base_url``; its JSON events."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    models = {MODEL: {"name": MODEL, "tool_call": True}, TITLE_MODEL: {"name": TITLE_MODEL}}
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "gate": {
                "npm": PACKAGES[api],
                "name": "gate",
                "options": {"baseURL": base_url, "apiKey": "sk-client-key-for-opencode"},
                "models": models,
            }
        },
        "model": f"gate/{MODEL}",
        "small_model": f"gate/{TITLE_MODEL}",
    }
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",  # models.dev: no network here
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "npm_config_offline": "true",
    }
    done = subprocess.run(
        [client_binary("opencode"), "run", "--format", "json", PROMPT],
        env=env, cwd=home, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def script(upstream: FakeUpstream) -> None:
    upstream.stream_delay = DELAY
    upstream.push_for(TITLE_MODEL, synth.Reply("Print an address"))
    command = {"command": f"echo {STAND_IN}", "description": "Print the address"}
    upstream.push(
        synth.Reply(tool_calls=[synth.ToolCall("call_oc_1", "bash", json.dumps(command))]),
        synth.Reply(f"Your address is {STAND_IN}.", pieces=5),
    )  # fmt: skip


def tool_and_text(events: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    (tool,) = [e["part"] for e in events if e["type"] == "tool_use"]
    texts = [e["part"] for e in events if e["type"] == "text"]
    return tool, texts[-1]


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_opencode_runs_its_bash_tool_through_hookgate_with_pii_on(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, api: str,
) -> None:  # fmt: skip
    path = "/v1/chat/completions" if api == "chat" else "/v1/responses"
    script(upstream)
    tool, text = tool_and_text(run_opencode(tmp_path, api, upstream.base_url))
    assert tool["state"]["status"] == "completed"  # straight: the client works as scripted
    assert text["text"] == f"Your address is {STAND_IN}."
    upstream.requests.clear()

    url = make_proxy(loaded=load_text(shipped_config(upstream, tmp_path / "hg.db", monkeypatch)))
    script(upstream)
    tool, text = tool_and_text(run_opencode(tmp_path, api, url))

    assert tool["state"]["input"]["command"] == f"echo {EMAIL}"  # the tool got the real value
    assert tool["state"]["output"].strip() == EMAIL
    assert text["text"] == f"Your address is {EMAIL}."  # the user reads it
    assert text["time"]["end"] - text["time"]["start"] >= DELAY * 1000  # in pieces
    calls = [r for r in upstream.requests if r.path == path]
    assert len(calls) == 3  # the title, the tool call, the answer
    for call in calls:
        assert EMAIL.encode() not in call.body  # no request upstream holds the address
    assert STAND_IN in calls[-1].body.decode()  # the tool's output, as the model knows it
    agent = [c for c in calls if c.json()["model"] == MODEL]
    session = agent[0].headers["x-session-id"]  # opencode's own headers, forwarded
    assert session.startswith("ses_") and agent[0].headers["x-session-affinity"] == session
    with sqlite3.connect(tmp_path / "hg.db") as db:  # and read as hookgate's session
        sessions = {
            row[0] for row in db.execute("SELECT session FROM audit WHERE model = ?", (MODEL,))
        }
    assert sessions == {session}
