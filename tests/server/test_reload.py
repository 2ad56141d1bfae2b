"""Hot reload: edits swap in atomically, broken edits keep the old config,
in-flight requests finish on the config they started with."""

from __future__ import annotations

import threading
from pathlib import Path

import openai
import pytest

from hookgate.config.loader import load_file
from hookgate.server.app import create_app
from hookgate.wire import synth
from tests.conftest import CLIENT_KEY, config_text
from tests.fakes import FakeUpstream, LoopThread, RunningApp
from tests.waits import eventually

POLICY = (
    "server: {reload_interval_s: 0.05}\n"
    "policies:\n  - tests.policies_for_tests:Recorder: {label: %s}\n"
)


def write(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)  # atomic, like an editor or a ConfigMap swap


def test_reload_swaps_keeps_old_on_error_and_inflight_finish_on_theirs(
    tmp_path: Path,
    loop_thread: LoopThread,
    upstream: FakeUpstream,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "hookgate.yaml"
    write(path, config_text(upstream.base_url, POLICY % "one"))
    server = loop_thread.run(RunningApp(create_app(load_file(path))).start())
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=CLIENT_KEY, max_retries=0)

    def reply_text() -> str:
        stream = client.chat.completions.create(model="m", messages=[], stream=True)
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    try:
        assert reply_text() == "one(Hello from the fake upstream.)"
        write(path, config_text(upstream.base_url, POLICY % "two"))
        eventually(lambda: reply_text() == "two(Hello from the fake upstream.)")

        write(path, config_text(upstream.base_url, POLICY % "two") + "  - bogus_policy: {}\n")
        eventually(lambda: "config reload failed, keeping generation 2" in caplog.text)
        assert "policies[1].bogus_policy: unknown policy" in caplog.text
        assert reply_text() == "two(Hello from the fake upstream.)"
        for broken, said in (
            # a policy that cannot start; a model that is missing (never downloaded)
            ("  - tests.policies_for_tests:Fragile: {}\n",
             "the policy could not start: RuntimeError: the thing this policy needs"),
            ("  - pii: {model: no_such_spacy_model}\n",
             "spaCy model package 'no_such_spacy_model' is not installed"),
        ):  # fmt: skip
            caplog.clear()
            write(path, config_text(upstream.base_url, POLICY % "two") + broken)
            eventually(lambda: "config reload failed, keeping generation 2" in caplog.text)
            assert said in caplog.text
        assert reply_text() == "two(Hello from the fake upstream.)"

        # a slow stream starts on "two"; the config changes to "three" while it runs
        upstream.push(synth.Reply(text="slow answer", pieces=6))
        upstream.stream_delay = 0.15
        result: list[str] = []
        sent = len(upstream.requests)
        reader = threading.Thread(target=lambda: result.append(reply_text()))
        reader.start()
        eventually(lambda: len(upstream.requests) > sent)  # the slow stream is in flight
        write(path, config_text(upstream.base_url, POLICY % "three"))
        reader.join(10)
        upstream.stream_delay = 0
        assert result == ["two(slow answer)"]
        eventually(lambda: reply_text() == "three(Hello from the fake upstream.)")
    finally:
        client.close()
        loop_thread.run(server.stop())
