"""Model aliases → ordered targets, and the terminal handler that sends to a target."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import aiohttp

from proxy.config.schema import Config, TargetConfig
from proxy.errors import NotFound
from proxy.pipeline.types import Context, ModelCall, ModelResponse, Target
from proxy.providers.base import Provider
from proxy.providers.echo import EchoProvider
from proxy.providers.openai import OpenAIProvider

log = logging.getLogger("hookgate")

WILDCARD = "*"


class Router:
    """Resolves the ``model`` a client sends to the alias's targets, in fallback order."""

    def __init__(self, models: Mapping[str, Sequence[TargetConfig]]) -> None:
        self._routes = {
            alias: tuple(Target(t.provider, t.model) for t in targets)
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
    """One provider object per configured provider, sharing the app's session."""
    providers: dict[str, Provider] = {}
    for name, settings in config.providers.items():
        if settings.type == "echo":
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
            providers[name] = OpenAIProvider(name, settings, session)
    return providers


class Upstreams:
    """The terminal handler of the ``on_model_call`` onion: sends to ``call.targets[0]``.

    Rewrites ``model`` to the target's upstream name when it differs (the only change the
    proxy itself makes to a body).
    """

    def __init__(self, providers: Mapping[str, Provider]) -> None:
        self._providers = providers

    async def __call__(self, call: ModelCall, ctx: Context) -> ModelResponse:
        target = call.targets[0]
        if target.model is not None and call.body.get("model") != target.model:
            call = call.with_body({**call.body, "model": target.model})
        return await self._providers[target.provider].send(call, target)
