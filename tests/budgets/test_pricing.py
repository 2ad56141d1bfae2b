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
