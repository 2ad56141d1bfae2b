"""HTTP routes: the model endpoints, ``/v1/models``, health, and the generic relay."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from aiohttp import web
from prometheus_client.exposition import choose_encoder

from hookgate.errors import (
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    RequestTimeout,
)
from hookgate.pipeline.runner import ObservedStream
from hookgate.pipeline.types import Api, ModelCall
from hookgate.providers.catalog import alias_object
from hookgate.providers.translating import StreamTranslator
from hookgate.server import admin, health, peers, responses_socket
from hookgate.server.appkeys import GRANTS, HOLDER, METRICS, REQUEST_ID, WORKER
from hookgate.server.auth import authenticate, check_model
from hookgate.server.calls import ModelRequest, model_call_of, request_context
from hookgate.server.relay import forward, relay
from hookgate.server.runtime import Runtime
from hookgate.server.streaming import relay_stream

log = logging.getLogger("hookgate")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

MODEL_ENDPOINTS: dict[str, Api] = {
    "/v1/chat/completions": "chat.completions",
    "/v1/responses": "responses",
    "/v1/completions": "completions",
    "/v1/embeddings": "embeddings",
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "messages.count_tokens",
}


def speaks_anthropic(path: str) -> bool:
    """Whether ``path`` is one of Anthropic's routes, whose errors take Anthropic's shape."""
    return path == "/v1/messages" or path.startswith("/v1/messages/")


def add_routes(app: web.Application, *, ops: bool = True) -> None:
    """Register the model, relay and admin routes on ``app``, and the ops endpoints
    unless ``ops`` is false (they are on a listener of their own)."""
    for path, api in MODEL_ENDPOINTS.items():
        app.router.add_post(path, _model_handler(api))
    responses_socket.add_routes(app)  # before the relay's "*"
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/v1/models/{model}", get_model)
    app.router.add_route("*", "/v1/{tail:.*}", relay)
    admin.add_routes(app)
    if ops:
        add_ops_routes(app)


def add_ops_routes(app: web.Application) -> None:
    """Register ``/healthz``, ``/readyz`` and ``/metrics`` on ``app``."""
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_endpoint)


def _model_handler(api: Api) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return await model_call(request, api)

    return handle


@dataclasses.dataclass(frozen=True, slots=True)
class Ingress:
    """A client API the pipeline runs as another (the Gemini API as Chat Completions):
    how its request is read as a call in :attr:`runs`, and how the answer goes back."""

    runs: Api
    """The API the policies see the call in."""
    read: Callable[[web.Request, Runtime], Awaitable[ModelCall]]
    answer: Callable[[Mapping[str, Any], str], dict[str, Any]]
    """The client's answer for a body in :attr:`runs`, given the model it named."""
    stream: Callable[[str], StreamTranslator]
    """A translator of a stream in :attr:`runs` to the client's, given the model."""


async def model_call(
    request: web.Request, api: Api, ingress: Ingress | None = None
) -> web.StreamResponse:
    """Serve one model endpoint request through the current pipeline, observed (see
    :mod:`hookgate.server.calls`); with ``ingress``, a request in ``api`` (the name in
    metrics, the audit record and policy set routes) translated to ``ingress.runs`` and
    back."""
    runtime = request.app[HOLDER].current
    runs = api if ingress is None else ingress.runs
    ctx = request_context(request.headers, request[REQUEST_ID], runs)
    async with ModelRequest(request.app, runtime, ctx, api=api) as served:
        caller = await authenticate(request, runtime, request.app[GRANTS])
        call = await (_read_call(request, runtime, api) if ingress is None
                      else ingress.read(request, runtime))  # fmt: skip
        response = await served.run(caller, call)
        out_headers = served.response_headers(response)
        model = call.model
        if response.stream is not None:
            assert isinstance(response.stream, ObservedStream)
            translator = None if ingress is None else ingress.stream(model)
            return await relay_stream(request, response.status, out_headers, response.stream,
                                      api=api, translator=translator)  # fmt: skip
        assert response.payload is not None
        out_headers.setdefault("content-type", "application/json")
        body = response.payload.to_bytes()
        if ingress is not None and response.status < 300:
            body = orjson.dumps(ingress.answer(response.body, model))
        return web.Response(status=response.status, body=body, headers=out_headers)


async def read_json(request: web.Request, runtime: Runtime) -> dict[str, Any]:
    """The request's JSON object body, within the server's size and time limits."""
    server = runtime.config.server
    if request.content.is_eof():  # all of it is here already: nothing to time
        return parse_object(await read_body(request, server.max_body_bytes))
    try:
        async with asyncio.timeout(server.body_timeout_s):
            raw = await read_body(request, server.max_body_bytes)
    except TimeoutError:
        raise RequestTimeout(
            f"the request body did not arrive within {server.body_timeout_s:g}s"
        ) from None
    return parse_object(raw)


async def _read_call(request: web.Request, runtime: Runtime, api: Api) -> ModelCall:
    return model_call_of(
        await read_json(request, runtime), runtime, api, request.headers,
        request.rel_url.raw_query_string,
    )  # fmt: skip


async def read_body(request: web.Request, limit: int) -> bytes:
    """The whole request body, refusing (413) anything over ``limit`` bytes.

    The limit holds for the body as decoded: a ``Content-Encoding: gzip`` body of 100 KB
    may inflate to 100 MB, so only a plain body's ``Content-Length`` is trusted."""
    length = request.content_length
    if length is not None and length > limit:
        raise PayloadTooLarge(f"request body of {length} bytes exceeds the limit of {limit}")
    if length is not None and "content-encoding" not in request.headers:
        return await request.read()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_object(raw: bytes) -> dict[str, Any]:
    """Parse a JSON object body, or raise a 400 saying what is wrong."""
    if not raw.strip():
        raise InvalidRequest("the request body is empty; a JSON object is required")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(
            f"We could not parse the JSON body of your request ({exc.msg} at byte {exc.pos})."
        ) from None
    if not isinstance(body, dict):
        raise InvalidRequest("the request body must be a JSON object")
    return body


async def list_models(request: web.Request) -> web.Response:
    """``GET /v1/models``: the configured aliases and, behind ``"*"``, the providers' own
    models (see :mod:`hookgate.providers.catalog`), those the caller's key may use."""
    runtime = request.app[HOLDER].current
    caller = await authenticate(request, runtime, request.app[GRANTS])
    models = await runtime.models.models()
    data = [m for m in models if caller.allows(m["id"])]
    return _json({"object": "list", "data": data})


async def get_model(request: web.Request) -> web.StreamResponse:
    """``GET /v1/models/{model}``: a configured alias, else the provider behind ``"*"``
    answers (the caller's key permitting)."""
    runtime = request.app[HOLDER].current
    model = request.match_info["model"]
    caller = await authenticate(request, runtime, request.app[GRANTS])
    check_model(caller, model)
    if model in runtime.router.aliases:
        return _json(alias_object(model))
    if runtime.router.wildcard is None:
        raise NotFound(
            f"The model '{model}' does not exist or you do not have access to it.",
            param="model",
            code="model_not_found",
        )
    return await forward(request, runtime, runtime.providers[runtime.router.wildcard[0].provider])


async def healthz(request: web.Request) -> web.Response:
    """Liveness: the process answers."""
    return _json({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """Readiness (:func:`hookgate.server.health.readiness`); with workers, of every worker
    (:func:`hookgate.server.peers.readiness`): ready only when each one is."""
    worker = request.app.get(WORKER)
    if worker is None:
        ready, body = await health.readiness(request.app)
    else:
        ready, body = await peers.readiness(request.app, worker)
    return _json(body, status=200 if ready else 503)


async def metrics_endpoint(request: web.Request) -> web.Response:
    """Prometheus exposition; OpenMetrics (with exemplars) when the scraper asks for it."""
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    body = encoder(request.app[METRICS].exposition)
    response = web.Response(body=body)
    response.headers["content-type"] = content_type
    return response


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(data), content_type="application/json")
