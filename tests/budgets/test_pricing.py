"""Prices: lookup by exact name, date suffix and prefix; cost of cached and reasoning tokens."""

from __future__ import annotations

import pytest

from hookgate.budgets.pricing import Price, Pricing
from hookgate.wire.usage import Usage


def test_lookup_variants() -> None:
    pricing = Pricing()
    assert pricing.price("gpt-4o-mini") == Price(0.15, 0.60, 0.075)
    assert pricing.price("gpt-4o-mini-2024-07-18") == pricing.price("gpt-4o-mini")
    assert pricing.price("openai/gpt-4o") == pricing.price("gpt-4o")
    assert pricing.price("claude-sonnet-4-20250514") == pricing.price("claude-sonnet-4")
    assert pricing.price("my-local-llama") is None
    assert pricing.price("mistral-large-2411") == pricing.price("mistral-large-latest")
    assert pricing.price("gemini-2.0-flash-001") == pricing.price("gemini-2.0-flash")
    # a variant is not its base model: a prefix match priced o1-pro at a tenth of its price
    assert pricing.price("o1-pro-2025-03-19") == Price(150.0, 600.0)
    assert pricing.price("gpt-5-pro") != pricing.price("gpt-5")
    assert pricing.price("gpt-4o-realtime-preview") is None  # unknown: refused, not guessed
    assert pricing.price("o3-deep-research") != pricing.price("o3")


def test_cost_splits_cached_and_reasoning() -> None:
    pricing = Pricing({"m": Price(input=1.0, output=4.0, cached_input=0.5, reasoning=8.0)})
    usage = Usage(
        input_tokens=1000, output_tokens=500, cached_input_tokens=400, reasoning_tokens=100
    )
    # 600 * 1 + 400 * 0.5 + 400 * 4 + 100 * 8 = 3200 per 1M
    assert pricing.cost("m", usage) == pytest.approx(3200 / 1_000_000)
    assert Pricing().cost("unknown", usage) is None


def test_overrides_win() -> None:
    assert Pricing({"gpt-4o": Price(9.0, 9.0)}).price("gpt-4o") == Price(9.0, 9.0)


def test_an_hour_s_cache_writes_cost_twice_the_input_price() -> None:
    """Anthropic bills writes kept five minutes at 1.25 times the input price and writes
    kept an hour at twice it; the usage says how many of each."""
    from hookgate.wire.usage import message_usage

    usage = message_usage({
        "input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    })  # fmt: skip
    assert (usage.cache_write_tokens, usage.cache_write_1h_tokens) == (3000, 2000)
    # claude-sonnet-4-5: $3/M input, $3.75/M 5-minute writes, $6/M hour writes, $15/M output
    expected = 100 * 3 + 1000 * 3.75 + 2000 * 6 + 10 * 15
    assert Pricing().cost("claude-sonnet-4-5", usage) == pytest.approx(expected / 1_000_000)
    priced = Pricing({"m": Price(1.0, 1.0, cache_write_1h=5.0)}).cost("m", usage)
    assert priced == pytest.approx((100 + 1000 + 2000 * 5 + 10) / 1_000_000)
