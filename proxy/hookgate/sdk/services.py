"""The shared services an in-process gate hands its policies (see ``Policy.attach``)."""

from __future__ import annotations

from hookgate.budgets.pricing import Price, Pricing
from hookgate.config.schema import Config
from hookgate.pipeline.services import Services
from hookgate.store.open import open_budgets, open_store


def sdk_services(config: Config) -> Services:
    """Services for a config used in-process: its store (opened on first use), its prices.

    The same store as the proxy's means the same deployment secret, so the ``pii`` policy
    makes the same placeholders in both places.
    """
    store = open_store(config.store)
    pricing = Pricing({m: Price(**p.model_dump()) for m, p in config.pricing.items()})
    ledger, rates = open_budgets(store)
    return Services(store=store, pricing=pricing, ledger=ledger, rates=rates)
