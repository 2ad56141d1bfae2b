"""The generic ``/v1/*`` relay: any method, any path, bodies streamed both ways.

Used for everything without a model pipeline (files, batches, uploads, vector stores,
...). Requests go only to the configured relay provider's ``base_url``; the path is
appended below it after :func:`path_problem` found nothing wrong with it, so no client
input can point the proxy anywhere else, and no spelling of a model endpoint that an
upstream server might normalise (``/v1/Chat/Completions``, ``/v1/chat%2Fcompletions``,
``/v1/chat/completions/``) can skip the pipeline.

The relay runs no policy, and what it reaches is the provider account's shared state
(every caller's files, batches, stored responses). A key limited to some models is
therefore refused here, and ``server.relay: false`` turns the relay off.
"""

from __future__ import annotations

import logging
from urllib.parse import unquote

from aiohttp import web

from hookgate.errors import (
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    PermissionDenied,
    UpstreamError,
)
from hookgate.providers.base import API_VERSION, Provider
from hookgate.server.appkeys import GRANTS, HOLDER, REQUEST_ID
from hookgate.server.auth import authenticate
from hookgate.server.runtime import Runtime

log = logging.getLogger("hookgate")

_BODY_HEADERS = ("content-type", "content-length")


async def relay(request: web.Request) -> web.StreamResponse:
    """The ``/v1/*`` handler: authenticate, check the relay may be used, forward."""
    runtime = request.app[HOLDER].current
    caller = await authenticate(request, runtime, request.app[GRANTS])
    if not runtime.config.server.relay:
        raise NotFound(
            f"Unknown request URL: {request.method} {request.path} (this proxy serves only "
            "the model endpoints: server.relay is off)"
        )
    if caller.limited:
        raise PermissionDenied(
            f"{caller.identity.key_id} is limited to some models and may not use "
            f"{request.method} {request.path}: the generic relay reaches the shared "
            "provider account with no policy.",
            code="relay_not_allowed",
        )
    return await forward(request, runtime)


async def forward(
    request: web.Request, runtime: Runtime, to: Provider | None = None
) -> web.StreamResponse:
    """Send ``request`` (already authenticated and allowed) to ``to`` (default: the relay
    provider) and stream its answer back; a provider that answers locally has nothing to
    relay to (404)."""
    provider = runtime.relay if to is None else to
    suffix = request.rel_url.raw_path.removeprefix("/v1")
    if (problem := path_problem(suffix)) is not None:
        raise InvalidRequest(f"The request path {problem}.", code="invalid_path")
    if suffix in _MODEL_PATHS and (request.method != "GET" or request.body_exists):
        # POST is the model route, with every policy; only a bodiless GET (a listing of
        # stored completions or responses) may be relayed past them.
        raise MethodNotAllowed(
            f"{request.method} {request.path} is not served: model requests are POST, and "
            "only a GET without a body is relayed"
        )
    headers = runtime.forward(request.headers)
    for name in _BODY_HEADERS:
        if name in request.headers:
            headers[name] = request.headers[name]
    if "content-encoding" in request.headers:
        # aiohttp hands the body on decoded: its encoded length no longer applies
        headers.pop("content-length", None)
    body = request.content.iter_any() if request.body_exists else None
    query = request.rel_url.raw_query_string
    async with provider.relay(request.method, suffix, query, headers, body) as upstream:
        relayed = {
            **upstream.headers,
            "x-hookgate-request-id": request[REQUEST_ID],
            "x-hookgate-upstream": provider.name,
        }
        if upstream.error is not None:
            return web.Response(status=upstream.status, headers=relayed, body=upstream.error)
        out = web.StreamResponse(status=upstream.status, headers=relayed)
        out.content_length = upstream.length
        await out.prepare(request)
        try:
            async for chunk in upstream.chunks:
                await out.write(chunk)
        except UpstreamError as exc:
            # The status is sent; the only honest signal left is a cut connection, so
            # the client sees an incomplete body instead of one that looks complete.
            log.warning("relay %s %s failed mid-body: %s", provider.name, request.path, exc.message)
            if request.transport is not None:
                request.transport.abort()
            return out
        await out.write_eof()
        return out


def path_problem(raw: str) -> str | None:
    """What is wrong with ``raw``, a relayed path below ``/v1`` as sent (still
    percent-encoded), or None. Pure.

    Refused: ``.``/``..`` segments (also encoded), encoded or back slashes, ``;`` path
    parameters, empty segments (``//``, a trailing ``/``), any other spelling of a
    model endpoint (case, percent-encoding), which some servers would route to it, and a
    path that starts with an API version again (``/v1/v1/...``, ``/v1/v1beta/...``: a
    client whose base URL already ended in one; no API has such a path, and relaying it
    would send a model request past every policy).
    """
    lowered = raw.lower()
    if "%2f" in lowered or "%5c" in lowered or "\\" in raw:
        return "may not contain encoded or back slashes"
    if "%25" in raw:
        return "may not be percent-encoded twice"
    if ";" in raw:
        return "may not contain ';' parameters"
    segments = unquote(raw).split("/")[1:]
    if any(segment in (".", "..") for segment in segments):
        return "may not contain '.' or '..' segments"
    if "" in segments:
        return "may not contain empty segments ('//' or a trailing '/')"
    decoded = unquote(lowered)
    if segments and API_VERSION.fullmatch(segments[0].lower()):
        return (
            f"repeats the API version (/v1/{segments[0]}/...): the client's base URL "
            "has one too many; give OpenAI clients http://HOST:PORT/v1, Anthropic and Gemini "
            "ones the host alone"
        )
    for endpoint in _MODEL_PATHS:
        if decoded == endpoint and raw != endpoint:
            return f"spells the model endpoint /v1{endpoint} differently; send it as written"
    return None


_MODEL_PATHS = ("/chat/completions", "/responses", "/completions", "/embeddings", "/models")
