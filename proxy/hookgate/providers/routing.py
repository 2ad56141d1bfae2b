"""Model aliases → ordered targets, and one provider object per configured provider."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import aiohttp

from hookgate.config.schema import (
    AnthropicProviderConfig,
    AzureProviderConfig,
    Config,
    EchoProviderConfig,
    GeminiProviderConfig,
    ProviderSettings,
    TargetConfig,
)
from hookgate.errors import NotFound
from hookgate.pipeline.types import Target
from hookgate.providers.anthropic import AnthropicProvider
from hookgate.providers.azure import AzureProvider
from hookgate.providers.base import Provider
from hookgate.providers.echo import EchoProvider
from hookgate.providers.gemini import GeminiProvider
from hookgate.providers.http import HttpProvider
from hookgate.providers.openai import OpenAIProvider
from hookgate.providers.translating import TranslatingProvider

log = logging.getLogger("hookgate")

WILDCARD = "*"


class Router:
    """Resolves the ``model`` a client sends to the alias's targets, in fallback order."""

    def __init__(self, models: Mapping[str, Sequence[TargetConfig]]) -> None:
        self._routes = {
            alias: tuple(
                Target(
                    t.provider,
                    t.model,
                    i if t.priority is None else t.priority,
                    t.weight,
                    t.context_window,
                    t.max_output_tokens,
                    t.reasoning,
                    t.prefill,
                )
                for i, t in enumerate(targets)
            )
            for alias, targets in models.items()
        }
        self._wildcard = self._routes.pop(WILDCARD, None)

    @property
    def aliases(self) -> list[str]:
        """The configured aliases, without ``"*"``."""
        return list(self._routes)

    @property
    def wildcard(self) -> tuple[Target, ...] | None:
        """The targets of ``"*"``, if configured."""
        return self._wildcard

    def targets(self, model: str) -> tuple[Target, ...]:
        """The targets for ``model``; raises a 404 ``model_not_found`` when there are none."""
        targets = self._routes.get(model, self._wildcard)
        if targets is None:
            raise NotFound(
                f"The model '{model}' does not exist or you do not have access to it.",
                param="model",
                code="model_not_found",
            )
        return targets


def build_providers(
    config: Config, session: Callable[[], aiohttp.ClientSession]
) -> dict[str, Provider]:
    """One provider object per configured provider, sharing the app's session: an HTTP
    provider behind a :class:`TranslatingProvider`, or the echo provider."""
    providers: dict[str, Provider] = {}
    for name, settings in config.providers.items():
        if isinstance(settings, EchoProviderConfig):
            providers[name] = EchoProvider(name)
        elif settings.key_missing:
            log.warning(
                "provider %r has no api_key; answering its requests with the built-in "
                "echo provider (set the key to reach %s)",
                name,
                settings.base_url,
            )
            providers[name] = EchoProvider(name)
        else:
            providers[name] = TranslatingProvider(_http_provider(name, settings, session))
    return providers


def _http_provider(
    name: str, settings: ProviderSettings, session: Callable[[], aiohttp.ClientSession]
) -> HttpProvider:
    if isinstance(settings, AzureProviderConfig):
        return AzureProvider(name, settings, session)
    if isinstance(settings, AnthropicProviderConfig):
        return AnthropicProvider(name, settings, session)
    if isinstance(settings, GeminiProviderConfig):
        return GeminiProvider(name, settings, session)
    return OpenAIProvider(name, settings, session)
