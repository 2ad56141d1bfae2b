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

from hookgate.config.policy_sets import RequestFacts, Selection
from hookgate.errors import (
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    RequestTimeout,
)
from hookgate.pipeline.observe import Outcome
from hookgate.pipeline.runner import ObservedCall, ObservedStream, audit_record, cost, finish
from hookgate.pipeline.types import ANONYMOUS, Api, Context, JsonBody, ModelCall
from hookgate.providers.catalog import alias_object
from hookgate.server import admin, exposure
from hookgate.server.appkeys import GRANTS, HOLDER, LISTEN_HOST, METRICS, REQUEST_ID, STORE
from hookgate.server.auth import Caller, authenticate, check_model
from hookgate.server.relay import forward, relay
from hookgate.server.runtime import Runtime
from hookgate.server.streaming import StreamTranslator, relay_stream
from hookgate.store.base import Store, display_url
from hookgate.telemetry.metrics import IDENTITY_LABELS, Metrics

log = logging.getLogger("hookgate")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

MAX_MODEL_CHARS = 256

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


MAX_LABEL_CHARS = 256


def label_header(headers: Mapping[str, str], name: str) -> str | None:
    """A client-chosen id header (agent, session, reply). It lands in the store, the audit
    log and spans: printable text of at most :data:`MAX_LABEL_CHARS` characters, else 400
    (aiohttp hands bytes that are not UTF-8 on as surrogates, which no encoder takes)."""
    value = headers.get(name)
    if value is not None and (len(value) > MAX_LABEL_CHARS or not value.isprintable()):
        raise InvalidRequest(
            f"the {name} header must be printable UTF-8 text of at most "
            f"{MAX_LABEL_CHARS} characters",
            param=name,
            code="invalid_header",
        )
    return value


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
    :mod:`hookgate.pipeline.runner`); with ``ingress``, a request in ``api`` (the name in
    metrics, the audit record and policy set routes) translated to ``ingress.runs`` and
    back."""
    runtime = request.app[HOLDER].current
    metrics = request.app[METRICS]
    headers = request.headers
    model = ""

    async def ended(ctx: Context, outcome: Outcome) -> None:
        # Off the latency path: the server writes the response before the loop runs this.
        asyncio.get_running_loop().call_soon(
            _record, request.app[STORE], runtime, metrics, api, model, ctx, outcome
        )

    observed = ObservedCall(
        Context(
            request_id=request[REQUEST_ID],
            api=api if ingress is None else ingress.runs,
            agent=label_header(headers, "x-hookgate-agent"),
            session_id=label_header(headers, "x-hookgate-session-id"),
            reply_id=label_header(headers, "x-hookgate-reply-id"),
        ),
        ended=ended,
    )
    in_flight = metrics.in_flight_gauge(api)
    in_flight.inc()
    try:
        caller = await authenticate(request, runtime, request.app[GRANTS])
        call = await (_read_call(request, runtime, api) if ingress is None
                      else ingress.read(request, runtime))  # fmt: skip
        model = call.model
        check_model(caller, model)
        chosen = select_set(runtime, caller, route=api, agent=observed.ctx.agent, model=model)
        ctx = observed.ctx = dataclasses.replace(
            observed.ctx, identity=caller.identity, policy_set=chosen.name
        )
        ctx.observation.attributes["hookgate.policy_set"] = chosen.name
        pipeline = runtime.pipelines[chosen.name]
        response = await observed.run(pipeline, call, usage=pipeline.needs_usage)
        out_headers = {
            **response.headers,
            **ctx.response_headers,
            "x-hookgate-request-id": ctx.request_id,
            "x-hookgate-upstream": response.target.label(model),
            "x-hookgate-attempts": str(len(ctx.observation.attempts)),
            "x-hookgate-policy-set": ctx.policy_set,
        }
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
    except BaseException as exc:
        observed.failed(exc)
        raise
    finally:
        in_flight.dec()
        await observed.end()


def select_set(
    runtime: Runtime, caller: Caller, *, route: str, agent: str | None, model: str | None = None
) -> Selection:
    """The policy set of a request on ``route`` (an API, or ``mcp``) for ``caller`` (see
    :mod:`hookgate.config.policy_sets`)."""
    identity = caller.identity
    facts = RequestFacts(
        key=None if identity is ANONYMOUS else identity.key_id, team=identity.team,
        user=identity.user, model=model, agent=agent, route=route,
    )  # fmt: skip
    return runtime.selector.select(
        facts, key_set=caller.key_grants.policy_set, team_set=caller.team_grants.policy_set
    )


def _record(
    store: Store,
    runtime: Runtime,
    metrics: Metrics,
    api: Api,
    model: str,
    ctx: Context,
    outcome: Outcome,
) -> None:
    """Everything a finished request reports: finish callbacks, metrics, the audit record.
    Telemetry never fails a request: a failure is logged."""
    finish(ctx, outcome)
    cost_usd = cost(outcome, ctx, runtime.pricing)
    shown = runtime.config.server.metric_labels
    who = ctx.identity
    values = {"team": who.team, "key": who.key_id, "user": who.user, "agent": ctx.agent}
    identity = tuple((values[n] or "") if n in shown else "" for n in IDENTITY_LABELS)
    try:
        metrics.observe(api, model, outcome, ctx.observation, cost_usd, identity)
    except Exception:
        log.exception("recording metrics failed (request %s)", ctx.request_id)
    if runtime.config.audit.enabled:  # queued off the response path; a failure is logged
        store.submit_audit(audit_record(ctx, outcome, api=api, model=model, cost_usd=cost_usd))


async def read_json(request: web.Request, runtime: Runtime) -> dict[str, Any]:
    """The request's JSON object body, within the server's size and time limits."""
    server = runtime.config.server
    try:
        async with asyncio.timeout(server.body_timeout_s):
            raw = await read_body(request, server.max_body_bytes)
    except TimeoutError:
        raise RequestTimeout(
            f"the request body did not arrive within {server.body_timeout_s:g}s"
        ) from None
    return parse_object(raw)


async def _read_call(request: web.Request, runtime: Runtime, api: Api) -> ModelCall:
    body = await read_json(request, runtime)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("you must provide a model parameter", param="model")
    if len(model) > MAX_MODEL_CHARS or not model.isprintable():
        # It names metrics, spans and the x-hookgate-upstream header: no control characters.
        raise InvalidRequest(
            f"'model' must be a printable name of at most {MAX_MODEL_CHARS} characters",
            param="model",
        )
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise InvalidRequest("'stream' must be a boolean", param="stream")
    if api in ("embeddings", "messages.count_tokens"):
        stream = False  # these never stream; the field goes upstream as sent
    return ModelCall(
        api=api,
        # Sent re-encoded, never as received: the upstream gets exactly what the policies
        # checked. (Raw bytes with a duplicate key, {"messages": [PII], "messages": []},
        # were checked as the last one and sent with both.)
        payload=JsonBody.from_data(body),
        model=model,
        stream=stream,
        targets=runtime.router.targets(model),
        headers=runtime.forward(request.headers),
        query=request.rel_url.raw_query_string,
    )


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
    """Readiness: a config is loaded, the store answers (keys, spend and the audit log live
    there), and no policy reports itself unready (e.g. every circuit open); the body gives
    the config generation, providers, the store's state and each policy's status."""
    runtime = request.app[HOLDER].current
    policies = {p.name: status for p in runtime.policies if (status := p.status()) is not None}
    store = request.app[STORE]
    try:
        store_ready = await asyncio.wait_for(store.healthy(), READY_STORE_TIMEOUT_S)
    except TimeoutError:
        store_ready = False
    ready = store_ready and all(status.get("ready", True) for status in policies.values())
    warning = exposure.warning(runtime.config, request.app[LISTEN_HOST])
    body = {
        "status": "ready" if ready else "unavailable",
        "config": {"source": runtime.source, "generation": runtime.generation},
        "providers": sorted(runtime.providers),
        "store": {"url": display_url(store.url), "ready": store_ready},
        "policies": policies,
        "warnings": [warning] if warning is not None else [],
    }
    return _json(body, status=200 if ready else 503)


READY_STORE_TIMEOUT_S = 2.0
"""How long ``/readyz`` waits for the store to answer before calling it unready."""


async def metrics_endpoint(request: web.Request) -> web.Response:
    """Prometheus exposition; OpenMetrics (with exemplars) when the scraper asks for it."""
    encoder, content_type = choose_encoder(request.headers.get("accept", ""))
    body = encoder(request.app[METRICS].registry)
    response = web.Response(body=body)
    response.headers["content-type"] = content_type
    return response


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(data), content_type="application/json")
