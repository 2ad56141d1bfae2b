"""A stdio MCP server with one tool, for the Agents SDK's MCP tests and the MCP gateway's
stdio sessions (run as a script). Each call also sends a log notification (the gateway's
``GET`` stream carries it)."""

from __future__ import annotations

import sys

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("weather")


@server.tool()
async def get_forecast(city: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """The forecast for a city."""
    print(f"called {city}", file=sys.stderr, flush=True)
    await ctx.info(f"forecast asked for {city}")
    return f"rain in {city}; forecast by Siobhan O'Brien, siobhan@example.org"


if __name__ == "__main__":
    server.run("stdio")
