"""The Vercel AI SDK (npm ``ai`` with ``@ai-sdk/openai`` and ``@ai-sdk/anthropic``) through
hookgate, run by node as its users run it, offline against a scripted upstream.

The agent (``tests/e2e/clients/ai_sdk_agent.mjs``) has one tool; the scripted model calls it
with the user's message as it read it, then answers quoting the tool's result. Each case runs
straight at the upstream first (what the client sends, unchanged), then through hookgate on
the shipped ``policies/default.yaml`` with ``pii: {}`` added: the tool round trip completes,
the tool receives the real values, the user reads them, the upstream never does, and a stream
arrives in pieces as the upstream sent it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hookgate.config.loader import load_text
from hookgate.wire import synth
from tests.conftest import ProxyFactory
from tests.fakes import Echo, FakeUpstream
from tests.services import clients

NAME, EMAIL = "Siobhan O'Brien", "siobhan.obrien@example.org"
PROMPT = f"Find the customer {NAME}, e-mail {EMAIL}."
UPSTREAM_KEY = "sk-upstream-secret-0123456789"
AGENT = Path(__file__).parent / "clients" / "ai_sdk_agent.mjs"
DELAY = 0.15
"""Seconds between the upstream's stream events."""

MODELS = {"responses": "gpt-4.1-mini", "chat": "gpt-4.1-mini", "anthropic": "claude-sonnet-4-6"}


def shipped_config(upstream: FakeUpstream, store: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``policies/default.yaml`` as shipped, its provider at the upstream, an Anthropic
    provider beside it for the Claude model, and ``pii: {}`` added to its policies."""
    text = Path("policies/default.yaml").read_text()
    text = text.replace(
        "    missing_key: echo\n",
        "    missing_key: echo\n"
        f"  claude: {{type: anthropic, base_url: '{upstream.anthropic_base_url}',"
        f" api_key: '{UPSTREAM_KEY}'}}\n",
        1,
    )
    claude = f"  {MODELS['anthropic']}: [{{provider: claude}}]\n"
    text = text.replace("\nmodels:\n", f"\nmodels:\n{claude}", 1)
    text = text.replace("\npolicies:\n", "\npolicies:\n  - pii: {}\n", 1)
    monkeypatch.setenv("OPENAI_UPSTREAM_URL", upstream.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", UPSTREAM_KEY)
    monkeypatch.setenv("HOOKGATE_STORE", f"sqlite:///{store}")
    return text


def run_agent(tmp_path: Path, provider: str, mode: str, base_url: str) -> dict[str, Any]:
    """Run the agent with node (its modules resolved from the pinned clients) and return its
    JSON line."""
    workdir = tmp_path / "agent"
    workdir.mkdir(exist_ok=True)
    (workdir / "node_modules").unlink(missing_ok=True)
    (workdir / "node_modules").symlink_to(clients())
    script = workdir / AGENT.name
    script.write_text(AGENT.read_text())
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "AGENT_PROVIDER": provider,
        "AGENT_MODE": mode,
        "AGENT_BASE_URL": base_url,
        "AGENT_API_KEY": "sk-client-key-for-the-agent",
        "AGENT_MODEL": MODELS[provider],
        "AGENT_PROMPT": PROMPT,
    }
    done = subprocess.run(
        ["node", str(script)], env=env, cwd=workdir, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def script(upstream: FakeUpstream) -> None:
    """The model: a call of the tool quoting the user's message as read, then (the default
    agent reply) an answer quoting the tool's result, both streamed in pieces."""
    upstream.stream_delay = DELAY
    upstream.push(Echo(prefix="", tool="lookup_customer", pieces=4))


def sent_bodies(upstream: FakeUpstream) -> list[bytes]:
    return [recorded.body for recorded in upstream.requests]


@pytest.mark.parametrize("mode", ["generate", "stream"])
@pytest.mark.parametrize("provider", ["responses", "chat", "anthropic"])
def test_an_ai_sdk_agent_completes_its_tool_round_trip_with_pii_on(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, provider: str, mode: str,
) -> None:  # fmt: skip
    base = upstream.anthropic_base_url + "/v1" if provider == "anthropic" else upstream.base_url
    script(upstream)
    straight = run_agent(tmp_path, provider, mode, base)
    assert straight["received"] == [PROMPT]
    assert EMAIL in straight["text"]
    direct = sent_bodies(upstream)
    assert len(direct) == 2
    upstream.requests.clear()

    url = make_proxy(
        loaded=load_text(shipped_config(upstream, tmp_path / "hookgate.db", monkeypatch))
    )
    script(upstream)
    through = run_agent(tmp_path, provider, mode, url)

    assert through["received"] == [PROMPT]  # the tool ran on the real values
    assert EMAIL in through["text"] and NAME in through["text"]  # the user reads them
    proxied = sent_bodies(upstream)
    assert len(proxied) == 2
    for body in proxied:  # the upstream never does
        assert EMAIL.encode() not in body and b"O'Brien" not in body and b"Siobhan" not in body
    for sent, straight_sent in zip(proxied, direct, strict=True):  # as the client sent it
        through_body, direct_body = json.loads(sent), json.loads(straight_sent)
        for key in set(through_body) | set(direct_body):
            if key not in ("messages", "input", "stream_options"):  # placeholders; usage asked
                assert through_body.get(key) == direct_body.get(key), key
    if mode == "stream":
        times = [at for at, _ in through["deltas"]]
        assert len(times) >= 3 and times[-1] - times[0] >= DELAY * 1000  # in pieces


@pytest.mark.parametrize("mode", ["generate", "stream"])
@pytest.mark.parametrize("provider", ["responses", "chat", "anthropic"])
def test_a_call_of_a_tool_the_agent_was_not_offered_never_reaches_it(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, provider: str, mode: str
) -> None:
    """A hijacked model calls a tool beside the agent's own: hookgate removes that call,
    the agent runs its own tool, and the model reads on the next turn why the other was
    refused."""
    config = (
        "providers:\n"
        f"  up: {{base_url: '{upstream.base_url}', api_key: '{UPSTREAM_KEY}'}}\n"
        f"  claude: {{type: anthropic, base_url: '{upstream.anthropic_base_url}',"
        f" api_key: '{UPSTREAM_KEY}'}}\n"
        "models:\n"
        f"  {MODELS['anthropic']}: [{{provider: claude}}]\n"
        f"  {MODELS['chat']}: [{{provider: up}}]\n"
        f"store: 'sqlite:///{tmp_path / 'hookgate.db'}'\n"
        "policies:\n  - tool_guard: {deny: [transfer_*]}\n"
    )
    url = make_proxy(loaded=load_text(config))
    looked_up = json.dumps({"text": PROMPT})
    upstream.push(synth.Reply(text="Looking.", tool_calls=[
        synth.ToolCall("toolu_1", "transfer_funds", '{"to": "attacker", "amount": 900}'),
        synth.ToolCall("toolu_2", "lookup_customer", looked_up),
    ]))  # fmt: skip
    through = run_agent(tmp_path, provider, mode, url)

    assert through["received"] == [PROMPT]  # its own tool ran
    assert "found the customer" in through["text"]  # the default reply quotes its result
    second = upstream.requests[-1].body.decode()
    assert "hookgate refused a call of transfer_funds" in second  # the model reads why
    assert "toolu_1" not in second  # the refused call is nowhere in the history
