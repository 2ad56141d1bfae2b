"""``GET /v1/models``: the configured aliases and, behind ``"*"``, the providers' own models.

A ``"*"`` route serves any model name its provider knows, so a model picker filled from
``/v1/models`` must see the provider's list too. Each provider behind ``"*"`` is asked once
per ``server.models_cache_s`` (concurrent listings share one request); a provider that
cannot list (down, an error) is left out with one log line per attempt, never a 5xx; a
local echo provider lists nothing. A catalogue belongs to one config generation, so a
reload refreshes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hookgate.errors import HookgateError
from hookgate.pipeline.types import Target
from hookgate.providers.base import Provider

log = logging.getLogger("hookgate")


def alias_object(alias: str) -> dict[str, Any]:
    """The model object of a configured alias."""
    return {"id": alias, "object": "model", "created": 0, "owned_by": "hookgate"}


class ModelCatalog:
    """The model list of one config generation (see the module docstring)."""

    def __init__(
        self,
        aliases: Sequence[str],
        wildcard: Sequence[Target] | None,
        providers: Mapping[str, Provider],
        ttl_s: float,
    ) -> None:
        self._aliases = list(aliases)
        names = dict.fromkeys(t.provider for t in wildcard or ())
        self._listed = [providers[n] for n in names]
        self._ttl_s = ttl_s
        self._cached: dict[str, tuple[float, list[dict[str, Any]]]] = {}
        self._pending: dict[str, asyncio.Task[list[dict[str, Any]]]] = {}

    async def models(self) -> list[dict[str, Any]]:
        """Aliases first, then each ``"*"`` provider's models in its order, without an id
        twice."""
        listed = await asyncio.gather(*(self._of(p) for p in self._listed))
        out = [alias_object(alias) for alias in self._aliases]
        seen = set(self._aliases)
        for models in listed:
            for model in models:
                if model["id"] not in seen:
                    seen.add(model["id"])
                    out.append(model)
        return out

    async def _of(self, provider: Provider) -> list[dict[str, Any]]:
        cached = self._cached.get(provider.name)
        if cached is not None and time.monotonic() - cached[0] < self._ttl_s:
            return cached[1]
        task = self._pending.get(provider.name)
        if task is None:
            task = asyncio.ensure_future(self._fetch(provider))
            self._pending[provider.name] = task
            task.add_done_callback(lambda _: self._pending.pop(provider.name, None))
        return await asyncio.shield(task)

    async def _fetch(self, provider: Provider) -> list[dict[str, Any]]:
        try:
            models = await provider.models()
        except HookgateError as exc:  # a listing is a convenience: never fail for it
            log.warning("models: provider %r cannot list its models: %s", provider.name, exc)
            models = []
        self._cached[provider.name] = (time.monotonic(), models)
        return models
