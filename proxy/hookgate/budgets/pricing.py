"""USD prices per million tokens, and the cost of a response's usage.

A shipped table covers common OpenAI, Anthropic, Google and Mistral models; the config's
top-level ``pricing:`` section overrides or extends it. A model is looked up by its exact
name (after any ``provider/`` prefix), then without a snapshot suffix: a date or version
(``gpt-4o-2024-08-06``, ``claude-sonnet-4-20250514``, ``mistral-large-2411``,
``gemini-2.0-flash-001``) or ``-latest``. Nothing looser: a prefix match would price
``o1-pro`` as ``o1`` (a tenth of its price) and make every variant look priced. An unknown
model has no price: :func:`Pricing.cost` returns ``None`` and the caller decides (never
silently free; the budget refuses it unless ``unpriced: allow``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hookgate.wire.models import lookup
from hookgate.wire.usage import Usage


@dataclass(frozen=True, slots=True)
class Price:
    """USD per 1M tokens. ``cached_input`` (prompt-cache reads), ``cache_write``
    (prompt-cache writes, Anthropic's ``cache_creation_input_tokens``) default to
    ``input``, ``reasoning`` to ``output``; ``cache_write_1h`` (writes kept an hour,
    Anthropic's ``ephemeral_1h_input_tokens``) to twice ``input``, Anthropic's rate."""

    input: float
    output: float
    cached_input: float | None = None
    reasoning: float | None = None
    cache_write: float | None = None
    cache_write_1h: float | None = None


# USD per 1M tokens, list prices (standard tier). Override in YAML `pricing:`.
SHIPPED: Mapping[str, Price] = {
    # OpenAI
    "gpt-5": Price(1.25, 10.0, 0.125),
    "gpt-5-chat-latest": Price(1.25, 10.0, 0.125),
    "gpt-5-codex": Price(1.25, 10.0, 0.125),
    "gpt-5-pro": Price(15.0, 120.0),
    "gpt-5-mini": Price(0.25, 2.0, 0.025),
    "gpt-5-nano": Price(0.05, 0.40, 0.005),
    "gpt-4.1": Price(2.0, 8.0, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "gpt-4o": Price(2.50, 10.0, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "o1": Price(15.0, 60.0, 7.50),
    "o1-mini": Price(1.10, 4.40, 0.55),
    "o1-pro": Price(150.0, 600.0),
    "o3": Price(2.0, 8.0, 0.50),
    "o3-mini": Price(1.10, 4.40, 0.55),
    "o3-pro": Price(20.0, 80.0),
    "o3-deep-research": Price(10.0, 40.0, 2.50),
    "o4-mini": Price(1.10, 4.40, 0.275),
    "o4-mini-deep-research": Price(2.0, 8.0, 0.50),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    "text-embedding-3-small": Price(0.02, 0.0),
    "text-embedding-3-large": Price(0.13, 0.0),
    # Anthropic (cache writes at the 5-minute rate, 1.25 x input)
    "claude-opus-4": Price(15.0, 75.0, 1.50, cache_write=18.75),
    "claude-opus-4-1": Price(15.0, 75.0, 1.50, cache_write=18.75),
    "claude-sonnet-4": Price(3.0, 15.0, 0.30, cache_write=3.75),
    "claude-sonnet-4-5": Price(3.0, 15.0, 0.30, cache_write=3.75),
    "claude-sonnet-4-6": Price(3.0, 15.0, 0.30, cache_write=3.75),
    "claude-opus-4-5": Price(5.0, 25.0, 0.50, cache_write=6.25),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.10, cache_write=1.25),
    "claude-3-7-sonnet": Price(3.0, 15.0, 0.30, cache_write=3.75),
    "claude-3-5-haiku": Price(0.80, 4.0, 0.08, cache_write=1.0),
    "claude-haiku-4": Price(1.0, 5.0, 0.10, cache_write=1.25),
    # Google
    "gemini-2.5-pro": Price(1.25, 10.0, 0.31),
    "gemini-2.5-flash": Price(0.30, 2.50, 0.075),
    "gemini-2.5-flash-lite": Price(0.10, 0.40, 0.025),
    "gemini-2.0-flash": Price(0.10, 0.40, 0.025),
    # Mistral
    "mistral-large": Price(2.0, 6.0),
    "mistral-medium": Price(0.40, 2.0),
    "mistral-small": Price(0.10, 0.30),
    "codestral": Price(0.30, 0.90),
}


class Pricing:
    """Looks up prices; built once per config."""

    def __init__(self, overrides: Mapping[str, Price] | None = None) -> None:
        self._table = {**SHIPPED, **(overrides or {})}
        self._cache: dict[str, Price | None] = {}

    def price(self, model: str) -> Price | None:
        """The price of ``model``, or None when it is not priced."""
        if model in self._cache:
            return self._cache[model]
        found = lookup(self._table, model)
        if len(self._cache) < 10_000:
            self._cache[model] = found
        return found

    def cost(self, model: str, usage: Usage) -> float | None:
        """USD for ``usage`` on ``model``; None when the model has no price."""
        price = self.price(model)
        if price is None:
            return None
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        written = min(usage.cache_write_tokens, usage.input_tokens - cached)
        hour = min(usage.cache_write_1h_tokens, written)
        reasoning = min(usage.reasoning_tokens, usage.output_tokens)
        cached_rate = price.input if price.cached_input is None else price.cached_input
        write_rate = price.input if price.cache_write is None else price.cache_write
        hour_rate = 2 * price.input if price.cache_write_1h is None else price.cache_write_1h
        reasoning_rate = price.output if price.reasoning is None else price.reasoning
        total = (
            (usage.input_tokens - cached - written) * price.input
            + cached * cached_rate
            + (written - hour) * write_rate
            + hour * hour_rate
            + (usage.output_tokens - reasoning) * price.output
            + reasoning * reasoning_rate
        )
        return total / 1_000_000
