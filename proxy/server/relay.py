"""The generic ``/v1/*`` relay: any method, any path, bodies streamed both ways.

Used for everything without a model pipeline (files, batches, uploads, vector stores,
...). Requests go only to the configured relay provider's ``base_url``; the path is
appended below it after rejecting ``..`` segments, so no client input can point the
proxy anywhere else.
"""

from __future__ import annotations

import logging
from urllib.parse import unquote

from aiohttp import web
from yarl import URL

from proxy.errors import InvalidRequest, NotFound, UpstreamError
from proxy.providers.openai import translated
from proxy.server.auth import authenticate
from proxy.server.headers import response_headers
from proxy.server.keys import HOLDER, REQUEST_ID, SESSION, STORE
from proxy.server.runtime import relay_target

log = logging.getLogger("hookgate")

_BODY_HEADERS = ("content-type", "content-length")


async def relay(request: web.Request) -> web.StreamResponse:
    """Forward ``request`` to the relay provider and stream its answer back."""
    runtime = request.app[HOLDER].current
    await authenticate(request, runtime, request.app[STORE])
    provider = relay_target(runtime)
    if provider is None:
        raise NotFound(
            f"Unknown request URL: {request.method} {request.path} (the relay provider "
            f"{runtime.relay.name!r} answers locally and serves only model endpoints)"
        )
    suffix = request.rel_url.raw_path.removeprefix("/v1")
    if any(segment in (".", "..") for segment in unquote(suffix).replace("\\", "/").split("/")):
        raise InvalidRequest("the request path may not contain '.' or '..' segments")
    url = URL(str(provider.url(suffix)) + _query(request), encoded=True)
    headers = provider.headers(runtime.forward(request.headers))
    for name in _BODY_HEADERS:
        if name in request.headers:
            headers[name] = request.headers[name]
    body = request.content.iter_any() if request.body_exists else None
    label = f"{provider.name}/{request.method} {request.path}"
    with translated(label):
        upstream = await request.app[SESSION].request(
            request.method,
            url,
            headers=headers,
            data=body,
            allow_redirects=False,
            timeout=provider.timeout,
        )
    async with upstream:
        relayed = response_headers(upstream.headers)
        relayed["x-hookgate-request-id"] = request[REQUEST_ID]
        relayed["x-hookgate-upstream"] = provider.name
        out = web.StreamResponse(status=upstream.status, headers=relayed)
        if upstream.content_length is not None:
            out.content_length = upstream.content_length
        await out.prepare(request)
        try:
            with translated(label):
                async for chunk in upstream.content.iter_any():
                    await out.write(chunk)
        except UpstreamError as exc:
            # The status is sent; the only honest signal left is a cut connection, so
            # the client sees an incomplete body instead of one that looks complete.
            log.warning("relay %s failed mid-body: %s", label, exc.message)
            if request.transport is not None:
                request.transport.abort()
            return out
        await out.write_eof()
        return out


def _query(request: web.Request) -> str:
    query = request.rel_url.raw_query_string
    return f"?{query}" if query else ""
