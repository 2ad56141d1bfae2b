"""kill -9 during load: settled spend survives, and limits hold after the restart."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import openai

from tests.conftest import config_text
from tests.fakes import FakeUpstream, start_serve
from tests.spend import PER_REQUEST_USD, PRICE, settled


def test_kill_9_loses_no_settled_spend(tmp_path: Path, upstream: FakeUpstream) -> None:
    db = tmp_path / "spend.db"
    config = tmp_path / "hookgate.yaml"
    config.write_text(config_text(
        upstream.base_url,
        f"store: 'sqlite:///{db}'\n{PRICE}server: {{reload: false}}\n"
        "policies:\n  - budget: {limits: [{scope: model, usd: 0.6}]}\n",
        models='  "*": [{provider: up, model: fixed-model}]',
    ))  # fmt: skip
    upstream.stream_delay = 0.02  # streams take ~0.2 s: many are in flight at the kill
    process, url, _ = start_serve("--config", str(config))
    completed: list[int] = []
    question = [{"role": "user", "content": "Please answer this question briefly."}]

    def client_loop() -> None:
        with openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0) as client:
            while True:
                try:
                    stream = client.chat.completions.create(
                        model="m",
                        messages=question,
                        max_tokens=5,
                        stream=True,  # type: ignore[arg-type]
                    )
                    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
                except (openai.APIError, openai.APIConnectionError):
                    return
                if text:
                    completed.append(1)

    threads = [threading.Thread(target=client_loop) for _ in range(8)]
    for thread in threads:
        thread.start()
    while len(completed) < 15:
        threading.Event().wait(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    for thread in threads:
        thread.join(10)
    assert process.stderr is not None
    process.stderr.close()
    usd, count = settled(db)
    assert count >= len(completed), "a response completed without its spend being settled"
    assert count <= len(upstream.requests)

    # restart: the limit still holds against the spend settled before the crash
    upstream.stream_delay = 0
    process, url, _ = start_serve("--config", str(config))
    try:
        with openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0) as client:
            for _ in range(60):
                try:
                    client.chat.completions.create(model="m", messages=question, max_tokens=5)  # type: ignore[arg-type]
                except openai.RateLimitError:
                    break
        final, _ = settled(db)
        assert usd <= final <= 0.6 + 1e-9
        assert final >= 0.6 - 2 * PER_REQUEST_USD
    finally:
        process.terminate()
        process.wait(10)
        assert process.stderr is not None
        process.stderr.close()
