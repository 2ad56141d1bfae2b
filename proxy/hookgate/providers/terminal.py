"""The terminal handler of the ``on_model_call`` onion: one attempt at one target.

Placed by code, never by YAML (like Envoy's router filter): the pipeline ends in it,
whatever policies are configured.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from hookgate.errors import HookgateError, error_type
from hookgate.pipeline.observe import CANCELLED, Attempt
from hookgate.pipeline.types import Context, ModelCall, ModelResponse
from hookgate.providers.base import Provider


class Upstreams:
    """The terminal handler of the ``on_model_call`` onion: sends to ``call.targets[0]``.

    Rewrites ``model`` to the target's upstream name when it differs (the only change the
    proxy itself makes to a body). Each call is one *attempt*: it is timed into
    ``ctx.observation`` and recorded with its outcome and wall-clock bounds (the tracing
    policy turns attempts into spans when a call needed more than one); when the request
    is traced, the upstream receives the request span's context as ``traceparent``. For a
    stream the attempt ends when the upstream's headers arrive (the pipeline reads the
    stream's facts from its events: see :mod:`hookgate.pipeline.pipeline`).
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
            response = await provider.send(call, target, observation)
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
        return response
