"""A stdio MCP server with one tool, for the Agents SDK's MCP tests (run as a script)."""

from __future__ import annotations

import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("weather")


@server.tool()
def get_forecast(city: str) -> str:
    """The forecast for a city."""
    print(f"called {city}", file=sys.stderr, flush=True)
    return f"rain in {city}; forecast by Siobhan O'Brien, siobhan@example.org"


if __name__ == "__main__":
    server.run("stdio")
