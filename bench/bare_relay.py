"""The floor for a Python relay: aiohttp, one ClientSession, no policies, no parsing.

Run: ``python -m bench.bare_relay PORT UPSTREAM_BASE_URL``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from bench.serving import serve

SESSION = web.AppKey("session", aiohttp.ClientSession)


async def relay(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    url = request.app["upstream"] + request.path.removeprefix("/v1")
    async with request.app[SESSION].post(
        url, data=body, headers={"content-type": "application/json"}
    ) as up:
        if up.content_type != "text/event-stream":
            return web.Response(
                body=await up.read(), status=up.status, content_type=up.content_type
            )
        out = web.StreamResponse(status=up.status, headers={"content-type": "text/event-stream"})
        await out.prepare(request)
        async for chunk in up.content.iter_any():
            await out.write(chunk)
        await out.write_eof()
        return out


async def session(app: web.Application) -> AsyncIterator[None]:
    app[SESSION] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    yield
    await app[SESSION].close()


def main() -> None:
    app = web.Application()
    app["upstream"] = sys.argv[2]
    app.cleanup_ctx.append(session)
    app.router.add_post("/v1/{tail:.*}", relay)
    serve(app, int(sys.argv[1]))


if __name__ == "__main__":
    main()
