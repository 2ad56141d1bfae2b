"""Everything built from one config, swapped as a unit on reload.

A request reads :attr:`RuntimeHolder.current` once, at its start, and uses that
:class:`Runtime` to the end: an edit to the YAML never changes a request mid-flight.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import aiohttp

from hookgate.budgets.ledger import Ledger
from hookgate.budgets.pricing import Price, Pricing
from hookgate.budgets.rates import RateLimiter
from hookgate.config.loader import LoadedConfig
from hookgate.config.policy_sets import DEFAULT, Selector
from hookgate.config.schema import Config
from hookgate.pipeline.hooks import Policy
from hookgate.pipeline.pipeline import Pipeline
from hookgate.pipeline.services import Services
from hookgate.providers.base import Provider
from hookgate.providers.catalog import ModelCatalog
from hookgate.providers.routing import Router, build_providers
from hookgate.providers.terminal import Upstreams
from hookgate.server.jwt_auth import JwtVerifier
from hookgate.server.static_keys import StaticKeys
from hookgate.store.base import Store
from hookgate.wire.headers import RequestHeaderFilter

log = logging.getLogger("hookgate")


@dataclass(frozen=True, slots=True)
class Runtime:
    """A loaded config turned into the objects requests use."""

    config: Config
    pipelines: Mapping[str, Pipeline]
    """Each policy set's pipeline, ``default`` included."""
    selector: Selector
    sets: Mapping[str, tuple[Policy, ...]]
    """Each set's policies as configured, the SDK's own too (``hookgate explain``)."""
    policies: tuple[Policy, ...]
    """Every distinct proxy policy of every set, each once."""
    router: Router
    providers: Mapping[str, Provider]
    forward: RequestHeaderFilter
    relay: Provider
    """The provider the generic ``/v1/*`` relay talks to."""
    models: ModelCatalog
    """What ``GET /v1/models`` lists."""
    pricing: Pricing
    static_keys: StaticKeys
    """``keys.static``, as digests."""
    jwt: JwtVerifier | None
    """``keys.jwt``: checks signed tokens (None when off)."""
    generation: int
    source: str

    @property
    def pipeline(self) -> Pipeline:
        """The ``default`` set's pipeline."""
        return self.pipelines[DEFAULT]

    async def aclose(self) -> None:
        """Close every policy once (sets share instances)."""
        for policy in self.policies:
            await policy.aclose()


def build_runtime(
    loaded: LoadedConfig,
    session: Callable[[], aiohttp.ClientSession],
    generation: int,
    store: Store,
    ledger: Ledger,
    rates: RateLimiter,
) -> Runtime:
    """Build the objects of one config generation (the store and ledger outlive it)."""
    config = loaded.config
    providers = build_providers(config, session)
    router = Router(config.models)
    pricing = Pricing({m: Price(**p.model_dump()) for m, p in config.pricing.items()})
    services = Services(
        store=store,
        pricing=pricing,
        ledger=ledger,
        rates=rates,
        metric_labels=frozenset(config.server.metric_labels),
    )
    policies = tuple(p for p in loaded.all_policies if "proxy" in p.runs_in)
    for policy in loaded.all_policies:
        if "proxy" not in policy.runs_in:
            log.info("policy %s runs in the SDK only; the proxy skips it", policy.name)
    for policy in policies:
        policy.attach(services)
    terminal = Upstreams(providers)
    return Runtime(
        config=config,
        pipelines={
            name: Pipeline(
                [p for p in listed if "proxy" in p.runs_in], terminal, checks_returned_calls=True
            )
            for name, listed in loaded.sets.items()
        },
        selector=Selector(config.policy_sets, loaded.sets),
        sets=loaded.sets,
        policies=policies,
        router=router,
        providers=providers,
        forward=RequestHeaderFilter(config.server.forward_headers),
        relay=providers[_relay_provider(config, router)],
        models=ModelCatalog(
            router.aliases, router.wildcard, providers, config.server.models_cache_s
        ),
        pricing=pricing,
        static_keys=StaticKeys(config.keys.static),
        jwt=None if config.keys.jwt is None else JwtVerifier(config.keys.jwt, session),
        generation=generation,
        source=loaded.source,
    )


def _relay_provider(config: Config, router: Router) -> str:
    if config.server.relay_provider is not None:
        return config.server.relay_provider
    if router.wildcard:
        return router.wildcard[0].provider
    return next(iter(config.providers))


class RuntimeHolder:
    """Holds the current runtime; replacing it is one atomic reference swap."""

    def __init__(self, runtime: Runtime) -> None:
        self.current = runtime
