"""The leak scanner: seeded PII and credentials go through every route and failure path of
one fully configured proxy, then every log line (DEBUG, every logger), exported span,
metric sample, store row and response header is searched for them. Nothing may be found.

Seeds: the provider key, a virtual key, the admin key, and PII values (a name, an e-mail
address, a phone number, a card number, a provider-style secret) in messages, tool
results, Responses input, embeddings input, a malformed body, a refused request and a file
upload through the generic relay.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from contextlib import closing
from pathlib import Path

import httpx
import openai
import pytest

from hookgate.config.loader import load_text
from tests.conftest import UPSTREAM_KEY, ProxyFactory, config_text
from tests.fakes import Echo, FakeUpstream, Status
from tests.otlp import OtlpReceiver
from tests.policies.test_pii import MESSAGE, PII
from tests.waits import eventually

ADMIN = "admin-key-seeded-5f1c9a"


def _forms(value: str) -> list[str]:
    """A value as it could appear: as is, JSON-escaped, URL-encoded."""
    return [value, json.dumps(value)[1:-1], httpx.QueryParams({"v": value}).get("v") or value]


def _scan(where: str, text: str, seeds: dict[str, str]) -> None:
    for name, value in seeds.items():
        for form in _forms(value):
            assert form not in text, f"{name} found in {where}"


def test_nothing_seeded_reaches_logs_spans_metrics_or_the_store(
    make_proxy: ProxyFactory,
    upstream: FakeUpstream,
    receiver: OtlpReceiver,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    db = tmp_path / "leaks.db"
    url = make_proxy(
        loaded=load_text(
            config_text(
                upstream.base_url,
                f"store: 'sqlite:///{db}'\n"
                f"keys: {{required: true, admin_key: {ADMIN}}}\n"
                "pricing: {m: {input: 1.0, output: 2.0}}\n"
                "policies:\n"
                f"  - tracing: {{endpoint: '{receiver.endpoint}', schedule_delay_s: 0.05,"
                " capture_content: true}\n"
                "  - pii: {secret: 'leak-test-secret-0123', embeddings: true}\n"
                "  - budget: {limits: [{scope: user, usd: 0.05}]}\n"
                "  - fallback: {retries: 0}\n",
            )
        )
    )
    base = url.removesuffix("/v1")
    made = httpx.post(
        f"{base}/admin/keys",
        json={"team": "t", "user": "u", "models": ["m"]},
        headers={"authorization": f"Bearer {ADMIN}"},
    )
    virtual_key = made.json()["key"]
    seeds = {**PII, "provider key": UPSTREAM_KEY, "virtual key": virtual_key, "admin key": ADMIN}
    headers_seen: list[str] = []
    client = openai.OpenAI(base_url=url, api_key=virtual_key, max_retries=0)

    def keep(response: httpx.Response) -> None:
        headers_seen.append(" ".join(f"{k}: {v}" for k, v in response.headers.items()))

    # served calls, streamed and not, with PII in every place the model reads
    upstream.push(Echo())
    keep(client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": MESSAGE}]
    ).http_response)  # fmt: skip
    upstream.push(Echo(pieces=3))
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": MESSAGE}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    tool_history = [
        {"role": "user", "content": "look me up"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "lookup", "arguments": json.dumps({"q": PII["EMAIL_ADDRESS"]})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": MESSAGE},
    ]  # fmt: skip
    client.chat.completions.create(model="m", messages=tool_history)  # type: ignore[arg-type]
    client.responses.create(model="m", input=MESSAGE, instructions=f"Serve {PII['PERSON']}.")
    client.embeddings.create(model="m", input=[MESSAGE])
    client.completions.create(model="m", prompt=MESSAGE)
    # failure paths
    upstream.push(Status(500, {"error": {"message": "boom", "type": "x", "code": None,
                                         "param": None}}))  # fmt: skip
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": MESSAGE}])
    for body in (MESSAGE.encode(), b'{"model": "m", "messages": "' + MESSAGE.encode() + b'"'):
        keep(httpx.post(f"{url}/chat/completions", content=body,
                        headers={"authorization": f"Bearer {virtual_key}"}))  # fmt: skip
    wrong = {"authorization": f"Bearer {UPSTREAM_KEY}"}  # a provider key, sent as a client key
    keep(httpx.post(f"{url}/chat/completions", json={"model": "m", "messages": []},
                    headers=wrong))  # fmt: skip
    keep(httpx.post(f"{url}/chat/completions", json={"model": "other", "messages": []},
                    headers={"authorization": f"Bearer {virtual_key}"}))  # not allowed  # fmt: skip
    # 30,000 output tokens at $2/M is more than the user's $0.05: refused before the call
    refused = httpx.post(f"{url}/chat/completions", json={"model": "m", "max_tokens": 30000,
                         "messages": [{"role": "user", "content": MESSAGE}]},
                         headers={"authorization": f"Bearer {virtual_key}"})  # fmt: skip
    keep(refused)
    assert refused.status_code == 429, refused.text
    # the generic relay (not redacted by design: it must still not log what it carries)
    keep(httpx.post(f"{url}/files", files={"file": ("notes.txt", MESSAGE.encode())},
                    data={"purpose": "batch"},
                    headers={"authorization": f"Bearer {virtual_key}"}))  # fmt: skip
    keep(httpx.get(f"{base}/admin/keys", headers={"authorization": f"Bearer {ADMIN}"}))
    keep(httpx.get(f"{base}/readyz"))
    client.close()

    spans = receiver.wait_until(lambda found: sum(s.name.startswith("chat") for s in found) >= 4)
    metrics = httpx.get(f"{base}/metrics", headers={"accept": "application/openmetrics-text"}).text
    with closing(sqlite3.connect(db)) as conn:
        # audit records are group-committed every 10 ms
        eventually(lambda: conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0] >= 12)
        store_dump = "\n".join(conn.iterdump())
    assert 'INSERT INTO "audit"' in store_dump  # the audit log is there to be scanned
    _scan("the logs", caplog.text, seeds)
    _scan("the spans", json.dumps([s.attributes for s in spans] + [s.name for s in spans]), seeds)
    _scan("the metrics", metrics, seeds)
    _scan("the store", store_dump, seeds)
    _scan("the response headers", "\n".join(headers_seen), seeds)
