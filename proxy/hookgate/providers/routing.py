"""Model aliases → ordered targets, and the terminal handler that sends to a target."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence

import aiohttp

from hookgate.config.schema import Config, TargetConfig
from hookgate.errors import HookgateError, NotFound, error_type
from hookgate.pipeline.observe import Attempt
from hookgate.pipeline.types import Context, ModelCall, ModelResponse, Target
from hookgate.providers.base import Provider
from hookgate.providers.echo import EchoProvider
from hookgate.providers.openai import OpenAIProvider
from hookgate.wire.usage import StreamFacts, observed

log = logging.getLogger("hookgate")

WILDCARD = "*"
CANCELLED = "cancelled"
"""Attempt outcome of an attempt cancelled from outside (a timeout, a client gone)."""


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
    proxy itself makes to a body). Each call is one *attempt*: it is timed into
    ``ctx.observation`` and recorded with its outcome and wall-clock bounds (the tracing
    policy turns attempts into spans when a call needed more than one); when the request
    is traced, the upstream receives the request span's context as ``traceparent``. For a
    stream the attempt ends when the upstream's headers arrive; the stream's usage and
    response facts are read from its events into ``ctx.observation.stream_facts``, so what
    policies later hide from the client (a usage chunk) is still counted.
    """

    def __init__(self, providers: Mapping[str, Provider]) -> None:
        self._providers = providers

    async def __call__(self, call: ModelCall, ctx: Context) -> ModelResponse:
        target = call.targets[0]
        provider = self._providers[target.provider]
        label = target.label(call.model)
        if target.model is not None and call.body.get("model") != target.model:
            call = call.with_body({**call.body, "model": target.model})
        observation = ctx.observation
        observation.sent_body = call.body
        address = observation.upstream = provider.address
        if observation.spans is not None:
            call = call.with_headers({**call.headers, **observation.spans.trace_headers()})
        started = time.perf_counter()
        started_ns = time.time_ns()
        try:
            response = await provider.send(call, target)
        except HookgateError as exc:
            observation.attempts.append(
                Attempt(label, error_type(exc), address, started_ns, time.time_ns(), exc.message)
            )
            raise
        except asyncio.CancelledError:
            # a timeout above us, or the client left; whoever cancelled may relabel it
            observation.attempts.append(
                Attempt(label, CANCELLED, address, started_ns, time.time_ns(), "attempt cancelled")
            )
            raise
        finally:
            observation.upstream_s += time.perf_counter() - started
        observation.attempts.append(Attempt(label, "ok", address, started_ns, time.time_ns()))
        if response.stream is not None:
            facts = StreamFacts(call.api, collect_text=observation.capture_output)
            observation.stream_facts = facts.facts
            response = dataclasses.replace(response, stream=observed(response.stream, facts))
        return response
