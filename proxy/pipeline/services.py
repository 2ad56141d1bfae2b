"""Shared services a policy may need (the store, prices, the budget ledger).

Handed to each policy once, when its pipeline is built, through :meth:`Policy.attach`.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.budgets.ledger import Ledger
from proxy.budgets.pricing import Pricing
from proxy.budgets.rates import RateLimiter
from proxy.store.base import Store


@dataclass(frozen=True, slots=True)
class Services:
    store: Store
    pricing: Pricing
    ledger: Ledger
    rates: RateLimiter
