"""Every PromQL query of every dashboard panel, evaluated by a real Prometheus that scraped
a real proxy under mixed traffic (successes, upstream errors, cut streams, blocks,
reloads and every policy the proxy has), must be valid and return data."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from dashboards.build import render
from hookgate.config.loader import load_file
from hookgate.server.app import create_app
from hookgate.wire import synth
from tests.conftest import TEST_STORE, UPSTREAM_KEY, openai_client
from tests.fakes import Events, FakeUpstream, LoopThread, RunningApp, Status
from tests.services import Prometheus

DASHBOARDS = Path("dashboards/grafana")
SUBSTITUTIONS = {"$__rate_interval": "1m", "$__range": "5m"}


def config(upstream: str, dead: str, bogus: bool = False) -> str:
    return (
        f"store: 'sqlite:///{TEST_STORE}'\n"
        f"providers:\n  up: {{base_url: '{upstream}', api_key: {UPSTREAM_KEY}}}\n"
        f"  dead: {{base_url: '{dead}'}}\n"
        "models:\n  fast: [{provider: up, model: gpt-4o-mini}]\n  broken: [{provider: dead}]\n"
        "  flaky: [{provider: dead, model: gpt-4o}, {provider: up, model: gpt-4.1-mini}]\n"
        '  "*": [{provider: up}]\n'
        "server: {reload_interval_s: 0.2, metric_labels: [team]}\n"
        "policies:\n"
        f"  - tracing: {{endpoint: '{dead}/v1/traces', max_queue_size: 2, timeout_s: 0.5}}\n"
        "  - system_prompt: {prepend: rules}\n"
        "  - tests.policies_for_tests:BlockWord: {word: forbidden}\n"
        "  - pii: {secret: dashboard-test-secret, actions: {US_SSN: block}, output: {}}\n"
        "  - budget: {limits: [{scope: model, window: day, usd: 5}], on_unpriced: continue}\n"
        # the breaker opens only for a target that always fails (the dead one): a round of
        # traffic gives the good target at most 5 failures in a row, and a reload starts
        # every breaker afresh, so fewer than 8 requests never decide
        "  - fallback: {retries: 1, backoff_base_s: 0.01,\n"
        "               circuit: {failures: 1000, failure_rate: 1.0, min_requests: 8, open_s: 1}}\n"
        + ("  - no_such_policy: {}\n" if bogus else "")
    )


@pytest.fixture
def proxy_and_prometheus(
    tmp_path: Path, loop_thread: LoopThread, upstream: FakeUpstream, refused_port: int
) -> Iterator[tuple[str, Prometheus, Path]]:
    dead = f"http://127.0.0.1:{refused_port}"
    path = tmp_path / "hookgate.yaml"
    path.write_text(config(upstream.base_url, dead))
    server = loop_thread.run(RunningApp(create_app(load_file(path))).start())
    prometheus = Prometheus(tmp_path, [f"127.0.0.1:{server.port}"])
    try:
        yield server.url, prometheus, path
    finally:
        prometheus.stop()
        loop_thread.run(server.stop())


def traffic(client: openai.OpenAI, upstream: FakeUpstream) -> None:
    """One round of every kind of request the dashboards chart."""
    client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "hi"}])
    client.chat.completions.create(model="m", messages=[])  # unpriced
    pii = "I'm Alice Johnson, alice@example.com, 459.502.4057."
    client.chat.completions.create(model="fast", messages=[{"role": "user", "content": pii}])
    upstream.push(synth.Reply(text="Call our desk on 212-555-0187."))  # masked in the answer
    client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError):  # an SSN: the pii policy blocks
        client.chat.completions.create(
            model="fast", messages=[{"role": "user", "content": "SSN 512-34-7890"}]
        )
    stream = client.chat.completions.create(
        model="fast", messages=[], stream=True, stream_options={"include_usage": True}
    )
    list(stream)
    client.responses.create(model="fast", input="x")
    client.embeddings.create(model="text-embedding-3-small", input="x")
    for step in (
        Status(500, {"error": {"message": "boom"}}),
        Status(429, {"error": {"message": "slow"}}),
    ):
        upstream.push(step, step)  # the first try and the fallback policy's one retry
        with pytest.raises(openai.APIStatusError):
            client.chat.completions.create(model="fast", messages=[])
    cut = list(synth.chat_stream("gpt-4o-mini", synth.Reply(text="abc"), include_usage=False))[:2]
    upstream.push(Events(cut))
    with pytest.raises(openai.APIError):
        list(client.chat.completions.create(model="fast", messages=[], stream=True))
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="fast", messages=[{"role": "user", "content": "forbidden"}]
        )
    with pytest.raises(openai.APIStatusError):
        client.chat.completions.create(model="broken", messages=[])
    client.chat.completions.create(model="flaky", messages=[])  # retries, falls back, opens
    with pytest.raises(openai.RateLimitError):  # a worst case beyond the budget
        client.chat.completions.create(model="fast", messages=[], max_tokens=100_000_000)


def panel_queries() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel["targets"]:
                expr = target["expr"]
                for name, value in SUBSTITUTIONS.items():
                    expr = expr.replace(name, value)
                out.append((path.stem, panel["title"], expr))
    return out


def has_finite_value(data: dict[str, Any]) -> bool:
    results = data["result"]
    values = [r["value"][1] for r in results] if data["resultType"] == "vector" else []
    return any(math.isfinite(float(v)) for v in values)


@pytest.mark.slow
def test_every_dashboard_query_returns_data(
    proxy_and_prometheus: tuple[str, Prometheus, Path], upstream: FakeUpstream, refused_port: int
) -> None:
    url, prometheus, path = proxy_and_prometheus
    client = openai_client(f"{url}/v1")
    upstream_url = upstream.base_url
    dead = f"http://127.0.0.1:{refused_port}"  # the same port the fixture's config names
    reloads = threading.Thread(
        target=lambda: (
            time.sleep(1),
            path.write_text(config(upstream_url, dead, bogus=True)),
            time.sleep(1),
            path.write_text(config(upstream_url, dead)),
        )
    )
    prometheus.wait_scraped(1)  # scraping has begun
    reloads.start()
    scraped = prometheus.scrapes()[1]
    started = time.monotonic()
    # Traffic spans the reloads and at least three scrapes, so every series a round
    # creates has two samples with requests between them: a rate that is not zero.
    while time.monotonic() - started < 6 or prometheus.scrapes()[1] < scraped + 3:
        assert time.monotonic() - started < 60, f"scrapes (all, ok): {prometheus.scrapes()}"
        traffic(client, upstream)
        time.sleep(0.2)
    reloads.join()
    prometheus.wait_scraped(2)  # a sample surely taken after the last request

    queries = panel_queries()
    deadline = time.monotonic() + 20  # rules and rates see a new sample a moment later
    while True:
        failures = []
        for dashboard, title, expr in queries:
            data = prometheus.query(expr)  # raises when Prometheus rejects the query
            if not has_finite_value(data):
                failures.append(f"{dashboard} / {title}: no data for {expr}")
        if not failures or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert not failures, "\n".join([f"scrapes (all, ok): {prometheus.scrapes()}", *failures])
    assert {dashboard for dashboard, _, _ in queries} == {
        "overview",
        "cost",
        "safety",
        "reliability",
    }
    # exemplars: latency histograms carry the trace id of a traced request
    exemplars = httpx.get(
        f"{prometheus.url}/api/v1/query_exemplars",
        params={
            "query": "hookgate_request_duration_seconds_bucket",
            "start": time.time() - 60,
            "end": time.time(),
        },
    ).json()["data"]
    assert any(
        len(e["labels"].get("trace_id", "")) == 32 for s in exemplars for e in s["exemplars"]
    )


def test_dashboard_json_is_generated_from_build_py() -> None:
    for name, text in render().items():
        assert (DASHBOARDS / name).read_text() == text, f"run python dashboards/build.py ({name})"
