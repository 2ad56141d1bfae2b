"""The ``hookgate`` command as a user runs it: a real process, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import jsonschema
import openai
import pytest
import yaml

from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, config_text
from tests.fakes import FakeUpstream, start_serve
from tests.waits import eventually


def hookgate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hookgate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_check_reports_problems_and_exit_code(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(
        'providers: {a: {type: echo}}\nmodels: {"*": [{provider: a}]}\n'
        "policies: [{fallback: {}}, {reply_budget: {tokens: 9}}, {system_prompt: {append: x}}]\n"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text('providers: {a: {type: echo}}\nmodels:\n  "*": [{provider: b}]\nextra: 1\n')
    result = hookgate("check", str(good), str(bad))
    assert result.returncode == 1
    ok = f"{good}: ok (proxy runs: fallback, system_prompt; SDK runs: reply_budget, system_prompt)"
    assert result.stdout.splitlines() == [
        ok,
        f"{bad}:3: models.\"*\"[0].provider: unknown provider 'b' (known: a)",
        f"{bad}:4: extra: unknown key",
    ] or result.stdout.splitlines() == [ok, f"{bad}:4: extra: unknown key"]
    assert hookgate("check", str(good)).returncode == 0
    missing = tmp_path / "missing.yaml"
    missing.write_text(
        'providers: {a: {type: echo}}\nmodels: {"*": [{provider: a}]}\n'
        "policies:\n  - pii: {model: no_such_spacy_model}\n"
    )
    result = hookgate("check", str(missing))
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    assert result.stdout.startswith(
        f"{missing}:4: policies[0].pii.model: spaCy model package 'no_such_spacy_model' is not "
        "installed"
    )


def test_schema_validates_the_shipped_configs(tmp_path: Path) -> None:
    out = tmp_path / "schema.json"
    assert hookgate("schema", "-o", str(out)).returncode == 0
    schema = json.loads(out.read_text())
    for path in Path("policies").glob("*.yaml"):
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"providers": {}, "models": {}, "policies": [{"system_prompt": {"nope": 1}}]}, schema
        )


@pytest.fixture
def served(tmp_path: Path, upstream: FakeUpstream) -> Iterator[tuple[subprocess.Popen[str], str]]:
    path = tmp_path / "hookgate.yaml"
    path.write_text(config_text(upstream.base_url, "server: {shutdown_timeout_s: 10}\n"))
    process, url, _ = start_serve("--config", str(path))
    yield process, url
    if process.poll() is None:
        process.kill()
    process.wait(10)
    assert process.stderr is not None
    process.stderr.close()


def test_serve_logs_url_answers_and_drains_on_sigterm(
    served: tuple[subprocess.Popen[str], str], upstream: FakeUpstream
) -> None:
    process, url = served
    assert httpx.get(f"{url}/healthz").status_code == 200
    upstream.push(synth.Reply(text="a slow streamed answer", pieces=8))
    upstream.stream_delay = 0.2
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=CLIENT_KEY, max_retries=0)
    texts: list[str] = []

    def read() -> None:
        stream = client.chat.completions.create(model="m", messages=[], stream=True)
        texts.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))

    reader = threading.Thread(target=read)
    reader.start()
    eventually(lambda: bool(upstream.requests))  # the stream is in flight
    process.send_signal(signal.SIGTERM)
    reader.join(15)
    assert texts == ["a slow streamed answer"]
    assert process.wait(15) == 0
    client.close()


def test_serve_default_config_without_key_answers_with_echo(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "HOOKGATE_CONFIG")}
    env["HOOKGATE_STORE"] = f"sqlite:///{tmp_path / 'hookgate.db'}"  # keep the checkout clean
    process, url, lines = start_serve(env=env)
    assert process.stderr is not None
    try:
        assert any("no api_key" in line for line in lines)
        with openai.OpenAI(base_url=f"{url}/v1", api_key="anything") as client:
            reply = client.chat.completions.with_raw_response.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "ping"}]
            )
        assert reply.parse().choices[0].message.content == "[hookgate echo] ping"
        assert reply.headers["x-hookgate-echo"] == "true"
        # the echo provider refuses what a provider would, never with a 500
        refused = httpx.post(f"{url}/v1/embeddings", json={"model": "e", "input": 5})
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "input"
    finally:
        process.terminate()
        assert process.wait(15) == 0
        process.stderr.close()
