"""Metrics: bounded labels, and what one outcome records (read back from the exposition)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from hookgate.pipeline.observe import Attempt, Observation, Outcome, UpstreamAddress
from hookgate.telemetry.metrics import BoundedLabel, Metrics
from hookgate.wire.usage import Usage


def test_bounded_label_admits_known_then_limits_others() -> None:
    label = BoundedLabel(["fast"], limit=2)
    assert [label(v) for v in ["fast", "a", "b", "c", "a", None]] == [
        "fast",
        "a",
        "b",
        "other",
        "a",
        "none",
    ]


def sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.split()[-1])
    raise AssertionError(f"{name} {labels} not found")


def test_observe_records_every_family() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    observation = Observation()
    observation.decide("pii", "modify")
    address = UpstreamAddress("openai", "127.0.0.1", 8080)
    observation.attempts += [
        Attempt("up/a", "http_503", address, 1, 2, "upstream answered 503"),
        Attempt("up/b", "ok", address, 3, 4),
    ]
    outcome = Outcome(
        status=200,
        stream=True,
        target="up/b",
        usage=Usage(100, 20, 40, 5),
        duration_s=0.5,
        upstream_s=0.4992,
        ttft_s=0.1,
    )
    metrics.observe("chat.completions", "fast", outcome, observation, cost=0.25)
    text = generate_latest(registry).decode()
    assert sample(text, "hookgate_requests_total", model="fast", target="up/b", status="200") == 1
    assert sample(text, "hookgate_tokens_total", type="cached_input") == 40
    assert sample(text, "hookgate_cost_usd_total", model="fast") == 0.25
    assert sample(text, "hookgate_policy_decisions_total", policy="pii", decision="modify") == 1
    assert sample(text, "hookgate_upstream_attempts_total", target="up/a", outcome="http_503") == 1
    assert sample(text, "hookgate_overhead_seconds_bucket", le="0.001") == 1  # 0.8 ms of own time
    assert sample(text, "hookgate_overhead_seconds_bucket", le="0.0005") == 0
    assert sample(text, "hookgate_time_to_first_token_seconds_count") == 1
