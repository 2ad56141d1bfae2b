"""Shared services a policy may need (the store, prices, the budget ledger).

Handed to each policy once, when its pipeline is built, through :meth:`Policy.attach`.
"""

from __future__ import annotations

from dataclasses import dataclass

from hookgate.budgets.ledger import Ledger
from hookgate.budgets.pricing import Pricing
from hookgate.budgets.rates import RateLimiter
from hookgate.store.base import Store


@dataclass(frozen=True, slots=True)
class Services:
    store: Store
    pricing: Pricing
    ledger: Ledger
    rates: RateLimiter
    metric_labels: frozenset[str] = frozenset()
    """Identity scopes (``team``, ``key``) that may name a metric series
    (``server.metric_labels``); none in the SDK."""
