"""``/mcp/{name}``: the caller authenticated, the server found, the request handed to
the gateway of its transport."""

from __future__ import annotations

from aiohttp import web

from hookgate.errors import NotFound
from hookgate.server.appkeys import GRANTS, HOLDER
from hookgate.server.auth import authenticate
from hookgate.server.mcp.gateway import Gateway
from hookgate.server.mcp.stdio_gateway import StdioGateway
from hookgate.server.mcp.streamable import HttpGateway


def add_routes(app: web.Application) -> None:
    """Register ``/mcp/{name}``."""
    app.router.add_route("*", "/mcp/{name}", handle)


async def handle(request: web.Request) -> web.StreamResponse:
    """Serve one MCP request for the server the path names."""
    runtime = request.app[HOLDER].current
    caller = await authenticate(request, runtime, request.app[GRANTS])  # before naming servers
    name = request.match_info["name"]
    server = runtime.config.mcp_servers.get(name)
    if server is None:
        raise NotFound(f"no MCP server named {name!r} is configured", code="mcp_server_not_found")
    kind: type[Gateway] = HttpGateway if server.command is None else StdioGateway
    gateway = kind(request, name, server, caller)
    if request.method == "POST":
        return await gateway.post()
    if request.method in ("GET", "DELETE"):
        return await gateway.relay(None)
    raise web.HTTPMethodNotAllowed(request.method, ["GET", "POST", "DELETE"])
